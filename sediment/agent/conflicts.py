"""Conflict candidates: pairs of active memories that share concrete anchors
(rare terms, names, numbers) and disagree about them. Reports only: nothing
here writes.

Pairs are never all pairs. They come from the index's postings of *rare*
terms: a term in at most ``max_df`` memories contributes at most
``max_df²/2`` pairs, so the work grows with the number of rare terms (about
linearly with the root), not with its square. ``Pairs.comparisons`` counts
the pairs generated, which is what a test watches grow.

A pair disagrees, by the strongest clue first:

* **numbers** — the same anchor with different numbers in the clauses that
  name it (``office floor 3`` / ``office floor 5``; ``端口 8080`` / ``端口 9090``);
* **overturn** — the newer one says ``actually``, ``不再``, ``改为``… in a
  clause about the anchor, the older one does not;
* **negation** — one negates the anchor (``not``, ``never``, ``不``, ``没有``…
  near it in a clause that names it), the other does not, and the two
  clauses say much the same otherwise.

A pair needs two distinct anchors in common (jieba's search mode gives
``乌龙`` inside ``乌龙茶``: that is one), and a number is said of an anchor only
within a few characters of it.

Generic words (``user``, ``like``, ``用户``, ``喜欢``, …) are never anchors, and
neither is a term in many memories: sharing them says nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

from ..search import query as S
from ..search import locate, tokenize as T
from ..model.entry import Entry
from ..model.markup import display_text
from ..model.lexicon import CJK, GENERIC_EN, GENERIC_ZH
from ..model.lifecycle import OVERTURN_WORDS, is_current, overturns
from ..model.record import Record

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..view.view import View

# Negation markers. Latin ones as words; Chinese ones as characters, minus the
# common words in which the character negates nothing (不错 "good", 不同
# "different", 特别 "especially", 非常 "very", 未来 "future", …).
_NEG_EN = re.compile(r"\b(?:not|no|never|cannot|none|nothing|nobody|neither|nor|without|stopped)\b|n't\b")
_NEG_ZH_CHARS = "不没未别"
_NEG_ZH_WORDS = ("无法", "无需", "并非", "禁止", "停止", "从未", "尚未")
_NOT_NEG_AFTER = frozenset("""
不错 不同 不断 不久 不少 不仅 不过 不管 不论 不如 不但 不足 不止 不得不 没错 未来 未必 别人 别的 别处
""".split())
_NOT_NEG_BEFORE = frozenset("特别 区别 分别 级别 类别 差别 告别 识别 辨别 性别 个别 派别".split())
_CLAUSE = re.compile(r"(?<!\d)[.,](?!\d)|[。！？；;!?\n，、：:]")
_NUMBER = re.compile(rf"(\d+(?:\.\d+)?)(\s?[a-z]+|\s?[{CJK}])?")
_WORD = re.compile(r"[^\W_]+")
# dates (2026-11-27, 2026/11/27, 2026年11月27日), times of day (15:30) and
# list markers ('1. ') are blanked out before numbers are read
_NOT_A_QUANTITY = re.compile(r"\d{4}\s?[-/.年]\s?\d{1,2}(?:\s?[-/.月]\s?\d{1,2}\s?日?)?|\d{1,2}\s?月\s?\d{1,2}\s?日"
                             r"|\b\d{1,2}:\d{2}(?::\d{2})?\b|^\s*\d{1,3}[.)](?=\s)")
_OVERTURN_RE = re.compile("|".join(re.escape(w) for w in OVERTURN_WORDS), re.IGNORECASE)

# a term in more memories than this is not a concrete anchor (and its postings
# would cost max_df² pairs); in a small root, a tenth of the memories
MAX_DF = 20
# two memories sharing one rare word are about different things more often
# than not: a pair needs this many anchors in common
MIN_ANCHORS = 2
NEAR = 20  # characters between an anchor and a negation said of it, at most
GAP = 6  # characters between an anchor and a number said of it ('floor 3', '端口是 5432')
KIND_WEIGHT = {"numbers": 3.0, "overturn": 2.0, "negation": 1.5}
# how alike (clause similarity) two memories' clauses on an anchor must be for
# an overturn word, or a negation on one side only, to be a clue
OVERTURN_SIMILARITY = 0.2
NEGATION_SIMILARITY = 0.3


def max_df(n: int) -> int:
    """The document frequency above which a term is too common to pair on."""
    return max(5, min(MAX_DF, n // 10))


def active(e: Entry) -> bool:
    """A current memory of the library's (a person's own notes are reference:
    never superseded, archived or rewritten, so nothing here suggests it)."""
    return is_current(e) and not e.reference


@dataclass(frozen=True)
class ConflictPair(Record):
    """Two memories that may disagree: ``a`` the older, ``b`` the newer (ids),
    the ``kind`` of clue, the ``clue`` in words, the anchors they share."""
    a: str
    b: str
    a_name: str
    b_name: str
    kind: str
    clue: str
    anchors: tuple[str, ...]
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "score": round(self.score, 4)}

    def __str__(self) -> str:
        return f"{self.a_name} ⟷ {self.b_name}  [{self.kind}] {self.clue}"


# --------------------------------------------------------------------------- candidates

class Generic:
    """The generic words as the index spells them (stemmed, lower-cased)."""

    def __init__(self, tok: T.Tokenizer) -> None:
        words, _ = tok.terms(" ".join(sorted(GENERIC_EN)))
        self.words = frozenset(words) | GENERIC_EN | GENERIC_ZH

    def anchor(self, term: str) -> bool:
        """Can this index term anchor a pair: concrete, not generic."""
        t = term.lstrip("#")
        if t in self.words or len(t) < 2:
            return False
        if t.isdigit():
            return len(t) >= 3  # a port, a year, an amount: '3' pairs everything
        return not (t.isascii() and len(t) < 3)


@dataclass
class Pairs:
    """Candidate pairs (older id, newer id … by id order) → the rare terms they share."""
    shared: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    comparisons: int = 0  # pairs generated from postings, repeats included
    rare: dict[str, int] = field(default_factory=dict)  # memory → how many of the rare terms it has
    df: dict[str, int] = field(default_factory=dict)  # rare term → document frequency


def _rare_terms(view: View, lane: str, limit: int, only: set[str] | None) -> Iterator[tuple[str, int]]:
    if only is None:
        yield from view.index.terms(lane, min_df=2, max_df=limit)
    else:
        for t in sorted(only):
            df = view.index.df(t, lane)
            if 2 <= df <= limit:
                yield t, df


def candidate_pairs(view: View, *, lanes: Iterable[str] = ("words",), ids: set[str] | None = None,
                    keep: Callable[[Entry], bool] | None = None, generic: Generic | None = None,
                    limit: int | None = None) -> Pairs:
    """Pairs of active memories sharing rare terms, from the postings alone.
    ``ids``: only pairs with one of these memories. ``generic``: skip generic
    words (anchors only)."""
    entries = view.entries
    limit = limit or max_df(len(entries))
    out = Pairs()
    shared = out.shared
    wanted: dict[str, set[str]] | None = None
    if ids is not None:
        wanted = {"words": set(), "bigrams": set()}
        for eid in ids:
            dt = S.doc_terms(view.tokenizer, entries[eid])
            wanted["words"].update(dt.words)
            wanted["bigrams"].update(dt.bigrams)
    ok: dict[str, bool] = {}
    for lane in lanes:
        for t, df in _rare_terms(view, lane, limit, None if wanted is None else wanted[lane]):
            if generic is not None and lane == "words" and not generic.anchor(t):
                continue
            keys = []
            for k, _ in view.index.postings(t, lane):
                good = ok.get(k)
                if good is None:
                    e = entries.get(k)
                    good = ok[k] = e is not None and active(e) and (keep is None or keep(e))
                if good:
                    keys.append(k)
            if len(keys) < 2:
                continue
            keys.sort()
            term = t if lane == "words" else "\x00" + t  # bigrams counted apart from words
            out.df[term] = df
            rare = out.rare
            for k in keys:
                rare[k] = rare.get(k, 0) + 1
            for i, a in enumerate(keys):
                for b in keys[i + 1:]:
                    out.comparisons += 1
                    if ids is not None and a not in ids and b not in ids:
                        continue
                    got = shared.get((a, b))
                    if got is None:
                        shared[(a, b)] = [term]
                    else:
                        got.append(term)
    return out


# --------------------------------------------------------------------------- clues

@dataclass(frozen=True)
class _Clause:
    text: str  # normalised
    words: frozenset[str]
    numbers: tuple[tuple[int, int, str, str], ...]  # (start, end, value, unit or '')
    negations: tuple[tuple[int, str], ...]
    overturn: str | None


def _negations(text: str) -> tuple[tuple[int, str], ...]:
    """(where, marker) of each negation in a clause."""
    out = [(m.start(), m.group(0)) for m in _NEG_EN.finditer(text)]
    for w in _NEG_ZH_WORDS:
        i = text.find(w)
        if i >= 0:
            out.append((i, w))
    for i, ch in enumerate(text):
        if ch in _NEG_ZH_CHARS:
            if text[i:i + 2] in _NOT_NEG_AFTER or text[i:i + 3] in _NOT_NEG_AFTER:
                continue
            if i and text[i - 1:i + 1] in _NOT_NEG_BEFORE:
                continue
            out.append((i, ch))
    return tuple(sorted(out))


def _negated(clauses: list[_Clause], anchor: str) -> str | None:
    """The negation said of the anchor (near it in a clause that names it), or None."""
    for c in clauses:
        if not c.negations:
            continue
        at = locate.find_term(c.text, {anchor})
        for i, marker in c.negations:
            if at >= 0 and abs(i - at) <= NEAR:
                return marker
    return None


def _numbers(tok: T.Tokenizer, generic: frozenset[str], text: str) -> tuple[tuple[int, int, str, str], ...]:
    """(start, end, value, unit) of each number in a clause. Dates, times of
    day and list markers are no quantities: a daily note's date differs from
    the next one's by nature."""
    text = _NOT_A_QUANTITY.sub(lambda m: " " * len(m.group(0)), text)
    out = []
    for m in _NUMBER.finditer(text):
        num, unit = m.group(1), (m.group(2) or "").strip()
        if unit.isascii() and unit:
            # a Latin word after a number is its unit ('3 servers', '5ms'),
            # unless it is a stop or generic word ('floor 5 now')
            stemmed = tok.terms(unit)[0]
            unit = " " + stemmed[0] if stemmed and stemmed[0] not in generic else ""
        value = num.rstrip("0").rstrip(".") if "." in num else num.lstrip("0") or "0"
        out.append((m.start(), m.start() + len(num), value, unit))
    return tuple(out)


