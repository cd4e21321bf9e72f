"""A bulk build of a lane's postings: documents are turned into compact
*parts* (a run of documents' postings, grouped by term, as arrays), anywhere
(a cold open's worker processes make them), and the parts are merged into the
lane's base in one pass per lane: a counting sort by term, one slice copy per
term and part, instead of an append per posting into a delta of a million
small arrays and a fold of that delta into the base afterwards.

The merged base is exactly what ``Postings.add`` of each document in slot
order followed by ``Postings.rebuild(None)`` gives: the same sorted
vocabulary, the same postings in slot order, the same term vectors.
"""

from __future__ import annotations

import operator
from array import array
from itertools import accumulate, chain, repeat
from typing import Mapping, Sequence

from .postings import NO_SLOT, TF_MAX, Postings, Vocab, in_memory, map_ids, narrow, renumber


class Part:
    """One lane's postings of documents numbered 0..n-1 within the part.
    Picklable as a few byte strings (a worker sends it back whole)."""

    __slots__ = ("terms", "offsets", "docs", "tfs", "lengths", "vec_offsets", "vec_terms", "first")

    def __init__(self, terms: str, offsets: array[int], docs: array[int], tfs: array[int], lengths: array[int], *,
                 vec_offsets: array[int] | None, vec_terms: array[int] | None, first: int = 0) -> None:
        self.terms = terms  # sorted, joined by newlines (one string: a list of them costs 10×)
        self.offsets = offsets  # per term, where its postings start in docs/tfs (n_terms + 1)
        # the documents, numbered from ``first`` (the slot the first is expected
        # to get: then a merge need not renumber them), ascending within a term
        self.docs = docs
        self.first = first
        self.tfs = tfs
        self.lengths = lengths  # per document, its weighted length
        self.vec_offsets = vec_offsets  # term vectors (ids into this part's terms), or None
        self.vec_terms = vec_terms

    def term_list(self) -> list[str]:
        return self.terms.split("\n") if len(self.offsets) > 1 else []

    @classmethod
    def build(cls, docs: Sequence[Mapping[str, int] | None], vectors: bool = False, first: int = 0) -> "Part":
        """The part of these documents' weighted term counts (None: a document
        with no postings here), numbered from ``first``."""
        # every step a loop in C (a sort, maps over arrays): a dict of lists
        # appended per posting cost as much as tokenizing
        maps = [d or {} for d in docs]
        lengths = array("I", map(sum, map(dict.values, maps)))  # type: ignore[arg-type]
        names = list(chain.from_iterable(maps))  # every posting's term, document by document
        order = sorted(range(len(names)), key=names.__getitem__)  # by term, then document (a stable sort)
        counts = list(map(len, maps))
        owner = array("I", chain.from_iterable(map(repeat, range(first, first + len(maps)), counts)))
        slots = array("I", map(owner.__getitem__, order))
        del owner
        freqs = array("I", chain.from_iterable(map(dict.values, maps)))  # type: ignore[arg-type]
        tfs = array("H", map(min, map(freqs.__getitem__, order), repeat(TF_MAX)))
        del freqs
        sorted_names = list(map(names.__getitem__, order))
        del names
        ends = dict(zip(sorted_names, range(1, len(sorted_names) + 1)))  # term → where its postings end
        terms = list(ends)
        offsets = array("I", [0])
        offsets.extend(ends.values())
        del ends, sorted_names
        vec_offsets = vec_terms = None
        if vectors:
            # each posting's term id, in the order above; sorted by document
            # (stably), each document's ids come out ascending
            ids = array("I", chain.from_iterable(map(repeat, range(len(terms)), map(operator.sub, offsets[1:],
                                                                                     offsets[:-1]))))
            by_doc = sorted(range(len(slots)), key=slots.__getitem__)
            vec_terms = array("I", map(ids.__getitem__, by_doc))
            vec_offsets = array("I", [0])
            vec_offsets.extend(accumulate(counts))
        return cls("\n".join(terms), offsets, slots, tfs, lengths, vec_offsets=vec_offsets, vec_terms=vec_terms,
                   first=first)

    def keep(self, slots: array[int]) -> "Part":
        """The part without the documents ``slots`` maps to NO_SLOT (read
        but never indexed: a duplicate left out), numbered as before."""
        terms = self.term_list()
        offsets, docs, tfs = array("I", [0]), array("I"), array("H")
        kept: list[int] = []  # the terms some document kept still has
        for j in range(len(terms)):
            n = len(docs)
            for k in range(self.offsets[j], self.offsets[j + 1]):
                if slots[self.docs[k] - self.first] != NO_SLOT:
                    docs.append(self.docs[k])
                    tfs.append(self.tfs[k])
            if len(docs) > n:
                kept.append(j)
                offsets.append(len(docs))
        vec_offsets = vec_terms = None
        if self.vec_offsets is not None and self.vec_terms is not None:
            new_id = renumber(kept, len(terms))
            vec_offsets, vec_terms = array("I", [0]), array("I")
            for i in range(len(self.lengths)):
                if slots[i] != NO_SLOT:
                    vec_terms.extend(new_id[x] for x in self.vec_terms[self.vec_offsets[i]:self.vec_offsets[i + 1]])
                vec_offsets.append(len(vec_terms))
        return Part("\n".join(terms[j] for j in kept), offsets, docs, tfs, self.lengths, vec_offsets=vec_offsets,
                    vec_terms=vec_terms, first=self.first)

    def slots(self, slots: array[int]) -> array[int]:
        """The postings' slots, given the documents' (none NO_SLOT)."""
        n = len(self.lengths)
        if slots == array("I", range(self.first, self.first + n)):
            return self.docs  # as the part expected
        return array("I", map(slots.__getitem__, map(operator.sub, self.docs, repeat(self.first, len(self.docs)))))


