"""What a search returns: what has evidence for the question.

Rank fusion cannot say whether a root answers a question at all: the first
hit of any query scores alike. "How many moons does Jupiter have?" asked of a
conversation about adoption found ten turns, through "many" and the feedback
lane's expansion of them. ``coverage`` can say it: the IDF-weighted share of
the query a hit holds, a word no memory has counting at the highest IDF, so a
question of words nobody wrote is covered little by whatever it happens to
share.

When no direct hit covers ``ANSWERED`` of the query, the root does not really
answer it, and a hit stays only on evidence of its own: a direct match that
covers at least ``LEAST`` of it, or a further lane's finding by meaning
(``rank.vouched``: the semantic lane's similarity above its floor). What query
expansion brought, and a match of one common word, go. A question the root
answers keeps every hit, expansion's included (its second hops). A rare
word alone does not make an answer: "fitatovax dose" asked of a root where
one note names fitatovax and none a dose finds that note, not what its other
words bring (a rare-word exemption put the off-topic questions back at 2.05
to 2.9 hits: "gold" in one turn is a rare word of "What is the chemical
symbol for gold?").

Measured on LoCoMo's ten conversations with the 120 frozen off-topic
questions (benchmarks/bench_offtopic.py, benchmarks/README.md "Ranking
choices"): average hits of the off-topic questions 3.55 → 1.95, the
on-topic questions' turn R@10 0.6467 → 0.6462.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from .index import Hit, Index
from .postings import bm25_idf
from .rank import Lane, vouched

ANSWERED = 0.5  # a direct hit covering this share of the query: the root answers it
LEAST = 0.1  # else a direct hit covering less is no evidence (one common word of the question)


def coverage(index: Index, words: Mapping[str, float], bigrams: Mapping[str, float],
             matched: Iterable[str]) -> float:
    """How much of the query a hit covers, 0–1: in each lane, the IDF-weighted
    share of the query's terms it has (``matched``: its index terms), against
    the best any memory could have (all of them); the better lane counts
    (jieba may cut a Chinese query otherwise than the note, the bigrams still
    meet). A query term no memory has counts at the highest IDF. A tag or CJK
    run looked up whole (``#…``) is a bonus, never a demand; a query of
    nothing else is covered whole."""
    n = max(len(index), 1)
    have = set(matched)
    best, asked = 0.0, False
    for lane, q in (("words", words), ("bigrams", bigrams)):
        got = total = 0.0
        for t, w in q.items():
            idf = bm25_idf(n, index.df(t, lane))
            if t in have:
                got += idf * w
            if not t.startswith("#"):
                total += idf * w
        if total:
            asked = True
            best = max(best, min(1.0, got / total))
    return best if asked else 1.0


def with_evidence(hits: list[Hit], index: Index, words: Mapping[str, float], bigrams: Mapping[str, float],
                  lanes: Sequence[Lane]) -> list[Hit]:
    """``hits`` (in order), less those without evidence of their own when no
    direct hit covers ``ANSWERED`` of the query. A query with CJK text keeps
    every hit: jieba cuts a Chinese question into many words its answers need
    not share (新手机, 后来, 毛病: the phone's battery is the second hop), and
    Chinese questions about nothing found nothing to begin with."""
    if not hits or bigrams:
        return hits
    cover = [coverage(index, words, bigrams, h.terms) if h.direct else 0.0 for h in hits]
    if max(cover) >= ANSWERED:
        return hits
    slot_of = index.slot_of
    return [h for h, c in zip(hits, cover)
            if h.direct and (c >= LEAST or vouched(lanes, h.lanes, slot_of[h.key]))]