class Clauses:
    """Each memory's clauses, each analysed (tokenized, its numbers and
    negations found) once per call, and only when a shared anchor may be in it."""

    def __init__(self, tok: T.Tokenizer, generic: Generic) -> None:
        self.tok = tok
        self.generic = generic.words
        self._texts: dict[str, list[str]] = {}
        self._done: dict[tuple[str, int], _Clause] = {}

    def _split(self, e: Entry) -> list[str]:
        got = self._texts.get(e.id)
        if got is None:
            text = display_text(e.text)
            if e.title and not text.lstrip(" #\t\n").startswith(e.title):
                text = e.title + "\n" + text
            got = self._texts[e.id] = [p for p in _CLAUSE.split(T.normalize(text)) if p.strip()]
        return got

    def _clause(self, eid: str, i: int, part: str) -> _Clause:
        got = self._done.get((eid, i))
        if got is None:
            words = [w for w in self.tok.terms(part)[0] if w not in self.generic]
            m = _OVERTURN_RE.search(part)
            got = self._done[(eid, i)] = _Clause(part, frozenset(words), _numbers(self.tok, self.generic, part),
                                                 _negations(part), m.group(0) if m else None)
        return got

    def about(self, e: Entry, anchor: str) -> list[_Clause]:
        """The clauses of ``e`` that name the anchor (an index term)."""
        t = anchor.lstrip("#")
        # a stem is the start of the word written ('offic' of 'office'), but
        # for the few that change a letter ('study' of 'studies'): a cheap
        # test before tokenizing the clause
        probe = t[:-1] if len(t) > 3 and t.isascii() else t
        out = []
        for i, part in enumerate(self._split(e)):
            if probe in part:
                c = self._clause(e.id, i, part)
                if t in c.words or anchor in c.words:
                    out.append(c)
        return out


