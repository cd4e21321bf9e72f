"""The rules of the files alone that decide, the same on every machine, which
of two files is a memory, and how the view compares texts for duplicates
(pure); and which unreadable file a key that names no memory would be."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Mapping

from ..disk.files import read_nofollow
from ..model.entry import Entry
from ..model.fields import unwrap_link
from ..model.problem import Problem
from ..errors import ParseError

_ID_LINE = re.compile(r"^id:\s*['\"]?([^'\"\s]+)", re.MULTILINE)


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


def damaged(root: Path, problems: Mapping[str, Problem], key: str) -> Problem | None:
    """The problem of a file that would be the memory ``key`` (by file
    name, or by an ``id:`` line) if it could be read."""
    name = unwrap_link(key)
    for rel, p in problems.items():
        if p.code not in ("parse", "storage") or not rel.endswith(".md"):
            continue
        if rel.rsplit("/", 1)[-1][:-3] == name:
            return p
        try:
            head = read_nofollow(root / rel)[:4096].decode("utf-8", "replace")
        except OSError:
            continue
        m = _ID_LINE.search(head)
        if m and m.group(1) == key:
            return p
    return None
