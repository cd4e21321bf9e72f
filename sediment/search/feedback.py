"""Pseudo-relevance feedback: the words of the memories that answered a query,
as a further query of their own.

The first few fused results are taken as relevant; each term of theirs that
is not in the query earns (its document's share) × (tf / length) × idf,
counting only terms found in at least two documents (a term of one memory
alone cannot find another) and in at most a small share of them (a common word
identifies nothing, and its long postings cost most), within a postings
budget, and never a lone CJK character (what jieba leaves uncut: 买, 新, 好 —
generic words, which the bigram lane covers). A document's share goes by its
rank, 1/rank (fused scores are nearly flat, 1/61 and 1/63, so a share of them
weighed the memory that names the entity like the two below it). The best
terms, with the query's own words, make the expanded query, scored by BM25
over the word lane (``score``: the word lane's own scores plus the expansion
terms', so only those are walked): so a memory comes up
that shares no word with the question but shares words with the memories that
answered it (a phone model named in one, talked about in
another) — always through a lexical match, as the candidate rule requires.
Fused as a lane of its own rather than replacing the query: replacing it (RM3
proper) cost CMRC R@1 and LoCoMo MRR. Pure; reads term vectors, tokenizes nothing.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ..model.lexicon import is_cjk_char
from .maxscore import Norms, Scored, probe_or_walk, walk
from .toplist import Order, nth, whole_ties
from .postings import Postings, bm25_idf
from .rank import Mask, Ranking


@dataclass(frozen=True, slots=True)
class Feedback:
    """How the feedback lane is built (the policy's ``feedback_*`` settings)."""
    docs: int = 3  # the first this many fused results feed the expansion
    terms: int = 10  # expansion terms kept (for a query with CJK text)
    weight: float = 0.5  # the best expansion term's weight beside a query word's 1
    # for a query without CJK text (English): more terms found more on LoCoMo
    # and cost CMRC R@1 (benchmarks/README.md, "Ranking choices")
    terms_latin: int = 20
    min_df: int = 2
    with_query: bool = True  # the expanded query keeps the query's own words
    fuse_weight: float = 1.0  # the lane's share in the fusion, beside the others' 1
    idf_power: float = 1.0  # a term's gain grows with idf to this power
    norm: str = "length"  # a document's term gains: tf/length ("length"), tf/sqrt(length), or / its best ("doc")
    # expansion terms in at most this share of the documents (or in up to
    # ``max_df_floor`` of them, in a small root): a word in one memory of ten
    # (twenty, for a query without CJK text) tells little, and its long
    # postings were most of the lane's cost
    max_share: float = 0.1
    max_share_latin: float = 0.05
    max_df_floor: int = 2
    # the expansion terms' postings, in all: terms are taken best first, and one
    # that would pass this is left out. A latency budget for large roots: the
    # retrieval benchmarks' expansions walk at most 421 postings (CMRC; LoCoMo
    # 408), a generated 10k root's up to 5,000; 1,000 of them cost 15% less
    # search CPU at the median than 5,000 did, and 500 12% less again at the
    # p99 of queries with a common word, with as many sources found
    # (benchmarks/README.md, "… and the expansion's postings budget", "… and the tail")
    budget: int = 500
    # a feedback document's share ∝ 1/rank^power (0: ∝ its fused score, which
    # rank fusion leaves nearly flat; benchmarks/README.md, "Ranking choices")
    rank_power: float = 1.0
    single_cjk: bool = False  # a lone CJK character may be an expansion term
    # a query word in at most this share of the documents (or in up to
    # ``rare_floor`` of them) is rare: a feedback document holding every word
    # of the query, one of them rare, answers it (``answered``)
    rare_share: float = 0.01
    rare_floor: int = 2

    def damp(self, rankings: Sequence[tuple[str, Ranking]], words: Scored) -> float:
        """A factor on the lane's fusion weight for one query, given the
        lanes' rankings so far and the word lane's scoring: 1 (a subclass
        measures variants: ``benchmarks/ranking.py --covered``)."""
        return 1.0


def expansion(lane: Postings, docs: Sequence[tuple[int, float]], query: Mapping[str, float],
              fb: Feedback, cjk: bool = True) -> dict[str, float]:
    """Expansion terms and their query weights from the (slot, fused score) of
    the feedback documents, best first; the best one weighs ``fb.weight``.
    ``cjk``: the query has CJK text (``fb.terms`` terms and ``fb.max_share``,
    else the ``_latin`` ones)."""
    power = fb.rank_power
    if power:
        by_rank, rank, prev = [], 0, None
        for pos, (s, fused) in enumerate(docs, 1):
            if fused != prev:  # equal fused scores share a rank (and a share)
                rank, prev = pos, fused
            by_rank.append((s, 1 / rank ** power))
        docs = by_rank
    total = sum(w for _, w in docs) or 1.0
    n = max(lane.live, 1)
    max_df = max((fb.max_share if cjk else fb.max_share_latin) * n, fb.max_df_floor)
    idfs: dict[int, float] = {}  # (by document frequency: terms share a few hundred of them)
    dfs: dict[str, int] = {}
    gain: dict[str, float] = {}
    power, single_cjk = fb.idf_power, fb.single_cjk
    for slot, fused in docs:
        length = lane.lengths[slot] or 1
        share = fused / total
        mine: dict[str, float] = {}
        for t, tf, df in lane.vector_df(slot, fb.min_df, max_df):
            if t in query or len(t) == 1 and not single_cjk and is_cjk_char(t):
                continue
            idf = idfs.get(df)  # (vector_df keeps only the terms within min_df..max_df)
            if idf is None:
                idf = idfs[df] = bm25_idf(n, df) ** power
            mine[t] = tf * idf
            dfs[t] = df
        if not mine:
            continue
        div = (length if fb.norm == "length" else length ** 0.5 if fb.norm == "sqrt"
               else max(mine.values()))
        for t, g in mine.items():
            gain[t] = gain.get(t, 0.0) + share * g / div
    want = fb.terms if cjk else fb.terms_latin
    ranked = [(g, t) for t, g in gain.items()]
    top = heapq.nlargest(want, ranked)
    if sum(dfs[t] for _, t in top) > fb.budget:
        top, spent = [], 0
        for g, t in sorted(ranked, reverse=True):
            if spent + dfs[t] <= fb.budget:
                top.append((g, t))
                spent += dfs[t]
                if len(top) == want:
                    break
    if not top:
        return {}
    peak = top[0][0]
    return {t: fb.weight * g / peak for g, t in top}


def answered(words: Postings, bigrams: Postings, query: Mapping[str, float], pairs: Mapping[str, float],
             seeds: Sequence[int], *, fb: Feedback) -> bool:
    """Whether the query's own matches are strong: one of the feedback
    documents ``seeds`` holds every term of the query — each of its words
    (``query``: a word no document has counts as missing, a tag looked up
    whole, ``#…``, is no word) and each of its CJK bigrams (``pairs``: a
    question word, 哪里, is no answer's) — and one of those words is rare in
    the root. The expansion then has no gap to bridge: it may reorder the
    query's matches but adds no document that holds none of the query's words
    (a unique word brought its note's neighbours along)."""
    terms = [t for t in query if not t.startswith("#")]
    if not terms or not seeds:
        return False
    rare = max(fb.rare_share * words.live, fb.rare_floor)
    if not any(0 < words.df(t) <= rare for t in terms):
        return False
    held, held_pairs = words.matched(seeds, terms), bigrams.matched(seeds, pairs)
    return any(len(held[s]) == len(terms) and len(held_pairs[s]) == len(pairs) for s in seeds)


def score(lane: Postings, words: Scored, expanded: Mapping[str, float], mask: Mask, *,
          allowed: Callable[[int], bool] | None, depth: int, prune: bool = True,
          order: Order | None = None) -> list[tuple[float, int]]:
    """The feedback lane's top ``depth``: BM25 of the expanded query (the
    query's words and ``expanded``), reusing the word lane's scores
    (``words``, filled by its ``Postings.score``) so that only the expansion
    terms are scored. A document's score is its word-lane score plus its
    expansion score (summed in a fixed order: the same float with and without
    pruning).

    Pruning: the expansion terms' postings are few (the expansion's
    ``budget``) and are walked whole, so every expansion score is exact. A
    document outside ``words.exact`` scores below the word lane's
    ``depth``-th best on the words, and the expanded query's ``depth``-th
    best is at least that: its word score is found (by probing, or a walk of
    the word's postings when cheaper) only if its bound plus its expansion
    score still reaches the floor."""
    norms = lane.norms()  # (the word lane's, as it scored the query: nothing changes the lane between)
    lengths = lane.lengths
    terms = sorted(lane.weigh(expanded), key=lambda x: (-x[0], x[2]))
    exact, dropped, outside, wtop = words.exact, words.dropped, words.outside, words.top
    complete = not dropped and outside == 0.0  # every document's word score is in ``exact``
    ok: dict[int, bool] = {}

    def is_ok(s: int) -> bool:
        a = ok.get(s)
        if a is None:
            a = ok[s] = allowed(s) if allowed is not None else True
        return a

    def word_bound(s: int) -> float:
        w = exact.get(s)
        return w if w is not None else dropped.get(s, outside)

    # Every expansion term is walked whole: their postings are few (the
    # expansion's ``budget``), and walking them costs less than the
    # bookkeeping MaxScore needs to skip some (a floor over every document
    # the word lane kept, once per term). A document's expansion score is so
    # exact for all, and only its word score may need finding (below).
    exp: dict[int, float] = {}
    for w, _, _, runs in terms:
        walk(exp, w, runs, norms=norms, lengths=lengths, mask=mask)
    # the word lane left out a tie at its cut (no ``order``: ``whole_ties``):
    # more than ``depth`` documents score ``cut`` or more here too
    split = len(wtop) < depth and words.cut >= 0
    ff = words.cut if prune else -1.0
    # The top: documents with an expansion score, and the word lane's top for
    # the rest. A document with neither scores its word score, which is no
    # more than the word lane's depth-th best: the top has depth documents at
    # least as good.
    get = exact.get
    # (below the floor a document with a word score cannot be in the top: no pair made for it)
    out = [(f, s) for s, sc in exp.items() if (ws := get(s)) is not None and (f := ws + sc) >= ff]
    out += [x for x in wtop if x[1] not in exp]
    rest_docs = [(sc, s) for s, sc in exp.items() if s not in exact]
    if rest_docs and not complete:  # (only when pruning: an exhaustive word lane knows every score)
        # the floor: the depth-th best of the scores known (allowed ones)
        known = [f for f, s in out if is_ok(s)]
        if len(known) >= depth:
            ff = max(ff, nth(known, depth))
        # the allowed documents whose bound still reaches it: their word
        # scores, found together
        need = {s: sc for sc, s in rest_docs if word_bound(s) + sc >= ff and is_ok(s)}
        if need:
            got = _word_scores(lane, words, need, norms)
            out += [(got[s] + sc, s) for s, sc in need.items()]
    elif rest_docs:  # (every document's word score is known: none outside has a word)
        out += rest_docs
    # (what is below the floor cannot be in the top: the sort is of the rest)
    out = [x for x in out if x[0] >= ff and is_ok(x[1])] if allowed is not None or ff > 0 else out
    if split:  # (the tie's documents are not in ``out``: a tie split again, left out, and none below it)
        out = [x for x in out if x[0] > words.cut]
    out.sort(reverse=True)
    return whole_ties(out, depth, order)


def _word_scores(lane: Postings, words: Scored, docs: Mapping[int, float],
                 norms: Norms) -> dict[int, float]:
    """The word-lane scores of ``docs``, summed in the lane's order of terms
    from 0.0 (the same floats as the lane's own sums: 0.0 + x is x)."""
    acc = dict.fromkeys(docs, 0.0)
    for w, runs in words.terms:
        probe_or_walk(acc, w, runs, sum(hi - lo for _, _, lo, hi in runs), norms=norms, lengths=lane.lengths,
                      tf_of=lane.tf)
    return acc
