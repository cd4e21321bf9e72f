"""A lane's absence of evidence is not evidence against (issue 31, pattern 1).

Reciprocal rank fusion counts a lane that did not rank a document as a vote
against it. That is right when the lane could have seen the document's
evidence and found it weak; it is wrong when the lane cannot represent that
evidence at all. The CJK bigram lane has no term for a Latin word or a
number: in "能给我介绍一下什么是BCPL么？" the note about BCPL is first in the word
and rare-term lanes, but every note sharing only 介绍 or 一下 also gets the
bigram lane's vote, and three middling votes beat two first places (RRF's
1/(K + rank) hardly tells rank 1 from rank 15).

So a document the bigram lane could not see — it holds a term of the query
with no CJK character, and none of the query's bigrams — is given in that
lane what the lanes that did see it gave it (the mean of its word and
rare-term shares): the blind lane abstains instead of voting against.
Documents that hold a query bigram are ranked by the bigram lane as before,
and a query without a Latin term, or without CJK text, fuses as before.

Weighting the whole lane by the share of the query's idf it can represent
was measured and not taken (benchmarks/README.md, "Ranking choices"): under
RRF a lane's weight shifts every document alike, so the bigram lane's votes
for 介绍 and 一下 still outnumber the Latin term's two first places.
"""

from __future__ import annotations

from typing import Mapping

from ..model.lexicon import CJK_RUN
from . import rank as R
from .postings import Postings
from .rank import Ranking


def blind_terms(words: Mapping[str, float]) -> list[str]:
    """The query's words the bigram lane has no term for: those without a
    CJK character (a Latin word, a number), whole-run tags excepted."""
    return [t for t in words if not t.startswith("#") and not CJK_RUN.search(t)]


def abstain(fused: dict[int, float], ranks: Mapping[int, Mapping[str, int]], lexical: Mapping[str, Ranking],
            *, words_lane: Postings, bigrams_lane: Postings, words: Mapping[str, float],
            bigrams: Mapping[str, float], depth: int, weights: Mapping[str, float] | None = None) -> None:
    """Give the documents the bigram lane could not see (above) the bigram
    lane's share they would have had had it agreed with the word lanes, in
    ``fused`` (in place). ``ranks``: each slot's rank per lane, as ``rrf``
    made them; ``lexical``: the lexical rankings, each to ``depth``."""
    if not bigrams or "bigrams" not in lexical:
        return
    blind = blind_terms(words)
    if not blind:
        return
    cands = [s for s, r in ranks.items() if "bigrams" not in r and ("words" in r or "rare" in r)]
    if not cands:
        return
    has_blind = words_lane.matched(cands, blind)
    cands = [s for s in cands if has_blind[s]]
    if len(lexical["bigrams"]) >= depth:  # (a short list is every document with a query bigram)
        has_pair = bigrams_lane.matched(cands, bigrams)
        cands = [s for s in cands if not has_pair[s]]
    w = (weights or {}).get("bigrams", 1.0)
    for s in cands:
        seen = [1.0 / (R.RRF_K + r) for n, r in ranks[s].items() if n in ("words", "rare")]
        fused[s] += w * sum(seen) / len(seen)
