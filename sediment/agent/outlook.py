"""How strong the memories are now.

``strengths`` gives every memory's strength in one pass over the view and one
read of the usage records (``Repository.strength`` per id reads the records
each time: fine for one, seconds for ten thousand).

Read-only: it is no recall, and it writes nothing.
"""

from __future__ import annotations

import datetime as _dt

from ..model import validate as V
from ..model.lifecycle import Strength, strength
from ..store.store import Store


def strengths(store: Store, *, now: _dt.datetime | str | None = None) -> dict[str, Strength]:
    """Every memory's strength at ``now`` (purged ones left out), by id."""
    when = V.now(now).timestamp()
    usage = store.usage.totals()
    kinds = store.policy.kinds
    with store.view.reading() as view:
        entries = [e for e in view.entries.values() if e.status != "purged"]
    return {e.id: strength(e, usage.get(e.id), kinds, when) for e in entries}
