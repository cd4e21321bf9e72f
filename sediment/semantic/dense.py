"""The dense lane's rules: which notes are candidates, and how much the lane
weighs in the fusion of one query. Pure: it works on similarities already
computed and on the index's read API.

**Candidates.** A note is a dense candidate only when its similarity to the
query clears a floor that holds for the whole corpus (``floor``, absolute)
*and* stands out from the corpus's own similarities to this query
(``z`` standard deviations above their mean). The second test is the
calibration: sentence encoders give every text of the same genre a
similarity well above zero, so an absolute floor alone either lets a whole
chat log in or shuts real paraphrases out, depending on the corpus. From
``z_min_docs`` vectors on, the similarities are *centred* (the corpus mean
taken from the query and every vector first: ``vectors.VectorFile.scan``),
with their own floor (``floor_centered``), and the plain cosine must still
stand ``raw_z`` deviations out: a query of nothing in particular has a
centred remainder that is only the corpus's own spread, and would otherwise
match whatever note is least like the rest. A candidate must also stand
out from its own side (``row_z``, hubs.py): a note near every question (a
hub) is no finding for any (``lane.Semantic._standing_out``). The same
test, with a low bar (``unlike_z``), is the lane's evidence *against* a
memory the lexical lanes matched by one common word of a question the root
does not answer (``rank.Lane.unlike``, ``search.evidence.with_evidence``).

**Evidence.** How much the lane weighs depends on how much lexical evidence
the query has: the idf-weighted share of its words (and CJK bigrams) that
occur in the root at all. Words of the query found in the root say little
when the dense lane's best candidates are written in the other script (an
English question whose answer is a Chinese memory shares "user" with a
hundred English notes): the share is scaled down by the part of those
candidates that are.

**A query the lexical lanes answer** (evidence from ``evidence_skip`` on):
the dense lane only fills a list that ran dry and splits ties (``TAIL``).

**A query the lane leans on** (less evidence): rank fusion is the wrong tool
there. Reciprocal ranks flatten a lane's order (1/61 against 1/65), so a
distractor sharing one common word with the query, found by three lexical
lanes and the feedback lane, outranks the memory the dense lane put first.
Such a query is answered by one ranking of the union of the dense candidates
and the query's direct lexical hits, ordered by a blend of their *scores*
(``blend``): ``alpha`` × the similarity, scaled so that the corpus's mean is 0
and the best candidate 1, plus (1 − ``alpha``) × the BM25 score, scaled by the
best of its lane; ``alpha`` rises to 1 as the query's lexical evidence
falls to none (the few words found are then common ones: a one-word match
would get the full lexical score as the best of its lane) and with the share
of the lane's best candidates written in the other script. A candidate written in the other script than the query
cannot be matched lexically at all, so its lexical part is not held against
it: it is ranked by its similarity alone. That ranking enters the fusion with
the lane's full weight and the lexical and feedback lanes weigh ``TAIL``:
their ranks only split ties, and the index still keeps a direct hit in the
first ``limit``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from ..model.lexicon import is_cjk_char
from ..search.rank import Mask, Ranking
from ..search.toplist import whole_ties


# The weight of a lane that may only fill the tail: a dense-only hit scores
# below any lexical hit of the first 100 ranks (1/160), and its nudge to a
# lexical hit is smaller than the gap between two ranks of the first 50, so it
# reorders nothing — it only splits ties.
TAIL = 0.001


@dataclass(frozen=True)
class DenseRules:
    floor: float = 0.20  # the plain cosine's floor
    floor_centered: float = 0.25  # the floor of a centred cosine (see ``center``)
    raw_z: float = 1.0  # with centring, the plain cosine must still stand this many deviations out
    z: float = 2.0
    # with centring, the query must also stand this many deviations out among the
    # candidate's own similarities to the corpus (hubs.py; None: no such test)
    row_z: float | None = 2.75
    # a weak lexical match of a question the root does not answer stays only when the
    # query stands this many deviations out among the memory's own similarities
    # (``evidence.with_evidence``; None: the lane never says a memory is unlike the query)
    unlike_z: float | None = 0.5
    z_min_docs: int = 50  # below this many vectors the spread says nothing: the floor alone, no centring
    center: bool = True  # similarities after the corpus mean is subtracted (vectors.VectorFile.scan)
    weight_max: float = 3.0  # the blend's weight in the fusion (the lexical lanes weigh TAIL then)
    evidence_skip: float = 0.5  # from this share on, the dense lane only fills a list that ran dry
    depth: int = 100  # candidates kept per query before filtering
    cross_top: int = 5  # the candidates whose script is compared with the query's
    alpha: float = 0.6  # the similarity's share of the blend (the lexical score has the rest)
    alpha_evidence: float = 1.0  # how far alpha rises toward 1 as the lexical evidence falls to none
    # direct lexical hits per lexical lane in the blend's union (taken from the
    # index's rankings of the query, which go LANE_DEPTH deep: no more than that)
    lexical_depth: int = 50


class _Found:
    """What a lane found by similarity (its candidates, above the floor): what
    it vouches for in ``search.by_meaning``; the set made once, at the first ask.
    ``against``: per slot, whether the lane's evidence is against it (``unlike``)."""
    candidates: Sequence[tuple[float, int]]
    against: Callable[[Sequence[int]], list[bool]] | None

    def unlike(self, slots: Sequence[int]) -> list[bool]:
        return self.against(slots) if self.against is not None else [False] * len(slots)

    def vouches(self, slot: int) -> bool:
        found = self.__dict__.get("_found")
        if found is None:
            found = self.__dict__["_found"] = {s for _, s in self.candidates}
        return slot in found


