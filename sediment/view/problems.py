"""What ``check`` reports, and the rules of the files alone that decide, the
same on every machine, which of two files is a memory. Pure."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from ..model.entry import Entry
from ..model.record import Record
from ..errors import ParseError


@dataclass(frozen=True)
class Problem(Record):
    """Something ``check`` found. ``severity`` is 'error' (the file is left out of
    the index) or 'warning' (it is indexed; a person may want to look)."""
    path: str
    reason: str
    line: int | None = None
    severity: str = "error"
    code: str = "parse"
    _keys = ("path", "line", "reason", "severity", "code")

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{self.severity}: {where}: {self.reason}"



def text_key(text: str) -> str:
    """A short digest of text as compared for duplicates (whitespace runs as
    one space): the map holds digests, not a second copy of every text."""
    return hashlib.blake2b(" ".join(text.split()).encode("utf-8"), digest_size=12).hexdigest()


def keep_first(a: Entry, b: Entry) -> bool:
    """Of two files with one id, which one is the memory (the other is left
    out and reported). A rule of the files alone, so every machine keeps the
    same one: the file whose name is the memory's own (the library names
    notes ``<slug>-<id suffix>``; a copy a person made is named otherwise),
    then the older ``created``, then path order."""
    return _preference(a) < _preference(b)


def _preference(e: Entry) -> tuple[int, float, str]:
    suffixes = (e.id[-4:].lower(), e.id[-10:].lower())
    own_name = any(e.name.endswith("-" + x) for x in suffixes)
    try:
        created = e.created.timestamp()
    except (ParseError, OverflowError, ValueError):
        created = float("inf")
    return (0 if own_name else 1, created, e.path)
