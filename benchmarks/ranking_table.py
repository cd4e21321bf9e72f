"""Ranking variants on English and Chinese data in one process, over roots
built once: one row per variant, every retrieval benchmark of the "Ranking
choices" table (LoCoMo turn and session level, CMRC 2018 dev, zhmem).

    python benchmarks/ranking_table.py --data PATH base b=0.75 weight=rare:1.5
    python benchmarks/ranking_table.py --data PATH --roots DIR ...   # keep the roots, reuse them next time
    python benchmarks/ranking_table.py --data PATH --misses          # why LoCoMo turns and sessions are missed

The roots are made as the benchmark scripts make theirs (same texts, titles
and add times; ``record=False``), so the ``base`` row is their figures. A
variant changes one thing in this process and is undone before the next:

* ``b=X``, ``k1=X``: BM25's constants; ``rrf-k=N``: the fusion's K;
* ``weight=LANE:W``: a lane's share in the fusion (words, rare, bigrams, feedback);
* ``feedback=FIELD:VALUE[;FIELD:VALUE]``: the feedback lane's settings (``feedback.Feedback``);
* ``common=SHARE``: a query word in more than SHARE of the memories counts
  nothing (Robertson–Spärck Jones idf is negative above one half);
* ``abstain=off``: a lane that cannot see a document's evidence votes against
  it, as RRF has it (``coverage.abstain`` undone);
* ``share=P[:letters]``: with it, the bigram lane weighed by the share of the query's
  idf (word lane) that has CJK text, to the power P (``letters``: only a term with a Latin letter counts as unseen);
* ``pieces=off``: a CJK query word no memory holds is not read as its pieces
  that memories hold (``pieces.in_vocabulary`` undone);
* ``split=off``: a query that asks two questions is asked whole (``clauses.split``
  undone); ``merge=interleave``: its questions' rankings interleaved, not merged by share;
* ``parts=W``: a query word inside another of its CJK words (少数 in 少数民族) weighs W;
* ``near=N:W[:next|prev]``: the memories added just before and after each of the
  fused list's first N get a vote of W / (K + its place) (a measurement: LoCoMo's
  answer is often the turn after the one the question matches);
* ``rarest=N``: a further lane, the memories holding the query's rarest word (in at most N);
* ``ties=average``: equal lane scores share their average rank, not the best;
* ``passage=LINES``: a further lane over the fused top 50, a memory's best
  window of LINES lines by the summed idf of the query words it has (memories
  of more lines only) — **a measurement**: it tokenizes the candidates at query
  time, which the library may not do;
* ``local-feedback=LINES``: expansion terms taken only from the lines within
  LINES of a line with a telling query word (in at most half the memories),
  for memories longer than that — a measurement too (tokenizes at query time);
* ``hyponyms=FIELD:VALUE[;FIELD:VALUE]`` (needs ``--wordnet DIR``, WordNet
  3.0's database folder): a lane of the query's words plus the hyponyms and
  instances of its category nouns (``hyponyms.py``) that the root has, fused
  by RRF (the fields of ``hyponyms.Hypo``), English queries only; ``fold:1`` adds
  them to the feedback lane's expansion terms instead.
"""

from __future__ import annotations

import argparse
import dataclasses
import heapq
import json
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench_locomo as BL  # noqa: E402  (also puts the repository on sys.path)
import gen  # noqa: E402

from sediment import Repository  # noqa: E402
from sediment.search import clauses as CL  # noqa: E402
from sediment.search import coverage as C  # noqa: E402
from sediment.search import feedback as F  # noqa: E402
from sediment.search import pieces as PC  # noqa: E402
from sediment.search import index as I  # noqa: E402
from sediment.search import postings as P  # noqa: E402
from sediment.search import rank as R  # noqa: E402
from sediment.search import query as S  # noqa: E402
from sediment.search import tokenize as T  # noqa: E402
from sediment.model.lexicon import CJK_RUN  # noqa: E402

DEPTH = 50
WORDNET: list[Any] = []  # the parsed nouns, once (--wordnet)
ZHMEM = HERE / "zhmem" / "zhmem.json"


