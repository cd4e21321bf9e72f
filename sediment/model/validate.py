"""Every check of what a caller passes in, in one place, so the library, the
CLI and any server built on them refuse the same things with the same messages. Pure.

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
from ..errors import InvalidInput, ParseError, TooLarge
from .fields import STATUSES, now_iso, unwrap_link, validate_meta
from .names import LAYERS
from .people import ENTITIES, check_entities

# set by the library, never by a caller's keyword fields
RESERVED_FIELDS = frozenset({"id", "created", "updated", "status", "path", "layer", "room", "name",
                             "version", "body", "superseded_by", "supersedes"})
_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _utf8(s: str, what: str) -> None:
    """Refuse text that cannot be written as UTF-8: a lone surrogate (half of
    a pair, as a broken decode or a JSON ``\\ud800`` gives) has no bytes."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInput(f"{what} holds {s[exc.start:exc.end]!a} at {exc.start}, which is not a character "
                           f"(half of a surrogate pair) and cannot be written as UTF-8", what=what) from None


def _utf8_all(v: Any, what: str, depth: int = 0) -> None:
    """``_utf8`` for every key and string value of a (nested) field value."""
    if isinstance(v, str):
        _utf8(v, what)
    elif depth < 32 and isinstance(v, Mapping):
        for k, x in v.items():
            _utf8_all(k, what, depth + 1)
            _utf8_all(x, what, depth + 1)
    elif depth < 32 and isinstance(v, (list, tuple)):
        for x in v:
            _utf8_all(x, what, depth + 1)


def body(text: Any, max_bytes: int, *, empty_ok: bool = False) -> str:
    if not isinstance(text, str):
        raise InvalidInput("text must be a string")
    _utf8(text, "text")
    if not empty_ok and not text.strip():
        raise InvalidInput("a memory needs text: this one is empty")
    if "\x00" in text:
        raise InvalidInput("text contains a NUL byte")
    if E.has_conflict_markers(text):  # such a file is a problem to every reader (a merge left both sides)
        raise InvalidInput("text contains git conflict markers (<<<<<<< … >>>>>>>): resolve them first")
    n = len(text.encode("utf-8"))
    if n > max_bytes:
        raise TooLarge(f"body is {n} bytes; policy max_body_bytes is {max_bytes}", size=n)
    return text


def title(t: Any, *, required: bool = False) -> str:
    if not isinstance(t, str) or "\x00" in t or "\n" in t or (required and not t.strip()):
        raise InvalidInput("title must be one line of text")
    _utf8(t, "title")
    return t


def value(v: Any) -> float | None:
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 1):
        raise InvalidInput(f"value must be a number from 0 to 1, not {v!r}")
    return v


# ASCII punctuation Obsidian does not accept in a tag ('_', '-' and the '/' of
# nested tags are fine; letters and symbols of any script, emoji included, too)
_TAG_REFUSED = set("!\"#$%&'()*+,.:;<=>?@[\\]^`{|}~")


def tag(t: Any) -> str:
    """A tag as Obsidian accepts it. Spaces become '-' (``two words`` →
    ``two-words``), a leading '#' is dropped; a tag made only of digits, or
    with punctuation Obsidian refuses ('+', ',', '.', …), is refused."""
    if not isinstance(t, str) or any(c in t for c in "\n\r\x00"):
        raise InvalidInput(f"tag {t!r}: tags are one-line text")
    _utf8(t, "tag")
    norm = "-".join(t.strip().lstrip("#").split())
    if not norm:
        raise InvalidInput(f"tag {t!r} is empty")
    bad = sorted({c for c in norm if c in _TAG_REFUSED})
    if bad:
        raise InvalidInput(f"tag {t!r}: Obsidian does not accept {' '.join(bad)} in a tag "
                           f"(letters, digits, '_', '-' and '/' for nested tags are fine)")
    if norm.replace("/", "").isdigit():
        raise InvalidInput(f"tag {t!r}: a tag needs at least one character that is not a digit")
    if norm.startswith("/") or norm.endswith("/") or "//" in norm:
        raise InvalidInput(f"tag {t!r}: a nested tag is written a/b")
    return norm


