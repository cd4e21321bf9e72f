"""What a context block draws "who I am" and "the strongest of the rest"
from, kept between calls so that a block costs about the same at 100 or
100,000 memories. Pure: it is handed the view's entries.

The static part of the order is kept sorted — "who I am" by (kind core
first, value, age, id); each pool of the rest by value and by creation
time — and brought up to date from the entries each call: one comparison
of the entries list (in C) when nothing changed, the changed entries
re-filed otherwise.

The dynamic part, strength at ``now``, is computed only for what a block can
show: within a pool every memory without usage decays by the same clock, so
its strength is at most (its value) × (the decay of its age), and the
threshold algorithm (Fagin et al.) walks the by-value and by-age lists in
step, yielding the strongest once nothing unseen can beat it. Memories with
usage records (recalls stretch the clock) are scored directly.
"""

from __future__ import annotations

import bisect
import heapq
from typing import Iterator, Mapping, Sequence

from ..model.entry import Entry
from ..model.policy import Clock
from ..model.lifecycle import DAY, is_current, strength
from ..model.usage import Usage

REBUILD = 2000  # more changed entries than this: rebuild rather than re-file


def created_ts(e: Entry) -> float:
    """When ``e`` was created (a POSIX time); one whose time cannot be read is as old as can be (0)."""
    t = e.created_ts
    return 0.0 if t is None else t


def eligible(e: Entry) -> bool:
    """May appear in a context block at all: current, not in the inbox."""
    return is_current(e) and e.kind != "inbox"


def is_core(e: Entry) -> bool:
    return e.kind == "core" or e.layer == "bedrock"


CoreKey = tuple[int, float, float, str, Entry]  # (core first, -value, created, id, entry)
Filed = tuple[float, str, Entry]  # (-value or -created, id, entry)
Rank = tuple[float, float, str]  # (-strength, -created, id)


def _core_key(e: Entry) -> CoreKey:
    return (0 if e.kind == "core" else 1, -e.value, created_ts(e), e.id, e)


class _Pool:
    """One kind's memories outside "who I am": by value, and by age."""

    def __init__(self) -> None:
        self.by_value: list[Filed] = []  # (-value, id, entry)
        self.by_age: list[Filed] = []  # (-created, id, entry)

    def add(self, e: Entry) -> None:
        bisect.insort(self.by_value, (-e.value, e.id, e))
        bisect.insort(self.by_age, (-created_ts(e), e.id, e))

    def remove(self, e: Entry) -> None:
        for lst, key in ((self.by_value, (-e.value, e.id)), (self.by_age, (-created_ts(e), e.id))):
            i = bisect.bisect_left(lst, key)
            if i < len(lst) and lst[i][1] == e.id:
                del lst[i]


