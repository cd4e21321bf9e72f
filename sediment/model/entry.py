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
import re
from typing import Any, Mapping

import yaml

from . import obsidian as O
from ..errors import ParseError
from .fields import (FIELD_ORDER, UTC, parse_time, split_sections, unwrap_link, validate_meta,
                     value_from_weights)
from .names import in_layer, split_path
from .shape import MAX_META_SIZE, check_shape, is_plain
from ..view.compact import Cache, Pool, Stored
from ..view.compact import compact as compact_meta
from ..view.compact import freeze

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

_CONFLICT = re.compile(r"^<{7}(?: |$)", re.MULTILINE)
_CONFLICT_END = re.compile(r"^>{7}(?: |$)", re.MULTILINE)


def has_conflict_markers(text: str) -> bool:
    """Both ends of a git merge conflict (<<<<<<< … >>>>>>>) on lines of their own."""
    start = _CONFLICT.search(text)
    return bool(start and _CONFLICT_END.search(text, start.end()))


# ---------------------------------------------------------------------------
# the value type

class Entry:
    """One memory as it is on disk. Immutable: the repository makes new ones.

    ``meta`` is the frontmatter (plain YAML types) as a read-only Mapping (the
    view keeps it as ``compact.Meta``): read it as a dict; ``dict(meta)``,
    ``meta.copy()`` and ``meta | {...}`` give a dict to change or to pass to
    ``json.dumps`` / ``yaml.safe_dump``. ``body`` is the markdown after it,
    ``path`` the location relative to the root (posix), ``version`` a hash of the
    file's bytes — pass it back as ``update(..., expected=entry.version)``.

    ``tz`` is the root's timezone: where a date without a time (or a time
    without an offset) that a person wrote is read. ``warnings``: what the
    call that returned this entry wants its caller to know (a link to no
    memory yet, a duplicate returned instead of a new note); not stored.
    Equality compares meta, body, path and version.
    """

    __slots__ = ("meta", "_body", "path", "version", "_cache", "tz", "warnings")
    meta: Mapping[str, Any]
    _body: str | None  # None: kept by _cache.stored (see body)
    path: str
    version: str
    _cache: Cache
    tz: _dt.tzinfo
    warnings: tuple[str, ...]

    def __init__(self, meta: Mapping[str, Any], body: str | None, path: str = "", version: str = "",
                 _cache: Cache | None = None, tz: _dt.tzinfo = UTC, warnings: tuple[str, ...] = (),
                 stored: tuple[Stored, int | None] | None = None) -> None:
        put = object.__setattr__
        put(self, "meta", meta)
        put(self, "_body", body)
        put(self, "path", path)
        put(self, "version", version)
        put(self, "_cache", Cache() if _cache is None else _cache)
        put(self, "tz", tz)
        put(self, "warnings", warnings)
        if body is None and stored is not None and stored[1] is not None:  # (the view: see keep_body)
            self._cache.stored, self._cache.at = stored[0], stored[1]
        elif body is None and getattr(self._cache, "at", None) is None:
            raise TypeError("an entry needs its body")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"an Entry is immutable (cannot set {name!r})")

    __delattr__ = __setattr__  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Entry):
            return NotImplemented
        return (self.path, self.version, self.body, dict(self.meta)) == (
            other.path, other.version, other.body, dict(other.meta))

    __hash__ = None  # type: ignore[assignment]  # (it holds a mapping)

    def __repr__(self) -> str:
        return f"Entry(meta={dict(self.meta)!r}, body={self.body!r}, path={self.path!r}, version={self.version!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # (a worker of the open sends entries back; a body kept on disk travels as text)
        return _rebuild, (dict(self.meta), self.body, self.path, self.version, self.tz, self.warnings,
                          {k: self._cache.get(k) for k in ("plain", "warning", "off") if k in self._cache})

    @property
    def body(self) -> str:
        """The markdown after the frontmatter: the text that was indexed. The
        view may keep it on disk (``stored``) rather than in memory."""
        b = self._body
        if b is None:
            return self._cache.stored.read(self, self._cache.at)
        return b

    def compact(self, pool: Pool) -> None:
        """(The view) keep the frontmatter as ``compact.Meta``, sharing what
        ``pool`` holds: the same mapping, in less memory, read-only; and
        derive the id and place now."""
        meta = compact_meta(self.meta, pool)
        object.__setattr__(self, "meta", meta)
        c = self._cache  # (what every reader asks first, known now: no lookup misses later)
        c.ref = ref = bool(self.path) and not in_layer(self.path)
        if self.path:  # (layer and room: one string each for the whole root)
            layer, room, c.name = split_path(self.path)
            c.layer, c.room = pool.text.setdefault(layer, layer), pool.text.setdefault(room, room)
        c.id = id_of(meta, self.path) if ref or "id" not in meta else meta["id"]

    def keep_body(self, store: Stored, at: int) -> None:
        """(The view) the body is now kept by ``store`` at ``at``: the text
        in memory is let go. ``store`` must return exactly ``self.body``."""
        self._cache.stored = store
        self._cache.at = at
        object.__setattr__(self, "_body", None)

    # --- identity and place
    @property
    def id(self) -> str:
        try:
            return self._cache.id
        except AttributeError:  # (the slots of the cache are read directly: this is called often)
            i = self._cache.id = self.meta["id"] if not self.reference else id_of(self.meta, self.path)
            return i
    @property
    def reference(self) -> bool:
        """A person's note (outside the layer folders): searchable and
        linkable, never moved, decayed or written by sediment."""
        try:
            return self._cache.ref
        except AttributeError:
            r = self._cache.ref = bool(self.path) and not in_layer(self.path)
            return r
    @property
    def title(self) -> str:
        """The ``title`` property, else the file name (Obsidian's title)."""
        t = self.meta.get("title")
        if isinstance(t, str) and t:
            return t
        return O.text_of(t) or (self.name if self.path else "")
    @property
    def aliases(self) -> tuple[str, ...]:
        """Other names of the note (``aliases``): searched as its title is, and ``[[alias]]`` links to it."""
        return O.aliases(self.meta)
    def _where(self) -> Cache:
        c = self._cache
        if not hasattr(c, "layer"):
            c.layer, c.room, c.name = split_path(self.path) if self.path else ("", "", "")
        return c

    @property
    def layer(self) -> str: return self._where().layer
    @property
    def room(self) -> str: return self._where().room
    @property
    def name(self) -> str: return self._where().name

    # --- typed fields
    @property
    def text(self) -> str:
        """The main text: the body without the structured sections."""
        return split_sections(self.body)[0]
    @property
    def created(self) -> _dt.datetime:
        if self.reference:
            return self._file_time(O.CREATED_KEYS, "created")
        return parse_time(self.meta["created"], key="created", tz=self.tz)
    @property
    def updated(self) -> _dt.datetime:
        if self.reference:
            return self._file_time(O.UPDATED_KEYS, "updated")
        return parse_time(self.meta.get("updated") or self.meta["created"], key="updated", tz=self.tz)

    def _file_time(self, keys: tuple[str, ...], which: str) -> _dt.datetime:
        """A person's note's time: its own property (``created``, ``date``, …),
        else what the view knows of the file (the first commit, the mtime)."""
        t = O.time_property(self.meta, keys, self.tz)
        if t is not None:
            return t
        clock = self._cache.get("clock")
        ts = clock(self.path, which) if clock is not None else None
        if ts is None:
            if which == "updated":
                return self.created
            raise ParseError(f"{self.path}: no {which} time known", path=self.path, key=which)
        return _dt.datetime.fromtimestamp(ts, self.tz)
    @property
    def kind(self) -> str:
        if self.reference:
            return O.text_of(self.meta.get("kind")) or "reference"
        return self.meta.get("kind") or "inbox"
    @property
    def tags(self) -> tuple[str, ...]:
        """The ``tags`` property, then inline ``#tags`` of the body, as written (no ``#``)."""
        try:
            return self._cache.tags
        except AttributeError:
            t = self._cache.tags = tuple(dict.fromkeys(
                [*O.property_tags(self.meta.get("tags")), *O.inline_tags(self.body)]))
        return t
    @property
    def tag_set(self) -> frozenset[str]:
        """The tags and every tag they are nested under (``a/b`` is also ``a``)."""
        try:
            return self._cache.tag_set
        except AttributeError:
            t = self._cache.tag_set = O.tag_closure(self.tags)
            return t
    @property
    def value(self) -> float:
        v = self.meta.get("value")
        if self.reference:
            return O.number_of(v, 0.5)
        if v is None and self.meta.get("weights"):
            return value_from_weights(self.meta["weights"])
        return 0.5 if v is None else float(v)
    @property
    def status(self) -> str:
        # a person's `status` (draft, done, …) is theirs, not a lifecycle state
        return "active" if self.reference else self.meta.get("status") or "active"
    @property
    def source(self) -> str | None:
        return O.text_of(self.meta.get("source")) if self.reference else self.meta.get("source")
    @property
    def source_links(self) -> tuple[str, ...]:
        return tuple(str(x) for x in O.items(self.meta.get("source_links")))
    @property
    def event(self) -> str | None: return None if self.reference else self.meta.get("event")
    @property
    def links(self) -> tuple[str, ...]:
        """Notes this one links to (their names, or ``folder/name``), from the
        frontmatter and [[wikilinks]] and ![[embeds]] in the body; a person's
        note also from ``[[links]]`` in any property."""
        out = self._cache.get("links")
        if out is None:
            names = [unwrap_link(x).split("|")[0].split("#")[0] for x in O.items(self.meta.get("links"))]
            names += [x.target for x in O.wikilinks(self.body)]
            if self.reference:
                names += O.property_links(self.meta)
            out = self._cache["links"] = tuple(dict.fromkeys(n for n in (O.link_key(x) for x in names) if n))
        return out
    @property
    def sections(self) -> dict[str, str]:
        return split_sections(self.body)[1]

    def get(self, key: str, default: Any = None) -> Any:
        return self.meta.get(key, default)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready view (CLI --json). A person's note says so (``reference``)
        and gives its title (the file name when it has no ``title``) and tags as read."""
        out = {"id": self.id, "path": self.path, "layer": self.layer, "room": self.room,
               "name": self.name, "version": self.version, **{k: v for k, v in self.meta.items()
                                                              if k != "id"}, "body": self.body}
        if self.reference:
            out.update(reference=True, title=self.title, tags=list(self.tags))
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out

    def with_(self, *, meta: Mapping[str, Any] | None = None, body: str | None = None,
              path: str | None = None) -> "Entry":
        return Entry(meta=dict(self.meta if meta is None else meta), body=self.body if body is None else body,
                     path=self.path if path is None else path, tz=self.tz)

    def warn(self, *warnings: str) -> "Entry":
        """This entry, carrying warnings for the caller."""
        if not warnings:
            return self
        return Entry(self.meta, self._body, self.path, self.version, self._cache, self.tz,
                     self.warnings + warnings)


def _rebuild(meta: dict[str, Any], body: str, path: str, version: str, tz: _dt.tzinfo,
             warnings: tuple[str, ...], cache: dict[str, Any]) -> Entry:
    e = Entry(meta, body, path, version, tz=tz, warnings=warnings)
    for k, v in cache.items():
        e._cache[k] = v
    return e


def id_of(meta: Mapping[str, Any], rel: str) -> str:
    """The id of the note at ``rel`` with this frontmatter: its ``id``; for a
    person's note without one, the id derived from its path."""
    if in_layer(rel) or not rel:
        return str(meta.get("id"))
    return O.own_id(meta.get("id")) or O.path_id(rel)
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


