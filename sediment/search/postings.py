"""Postings of one lane of the index (words, or CJK bigrams) and BM25 over them.

Layout, chosen for 100k memories in a few hundred MB and a fast warm open:

* a read-only *base* (one array of slot numbers and one of term frequencies
  for all terms, grouped by term, with an offset per term) that a snapshot's
  restore leaves in the bytes it read (views, not copies), or that a cold
  open merges from parts in bulk (``bulk.py``), plus a *delta* (a pair of growing
  arrays per term) for what was indexed since; within a term, slots ascend
  (base first, then delta), so a slot is found by bisection;
* optionally the same data the other way round: per slot, its terms (as ids
  into the base vocabulary) and their frequencies, so pseudo-relevance
  feedback reads a document's words without tokenizing it again (term ids
  only: a frequency is found in the term's postings).

BM25's weights of a query's terms are the lane's (``weigh`` and ``norms``);
the scoring loop that sums them is above this module (``maxscore.bm25``, which
prunes: the top ``depth`` is the same as without pruning, score for score).
Plain data: it imports nothing of the package, so everything of the search
may stand on it.
"""

from __future__ import annotations

import bisect
import math
import operator
import sys
from array import array
from itertools import accumulate, repeat
from typing import Iterable, Iterator, Mapping, Sequence

# BM25 constants (Robertson's usual k1; b a little lower than 0.75 because
# memories are short and their length says little about relevance), and
# BM25+'s lower bound for a term that is present (Lv & Zhai 2011): a long
# memory that has the word is never scored as if it lacked it. δ was chosen
# from the table in benchmarks/README.md ("Ranking choices").
K1 = 1.2
B = 0.6
DELTA = 0.5
NO_SLOT = 0xFFFFFFFF
TF_MAX = 0xFFFF  # a weighted term frequency is kept in 2 bytes (a higher one counts as this)
_FOUND_MAX = 4096  # the terms a vocabulary remembers having looked up

# (slots, tfs, lo, hi): one run of a term's postings, slots ascending
Run = tuple["array[int]", "array[int]", int, int]  # (quoted: array is subscriptable at run time from 3.12)
# A long run's postings in the order of their BM25 parts at any BM25
# constants: by frequency, highest first, and within one frequency by
# document length, shortest first; each frequency's (tf, start, end) in that
# order. maxscore.by_impact reads a common term this way, best first, and
# stops where the next one is below the top.
Impact = tuple["array[int]", list[tuple[int, int, int]]]
IMPACT_FROM = 512  # a shorter run is walked whole


def narrow(tfs: array[int]) -> array[int]:
    """Term frequencies as bytes when every one fits (a weighted frequency
    over 255 is rare): half the memory of the base's frequencies. Done with
    byte slices, not a loop over millions of values."""
    raw = memoryview(tfs).cast("B")
    low, high = (raw[0::2], raw[1::2]) if sys.byteorder == "little" else (raw[1::2], raw[0::2])
    if tfs.typecode != "H" or high.tobytes().strip(b"\0"):
        return tfs
    out = array("B")
    out.frombytes(low.tobytes())
    return out


def widen(tfs: array[int] | memoryview) -> array[int] | memoryview:
    """Frequencies that an array of 2-byte ones can be extended with."""
    code = tfs.typecode if isinstance(tfs, array) else tfs.format
    return tfs if code == "H" else array("H", tfs)


