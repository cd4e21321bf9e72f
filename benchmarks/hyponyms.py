"""WordNet 3.0's nouns, read from its database files (``index.noun``,
``data.noun``, ``noun.exc``), for the ``hyponyms=`` measurement of
``ranking_table.py``: a question names a category ("What activities does
Melanie partake in?") and the evidence an instance of it (pottery, camping) —
the category's hyponyms and instances, down to some depth, are the words the
evidence may use.

    python benchmarks/hyponyms.py --wordnet DIR activities "martial arts" cities

prints each word's expansion (the lemmas of its hyponyms, by depth). The
measurement itself (``Hypo``: its settings; ``patches``: what it changes in
the process) is what ``ranking_table.py hyponyms=...`` runs, and
``ranking_table.py --ceiling`` what it could reach at best (``ceiling``).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
from pathlib import Path
from typing import Any

import gen  # noqa: F401  (puts the repository on sys.path)

from sediment import Repository
from sediment.search import feedback as F
from sediment.search import maxscore as M
from sediment.search import postings as P
from sediment.search import query as S
from sediment.search import tokenize as T

# WordNet's own noun suffix rules (morphy), tried after the exception list
_RULES = (("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
          ("ies", "y"), ("s", ""))
_WORD = re.compile(r"[A-Za-z]+(?:[-'][A-Za-z]+)*")


class Nouns:
    """The noun part of a WordNet database folder."""

    def __init__(self, folder: Path) -> None:
        self.senses: dict[str, list[int]] = {}  # lemma -> synset offsets, commonest sense first
        for line in (folder / "index.noun").read_text(encoding="utf-8").splitlines():
            if line.startswith(" "):
                continue
            f = line.split()
            p_cnt = int(f[3])
            n_synsets = int(f[2])
            self.senses[f[0]] = [int(x) for x in f[6 + p_cnt:6 + p_cnt + n_synsets]]
        self.words: dict[int, list[str]] = {}
        capital: set[str] = set()
        lower: set[str] = set()
        self.down: dict[int, list[int]] = {}  # hyponyms and instances
        for line in (folder / "data.noun").read_text(encoding="utf-8").splitlines():
            if line.startswith(" "):
                continue
            f = line.split(" | ")[0].split()
            off, w_cnt = int(f[0]), int(f[3], 16)
            ws = [f[4 + 2 * i] for i in range(w_cnt)]
            for w in ws:
                (lower if w.islower() else capital).add(w.lower())
            self.words[off] = [w.lower() for w in ws]
            i = 4 + 2 * w_cnt
            p_cnt = int(f[i])
            kids = []
            for j in range(p_cnt):
                sym, target, pos = f[i + 1 + 4 * j:i + 4 + 4 * j]
                if sym in ("~", "~i") and pos == "n":
                    kids.append(int(target))
            self.down[off] = kids
        # written with a capital wherever WordNet has it: a name (Tokyo, Tours)
        self.proper = capital - lower
        self.exc: dict[str, str] = {}
        for line in (folder / "noun.exc").read_text(encoding="utf-8").splitlines():
            f = line.split()
            if len(f) >= 2:
                self.exc.setdefault(f[0], f[1])

    def lemma(self, word: str) -> str | None:
        """The word's noun lemma (morphy: the exception list, then the suffix rules)."""
        w = word.lower()
        if w in self.exc:
            return self.exc[w]
        if w in self.senses:
            return w
        for suf, rep in _RULES:
            if w.endswith(suf) and (base := w[:-len(suf)] + rep) in self.senses:
                return base
        return None

    def below(self, lemma: str, depth: int, senses: int = 0, first: int = 0) -> dict[str, int]:
        """Lemma -> its shallowest depth (1 = a direct hyponym) under the
        lemma's first ``senses`` senses (0: all), down to ``depth``. With
        ``first``, only lemmas one of whose first ``first`` senses is down
        there ('car' is under activity only by a rare sense: its first is
        the automobile)."""
        out: dict[str, int] = {}
        seen: set[int] = set()
        level = list(self.senses.get(lemma, [])[:senses or None])
        for d in range(1, depth + 1):
            nxt = []
            for off in level:
                for k in self.down.get(off, ()):
                    if k in seen:
                        continue
                    seen.add(k)
                    nxt.append(k)
                    for w in self.words[k]:
                        out.setdefault(w, d)
            level = nxt
        if first:
            out = {w: d for w, d in out.items() if seen.intersection(self.senses.get(w, ())[:first])}
        return out

    def categories(self, text: str, stop: frozenset[str] = frozenset()) -> list[str]:
        """The noun lemmas of ``text`` worth expanding: lower-case words (a
        capital past the first word is a name) and two-word compounds WordNet
        knows ("martial arts" -> martial_art, whose parts are then not taken)."""
        toks = [(m.group(0), m.start()) for m in _WORD.finditer(text)]
        out, skip = [], -1
        for i, (w, at) in enumerate(toks):
            if i <= skip:
                continue
            if i + 1 < len(toks) and (lem := self.lemma(f"{w}_{toks[i + 1][0]}")):
                out.append(lem)
                skip = i + 1
                continue
            if at > 0 and w[0].isupper() or w.lower() in stop:
                continue
            lem = self.lemma(w)
            if lem:
                out.append(lem)
        return out


    def focus(self, text: str, stop: frozenset[str] = frozenset()) -> list[str]:
        """The question's answer type: the head (last noun) of the words
        between "what" / "which" and the next stop word or name, "kind of",
        "type of", "sort of" skipped: "What martial arts has John done?" ->
        martial_art, "What kind of indoor activities has ..." -> activity,
        "What music events has ..." -> event."""
        toks = [m.group(0) for m in _WORD.finditer(text)]
        for i, w in enumerate(toks):
            if w.lower() not in ("what", "which"):
                continue
            phrase = []
            for t in toks[i + 1:]:
                low = t.lower()
                if low in ("kind", "kinds", "type", "types", "sort", "sorts") and not phrase:
                    continue
                if low == "of" and not phrase:
                    continue
                if low in stop or t[0].isupper():
                    break
                phrase.append(t)
            cats = self.categories(" ".join(["x", *phrase]), stop)
            return [c for c in cats if self.below(c, 1)][-1:]
        return []


