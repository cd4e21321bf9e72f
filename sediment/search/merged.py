"""Hits of several indexes (roots) ranked together: a weight that means the
same in every one of them, and the merge of their lists by it.

Scores of two indexes are not comparable (each lane's BM25 weighs a term by
its rarity in its own index; reciprocal-rank fusion makes every index's first
hit alike). ``Weigher`` weighs a hit by the query's terms it holds, each by
its inverse document frequency (BM25's) counted over all the indexes
together; ``merge`` merges the indexes' lists by it, each list's own order
kept. Used by ``verbs.shared`` (search), ``agent.context`` and ``agent.about``.
"""

from __future__ import annotations

import math
from collections import Counter
from contextlib import AbstractContextManager
from typing import Iterable, Mapping, Protocol, Sequence, TypeVar

from .index import Index
from .postings import bm25_idf
from .query import query_terms
from .tokenize import Tokenizer

T = TypeVar("T")
LANES = ("words", "bigrams")


class Held(Protocol):
    """A view held for reading, as the weight needs it."""
    @property
    def tokenizer(self) -> Tokenizer: ...
    @property
    def index(self) -> Index: ...


class Readable(Protocol):
    """A view (``View``): held for one reader's call by ``reading()``."""
    def reading(self) -> AbstractContextManager[Held]: ...


def weigher(query: str, views: Sequence[Readable]) -> "Weigher":
    """The ``Weigher`` of ``query`` over every one of ``views`` (one per root;
    the terms as the first one's tokenizer makes them), each held for
    reading while it is counted."""
    with views[0].reading() as view:
        w = Weigher(*query_terms(view.tokenizer, query))
    for v in views:
        with v.reading() as view:
            w.count(view.index)
    return w


class Weigher:
    """How much of a query a hit holds, in a currency every index shares: the
    summed IDF of the query's terms (``words``, ``bigrams``: term → weight, as
    ``query.query_terms`` makes them) it holds, each term's document frequency
    and the number of documents counted over every index ``count`` was given."""

    def __init__(self, words: Mapping[str, float], bigrams: Mapping[str, float]) -> None:
        self.terms = {"words": dict(words), "bigrams": dict(bigrams)}
        self.n = 0
        self.df: Counter[tuple[str, str]] = Counter()
        self._weights: dict[str, float] | None = None

    def count(self, index: Index) -> None:
        """Count one index's documents and its frequencies of the query's terms
        (the caller holds its view for reading)."""
        self.n += len(index)
        for lane, terms in self.terms.items():
            for t in terms:
                self.df[lane, t] += index.df(t, lane)
        self._weights = None

    def __call__(self, index_terms: Iterable[str]) -> float:
        """The weight of a hit holding ``index_terms`` (the index's terms: a
        hit's ``index_terms``, a memory's own terms)."""
        if self._weights is None:
            self._weights = {}
            for lane in LANES:
                for t, w in self.terms[lane].items():
                    idf = bm25_idf(self.n, self.df[lane, t])
                    self._weights[t] = self._weights.get(t, 0.0) + w * idf  # (a CJK word is a bigram too)
        weights = self._weights
        return sum(weights.get(t, 0.0) for t in set(index_terms))


def merge(lists: Sequence[Sequence[T]], weights: Sequence[Sequence[float]]) -> list[T]:
    """The lists (each in its own index's order) merged into one, by weight.

    A list's order stands: each item is merged with the best weight of it
    and of what follows it in its list (its index ranks it above those), so
    the lists merge as the sorted lists they then are. Equal weights keep
    the lists' order (the first list first).

    >>> merge([["a1", "a2"], ["b1"]], [[1.0, 3.0], [2.0]])
    ['a1', 'a2', 'b1']
    >>> merge([["a1"], ["b1"]], [[1.0], [2.0]])
    ['b1', 'a1']
    """
    keyed: list[tuple[float, int, int, T]] = []
    for li, (items, ws) in enumerate(zip(lists, weights, strict=True)):
        best = -math.inf
        envelope = [0.0] * len(ws)
        for i in range(len(ws) - 1, -1, -1):
            best = max(best, ws[i])
            envelope[i] = best
        keyed += [(-envelope[i], li, i, x) for i, x in enumerate(items)]
    keyed.sort(key=lambda k: k[:3])
    return [k[3] for k in keyed]
