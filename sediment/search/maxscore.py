"""The scoring loop of a lane (``bm25``): a query's terms summed over their
postings, with MaxScore pruning (Turtle & Flood 1995), and the top lists
taken from the sums. Pure; the loop knows postings only as runs of (slots,
frequencies) and is given each term's weight, so the BM25 formula's
constants stay with the lane (``postings.Postings.weigh`` and ``norms``).

* Terms are taken highest bound first (the rare ones). Once the terms left
  cannot lift a document that has none of the terms so far into the top
  ``depth``, the common terms' long posting lists are only probed (or walked)
  for the documents already in the running.
* The rare-term ranking (a document's sum of the idfs of the terms it has)
  depends only on which terms a document has: when pruning it is found from
  the subsets of the query's terms by set operations (``rare_top``), so that
  it never keeps a common term's list walking for its sake.
* A top list is cut at the ``depth``-th best score, found by a heap over the
  scores, before any (score, slot) pair is made (``top_of``).

Every sum is made in the same order with and without pruning: the top lists
are the same, score for score. A term's walk over its postings (``walk``) and
its probe-or-walk for the documents in the running (``probe_or_walk``) are the
feedback lane's steps too (``feedback.score``). The rest of Python's cost here is one step per
posting walked, which is what the pruning saves. ``bm25`` scores a lane
(``postings.Postings``, the data below this module) with it.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Callable, Iterable, Iterator, Mapping, Sequence

from .postings import Impact, Postings, Run
from .toplist import Order, nth, top_of

if TYPE_CHECKING:
    from array import array
from .rank import Mask

# upper bounds are inflated by this much, so that rounding can never make a
# pruned document's true score exceed its bound
_SAFE = 1 + 1e-9
# a probe (bisection) costs about this many steps of walking a posting list
_PROBE_COST = 6
# the rare-term ranking is found by subsets of the query's terms up to this
# many terms (2^n - 1 subsets), else summed in the walk
_SUBSETS_UP_TO = 8
# BM25's constants as the loops take them: (k1 (1 - b), k1 b / average length, k1 + 1, δ)
Norms = tuple[float, float, float, float]
# a query term as a lane weighs it: (query weight × idf, idf, term, its runs)
Weighed = tuple[float, float, str, list[Run]]


class Scored:
    """What ``Postings.score`` knew at the end, for a further query that adds
    terms to the same ones (the feedback lane): the exact score of every
    document still in the running (``exact``); for those dropped on the way,
    a bound their score is below (``dropped``); for every other document, the
    bound ``outside`` (0: they have none of the terms). Every bound is below
    the lane's ``depth``-th best score. ``terms``: (query weight × idf, runs)
    in the order scores were summed, so that a score found again by probing
    is the same float; ``top``, the lane's top list, and ``cut``, its
    ``depth``-th best score (-1: fewer documents), which ``top`` stops above
    when a tie the cut would split was left out (``toplist.whole_ties``)."""

    __slots__ = ("exact", "dropped", "outside", "terms", "top", "cut")

    def __init__(self) -> None:
        self.top: list[tuple[float, int]] = []  # the lane's own top list
        self.cut = -1.0
        self.exact: dict[int, float] = {}
        self.dropped: dict[int, float] = {}
        self.outside = 0.0
        self.terms: list[tuple[float, list[Run]]] = []


def bm25(lane: Postings, qterms: Mapping[str, float], mask: Mask, allowed: Callable[[int], bool] | None,
         depth: int, *, rare: bool = False, prune: bool = True, state: Scored | None = None,
         order: Order | None = None) -> tuple[list[tuple[float, int]], list[tuple[float, int]]]:
    """BM25 over the ``lane``'s slots whose ``mask`` byte is set: the top
    ``depth`` (score, slot) (``Postings.matched`` tells which terms a slot
    has). With ``rare``, in the same pass, the rare-term ranking too: the sum
    of the IDFs of the query terms a document has, blind to how often and how
    long (it rewards covering more, and rarer, words of the query). ``prune``
    changes the cost, never the result. ``state`` (if given) is filled with
    what a further query over the same terms can reuse (``Scored``).
    ``order`` settles ties at the BM25 list's cut (``whole_ties``)."""
    return score(lane.weigh(qterms), lane.norms(), lane, mask, allowed=allowed, depth=depth,
                 rare=rare, prune=prune, state=state, order=order)


