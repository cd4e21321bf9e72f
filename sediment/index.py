"""The in-memory search index. Three rankings fused by reciprocal rank
(1/(60 + rank)): BM25 over words, the rare-term ranking over the same words
(sum of the IDFs of the query words a document has: dsh-chain's "rare-term
lane", which rewards covering the query over repeating one of its words), and
BM25 over CJK character bigrams. Pure: no I/O; ``snapshot``/``restore`` turn it into
bytes and back, and the repository decides where those live.

Layout, chosen for 100k memories in a few hundred MB and a fast warm open:

* each lane keeps a read-only *base* (one array of slot numbers and one of term
  frequencies for all terms, grouped by term, with an offset per term) that is
  restored from a snapshot in a few array copies, plus a *delta* (a pair of
  growing arrays per term) for what was indexed since;
* a changed document gets a new slot; its old slot is marked dead and skipped.
  Dead slots are dropped when they pass a quarter of all slots (amortised O(1)
  per change) and whenever the base is rebuilt.
"""

from __future__ import annotations

import bisect
import hashlib
import heapq
import json
import math
import struct
import sys
from array import array
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from .rank import Lane, Mask, Ranking, best, keep_direct, rrf

# BM25 constants (Robertson's usual k1; b a little lower than 0.75 because
# memories are short and their length says little about relevance), and
# BM25+'s lower bound for a term that is present (Lv & Zhai 2011, their
# recommended delta = 1): a long memory that has the word is never scored as
# if it lacked it.
K1 = 1.2
B = 0.6
DELTA = 1.0
# Field weights, applied as repeated term frequency (a poor man's BM25F): a
# word in the title or a tag says more about what a memory is than one in the body.
TITLE_WEIGHT = 3
TAG_WEIGHT = 3
# candidates ranked per lane before fusion: below rank 100 a lane adds less
# than 1/160 to a fused score, never enough to matter for the first results
LANE_DEPTH = 100
SNAPSHOT_FORMAT = 6  # 6: superseded flag bit; links no longer indexed as text
_MAGIC = b"SEDIDX\n"
ALIVE = 0x80
_MASKS: dict[int, bytes] = {}


@dataclass(frozen=True, slots=True)
class DocTerms:
    """Weighted term counts of one document, per lane."""
    words: dict[str, int]
    bigrams: dict[str, int]

    @staticmethod
    def build(fields: Iterable[tuple[Sequence[str], Sequence[str], int]]) -> "DocTerms":
        words: dict[str, int] = {}
        bigrams: dict[str, int] = {}
        for ws, bs, weight in fields:
            for w in ws:
                words[w] = words.get(w, 0) + weight
            for b in bs:
                bigrams[b] = bigrams.get(b, 0) + weight
        return DocTerms(words, bigrams)


class _Vocab:
    """A sorted, read-only vocabulary: all terms in one string, joined by
    newlines, and where each starts. Looked up by bisection. A dict of a
    million short strings costs ~150 bytes a term; this costs ~6 plus the
    characters, which is what lets 100k memories fit in a few hundred MB."""

    __slots__ = ("blob", "starts")

    def __init__(self, blob: str = "", starts: array | None = None) -> None:
        self.blob = blob
        self.starts = starts if starts is not None else array("I", [0])  # n + 1 entries

    @classmethod
    def from_sorted(cls, terms: list[str]) -> "_Vocab":
        starts = array("I", [0])
        pos = 0
        for t in terms:
            pos += len(t) + 1
            starts.append(pos)
        return cls("\n".join(terms), starts)

    def __len__(self) -> int:
        return len(self.starts) - 1

    def __getitem__(self, i: int) -> str:
        return self.blob[self.starts[i]:self.starts[i + 1] - 1]

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def find(self, t: str) -> int | None:
        i = bisect.bisect_left(self, t)
        return i if i < len(self) and self[i] == t else None


