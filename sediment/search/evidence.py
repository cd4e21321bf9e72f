"""What a search returns: what has evidence for the question.

Rank fusion cannot say whether a root answers a question at all: the first
hit of any query scores alike. "How many moons does Jupiter have?" asked of a
conversation about adoption found ten turns, through "many" and the feedback
lane's expansion of them. ``covering`` can say it: the IDF-weighted share of
the query a hit holds, a word no memory has counting at the highest IDF, so a
question of words nobody wrote is covered little by whatever it happens to
share.

When no direct hit covers ``ANSWERED`` of the query, the root does not
really answer it, and only the direct hits stay: a match of the query's own
words, or a further lane's finding by meaning (the semantic lane's similarity
above its floor). What query expansion brought goes, and so does a lane's
tail. A question the root answers keeps every hit, expansion's included (its
second hops). A rare word alone does not make an answer: "fitatovax dose"
asked of a root where one note names fitatovax and none a dose finds that
note, not what its other words bring (a rare-word exemption put the
off-topic questions back at 2.1 to 2.9 hits: "gold" in one turn is a rare
word of "What is the chemical symbol for gold?").

Measured on LoCoMo's ten conversations with the 120 frozen off-topic
questions (benchmarks/bench_offtopic.py --conv all; benchmarks/README.md,
"Ranking choices"): the off-topic questions' average hits 3.55 → 2.07, the
on-topic ones' turn R@10 0.6467 → 0.6464 and session R@10 0.9242 → 0.9238
(simulated on the same runs' lists).

A direct hit covering under ``TENTH`` of such a question (one common word
of it: "table" of "What is the chemical symbol of gold in the periodic
table?") goes too when its memory is one passage (``PASSAGE`` index terms):
a short note sharing so little is about something else. A longer memory
stays, as its one line may be the answer: dropping every such hit cost
LoCoMo's session level R@10 0.012, where a match of one word of many is
most of what finds a session. Off-topic hits 2.07 → 1.95 (English 4.13 →
3.89), turn R@10 0.6461 → 0.6459, sessions the same.

With the semantic lane on, one word of many has a second witness: whether
the question stands out among the memory's own similarities to the corpus
(``rank.Lane.unlike``; semantic/hubs.py). A direct hit covering under
``SLIVER`` of a question the root does not answer goes when the lane is
against it; a memory the lane read only the opening of (a session, longer
than the encoder's window) is not judged, so the session level keeps its
one-word matches. Measured the same way, lane on: off-topic hits 2.33 →
1.91 (English 4.32 → 3.47), on-topic turn R@10 0.647 both (LoCoMo fused,
limit 50: turn 0.648 → 0.649, session 0.923 both). Simulated and not taken:
the lane's say over every weak hit, whatever its cover (English 3.63, turn
R@10 −0.002), or from a standing of 1 (2.96, −0.002).
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping, Protocol, Sequence, TypeVar

from .postings import bm25_idf


class Counts(Protocol):
    """What ``covering`` reads of the index (``index.Index``: taken as a
    Protocol, so that this module adds no floor under ``search.query``)."""

    def __len__(self) -> int: ...
    def df(self, term: str, lane: str = "words") -> int: ...
    def length(self, key: str, lane: str = "words") -> int: ...


class Found(Protocol):
    """A hit as the index returns it (``index.Hit``)."""

    @property
    def key(self) -> str: ...
    @property
    def terms(self) -> tuple[str, ...]: ...
    @property
    def direct(self) -> bool: ...


H = TypeVar("H", bound=Found)

ANSWERED = 0.5  # a direct hit covering this share of the query: the root answers it
SLIVER = 0.2  # a direct hit covering less: a common word of the query, which a further lane may overrule
TENTH = 0.1  # a direct hit covering less, in a memory of one passage: no evidence by itself
# a memory of at most this many index terms is one passage (about the 1,200
# characters of English the semantic lane reads of a memory, EMBED_CHARS:
# LoCoMo's turns have 9-48, its sessions 197-700)
PASSAGE = 150


def covering(index: Counts, words: Mapping[str, float], bigrams: Mapping[str, float]
             ) -> Callable[[Iterable[str]], float]:
    """How much of the query a hit covers, 0–1, as a function of the hit's
    index terms: in each lane, the IDF-weighted share of the query's terms it
    has, against the best any memory could have (all of them); the better lane
    counts (jieba may cut a Chinese query otherwise than the note, the bigrams
    still meet). A query term no memory has counts at the highest IDF. A tag or
    CJK run looked up whole (``#…``) is a bonus, never a demand; a query of
    nothing else is covered whole. The terms' weights are found once, for
    every hit asked about."""
    n = max(len(index), 1)
    lanes = []
    for lane, q in (("words", words), ("bigrams", bigrams)):
        weighed = {t: bm25_idf(n, index.df(t, lane)) * w for t, w in q.items()}
        total = sum(v for t, v in weighed.items() if not t.startswith("#"))
        if total:
            lanes.append((weighed, total))

    def cover(matched: Iterable[str]) -> float:
        if not lanes:
            return 1.0
        have = set(matched)
        return max(min(1.0, sum(v for t, v in weighed.items() if t in have) / total) for weighed, total in lanes)
    return cover


def with_evidence(hits: Sequence[H], index: Counts, words: Mapping[str, float], bigrams: Mapping[str, float],
                  unlike: Callable[[Sequence[H]], Sequence[bool]] | None = None, *,
                  found: Callable[[H], bool] | None = None) -> list[H]:
    """``hits`` (in order), only the direct ones when no direct hit covers
    ``ANSWERED`` of the query. A query with CJK text keeps every hit: jieba
    cuts a Chinese question into many words its answers need not share
    (新手机, 后来, 毛病: the phone's battery is the second hop), and Chinese
    questions about nothing found nothing to begin with.

    In a question no direct hit answers, a direct hit covering less than
    ``TENTH`` of it goes as well when its memory is one passage
    (``PASSAGE``), unless a further lane ``found`` it by meaning.

    ``unlike`` (a further lane's evidence against a hit: the semantic
    lane's, ``rank.Lane.unlike``): in a question the root does not answer,
    a direct hit covering less than ``SLIVER`` of it (a common word: "many"
    of "How many moons does Jupiter have?") goes too when the lane says it
    is unlike the question. Two weak signals, one for and one against, are
    no answer; either alone keeps the hit (a lexical match the lane cannot
    judge, a memory it has no vector for, stays)."""
    if not hits or bigrams:
        return list(hits)
    cover = covering(index, words, bigrams)
    covers = [cover(h.terms) if h.direct else 0.0 for h in hits]
    if any(c >= ANSWERED for c in covers):
        return list(hits)
    # a memory of one passage sharing under a tenth of the question (one
    # common word of it) is no answer; a longer one may hold the answer in a
    # passage of its own (a session's one line). What a further lane found
    # by meaning is the lane's to judge.
    direct = [(h, c) for h, c in zip(hits, covers)
              if h.direct and (c >= TENTH or index.length(h.key) > PASSAGE or found is not None and found(h))]
    kept = [h for h, _ in direct]
    weak = [h for h, c in direct if c < SLIVER]
    if unlike is None or not weak:
        return kept
    gone = {id(h) for h, no in zip(weak, unlike(weak)) if no}
    return [h for h in kept if id(h) not in gone]