# ---------------------------------------------------------------------------
# parse and render

def snapshot_meta(e: Entry) -> dict[str, Any] | None:
    """What the index snapshot keeps of a note's frontmatter: None (parse it
    again on open) when JSON cannot keep it, or when reading it found a
    problem ``check`` must see again."""
    if e._cache.get("warning"):
        return None
    plain = e._cache.get("plain")
    if plain is None:  # (known from the parse; else found once)
        plain = e._cache["plain"] = is_plain(e.meta)
    return dict(e.meta) if plain else freeze(e.meta)


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
    s = normal(s)
    if path and not in_layer(path):
        return _parse_persons(s, path, version, tz, max_meta_size)
    parts = split(s)
    if parts is None:
        raise ParseError(f"{path}: no frontmatter (the file must start with '---')" if not s.startswith("---\n")
                         else f"{path}: frontmatter is not closed by a '---' line", path=path, line=1)
    fm_text, body = parts
    _refuse_conflict(s, path)
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


def normal(s: str) -> str:
    """A note's text as ``parse`` reads it: no BOM, LF line ends."""
    return s.lstrip("\ufeff").replace("\r\n", "\n")


def split(s: str) -> tuple[str, str] | None:
    """(frontmatter text, body) of a ``normal`` note text, or None: no closed frontmatter."""
    if not s.startswith("---\n"):
        return None
    end = s.find("\n---\n", 3)
    if end < 0:
        if not s.endswith("\n---"):
            return None
        end = len(s) - 4
    return s[4:end + 1], s[end + 5:]


