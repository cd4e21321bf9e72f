"""A lane's top list: its ``depth`` best (score, slot) pairs, found without
sorting a pair for every document, and the documents tied at the cut, which
are settled by the memory's key or left out, never by slot (``whole_ties``)."""

from __future__ import annotations

import heapq
from typing import Callable, Mapping, Sequence

# below this many scores a C sort finds the depth-th best faster than a heap
_SORT_BELOW = 1000


def nth(values: Sequence[float] | Mapping[int, float], depth: int) -> float:
    """The ``depth``-th largest of ``values`` (a dict: of its values); -1
    when there are fewer. (A heap of the best ``depth`` values, as
    ``heapq.nlargest`` keeps, without the pair it makes for every value.)"""
    vals = values.values() if isinstance(values, Mapping) else values
    if len(vals) < depth or depth <= 0:
        return -1.0
    if len(vals) < _SORT_BELOW:
        return sorted(vals, reverse=True)[depth - 1]
    it = iter(vals)
    best = [v for _, v in zip(range(depth), it)]
    heapq.heapify(best)
    low = best[0]
    for v in it:
        if v > low:
            heapq.heapreplace(best, v)
            low = best[0]
    return low


# what orders a lane's documents tied at its cut: the memory's key, by slot
# (``Index.key_of``), the same however the index was built
Order = Callable[[int], str]


def top_of(scores: Mapping[int, float], depth: int, order: Order | None = None) -> list[tuple[float, int]]:
    """The best ``depth`` (score, slot) pairs, best first, without making
    and sorting a pair for every document: the ``depth``-th best score is
    found first, and only what reaches it is sorted. Documents tied at a
    score the cut would split: see ``whole_ties``."""
    if depth <= 0:
        return []
    if len(scores) < 2 * depth or len(scores) < _SORT_BELOW:
        return whole_ties(sorted([(sc, s) for s, sc in scores.items()], reverse=True), depth, order)
    cut = nth(scores, depth)
    reach = [s for s, sc in scores.items() if sc >= cut]
    if len(reach) <= 4 * depth:
        return whole_ties(sorted([(scores[s], s) for s in reach], reverse=True), depth, order)
    # many tied at the cut (the rare-term lane of a common word)
    above = sorted([(sc, s) for s in reach if (sc := scores[s]) > cut], reverse=True)
    if order is None:
        return above
    return in_order(above, order) + [(cut, s) for s in heapq.nlargest(
        depth - len(above), (s for s in reach if scores[s] == cut), key=order)]


def whole_ties(ranked: list[tuple[float, int]], depth: int, order: Order | None = None
               ) -> list[tuple[float, int]]:
    """The first ``depth`` of ``ranked`` (best first, holding every document
    tied at the score of its ``depth``-th), where a run of documents tied at
    a score the cut splits is settled by ``order`` (the highest keys), or,
    without one, left out whole. Never by slot: slots follow the order the
    documents were indexed in (adds, or a cold open's walk), so the same
    files would rank otherwise on another machine. (Left out: the rare-term
    lane's ties, as weak as its evidence gets and often thousands, which it
    gives no vote rather than sort; a BM25 lane's are few, except in a root
    of notes alike, where leaving them out would leave the lane empty.)"""
    if len(ranked) <= depth or ranked[depth][0] != ranked[depth - 1][0]:
        return ranked[:depth] if order is None else in_order(ranked[:depth], order)
    tied = ranked[depth - 1][0]
    above = [x for x in ranked[:depth] if x[0] != tied]
    if order is None:
        return above
    run = (s for sc, s in ranked if sc == tied)
    return in_order(above, order) + [(tied, s) for s in heapq.nlargest(depth - len(above), run, key=order)]


def in_order(top: list[tuple[float, int]], order: Order) -> list[tuple[float, int]]:
    """``top`` (best first) with each run of equal scores in ``order``,
    highest first, as a cut settles them: so that any first n of the list
    is the list a search n deep makes (the semantic blend takes a prefix,
    ``dense.BlendLane``), not the first by slot. (Most lists have no equal
    scores: then it is ``top`` itself, without a key asked per document on
    every search.)"""
    if all(a[0] != b[0] for a, b in zip(top, top[1:])):
        return top
    return sorted(top, key=lambda x: (x[0], order(x[1])), reverse=True)