# ------------------------------------------------------------------ roots

def build(data: Path, roots: Path) -> dict[str, Any]:
    """Every benchmark's roots under ``roots`` (and what to ask them), as the scripts make them."""
    meta: dict[str, Any] = {"locomo": [], "zhmem": []}
    for s in json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8")):
        sess = BL.sessions(s["conversation"])
        turns = [(n, date, t) for n, date, ts in sess for t in ts]
        known = {t["dia_id"] for _, _, t in turns}
        sess_of = {t["dia_id"]: n for n, _, t in turns}
        qas = []
        for qa in s["qa"]:
            ev = BL.normalise_evidence(qa.get("evidence") or [], known) if qa.get("category") in BL.CATEGORIES else []
            if ev:
                qas.append((qa["category"], qa["question"], ev, sorted({sess_of[d] for d in ev})))
        conv: dict[str, Any] = {"qas": qas}
        with Repository(roots / f"{s['sample_id']}-turns") as repo:
            conv["turns"] = {repo.add(BL.turn_line(date, t), now=gen.add_time(i)).id: t["dia_id"]
                             for i, (_, date, t) in enumerate(turns)}
        with Repository(roots / f"{s['sample_id']}-sessions") as repo:
            conv["sessions"] = {repo.add("\n".join(BL.turn_line(date, t) for t in ts), title=date or f"session {n}",
                                         now=gen.add_time(i)).id: n for i, (n, date, ts) in enumerate(sess)}
        conv["name"] = s["sample_id"]
        meta["locomo"].append(conv)
        print(f"  built {s['sample_id']}", flush=True)
    raw = json.loads((data / "cmrc2018" / "cmrc2018_dev.json").read_text(encoding="utf-8"))
    paras, qs = [], []
    for art in raw["data"]:
        for p in art["paragraphs"]:
            paras.append((art.get("title") or "", p["context"]))
            qs.extend((qa["question"], len(paras) - 1) for qa in p["qas"])
    with Repository(roots / "cmrc") as repo:
        meta["cmrc"] = {"ids": {repo.add(ctx, title=title or None, now=gen.add_time(i)).id: i
                                for i, (title, ctx) in enumerate(paras)}, "qs": qs}
    i_add = 0
    for n, person in enumerate(json.loads(ZHMEM.read_text(encoding="utf-8"))["people"]):
        with Repository(roots / f"zh-{n}") as repo:
            ids = {}
            for m in person["memories"]:
                ids[repo.add(m["text"], now=gen.add_time(i_add)).id] = m["id"]
                i_add += 1
        meta["zhmem"].append({"ids": ids, "qs": [(q["question"], q["evidence"], q["type"])
                                                 for q in person["questions"]]})
    (roots / "meta.json").write_text(json.dumps(meta), encoding="utf-8")
    return meta


def ranked(repo: Repository, ids: dict[str, Any], q: str) -> list[Any]:
    return [ids[h.entry.id] for h in repo.search(q, limit=DEPTH, record=False)]


def mrr(order: list[Any], relevant: set[Any]) -> float:
    return next((1 / i for i, k in enumerate(order, 1) if k in relevant), 0.0)


def evaluate(meta: dict[str, Any], roots: Path) -> dict[str, float]:
    out: dict[str, float] = {}

    def recall(prefix: str, orders: list[tuple[list[Any], set[Any]]]) -> None:
        for k in (1, 5, 10):
            out[f"{prefix} R@{k}"] = sum(len(rel & set(o[:k])) / len(rel) for o, rel in orders) / len(orders)
        out[f"{prefix} MRR"] = sum(mrr(o, rel) for o, rel in orders) / len(orders)
    for level in ("turn", "session"):
        got, cat1 = [], []
        for conv in meta["locomo"]:
            with Repository(roots / f"{conv['name']}-{level}s") as repo:
                for cat, q, ev, sess in conv["qas"]:
                    rel = set(ev if level == "turn" else sess)
                    got.append((ranked(repo, conv[f"{level}s"], q), rel))
                    if cat == 1:
                        cat1.append(len(rel & set(got[-1][0][:10])) / len(rel))
        recall(level, got)
        out[f"{level} multi-hop R@10"] = sum(cat1) / len(cat1)
    c = meta["cmrc"]
    with Repository(roots / "cmrc") as repo:
        recall("CMRC", [(ranked(repo, c["ids"], q), {p}) for q, p in c["qs"]])
    got = []
    for i, person in enumerate(meta["zhmem"]):
        with Repository(roots / f"zh-{i}") as repo:
            got += [(ranked(repo, person["ids"], q), set(ev)) for q, ev, _ in person["qs"]]
    recall("zhmem", got)  # (R@k: the share of a question's evidence in the top k)
    return out


