"""The frontmatter fields sediment knows: their order, their checks
(``validate_meta``), the fields of a new memory (``build_meta``), and the
times and ids they hold. Pure; ``entry`` builds the file format on it.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import secrets
import time
from typing import Any, Callable, Iterable, Mapping

from ..errors import InvalidInput, ParseError

WIKILINK = re.compile(r"\[\[([^\[\]\n]+)\]\]")
STATUSES = ("active", "superseded", "archived", "purged")


# The frontmatter fields we know, in the order they are written. Anything else a
# caller or a person adds is kept and written after these, in its own order.
FIELD_ORDER = (
    "id", "title", "created", "updated", "kind", "tags", "value", "weights",
    "status", "source", "source_links", "event", "links", "supersedes",
    "superseded_by", "reason", "unclassified", "entities",
)
LIST_FIELDS = ("tags", "source_links", "links", "supersedes", "superseded_by")
WEIGHT_KEYS = ("importance", "emotional", "recurrence", "unresolved")
WEIGHT_MIN, WEIGHT_MAX = 1, 5  # a weight's scale
# Tideline's weights → one value; the shares add up to 1.
WEIGHT_SHARES = {"importance": 0.35, "emotional": 0.25, "recurrence": 0.25, "unresolved": 0.15}


# ---------------------------------------------------------------------------
# time and ids

def now_iso(now: _dt.datetime | None = None) -> str:
    """A timezone-aware ISO 8601 string, to the second, in local time."""
    now = now or _dt.datetime.now().astimezone()
    if now.tzinfo is None:
        raise InvalidInput("times must be timezone-aware")
    return now.replace(microsecond=0).isoformat()


UTC = _dt.timezone.utc


def parse_time(value: Any, *, key: str = "time", tz: _dt.tzinfo = UTC) -> _dt.datetime:
    """A time as an aware datetime. A date without a time (``2024-01-01``, as
    Obsidian writes a date property) is midnight in ``tz``, the root's
    timezone; so is a time written without an offset."""
    if isinstance(value, _dt.datetime):
        dt = value
    elif isinstance(value, _dt.date):
        dt = _dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            dt = _dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            raise ParseError(f"{key}: not an ISO 8601 time: {value!r}", key=key) from exc
    else:
        raise ParseError(f"{key}: not a time: {value!r}", key=key)
    if dt.tzinfo is None:  # hand-written without an offset: the root's timezone
        dt = dt.replace(tzinfo=tz)
    return dt


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_id(now_ms: int | None = None) -> str:
    """A ULID: 48 bits of milliseconds + 80 random bits, Crockford base32.

    Sorts by creation time, and two machines writing at once do not collide,
    which matters when several clones of one memory merge through git.
    """
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    n = (ms << 80) | secrets.randbits(80)
    return "".join(_CROCKFORD[(n >> (5 * i)) & 31] for i in range(25, -1, -1))


def wikilink(name: str) -> str:
    return f"[[{name}]]"


def unwrap_link(x: Any) -> str:
    x = str(x).strip()
    m = WIKILINK.fullmatch(x)
    return m.group(1) if m else x


def value_from_weights(weights: Mapping[str, Any]) -> float:
    """Four 1–5 weights → 0–1: the weighted mean, rescaled so 1 → 0 and 5 → 1."""
    total = 0.0
    for k, share in WEIGHT_SHARES.items():
        w = float(weights.get(k, 3))
        total += share * (min(5.0, max(1.0, w)) - 1) / 4
    return round(total, 4)


def _line_of_key(fm_text: str, key: str) -> int | None:
    for i, line in enumerate(fm_text.split("\n")):
        if line.startswith(f"{key}:"):
            return i + 2
    return None


Bad = Callable[[str, str], ParseError]  # (key, why) → the error naming the key and its line


def validate_meta(meta: dict[Any, Any], *, path: str = "", fm_text: str = "",
                  tz: _dt.tzinfo = UTC) -> dict[str, Any]:
    """Check types of the known fields. Times and other typed values are kept
    as YAML loaded them (an unquoted date stays a date), so that rewriting a
    note a person wrote keeps their values. Raises ParseError naming the key
    and line."""

    def bad(key: str, why: str) -> ParseError:
        line = _line_of_key(fm_text, key)
        return ParseError(f"{path}:{line or '?'}: {key}: {why}", path=path, line=line, key=key)

    meta = {str(k): v for k, v in meta.items()}
    if "value" not in meta and "density" in meta:
        meta["value"] = meta.pop("density")  # Sediment Palace's name for it
        key_for_value = "density"
    else:
        key_for_value = "value"
    _check_identity(meta, bad, tz)
    _check_lists(meta, bad)
    _check_value(meta.get("value"), bad, key_for_value)
    _check_weights(meta.get("weights"), bad)
    # (a wrong ``entities`` value is no reason to lose the note: it is read as far as it can
    # be, and check() reports it, verbs/people.problems)
    for key in ("kind", "status", "source", "event", "reason"):
        if key in meta and meta[key] is not None and not isinstance(meta[key], str):
            if isinstance(meta[key], (int, float)) and not isinstance(meta[key], bool):
                meta[key] = str(meta[key])
            else:
                raise bad(key, "must be text")
    if meta.get("status") is not None and meta["status"] not in STATUSES:
        raise bad("status", f"{meta['status']!r} is not one of {', '.join(STATUSES)}")
    return meta


def _check_identity(meta: dict[str, Any], bad: Bad, tz: _dt.tzinfo) -> None:
    """``id`` (text, kept as text), ``title`` (text, if any), and the times."""
    mid = meta.get("id")
    if not isinstance(mid, (str, int)) or isinstance(mid, bool) or str(mid).strip() == "":
        raise bad("id", "missing or not a string")
    meta["id"] = str(mid)
    if meta.get("title") is not None and not isinstance(meta["title"], (str, int, float)):
        raise bad("title", "not text")
    if meta.get("title") is not None:  # (an empty `title:`, as Obsidian writes it, is no title)
        meta["title"] = str(meta["title"])
    for key in ("created", "updated"):
        if key in meta:  # kept as written (a date, a date-time or text), only checked
            try:
                parse_time(meta[key], key=key, tz=tz)
            except ParseError:
                raise bad(key, f"not an ISO 8601 time: {meta[key]!r}") from None
    if "created" not in meta:
        raise bad("created", "missing")


def _check_lists(meta: dict[str, Any], bad: Bad) -> None:
    """The list fields: lists of text (one value alone is a list of one)."""
    for key in LIST_FIELDS:
        v = meta.get(key)
        if v is None:
            continue
        if isinstance(v, (str, int, float)) and not isinstance(v, bool):
            v = [v]
        if not isinstance(v, list) or any(isinstance(x, (dict, list)) for x in v):
            raise bad(key, "must be a list of strings")
        meta[key] = [str(x) for x in v]


def _check_value(v: Any, bad: Bad, key: str) -> None:
    if isinstance(v, str):  # value: "0.7", as some editors write it: read as the number, kept as written
        try:
            v = float(v)
        except ValueError:
            pass
    if v is not None:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 1:
            raise bad(key, f"must be a number from 0 to 1, not {v!r}")


def _check_weights(w: Any, bad: Bad) -> None:
    if w is not None:
        if not isinstance(w, dict) or any(
                k not in WEIGHT_KEYS or isinstance(x, bool) or not isinstance(x, (int, float))
                or not WEIGHT_MIN <= x <= WEIGHT_MAX for k, x in w.items()):
            raise bad("weights", f"must map {', '.join(WEIGHT_KEYS)} to numbers {WEIGHT_MIN}–{WEIGHT_MAX}")


def build_meta(*, id: str, title: str, created: str, kind: str | None, tags: Iterable[str],
               value: float | None, source: str | None, links: Iterable[str],
               extra: Mapping[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"id": id, "title": title, "created": created, "updated": created,
                            "kind": kind, "tags": list(dict.fromkeys(tags)) or None,
                            "value": value, "status": "active", "source": source,
                            "links": [wikilink(unwrap_link(x)) for x in links] or None}
    meta.update(extra)
    return {k: v for k, v in meta.items() if v is not None}


# ---------------------------------------------------------------------------
# sections: structured fields written as markdown after the main text

# Structured reasoning (dsh-chain) and narrative (Tideline) are written as
# markdown sections after the main text, so a person reads them as prose.
SECTIONS = {
    "evidence": "Evidence",
    "hesitation": "Hesitation",
    "conclusion": "Conclusion",
    "context": "Context",
    "gesture": "Gesture",
    "direction": "Cognition direction",
}
_HEADING_TO_SECTION = {v.lower(): k for k, v in SECTIONS.items()}


_SECTION_RE = re.compile(r"^## (.+?)\s*$", re.MULTILINE)


def split_sections(body: str) -> tuple[str, dict[str, str]]:
    """Split the known '## Evidence'-style sections off the end of the body."""
    sections: dict[str, str] = {}
    matches = [m for m in _SECTION_RE.finditer(body) if m.group(1).lower() in _HEADING_TO_SECTION]
    if not matches:
        return body.strip("\n"), sections
    main = body[: matches[0].start()]
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
        sections[_HEADING_TO_SECTION[m.group(1).lower()]] = body[m.end():end].strip("\n")
    return main.strip("\n"), sections


def _lf(s: str) -> str:
    return s.replace("\r\n", "\n").replace("\r", "\n")


def compose_body(text: str, sections: Mapping[str, Any] | None = None) -> str:
    """Main text, then each given section as '## Heading' with a list or a paragraph.
    Line ends become '\n': a file is read that way, so the body a caller gets
    back from ``add`` is the body every later reader sees."""
    text = _lf(text)
    parts = [text.strip("\n")]
    for key, heading in SECTIONS.items():
        val = (sections or {}).get(key)
        if not val:
            continue
        if isinstance(val, str):
            content = _lf(val).strip("\n")
        else:
            content = "\n".join(f"- {' '.join(str(v).split())}" for v in val)
        parts.append(f"## {heading}\n{content}")
    return "\n\n".join(p for p in parts if p) + "\n"