class Catalog:
    """``refile_max``: at most this many changed entries are re-filed one by
    one (each a list insertion); past it, sorting everything again is faster."""

    def __init__(self, refile_max: int = REBUILD) -> None:
        self.refile_max = refile_max
        self._reset()

    def _reset(self) -> None:
        self.values: list[Entry] = []
        self.known: dict[str, Entry] = {}  # id → entry as filed
        self.core: list[CoreKey] = []
        self.pools: dict[str, _Pool] = {}
        self.kind_of: dict[str, str] = {}  # id → pool, for what is in a pool
        self.events: dict[str, dict[str, Entry]] = {}

    def update(self, entries: Mapping[str, Entry]) -> None:
        """Bring the catalog up to date with the view's entries."""
        values = list(entries.values())
        if values == self.values:  # identity first, in C: the common case costs ~1 ms at 100k
            return
        known, limit = self.known, self.refile_max
        if known and abs(len(values) - len(known)) <= limit:
            get = known.get
            changed = [e for k, e in entries.items() if get(k) is not e]
            if len(changed) <= limit:
                # every id still filed unchanged is in ``values``; any other filed id is gone
                unchanged = len(values) - len(changed)
                gone = [k for k in known if k not in entries] if unchanged + sum(
                    1 for e in changed if e.id in known) != len(known) else []
                for k in gone:
                    self._unfile(known.pop(k))
                for e in changed:
                    old = known.get(e.id)
                    if old is not None:
                        self._unfile(old)
                    known[e.id] = e
                    self._file(e, sort=True)
                self.values = values
                return
        self._reset()
        for e in values:
            self.known[e.id] = e
            self._file(e, sort=False)
        self.core.sort()
        for p in self.pools.values():
            p.by_value.sort()
            p.by_age.sort()
        self.values = values

    def _file(self, e: Entry, *, sort: bool) -> None:
        if e.event:
            self.events.setdefault(e.event, {})[e.id] = e
        if not eligible(e):
            return
        if is_core(e):
            if sort:
                bisect.insort(self.core, _core_key(e))
            else:
                self.core.append(_core_key(e))
            return
        pool = self.pools.get(e.kind)
        if pool is None:
            pool = self.pools[e.kind] = _Pool()
        if sort:
            pool.add(e)
        else:
            pool.by_value.append((-e.value, e.id, e))
            pool.by_age.append((-created_ts(e), e.id, e))
        self.kind_of[e.id] = e.kind

    def _unfile(self, e: Entry) -> None:
        if e.event and e.event in self.events:
            self.events[e.event].pop(e.id, None)
        kind = self.kind_of.pop(e.id, None)
        if kind is not None:
            self.pools[kind].remove(e)
        elif eligible(e) and is_core(e):
            key = _core_key(e)
            i = bisect.bisect_left(self.core, key[:4])
            if i < len(self.core) and self.core[i][3] == e.id:
                del self.core[i]

    # ------------------------------------------------------------------ reading

    def core_entries(self) -> Iterator[Entry]:
        return (k[-1] for k in self.core)

    def rest_count(self) -> int:
        return len(self.kind_of)

    def strongest(self, usage: Mapping[str, Usage], kinds: Mapping[str, Clock | None], now: float,
                  skip: set[str]) -> Iterator[Entry]:
        """The rest, strongest of each pool in turn (every pool's first, then
        every pool's second, …; pools ordered by their strongest), leaving out
        ``skip``. Ties: newer first, then id."""
        used: dict[str, list[Entry]] = {}
        for eid in usage:
            kind = self.kind_of.get(eid)
            if kind is not None and eid not in skip:
                used.setdefault(kind, []).append(self.known[eid])
        for xs in used.values():
            xs.sort(key=lambda e: (-e.value, e.id))
        streams = []
        for kind in sorted(self.pools):
            it = _pool_order(self.pools[kind], used.get(kind, []), usage, kinds, now=now, skip=skip)
            first = next(it, None)
            if first is not None:
                streams.append((first, it))
        streams.sort(key=lambda s: s[0][0])
        while streams:
            nxt = []
            for (_, e), it in streams:
                yield e
                following = next(it, None)
                if following is not None:
                    nxt.append((following, it))
            streams = nxt


def _pool_order(pool: _Pool, used: Sequence[Entry], usage: Mapping[str, Usage], kinds: Mapping[str, Clock | None], *,
                now: float, skip: set[str]) -> Iterator[tuple[Rank, Entry]]:
    """(key, entry) of one pool, best first: key = (-strength, -created, id).
    ``used`` (the pool's memories with usage records) comes sorted by value,
    highest first: one is scored only once its value (what its strength can
    at most be) reaches what is about to be yielded."""
    heap: list[tuple[Rank, Entry]] = []
    seen: set[str] = set(skip)
    seen.update(e.id for e in used)
    push, pop = heapq.heappush, heapq.heappop
    by_value, by_age = pool.by_value, pool.by_age
    n = len(by_value)
    # a memory without usage decays by its pool's clock from its creation
    # (lifecycle.strength with no recalls: the half-life is not stretched)
    clocks = kinds.get(by_value[0][2].kind, kinds.get("inbox")) if n else None
    grace, half = (clocks[0], clocks[1]) if clocks is not None else (float("inf"), 1.0)
    u = 0
    for d in range(n + 1):
        if d < n:
            # the best any memory not yet seen could be: the value at the
            # by-value cursor, decayed by the age at the by-age cursor
            v, c = -by_value[d][0], -by_age[d][0]
            age = (now - max(c, 0.0)) / DAY
            decay = 1.0 if age <= grace else 0.5 ** ((age - grace) / half)
            bound = (-round(v * decay, 9), -c)
        else:
            bound = (float("inf"), float("inf"))  # everything seen: all may go
        while u < len(used) and (d == n or used[u].value >= -bound[0] - 1e-9):
            e = used[u]
            st = strength(e, usage[e.id], kinds, now).strength
            push(heap, ((-round(st, 9), -created_ts(e), e.id), e))
            u += 1
        while heap and heap[0][0][:2] < bound:
            yield pop(heap)
        if d == n:
            return
        for _, eid, e in (by_value[d], by_age[d]):
            if eid not in seen:
                seen.add(eid)
                ts = created_ts(e)
                age = (now - max(ts, 0.0)) / DAY
                decay = 1.0 if age <= grace else 0.5 ** ((age - grace) / half)
                push(heap, ((-round(e.value * decay, 9), -ts, eid), e))