@dataclasses.dataclass
class Hypo:
    """The ``hyponyms=`` measurement's settings."""
    depth: int = 3  # hyponym levels below the category
    senses: int = 1  # the category's first this many WordNet senses (0: all)
    weight: float = 0.5  # an expansion term's query weight at depth 1 (query words weigh 1)
    decay: float = 0.5  # ... times this per further level
    max_share: float = 0.5  # terms in more of the root's documents than this share are left out
    per_category: int = 0  # at most this many terms a category, by idf (0: all)
    split: int = 1  # 1: divide a category's weights by the root of how many terms it has
    fold: int = 0  # 1: add them to the feedback lane's expansion instead of a lane of their own
    lane_weight: float = 1.0  # the lane's share in the fusion
    first: int = 0  # a lemma counts when one of its first this many senses is below (0: any)
    focus: int = 0  # 1: only the question's answer type (the head noun after what / which: Nouns.focus)


_TERM: dict[str, str | None] = {}


def settings(arg: str) -> Hypo:
    """``FIELD:VALUE[;FIELD:VALUE]`` -> ``Hypo``."""
    h = Hypo()
    for item in filter(None, arg.split(";")):
        k, v = item.split(":")
        setattr(h, k, type(getattr(h, k))(v))
    return h


def terms(nouns: Nouns, index: Any, tok: Any, query: str, h: Hypo, own: Any) -> dict[str, float]:
    """Expansion term -> query weight: the hyponyms (and instances) of the
    query's category nouns, as the tokenizer indexes them (one term a lemma:
    'swimming' -> 'swim'; a lemma of several words is left out), found in the
    root's word lane in at most ``max_share`` of its documents."""
    if T.CJK_RUN.search(query):
        return {}
    n = max(index.words.live, 1)
    out: dict[str, float] = {}
    for cat in (nouns.focus(query, T.EN_STOP) if h.focus else nouns.categories(query, T.EN_STOP)):
        got: dict[str, float] = {}
        for lemma, d in nouns.below(cat, h.depth, h.senses, h.first).items():
            t = _TERM.get(lemma, "")
            if t == "":
                ws = tok.terms(lemma.replace("_", " "))[0]
                t = _TERM[lemma] = ws[0] if len(ws) == 1 else None
            # a name is not inflected: one the stemmer changes (Tours -> tour,
            # Nice -> nic) would match a common word
            if t is None or t in own or t in got or lemma in nouns.proper and t != lemma:
                continue
            df = index.words.df(t)
            if 0 < df <= h.max_share * n:
                got[t] = h.weight * h.decay ** (d - 1)
        if h.per_category and len(got) > h.per_category:
            keep = sorted(got, key=lambda t: -P.bm25_idf(n, index.words.df(t)))[:h.per_category]
            got = {t: got[t] for t in keep}
        div = len(got) ** 0.5 if h.split and got else 1.0
        for t, w in got.items():
            out[t] = max(out.get(t, 0.0), w / div)
    return out