def tags(given: Iterable[str] | str | None) -> list[str]:
    """One tag or a list of them."""
    if given is None:
        return []
    if isinstance(given, str):
        given = [given]
    try:
        items = list(given)
    except TypeError:
        raise InvalidInput(f"tags must be a tag or a list of tags, not {given!r}") from None
    return list(dict.fromkeys(tag(t) for t in items))


def link(x: Any) -> str:
    """The name a link names (``[[name]]`` or a bare name)."""
    name = unwrap_link(x)
    if not name or any(c in name for c in "\n\x00[]"):
        raise InvalidInput(f"link {x!r} is not a memory name")
    return name


def kind(k: Any, kinds: Iterable[str]) -> str:
    """A kind the policy knows (``kinds`` in policy.yaml adds more); else
    ``InvalidInput`` naming the kinds there are."""
    if not isinstance(k, str) or k not in kinds:
        raise InvalidInput(f"kind {k!r} is not one of {', '.join(kinds)} (policy.yaml 'kinds' adds one)",
                           what="kind")
    return k


# how deep a caller's field value may nest (a list in a mapping in a list …)
MAX_NESTING = 4


def plain_yaml(v: Any, depth: int = 0) -> bool:
    """Only what YAML writes and reads back as the same value."""
    if depth > MAX_NESTING:
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
        out[k] = entities(v) if k == ENTITIES else v
    return out


def entities(v: Any) -> dict[str, Any] | None:
    """An ``entities`` value as it is written: name → one role, a list of
    roles, or nothing (``None`` for no entities at all)."""
    if v is None or v in ({}, []):
        return None
    why = check_entities(v)
    if why:
        raise InvalidInput(f"entities: {why}", what="entities")
    pairs = v.items() if isinstance(v, Mapping) else [
        next(iter(x.items())) if isinstance(x, Mapping) else (x, None) for x in v]
    # roles as the caller wrote them (判断+执行 stays one text: how it reads is model.people's)
    return {str(name).strip(): ([str(r) for r in roles] if isinstance(roles, list) else
                                None if roles is None else str(roles)) for name, roles in pairs}


def meta(m: dict[str, Any], *, path: str = "") -> dict[str, Any]:
    """Frontmatter we are about to write, checked as a reader would check it."""
    _utf8_all(m, "frontmatter")
    try:
        return validate_meta(m, path=path)
    except ParseError as exc:
        raise InvalidInput(exc.message.split(": ", 1)[-1]) from None


def weights(w: Any) -> None:
    meta({"id": "x", "created": now_iso(), "weights": w})


def layer(v: Any) -> str:
    return N.check_layer(v)


def room(v: Any) -> str:
    if isinstance(v, str):
        _utf8(v, "room")
    return N.check_room(v)


UTC = _dt.timezone.utc
_AGO = re.compile(r"(\d{1,5})\s*(h|hours?|d|days?|w|weeks?)(?:\s+ago)?", re.IGNORECASE)
_UNITS = {"h": "hours", "d": "days", "w": "weeks"}
_DAYS_BACK = {"today": 0, "yesterday": 1, "今天": 0, "昨天": 1, "前天": 2}


def relative_time(text: str, *, tz: _dt.tzinfo, now: _dt.datetime | None = None) -> _dt.datetime | None:
    """A time as a person types it for a filter, or None: ``7d`` (or ``7 days``,
    ``7d ago``), ``12h``, ``2w`` before ``now``; ``today``, ``yesterday``
    (今天, 昨天, 前天): that day's midnight in ``tz``."""
    t = text.strip().lower()
    now = now or _dt.datetime.now(tz)
    m = _AGO.fullmatch(t)
    if m:
        unit = m.group(2)[0]
        return now - _dt.timedelta(**{_UNITS[unit]: int(m.group(1))})
    if t in _DAYS_BACK:
        day = now.astimezone(tz).date() - _dt.timedelta(days=_DAYS_BACK[t])
        return _dt.datetime(day.year, day.month, day.day, tzinfo=tz)
    return None


