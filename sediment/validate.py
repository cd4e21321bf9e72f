"""Every check of what a caller passes in, in one place, so the library, the
CLI and the MCP server refuse the same things with the same messages. Pure.

Each ``check_*`` returns the value as it will be stored, or raises
``InvalidInput`` (or a subclass) naming what is wrong. ``meta`` is the one
place where a ``ParseError`` from the format becomes ``InvalidInput``: what a
caller asks us to write must be what any later open reads back.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Iterable, Mapping

from . import entry as E
from . import names as N
from .errors import InvalidInput, ParseError, TooLarge

# set by the library, never by a caller's keyword fields
RESERVED_FIELDS = frozenset({"id", "created", "updated", "status", "path", "layer", "room", "name",
                             "version", "body", "superseded_by", "supersedes"})
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def body(text: Any, max_bytes: int) -> str:
    if not isinstance(text, str):
        raise InvalidInput("text must be a string")
    if "\x00" in text:
        raise InvalidInput("text contains a NUL byte")
    n = len(text.encode("utf-8"))
    if n > max_bytes:
        raise TooLarge(f"body is {n} bytes; policy max_body_bytes is {max_bytes}", size=n)
    return text


def title(t: Any, *, required: bool = False) -> str:
    if not isinstance(t, str) or "\x00" in t or "\n" in t or (required and not t.strip()):
        raise InvalidInput("title must be one line of text")
    return t


def value(v: Any) -> float | None:
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1):
        raise InvalidInput(f"value must be a number from 0 to 1, not {v!r}")
    return v


def tags(given: Iterable[str] | str) -> list[str]:
    if isinstance(given, str):
        given = [given]
    out = []
    for t in given:
        if not isinstance(t, str) or not t.strip() or any(c in t for c in "\n\r\x00"):
            raise InvalidInput(f"tag {t!r}: tags are non-empty one-line strings")
        out.append(t.strip().lstrip("#"))
    return out


def link(x: Any) -> str:
    """The name a link names (``[[name]]`` or a bare name)."""
    name = E.unwrap_link(x)
    if not name or any(c in name for c in "\n\x00[]"):
        raise InvalidInput(f"link {x!r} is not a memory name")
    return name


def kind(k: Any, kinds: Iterable[str]) -> str:
    if k not in kinds:
        raise InvalidInput(f"kind {k!r} is not one of {', '.join(kinds)}")
    return k


def plain_yaml(v: Any, depth: int = 0) -> bool:
    """Only what YAML writes and reads back as the same value."""
    if depth > 4:
        return False
    if v is None or isinstance(v, (str, bool, int, float)):
        return not (isinstance(v, str) and "\x00" in v)
    if isinstance(v, (list, tuple)):
        return all(plain_yaml(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and plain_yaml(x, depth + 1) for k, x in v.items())
    return False


def not_reserved(keys: Iterable[str]) -> None:
    for k in keys:
        if k in RESERVED_FIELDS:
            raise InvalidInput(f"{k} is set by the library, not by the caller")


def fields(given: Mapping[str, Any]) -> dict[str, Any]:
    """Extra frontmatter fields a caller passes as keywords."""
    not_reserved(given)
    out = {}
    for k, v in given.items():
        if not _FIELD_NAME.fullmatch(k):
            raise InvalidInput(f"field name {k!r} is not a plain identifier")
        if not plain_yaml(v):
            raise InvalidInput(f"field {k}: only strings, numbers, booleans, lists and "
                               f"mappings of those can be stored")
        out[k] = v
    return out


def meta(m: dict[str, Any], *, path: str = "") -> dict[str, Any]:
    """Frontmatter we are about to write, checked as a reader would check it."""
    try:
        return E.validate_meta(m, path=path)
    except ParseError as exc:
        raise InvalidInput(exc.message.split(": ", 1)[-1]) from None


def weights(w: Any) -> None:
    meta({"id": "x", "created": E.now_iso(), "weights": w})


def layer(v: Any) -> str:
    return N.check_layer(v)


def room(v: Any) -> str:
    return N.check_room(v)


def now(v: _dt.datetime | None) -> _dt.datetime:
    """A caller's ``now``: aware, or the current time."""
    if v is None:
        return _dt.datetime.now().astimezone()
    if not isinstance(v, _dt.datetime) or v.tzinfo is None:
        raise InvalidInput("now must be a timezone-aware datetime")
    return v


def limit(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise InvalidInput("limit must be a positive whole number")
    return v


def query(q: Any) -> str:
    if not isinstance(q, str):
        raise InvalidInput("query must be a string")
    return q


def reason(r: Any, *, verb: str) -> str:
    if not r or not isinstance(r, str):
        raise InvalidInput(f"{verb} needs a reason")
    return E.one_line(r)
