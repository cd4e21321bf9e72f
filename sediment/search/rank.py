"""Rank fusion: several rankings of the same documents become one.

Reciprocal rank fusion (Cormack et al. 2009): a document gains 1/(K + rank)
from each ranking it appears in. Only ranks count, never raw scores, so lanes
whose scores are not comparable (BM25, summed IDF, a future dense similarity)
fuse without calibration. Pure; works on the index's slot numbers.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Callable, Iterable, Mapping, Protocol, Sequence

RRF_K = 60

# (score, slot), best first
Ranking = Sequence[tuple[float, int]]
# per slot, non-zero where the search may return it
Mask = bytes | bytearray


class Lane(Protocol):
    """A ranking of the index's slots for one query, fused with the lexical
    lanes (the semantic lane's: ``dense.DenseLane``, ``dense.BlendLane``)."""

    @property
    def name(self) -> str:
        """Its name in the fusion and in a hit's ``lanes``."""
        ...

    @property
    def weight(self) -> float:
        """Its factor in the fusion (below 1: it only fills the tail, and
        vouches for nothing: ``search.by_meaning``)."""
        ...

    @property
    def reweigh(self) -> Mapping[str, float]:
        """Factors it sets for other lanes of the same search ("words",
        "rare", "bigrams", "feedback"): a lane the query leans on makes the
        lexical ones split ties only."""
        ...

    def vouches(self, slot: int) -> bool:
        """Whether it found ``slot`` by its own evidence (not merely ranked it)."""
        ...

    def unlike(self, slots: Sequence[int]) -> list[bool]:
        """Per slot, whether its own evidence is against it being about the
        query (the semantic lane: the query does not stand out among the
        memory's own similarities to the corpus). A lane without such
        evidence says False; ``evidence.with_evidence`` asks it of the weak
        lexical matches of a question the root does not answer, at once."""
        ...

    def rank(self, mask: Mask, allowed: Callable[[int], bool] | None, depth: int,
             lexical: Mapping[str, Ranking]) -> Ranking:
        """Its best ``depth`` slots. ``mask[slot]`` is 0 for slots the search
        skips; ``allowed`` (when given) filters the rest. ``lexical``: the
        rankings the index has just made for the same query under the same
        mask and filter ("words", "rare", "bigrams": those the query has
        terms for), each to the search's depth, scores included — a lane that
        weighs lexical scores reads them here rather than scoring again."""
        ...


# What makes a query's further lanes from its word and bigram weights and its
# text (the semantic lane's ``Semantic.lanes``). A view holds its sources
# (``View.lanes``, wired at open); a search asks each (``query.ask``).
LaneSource = Callable[[Mapping[str, float], Mapping[str, float], str], Sequence[Lane]]


def vouched(lanes: Sequence[Lane], hit_lanes: Mapping[str, int], slot: int) -> bool:
    """Whether one of ``lanes`` found ``slot`` by its own evidence for the
    query (``hit_lanes``: the lanes that ranked it). A lane only filling the
    tail (weight below 1) vouches for nothing, nor does a lane for what it
    ranks without having found it (the semantic blend ranks the direct
    lexical hits too)."""
    return any(lane.name in hit_lanes and lane.weight >= 1.0 and lane.vouches(slot) for lane in lanes)


_APART = 2e-9  # (rounded to 9 places, two numbers 1e-9 apart or more differ)


def rrf(rankings: Iterable[tuple[str, Ranking]], weights: Mapping[str, float] | None = None
        ) -> tuple[dict[int, float], dict[int, dict[str, int]]]:
    """Fused score per slot, and per slot its rank in each lane (1-based).
    ``weights`` (lane → factor, default 1) scales a lane's share."""
    return rrf_add({}, {}, rankings, weights)


def rrf_add(fused: dict[int, float], ranks: dict[int, dict[str, int]],
            rankings: Iterable[tuple[str, Ranking]], weights: Mapping[str, float] | None = None
            ) -> tuple[dict[int, float], dict[int, dict[str, int]]]:
    """``rrf`` with further rankings added to a fusion already made (in place)."""
    for name, top in rankings:
        w = weights.get(name, 1.0) if weights else 1.0
        rank, last = 0, math.nan  # (equal to nothing)
        for pos, (sc, s) in enumerate(top, 1):
            # equal lane scores (to 9 places) share a rank, so that only
            # strength and recency (never the order documents were indexed
            # in) split them. Scores further apart than _APART cannot round
            # alike, so round() runs only for near neighbours (it was ~7% of
            # a search)
            if not (sc == last or (abs(sc - last) <= _APART and round(sc, 9) == round(last, 9))):
                rank = pos
            last = sc
            fused[s] = fused.get(s, 0.0) + w / (RRF_K + rank)
            ranks.setdefault(s, {})[name] = rank
    return fused, ranks


def best(fused: dict[int, float], key_of: Sequence[str | None],
         tiebreak: Callable[[str], tuple[float, ...]] | None, limit: int) -> list[int]:
    """The first ``limit`` slots by fused score; equal scores ordered by
    ``tiebreak`` (higher first), then by key, so the order is stable."""
    if limit <= 0:  # (no first place to cut at: nothing asked for)
        return []
    tb = tiebreak or (lambda k: ())
    # Tie-breaking is the slow part (it reads usage and times), so it runs
    # only inside runs of equal scores that reach into the top ``limit``.
    if len(fused) > 4 * limit:  # only what can reach the first ``limit`` is sorted
        cut = round(heapq.nlargest(limit, fused.values())[-1], 12)
        low = cut - 1e-11  # (a score below cannot round up to the cut: round() only for those above)
        rounded = {s: r for s, sc in fused.items() if sc >= low and (r := round(sc, 12)) >= cut}
    else:
        rounded = {s: round(sc, 12) for s, sc in fused.items()}
    order = sorted(rounded, key=lambda s: (-rounded[s], key_of[s]))
    out: list[int] = []
    for _, group in itertools.groupby(order, key=rounded.__getitem__):
        run = list(group)
        if len(run) > 1:
            run.sort(key=lambda s: (tuple(-x for x in tb(key_of[s])), key_of[s]))  # type: ignore[arg-type]
        out.extend(run)
        if len(out) >= limit:
            break
    return out[:limit]