def time(v: Any, *, key: str, tz: _dt.tzinfo = UTC, relative: bool = False) -> _dt.datetime:
    """A time a caller passes (``now``, ``since``, ``until``): a ``datetime``,
    a ``date`` or an ISO 8601 string. A date is midnight and a time without an
    offset is a time in ``tz``, the root's timezone (policy ``timezone``; DESIGN,
    "Time"), on every machine alike. With ``relative``, also ``7d``, ``12h``,
    ``2w``, ``today``, ``yesterday`` (``relative_time``). Raises ``InvalidInput``."""
    if isinstance(v, str):
        text = v
        v = relative_time(text, tz=tz) if relative else None
        if v is None:
            try:
                v = _dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
            except ValueError:
                also = " or a relative time (7d, 12h, 2w, today, yesterday)" if relative else ""
                raise InvalidInput(f"{key}: {text!r} is not an ISO 8601 date or time (e.g. 2027-01-01, "
                                   f"2027-01-01T09:00:00+08:00){also}", what=key) from None
    if isinstance(v, _dt.date) and not isinstance(v, _dt.datetime):
        v = _dt.datetime(v.year, v.month, v.day)
    if not isinstance(v, _dt.datetime):
        raise InvalidInput(f"{key} must be a datetime, a date or an ISO 8601 string, not {v!r}", what=key)
    when: _dt.datetime = v if v.tzinfo is not None and v.utcoffset() is not None else v.replace(tzinfo=tz)
    return when


def now(v: Any, tz: _dt.tzinfo = UTC) -> _dt.datetime:
    """A caller's ``now`` (a date or a time without an offset: in ``tz``), or the current time."""
    return _dt.datetime.now().astimezone() if v is None else time(v, key="now", tz=tz)


def optional_time(v: Any, *, key: str, tz: _dt.tzinfo = UTC) -> _dt.datetime | None:
    """A filter's bound (``since``, ``until``): ``time`` with relative times, or None."""
    return None if v is None or v == "" else time(v, key=key, tz=tz, relative=True)


def _one_or_many(v: Any, *, what: str) -> list[str]:
    if isinstance(v, str):
        return [v]
    try:
        items = list(v)
    except TypeError:
        raise InvalidInput(f"{what} must be a value or a list of values, not {v!r}", what=what) from None
    if not all(isinstance(x, str) for x in items):
        raise InvalidInput(f"{what} must be text or a list of text, not {v!r}", what=what)
    return items


def links(given: Any) -> list[str]:
    """One link or a list of them (names, ``[[name]]``, ids or exact titles)."""
    if given is None:
        return []
    return [link(x) for x in _one_or_many(given, what="links")]


def section(name: str, v: Any) -> Any:
    """A section's content: text, or a list of lines."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (list, tuple)) and all(isinstance(x, (str, int, float)) and not isinstance(x, bool)
                                            for x in v):
        return list(v)
    raise InvalidInput(f"{name} must be text or a list of lines, not {v!r}", what=name)


def layers(v: Any) -> set[str] | None:
    """A layer filter (one or several), checked against the layers."""
    if v is None:
        return None
    out = set(_one_or_many(v, what="layer"))
    unknown = sorted(str(x) for x in out - set(LAYERS))
    if unknown:
        raise InvalidInput(f"layer: {', '.join(unknown)} is not one of {', '.join(LAYERS)}", what="layer")
    return out


def kinds(v: Any, known: Iterable[str]) -> set[str] | None:
    if v is None:
        return None
    known = list(known)
    out = set(_one_or_many(v, what="kind"))
    unknown = sorted(str(x) for x in out - set(known))
    if unknown:
        raise InvalidInput(f"kind: {', '.join(unknown)} is not one of {', '.join(known)}", what="kind")
    return out


def status(v: Any) -> str | None:
    if v is None:
        return None
    if v not in STATUSES:
        raise InvalidInput(f"status: {v!r} is not one of {', '.join(STATUSES)}", what="status")
    return str(v)


def room_filter(v: Any) -> str | None:
    return None if v is None or v == "" else N.check_room(str(v).strip("/"))


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


MAX_REQUEST_CHARS = 200


def request(r: Any) -> str | None:
    """A caller's request key (the same key again: the same call, counted
    once), or None."""
    if r is None:
        return None
    if not isinstance(r, str) or not r.strip() or len(r) > MAX_REQUEST_CHARS or not r.isprintable():
        raise InvalidInput(f"request must be one line of 1 to {MAX_REQUEST_CHARS} printable characters",
                           what="request")
    return r
