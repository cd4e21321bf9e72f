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

import contextlib
import datetime as _dt
import hashlib
import re
from typing import Any, Mapping, NamedTuple

import yaml

from . import obsidian as O
from ..errors import ParseError
from .fields import (FIELD_ORDER, UTC, parse_time, split_sections, unwrap_link, validate_meta,
                     value_from_weights)
from .names import Place, in_layer, place, split_path
from .shape import MAX_META_SIZE, check_shape

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

    A value: what it derives (id, place, tags, links, …) it works out once and
    keeps. The view holds its notes as a subclass of its own (``view.held``).
    """

    __slots__ = ("meta", "_body", "path", "version", "tz", "warnings",
                 # derived once, on first use (until then, reading one raises AttributeError)
                 "_id", "_ref", "_layer", "_room", "_tags", "_tag_set", "_links", "_created_ts")
    meta: Mapping[str, Any]
    _body: str
    path: str
    version: str
    tz: _dt.tzinfo
    warnings: tuple[str, ...]
    _id: str
    _ref: bool
    _layer: str
    _room: str
    _tags: tuple[str, ...]
    _tag_set: frozenset[str]
    _links: tuple[str, ...]
    _created_ts: float | None

    def __init__(self, meta: Mapping[str, Any], body: str, path: str = "", version: str = "", *,
                 tz: _dt.tzinfo = UTC, warnings: tuple[str, ...] = ()) -> None:
        if not isinstance(body, str):
            raise TypeError("an entry needs its body")
        put = object.__setattr__
        put(self, "meta", meta)
        put(self, "_body", body)
        put(self, "path", path)
        put(self, "version", version)
        put(self, "tz", tz)
        put(self, "warnings", warnings)

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
        # a copy elsewhere (another process) is the value, its body as text
        return _rebuild, (dict(self.meta), self.body, self.path, self.version, (self.tz, self.warnings))

    @property
    def body(self) -> str:
        """The markdown after the frontmatter: the text that was indexed."""
        return self._body

    def derive(self, strings: dict[str, str], places: dict[str, Place], eid: str | None = None) -> None:
        """Work out the id and the place now rather than on first use (the view does, for every
        note it holds: what every reader asks first), sharing strings through ``strings`` and
        ``places`` (``names.place``). ``eid``: the id, known already (the frontmatter is not read)."""
        put = object.__setattr__
        path = self.path
        ref = False
        if path:
            ref, layer, room = place(path, strings, places)
            put(self, "_layer", layer)
            put(self, "_room", room)
        put(self, "_ref", ref)
        if eid is None:
            eid = id_of(self.meta, path) if ref or "id" not in self.meta else self.meta["id"]
        put(self, "_id", eid)

    def may_hold(self, text: str) -> bool:
        """False when the frontmatter surely holds no ``text`` (known without
        reading it: ``view.held``); True when it may."""
        return True

    # --- identity and place
    @property
    def id(self) -> str:
        try:
            return self._id
        except AttributeError:  # (slots are read directly: this is called often)
            i = self.meta["id"] if not self.reference else id_of(self.meta, self.path)
            object.__setattr__(self, "_id", i)
            return i
    @property
    def reference(self) -> bool:
        """A person's note (outside the layer folders): searchable and
        linkable, never moved, decayed or written by sediment."""
        try:
            return self._ref
        except AttributeError:
            r = bool(self.path) and not in_layer(self.path)
            object.__setattr__(self, "_ref", r)
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

    def _place(self) -> tuple[str, str, str]:
        place = split_path(self.path) if self.path else ("", "", "")
        for slot, v in zip(("_layer", "_room"), place):
            object.__setattr__(self, slot, v)
        return place

    @property
    def layer(self) -> str:
        return self._layer if hasattr(self, "_layer") else self._place()[0]
    @property
    def room(self) -> str:
        return self._room if hasattr(self, "_room") else self._place()[1]
    @property
    def name(self) -> str:
        """The file name without ``.md`` (Obsidian's name of the note). Cut
        from the path when asked, not kept: 9 MB of strings at 100k notes."""
        return self.path.rpartition("/")[2][:-3]

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
    @property
    def created_ts(self) -> float | None:
        """``created`` as a POSIX time (found once); None when it cannot be read."""
        try:
            return self._created_ts
        except AttributeError:
            try:
                t: float | None = self.created.timestamp()
            except (ParseError, KeyError, OverflowError, ValueError):
                t = None
            object.__setattr__(self, "_created_ts", t)
            return t

    def _file_time(self, keys: tuple[str, ...], which: str) -> _dt.datetime:
        """A person's note's time: its property (``created``, ``date``, …), else its file's."""
        t = O.time_property(self.meta, keys, self.tz)
        if t is not None:
            return t
        ts = self.file_time(which)
        if ts is None:
            if which == "updated":
                return self.created
            raise ParseError(f"{self.path}: no {which} time known", path=self.path, key=which)
        return _dt.datetime.fromtimestamp(ts, self.tz)

    def file_time(self, which: str) -> float | None:
        """The file's ``which`` time (``created``, ``updated``; POSIX) apart from its properties:
        unknown to a value; the view knows its files' (the first commit, the mtime)."""
        return None
    @property
    def kind(self) -> str:
        if self.reference:
            return O.text_of(self.meta.get("kind")) or "reference"
        return self.meta.get("kind") or "inbox"
    @property
    def tags(self) -> tuple[str, ...]:
        """The ``tags`` property, then inline ``#tags`` of the body, as written (no ``#``)."""
        try:
            return self._tags
        except AttributeError:
            t = tuple(dict.fromkeys([*O.property_tags(self.meta.get("tags")), *O.inline_tags(self.body)]))
            object.__setattr__(self, "_tags", t)
            return t
    @property
    def tag_set(self) -> frozenset[str]:
        """The tags and every tag they are nested under (``a/b`` is also ``a``)."""
        try:
            return self._tag_set
        except AttributeError:
            t = O.tag_closure(self.tags)
            object.__setattr__(self, "_tag_set", t)
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
        frontmatter and [[wikilinks]] and ![[embeds]] in the body (not in code); a person's
        note also from ``[[links]]`` in any property."""
        try:
            return self._links
        except AttributeError:
            names = [unwrap_link(x).split("|")[0].split("#")[0] for x in O.items(self.meta.get("links"))]
            names += [x.target for x in O.wikilinks(O.outside_code(self.body))]  # code is no link
            if self.reference:
                names += O.property_links(self.meta)
            out = tuple(dict.fromkeys(n for n in (O.link_key(x) for x in names) if n))
            object.__setattr__(self, "_links", out)
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
        """This entry, carrying warnings for the caller (a copy of its kind: the view's stays the view's)."""
        if not warnings:
            return self
        twin = object.__new__(type(self))
        put, get = object.__setattr__, object.__getattribute__
        for name in {s for c in type(self).__mro__ for s in getattr(c, "__slots__", ())}:
            with contextlib.suppress(AttributeError):  # (derived: not worked out yet)
                put(twin, name, get(self, name))
        put(twin, "warnings", self.warnings + warnings)
        return twin


def _rebuild(meta: dict[str, Any], body: str, path: str, version: str,
             tz_warnings: tuple[_dt.tzinfo, tuple[str, ...]]) -> Entry:
    return Entry(meta, body, path, version, tz=tz_warnings[0], warnings=tz_warnings[1])


def id_of(meta: Mapping[str, Any], rel: str) -> str:
    """The id of the note at ``rel`` with this frontmatter: its ``id``; for a
    person's note without one, the id derived from its path."""
    if in_layer(rel) or not rel:
        return str(meta.get("id"))
    return O.own_id(meta.get("id")) or O.path_id(rel)
def one_line(s: Any, limit: int = 300) -> str:
    """Collapse whitespace (a reason is one line of frontmatter)."""
    return " ".join(str(s).split())[:limit]


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


class Parsed(NamedTuple):
    """What ``parse_note`` found: the entry, and what reading it learnt besides."""
    entry: Entry
    plain: bool  # its frontmatter is plain JSON data (no dates): JSON keeps it as it is
    warning: str | None = None  # a person's note's properties that cannot be read (indexed by its text)


def parse(text: str | bytes, path: str = "", *, tz: _dt.tzinfo = UTC,
          max_meta_size: int = MAX_META_SIZE) -> Entry:
    """Read a memory file. Raises ``ParseError`` (with ``path``, ``line`` where known and a
    reason) for anything that is not a valid memory; never guesses a fix. Tolerated without
    complaint: a UTF-8 BOM and CRLF line ends (editors on Windows write them); ``density``
    as the old name of ``value``."""
    return parse_note(text, path, tz=tz, max_meta_size=max_meta_size).entry


def parse_note(text: str | bytes, path: str = "", *, tz: _dt.tzinfo = UTC,
               max_meta_size: int = MAX_META_SIZE) -> Parsed:
    """``parse``, and what reading found besides the entry (what the view keeps of its notes)."""
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
    return Parsed(Entry(meta=meta, body=body, path=path, version=version, tz=tz), plain)


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


def _parse_persons(s: str, path: str, version: str, tz: _dt.tzinfo, max_meta_size: int) -> Parsed:
    """A person's note, read as Obsidian reads it: any text is a note. Without
    a closed frontmatter it is all body; frontmatter that cannot be read is
    left out of its properties and named in ``Parsed.warning`` (``check``
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
    return Parsed(entry, plain and all(isinstance(k, str) for k in meta), warning or None)

