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
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    plain = True

    def bad(why: str) -> ParseError:
        return ParseError(f"{path}: frontmatter {why}", path=path, line=None)

    def size(x: Any, depth: int) -> int:
        nonlocal plain
        if isinstance(x, str):
            return 1 + len(x)
        if x is None or isinstance(x, (bool, int, float)):
            return 1
        if isinstance(x, _dt.date):  # dates and date-times (Obsidian's date properties)
            plain = False
            return 1
        if not isinstance(x, (list, dict)):
            raise bad(f"holds a {type(x).__name__} value (a YAML tag such as !!set or !!binary), "
                      f"which a note cannot keep")
        key = id(x)
        if key in open_nodes:
            raise bad("refers to itself (a circular YAML alias)")
        if key in sizes:
            return sizes[key]
        if depth > _MAX_DEPTH:
            raise bad(f"is nested more than {_MAX_DEPTH} levels deep")
        open_nodes.add(key)
        n = 1
        if isinstance(x, list):
            for item in x:
                n += size(item, depth + 1)
                if n > limit:
                    break
        else:
            for k, v in x.items():
                if depth and not isinstance(k, str):
                    plain = False  # JSON would turn the key into text
                n += size(k, depth + 1) + size(v, depth + 1)
                if n > limit:
                    break
        open_nodes.discard(key)
        if n > limit:
            raise bad(f"expands to more than {limit} characters and values (YAML aliases?); "
                      f"policy max_meta_size")
        sizes[key] = n
        return n

    size(meta, 0)
    return plain


def is_plain(meta: Mapping[str, Any]) -> bool:
    """Frontmatter that JSON keeps exactly (no dates, text keys only)."""
    try:
        return check_shape(dict(meta), "", 1 << 62)
    except ParseError:
        return False