def bm25_idf(n: int, df: int) -> float:
    """Okapi BM25's idf of a term in ``df`` of ``n`` documents (never negative)."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5))

class Vocab:
    """A sorted, read-only vocabulary: all terms in one string, joined by
    newlines, and where each starts. Looked up by bisection. A dict of a
    million short strings costs ~150 bytes a term; this costs ~6 plus the
    characters, which is what lets 100k memories fit in a few hundred MB.
    Terms all of one length (the bigram lane's: two characters each) are
    kept without newlines or starts (``width``): 10 MB less of 1.6M
    bigrams at 100k. The terms looked up last are remembered (a search
    looks each of its terms up several times, and a bisection here is ~20
    calls of Python)."""

    __slots__ = ("blob", "starts", "width", "_found")

    def __init__(self, blob: str = "", starts: array[int] | None = None, width: int = 0) -> None:
        self.blob = blob
        self.width = width  # (0: terms of any length, found by ``starts``)
        self.starts = starts if starts is not None or width else array("I", [0])  # n + 1 entries
        self._found: dict[str, int | None] = {}

    @classmethod
    def from_sorted(cls, terms: list[str]) -> "Vocab":
        lengths = set(map(len, terms))
        if len(lengths) == 1 and (width := lengths.pop()):
            return cls("".join(terms), width=width)
        starts = array("I", [0])  # (summed in C: no Python step per term, 1.6M terms at 100k)
        starts.extend(accumulate(map(operator.add, map(len, terms), repeat(1))))
        return cls("\n".join(terms), starts)

    def __len__(self) -> int:
        w = self.width
        return len(self.blob) // w if w else len(self.starts) - 1  # type: ignore[arg-type]

    def __getitem__(self, i: int) -> str:
        w = self.width
        if w:
            return self.blob[i * w:(i + 1) * w]
        return self.blob[self.starts[i]:self.starts[i + 1] - 1]  # type: ignore[index]

    def __iter__(self) -> Iterator[str]:
        return (self[i] for i in range(len(self)))

    def terms(self) -> list[str]:
        """Every term, in order."""
        w, blob = self.width, self.blob
        if w:
            return [blob[i:i + w] for i in range(0, len(blob), w)]
        return blob.split("\n") if len(self) else []

    def packed(self) -> tuple[bytes, bytes | memoryview]:
        """The text and the starts a snapshot keeps (``Vocab(text, starts, width)``
        again; no starts for terms of one length)."""
        starts = self.starts
        return self.blob.encode("utf-8"), b"" if starts is None else memoryview(starts).cast("B")

    def find(self, t: str) -> int | None:
        found = self._found
        got = found.get(t, -1)
        if got != -1:
            return got
        i: int | None = bisect.bisect_left(self, t)
        if i == len(self) or self[i] != t:  # type: ignore[index]
            i = None
        if len(found) >= _FOUND_MAX:  # (read-only: what is remembered stays true; only its size is bounded)
            found.clear()
        found[t] = i
        return i


class Postings:
    __slots__ = ("base_index", "base_offsets", "base_slots", "base_tfs", "delta", "lengths",
                 "total_len", "live", "dead_df", "vectors", "vec_offsets", "vec_terms",
                 "vec_delta", "_impact")

    def __init__(self, vectors: bool = False) -> None:
        self.base_index = Vocab()
        self.base_offsets = array("I", [0])
        self.base_slots = array("I")
        self.base_tfs = array("H")  # ("B" once folded, when every frequency fits: ``narrow``)
        self.delta: dict[str, tuple[array[int], array[int]]] = {}
        self.lengths = array("I")
        self.total_len = 0
        self.live = 0
        # per term, how many of its postings belong to dead slots: document
        # frequency must count live documents only, or a note updated a few
        # times would rank differently than after a fresh open
        self.dead_df: dict[str, int] = {}
        # term vectors: slots below len(vec_offsets) - 1 in the arrays (ids into
        # base_index), later ones as a tuple of their terms, until the next
        # rebuild folds them in
        self.vectors = vectors
        self.vec_offsets = array("I", [0])
        self.vec_terms = array("I")
        self.vec_delta: dict[int, tuple[str, ...]] = {}
        # the runs put in impact order so far (``impact``), with the base they are of
        self._impact: tuple[object, dict[int, Impact]] = (None, {})

    def __len__(self) -> int:
        return len(self.base_index) + sum(1 for t in self.delta if self.base_index.find(t) is None)

    def add(self, slot: int, terms: dict[str, int]) -> None:
        delta = self.delta
        for t, tf in terms.items():
            p = delta.get(t)
            if p is None:
                p = delta[t] = (array("I"), array("H"))
            p[0].append(slot)
            p[1].append(min(tf, TF_MAX))
        self.count(slot, sum(terms.values()))
        if self.vectors:  # the terms only (frequencies are in the postings): a tuple is a
            self.vec_delta[slot] = tuple(terms)  # fifth of a dict, and a cold open holds 100k

    def count(self, slot: int, length: int) -> None:
        """A document's length, in the BM25 statistics (its postings are
        added apart: ``add``, or in bulk)."""
        if len(self.lengths) <= slot:
            self.lengths.extend([0] * (slot + 1 - len(self.lengths)))
        self.lengths[slot] = length
        self.total_len += length
        self.live += 1

    def remove(self, slot: int, terms: Iterable[str] | None) -> None:
        """Mark a slot's postings dead. Without ``terms``, a lane with term
        vectors knows them itself."""
        self.total_len -= self.lengths[slot]
        self.live -= 1
        if terms is None:
            terms = [t for t, _ in self.vector(slot)] if self.vectors else ()
        dd = self.dead_df
        for t in terms:
            dd[t] = dd.get(t, 0) + 1

    def vector(self, slot: int) -> list[tuple[str, int]]:
        """(term, weighted frequency) of one document (a lane with vectors)."""
        return [(t, tf) for t, tf, _ in self.vector_df(slot)]

    def vector_df(self, slot: int, min_df: int = 0, max_df: float | None = None) -> list[tuple[str, int, int]]:
        """(term, weighted frequency, live document frequency) of one document
        (a lane with vectors): the feedback lane's reading. A vector in the base
        holds term ids only; the frequency is found in the term's postings (by
        bisection: the vectors cost 4 bytes a term, not 6). Terms in fewer
        than ``min_df`` documents, or more than ``max_df``, are left out
        (before the bisection: most of a memory's words are common ones)."""
        top = max_df if max_df is not None else float("inf")
        d = self.vec_delta.get(slot)
        if d is not None:
            out = []
            for t in d:
                ps, pt = self.delta[t]
                k = bisect.bisect_left(ps, slot)
                if k < len(ps) and ps[k] == slot and min_df <= (df := self.df(t)) <= top:
                    out.append((t, pt[k], df))
            return out
        if slot + 1 >= len(self.vec_offsets):
            return []
        a, b = self.vec_offsets[slot], self.vec_offsets[slot + 1]
        offs, slots, tfs = self.base_offsets, self.base_slots, self.base_tfs
        vocab = self.base_index
        blob, starts = vocab.blob, vocab.starts
        delta, dead = self.delta, self.dead_df
        find = bisect.bisect_left
        out = []
        n_terms = len(offs) - 1
        for i in self.vec_terms[a:b]:
            if i >= n_terms:
                continue  # (not in a consistent index: checked here, not by a pass over every id at open)
            lo, hi = offs[i], offs[i + 1]
            df = hi - lo
            name: str | None = None  # (made only when needed)
            if delta or dead:  # (the delta may hold more of the term, and some may be dead)
                name = vocab[i]
                extra = delta.get(name)
                df += (len(extra[0]) if extra else 0) - dead.get(name, 0)
            if df < min_df or df > top:
                continue
            k = find(slots, slot, lo, hi)
            if k == hi or slots[k] != slot:
                continue  # (not in a consistent index)
            if name is None:  # (Vocab.__getitem__, inlined)
                name = blob[starts[i]:starts[i + 1] - 1] if starts is not None else vocab[i]
            out.append((name, tfs[k], df))
        return out

    def matched(self, slots: Sequence[int], terms: Iterable[str]) -> dict[int, list[str]]:
        """Which of ``terms`` each of the slots has."""
        out: dict[int, list[str]] = {s: [] for s in slots}
        find = bisect.bisect_left
        for t in terms:
            runs = self.runs(t)
            for s in slots if runs else ():
                for ps, tfs, lo, hi in runs:  # (``tf``, inlined: a search asks this of each hit and term)
                    i = find(ps, s, lo, hi)
                    if i < hi and ps[i] == s:
                        if tfs[i]:
                            out[s].append(t)
                        break
        return out

    def runs(self, t: str) -> list[Run]:
        out: list[Run] = []
        i = self.base_index.find(t)
        if i is not None:
            out.append((self.base_slots, self.base_tfs, self.base_offsets[i], self.base_offsets[i + 1]))
        d = self.delta.get(t)
        if d is not None:
            out.append((d[0], d[1], 0, len(d[0])))
        return out

    def postings(self, t: str) -> list[tuple[Sequence[int], Sequence[int]]]:
        return [(s[lo:hi], f[lo:hi]) for s, f, lo, hi in self.runs(t)]

    def df(self, t: str) -> int:
        return sum(hi - lo for _, _, lo, hi in self.runs(t)) - self.dead_df.get(t, 0)

    def impact(self, run: Run) -> Impact | None:
        """A long run of the base in impact order (``Impact``): made once a
        term and kept until the base is replaced (a slot's length never
        changes: a changed document gets a new slot). None for a run of the
        delta or a short one."""
        slots, tfs, lo, hi = run
        if slots is not self.base_slots or hi - lo < IMPACT_FROM:
            return None
        made_for, made = self._impact
        if made_for is not slots:
            made = {}
            self._impact = (slots, made)
        got = made.get(lo)
        if got is None:
            length = self.lengths
            pairs = sorted(zip(tfs[lo:hi], slots[lo:hi]), key=lambda p: (-p[0], length[p[1]], p[1]))
            order = array("I", [s for _, s in pairs])
            groups: list[tuple[int, int, int]] = []
            for k, (tf, _) in enumerate(pairs):
                if not groups or groups[-1][0] != tf:
                    groups.append((tf, k, k))
                groups[-1] = (tf, groups[-1][1], k + 1)
            got = made[lo] = (order, groups)
        return got

    def tf(self, slot: int, runs: list[Run]) -> int:
        """The slot's frequency of the term whose ``runs`` these are (0: none)."""
        for slots, tfs, lo, hi in runs:
            i = bisect.bisect_left(slots, slot, lo, hi)
            if i < hi and slots[i] == slot:
                return tfs[i]
        return 0

    def norms(self) -> tuple[float, float, float, float]:
        """BM25's constants over this lane's lengths as they are now, as
        ``maxscore`` takes them: (k1 (1 - b), k1 b / average length, k1 + 1, δ)."""
        n = max(self.live, 1)
        avg = self.total_len / n if self.total_len else 1.0
        return (K1 * (1 - B), K1 * B / avg, K1 + 1, DELTA)

    def weigh(self, qterms: Mapping[str, float]) -> list[tuple[float, float, str, list[Run]]]:
        """The query terms this lane has, as (query weight × idf, idf, term,
        runs), the idf over live documents: what ``maxscore`` sums."""
        n = max(self.live, 1)
        dead = self.dead_df
        terms = []
        for t, qw in qterms.items():
            runs = self.runs(t)
            if runs:
                idf = bm25_idf(n, sum(hi - lo for _, _, lo, hi in runs) - dead.get(t, 0))
                terms.append((idf * qw, idf, t, runs))
        return terms

    def rebuild(self, remap: array[int] | None) -> None:
        """Fold the delta into a new base. With ``remap`` (old slot → new slot,
        or NO_SLOT for dead) the dead slots are dropped as well."""
        old_vocab = self.base_index
        self.base_tfs = widen(self.base_tfs)  # type: ignore[assignment]  # (the new base's are extended from it)
        terms = sorted(set(old_vocab) | set(self.delta)) if self.delta else list(old_vocab)
        offsets = array("I", [0])
        slots = array("I")
        tfs = array("H")
        for t in terms:
            for ps, pt, lo, hi in self.runs(t):
                if remap is None:
                    slots.extend(ps[lo:hi])
                    tfs.extend(pt[lo:hi])
                else:
                    for s, tf in zip(ps[lo:hi], pt[lo:hi]):
                        ns = remap[s]
                        if ns != NO_SLOT:
                            slots.append(ns)
                            tfs.append(tf)
            offsets.append(len(slots))
        if self.vectors:
            self._rebuild_vectors(old_vocab, terms, remap)
        if remap is not None:
            keep = [i for i in range(len(terms)) if offsets[i + 1] > offsets[i]]
            if len(keep) != len(terms):
                if self.vectors:  # term ids shift down past each term dropped
                    new_id = renumber(keep, len(terms))
                    self.vec_offsets, self.vec_terms = map_ids(self.vec_offsets, self.vec_terms, new_id)
                terms = [terms[i] for i in keep]
                new_off = array("I", [0])
                for i in keep:
                    new_off.append(new_off[-1] + offsets[i + 1] - offsets[i])
                offsets = new_off
            lengths = array("I", [0]) * (max((x for x in remap if x != NO_SLOT), default=-1) + 1)
            for old, new in enumerate(remap):
                if new != NO_SLOT and old < len(self.lengths):
                    lengths[new] = self.lengths[old]
            self.lengths = lengths
        self.base_index = Vocab.from_sorted(terms)
        self.base_offsets, self.base_slots, self.base_tfs = offsets, slots, narrow(tfs)
        self._impact = (None, {})  # (of the old base: let it go)
        self.delta = {}
        if remap is not None:
            self.dead_df = {}

    def _rebuild_vectors(self, old_vocab: Vocab, terms: list[str], remap: array[int] | None) -> None:
        """Term vectors in the ids of the new vocabulary ``terms`` (sorted, a
        superset of the old one), the delta's documents folded in; with
        ``remap``, dead slots dropped and the rest renumbered."""
        offs, vt = self.vec_offsets, in_memory(self.vec_terms)
        if len(terms) != len(old_vocab):  # new terms shift the old ids up
            new_of_old: list[int] = []
            pending = self.delta  # (a dict: membership without a copy of its keys)
            ids: dict[str, int] = {}
            j, n_old = 0, len(old_vocab)
            nxt = old_vocab[0] if n_old else None
            for k, t in enumerate(terms):
                if t == nxt:
                    new_of_old.append(k)
                    j += 1
                    nxt = old_vocab[j] if j < n_old else None
                if t in pending:
                    ids[t] = k
            offs, vt = map_ids(offs, vt, new_of_old)
        else:
            ids = {t: i for t in self.delta if (i := old_vocab.find(t)) is not None}
        n_base = len(offs) - 1
        slots = sorted(self.vec_delta)
        if remap is None:
            order: Iterable[int] = range(max([n_base - 1, *slots]) + 1) if slots or n_base else ()
        else:
            order = (s for s in range(len(remap)) if remap[s] != NO_SLOT)
        new_offs, new_terms = array("I", [0]), array("I")
        for s in order:
            d = self.vec_delta.get(s)
            if d is not None:
                new_terms.extend(sorted(ids[t] for t in d))
            elif s < n_base:
                new_terms.extend(vt[offs[s]:offs[s + 1]])
            new_offs.append(len(new_terms))
        self.vec_offsets, self.vec_terms = new_offs, new_terms
        self.vec_delta = {}


def in_memory(ids: Sequence[int]) -> Sequence[int]:
    """Term vector ids as an array or a view of one: those a snapshot left in
    its file (``stored.Stored``) read whole, for a pass that rewrites them all."""
    return ids if isinstance(ids, (array, memoryview)) else array("I", ids)


def renumber(kept: Iterable[int], n: int) -> array[int]:
    """Old number → new, for ``n`` numbers (slots, or term ids) of which the
    ``kept`` ones (ascending) are numbered again from 0 in their order, and
    the rest map to NO_SLOT."""
    new = array("I", [NO_SLOT]) * n
    for k, old in enumerate(kept):
        new[old] = k
    return new


def map_ids(offsets: array[int], ids: Sequence[int], new_of_old: Sequence[int]) -> tuple[array[int], array[int]]:
    """Term vectors (``offsets`` per slot into ``ids``) with each id ``i``
    replaced by ``new_of_old[i]``: a rebuild's, a fold's or a bulk merge's
    new vocabulary. An id past the old vocabulary (a snapshot writer's bug:
    the checksum passes, and reads skip it) is dropped, by a pass in Python
    made only when the map in C fails."""
    try:
        return offsets, array("I", map(new_of_old.__getitem__, ids))
    except IndexError:
        n = len(new_of_old)
        out_offsets, out_ids = array("I", [0]), array("I")
        for a, b in zip(offsets, offsets[1:]):
            out_ids.extend(new_of_old[i] for i in ids[a:b] if i < n)
            out_offsets.append(len(out_ids))
        return out_offsets, out_ids
