"""What a search means, apart from where the data lives: the terms of a query
and of a memory (title and tags weigh more), the query as asked of the index
with the further lanes its view's sources make (``ask``), the filter
predicate, snippets and ``SearchHit``. Pure: the caller hands in the index,
the entries, the lane sources and, for tie-breaking, a way to get usage —
this module reads nothing itself.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..model import names as N
from ..model import obsidian as O
from . import locate, tokenize as T
from ..model.entry import Entry
from ..errors import ParseError
from .evidence import with_evidence
from .feedback import Feedback
from .index import TAG_WEIGHT, TITLE_WEIGHT, DocTerms, Hit, Index
from ..model.lifecycle import strength
from ..model.usage import Usage
from ..model.policy import Clock, Policy
from . import clauses as CL
from .rank import Lane, LaneSource, vouched
from .textnorm import fold
from ..model.lexicon import CJK_RUN, is_cjk_char
from ..model.fields import unwrap_link
from ..model.markup import display_text, plain

def by_meaning(hit_lanes: Mapping[str, int], lanes: Sequence[Lane], slot: int) -> bool:
    """A hit the semantic lane found for a query it leaned on (few of the query's
    words in the root, or the answers in the other script: dense.py): relevant
    by its similarity, which cleared the lane's floor, though it covers few of
    the query's words. A lane only filling the tail (weight below 1) vouches
    for nothing, nor does a lane for what it ranks without having found it by
    similarity (the blend ranks the direct lexical hits too): ``rank.vouched``."""
    return vouched(lanes, hit_lanes, slot)

# index flag bits: searches skip these groups without looking at each entry
IN_ARCHIVE = 1  # in archive/, or marked archived wherever it is
PURGED = 2
SUPERSEDED = 4
# the bits ``flags`` sets exactly for a memory that is not current
# (``lifecycle.is_current``): what a search skips unless asked
NOT_CURRENT = IN_ARCHIVE | PURGED | SUPERSEDED


@dataclass
class SearchHit:
    entry: Entry
    score: float
    lanes: dict[str, int] = field(default_factory=dict)
    # with ``explain``, the query's expansion terms (→ weight) and what the
    # ranking weighed; ``None`` otherwise
    explain: dict[str, Any] | None = None
    # direct evidence for the query: its own lexical match of the query, or
    # the semantic lane's similarity where the lane leaned on the query. A
    # hit brought only by query expansion (or a lane's tail) is shown but
    # never counted as a recall (DESIGN, "What counts as a recall").
    direct: bool = False
    # the index's terms it holds (stemmed, folded: 'deploy' for 'Deploys'):
    # what the ranking weighed, and what ``relevance`` weighs
    index_terms: tuple[str, ...] = field(default=(), repr=False)
    # the shared root it is from (its label: ``Repository(shared=...)``);
    # None for the repository's own root
    root: str | None = None
    # the index's expansion terms it matched, and the query as asked: what
    # ``terms``, ``expansion`` and ``snippet`` are found from
    expansion_terms: tuple[str, ...] = field(default=(), repr=False)
    query: str = field(default="", repr=False)
    # (``written`` once asked for: finding how a hit writes its words reads and
    # tokenizes its text, a third of a search's time when done for every hit,
    # so it is done for the hits a caller looks at, when it looks)
    _shown: dict[str, str] | None = field(default=None, init=False, repr=False, compare=False)
    _snippet: str | None = field(default=None, init=False, repr=False, compare=False)

    def _written(self) -> dict[str, str]:
        shown = self._shown
        if shown is None:
            shown = self._shown = written(self.entry, self.index_terms + self.expansion_terms, self.query)
        return shown

    @property
    def terms(self) -> tuple[str, ...]:
        """The query's words it holds, as written in it (``written``)."""
        return _words(self.index_terms, self._written())

    @property
    def expansion(self) -> tuple[str, ...]:
        """The expansion terms it matched, as written in it."""
        return _words(self.expansion_terms, self._written())

    @property
    def snippet(self) -> str:
        """Its text around the first of its words, without markup."""
        text = self._snippet
        if text is None:
            text = self._snippet = snippet(self.entry, self.index_terms or self.expansion_terms)
        return text

    @property
    def ref(self) -> str:
        """What ``get`` and ``markdown`` take for this hit: its id, or
        ``label:id`` for a hit of a shared root."""
        return self.entry.id if self.root is None else f"{self.root}:{self.entry.id}"

    @property
    def superseded_by(self) -> tuple[str, ...]:
        """Names of what replaced this memory (a hit of ``include_superseded``)."""
        return tuple(unwrap_link(x) for x in O.items(self.entry.meta.get("superseded_by")))

    def to_dict(self) -> dict[str, Any]:
        out = {"id": self.entry.id, "title": self.entry.title, "path": self.entry.path,
               "score": round(self.score, 6), "terms": list(self.terms), "snippet": self.snippet,
               "lanes": self.lanes, "direct": self.direct}
        if self.root is not None:
            out["root"] = self.root
        if self.superseded_by:
            out["superseded_by"] = list(self.superseded_by)
        if self.explain is not None:
            out["explain"] = self.explain
        return out