class _Lane:
    __slots__ = ("base_index", "base_offsets", "base_slots", "base_tfs", "delta", "lengths",
                 "total_len", "live", "dead_df")

    def __init__(self) -> None:
        self.base_index = _Vocab()
        self.base_offsets = array("I", [0])
        self.base_slots = array("I")
        self.base_tfs = array("H")
        self.delta: dict[str, tuple[array, array]] = {}
        self.lengths = array("I")
        self.total_len = 0
        self.live = 0
        # per term, how many of its postings belong to dead slots: document
        # frequency must count live documents only, or a note updated a few
        # times would rank differently than after a fresh open
        self.dead_df: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self.base_index) + sum(1 for t in self.delta if self.base_index.find(t) is None)

    def add(self, slot: int, terms: dict[str, int]) -> None:
        delta = self.delta
        for t, tf in terms.items():
            p = delta.get(t)
            if p is None:
                p = delta[t] = (array("I"), array("H"))
            p[0].append(slot)
            p[1].append(tf if tf < 65535 else 65535)
        length = sum(terms.values())
        if len(self.lengths) <= slot:
            self.lengths.extend([0] * (slot + 1 - len(self.lengths)))
        self.lengths[slot] = length
        self.total_len += length
        self.live += 1

    def remove(self, slot: int, terms: Iterable[str]) -> None:
        self.total_len -= self.lengths[slot]
        self.live -= 1
        dd = self.dead_df
        for t in terms:
            dd[t] = dd.get(t, 0) + 1

    def postings(self, t: str) -> list[tuple[Sequence[int], Sequence[int]]]:
        out: list[tuple[Sequence[int], Sequence[int]]] = []
        i = self.base_index.find(t)
        if i is not None:
            a, b = self.base_offsets[i], self.base_offsets[i + 1]
            out.append((self.base_slots[a:b], self.base_tfs[a:b]))
        d = self.delta.get(t)
        if d is not None:
            out.append(d)
        return out

    def df(self, t: str) -> int:
        return sum(len(p[0]) for p in self.postings(t)) - self.dead_df.get(t, 0)

    def idf(self, t: str) -> float:
        df = self.df(t)
        return math.log(1 + (max(self.live, 1) - df + 0.5) / (df + 0.5)) if df > 0 else 0.0

    def score(self, qterms: Mapping[str, float], mask: Mask, allowed: Callable[[int], bool] | None,
              depth: int, rare: bool = False
              ) -> tuple[list[tuple[float, int]], dict[int, list[str]], list[tuple[float, int]]]:
        """BM25 over the slots whose ``mask`` byte is set: the top ``depth``
        (score, slot) and, for those, which query terms they contain. With
        ``rare``, in the same pass, the rare-term ranking too: the sum of the
        IDFs of the query terms a document has, blind to how often and how long
        (it rewards covering more, and rarer, words of the query)."""
        n = max(self.live, 1)
        avg = self.total_len / n if self.total_len else 1.0
        lengths = self.lengths
        norm_a, norm_b, k1p = K1 * (1 - B), K1 * B / avg, K1 + 1
        acc: dict[int, float] = {}
        cover: dict[int, float] = {}
        hits: dict[int, list[str]] = {}
        acc_get, cover_get = acc.get, cover.get
        for t, qw in qterms.items():
            plist = self.postings(t)
            if not plist:
                continue
            df = sum(len(p[0]) for p in plist) - self.dead_df.get(t, 0)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            w = idf * qw
            for slots, tfs in plist:
                for s, tf in zip(slots, tfs):
                    if mask[s]:
                        acc[s] = acc_get(s, 0.0) + w * (k1p * tf / (tf + norm_a + norm_b * lengths[s]) + DELTA)
                        if rare:
                            cover[s] = cover_get(s, 0.0) + idf
                        h = hits.get(s)
                        if h is None:
                            hits[s] = [t]
                        else:
                            h.append(t)
        if allowed is not None:
            keep = [s for s in acc if allowed(s)]
        else:
            keep = list(acc)
        top = heapq.nlargest(depth, ((acc[s], s) for s in keep))
        top_rare = heapq.nlargest(depth, ((cover[s], s) for s in keep)) if rare else []
        shown = {s for _, s in top} | {s for _, s in top_rare}
        return top, {s: hits[s] for s in shown}, top_rare

    def rebuild(self, remap: array | None) -> None:
        """Fold the delta into a new base. With ``remap`` (old slot → new slot,
        or 0xFFFFFFFF for dead) the dead slots are dropped as well."""
        terms = sorted(set(self.base_index) | set(self.delta)) if self.delta else list(self.base_index)
        offsets = array("I", [0])
        slots = array("I")
        tfs = array("H")
        dead = 0xFFFFFFFF
        for t in terms:
            for ps, pt in self.postings(t):
                if remap is None:
                    slots.extend(ps)
                    tfs.extend(pt)
                else:
                    for s, tf in zip(ps, pt):
                        ns = remap[s]
                        if ns != dead:
                            slots.append(ns)
                            tfs.append(tf)
            offsets.append(len(slots))
        if remap is not None:
            keep = [i for i in range(len(terms)) if offsets[i + 1] > offsets[i]]
            if len(keep) != len(terms):
                terms = [terms[i] for i in keep]
                new_off = array("I", [0])
                for i in keep:
                    new_off.append(new_off[-1] + offsets[i + 1] - offsets[i])
                offsets = new_off
            lengths = array("I", [0]) * (max((x for x in remap if x != dead), default=-1) + 1)
            for old, new in enumerate(remap):
                if new != dead and old < len(self.lengths):
                    lengths[new] = self.lengths[old]
            self.lengths = lengths
        self.base_index = _Vocab.from_sorted(terms)
        self.base_offsets, self.base_slots, self.base_tfs = offsets, slots, tfs
        self.delta = {}
        if remap is not None:
            self.dead_df = {}