@dataclass
class DenseLane(_Found):
    """A ranking of slots by similarity, for ``Index.search(lanes=…)``."""
    candidates: Sequence[tuple[float, int]]  # (similarity, slot), best first, above the floor
    weight: float = 1.0
    name: str = "dense"
    reweigh: dict[str, float] = field(default_factory=dict)  # weights of the lexical lanes
    against: Callable[[Sequence[int]], list[bool]] | None = None

    def rank(self, mask: Mask, allowed: Callable[[int], bool] | None, depth: int,
             lexical: Mapping[str, Ranking]) -> Ranking:
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


def mostly_cjk(text: str) -> bool:
    """Written in CJK: mostly CJK ideographs among the letters of its first
    400 characters (a text, where ``lexicon.is_cjk_char`` asks of one
    character).

    >>> mostly_cjk("我们用 ArgoCD 部署"), mostly_cjk("Deploys go through 阿尔戈")
    (True, False)
    """
    cjk = latin = 0
    for ch in text[:400]:
        if is_cjk_char(ch):
            cjk += 1
        elif ch.isalpha():
            latin += 1
    return cjk * 3 > latin  # a CJK character carries about a word's worth


def cross_language(query: str, texts: Sequence[str]) -> float:
    """The share of ``texts`` (the dense lane's best candidates) written in the
    other script than the query: what the lexical lanes cannot match at all."""
    if not texts:
        return 0.0
    q = mostly_cjk(query)
    return sum(1 for t in texts if mostly_cjk(t) != q) / len(texts)


def alpha_for(cross: float, rules: DenseRules, evidence: float | None = None) -> float:
    """The similarity's share of the blend: ``alpha``, rising to 1 as the
    lane's best candidates are all in the other script than the query (the
    lexical scores are then of notes that share only its common words), and
    as the query's lexical evidence falls toward none (``alpha_evidence``: its
    few words found are then common ones; ``None``: not by evidence)."""
    weak = 0.0 if evidence is None else max(0.0, 1.0 - evidence / rules.evidence_skip) * rules.alpha_evidence
    a = rules.alpha + (1.0 - rules.alpha) * weak
    return a + (1.0 - a) * cross


def select(sims: Any, rules: DenseRules, raw: Any = None, *, calibrated: bool | None = None) -> list[int]:
    """Rows above the calibrated floor, best first (at most ``rules.depth``).
    ``sims`` are what the lane ranks by; with ``raw`` (the plain cosines, when
    ``sims`` are centred) a row must also stand ``raw_z`` deviations out among
    those: a query of nothing in particular, whose centred remainder is only
    the corpus's own spread, then finds nothing. ``calibrated``: whether the
    spread says something (the caller counts memories, not rows; default:
    the finite rows are ``z_min_docs`` or more)."""
    import numpy as np
    n = len(sims)
    finite = sims[np.isfinite(sims)]  # (a NaN row never passes the floor, nor sets it)
    if not len(finite):
        return []
    mean, std = float(finite.mean()), float(finite.std())
    many = calibrated is not False and len(finite) >= rules.z_min_docs
    # (centred similarities keep their own floor even where NaN rows leave too few to calibrate)
    base = rules.floor if raw is None else rules.floor_centered
    floor = max(base, mean + rules.z * std) if many else base
    raw_floor = -np.inf
    if raw is not None and many:
        fin = raw[np.isfinite(raw)]
        raw_floor = float(fin.mean()) + rules.raw_z * float(fin.std())
    k = min(rules.depth, n)
    top = np.argpartition(-sims, k - 1)[:k] if k < n else np.arange(n)
    top = top[np.argsort(-sims[top], kind="stable")]
    return [int(r) for r in top if sims[r] >= floor and (raw is None or raw[r] > raw_floor)]


