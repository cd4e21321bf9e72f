"""How a memory is shown: what ``context`` and ``about`` share (the
tie-break no recall changes, the block's escaping and dates). The relevance
floor's measure is ``search.evidence.covering``, which search uses too.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any

from ..search import query as S
from ..model.entry import Entry
from ..errors import ParseError
from .catalog import created_ts

HITS = 20  # search hits looked at for "what this reminds me of"


def escape(s: Any) -> str:
    """Memory text as one inert line of the block."""
    return " ".join(str(s).split()).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class StableTiebreak(S.Tiebreak):
    """Ties broken by value, then age: nothing a recall changes."""

    def __call__(self, eid: str) -> tuple[float, ...]:
        e = self.entries[eid]
        return (e.value, -created_ts(e))


def created_date(e: Entry, tz: _dt.tzinfo) -> str:
    try:
        return e.created.astimezone(tz).date().isoformat()
    except (ParseError, KeyError, OverflowError, ValueError):
        return "unknown date"