def _jaccard(a: Iterable[_Clause], b: Iterable[_Clause]) -> float:
    wa = frozenset().union(*(c.words for c in a))
    wb = frozenset().union(*(c.words for c in b))
    return len(wa & wb) / len(wa | wb) if wa | wb else 0.0


def _anchor_span(c: _Clause, anchor: str) -> tuple[int, int] | None:
    at = locate.find_term(c.text, {anchor})
    if at < 0:
        return None
    m = _WORD.match(c.text, at) if anchor.isascii() else None
    return at, m.end() if m else at + len(anchor)


def _said_of(clauses: list[_Clause], anchor: str) -> dict[str, set[str]]:
    """Unit → the values of the numbers written next to the anchor (at most
    ``GAP`` characters between them) in these clauses."""
    out: dict[str, set[str]] = {}
    for c in clauses:
        span = _anchor_span(c, anchor) if c.numbers else None
        if span is None:
            continue
        at, end = span
        for start, stop, value, unit in c.numbers:
            gap = start - end if start >= end else at - stop
            if 0 <= gap <= GAP and value != anchor:
                out.setdefault(unit, set()).add(value)
    return out


def _fmt(values: set[str], unit: str) -> str:
    return ", ".join(v + unit for v in sorted(values))


def as_written(terms: Iterable[str], *entries: Entry) -> dict[str, str]:
    """Index term (stemmed, folded: 'databas') → the word as written in the
    first of ``entries`` that holds it ('Databases'), else the term itself
    (without a tag's '#')."""
    terms = list(dict.fromkeys(terms))
    out: dict[str, str] = {}
    for e in entries:
        rest = [t for t in terms if t not in out]
        if not rest:
            break
        out.update(locate.surfaces("\n".join([e.title, display_text(e.body)]), rest))
    return {t: out.get(t, t.lstrip("#")) for t in terms}


