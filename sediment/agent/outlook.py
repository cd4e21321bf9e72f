"""How strong the memories are now, and how one memory's strength will go.

``strengths`` gives every memory's strength in one pass over the view and one
read of the usage records (``Repository.strength`` per id reads the records
each time: fine for one, seconds for ten thousand). ``forecast`` follows one
memory's strength over the coming days as it is, and as it would be if it
were recalled once more now, by the same rule metabolize applies
(``lifecycle.strength``).

Read-only: neither is a recall, and neither writes anything.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import datetime as _dt
from dataclasses import dataclass

from ..errors import InvalidInput
from ..model import validate as V
from ..model.lifecycle import DAY, Strength, strength
from ..model.record import Record
from ..model.usage import Usage

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..store.store import Store

MAX_DAYS = 3650


@dataclass(frozen=True)
class Forecast(Record):
    """A memory's strength day by day from ``now``: ``as_is`` with no further
    use, ``recalled`` after one more recall at ``now`` (the same curve when a
    recall today would not count: one recall per memory per day)."""
    id: str
    now: str
    days: tuple[int, ...]
    as_is: tuple[float, ...]
    recalled: tuple[float, ...]
    explain: str = ""

    def __str__(self) -> str:
        marks = [d for d in (0, 7, 30, 90, 180, 365) if d <= self.days[-1]]
        return "\n".join(f"day {d:>4}: {self.as_is[d]:.3f} as is, {self.recalled[d]:.3f} if recalled now"
                         for d in marks)


def strengths(store: Store, *, now: _dt.datetime | str | None = None) -> dict[str, Strength]:
    """Every memory's strength at ``now`` (purged ones left out), by id."""
    when = V.now(now, store.policy.tz).timestamp()
    usage = store.usage.totals()
    kinds = store.policy.kinds
    with store.view.reading() as view:
        entries = [e for e in view.entries.values() if e.status != "purged"]
    return {e.id: strength(e, usage.get(e.id), kinds, when) for e in entries}


def _once_more(u: Usage | None, t: float, day: str) -> Usage:
    out = Usage.from_json(u.to_json()) if u is not None else Usage()
    out.add("recall", t, day)
    return out


def forecast(store: Store, id: str, *, days: int = 180, now: _dt.datetime | str | None = None) -> Forecast:
    """One memory's strength for each of the next ``days`` days (0 = now).
    Raises ``NotFound``, ``InvalidInput`` for days outside 1..3650."""
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise InvalidInput(f"days must be a whole number from 1 to {MAX_DAYS}, not {days!r}", what="days")
    when = V.now(now, store.policy.tz)
    with store.view.reading() as view:
        e = view.resolve(id)
    u = store.usage.totals().get(e.id)
    t = when.timestamp()
    more = _once_more(u, t, when.astimezone(store.policy.tz).date().isoformat())
    kinds = store.policy.kinds
    span = range(days + 1)
    as_is = tuple(round(strength(e, u, kinds, t + d * DAY).strength, 4) for d in span)
    again = tuple(round(strength(e, more, kinds, t + d * DAY).strength, 4) for d in span)
    return Forecast(e.id, when.isoformat(timespec="seconds"), tuple(span), as_is, again,
                    strength(e, u, kinds, t).explain())
