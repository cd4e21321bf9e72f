"""The memory value type and its file format: ``parse(text, path)`` ⇄ ``render(entry)``.

A memory is markdown with YAML frontmatter. Keys are written in a fixed order
(``FIELD_ORDER``, then any other keys in the order they were found), times are
quoted ISO 8601 strings with a UTC offset, Unicode is written as-is, and lists
are written in block style, which is what Obsidian writes itself. Because the
order and style are fixed, render → parse → render is byte-identical.

Where the file lives says what the frontmatter does not: ``<layer>/<room>/<name>.md``.
The layer is the folder, so a note a person moved by hand is where it is.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import re
import secrets
import time
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

import yaml

from .errors import InvalidInput, ParseError
from .names import LAYERS as LAYERS  # part of this module's API: entry.LAYERS
from .names import split_path
from .shape import MAX_META_SIZE, check_shape
from .shape import is_plain as is_plain  # part of this module's API

# The C loader and emitter are several times faster than PyYAML's own. But
# libyaml escapes characters outside the BMP (an emoji tag becomes
# "\U0001F680"), and Unicode must be written as-is: such frontmatter is
# emitted again by the pure-Python emitter. The choice depends only on the
# data, so rendering stays deterministic.
from yaml import SafeDumper as _PyDumper
try:
    from yaml import CSafeDumper as _Dumper, CSafeLoader as _Loader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeDumper as _Dumper, SafeLoader as _Loader  # type: ignore[assignment]

STATUSES = ("active", "superseded", "archived", "purged")
_CONFLICT = re.compile(r"^<{7}(?: |$)", re.MULTILINE)
_CONFLICT_END = re.compile(r"^>{7}(?: |$)", re.MULTILINE)


def has_conflict_markers(text: str) -> bool:
    """Both ends of a git merge conflict (<<<<<<< … >>>>>>>) on lines of their own."""
    start = _CONFLICT.search(text)
    return bool(start and _CONFLICT_END.search(text, start.end()))

# The frontmatter fields we know, in the order they are written. Anything else a
# caller or a person adds is kept and written after these, in its own order.
FIELD_ORDER = (
    "id", "title", "created", "updated", "kind", "tags", "value", "weights",
    "status", "source", "source_links", "event", "links", "supersedes",
    "superseded_by", "reason", "unclassified",
)
LIST_FIELDS = ("tags", "source_links", "links", "supersedes", "superseded_by")
WEIGHT_KEYS = ("importance", "emotional", "recurrence", "unresolved")
# Tideline's weights → one value; the shares add up to 1.
WEIGHT_SHARES = {"importance": 0.35, "emotional": 0.25, "recurrence": 0.25, "unresolved": 0.15}

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


# ---------------------------------------------------------------------------
# the value type

@dataclass(frozen=True, slots=True)
class Entry:
    """One memory as it is on disk. Immutable: the repository makes new ones.

    ``meta`` is the frontmatter (plain YAML types), ``body`` the markdown after it,
    ``path`` the location relative to the root (posix), ``version`` a hash of the
    file's bytes — pass it back as ``update(..., expected=entry.version)``.
    """

    meta: Mapping[str, Any]
    body: str
    path: str = ""
    version: str = ""
    _cache: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)
    # the root's timezone: where a date without a time (or a time without an
    # offset) that a person wrote is read
    tz: _dt.tzinfo = field(default=UTC, compare=False, repr=False)
    # what the call that returned this entry wants its caller to know (a link to
    # no memory yet, a duplicate returned instead of a new note); not stored
    warnings: tuple[str, ...] = field(default=(), compare=False, repr=False)

    # --- identity and place
    @property
    def id(self) -> str: return self.meta["id"]
    @property
    def title(self) -> str: return self.meta.get("title") or ""
    def _where(self) -> tuple[str, str, str]:
        w = self._cache.get("where")
        if w is None:
            w = self._cache["where"] = split_path(self.path) if self.path else ("", "", "")
        return w

    @property
    def layer(self) -> str: return self._where()[0]
    @property
    def room(self) -> str: return self._where()[1]
    @property
    def name(self) -> str: return self._where()[2]

    # --- typed fields
    @property
    def text(self) -> str:
        """The main text: the body without the structured sections."""
        return split_sections(self.body)[0]
    @property
    def created(self) -> _dt.datetime: return parse_time(self.meta["created"], key="created", tz=self.tz)
    @property
    def updated(self) -> _dt.datetime:
        return parse_time(self.meta.get("updated") or self.meta["created"], key="updated", tz=self.tz)
    @property
    def kind(self) -> str: return self.meta.get("kind") or "inbox"
    @property
    def tags(self) -> tuple[str, ...]: return tuple(self.meta.get("tags") or ())
    @property
    def value(self) -> float:
        v = self.meta.get("value")
        if v is None and self.meta.get("weights"):
            return value_from_weights(self.meta["weights"])
        return 0.5 if v is None else float(v)
    @property
    def status(self) -> str: return self.meta.get("status") or "active"
    @property
    def source(self) -> str | None: return self.meta.get("source")
    @property
    def source_links(self) -> tuple[str, ...]: return tuple(self.meta.get("source_links") or ())
    @property
    def event(self) -> str | None: return self.meta.get("event")
    @property
    def links(self) -> tuple[str, ...]:
        """Names this memory links to, from the frontmatter and [[wikilinks]] in the body."""
        names = [unwrap_link(x) for x in self.meta.get("links") or ()]
        names += WIKILINK.findall(self.body)
        return tuple(dict.fromkeys(n.split("|")[0].split("#")[0].strip() for n in names if n))
    @property
    def sections(self) -> dict[str, str]:
        return split_sections(self.body)[1]

    def get(self, key: str, default: Any = None) -> Any:
        return self.meta.get(key, default)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (CLI --json)."""
        out = {"id": self.id, "path": self.path, "layer": self.layer, "room": self.room,
               "name": self.name, "version": self.version, **{k: v for k, v in self.meta.items()
                                                              if k != "id"}, "body": self.body}
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out

    def with_(self, *, meta: Mapping[str, Any] | None = None, body: str | None = None,
              path: str | None = None) -> "Entry":
        return replace(self, meta=dict(self.meta if meta is None else meta),
                       body=self.body if body is None else body,
                       path=self.path if path is None else path, version="", _cache={}, warnings=())

    def warn(self, *warnings: str) -> "Entry":
        """This entry, carrying warnings for the caller."""
        return replace(self, warnings=self.warnings + warnings) if warnings else self