def judge(old: Entry, new: Entry, anchors: list[str], clauses: Clauses) -> ConflictPair | None:
    """The strongest clue that these two memories disagree, or None; its
    words as the newer (else the older) writes them."""
    best: tuple[float, str, str, str] | None = None  # (score, kind, clue, anchor)
    shown = sorted({a.lstrip("#") for a in anchors})
    written: dict[str, str] = {}

    def word(t: str) -> str:  # (looked up only for a clue: most pairs have none)
        if t not in written:
            written.update(as_written([t] if written else [t, *shown], new, old))
        return written[t]

    def unit_of(unit: str) -> str:  # a Latin unit is an index term too (' connection')
        return " " + word(unit[1:]) if unit.startswith(" ") else unit

    for anchor in sorted(set(anchors)):
        name = anchor.lstrip("#")
        pa, pb = clauses.about(old, anchor), clauses.about(new, anchor)
        if not pa or not pb:
            continue
        sim = _jaccard(pa, pb)
        found: list[tuple[str, str]] = []
        if not name.isdigit():
            sa, sb = _said_of(pa, name), _said_of(pb, name)
            for unit in sorted(set(sa) & set(sb)):  # the same kind of quantity on both sides
                va, vb = sa[unit], sb[unit]
                # an anchor that is the numbers' own unit ('号楼' of '3号楼') names nothing
                if not va <= vb and not vb <= va and not (unit.strip() and name.startswith(unit.strip())):
                    found.append(("numbers", f"{word(name)}: {_fmt(va, unit_of(unit))} vs {_fmt(vb, unit_of(unit))}"))
                    break
        turn_b = next((c.overturn for c in pb if c.overturn), None)
        if turn_b and not any(c.overturn for c in pa) and sim >= OVERTURN_SIMILARITY:
            found.append(("overturn", f"the newer says '{turn_b}' about {word(name)}"))
        neg_a, neg_b = _negated(pa, name), _negated(pb, name)
        if bool(neg_a) != bool(neg_b) and sim >= NEGATION_SIMILARITY:
            which = "newer" if neg_b else "older"
            found.append(("negation", f"the {which} says '{neg_a or neg_b}' about {word(name)}, the other does not"))
        for kind, clue in found:
            # (the longer anchor names the clue: '办公室' rather than '公室')
            score = KIND_WEIGHT[kind] + sim + 0.1 * min(len(shown), 5) + 0.001 * min(len(name), 9)
            if best is None or score > best[0]:
                best = (score, kind, clue, name)
    if best is None and overturns(new.text) and not overturns(old.text):
        # the weakest clue: the newer opens with 'actually', '其实', … and
        # shares a rare anchor with the older
        best = (1.0 + 0.1 * min(len(shown), 5), "overturn",
                f"the newer opens with an overturn word about {', '.join(word(t) for t in shown[:3])}", shown[0])
    if best is None:
        return None
    return ConflictPair(old.id, new.id, old.name, new.name, best[1], best[2],
                        tuple(dict.fromkeys(word(t) for t in shown)), best[0])


