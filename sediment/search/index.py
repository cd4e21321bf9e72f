"""The in-memory search index. Three rankings fused by reciprocal rank
(1/(60 + rank)): BM25 over words, the rare-term ranking over the same words
(sum of the IDFs of the query words a document has: dsh-chain's "rare-term
lane", which rewards covering the query over repeating one of its words), and
BM25 over CJK character bigrams; then a fourth, pseudo-relevance feedback
(``feedback.py``): the word lane again, over the query expanded with the words
of the first fused results. Pure: no I/O; ``snapshot``/``restore`` turn it into
bytes and back, and the repository decides where those live.

Each lane's postings (and the word lane's term vectors) live in
``postings.Postings``. A changed document gets a new slot; its old slot is
marked dead and skipped. Dead slots are dropped when they pass a quarter of all
slots (amortised O(1) per change) and whenever the base is rebuilt.
"""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import BinaryIO, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

from . import bulk
from . import coverage as C
from . import feedback as F
from . import pieces as P
from . import snapshot as SN
from .maxscore import Scored, bm25
from .postings import NO_SLOT, Postings, renumber
from .rank import Lane, Ranking, best, rrf, rrf_add, vouched
from .snapshot import Columns

# Field weights, applied as repeated term frequency (a poor man's BM25F): a
# word in the title or a tag says more about what a memory is than one in the body.
TITLE_WEIGHT = 3
TAG_WEIGHT = 3
# candidates ranked per lane before fusion: below rank 100 a lane adds less
# than 1/160 to a fused score, never enough to matter for the first results;
# a search for few results ranks each lane 5 of its limit deep, 50 at least
# (a lane's rank past 50 adds under 1/110: a search for 10 results costs 11%
# less at the median and 7% less at the p99 of common words, 10k, and the
# retrieval sets, asked for 50, rank as deep as before: benchmarks/README.md,
# "Snapshot format 11, … and the tail")
LANE_DEPTH = 100
MIN_LANE_DEPTH = 50
LANE_PER_RESULT = 5


def lane_depth(limit: int) -> int:
    """How deep each lane ranks for a search of ``limit`` results."""
    return max(limit, min(LANE_DEPTH, max(MIN_LANE_DEPTH, LANE_PER_RESULT * limit)))


ALIVE = 0x80
# dead slots are dropped when there are more than this many and they pass a
# quarter of all slots (amortised O(1) per change; a small index keeps its few)
COMPACT_AFTER = 1000
_MASKS: dict[int, bytes] = {}


@dataclass(frozen=True, slots=True)
class DocTerms:
    """Weighted term counts of one document, per lane."""
    words: dict[str, int]
    bigrams: dict[str, int]

    @staticmethod
    def build(fields: Iterable[tuple[Sequence[str], Sequence[str], int]]) -> "DocTerms":
        words: Counter[str] = Counter()
        bigrams: Counter[str] = Counter()
        for ws, bs, weight in fields:
            if weight == 1:  # (the body: counted in C)
                words.update(ws)
                bigrams.update(bs)
                continue
            for w in ws:
                words[w] += weight
            for b in bs:
                bigrams[b] += weight
        return DocTerms(dict(words), dict(bigrams))


class Batch:
    """Documents' postings made ready for the index elsewhere (a worker
    process of a cold open), all lanes: each is indexed by ``Index.put`` of
    ``Pending(batch, i)`` and merged into the base in bulk (``settle``)."""

    __slots__ = ("words", "bigrams")

    def __init__(self, docs: Sequence[DocTerms | None], first: int = 0) -> None:
        """``first``: the slot the first document is expected to get (a guess
        that saves the merge renumbering when it holds)."""
        self.words = bulk.Part.build([d.words if d else None for d in docs], vectors=True, first=first)
        self.bigrams = bulk.Part.build([d.bigrams if d else None for d in docs], first=first)

    def __len__(self) -> int:
        return len(self.words.lengths)


class Pending(NamedTuple):
    """The ``i``-th document of a batch, as ``Index.put`` takes it."""
    batch: Batch
    i: int


@dataclass
class Hit:
    key: str
    score: float
    terms: tuple[str, ...]
    lanes: dict[str, int] = field(default_factory=dict)  # lane → rank (1-based)
    expansion: tuple[str, ...] = ()  # the expansion terms this key matched
    expanded: Mapping[str, float] = field(default_factory=dict)  # the query's expansion terms → weight
    # direct evidence for the query: a term of the query's own (``terms``), or
    # a further lane's own finding (``rank.vouched``); not merely an
    # expansion match or a lane's tail. Only such a hit counts as a recall.
    direct: bool = False


