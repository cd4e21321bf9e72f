"""How a hit answers a query, and how a memory is shown: what ``context``
and ``about`` share (the relevance floor's measure, the tie-break no recall
changes, the block's escaping and dates).
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Iterable, Mapping

from ..search import query as S
from ..model.entry import Entry
from ..errors import ParseError
from .catalog import created_ts
from ..search.index import Index
from ..search.postings import bm25_idf

HITS = 20  # search hits looked at for "what this reminds me of"


def escape(s: Any) -> str:
    """Memory text as one inert line of the block."""
    return " ".join(str(s).split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class StableTiebreak(S.Tiebreak):
    """Ties broken by value, then age: nothing a recall changes."""

    def __call__(self, eid: str) -> tuple[float, ...]:
        e = self.entries[eid]
        return (e.value, -created_ts(e))


def relevance(index: Index, words: Mapping[str, float], bigrams: Mapping[str, float],
              matched: Iterable[str]) -> float:
    """How much of the query a hit covers, 0–1: in each lane, the IDF-weighted
    share of the query's terms it has, against the best any memory could have
    (all of them); the better lane counts (jieba may cut a Chinese query
    otherwise than the note, the bigrams still meet). A query term no memory
    has counts at the highest IDF, so a query of words nobody wrote covers
    little whatever it happens to share. Rank fusion's scores cannot say
    this: the first hit of any query scores the same."""
    n = max(len(index), 1)
    have = set(matched)
    best = 0.0
    for lane, q in (("words", words), ("bigrams", bigrams)):
        got = total = 0.0
        for t, w in q.items():
            df = index.df(t, lane)
            idf = bm25_idf(n, df)
            if t in have:
                got += idf * w
            if not t.startswith("#"):  # a tag or CJK run taken whole: a bonus, never a demand
                total += idf * w
        if total:
            best = max(best, min(1.0, got / total))
    return best


def created_date(e: Entry, tz: _dt.tzinfo) -> str:
    try:
        return e.created.astimezone(tz).date().isoformat()
    except (ParseError, KeyError, OverflowError, ValueError):
        return "unknown date"
