"""Where the agent's attention went: recalls per room per week, and the rooms
nobody recalled for a long time (Tideline's attention tracker).

Counted from the usage records' recall days (one recall per memory per day,
DESIGN, "What counts as a recall"), every machine's, by the room the memory is
in now. Weeks start on Monday in the root's timezone; the last one is the
current week, so far. A desert is a room with an active memory and no recall
of any of its memories for ``desert_days`` days.

Read-only: no recall, nothing written.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..model import validate as V
from ..model.record import Record

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..store.store import Store

MAX_WEEKS = 520
MAX_DESERT_DAYS = 3650


@dataclass(frozen=True)
class Attention(Record):
    """``weeks``: the first day (a Monday) of each week, oldest first;
    ``rooms``: room ('' for none) → recalls in each of those weeks;
    ``last_recall``: room → the day of its last recall, or None;
    ``deserts``: the rooms with no recall for ``desert_days`` days."""
    now: str
    weeks: tuple[str, ...]
    rooms: dict[str, tuple[int, ...]]
    last_recall: dict[str, str | None]
    deserts: tuple[str, ...]
    desert_days: int

    def __str__(self) -> str:
        width = max([len(r or "(no room)") for r in self.rooms] + [9])
        lines = [f"{'room':<{width}}  recalls per week from {self.weeks[0]}"]
        lines += [f"{r or '(no room)':<{width}}  " + " ".join(f"{n:>3}" for n in counts)
                  for r, counts in self.rooms.items()]
        if self.deserts:
            lines.append(f"not recalled in {self.desert_days} days: "
                         + ", ".join(r or "(no room)" for r in self.deserts))
        return "\n".join(lines)


def _bounded(v: Any, key: str, top: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= top:
        raise InvalidInput(f"{key} must be a whole number from 1 to {top}, not {v!r}", what=key)
    return v


def attention(store: Store, *, weeks: int = 12, desert_days: int = 90,
              now: _dt.datetime | str | None = None) -> Attention:
    """Recalls per room per week over the last ``weeks`` weeks, and the
    deserts. Raises ``InvalidInput`` for a span out of bounds."""
    weeks = _bounded(weeks, "weeks", MAX_WEEKS)
    desert_days = _bounded(desert_days, "desert_days", MAX_DESERT_DAYS)
    when = V.now(now, store.policy.tz)
    today = when.astimezone(store.policy.tz).date()
    first = today - _dt.timedelta(days=today.weekday() + 7 * (weeks - 1))
    usage = store.usage.totals()
    with store.view.reading() as view:
        entries = [(e.id, e.room, e.status == "active" and e.layer != "archive")
                   for e in view.entries.values() if e.status != "purged"]
    rooms: dict[str, list[int]] = {}
    last: dict[str, str | None] = {}
    lively: set[str] = set()
    for eid, room, active in sorted(entries, key=lambda x: x[1]):
        counts = rooms.setdefault(room, [0] * weeks)
        last.setdefault(room, None)
        if active:
            lively.add(room)
        u = usage.get(eid)
        for day in u.days if u is not None else ():
            try:
                d = _dt.date.fromisoformat(day)
            except ValueError:  # a damaged summary's day costs that day
                continue
            if d > today:
                continue
            if d >= first:
                counts[(d - first).days // 7] += 1
            if last[room] is None or day > str(last[room]):
                last[room] = day
    edge = (today - _dt.timedelta(days=desert_days)).isoformat()
    deserts = tuple(r for r in sorted(lively) if last[r] is None or str(last[r]) <= edge)
    return Attention(when.isoformat(timespec="seconds"),
                     tuple((first + _dt.timedelta(days=7 * i)).isoformat() for i in range(weeks)),
                     {r: tuple(c) for r, c in rooms.items()}, last, deserts, desert_days)