def blend(lexical: Sequence[Ranking], dense: Mapping[int, float], similarity: Callable[[int], float | None],
          other_script: Callable[[int], bool], *, mean: float, top: float, alpha: float) -> list[tuple[float, int]]:
    """The union of the dense candidates (slot → similarity) and the lexical
    rankings' hits, ordered by ``alpha`` × the similarity scaled to [0, 1]
    between ``mean`` and ``top`` plus (1 − ``alpha``) × the lexical score
    scaled by the best of its ranking (summed over rankings, then scaled by
    the best sum). A dense candidate with no lexical score written in the
    other script than the query is ranked by its similarity alone.

    >>> blend([[(4.0, 1), (2.0, 2)]], {3: 0.9, 2: 0.5}, lambda s: 0.1, lambda s: s == 3, mean=0.1, top=0.9,
    ...       alpha=0.5)
    [(1.0, 3), (0.5, 1), (0.5, 2)]
    """
    lex: dict[int, float] = {}
    for ranking in lexical:
        if ranking and ranking[0][0] > 0:
            best_score = ranking[0][0]
            for sc, s in ranking:
                lex[s] = lex.get(s, 0.0) + sc / best_score
    if lex:
        most = max(lex.values())
        lex = {s: v / most for s, v in lex.items()}
    span = top - mean

    def scaled(slot: int) -> float:
        sim = dense.get(slot)
        if sim is None:
            sim = similarity(slot)
        return max(0.0, (sim - mean) / span) if sim is not None and span > 0 else 0.0

    out = []
    for s in set(lex) | set(dense):
        d = scaled(s)
        if s not in lex and other_script(s):
            out.append((d, s))
        else:
            out.append((alpha * d + (1 - alpha) * lex.get(s, 0.0), s))
    out.sort(key=lambda x: (-x[0], x[1]))
    return out


@dataclass
class BlendLane(_Found):  # (vouches for its candidates only, not the lexical hits it ranks too)
    """For a query the lane leans on: the blended ranking of the union (see
    ``blend``), computed when the index asks for it, with the same mask and
    filter as the lexical lanes. Its lexical scores are the index's own BM25
    rankings of the query's words and CJK bigrams (handed to ``rank``), the
    first ``lexical_depth`` of each."""
    candidates: Sequence[tuple[float, int]]  # (similarity, slot), best first, above the floor
    similarity: Callable[[int], float | None]
    other_script: Callable[[int], bool]
    mean: float
    top: float
    alpha: float
    lexical_depth: int
    weight: float = 3.0
    name: str = "dense"
    reweigh: dict[str, float] = field(default_factory=lambda: dict.fromkeys(
        ("words", "rare", "bigrams", "feedback"), TAIL))
    against: Callable[[Sequence[int]], list[bool]] | None = None

    def rank(self, mask: Mask, allowed: Callable[[int], bool] | None, depth: int,
             lexical: Mapping[str, Ranking]) -> Ranking:
        dense = {s: sim for sim, s in self.candidates
                 if s < len(mask) and mask[s] and (allowed is None or allowed(s))}
        # (the rare-term lane's sums of IDFs are no score to blend: BM25 only; a
        # ranking's first n are the index's top n, ties cut as a search n deep would)
        own = [lexical[lane][:self.lexical_depth] for lane in ("words", "bigrams") if lane in lexical]
        # (a tie its own cut would split is left out: the blend's ties are otherwise ordered by slot)
        return whole_ties(blend(own, dense, self.similarity, self.other_script, mean=self.mean, top=self.top,
                                alpha=self.alpha), depth)
