"""Plain lexical readers to measure sediment's ranking against, in the same run
over the same texts (issue 31).

* "BM25 bigrams": Okapi BM25 (``rank_bm25.BM25Okapi``, k1 = 1.5, b = 0.75)
  over character bigrams, as ``bench_cmrc.py`` builds it (``bench_cmrc.bigrams``);
* "RRF(jieba, bigram)": reciprocal rank fusion, K = 60, of BM25 over jieba words
  (``jieba.lcut``, the pure-Python cut, lower-cased, tokens with a word
  character) and that bigram BM25: score = Σ 1 / (K + rank in the lane).

A reader returns only the documents that share a token with the question
(BM25 score > 0; in the fusion, in either lane), best first, ties in document
order, at most ``depth`` of them: an empty list means no shared token.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence

from bench_cmrc import bigrams

RRF_K = 60
_WORD = re.compile(r"\w")


def jieba_words(text: str) -> list[str]:
    import jieba
    jieba.setLogLevel(logging.WARNING)
    return [w for w in jieba.lcut(text.lower()) if _WORD.search(w)]


class Lane:
    """BM25 over one tokenizer; ``ranked(query)`` = the matching documents, best first."""

    def __init__(self, texts: Sequence[str], tok: Callable[[str], list[str]]) -> None:
        from rank_bm25 import BM25Okapi
        self.tok = tok
        self.bm = BM25Okapi([tok(t) for t in texts], k1=1.5, b=0.75)

    def ranked(self, query: str) -> list[int]:
        scores = self.bm.get_scores(self.tok(query))
        hits = [i for i, s in enumerate(scores) if s > 0]
        return sorted(hits, key=lambda i: -scores[i])  # stable: ties in document order


def fuse(rankings: Sequence[list[int]], k: int = RRF_K) -> list[int]:
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, 1):
            score[doc] = score.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(score, key=lambda d: (-score[d], d))


class Readers:
    """The plain readers over one memory's texts: ``{name: query -> ranked doc indexes}``."""

    names = ("RRF(jieba, bigram)", "BM25 bigrams")

    def __init__(self, texts: Sequence[str], depth: int = 50) -> None:
        self.bigram = Lane(texts, bigrams)
        self.words = Lane(texts, jieba_words)
        self.depth = depth

    def rank(self, query: str) -> dict[str, list[int]]:
        bi = self.bigram.ranked(query)
        return {"RRF(jieba, bigram)": fuse([self.words.ranked(query), bi])[:self.depth],
                "BM25 bigrams": bi[:self.depth]}