def misses(meta: dict[str, Any], roots: Path) -> set[tuple[str, str, int]]:
    """LoCoMo session level: of the (question, relevant session) pairs not in
    the top 10, how many share with the question only words that more than
    half of the conversation's sessions have (a speaker's name). Returns
    those pairs (conversation, question, session)."""
    got: Counter[tuple[str, str]] = Counter()
    out: set[tuple[str, str, int]] = set()
    for conv in meta["locomo"]:
        with Repository(roots / f"{conv['name']}-sessions") as repo:
            ids = conv["sessions"]
            for cat, q, _, sess in conv["qas"]:
                hits = repo.search(q, limit=DEPTH, record=False, explain=True)
                order = [ids[h.entry.id] for h in hits]
                seen: Counter[str] = Counter(t for h in hits for t in h.explain["terms"])  # type: ignore[index]
                for r in sess:
                    if r in order[:10]:
                        continue
                    out.add((conv["name"], q, r))
                    h = next((h for h in hits if ids[h.entry.id] == r), None)
                    terms = set(h.explain["terms"]) if h else set()  # type: ignore[index]
                    telling = {t for t in terms if seen[t] <= len(hits) / 2}
                    got[(BL.CATEGORIES[cat], "a telling word" if telling else "only common words")] += 1
    rows = [[cat, kind, str(n)] for (cat, kind), n in sorted(got.items())]
    print(gen.table(rows, ["category", "the missed session shares with the question", "pairs"]))
    print(f"{sum(got.values())} (question, relevant session) pairs outside the top 10")
    return out


COMMON_TURNS = 10  # a word in more turns than this is a common one (of a conversation's 369-689)


def turn_misses(meta: dict[str, Any], roots: Path) -> None:
    """LoCoMo turn level: each question's evidence turns by what they share
    with it (its words, the speakers' names left out: common ones are in more
    than ``COMMON_TURNS`` turns) and by where they rank (1-10, 11-20, 21-50,
    not in the first 50)."""
    tok = T.Tokenizer()
    places: dict[str, Counter[str]] = {}
    for conv in meta["locomo"]:
        with Repository(roots / f"{conv['name']}-turns") as repo:
            ids = conv["turns"]
            text = {dia: repo.get(eid).body for eid, dia in ids.items()}
            terms = {dia: set(tok.terms(t)[0]) for dia, t in text.items()}
            df = Counter(w for ts in terms.values() for w in ts)
            names = {w for t in text.values() for m in re.findall(r"\] (\w+):", t) for w in tok.terms(m)[0]}
            for _, q, ev, _ in conv["qas"]:
                order = ranked(repo, ids, q)
                asked = set(tok.terms(q)[0]) - names
                for dia in ev:
                    shared = asked & terms[dia]
                    common = sum(df[w] > COMMON_TURNS for w in shared)
                    kind = ("no word" if not shared
                            else f"a word in at most {COMMON_TURNS} turns" if common < len(shared)
                            else "one common word" if common == 1 else "two or more common words")
                    r = order.index(dia) + 1 if dia in order else DEPTH + 1
                    place = "1-10" if r <= 10 else "11-20" if r <= 20 else "21-50" if r <= DEPTH else "below"
                    places.setdefault(kind, Counter())[place] += 1
    cols = ["1-10", "11-20", "21-50", "below"]
    rows = [[kind, str(sum(c.values()))] + [str(c[p]) for p in cols] for kind, c in sorted(places.items())]
    print(gen.table(rows, ["an evidence turn shares with the question", "turns"] + cols))