def own(a: array[int] | memoryview, code: str) -> array[int]:
    """An array of its own, of type ``code``, for one that may be a view of a
    snapshot's bytes or of another type (frequencies kept as bytes)."""
    if isinstance(a, array) and a.typecode == code:
        return a
    if isinstance(a, memoryview) and a.format == code:
        out = array(code)
        out.frombytes(a.cast("B"))
        return out
    return array(code, a)


def merge(lane: Postings, parts: list[tuple[Part, array[int]]]) -> None:
    """Fold ``parts`` into the lane's base, consuming the list (each part is
    let go as soon as it is copied: at 100k memories they are 100s of MB).
    Each comes with its documents' slots (NO_SLOT: not indexed after all);
    every slot of a part must be above the slots the lane already holds and
    those of the parts before it. The documents' lengths are the caller's to
    have set (``Postings.lengths``)."""
    if lane.delta or lane.vec_delta:
        lane.rebuild(None)
    parts[:] = [(p.keep(m) if NO_SLOT in m else p, m) for p, m in parts]
    old = lane.base_index
    old_terms = old.terms()
    # every term once, then its rank in sorted order: one dict for both (a
    # set and a dict of 1.6M bigrams at 100k memories cost 100s of MB)
    rank: dict[str, int] = dict.fromkeys(old_terms, 0)
    for p, _ in parts:  # (one part's list of terms at a time: a list of all is 10× their size)
        rank.update(dict.fromkeys(p.term_list(), 0))
    terms = sorted(rank)
    rank.update(zip(terms, range(len(terms))))
    # per source (the base, then each part): its terms' ids in the merged
    # vocabulary, its offsets, slots and tfs
    sources: list[tuple[array[int], array[int], array[int], array[int]] | None] = [
        (array("I", map(rank.__getitem__, old_terms)), own(lane.base_offsets, "I"), own(lane.base_slots, "I"),
         own(lane.base_tfs, "H"))]
    del old_terms
    for p, m in parts:
        sources.append((array("I", map(rank.__getitem__, p.term_list())), p.offsets, p.slots(m), p.tfs))
    del rank
    if lane.vectors:
        _merge_vectors(lane, [s[0] for s in sources if s is not None], parts)
    parts.clear()
    count = array("I", bytes(4 * len(terms)))
    for src in sources:
        assert src is not None
        ids, offs = src[0], src[1]
        for g, a, b in zip(ids, offs, offs[1:]):
            count[g] += b - a
    offsets = array("I", [0])
    offsets.extend(accumulate(count))
    del count
    total = offsets[-1]
    slots, tfs = array("I", bytes(4 * total)), array("H", bytes(2 * total))
    pos = array("I", offsets)
    for i, src in enumerate(sources):
        assert src is not None
        sources[i] = None  # (let it go once copied)
        ids, offs, ss, ts = src
        del src
        for g, a, b in zip(ids, offs, offs[1:]):
            p0 = pos[g]
            if b - a == 1:  # (most terms are rare: no slices for those)
                slots[p0] = ss[a]
                tfs[p0] = ts[a]
                pos[g] = p0 + 1
            else:
                p1 = pos[g] = p0 + b - a
                slots[p0:p1] = ss[a:b]
                tfs[p0:p1] = ts[a:b]
        del ids, offs, ss, ts
    lane.base_index = Vocab.from_sorted(terms)
    lane.base_offsets, lane.base_slots, lane.base_tfs = offsets, slots, narrow(tfs)


def _merge_vectors(lane: Postings, ids: list[array[int]], parts: list[tuple[Part, array[int]]]) -> None:
    """The base's term vectors in the merged vocabulary's ids (``ids[0]``),
    then the parts' documents' (``ids[1:]``) in slot order (an empty vector
    for a slot no part fills)."""
    old_ids = ids[0]
    vec_offsets, vec_terms = own(lane.vec_offsets, "I"), in_memory(lane.vec_terms)
    vec_offsets, vec_terms = map_ids(vec_offsets, vec_terms, old_ids)
    last = len(vec_offsets) - 2  # the last slot with a vector
    for part_ids, (p, m) in zip(ids[1:], parts):
        assert p.vec_offsets is not None and p.vec_terms is not None
        mapped = array("I", map(part_ids.__getitem__, p.vec_terms))
        vo = p.vec_offsets
        for i, s in enumerate(m):
            if s == NO_SLOT:
                continue
            if s > last + 1:  # slots between (indexed apart and dead, or never): no vector
                vec_offsets.extend(repeat(len(vec_terms), s - last - 1))
            vec_terms.extend(mapped[vo[i]:vo[i + 1]])
            vec_offsets.append(len(vec_terms))
            last = s
    lane.vec_offsets, lane.vec_terms = vec_offsets, vec_terms
