"""The dense lane's rules: which notes are candidates, and how much the lane
weighs in the fusion of one query. Pure: it works on similarities already
computed and on the index's read API.

**Candidates.** A note is a dense candidate only when its similarity to the
query clears a floor that holds for the whole corpus (``floor``, absolute)
*and* stands out from the corpus's own similarities to this query
(``z`` standard deviations above their mean). The second test is the
calibration: sentence encoders give every text of the same genre a
similarity well above zero, so an absolute floor alone either lets a whole
chat log in or shuts real paraphrases out, depending on the corpus.

**Weight.** The lane joins the reciprocal-rank fusion with a weight that
depends on how much lexical evidence the query has: the idf-weighted share of
its words (and CJK bigrams) that occur in the root at all. A query whose
words are all there is answered by the lexical lanes and the dense lane only
nudges (``weight_min``); a query with no word in the root — a Chinese
question over English memories, or the reverse — leans on it (``weight_max``),
and the lexical lanes, which then matched only its commonest words, weigh as
little as that share (not below ``lexical_min``). Words of the query found in
the root say little when the dense lane's best candidates are written in the
other script (an English question whose answer is a Chinese memory shares
"user" with a hundred English notes): the share is scaled down by the part of
those candidates that are.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from . import textnorm as TN
from .rank import Mask, Ranking


# The weight of a lane that may only fill the tail: a dense-only hit scores
# below any lexical hit of the first 100 ranks (1/160), and its nudge to a
# lexical hit is smaller than the gap between two ranks of the first 50, so it
# reorders nothing — it only splits ties.
TAIL = 0.001


@dataclass(frozen=True)
class DenseRules:
    floor: float = 0.20
    z: float = 2.0
    z_min_docs: int = 50  # below this many vectors the spread says nothing: the floor alone
    weight_min: float = 0.25
    weight_max: float = 3.0
    lexical_min: float = 0.1
    evidence_skip: float = 0.5  # from this share on, the dense lane only fills a list that ran dry
    evidence_full: float = 0.5  # from this share of the query's words in the root, lexical weighs fully
    depth: int = 100  # candidates kept per query before filtering
    cross_top: int = 5  # the candidates whose script is compared with the query's


@dataclass
class DenseLane:
    """A ranking of slots by similarity, for ``Index.search(lanes=…)``."""
    candidates: Sequence[tuple[float, int]]  # (similarity, slot), best first, above the floor
    weight: float = 1.0
    name: str = "dense"
    reweigh: dict[str, float] = field(default_factory=dict)  # weights of the lexical lanes

    def rank(self, mask: Mask, allowed: Callable[[int], bool] | None, depth: int) -> Ranking:
        out: list[tuple[float, int]] = []
        for sim, slot in self.candidates:
            if slot < len(mask) and mask[slot] and (allowed is None or allowed(slot)):
                out.append((sim, slot))
                if len(out) >= depth:
                    break
        return out


def lexical_evidence(words: Mapping[str, float], bigrams: Mapping[str, float],
                     df: Callable[[str, str], int], n_docs: int) -> float:
    """The idf-weighted share of the query's terms found in the root, in [0, 1]."""
    total = found = 0.0
    for lane, terms in (("words", words), ("bigrams", bigrams)):
        for t, w in terms.items():
            d = df(t, lane)
            idf = w * math.log(1 + n_docs / (1 + d))  # a missing term weighs as the rarest
            total += idf
            if d:
                found += idf
    return found / total if total else 0.0


def is_cjk(text: str) -> bool:
    """Mostly Chinese (or Japanese) characters, among the letters of ``text``."""
    cjk = latin = 0
    for ch in text[:400]:
        if TN.is_cjk(ch):
            cjk += 1
        elif ch.isalpha():
            latin += 1
    return cjk * 3 > latin  # a CJK character carries about a word's worth


def cross_language(query: str, texts: Sequence[str]) -> float:
    """The share of ``texts`` (the dense lane's best candidates) written in the
    other script than the query: what the lexical lanes cannot match at all."""
    if not texts:
        return 0.0
    q = is_cjk(query)
    return sum(1 for t in texts if is_cjk(t) != q) / len(texts)


def weight_for(evidence: float, rules: DenseRules) -> float:
    if evidence >= rules.evidence_skip:
        return TAIL
    missing = 1.0 - max(0.0, evidence) / rules.evidence_skip
    return rules.weight_min + (rules.weight_max - rules.weight_min) * missing


def lexical_weight(evidence: float, rules: DenseRules) -> float:
    """The lexical lanes' weight beside the dense lane: a query whose words are
    mostly not in the root matched only its commonest words, and a rank in a
    lane built on those says little."""
    return max(rules.lexical_min, min(1.0, evidence / rules.evidence_full) ** 2)


def select(sims: Any, rules: DenseRules) -> list[int]:
    """Rows above the calibrated floor, best first (at most ``rules.depth``)."""
    import numpy as np
    n = len(sims)
    if not n:
        return []
    mean, std = float(sims.mean()), float(sims.std())
    floor = max(rules.floor, mean + rules.z * std) if n >= rules.z_min_docs else rules.floor
    k = min(rules.depth, n)
    top = np.argpartition(-sims, k - 1)[:k] if k < n else np.arange(n)
    top = top[np.argsort(-sims[top], kind="stable")]
    return [int(r) for r in top if sims[r] >= floor]