@dataclass
class Hit:
    key: str
    score: float
    terms: tuple[str, ...]
    lanes: dict[str, int] = field(default_factory=dict)  # lane → rank (1-based)


class Index:
    """Maps keys (memory ids) to slots and ranks them for a query."""

    def __init__(self) -> None:
        self.words = _Lane()
        self.bigrams = _Lane()
        self.slot_of: dict[str, int] = {}
        self.key_of: list[str | None] = []
        # per slot: ALIVE plus the owner's flag bits (which searches skip it)
        self.flags = bytearray()
        self._dead = 0
        self.exact = True  # document frequencies count live documents only

    def __len__(self) -> int:
        return len(self.slot_of)

    def __contains__(self, key: str) -> bool:
        return key in self.slot_of

    @property
    def dead(self) -> int:
        return self._dead

    def put(self, key: str, terms: DocTerms, flags: int = 0) -> int:
        """Index a document (the key must not be indexed already). ``flags``
        (bits 0–6) let a search skip groups of documents cheaply (see
        ``search(exclude=...)``)."""
        if key in self.slot_of:
            self.remove(key, None)
        slot = len(self.key_of)
        self.key_of.append(key)
        self.flags.append(ALIVE | (flags & 0x7F))
        self.slot_of[key] = slot
        self.words.add(slot, terms.words)
        self.bigrams.add(slot, terms.bigrams)
        return slot

    def remove(self, key: str, terms: DocTerms | None) -> None:
        """Drop a document. ``terms`` should be what it was indexed with (the
        owner re-derives them: keeping every document's terms would double
        memory); without them document frequencies are off until ``compact``."""
        slot = self.slot_of.pop(key, None)
        if slot is None:
            return
        self.flags[slot] = 0
        self.key_of[slot] = None
        self.words.remove(slot, terms.words if terms else ())
        self.bigrams.remove(slot, terms.bigrams if terms else ())
        if terms is None:
            self.exact = False
        self._dead += 1
        if self._dead > 1000 and self._dead * 4 > len(self.key_of):
            self.compact()

    def set_flags(self, key: str, flags: int) -> None:
        """Change a document's flag bits in place (a move between layers changes
        where it is, not what it says: its terms stay)."""
        slot = self.slot_of[key]
        self.flags[slot] = ALIVE | (flags & 0x7F)

    def compact(self) -> None:
        """Drop dead slots and fold the deltas into the base."""
        dead = 0xFFFFFFFF
        remap = array("I", [dead]) * len(self.key_of)
        keys: list[str | None] = []
        for s, k in enumerate(self.key_of):
            if k is not None and self.flags[s] & ALIVE:
                remap[s] = len(keys)
                keys.append(k)
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
        self.words.rebuild(None)
        self.bigrams.rebuild(None)

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
            self.words.rebuild(None)
            self.bigrams.rebuild(None)
        header: dict[str, Any] = {
            "format": SNAPSHOT_FORMAT, "byteorder": sys.byteorder, "fingerprint": fingerprint,
            "docs": [docs[k] for k in self.key_of],  # type: ignore[index]
            "keys": self.key_of,
        }
        blobs: list[bytes] = [bytes(self.flags)]
        for name, lane in (("words", self.words), ("bigrams", self.bigrams)):
            header[name] = {"terms": lane.base_index.blob, "total_len": lane.total_len, "live": lane.live}
            for arr in (lane.base_index.starts, lane.base_offsets, lane.base_slots, lane.base_tfs,
                        lane.lengths):
                blobs.append(arr.tobytes())
        head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        del header
        sizes = [len(head)] + [len(b) for b in blobs]
        chunks = [struct.pack(f"<{len(sizes)}Q", *sizes), head, *blobs]
        digest = hashlib.sha256()
        for c in chunks:
            digest.update(c)
        return [_MAGIC, digest.digest(), *chunks]

    @classmethod
    def restore(cls, data: bytes, fingerprint: str = "") -> tuple["Index", list[Any]]:
        """The index and the per-key docs from ``snapshot`` bytes. Raises
        ``ValueError`` for anything damaged or from another format."""
        if not data.startswith(_MAGIC):
            raise ValueError("not a sediment index snapshot")
        view = memoryview(data)  # slices of a view copy nothing: the snapshot may be 100s of MB
        digest, body = view[len(_MAGIC):len(_MAGIC) + 32], view[len(_MAGIC) + 32:]
        if hashlib.sha256(body).digest() != digest:
            raise ValueError("snapshot checksum mismatch")
        n = 12
        sizes = struct.unpack_from(f"<{n}Q", body)
        pos = 8 * n
        head = json.loads(bytes(body[pos:pos + sizes[0]]))
        pos += sizes[0]
        if head.get("format") != SNAPSHOT_FORMAT or head.get("byteorder") != sys.byteorder:
            raise ValueError("snapshot of another format")
        if head.get("fingerprint") != fingerprint:
            raise ValueError("snapshot made by another version of the tokenizer or parser")
        idx = cls()
        keys = head["keys"]
        idx.flags = bytearray(body[pos:pos + sizes[1]])
        pos += sizes[1]
        if len(idx.flags) != len(keys):
            raise ValueError("snapshot flags are inconsistent")
        for name, lane in (("words", idx.words), ("bigrams", idx.bigrams)):
            meta = head[name]
            arrays = []
            for typecode, size in zip("IIIHI", sizes[2 + 5 * (name == "bigrams"):]):
                a = array(typecode)
                a.frombytes(body[pos:pos + size])
                pos += size
                arrays.append(a)
            starts, lane.base_offsets, lane.base_slots, lane.base_tfs, lane.lengths = arrays
            lane.base_index = _Vocab(meta["terms"], starts)
            if (len(lane.base_offsets) != len(starts) or not starts or starts[0] != 0
                    or starts[-1] != len(meta["terms"]) + 1 and len(starts) > 1):
                raise ValueError("snapshot lane is inconsistent")
            lane.total_len, lane.live = meta["total_len"], meta["live"]
        idx.key_of = list(keys)
        idx.slot_of = {k: i for i, k in enumerate(keys)}
        return idx, head["docs"]

    # -------------------------------------------------------------- search

    def search(self, words: Mapping[str, float], bigrams: Mapping[str, float], *,
               exclude: int = 0, allowed: Callable[[str], bool] | None = None,
               tiebreak: Callable[[str], tuple[float, ...]] | None = None,
               limit: int = 10, lanes: Sequence[Lane] = ()) -> list[Hit]:
        """Fuse the lanes by reciprocal rank. A key with no term of the query in
        either lexical lane is never returned by them. Documents with any of the
        ``exclude`` flag bits are skipped (in C, via a translated mask);
        ``allowed`` filters the rest by key; ``tiebreak`` orders equal fused
        scores (higher first), then the key keeps the order stable. ``lanes``
        are further rankings fused the same way."""
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
        matched_in: list[dict[int, list[str]]] = []
        if words:
            top, hits, top_rare = self.words.score(words, mask, allow_slot, depth, rare=True)
            rankings += [("words", top), ("rare", top_rare)]
            matched_in.append(hits)
        if bigrams:
            top, hits, _ = self.bigrams.score(bigrams, mask, allow_slot, depth)
            rankings.append(("bigrams", top))
            matched_in.append(hits)
        direct = [name for name, _ in rankings]
        rankings += [(lane.name, lane.rank(mask, allow_slot, depth)) for lane in lanes]
        weights: dict[str, float] = {}
        for lane in lanes:  # a lane weighs itself, and may reweigh the lexical lanes (dense.py)
            weights[lane.name] = getattr(lane, "weight", 1.0)
            weights.update(getattr(lane, "reweigh", {}))
        fused, ranks = rrf(rankings, weights)
        top_slots = keep_direct(best(fused, self.key_of, tiebreak, limit), fused, ranks, direct, limit)
        out = []
        for s in top_slots:  # matched terms only for what is returned
            matched: set[str] = set()
            for hits in matched_in:
                matched.update(hits.get(s, ()))
            out.append(Hit(self.key_of[s], fused[s], tuple(sorted(matched)), ranks[s]))  # type: ignore[arg-type]
        return out

    # -------------------------------------------------------------- reading

    def _lane(self, lane: str) -> _Lane:
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
