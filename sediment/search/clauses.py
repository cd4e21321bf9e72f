"""Two questions in one (issue 31, pattern 2).

"我舅舅今年多大了？另外，上个月的读书会来了多少人？" is two questions. Asked as one,
the half whose words are commoner in the memory (今年, 多少, 上个月) brings
more matches, and the other half's answers fall behind them. Each clause is
asked on its own (its own lanes, its own feedback) and the rankings are merged
by each hit's fused score over the best of its own question's (``by_share``:
each question's first is 1; equal shares by the fused score, a memory in
both lists at its best), so each half's best answers are near the top and a
close second of one half is not pushed below the other's tail. Interleaving
the rankings (the first of each, then the second of each: benchmarks/
ranking_table.py's ``merge=interleave``) was measured and not taken: a half's
answer ranked third on its own lands sixth.

What counts as a second question, so that one question is never split:

* a second question mark: the text up to each "?"/"？" is a question, when at
  least two of them have words of their own ("你知道 SaaS 是什么吗？介绍一下。"
  is one question and a request: only one part ends with a question mark);
* a clause joiner at the start of a clause, after a comma or semicolon:
  另外 / 还有 / 以及 / 对了 / 顺便问一下, and in English "also", "btw", "by the
  way", "and what about", "and" before a question word
  ("How old is Lily, and where does she live?"), when the clauses on both
  sides ask something (a question word: "除了电话窃听，还有哪些东西容易被窃听？"
  is one question);
* and each question has at least two terms of its own: "…, and how does he
  address them?" leans on the clause before it (its one term, "address",
  asked alone would bring whatever mentions it), so the query stays whole.

A joiner at a clause's start is dropped from it (it is no word of either
question). Pure: text in, texts out.
"""

from __future__ import annotations

import re
from typing import Callable, Sequence, TypeVar

H = TypeVar("H")

_ZH_JOINERS = "另外|还有|以及|对了|顺便问一下|顺便问下|顺便说一下|顺便"
_EN_JOINERS = (r"also|btw|by the way|and what about|what about"
               r"|and(?=\s+(?:what|where|when|who|whom|whose|which|why|how)\b)")
# a joiner that opens a clause: at the start, or after a clause's punctuation
_JOINER_AT = re.compile(rf"(?:^|(?<=[,;，；、]))\s*(?:{_ZH_JOINERS}|(?i:{_EN_JOINERS})\b)\s*[,，:：]?\s*")
_JOINER_START = re.compile(rf"^\s*(?:{_ZH_JOINERS}|(?i:{_EN_JOINERS})\b)\s*[,，:：]?\s*")
_QUESTION_END = re.compile(r"(?<=[?？])")
# what makes a clause a question when a joiner, not a question mark, cut it
_ASKS = re.compile(r"什么|哪|多少|几|吗|谁|怎么|为什么|多大|多久|多长|如何|是否|呢|[?？]"
                   r"|(?i:\b(?:what|where|when|who|whom|whose|which|why|how)\b)"
                   r"|(?i:^\s*(?:is|are|was|were|do|does|did|can|could|will|would|should|have|has)\b)")
# the terms a clause needs of its own to be asked alone
MIN_TERMS = 2


def _strip(clause: str) -> str:
    return _JOINER_START.sub("", clause).strip(" ,，;；")


def split(query: str, terms: Callable[[str], int] = lambda s: len(re.findall(r"\w+", s))) -> list[str]:
    """The questions ``query`` asks, each without its joiner; ``[query]`` when
    it asks one. ``terms``: how many terms a clause has to search for (the
    tokenizer's; by default its words)."""
    parts = [p for p in _QUESTION_END.split(query) if p.strip()]
    questions = [p for p in parts if p.rstrip().endswith(("?", "？"))]
    if len(questions) >= 2:
        # a part without a question mark belongs to the question after it,
        # or, at the end, to the one before it
        out: list[str] = []
        pending = ""
        for p in parts:
            if p.rstrip().endswith(("?", "？")):
                out.append(pending + p)
                pending = ""
            else:
                pending += p
        if pending:
            out[-1] += pending
    else:
        out = [query]
    clauses = [c for q in out for c in _at_joiners(q)]
    clauses = [c for c in (_strip(c) for c in clauses) if c]
    return clauses if len(clauses) >= 2 and all(terms(c) >= MIN_TERMS for c in clauses) else [query]


def _at_joiners(text: str) -> list[str]:
    """``text`` cut before each clause joiner (not one at its very start)."""
    cuts = [m.start() for m in _JOINER_AT.finditer(text) if m.start() > 0 and text[:m.start()].strip(" ,，;；")]
    pieces, prev = [], 0
    for c in cuts:
        pieces.append(text[prev:c])
        prev = c
    pieces.append(text[prev:])
    if len(pieces) > 1 and not all(_ASKS.search(_strip(p)) for p in pieces):
        return [text]  # (a joiner inside one question: 除了…，还有什么…)
    return pieces


def by_share(rankings: Sequence[Sequence[H]], key: Callable[[H], str], score: Callable[[H], float],
             limit: int) -> list[tuple[H, float]]:
    """Every ranking's items by their score over the first's of their ranking
    (each question's best is 1), each item once (at its best), up to ``limit``."""
    best: dict[str, tuple[float, int, int, H]] = {}
    for n, r in enumerate(rankings):
        top = score(r[0]) if r else 0.0
        for i, h in enumerate(r):
            share = score(h) / top if top > 0 else 0.0
            k = key(h)
            if k not in best or (-share, i, n) < (-best[k][0], best[k][1], best[k][2]):
                best[k] = (share, i, n, h)
    order = sorted(best.values(), key=lambda v: (-v[0], -score(v[3]), v[1], v[2]))
    return [(h, share) for share, _, _, h in order[:limit]]
