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

import hashlib
import io
import json
import struct
import sys
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping, NamedTuple, Sequence

from . import bulk
from . import coverage as C
from . import feedback as F
from .maxscore import Scored, bm25
from .postings import NO_SLOT, Postings, Vocab, renumber
from .rank import Lane, Ranking, best, rrf, rrf_add, vouched

# Field weights, applied as repeated term frequency (a poor man's BM25F): a
# word in the title or a tag says more about what a memory is than one in the body.
TITLE_WEIGHT = 3
TAG_WEIGHT = 3
# candidates ranked per lane before fusion: below rank 100 a lane adds less
# than 1/160 to a fused score, never enough to matter for the first results
LANE_DEPTH = 100
# 10: the view's documents hold each file's settled stat (an older version
# would fail on them); 9: frequencies as bytes where they fit; 8: term vectors
# of the word lane (ids only; 7 held frequencies too); 6: superseded flag bit
SNAPSHOT_FORMAT = 10
_MAGIC = b"SEDIDX\n"
# what a snapshot holds of each lane, in order ("starts": the vocabulary's)
_LANE_ARRAYS = {
    "words": ("starts", "base_offsets", "base_slots", "base_tfs", "lengths", "vec_offsets", "vec_terms"),
    "bigrams": ("starts", "base_offsets", "base_slots", "base_tfs", "lengths"),
}
# the others "I"; a lane's frequencies are "B" or "H" (its "tfs" in the header)
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

    def snapshot(self, docs: dict[str, Any], fingerprint: str = "") -> list[bytes]:
        """The index and ``docs`` (per key, whatever the owner needs to skip
        parsing: JSON-able) as a list of byte chunks to write one after the
        other (never joined: at 100k memories that would double the peak
        memory). Dead slots are dropped first."""
        if self._dead:
            self.compact()
        else:
            self.fold()
        header: dict[str, Any] = {
            "format": SNAPSHOT_FORMAT, "byteorder": sys.byteorder, "fingerprint": fingerprint,
            "docs": [docs[k] for k in self.key_of],  # type: ignore[index]
            "keys": self.key_of,
        }
        blobs: list[bytes] = [bytes(self.flags)]
        for name, lane in (("words", self.words), ("bigrams", self.bigrams)):
            tfs = lane.base_tfs
            header[name] = {"terms": lane.base_index.blob, "total_len": lane.total_len, "live": lane.live,
                            "tfs": tfs.typecode if isinstance(tfs, array) else tfs.format}
            blobs += [(lane.base_index.starts if a == "starts" else getattr(lane, a)).tobytes()
                      for a in _LANE_ARRAYS[name]]
        head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        del header
        sizes = [len(head)] + [len(b) for b in blobs]
        chunks = [struct.pack(f"<{len(sizes)}Q", *sizes), head, *blobs]
        digest = hashlib.sha256()
        for c in chunks:
            digest.update(c)
        return [_MAGIC, digest.digest(), *chunks]

    @classmethod
    def restore(cls, data: bytes | BinaryIO, fingerprint: str = "") -> tuple["Index", list[Any]]:
        """The index and the per-key docs from ``snapshot`` bytes, or a file
        open on them. Raises ``ValueError`` for anything damaged or from
        another format.

        The lanes' arrays are not copied out of what is read: each lane's
        bytes are read into one buffer and its arrays are views of it (a
        warm open of 100k memories saves a copy of a few hundred MB, and the
        time to make it); a lane rebuilt later lets its buffer go."""
        head, flags, sizes, bufs = _read_snapshot(data)
        if head.get("format") != SNAPSHOT_FORMAT or head.get("byteorder") != sys.byteorder:
            raise ValueError("snapshot of another format")
        if head.get("fingerprint") != fingerprint:
            raise ValueError("snapshot made by another version of the tokenizer or parser")
        idx = cls()
        keys = head["keys"]
        idx.flags = flags
        if len(idx.flags) != len(keys):
            raise ValueError("snapshot flags are inconsistent")
        k = 2
        for (name, lane), buf in zip((("words", idx.words), ("bigrams", idx.bigrams)), bufs):
            n = len(_LANE_ARRAYS[name])
            _restore_lane(lane, name, head[name], buf, sizes[k:k + n], keys=len(keys))
            k += n
        idx.key_of = keys
        idx.slot_of = dict(zip(keys, range(len(keys))))
        return idx, head["docs"]

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
        table = _MASKS.get(exclude)
        if table is None:
            table = _MASKS[exclude] = bytes(1 if v & ALIVE and not v & exclude else 0 for v in range(256))
        mask = self.flags.translate(table)
        allow_slot = None
        if allowed is not None:
            key_of = self.key_of
            allow_slot = lambda s: allowed(key_of[s])  # type: ignore[arg-type]  # noqa: E731
        depth = max(LANE_DEPTH, limit)
        rankings: list[tuple[str, Ranking]] = []
        scored = Scored()  # the word lane's scores, which the feedback lane adds to
        if words:
            top, top_rare = bm25(self.words, words, mask, allow_slot, depth, rare=True, prune=prune, state=scored)
            rankings += [("words", top), ("rare", top_rare)]
        if bigrams:
            top, _ = bm25(self.bigrams, bigrams, mask, allow_slot, depth, prune=prune)
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
                    top = F.score(self.words, scored, expanded, mask, allowed=allow_slot, depth=depth, prune=prune)
                else:
                    top, _ = bm25(self.words, expanded, mask, allow_slot, depth, prune=prune)
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

    def _lane(self, lane: str) -> Postings:
        self.settle()
        if lane not in ("words", "bigrams"):
            raise ValueError(f"no lane {lane!r} (words or bigrams)")
        return self.words if lane == "words" else self.bigrams

    def df(self, term: str, lane: str = "words") -> int:
        """How many live documents have ``term``."""
        return self._lane(lane).df(term)

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