# ------------------------------------------------------------------ variants

def _set(saved: list, obj: Any, attr: str, value: Any) -> None:
    saved.append((obj, attr, getattr(obj, attr)))
    setattr(obj, attr, value)


def _lines(cache: dict[str, list[list[str]]], tok: Any, entry: Any) -> list[list[str]]:
    got = cache.get(entry.id)
    if got is None:
        got = cache[entry.id] = [tok.terms(line)[0] for line in entry.body.split("\n") if line.strip()]
    return got


def _passage_run(orig: Callable, width: int) -> Callable:
    cache: dict[str, list[list[str]]] = {}

    def run(index: Any, entries: Any, asked: Any, *, limit: int, **kw: Any) -> Any:
        hits = orig(index, entries, asked, limit=max(limit, DEPTH), **kw)
        tok, words = T.shared(), asked.words  # (the repositories' tokenizer: one per process)
        n = max(index.words.live, 1)
        idf = {t: P.bm25_idf(n, df) * w for t, w in words.items() if (df := index.words.df(t))}
        best = []
        for h in hits:
            lines = _lines(cache, tok, h.entry)
            sc = 0.0
            if idf and len(lines) > width:
                for i in range(len(lines) - width + 1):
                    sc = max(sc, sum(idf.get(t, 0.0) for t in set().union(*lines[i:i + width])))
            best.append(sc)
        lane = sorted(((sc, i) for i, sc in enumerate(best) if sc > 0), reverse=True)
        fused, _ = R.rrf([("passage", lane)])
        order = sorted(range(len(hits)), key=lambda i: -(hits[i].score + fused.get(i, 0.0)))
        return [hits[i] for i in order[:limit]]
    return run


def _local_expansion(ctx: dict[str, Any], width: int) -> Callable:
    cache: dict[str, list[list[str]]] = {}

    def expansion(lane: Any, docs: Any, query: Any, fb: Any, cjk: bool = True) -> dict[str, float]:
        n = max(lane.live, 1)
        total = sum(w for _, w in docs) or 1.0
        max_df = max((fb.max_share if cjk else fb.max_share_latin) * n, fb.max_df_floor)
        telling = {t for t in query if 0 < lane.df(t) <= n / 2}
        gain: dict[str, float] = {}
        for slot, fused in docs:
            lines = _lines(cache, ctx["tok"], ctx["entries"][ctx["index"].key_of[slot]])
            near = range(len(lines))
            if len(lines) > 2 * width + 1:
                at = [i for i, ln in enumerate(lines) if telling & set(ln)]
                near = sorted({j for i in at for j in range(max(0, i - width), min(len(lines), i + width + 1))}) or near
            tf = Counter(t for i in near for t in lines[i])
            length = sum(tf.values()) or 1
            for t, k in tf.items():
                if t not in query and fb.min_df <= (df := lane.df(t)) <= max_df:
                    gain[t] = gain.get(t, 0.0) + fused / total * k * P.bm25_idf(n, df) / length
        top = heapq.nlargest(fb.terms if cjk else fb.terms_latin, [(g, t) for t, g in gain.items()])
        return {t: fb.weight * g / top[0][0] for g, t in top} if top else {}
    return expansion


def _average_ties(fused: dict, ranks: dict, rankings: Any, weights: Any = None) -> Any:
    for name, top in rankings:
        w = weights.get(name, 1.0) if weights else 1.0
        top = list(top)
        i = 0
        while i < len(top):
            j = i
            while j + 1 < len(top) and round(top[j + 1][0], 9) == round(top[i][0], 9):
                j += 1
            for s in (x[1] for x in top[i:j + 1]):
                fused[s] = fused.get(s, 0.0) + w / (R.RRF_K + (i + j + 2) / 2)
                ranks.setdefault(s, {})[name] = i + 1
            i = j + 1
    return fused, ranks