def _refuse_conflict(s: str, path: str) -> None:
    conflict = _CONFLICT.search(s)
    if conflict and _CONFLICT_END.search(s, conflict.end()):
        # a git merge left both sides in the file: which one is the memory is a
        # person's call, so it is a problem until resolved (never read as text)
        line = s.count("\n", 0, conflict.start()) + 1
        raise ParseError(f"{path}:{line}: unresolved git merge conflict (<<<<<<< … >>>>>>>)", path=path,
                         line=line)


def _parse_persons(s: str, path: str, version: str, tz: _dt.tzinfo, max_meta_size: int) -> Entry:
    """A person's note, read as Obsidian reads it: any text is a note. Without
    a closed frontmatter it is all body; frontmatter that cannot be read is
    left out of its properties and named in ``_cache['warning']`` (``check``
    reports it), never an error that hides the note."""
    _refuse_conflict(s, path)
    meta: Any = {}
    body, warning = s, None
    parts = split(s)
    if parts is not None:
        fm_text, body = parts
        try:
            meta = O.load_properties(fm_text)
            if not isinstance(meta, dict):
                raise ParseError("the frontmatter is not a mapping")
            plain = check_shape(meta, path, max_meta_size)
        except Exception as exc:  # noqa: BLE001 - whatever a person typed: the note stays a note
            reason = exc.message.split(": ", 1)[-1] if isinstance(exc, ParseError) else (
                getattr(exc, "problem", None) or f"{type(exc).__name__}: {exc}")
            meta, plain, warning = {}, False, f"properties cannot be read ({str(reason)[:200]}); " \
                                              "indexed by its text"
    else:
        plain = True
    entry = Entry(meta={str(k): v for k, v in meta.items()}, body=body, path=path, version=version, tz=tz)
    entry._cache["plain"] = plain and all(isinstance(k, str) for k in meta)
    if warning:
        entry._cache["warning"] = warning
    return entry