def _read_snapshot(data: bytes | BinaryIO) -> tuple[dict[str, Any], bytearray, tuple[int, ...], list[bytearray]]:
    """A snapshot's header, flags, array sizes and one buffer per lane, its
    checksum checked. Raises ``ValueError`` for anything damaged."""
    fh: Any = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data  # (readinto: not in BinaryIO)
    if fh.read(len(_MAGIC)) != _MAGIC:
        raise ValueError("not a sediment index snapshot")
    digest = fh.read(32)
    n = 2 + sum(len(a) for a in _LANE_ARRAYS.values())
    raw = fh.read(8 * n)
    if len(raw) != 8 * n:
        raise ValueError("snapshot is truncated")
    sizes: tuple[int, ...] = struct.unpack(f"<{n}Q", raw)
    here = fh.tell()
    if fh.seek(0, io.SEEK_END) - here != sum(sizes):
        raise ValueError("snapshot is truncated")
    fh.seek(here)
    check = hashlib.sha256(raw)
    head_bytes = fh.read(sizes[0])
    flags = bytearray(fh.read(sizes[1]))
    check.update(head_bytes)
    check.update(flags)
    bufs = []
    k = 2
    for arrays in _LANE_ARRAYS.values():  # one buffer per lane
        buf = bytearray(sum(sizes[k:k + len(arrays)]))
        if fh.readinto(buf) != len(buf):
            raise ValueError("snapshot is truncated")
        check.update(buf)
        bufs.append(buf)
        k += len(arrays)
    if check.digest() != digest:
        raise ValueError("snapshot checksum mismatch")
    return json.loads(head_bytes), flags, sizes, bufs


def _restore_lane(lane: Postings, name: str, meta: dict[str, Any], buf: bytearray, sizes: Sequence[int], *,
                  keys: int) -> None:
    """Set a lane's arrays to views of its snapshot buffer (``sizes``: of
    each of its arrays, in order), ``keys`` slots in all. Raises
    ``ValueError`` for anything inconsistent."""
    view, pos = memoryview(buf), 0
    got: dict[str, Any] = {}
    for attr, size in zip(_LANE_ARRAYS[name], sizes, strict=True):
        code = str(meta.get("tfs")) if attr == "base_tfs" else "I"
        if code not in ("B", "H", "I"):
            raise ValueError("snapshot lane is inconsistent")
        if size % array(code).itemsize:
            raise ValueError("snapshot lane is inconsistent")
        got[attr] = view[pos:pos + size].cast(code)  # type: ignore[call-overload]
        pos += size
    lengths = got.pop("lengths")
    lane.lengths = array("I")
    lane.lengths.frombytes(lengths.cast("B"))  # (changes with every put: an array of its own)
    starts = got.pop("starts")
    for attr, a in got.items():
        setattr(lane, attr, a)
    lane.base_index = Vocab(meta["terms"], starts)
    if (len(lane.base_offsets) != len(starts) or not starts or starts[0] != 0
            or starts[-1] != len(meta["terms"]) + 1 and len(starts) > 1):
        raise ValueError("snapshot lane is inconsistent")
    # (a term id past the vocabulary is skipped where vectors are read:
    # a pass over every id here cost ~1 s of a 100k warm open)
    if lane.vectors and (len(lane.vec_offsets) != keys + 1 or lane.vec_offsets[-1] != len(lane.vec_terms)):
        raise ValueError("snapshot term vectors are inconsistent")
    lane.total_len, lane.live = meta["total_len"], meta["live"]