def _by_share(orig: Callable, power: float, letters: bool = False) -> Callable:
    def abstain(fused: Any, ranks: Any, lexical: Any, *, words_lane: Any, words: Any, bigrams: Any,
                weights: Any = None, **kw: Any) -> None:
        orig(fused, ranks, lexical, words_lane=words_lane, words=words, bigrams=bigrams, weights=weights, **kw)
        if not bigrams:
            return
        n = max(words_lane.live, 1)
        idf = {t: P.bm25_idf(n, df) * w for t, w in words.items() if (df := words_lane.df(t))}
        blind = {t for t in C.blind_terms(words) if not letters or any(c.isalpha() for c in t)}
        share = sum(v for t, v in idf.items() if t not in blind) / (sum(idf.values()) or 1.0)
        cut = (1 - share ** power) * (weights or {}).get("bigrams", 1.0)
        for s, r in ranks.items():
            if "bigrams" in r:
                fused[s] -= cut / (R.RRF_K + r["bigrams"])
    return abstain


def _near(n: int, w: float, steps: tuple[int, ...]) -> list[tuple[Any, str, Any]]:
    """``near=``: the memories added just before or after (by key: sediment's
    ids are ULIDs, in the order of their add times) each of the first ``n``
    of the fused list get a vote of ``w`` / (K + that hit's place), after the
    feedback lane: the final list's scores. The patches for ``apply``."""
    now: dict[str, Any] = {}
    search, rrf, best = I.Index.search, I.rrf, I.best

    def searching(self: Any, *a: Any, **kw: Any) -> Any:
        now["index"] = self
        return search(self, *a, **kw)

    def fusing(*a: Any, **kw: Any) -> Any:
        out = now["fused"] = rrf(*a, **kw)
        return out

    def last(fused: Any, key_of: Any, tiebreak: Any, limit: int) -> Any:
        if limit > 5:  # (not the feedback lane's seeds)
            idx, ranks = now["index"], now["fused"][1]
            if getattr(idx, "_near", (None,))[0] != len(idx):
                keys = sorted(k for k in idx.key_of if k is not None)
                idx._near = (len(idx), keys, {k: i for i, k in enumerate(keys)})
            _, keys, pos = idx._near
            votes: dict[int, float] = {}
            for place, s in enumerate(sorted(fused, key=lambda s: -fused[s])[:n], 1):
                for d in steps:
                    if 0 <= (i := pos[idx.key_of[s]] + d) < len(keys):
                        t = idx.slot_of[keys[i]]
                        votes[t] = max(votes.get(t, 0.0), w / (R.RRF_K + place))
            for t, v in votes.items():
                fused[t] = fused.get(t, 0.0) + v
                ranks.setdefault(t, {})["near"] = 1
        return best(fused, key_of, tiebreak, limit)
    return [(I.Index, "search", searching), (I, "rrf", fusing), (I, "best", last)]


def _rarest(orig: Callable, cap: int) -> Callable:
    def abstain(fused: Any, ranks: Any, lexical: Any, *, words_lane: Any, words: Any, **kw: Any) -> None:
        orig(fused, ranks, lexical, words_lane=words_lane, words=words, **kw)
        held = [(df, t) for t in words if 0 < (df := words_lane.df(t)) <= cap]
        if not held or not fused:
            return
        term = min(held)[1]
        have = [s for s, ts in words_lane.matched(list(fused), [term]).items() if ts]
        for rank, s in enumerate(sorted(have, key=lambda s: -fused[s]), 1):
            fused[s] += 1.0 / (R.RRF_K + rank)
            ranks[s]["rarest"] = rank
    return abstain


def _parts(orig: Callable, w: float) -> Callable:
    def query_terms(tok: Any, query: str) -> Any:
        words, bigrams = orig(tok, query)
        whole = [t for t in words if not t.startswith("#") and CJK_RUN.search(t)]
        return {t: v * w if t in whole and any(t != u and t in u for u in whole) else v
                for t, v in words.items()}, bigrams
    return query_terms


