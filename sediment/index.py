"""The in-memory search index: two lanes (words, CJK bigrams), BM25 in each,
fused by reciprocal rank. Pure: no I/O; the repository feeds it entries.

Layout, chosen for 100k memories in a few hundred MB: each lane maps a term to
two growing ``array``s (slot numbers and term frequencies) instead of a dict per
term, ~6 bytes per posting instead of ~100. A document that changes gets a new
slot; the old slot is marked dead and skipped, and the postings are rebuilt
when dead slots pass a quarter of the total (amortised O(1) per change).
"""

from __future__ import annotations

import heapq
import math
from array import array
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

RRF_K = 60
# BM25 constants (Robertson's usual values; b a little lower because memories
# are short and length says little about relevance).
K1 = 1.2
B = 0.6
# Field weights, applied as repeated term frequency (a poor man's BM25F): a
# word in the title or a tag says more about what a memory is than one in the body.
TITLE_WEIGHT = 3
TAG_WEIGHT = 3
LANE_DEPTH = 400  # candidates ranked per lane before fusion


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


class _Lane:
    __slots__ = ("postings", "lengths", "total_len", "live")

    def __init__(self) -> None:
        self.postings: dict[str, tuple[array, array]] = {}
        self.lengths = array("I")
        self.total_len = 0
        self.live = 0

    def add(self, slot: int, terms: dict[str, int]) -> None:
        length = 0
        postings = self.postings
        for t, tf in terms.items():
            p = postings.get(t)
            if p is None:
                p = postings[t] = (array("I"), array("H"))
            p[0].append(slot)
            p[1].append(min(tf, 65535))
            length += tf
        while len(self.lengths) <= slot:
            self.lengths.append(0)
        self.lengths[slot] = length
        self.total_len += length
        self.live += 1

    def remove(self, slot: int) -> None:
        self.total_len -= self.lengths[slot]
        self.live -= 1

    def score(self, qterms: dict[str, int], alive: bytearray, allowed: Callable[[int], bool] | None,
              depth: int) -> tuple[list[tuple[float, int]], dict[int, set[str]]]:
        """BM25 over live slots; returns the top ``depth`` (score, slot) and, for
        those, which query terms they contain."""
        n = max(self.live, 1)
        avg = self.total_len / n if self.total_len else 1.0
        lengths = self.lengths
        acc: dict[int, float] = {}
        hits: dict[int, list[str]] = {}
        for t, qtf in qterms.items():
            p = self.postings.get(t)
            if p is None:
                continue
            slots, tfs = p
            df = len(slots)  # counts dead slots too: a slightly low IDF until the next compaction
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            w = idf * (1 + 0.5 * (qtf - 1))  # a repeated query term counts a little more
            for s, tf in zip(slots, tfs):
                if not alive[s]:
                    continue
                norm = K1 * (1 - B + B * lengths[s] / avg)
                acc[s] = acc.get(s, 0.0) + w * tf * (K1 + 1) / (tf + norm)
                h = hits.get(s)
                if h is None:
                    hits[s] = [t]
                else:
                    h.append(t)
        if allowed is not None:
            items = [(sc, s) for s, sc in acc.items() if allowed(s)]
        else:
            items = [(sc, s) for s, sc in acc.items()]
        top = heapq.nlargest(depth, items)
        return top, {s: set(hits[s]) for _, s in top}


@dataclass
class Hit:
    key: str
    score: float
    terms: tuple[str, ...]
    lanes: dict[str, int] = field(default_factory=dict)  # lane → rank (1-based)


class Index:
    """Maps keys (memory ids) to slots and ranks them for a query."""

    def __init__(self, terms_for: Callable[[str], DocTerms]) -> None:
        # Compaction needs each live document's terms again; keeping them all
        # would double memory, so the owner re-derives them (from its token cache).
        self.terms_for = terms_for
        self.words = _Lane()
        self.bigrams = _Lane()
        self.slot_of: dict[str, int] = {}
        self.key_of: list[str | None] = []
        self.alive = bytearray()
        self._dead = 0

    def __len__(self) -> int:
        return len(self.slot_of)

    def __contains__(self, key: str) -> bool:
        return key in self.slot_of

    def put(self, key: str, terms: DocTerms) -> None:
        if key in self.slot_of:
            self.remove(key)
        slot = len(self.key_of)
        self.key_of.append(key)
        self.alive.append(1)
        self.slot_of[key] = slot
        self.words.add(slot, terms.words)
        self.bigrams.add(slot, terms.bigrams)

    def remove(self, key: str) -> None:
        slot = self.slot_of.pop(key, None)
        if slot is None:
            return
        self.alive[slot] = 0
        self.key_of[slot] = None
        self.words.remove(slot)
        self.bigrams.remove(slot)
        self._dead += 1
        if self._dead > 1000 and self._dead * 4 > len(self.key_of):
            self._compact()

    def _compact(self) -> None:
        docs = [(k, self.terms_for(k)) for k in self.slot_of]
        self.__init__(self.terms_for)  # type: ignore[misc]
        for k, t in docs:
            self.put(k, t)

    def search(self, words: dict[str, int], bigrams: dict[str, int], *,
               allowed: Callable[[str], bool] | None = None,
               tiebreak: Callable[[str], tuple] | None = None,
               limit: int = 10) -> list[Hit]:
        """Fuse the lanes by reciprocal rank. A key with no term of the query in
        either lane is never returned; ``tiebreak`` orders equal fused scores
        (higher first), then the key keeps the order stable."""
        allow_slot = None
        if allowed is not None:
            key_of = self.key_of
            allow_slot = lambda s: allowed(key_of[s])  # noqa: E731
        fused: dict[int, float] = {}
        matched: dict[int, set[str]] = {}
        ranks: dict[int, dict[str, int]] = {}
        for name, lane, q in (("words", self.words, words), ("bigrams", self.bigrams, bigrams)):
            if not q:
                continue
            top, hits = lane.score(q, self.alive, allow_slot, LANE_DEPTH)
            for rank, (_, s) in enumerate(top, 1):
                fused[s] = fused.get(s, 0.0) + 1.0 / (RRF_K + rank)
                matched.setdefault(s, set()).update(hits[s])
                ranks.setdefault(s, {})[name] = rank
        key_of = self.key_of
        tb = tiebreak or (lambda k: ())
        order = sorted(fused, key=lambda s: (-round(fused[s], 12), _neg(tb(key_of[s])), key_of[s]))
        return [Hit(key_of[s], fused[s], tuple(sorted(matched[s])), ranks[s]) for s in order[:limit]]


def _neg(t: tuple) -> tuple:
    return tuple(-x for x in t)