def distinct(anchors: Iterable[str]) -> list[str]:
    """The anchors, one per concept: jieba's search mode gives '乌龙' inside
    '乌龙茶', and a tag '#x' its words too; what is inside another counts once."""
    names = sorted({t.lstrip("#") for t in anchors}, key=lambda t: (-len(t), t))
    out: list[str] = []
    for t in names:
        if not any(t in longer for longer in out):
            out.append(t)
    return sorted(out)


def created_key(e: Entry) -> tuple[str, str]:
    """Older first: by the creation time as written, then id."""
    return (str(e.meta.get("created") or ""), e.id)


def order(a: Entry, b: Entry) -> tuple[Entry, Entry]:
    """(older, newer) by creation, then id."""
    return (a, b) if created_key(a) <= created_key(b) else (b, a)


@dataclass
class Scan:
    conflicts: list[ConflictPair]
    comparisons: int
    candidates: int


def scan(view: View, ids: Iterable[str] | None = None, *, pairs: Pairs | None = None,
         generic: Generic | None = None) -> Scan:
    """Conflict candidates over the view (held by the caller), strongest
    first. ``pairs``: candidates already drawn with the ``generic`` filter
    (pass both, so the words are tokenized once)."""
    only = None if ids is None else {view.resolve(i).id for i in ids}
    generic = generic or Generic(view.tokenizer)
    if pairs is None:
        pairs = candidate_pairs(view, ids=only, generic=generic)
    clauses = Clauses(view.tokenizer, generic)
    found = []
    for (a, b), anchors in pairs.shared.items():
        if len(anchors) < MIN_ANCHORS or len(distinct(anchors)) < MIN_ANCHORS:
            continue
        old, new = order(view.entries[a], view.entries[b])
        c = judge(old, new, anchors, clauses)
        if c is not None:
            found.append(c)
    found.sort(key=lambda c: (-round(c.score, 9), c.a, c.b))
    return Scan(found, pairs.comparisons, len(pairs.shared))


def conflicts(view: View, ids: Iterable[str] | None = None) -> list[ConflictPair]:
    """The verb (``Repository.conflicts``): it reads the view only."""
    if isinstance(ids, str):
        ids = [ids]
    with view.reading() as current:
        return scan(current, ids).conflicts