def score(terms: list[Weighed], norms: Norms, lane: Postings, mask: Mask, *, allowed: Callable[[int], bool] | None,
          depth: int, rare: bool = False, prune: bool = True, state: Scored | None = None,
          order: Order | None = None) -> tuple[list[tuple[float, int]], list[tuple[float, int]]]:
    """The top ``depth`` (score, slot) of the documents whose ``mask`` byte
    is set, for ``terms`` (weight × idf, idf, term, runs), with BM25's
    ``norms`` (k1 (1 - b), k1 b / avg length, k1 + 1, δ); the ``lane``'s
    lengths, its probe of a slot's frequency in runs (``tf``) and its long
    runs in impact order (``impact``: the last term is read best first,
    ``by_impact``). With ``rare``, the rare-term
    ranking too (a document's sum of the idfs of the terms it has). See ``bm25``."""
    lengths, tf_of, impact = lane.lengths, lane.tf, lane.impact
    # highest upper bound first: the common terms come last, where pruning skips them
    terms = sorted(terms, key=lambda x: (-x[0], x[2]))
    if rare and prune and len(terms) <= _SUBSETS_UP_TO:
        # the rare-term ranking apart, from which terms each document has:
        # the BM25 ranking alone then decides how much is walked
        top, _ = score(terms, norms, lane, mask, allowed=allowed, depth=depth, prune=prune, state=state,
                       order=order)
        return top, rare_top([(idf, runs) for _, idf, _, runs in terms], tf_of, mask, allowed, depth)
    rest_w, rest_idf, rest_n = _bounds(terms, norms)
    floors = _Floors(allowed, depth)
    acc: dict[int, float] = {}
    cover: dict[int, float] = {}
    i = 0
    fw = fr = -1.0  # floors found so far: lower bounds of the final ones
    outside = -1.0  # (set: the bound of the last term's postings not read, ``by_impact``)
    while i < len(terms):
        # worth a look only when the postings left outweigh a pass over ``acc``
        if prune and i and len(acc) >= depth and rest_n[i] > len(acc):
            if rest_w[i] >= fw:
                fw = floors.of(acc)
            if rest_w[i] < fw:
                if rare and rest_idf[i] >= fr:
                    fr = floors.of(cover)
                if not rare or rest_idf[i] < fr:
                    break  # no document outside ``acc`` can reach either top list
        w, idf, _, runs = terms[i]
        if prune and not rare and i == len(terms) - 1 \
                and len(acc) * _PROBE_COST < rest_n[i] and any(impact(r) for r in runs):
            # the last, commonest term, whose postings would all be walked
            # (fewer documents in the running than ``depth``): best first
            outside = by_impact(acc, w, runs, impact, norms=norms, lengths=lengths, mask=mask, tf_of=tf_of,
                                floors=floors)
            i += 1
            break
        if rare and acc:  # both rankings in one pass over the postings
            walk_both(acc, cover, w, idf, runs, norms=norms, lengths=lengths, mask=mask)
        else:
            walk(acc, w, runs, norms=norms, lengths=lengths, mask=mask)
            if rare:  # (the first term)
                cover = dict.fromkeys(acc, idf)
        i += 1
    dropped: dict[int, float] = {}
    for j in range(i, len(terms)):
        # the documents still in the running; those that cannot reach
        # either top list any more are dropped, and probed no further
        acc, cover = _keep(acc, cover, rest_w[j], rest_idf[j], floors=floors, rare=rare,
                           dropped=dropped if state is not None else None)
        w, idf, _, runs = terms[j]
        probe_or_walk(acc, w, runs, rest_n[j] - rest_n[j + 1], norms=norms, lengths=lengths, tf_of=tf_of,
                      cover=cover if rare else None, idf=idf)
    mine = floors.mine(acc)
    top = top_of(mine, depth, order)
    top_rare = top_of(cover if allowed is None else {s: cover[s] for s in mine}, depth) if rare else []
    if state is not None:
        state.exact, state.dropped, state.top = acc, dropped, top
        state.cut = top[-1][0] if len(top) >= depth else nth(mine, depth)
        state.outside = outside if outside >= 0 else rest_w[i] if i < len(terms) else 0.0
        state.terms = [(w, runs) for w, _, _, runs in terms]
    return top, top_rare


