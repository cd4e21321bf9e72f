"""What frontmatter may hold, measured without expanding it. Pure.

YAML lets a few hundred bytes of nested aliases stand for gigabytes, and lets
a person type tags no note can keep (``!!set``, ``!!binary``) or a node that
contains itself. Each of these makes the file a ``check()`` problem instead of
a hang or a crash: the walk below measures each shared node once.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping

from ..errors import ParseError

# The largest frontmatter accepted, counted as it is once YAML aliases are
# expanded (characters of text plus one per value): a few hundred bytes of
# nested aliases can otherwise expand to gigabytes (policy max_meta_size).
MAX_META_SIZE = 100_000
_MAX_DEPTH = 50


def check_shape(meta: dict[str, Any], path: str, limit: int) -> bool:
    """Refuse frontmatter that is circular, too deep, too large once aliases
    are expanded, or holds a type a note cannot keep (``!!set``, ``!!binary``).
    Returns whether it is plain JSON data (no dates): only such frontmatter
    goes into the index snapshot. Each shared node is measured once."""
    measure = _Measure(path, limit)
    measure.size(meta, 0)
    return measure.plain


class _Measure:
    """One frontmatter's walk for ``check_shape``: the size of each node
    measured so far (by identity: an alias is measured once), the nodes
    being measured (a node met again inside itself is a circular alias),
    and whether everything met is plain JSON data."""

    __slots__ = ("path", "limit", "sizes", "open", "plain")

    def __init__(self, path: str, limit: int) -> None:
        self.path, self.limit = path, limit
        self.sizes: dict[int, int] = {}
        self.open: set[int] = set()
        self.plain = True

    def bad(self, why: str) -> ParseError:
        return ParseError(f"{self.path}: frontmatter {why}", path=self.path, line=None)

    def size(self, x: Any, depth: int) -> int:
        """Characters of text plus one per value of ``x``, aliases expanded."""
        if isinstance(x, str):
            return 1 + len(x)
        if x is None or isinstance(x, (bool, int, float)):
            return 1
        if isinstance(x, _dt.date):  # dates and date-times (Obsidian's date properties)
            self.plain = False
            return 1
        if not isinstance(x, (list, dict)):
            raise self.bad(f"holds a {type(x).__name__} value (a YAML tag such as !!set or !!binary), "
                           f"which a note cannot keep")
        key = id(x)
        if key in self.open:
            raise self.bad("refers to itself (a circular YAML alias)")
        if key in self.sizes:
            return self.sizes[key]
        if depth > _MAX_DEPTH:
            raise self.bad(f"is nested more than {_MAX_DEPTH} levels deep")
        self.open.add(key)
        n = self._items(x, depth)
        self.open.discard(key)
        if n > self.limit:
            raise self.bad(f"expands to more than {self.limit} characters and values (YAML aliases?); "
                           f"policy max_meta_size")
        self.sizes[key] = n
        return n

    def _items(self, x: list[Any] | dict[Any, Any], depth: int) -> int:
        """One for the container, plus its items' sizes (stopping once past the limit)."""
        n, limit = 1, self.limit
        if isinstance(x, list):
            for item in x:
                n += self.size(item, depth + 1)
                if n > limit:
                    break
            return n
        for k, v in x.items():
            if depth and not isinstance(k, str):
                self.plain = False  # JSON would turn the key into text
            n += self.size(k, depth + 1) + self.size(v, depth + 1)
            if n > limit:
                break
        return n


def is_plain(meta: Mapping[str, Any]) -> bool:
    """Frontmatter that JSON keeps exactly (no dates, text keys only)."""
    try:
        return check_shape(dict(meta), "", 1 << 62)
    except ParseError:
        return False