def _interleaved(rankings: Any, key: Callable, score: Callable, limit: int) -> list[tuple[Any, float]]:
    """``merge=interleave``, in ``clauses.by_share``'s place: the first of each
    question's ranking, then the second of each, ..., each memory once (at its
    best place), scored 1/(K + its place) so that the list is in score order."""
    out: list[tuple[Any, float]] = []
    seen: set[str] = set()
    for i in range(max((len(r) for r in rankings), default=0)):
        for r in rankings:
            if i < len(r) and (k := key(r[i])) not in seen:
                seen.add(k)
                out.append((r[i], 1.0 / (R.RRF_K + i + 1)))
                if len(out) >= limit:
                    return out
    return out


def apply(variant: str) -> Callable[[], None]:
    """Make the variant's change in this process; returns its undo. Variants
    joined by "+" are made together."""
    if "+" in variant:
        undos = [apply(v) for v in variant.split("+")]
        return lambda: [u() for u in reversed(undos)] and None
    name, _, arg = variant.partition("=")
    saved: list = []
    if name == "base":
        pass
    elif name in ("b", "k1"):
        _set(saved, P, name.upper(), float(arg))
    elif name == "rrf-k":
        _set(saved, R, "RRF_K", int(arg))
    elif name == "weight":
        lane, w = arg.split(":")
        orig = I.rrf
        _set(saved, I, "rrf", lambda rankings, weights=None: orig(rankings, {lane: float(w), **(weights or {})}))
        if lane == "feedback":  # (fused apart: rrf_add)
            add = I.rrf_add
            _set(saved, I, "rrf_add", lambda f, r, rk, weights=None: add(
                f, r, rk, {k: v * float(w) for k, v in (weights or {}).items()}))
    elif name == "feedback":
        kv: dict[str, Any] = {}
        for item in arg.split(";"):
            k, v = item.split(":")
            kind = type(getattr(F.Feedback(), k))
            kv[k] = v.lower() in ("1", "true", "yes") if kind is bool else kind(v)
        fb = S.feedback
        _set(saved, S, "feedback", lambda policy: dataclasses.replace(fb(policy) or F.Feedback(), **kv))
    elif name == "common":
        idf = P.bm25_idf
        _set(saved, P, "bm25_idf", lambda n, df: 0.0 if df > float(arg) * n else idf(n, df))
    elif name == "ties":
        _set(saved, R, "rrf_add", _average_ties)
        _set(saved, I, "rrf_add", _average_ties)
    elif name == "passage":
        _set(saved, S, "run", _passage_run(S.run, int(arg)))
    elif name == "local-feedback":
        ctx: dict[str, Any] = {}
        run = S.run

        def keep(index: Any, entries: Any, asked: Any, **kw: Any) -> Any:
            ctx.update(index=index, entries=entries, tok=T.shared())  # (the repositories' tokenizer)
            return run(index, entries, asked, **kw)
        _set(saved, S, "run", keep)
        _set(saved, F, "expansion", _local_expansion(ctx, int(arg)))
    elif name == "abstain" and arg == "off":  # (issue 31: coverage.py)
        _set(saved, C, "abstain", lambda *a, **kw: None)
    elif name == "pieces" and arg == "off":  # (issue 31: pieces.py)
        _set(saved, PC, "in_vocabulary", lambda words, held: words)
    elif name == "split" and arg == "off":  # (issue 31: clauses.py)
        _set(saved, CL, "split", lambda q, terms=None: [q])
    elif name == "merge" and arg == "interleave":
        _set(saved, CL, "by_share", _interleaved)
    elif name == "rarest":  # a lane of the memories holding the query's rarest word (in at most N)
        _set(saved, C, "abstain", _rarest(C.abstain, int(arg)))
    elif name == "near":  # near=N:W[:next|prev]: the memories added just before/after the first N vote
        n, w, *side = arg.split(":")
        for obj, attr, value in _near(int(n), float(w), {"next": (1,), "prev": (-1,)}.get(side[0] if side else "",
                                                                                        (-1, 1))):
            _set(saved, obj, attr, value)
    elif name == "parts":  # a query word inside another of its words (少数 in 少数民族) weighs W
        _set(saved, S, "query_terms", _parts(S.query_terms, float(arg)))
    elif name == "share":  # the bigram lane weighed by the share of the query's idf it represents (^P)
        power, _, only = arg.partition(":")  # share=P:letters — a number is not a term the lane misses
        _set(saved, C, "abstain", _by_share(C.abstain, float(power), only == "letters"))
    elif name == "hyponyms":
        if not WORDNET:
            raise SystemExit("hyponyms= needs --wordnet DIR")
        import hyponyms
        for obj, attr, value in hyponyms.patches(WORDNET[0], hyponyms.settings(arg)):
            _set(saved, obj, attr, value)
    else:
        raise SystemExit(f"unknown variant {variant!r}")

    def undo() -> None:
        for obj, attr, value in reversed(saved):
            setattr(obj, attr, value)
    return undo