def flags(e: Entry) -> int:
    status = e.status
    return ((IN_ARCHIVE if e.layer == "archive" or status == "archived" else 0)
            | (PURGED if status == "purged" else 0) | (SUPERSEDED if status == "superseded" else 0))


# a CJK run of the query longer than a bigram and no longer than a tag is
# also looked up whole (it may be a tag: '移动端')
WHOLE_RUN = (2, 8)


def whole(s: str) -> str:
    """The index term of a tag (or a short CJK run) taken as a whole."""
    return "#" + N.slugify(fold(s), max_bytes=200)  # folded like words: 資料庫 is 资料库


def doc_terms(tok: T.Tokenizer, entry: Entry) -> DocTerms:
    """What a memory is indexed with: title and tags weigh more than the body."""
    title = entry.title
    tags = "\n".join(entry.tags)
    # links are not words of the memory: frontmatter links are left out, and a
    # body wikilink counts once, by the text a reader sees ([[name|label]] → label)
    rest = "\n".join([display_text(entry.body), entry.room.replace("/", " ")])
    if title and entry.body.lstrip(" #\t\n").startswith(title):
        title = ""  # a title taken from the first line would count that line four times
    tw, tb = tok.terms("\n".join([title, *entry.aliases]))  # aliases name a note as its title does
    gw, gb = tok.terms(tags)
    # a tag also matches as a whole, so '移动端' finds the tag even though
    # jieba cuts the query into '移动' + '端'; a nested tag also as its parents
    gw = gw + [whole(t) for t in sorted(entry.tag_set)]
    rw, rb = tok.terms(rest)
    return DocTerms.build([(tw, tb, TITLE_WEIGHT), (gw, gb, TAG_WEIGHT), (rw, rb, 1)])


@dataclass(frozen=True)
class Asked:
    """One query as the index is asked it: its text, its word and bigram
    weights, and the further lanes the view's lane sources made for it (the
    semantic lane's, when it is on). False when there is nothing to ask.
    ``parts``: the questions of a query that asks two or more
    (``clauses.split``), each asked on its own by ``run``; ``lanes`` are
    still the whole query's, for a caller that asks the index the whole
    query (``context``, ``about``)."""
    text: str
    words: dict[str, float]
    bigrams: dict[str, float]
    lanes: Sequence[Lane] = ()
    parts: Sequence["Asked"] = ()

    def __bool__(self) -> bool:
        return bool(self.words or self.bigrams or self.lanes or any(self.parts))


def ask(tok: T.Tokenizer, query: str, sources: Iterable[LaneSource] = ()) -> Asked:
    """``query``'s terms, and the lanes each of ``sources`` (a view's
    ``lanes``) makes of them: called once per search, inside the view's
    reading, so that a lane is made (and its query embedded) once. A query
    that asks two questions is asked as each of them (``Asked.parts``)."""
    words, bigrams = query_terms(tok, query)
    clauses = CL.split(query, lambda c: _count(query_terms(tok, c)))
    sources = tuple(sources)
    parts = tuple(ask(tok, c, sources) for c in clauses) if len(clauses) > 1 else ()
    lanes = tuple(lane for source in sources for lane in source(words, bigrams, query))
    return Asked(query, words, bigrams, lanes, parts)


def _count(terms: tuple[dict[str, float], dict[str, float]]) -> int:
    """A clause's words and bigrams (a whole CJK run counts in its bigrams)."""
    return sum(not t.startswith("#") for t in terms[0]) + len(terms[1])