class _Lane:
    """The expanded query as a lane of its own (a ``rank.Lane``)."""
    name = "hyponyms"
    reweigh: dict[str, float] = {}

    def __init__(self, index: Any, terms: dict[str, float], weight: float) -> None:
        self.index, self.terms, self.weight = index, terms, weight

    def vouches(self, slot: int) -> bool:
        return False  # (a lexical match, not evidence of its own)

    def unlike(self, slots: Any) -> list[bool]:
        return [False] * len(slots)

    def rank(self, mask: Any, allowed: Any, depth: int, lexical: Any) -> Any:
        return M.bm25(self.index.words, self.terms, mask, allowed, depth)[0]


def patches(nouns: Nouns, h: Hypo) -> list[tuple[Any, str, Any]]:
    """(object, attribute, value) to set for the measurement: ``search.run``
    gets the lane (or, with ``fold``, ``feedback.expansion`` the terms)."""
    run, expansion = S.run, F.expansion
    ctx: dict[str, Any] = {}

    def lane_run(index: Any, entries: Any, asked: Any, **kw: Any) -> Any:
        words = asked.words
        exp = terms(nouns, index, T.shared(), asked.text, h, words)  # (the repositories' tokenizer)
        if h.fold or not exp:
            ctx["exp"] = exp
            return run(index, entries, asked, **kw)
        lane = _Lane(index, {**words, **exp}, h.lane_weight)
        return run(index, entries, dataclasses.replace(asked, lanes=(*asked.lanes, lane)), **kw)

    def folded(lane: Any, docs: Any, query: Any, fb: Any, cjk: bool = True) -> dict[str, float]:
        got = expansion(lane, docs, query, fb, cjk)
        for t, w in ctx.get("exp", {}).items():
            got[t] = max(got.get(t, 0.0), w)
        return got
    return [(S, "run", lane_run)] + ([(F, "expansion", folded)] if h.fold else [])


def ceiling(nouns: Nouns, meta: dict[str, Any], roots: Path, h: Hypo, depth: int = 50) -> tuple[float, int]:
    """LoCoMo session R@10 if every relevant session outside the top 10 that
    has one of the question's expansion terms came into it (and pushed
    nothing relevant out): the best such a lane could do. Also how many
    (question, session) pairs that is."""
    r10, pairs = [], 0
    tok = T.shared()
    for conv in meta["locomo"]:
        with Repository(roots / f"{conv['name']}-sessions") as repo:
            ids = conv["sessions"]
            with repo.store.view.reading() as view:
                index = view.index
                for _, q, _, sess in conv["qas"]:
                    top = {ids[x.entry.id] for x in repo.search(q, limit=depth, record=False)[:10]}
                    words, _ = S.query_terms(tok, q)
                    has = {ids[k] for t in terms(nouns, index, tok, q, h, words) for k, _ in index.postings(t)}
                    pairs += sum(r not in top and r in has for r in sess)
                    r10.append(sum(r in top or r in has for r in sess) / len(sess))
    return sum(r10) / len(r10), pairs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wordnet", type=Path, required=True, help="WordNet 3.0's database folder (data.noun, ...)")
    ap.add_argument("--depth", type=int, default=3)
    ap.add_argument("--senses", type=int, default=1, help="the category's first N senses (0: all), as the variants")
    ap.add_argument("--first", type=int, default=0, help="only words one of whose first N senses is below (0: any)")
    ap.add_argument("words", nargs="+")
    a = ap.parse_args(argv)
    nouns = Nouns(a.wordnet)
    for text in a.words:
        for lem in nouns.categories(text, T.EN_STOP):
            got = nouns.below(lem, a.depth, a.senses, a.first)
            by = {d: sorted(w for w, x in got.items() if x == d) for d in range(1, a.depth + 1)}
            print(f"{text!r} -> {lem}: " + "; ".join(f"depth {d}: {len(ws)} ({', '.join(ws[:12])}…)"
                                                      for d, ws in by.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