def _keep_direct(top: list[int], fused: dict[int, float], direct: set[int], key_of: Sequence[str | None],
                 tiebreak: Callable[[str], tuple[float, ...]] | None) -> list[int]:
    """The candidate rule: a lane other than the query's own lexical match may
    never push all direct lexical hits out of the first results. If it did,
    the best direct hit takes the last place."""
    if not top or any(s in direct for s in top):
        return top
    first = best({s: fused[s] for s in direct}, key_of, tiebreak, 1)
    return top[:-1] + first if first else top


class Index:
    """Maps keys (memory ids) to slots and ranks them for a query."""

    def __init__(self) -> None:
        self.words = Postings(vectors=True)  # term vectors: feedback reads them
        self.bigrams = Postings()
        self.slot_of: dict[str, int] = {}
        self.key_of: list[str | None] = []
        # per slot: ALIVE plus the owner's flag bits (which searches skip it)
        self.flags = bytearray()
        self._dead = 0
        self.exact = True  # document frequencies count live documents only
        # batches put but not merged yet, each with its documents' slots
        # (NO_SLOT: not put); from the first one on, every put joins them
        self._batches: list[tuple[Batch, array[int]]] = []
        self._pending_from = 0  # the first slot put since the batches began waiting
        self.merges = 0  # bulk merges run (each a pass over the whole base)

    def __len__(self) -> int:
        return len(self.slot_of)

    def __contains__(self, key: str) -> bool:
        return key in self.slot_of

    @property
    def dead(self) -> int:
        return self._dead

    def put(self, key: str, terms: DocTerms | Pending, flags: int = 0) -> int:
        """Index a document (the key must not be indexed already). ``flags``
        (bits 0–6) let a search skip groups of documents cheaply (see
        ``search(exclude=...)``). A ``Pending`` document's postings are merged
        in bulk, with the rest of its batch, on the index's next read."""
        if key in self.slot_of:
            self.remove(key, None)
        slot = len(self.key_of)
        self.key_of.append(key)
        self.flags.append(ALIVE | (flags & 0x7F))
        self.slot_of[key] = slot
        if not isinstance(terms, Pending) and not self._batches:
            self.words.add(slot, terms.words)
            self.bigrams.add(slot, terms.bigrams)
            return slot
        # (once batches are waiting, a document of its own joins them as a
        # batch of one: a merge needs the slots of what it merges ascending)
        batch, i = terms if isinstance(terms, Pending) else (Batch([terms], slot), 0)
        if not self._batches:
            self._pending_from = slot
        if not self._batches or self._batches[-1][0] is not batch:
            self._batches.append((batch, array("I", [NO_SLOT]) * len(batch)))
        self._batches[-1][1][i] = slot
        self.words.count(slot, batch.words.lengths[i])
        self.bigrams.count(slot, batch.bigrams.lengths[i])
        return slot

    def settle(self) -> None:
        """Merge the batches put so far into the base (every read of the
        index does this first)."""
        if not self._batches:
            return
        batches, self._batches = self._batches, []
        words = [(b.words, m) for b, m in batches]
        bigrams = [(b.bigrams, m) for b, m in batches]
        del batches
        self.merges += 1
        bulk.merge(self.words, words)
        del words
        bulk.merge(self.bigrams, bigrams)

    def remove(self, key: str, terms: DocTerms | None) -> None:
        """Drop a document. ``terms`` should be what it was indexed with (the
        owner re-derives them: the index keeps the words' term vectors but not
        the bigrams'); without them bigram document frequencies are off until
        ``compact``."""
        slot = self.slot_of.get(key)
        if slot is None:
            return
        if terms is None and self._batches and slot >= self._pending_from:
            # (the words' term vectors tell what it had, and a slot still in
            # a batch has none yet; one put before the batches has: a merge
            # per such removal was a pass over the whole base each)
            self.settle()
        del self.slot_of[key]
        self.flags[slot] = 0
        self.key_of[slot] = None
        self.words.remove(slot, terms.words if terms else None)
        self.bigrams.remove(slot, terms.bigrams if terms else ())
        if terms is None:
            self.exact = False
        self._dead += 1
        if self._dead > COMPACT_AFTER and self._dead * 4 > len(self.key_of):
            self.compact()

    def set_flags(self, key: str, flags: int) -> None:
        """Change a document's flag bits in place (a move between layers changes
        where it is, not what it says: its terms stay)."""
        slot = self.slot_of[key]
        self.flags[slot] = ALIVE | (flags & 0x7F)

    def compact(self) -> None:
        """Drop dead slots and fold the deltas into the base."""
        self.settle()
        alive = [s for s, k in enumerate(self.key_of) if k is not None and self.flags[s] & ALIVE]
        remap = renumber(alive, len(self.key_of))
        keys = [self.key_of[s] for s in alive]
        self.words.rebuild(remap)
        self.bigrams.rebuild(remap)
        self.key_of = keys
        self.slot_of = {k: i for i, k in enumerate(keys)}  # type: ignore[misc]
        self.flags = bytearray(f for f in self.flags if f & ALIVE)
        self._dead = 0
        self.exact = True

    # -------------------------------------------------------------- snapshot

    def fold(self) -> None:
        """Fold what was indexed since the last snapshot into the compact base.
        A bulk load calls this now and then: a delta of a million small arrays
        costs several times the memory of the same postings in the base."""
        self.settle()
        for lane in (self.words, self.bigrams):
            if lane.delta or lane.vec_delta:  # (nothing to fold: a copy of the base for nothing)
                lane.rebuild(None)

    @property
    def delta_terms(self) -> int:
        return len(self.words.delta) + len(self.bigrams.delta)

    def snapshot(self, columns: Columns | None = None, fingerprint: str = "") -> list[SN.Buffer]:
        """The index, and the owner's ``columns`` (given the keys in slot
        order, once dead slots are dropped: named sections of bytes, whatever
        the owner needs to skip parsing, each laid out by slot as it likes),
        as a list of byte chunks to write one after the other (never joined:
        at 100k memories that would double the peak memory); the layout is
        ``snapshot.py``'s."""
        if self._dead:
            self.compact()
        else:
            self.fold()
        return SN.pack(self, columns(self.key_of) if columns is not None else (), fingerprint)  # type: ignore[arg-type]

    def reattach(self, opened: Callable[[], BinaryIO]) -> bool:
        """After ``snapshot``'s chunks were written to a file (``opened()``
        opens it, when needed): term vectors still read from the snapshot
        this index was restored from are read from the new one
        (``snapshot.reattach``)."""
        return SN.reattach(self, opened)

    @classmethod
    def restore(cls, data: bytes | BinaryIO, fingerprint: str = "") -> tuple["Index", dict[str, bytes]]:
        """The index and the owner's columns (name → bytes) from ``snapshot``
        bytes, or a file open on them. Raises ``ValueError`` for anything
        damaged or from another format. The lanes' arrays are views of what
        was read, not copies of it."""
        idx = cls()
        return idx, SN.unpack(idx, data, fingerprint)

    # -------------------------------------------------------------- search

    def search(self, words: Mapping[str, float], bigrams: Mapping[str, float], *,
               exclude: int = 0, allowed: Callable[[str], bool] | None = None,
               tiebreak: Callable[[str], tuple[float, ...]] | None = None,
               limit: int = 10, lanes: Sequence[Lane] = (), feedback: F.Feedback | None = None,
               prune: bool = True) -> list[Hit]:
        """Fuse the lanes by reciprocal rank. A key with no term of the query in
        either lexical lane is never returned by them. Documents with any of the
        ``exclude`` flag bits are skipped (in C, via a translated mask);
        ``allowed`` filters the rest by key; ``tiebreak`` orders equal fused
        scores (higher first), then the key keeps the order stable. ``lanes``
        are further rankings fused the same way (``rank.Lane``: each is handed
        the lexical rankings just made, so none scores them again). With ``feedback``, the
        feedback lane too. Those lanes can bring keys with no term of the query
        (the feedback lane: only keys matching the expanded query, and none
        when the query's own matches answer it: ``feedback.answered``), but never
        all of the first ``limit`` (``_keep_direct``); a hit says whether it
        has direct evidence for the query (``Hit.direct``).
        ``prune=False`` scores every posting (the same results, slower: for
        tests and benchmarks)."""
        self.settle()
        words = P.in_vocabulary(words, self.words.df)  # (a CJK word no memory holds: its pieces, pieces.py)
        mask = self._mask(exclude)
        key_of = self.key_of
        allow_slot = None
        if allowed is not None:
            allow_slot = lambda s: allowed(key_of[s])  # type: ignore[arg-type]  # noqa: E731
        depth = lane_depth(limit)

        def order(s: int) -> str:  # (ties at a lane's cut: by key, never by slot; maxscore.whole_ties)
            return key_of[s] or ""
        rankings: list[tuple[str, Ranking]] = []
        scored = Scored()  # the word lane's scores, which the feedback lane adds to
        if words:
            top, top_rare = bm25(self.words, words, mask, allow_slot, depth, rare=True, prune=prune, state=scored,
                                 order=order)
            rankings += [("words", top), ("rare", top_rare)]
        if bigrams:
            top, _ = bm25(self.bigrams, bigrams, mask, allow_slot, depth, prune=prune, order=order)
            rankings.append(("bigrams", top))
        direct = {s for _, top in rankings for _, s in top}  # the query's own lexical matches
        lexical = dict(rankings)  # (handed to the lanes: the blend weighs these scores, dense.py)
        rankings += [(lane.name, lane.rank(mask, allow_slot, depth, lexical)) for lane in lanes]
        weights: dict[str, float] = {}
        for lane in lanes:  # a lane weighs itself, and may reweigh the lexical lanes (dense.py)
            weights[lane.name] = lane.weight
            weights.update(lane.reweigh)
        fused, ranks = rrf(rankings, weights)
        C.abstain(fused, ranks, lexical, words_lane=self.words, bigrams_lane=self.bigrams, words=words,
                  bigrams=bigrams, depth=depth, weights=weights)  # (coverage.py)
        expanded: dict[str, float] = {}
        if feedback is not None and feedback.docs > 0 and fused:
            # seeds only among the query's own lexical matches: a lane's
            # similarity-only hit would expand the query from a memory that
            # shares nothing with it (a question about nothing then brings
            # whatever matches that memory's words)
            pool = fused if not lanes else {s: v for s, v in fused.items() if s in direct}  # (no lanes: all direct)
            seeds = best(pool, self.key_of, tiebreak, feedback.docs) if pool else []
            # (a query has bigrams exactly when it has CJK text)
            expanded = F.expansion(self.words, [(s, fused[s]) for s in seeds], words, feedback, bool(bigrams))
            if expanded:
                if feedback.with_query:
                    top = F.score(self.words, scored, expanded, mask, allowed=allow_slot, depth=depth, prune=prune,
                                  order=order)
                else:
                    top, _ = bm25(self.words, expanded, mask, allow_slot, depth, prune=prune, order=order)
                if F.answered(self.words, self.bigrams, words, bigrams, seeds, fb=feedback):
                    top = [x for x in top if x[1] in direct]  # (it may reorder the query's matches, never add)
                rankings.append(("feedback", top))
                # (the dense lane may reweigh it)
                fb_weight = feedback.fuse_weight * weights.get("feedback", 1.0) * feedback.damp(rankings, scored)
                rrf_add(fused, ranks, rankings[-1:], {"feedback": fb_weight})
        top_slots = best(fused, self.key_of, tiebreak, limit)
        if expanded or lanes:
            top_slots = _keep_direct(top_slots, fused, direct, self.key_of, tiebreak)
        out = []
        # matched terms only for what is returned
        in_words, in_bigrams = self.words.matched(top_slots, words), self.bigrams.matched(top_slots, bigrams)
        via = self.words.matched(top_slots, expanded)
        for s in top_slots:
            matched = in_words[s] + in_bigrams[s]
            extra = tuple(via[s])
            own = bool(matched) or vouched(lanes, ranks[s], s)
            out.append(Hit(self.key_of[s], fused[s], tuple(sorted(set(matched))), ranks[s],  # type: ignore[arg-type]
                           extra, expanded, own))
        return out

    # -------------------------------------------------------------- reading

    def _mask(self, exclude: int) -> bytearray:
        """A byte per slot: 1 for a live one with none of the ``exclude`` flag bits (made in C)."""
        table = _MASKS.get(exclude)
        if table is None:
            table = _MASKS[exclude] = bytes(1 if v & ALIVE and not v & exclude else 0 for v in range(256))
        return self.flags.translate(table)

    def count(self, exclude: int = 0) -> int:
        """How many live documents have none of the ``exclude`` flag bits."""
        return self._mask(exclude).count(1)

    def _lane(self, lane: str) -> Postings:
        self.settle()
        if lane not in ("words", "bigrams"):
            raise ValueError(f"no lane {lane!r} (words or bigrams)")
        return self.words if lane == "words" else self.bigrams

    def df(self, term: str, lane: str = "words") -> int:
        """How many live documents have ``term``."""
        return self._lane(lane).df(term)

    def length(self, key: str, lane: str = "words") -> int:
        """How many terms the document ``key`` has in the lane (weighted: a
        title's count more), as BM25 reads its length."""
        return self._lane(lane).lengths[self.slot_of[key]]

    def postings(self, term: str, lane: str = "words") -> list[tuple[str, int]]:
        """(key, weighted term frequency) of every live document with ``term``."""
        out = []
        key_of, flags = self.key_of, self.flags
        for slots, tfs in self._lane(lane).postings(term):
            for s, tf in zip(slots, tfs, strict=True):
                k = key_of[s]
                if k is not None and flags[s] & ALIVE:
                    out.append((k, tf))
        return out

    def terms(self, lane: str = "words", *, min_df: int = 1, max_df: int | None = None) -> Iterator[tuple[str, int]]:
        """(term, document frequency) of the lane's terms whose frequency is in
        the range, in term order."""
        ln = self._lane(lane)
        names = sorted(set(ln.base_index) | set(ln.delta)) if ln.delta else ln.base_index
        for t in names:
            df = ln.df(t)
            if df >= min_df and (max_df is None or df <= max_df):
                yield t, df