COLUMNS = ("turn R@1", "turn R@5", "turn R@10", "turn MRR", "session R@1", "session R@5", "session R@10",
           "session MRR", "session multi-hop R@10", "CMRC R@1", "CMRC R@5", "CMRC R@10", "CMRC MRR",
           "zhmem R@1", "zhmem R@5", "zhmem R@10", "zhmem MRR")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=gen.default_data_dir(), help="the bench-data folder")
    ap.add_argument("--roots", type=Path, help="build the roots here once and reuse them (default: a temp folder)")
    ap.add_argument("--misses", action="store_true",
                    help="LoCoMo turn and session misses by what they share with the question")
    ap.add_argument("--wordnet", type=Path, help="WordNet 3.0's database folder, for hyponyms= variants")
    ap.add_argument("--ceiling", action="store_true",
                    help="for each hyponyms= variant: LoCoMo session R@10 if every missed session with an expansion "
                         "term came into the top 10")
    ap.add_argument("variants", nargs="*", default=["base"])
    a = ap.parse_args(argv)
    if a.wordnet:
        import hyponyms
        WORDNET.append(hyponyms.Nouns(a.wordnet))
    roots = a.roots or Path(tempfile.mkdtemp(prefix="sediment-ranking-"))
    print(f"sediment ranking_table  ({gen.source_fingerprint()})", flush=True)
    try:
        if (roots / "meta.json").exists():
            meta = json.loads((roots / "meta.json").read_text(encoding="utf-8"))
        else:
            roots.mkdir(parents=True, exist_ok=True)
            meta = build(a.data, roots)
        if a.misses:
            first: set[tuple[str, str, int]] | None = None
            for v in a.variants:
                print(f"misses: {v}")
                undo = apply(v)
                try:
                    turn_misses(meta, roots)
                    now = misses(meta, roots)
                finally:
                    undo()
                if first is None:
                    first = now
                    continue
                for label, pairs in (("found", first - now), ("lost", now - first)):
                    print(f"  {label} against {a.variants[0]}: {len(pairs)}")
                    for conv, q, r in sorted(pairs):
                        print(f"    {conv} session {r}: {q}")
        if a.ceiling:
            import hyponyms
            for v in a.variants:
                if v.startswith("hyponyms="):
                    top, pairs = hyponyms.ceiling(WORDNET[0], meta, roots, hyponyms.settings(v.partition("=")[2]))
                    print(f"ceiling {v}: session R@10 {top:.4f} ({pairs} pairs brought in)")
        rows = []
        for v in a.variants if not a.misses and not a.ceiling else []:
            undo = apply(v)
            t0 = time.perf_counter()
            try:
                got = evaluate(meta, roots)
            finally:
                undo()
            rows.append([v] + [f"{got[c]:.4f}" for c in COLUMNS])
            print(f"  {v}: {time.perf_counter() - t0:.0f} s", flush=True)
        if rows:
            print("| variant | " + " | ".join(COLUMNS) + " |")
            print("|" + "---|" * (len(COLUMNS) + 1))
            for r in rows:
                print("| " + " | ".join(r) + " |")
    finally:
        if a.roots is None:
            shutil.rmtree(roots, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