def _weights(terms: list[str]) -> dict[str, float]:
    """Query term weights: a repeated term counts a little more."""
    return {t: 1 + 0.5 * (n - 1) for t, n in Counter(terms).items()}


def query_terms(tok: T.Tokenizer, query: str) -> tuple[dict[str, float], dict[str, float]]:
    """(word weights, bigram weights) of a query."""
    words, bigrams = tok.terms(query)
    words = longest_only(words)
    words += [whole(r) for r in CJK_RUN.findall(fold(query)) if WHOLE_RUN[0] < len(r) <= WHOLE_RUN[1]]
    return _weights(words), _weights(bigrams)


def longest_only(words: list[str]) -> list[str]:
    """A query's words without the parts jieba's search mode added of its
    CJK compounds. For a word of more than two characters it adds the
    dictionary words of two characters inside it, and of three inside one of
    more than three (少数民族 → 少数, 民族, 少数民族), so a memory holding the
    compound matched it three times, and a question's compound outweighed a
    rare name beside it ("白岳峰是哪一个少数民族的？"); a memory holding only a
    part still matches in the bigram lane. (On a memory's side the parts stay:
    they are what a question with the part alone matches.) A compound no
    memory holds is read as its held pieces again (``pieces``). Each
    compound takes one occurrence of each of its parts; a part written on its
    own too keeps that occurrence (少数民族和民族), as does anything jieba
    never adds as a part (one character: 张三 三). Linear in the words: a
    long pasted text is a long query."""
    cjk = {w for w in words if len(w) > 2 and is_cjk_char(w[0])}
    if not cjk:
        return words
    present = {w for w in words if len(w) in (2, 3) and is_cjk_char(w[0])}

    def parts(u: str) -> list[str]:
        return [u[i:i + k] for k in (2, 3) if len(u) > k for i in range(len(u) - k + 1) if u[i:i + k] in present]
    made = {u: parts(u) for u in cjk}
    inside = {p for ps in made.values() for p in ps}
    # (a part is added for the word the precise cut gave, not for a part of it:
    # 共和国 inside 中华人民共和国 owes no 共和 of its own)
    owed = Counter(p for u in words if u in made and u not in inside for p in made[u])
    if not owed:
        return words
    out = []
    for w in words:
        if owed[w] > 0:
            owed[w] -= 1
        else:
            out.append(w)
    return out


Predicate = Callable[[Entry], bool]


def make_filter(*, layers: set[str] | None = None, room: str | None = None,
                tags: Iterable[str] | None = None, kinds: set[str] | None = None,
                status: str | None = None, since: _dt.datetime | None = None,
                until: _dt.datetime | None = None) -> Predicate:
    """A predicate over entries from checked filter values (``validate``)."""
    tagset = set(tags) if tags else None
    since_dt, until_dt = since, until

    def pred(e: Entry) -> bool:
        if layers is not None and e.layer not in layers:
            return False
        if room is not None and e.room != room and not e.room.startswith(room + "/"):
            return False
        if kinds is not None and e.kind not in kinds:
            return False
        if status is not None and e.status != status:
            return False
        if tagset is not None and not tagset.issubset(e.tag_set):  # (a/b is tagged a too)
            return False
        if since_dt or until_dt:
            try:
                t = e.updated
            except ParseError:
                return False
            if since_dt and t < since_dt or until_dt and t > until_dt:
                return False
        return True
    return pred


