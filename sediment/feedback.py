"""Pseudo-relevance feedback: the words of the memories that answered a query,
as a further query of their own.

The first few fused results are taken as relevant; each term of theirs that
is not in the query earns (its document's share of their fused score) ×
(tf / length) × idf, counting only terms found in at least two documents (a
term of one memory alone cannot find another). The best terms, with the query's
own words, make the expanded query, which the word lane scores like any query:
so a memory comes up that shares no word with the question but shares words
with the memories that answered it (a phone model named in one, talked about in
another) — always through a lexical match, as the candidate rule requires.
Fused as a lane of its own rather than replacing the query: replacing it (RM3
proper) cost CMRC R@1 and LoCoMo MRR. Pure; reads term vectors, tokenizes nothing.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Mapping, Sequence

from .postings import Postings, bm25_idf


@dataclass(frozen=True, slots=True)
class Feedback:
    """How the feedback lane is built (the policy's ``feedback_*`` settings)."""
    docs: int = 3  # the first this many fused results feed the expansion
    terms: int = 10  # expansion terms kept
    weight: float = 0.5  # the best expansion term's weight beside a query word's 1
    min_df: int = 2
    with_query: bool = True  # the expanded query keeps the query's own words
    fuse_weight: float = 1.0  # the lane's share in the fusion, beside the others' 1
    idf_power: float = 1.0  # a term's gain grows with idf to this power


def expansion(lane: Postings, docs: Sequence[tuple[int, float]], query: Mapping[str, float],
              fb: Feedback) -> dict[str, float]:
    """Expansion terms and their query weights from the (slot, fused score) of
    the feedback documents, best first; the best one weighs ``fb.weight``."""
    total = sum(w for _, w in docs) or 1.0
    n = max(lane.live, 1)
    idfs: dict[str, float] = {}
    gain: dict[str, float] = {}
    for slot, fused in docs:
        length = lane.lengths[slot] or 1
        share = fused / total / length
        for t, tf, df in lane.vector_df(slot):
            if t in query:
                continue
            idf = idfs.get(t)
            if idf is None:
                idf = idfs[t] = bm25_idf(n, df) ** fb.idf_power if df >= fb.min_df else 0.0
            if idf > 0:
                gain[t] = gain.get(t, 0.0) + share * tf * idf
    top = heapq.nlargest(fb.terms, gain.items(), key=lambda kv: (kv[1], kv[0]))
    if not top:
        return {}
    peak = top[0][1]
    return {t: fb.weight * g / peak for t, g in top}
