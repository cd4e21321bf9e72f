"""A memory's history of use: when it was recalled, confirmed and refuted.

The usage records keep, for good, each memory's counts, the days it was
recalled and the time of its last confirmation and refutation; this machine's
log also holds each record's time until compaction folds it into those totals
(``disk.usage``). So every recall day is known, every confirmation and
refutation still in the log has its time, the last of each has its time in any
case, and the rest are counted as ``undated``.

Read-only: no recall, nothing written.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import datetime as _dt
from dataclasses import dataclass

from ..model.record import Record
from ..model.usage import Usage

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..store.store import Store


@dataclass(frozen=True)
class Use(Record):
    """One recall day, confirmation or refutation. ``day`` is in the root's
    timezone; ``time`` (ISO 8601) where a record still holds it."""
    event: str  # 'recall', 'confirm' or 'refute'
    day: str
    time: str | None


@dataclass(frozen=True)
class History(Record):
    """What ``history`` found: the totals (every machine's) and the dated uses,
    oldest first; ``undated`` confirmations and refutations are counted only."""
    id: str
    recalls: int
    confirms: int
    refutes: int
    uses: tuple[Use, ...]
    undated: dict[str, int]

    def __str__(self) -> str:
        head = f"recalled {self.recalls}×, confirmed {self.confirms}×, refuted {self.refutes}×"
        lines = [head] + [f"  {u.day}  {u.event}" + (f"  {u.time}" if u.time else "") for u in self.uses]
        lines += [f"  ({n} earlier {ev}(s) without a date)" for ev, n in self.undated.items() if n]
        return "\n".join(lines)


def _iso(t: float, tz: _dt.tzinfo) -> str:
    return _dt.datetime.fromtimestamp(t, tz).isoformat(timespec="seconds")


def _day(t: float, tz: _dt.tzinfo) -> str:
    return _dt.datetime.fromtimestamp(t, tz).date().isoformat()


def history(store: Store, id: str) -> History:
    """The uses of one memory (by id or name). Raises ``NotFound``."""
    with store.view.reading() as view:
        e = view.resolve(id)
    tz = store.policy.tz
    u = store.usage.totals().get(e.id) or Usage()
    logged = store.usage.events([e.id])
    first_recall: dict[str, float] = {}
    for t, ev, _ in logged:
        if ev == "recall":
            first_recall.setdefault(_day(t, tz), t)
    uses = [Use("recall", d, _iso(first_recall[d], tz) if d in first_recall else None) for d in sorted(u.days)]
    undated = {}
    for ev, count, last in (("confirm", u.confirms, u.last_confirm), ("refute", u.refutes, u.last_refute)):
        times = sorted({round(t, 3) for t, kind, _ in logged if kind == ev})
        if last and round(last, 3) not in times:  # the last one is kept in the totals in any case
            times.append(round(last, 3))
        uses += [Use(ev, _day(t, tz), _iso(t, tz)) for t in times]
        undated[ev] = max(0, count - len(times))
    uses.sort(key=lambda x: (x.day, x.time or "", x.event))
    return History(e.id, u.recalls, u.confirms, u.refutes, tuple(uses), undated)