def snippet(entry: Entry, terms: Iterable[str], width: int = 80) -> str:
    """About ``width`` characters of the memory's text as a reader sees it
    (no markup: ``markup.plain``), around the first of the index ``terms``."""
    text = " ".join(plain(entry.body).split())
    pos = locate.find_term(text, {t.lstrip("#") for t in terms})
    if pos < 0:
        return text[:width] + ("…" if len(text) > width else "")
    start = max(0, pos - width // 3)
    end = start + width
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


def written(entry: Entry, terms: Sequence[str], query: str = "") -> dict[str, str]:
    """Index term (stemmed, folded: 'databas', '#移动端') → the word written
    in the memory — its title, aliases, tags or text — else in the ``query``,
    else the term as it is (without a tag's '#')."""
    if not terms:
        return {}
    tags = {whole(t): t for t in entry.tag_set}
    shown: dict[str, str] = {t: tags[t] for t in terms if t in tags}
    for text in ("\n".join([entry.title, *entry.aliases, *entry.tags]), display_text(entry.body), query):
        rest = [t for t in terms if t not in shown]
        if not rest:
            break
        shown.update(locate.surfaces(text, rest))
    return {t: shown.get(t, t.lstrip("#")) for t in terms}


def _words(terms: Sequence[str], shown: Mapping[str, str]) -> tuple[str, ...]:
    """``terms`` as ``shown`` writes them, in order, each word once."""
    return tuple(dict.fromkeys(shown[t] for t in terms))


class Tiebreak:
    """Strength now, then recency, then value: only ever asked for memories
    with equal fused scores, so usage is fetched on the first tie, if any."""

    def __init__(self, entries: Mapping[str, Entry], usage: Callable[[], Mapping[str, Usage]],
                 kinds: Mapping[str, Clock | None]) -> None:
        self.entries, self.usage_of, self.kinds = entries, usage, kinds
        self._usage: Mapping[str, Usage] | None = None
        self._now = 0.0

    def __call__(self, eid: str) -> tuple[float, ...]:
        e = self.entries[eid]
        if self._usage is None:
            self._usage, self._now = self.usage_of(), time.time()
        try:
            t = e.updated.timestamp()
            st = strength(e, self._usage.get(eid), self.kinds, self._now).strength
        except ParseError:
            t, st = 0.0, e.value
        return (round(st, 9), e.value, t)  # value matters when both have decayed to ~0


def feedback(policy: Policy) -> Feedback | None:
    """The feedback lane's settings from the policy (``None``: off)."""
    if policy.feedback_docs <= 0 or policy.feedback_weight <= 0:
        return None
    return Feedback(policy.feedback_docs, policy.feedback_terms, policy.feedback_weight,
                    terms_latin=policy.feedback_terms_latin)


def run(index: Index, entries: Mapping[str, Entry], asked: Asked, *, limit: int,
        pred: Predicate | None, include_archive: bool, include_superseded: bool,
        tiebreak: Tiebreak, fb: Feedback | None = None, explain: bool = False) -> list[SearchHit]:
    """The ranked hits of one query (see ``Repository.search``), ``asked``
    as ``ask`` made it (its lanes fused with the lexical ones)."""
    if not asked:
        return []
    if asked.parts:  # each question its own ranking, merged (clauses.py)
        each = [run(index, entries, part, limit=limit, pred=pred, include_archive=include_archive,
                    include_superseded=include_superseded, tiebreak=tiebreak, fb=fb, explain=explain)
                for part in asked.parts]
        return [dataclasses.replace(h, score=share)
                for h, share in CL.by_share(each, lambda h: h.entry.id, lambda h: h.score, limit)]
    allowed = None if pred is None else (lambda eid: pred(entries[eid]))
    exclude = PURGED | (0 if include_archive else IN_ARCHIVE) | (0 if include_superseded else SUPERSEDED)
    hits = index.search(asked.words, asked.bigrams, exclude=exclude, allowed=allowed, tiebreak=tiebreak,
                        limit=limit, feedback=fb, lanes=asked.lanes)
    lanes = asked.lanes

    def unlike(weak: Sequence[Hit]) -> list[bool]:  # (a further lane's evidence against each)
        slots = [index.slot_of[h.key] for h in weak]
        return [any(no) for no in zip(*(lane.unlike(slots) for lane in lanes))]
    hits = with_evidence(hits, index, asked.words, asked.bigrams, unlike if lanes else None,
                         found=(lambda h: by_meaning(h.lanes, lanes, index.slot_of[h.key])) if lanes else None)
    out = []
    for h in hits:
        hit = SearchHit(entries[h.key], h.score, h.lanes, None, h.direct, h.terms,
                        expansion_terms=h.expansion, query=asked.text)
        if explain:  # (the index's own terms too: what the ranking weighed)
            hit.explain = {"lanes": dict(h.lanes), "terms": list(hit.terms), "expansion_matched": list(hit.expansion),
                           "index_terms": list(h.terms), "expansion": {t: round(w, 4) for t, w in h.expanded.items()},
                           "direct": h.direct}
        out.append(hit)
    return out