WIKILINK = re.compile(r"\[\[([^\[\]\n]+)\]\]")
_EMBED_OR_LINK = re.compile(r"!?\[\[([^\[\]\n]+)\]\]")


def display_text(body: str) -> str:
    """The body as a reader sees it: each wikilink replaced by the text it
    shows (``[[name|label]]`` → label, ``[[name#part]]`` → name)."""
    def shown(m: re.Match[str]) -> str:
        target, _, label = m.group(1).partition("|")
        return label.strip() or target.split("#")[0].strip()
    return _EMBED_OR_LINK.sub(shown, body) if "[[" in body else body


def one_line(s: Any, limit: int = 300) -> str:
    """Collapse whitespace (a reason is one line of frontmatter)."""
    return " ".join(str(s).split())[:limit]


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


# ---------------------------------------------------------------------------
# sections

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


# ---------------------------------------------------------------------------
# parse and render

def content_version(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _order(meta: Mapping[str, Any]) -> dict[str, Any]:
    out = {k: meta[k] for k in FIELD_ORDER if k in meta and meta[k] is not None}
    out.update((k, v) for k, v in meta.items() if k not in out and v is not None)
    return out


def _dump(meta: dict[str, Any], dumper: Any) -> str:
    return yaml.dump(meta, Dumper=dumper, allow_unicode=True, sort_keys=False, default_flow_style=False,
                     width=10_000)


def render(entry: Entry) -> str:
    """The file text of an entry. Deterministic: the same entry gives the same bytes."""
    meta = _order(entry.meta)
    fm = _dump(meta, _Dumper)
    if "\\U" in fm or "\\u" in fm:
        alt = _dump(meta, _PyDumper)
        # the pure emitter writes some line breaks raw inside quotes (NEL, U+0085),
        # which a reader folds: take its output only when it reads back the same
        if yaml.load(alt, Loader=_Loader) == meta:
            fm = alt
    body = entry.body
    if body and not body.endswith("\n"):
        body += "\n"
    return f"---\n{fm}---\n{body}"


def _line_of(exc: yaml.YAMLError) -> int | None:
    mark = getattr(exc, "problem_mark", None)
    return None if mark is None else mark.line + 2  # +1 for 0-based, +1 for the opening '---'


def parse(text: str | bytes, path: str = "", *, tz: _dt.tzinfo = UTC,
          max_meta_size: int = MAX_META_SIZE) -> Entry:
    """Read a memory file. Raises ``ParseError`` (with ``path``, ``line`` where known
    and a reason) for anything that is not a valid memory; never guesses a fix.

    Tolerated without complaint: a UTF-8 BOM and CRLF line ends (editors on
    Windows write them); ``density`` as the old name of ``value``.
    """
    raw = text if isinstance(text, bytes) else text.encode("utf-8")
    version = content_version(raw)
    try:
        s = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ParseError(f"{path}: not UTF-8 text", path=path, line=None) from exc
    s = s.lstrip("\ufeff").replace("\r\n", "\n")
    if not s.startswith("---\n"):
        raise ParseError(f"{path}: no frontmatter (the file must start with '---')", path=path, line=1)
    end = s.find("\n---\n", 3)
    if end < 0:
        if s.endswith("\n---"):
            end = len(s) - 4
        else:
            raise ParseError(f"{path}: frontmatter is not closed by a '---' line", path=path, line=1)
    fm_text, body = s[4:end + 1], s[end + 5:]
    conflict = _CONFLICT.search(s)
    if conflict and _CONFLICT_END.search(s, conflict.end()):
        # a git merge left both sides in the file: which one is the memory is a
        # person's call, so it is a problem until resolved (never read as text)
        line = s.count("\n", 0, conflict.start()) + 1
        raise ParseError(f"{path}:{line}: unresolved git merge conflict (<<<<<<< … >>>>>>>)", path=path,
                         line=line)
    try:
        meta = yaml.load(fm_text, Loader=_Loader) if fm_text.strip() else {}
    except yaml.YAMLError as exc:
        where = _line_of(exc)
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ParseError(f"{path}:{where or '?'}: malformed YAML: {reason}", path=path, line=where) from exc
    except Exception as exc:  # noqa: BLE001
        # PyYAML's constructors raise plain errors for what a person can type:
        # ValueError for 2024-02-30, KeyError for `!!bool maybe`, RecursionError
        # for deep nesting. Any of them makes this file a problem, never a crash.
        raise ParseError(f"{path}: frontmatter cannot be read: {type(exc).__name__}: {exc}"[:300],
                         path=path, line=None) from exc
    if not isinstance(meta, dict):
        raise ParseError(f"{path}:2: frontmatter is not a mapping", path=path, line=2)
    plain = check_shape(meta, path, max_meta_size)
    meta = validate_meta(meta, path=path, fm_text=fm_text, tz=tz)
    entry = Entry(meta=meta, body=body, path=path, version=version, tz=tz)
    entry._cache["plain"] = plain
    return entry




def _line_of_key(fm_text: str, key: str) -> int | None:
    for i, line in enumerate(fm_text.split("\n")):
        if line.startswith(f"{key}:"):
            return i + 2
    return None


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
    for key in LIST_FIELDS:
        v = meta.get(key)
        if v is None:
            continue
        if isinstance(v, (str, int, float)) and not isinstance(v, bool):
            v = [v]
        if not isinstance(v, list) or any(isinstance(x, (dict, list)) for x in v):
            raise bad(key, "must be a list of strings")
        meta[key] = [str(x) for x in v]
    v = meta.get("value")
    if isinstance(v, str):  # value: "0.7", as some editors write it: read as the number, kept as written
        try:
            v = float(v)
        except ValueError:
            pass
    if v is not None:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= 1:
            raise bad(key_for_value, f"must be a number from 0 to 1, not {v!r}")
    w = meta.get("weights")
    if w is not None:
        if not isinstance(w, dict) or any(
                k not in WEIGHT_KEYS or isinstance(x, bool) or not isinstance(x, (int, float))
                or not 1 <= x <= 5 for k, x in w.items()):
            raise bad("weights", f"must map {', '.join(WEIGHT_KEYS)} to numbers 1–5")
    for key in ("kind", "status", "source", "event", "reason"):
        if key in meta and meta[key] is not None and not isinstance(meta[key], str):
            if isinstance(meta[key], (int, float)) and not isinstance(meta[key], bool):
                meta[key] = str(meta[key])
            else:
                raise bad(key, "must be text")
    if meta.get("status") is not None and meta["status"] not in STATUSES:
        raise bad("status", f"{meta['status']!r} is not one of {', '.join(STATUSES)}")
    return meta


def build_meta(*, id: str, title: str, created: str, kind: str | None, tags: Iterable[str],
               value: float | None, source: str | None, links: Iterable[str],
               extra: Mapping[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"id": id, "title": title, "created": created, "updated": created,
                            "kind": kind, "tags": list(dict.fromkeys(tags)) or None,
                            "value": value, "status": "active", "source": source,
                            "links": [wikilink(unwrap_link(x)) for x in links] or None}
    meta.update(extra)
    return {k: v for k, v in meta.items() if v is not None}
