"""The rules of the files alone that decide, the same on every machine, which
of two files is a memory, and how the view compares texts for duplicates. Pure."""

from __future__ import annotations

import hashlib

from ..model.entry import Entry
from ..errors import ParseError


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