def _bounds(terms: list[Weighed], norms: Norms) -> tuple[list[float], list[float], list[int]]:
    """For each ``i``, what the terms from ``i`` on can still add to a
    document's BM25 sum (a term's tf part is below k1 + 1 + δ) and to its
    rare-term sum, and how many of their postings are left to walk."""
    _, _, k1p, delta = norms
    n = len(terms)
    rest_w, rest_idf, rest_n = [0.0] * (n + 1), [0.0] * (n + 1), [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        w, idf, _, runs = terms[i]
        rest_w[i] = rest_w[i + 1] + w * (k1p + delta) * _SAFE
        rest_idf[i] = rest_idf[i + 1] + idf * _SAFE
        rest_n[i] = rest_n[i + 1] + sum(hi - lo for _, _, lo, hi in runs)
    return rest_w, rest_idf, rest_n


class _Floors:
    """The ``depth``-th best score among the allowed documents of a running
    sum (-1 while there are fewer): a bound the final one never falls below.
    ``allowed`` is asked once per document."""

    __slots__ = ("allowed", "depth", "ok")

    def __init__(self, allowed: Callable[[int], bool] | None, depth: int) -> None:
        self.allowed, self.depth = allowed, depth
        self.ok: dict[int, bool] = {}

    def of(self, scores: dict[int, float]) -> float:
        allowed = self.allowed
        if allowed is None:
            return nth(scores, self.depth)
        ok, found = self.ok, 0
        for s in sorted(scores, key=scores.__getitem__, reverse=True):
            a = ok.get(s)
            if a is None:
                a = ok[s] = allowed(s)
            found += a
            if found == self.depth:
                return scores[s]
        return -1.0

    def mine(self, scores: dict[int, float]) -> dict[int, float]:
        """The allowed documents of ``scores`` (``scores`` itself when all are)."""
        allowed, ok = self.allowed, self.ok
        if allowed is None:
            return scores
        return {s: sc for s, sc in scores.items() if (ok[s] if s in ok else allowed(s))}


def _keep(acc: dict[int, float], cover: dict[int, float], rw: float, ri: float, *, floors: _Floors, rare: bool,
          dropped: dict[int, float] | None) -> tuple[dict[int, float], dict[int, float]]:
    """The documents of ``acc`` (and their ``cover``) that can still reach
    either top list with ``rw`` more to their BM25 sum and ``ri`` to their
    rare-term sum; each one dropped noted in ``dropped`` (if given) with the
    bound its score stays below."""
    fw = floors.of(acc)
    fr = floors.of(cover) if rare else 0.0
    keep = [s for s, sc in acc.items() if sc + rw >= fw or rare and cover[s] + ri >= fr]
    if len(keep) == len(acc):
        return acc, cover
    if dropped is not None:
        for s, sc in acc.items():
            if sc + rw < fw and not (rare and cover[s] + ri >= fr):
                dropped[s] = sc + rw
    return {s: acc[s] for s in keep}, ({s: cover[s] for s in keep} if rare else cover)


def by_impact(acc: dict[int, float], w: float, runs: list[Run], impact: Callable[[Run], Impact | None], *,
              norms: Norms, lengths: Sequence[int], mask: Mask, tf_of: Callable[[int, list[Run]], int],
              floors: _Floors) -> float:
    """Add a query's last term (``w``: weight × idf) to ``acc`` for every
    document that can reach the top ``depth``: those in the running probed,
    the others (this term alone) read in impact order (``Postings.impact``,
    the frequencies merged by their next part) until the next part is below
    the ``depth``-th best score found (allowed ones). A common word's list is
    read only as far as its best documents go. Returns the part that
    stopped the reading, a bound of every document not read (0.0: none)."""
    norm_a, norm_b, k1p, delta = norms
    best = _Best(floors)
    for s in acc:  # (the same float as a walk: acc[s] + the term's part)
        tf = tf_of(s, runs)
        if tf:
            acc[s] += w * (k1p * tf / (tf + norm_a + norm_b * lengths[s]) + delta)
        best.add_slot(s, acc[s])
    seen = set(acc)
    heads: list[tuple[float, int, int, int, array[int]]] = []  # (-part, next, end, tf, order)
    for run in runs:
        got = impact(run)
        if got is None:  # (a delta run, or a short one: walked)
            slots, tfs, lo, hi = run
            for s, tf in zip(slots[lo:hi], tfs[lo:hi]):
                if mask[s] and s not in seen:
                    sc = acc[s] = w * (k1p * tf / (tf + norm_a + norm_b * lengths[s]) + delta)  # (0.0 + x is x)
                    best.add_slot(s, sc)
            continue
        order, groups = got
        heads += [(-w * (k1p * tf / (tf + norm_a + norm_b * lengths[order[a]]) + delta), a, b, tf, order)
                  for tf, a, b in groups]
    heapq.heapify(heads)
    while heads:
        neg, a, b, tf, order = heads[0]
        if -neg < best.floor():
            return -neg  # (a frequency's parts fall as its documents lengthen: none after reaches the floor)
        s = order[a]
        if mask[s] and s not in seen:
            acc[s] = -neg  # (its part, the walk's float: 0.0 + x is x)
            best.add_slot(s, -neg)
        if a + 1 < b:
            part = w * (k1p * tf / (tf + norm_a + norm_b * lengths[order[a + 1]]) + delta)
            heapq.heapreplace(heads, (-part, a + 1, b, tf, order))
        else:
            heapq.heappop(heads)
    return 0.0


class _Best:
    """``by_impact``'s floor: the ``depth``-th best score of the allowed documents seen (-1 while fewer)."""
    __slots__ = ("floors", "heap")

    def __init__(self, floors: _Floors) -> None:
        self.floors, self.heap = floors, []  # type: ignore[var-annotated]

    def add(self, sc: float) -> None:
        heap = self.heap
        if len(heap) < self.floors.depth:
            heapq.heappush(heap, sc)
        elif sc > heap[0]:
            heapq.heapreplace(heap, sc)

    def add_slot(self, s: int, sc: float) -> None:
        f = self.floors
        if f.allowed is not None:
            if len(self.heap) >= f.depth and sc <= self.heap[0]:
                return  # (cannot raise the floor: whether it is allowed does not matter)
            a = f.ok.get(s)
            if a is None:
                a = f.ok[s] = f.allowed(s)
            if not a:
                return
        self.add(sc)

    def floor(self) -> float:
        return self.heap[0] if len(self.heap) >= self.floors.depth else -1.0


def walk(acc: dict[int, float], w: float, runs: list[Run], *, norms: Norms, lengths: Sequence[int],
         mask: Mask) -> None:
    """Add a term's BM25 part (``w``: query weight × idf) to ``acc`` for
    every document of its postings whose ``mask`` byte is set."""
    norm_a, norm_b, k1p, delta = norms
    if not acc:  # nothing to add to (a slot is in one run of a term; 0.0 + x
        # is x, so the sums are the same floats): one comprehension
        for slots, tfs, lo, hi in runs:
            acc.update({s: w * (k1p * tf / (tf + norm_a + norm_b * lengths[s]) + delta)
                        for s, tf in zip(slots[lo:hi], tfs[lo:hi]) if mask[s]})
        return
    get = acc.get
    for slots, tfs, lo, hi in runs:
        for s, tf in zip(slots[lo:hi], tfs[lo:hi]):
            if mask[s]:
                acc[s] = get(s, 0.0) + w * (k1p * tf / (tf + norm_a + norm_b * lengths[s]) + delta)


def walk_both(acc: dict[int, float], cover: dict[int, float], w: float, idf: float, runs: list[Run], *,
              norms: Norms, lengths: Sequence[int], mask: Mask) -> None:
    """``walk``, and the term's ``idf`` added to ``cover`` (the rare-term
    sums) for the same documents, in the same pass over its postings."""
    norm_a, norm_b, k1p, delta = norms
    acc_get, cover_get = acc.get, cover.get
    for slots, tfs, lo, hi in runs:
        for s, tf in zip(slots[lo:hi], tfs[lo:hi]):
            if mask[s]:
                acc[s] = acc_get(s, 0.0) + w * (k1p * tf / (tf + norm_a + norm_b * lengths[s]) + delta)
                cover[s] = cover_get(s, 0.0) + idf


def probe_or_walk(acc: dict[int, float], w: float, runs: list[Run], size: int, *, norms: Norms,
                  lengths: Sequence[int], tf_of: Callable[[int, list[Run]], int],
                  cover: dict[int, float] | None = None, idf: float = 0.0) -> None:
    """Add a term's BM25 part to the documents already in ``acc`` only (and
    its ``idf`` to their ``cover``, if given): its ``size`` postings are
    probed for each document, or walked once when that is cheaper."""
    norm_a, norm_b, k1p, delta = norms
    if len(acc) * _PROBE_COST < size:
        for s in acc:
            tf = tf_of(s, runs)
            if tf:
                acc[s] += w * (k1p * tf / (tf + norm_a + norm_b * lengths[s]) + delta)
                if cover is not None:
                    cover[s] += idf
    else:
        for slots, tfs, lo, hi in runs:
            for s, tf in zip(slots[lo:hi], tfs[lo:hi]):
                if s in acc:
                    acc[s] += w * (k1p * tf / (tf + norm_a + norm_b * lengths[s]) + delta)
                    if cover is not None:
                        cover[s] += idf


def rare_top(terms: list[tuple[float, list[Run]]], tf_of: Callable[[int, list[Run]], int], mask: Mask,
             allowed: Callable[[int], bool] | None, depth: int) -> list[tuple[float, int]]:
    """The rare-term ranking's top ``depth`` (the sum of the idfs of the
    terms a document has, ``terms`` as (idf, runs) in the order they are
    summed; ties: highest slot first), found without a step of Python per
    posting: the subsets of the terms are taken best sum first, and the
    documents that have exactly a subset's terms are found by set
    operations (or by probing, for a few documents against a long list),
    until ``depth`` documents are found. The sums are the walk's floats
    (each summed in term order from 0)."""
    if depth <= 0:
        return []
    sums: dict[float, list[int]] = {}  # a subset's sum → the subsets (bit sets of term numbers) with it
    for bits in range(1, 1 << len(terms)):
        c = 0.0
        for i in range(len(terms)):
            if bits >> i & 1:
                c += terms[i][0]
        sums.setdefault(c, []).append(bits)
    found = _Subsets(terms, tf_of, mask, allowed=allowed, depth=depth)
    if len(terms) == 1:  # (every posting of the one term: no set needed)
        found.take(next(iter(sums)), descending(terms[0][1]), None, found.sizes[0])
        return found.out
    for c in sorted(sums, reverse=True):
        if len(sums[c]) == 1:
            # a subset of its own: its documents are in its shortest list,
            # walked from the end until enough are found
            members = found.members(sums[c][0])
            docs = found.exactly(sums[c][0], members)
            if docs and found.take(c, descending(terms[members[0]][1]), docs, len(docs)):
                break
            continue
        group: set[int] = set()
        for bits in sums[c]:
            group |= found.exactly(bits, found.members(bits))
        if group and found.take(c, sorted(group, reverse=True), None, len(group)):
            break
    return found.out


class _Subsets:
    """``rare_top``'s search: which documents have exactly a subset's terms
    (by set operations on the terms' postings, each term's set made once, or
    by probing a long list for a few documents), and the top list they fill
    (``out``)."""

    __slots__ = ("terms", "tf_of", "mask", "allowed", "depth", "sizes", "sets", "out")

    def __init__(self, terms: list[tuple[float, list[Run]]], tf_of: Callable[[int, list[Run]], int], mask: Mask,
                 *, allowed: Callable[[int], bool] | None, depth: int) -> None:
        self.terms, self.tf_of, self.mask, self.allowed, self.depth = terms, tf_of, mask, allowed, depth
        self.sizes = [sum(hi - lo for _, _, lo, hi in runs) for _, runs in terms]
        self.sets: dict[int, set[int]] = {}
        self.out: list[tuple[float, int]] = []

    def members(self, bits: int) -> list[int]:
        """The terms of a subset, shortest postings first."""
        return sorted((i for i in range(len(self.terms)) if bits >> i & 1), key=self.sizes.__getitem__)

    def whole(self, i: int) -> set[int]:
        got = self.sets.get(i)
        if got is None:
            got = self.sets[i] = set()
            for slots, _, lo, hi in self.terms[i][1]:
                got.update(slots[lo:hi])
        return got

    def having(self, docs: set[int], i: int, want: bool) -> set[int]:
        """Those of ``docs`` that have term i (``want``) or lack it."""
        if i not in self.sets and len(docs) * _PROBE_COST < self.sizes[i]:
            runs, tf_of = self.terms[i][1], self.tf_of
            return {s for s in docs if bool(tf_of(s, runs)) == want}
        return docs & self.whole(i) if want else docs - self.whole(i)

    def exactly(self, bits: int, members: list[int]) -> set[int]:
        """The documents that have the terms of subset ``bits`` (``members``)
        and none of the others."""
        docs = self.whole(members[0])
        for i in members[1:]:
            if not docs:
                break
            docs = self.having(docs, i, True)
        for i in range(len(self.terms)):
            if docs and not bits >> i & 1:
                docs = self.having(docs, i, False)
        return docs

    def take(self, c: float, ordered: Iterable[int], docs: set[int] | None, left: int) -> bool:
        """Append the documents of ``docs`` (None: all) in ``ordered``
        that the search may return, up to ``depth`` in all; True when the
        list is full. ``left``: how many of ``docs`` there are. A group that
        does not fit whole is left out whole (``whole_ties``)."""
        out, mask, allowed, depth = self.out, self.mask, self.allowed, self.depth
        start = len(out)
        for s in ordered:
            if docs is None or s in docs:
                if mask[s] and (allowed is None or allowed(s)):
                    if len(out) == depth:  # (one more of the group: it does not fit)
                        del out[start:]
                        return True
                    out.append((c, s))
                left -= 1
                if not left:
                    break
        return len(out) == depth


def descending(runs: list[Run]) -> Iterator[int]:
    """A term's slots, highest first (its runs ascend, one after the other)."""
    for slots, _, lo, hi in reversed(runs):
        yield from reversed(slots[lo:hi])
