"""How the view keeps frontmatter: compactly in memory (``Meta``, sharing
what a ``Pool`` holds), as JSON in the index snapshot (``freeze`` /
``thaw``), and as that JSON until a reader asks (``Encoded``: a warm open
does not parse the frontmatter of notes nobody reads); and the view's map of
names (``Named``). Pure.

At 100,000 notes every byte an entry holds is 100 kB: a parsed frontmatter
dict of 9 keys takes 272 bytes before its values; a ``Meta`` 160.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from typing import Any, Iterator, Mapping, TypeVar

from ..model.names import Place



class Meta(Mapping[str, Any]):
    """Read-only frontmatter, as the view holds it for every note: the values
    in one tuple, the keys in a key → position map that every note written
    with the same keys in the same order shares. A third of a dict's memory
    (a parsed frontmatter dict of 9 keys takes 640 bytes, this 160). Reads
    as a dict does (``get``, ``in``, ``items``, ``dict(meta)``, equality,
    ``copy()`` and ``|``, which give a dict); a change is made on a copy, as
    before. Not a dict: ``json.dumps`` and ``yaml.safe_dump`` take
    ``dict(meta)`` (or ``Entry.to_dict()``)."""

    __slots__ = ("_at", "_values")

    def __init__(self, at: Mapping[str, int], values: tuple[Any, ...]) -> None:
        self._at = at
        self._values = values

    def __getitem__(self, key: str) -> Any:
        v = self._values[self._at[key]]
        return list(v) if type(v) is tuple else v  # (a list is kept as a tuple: see Pool.value)

    def get(self, key: str, default: Any = None) -> Any:
        i = self._at.get(key)
        if i is None:
            return default
        v = self._values[i]
        return list(v) if type(v) is tuple else v

    def __contains__(self, key: object) -> bool:
        return key in self._at

    def __iter__(self) -> Iterator[str]:
        return iter(self._at)

    def __len__(self) -> int:
        return len(self._at)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Meta) and other._at is self._at:
            return self._values == other._values
        return isinstance(other, Mapping) and dict(self) == dict(other)

    __hash__ = None  # type: ignore[assignment]  # as a dict's

    def __repr__(self) -> str:
        return repr(dict(self))

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self),)  # a copy elsewhere (another process) is a dict

    # (what a caller did with the dict ``entry.meta`` was before: a copy or a
    # merge is a dict of its own, to change at will)
    def copy(self) -> dict[str, Any]:
        return dict(self)

    def __or__(self, other: Any) -> dict[str, Any]:
        if not isinstance(other, Mapping):
            return NotImplemented
        return {**self, **other}

    def __ror__(self, other: Any) -> dict[str, Any]:
        if not isinstance(other, Mapping):
            return NotImplemented
        return {**other, **self}


# text this long or shorter repeats (kinds, statuses, tags) and is shared;
# longer text is a title or a time, one of a kind
SHORT_TEXT = 40
# layouts of keys a pool writes frontmatter by (``Pool.shaped``); past it, as objects
MAX_SHAPES = 4096
_V = TypeVar("_V")


class Pool:
    """What notes' frontmatter shares (``compact``): one key map for each
    layout of keys, one object for each repeated short value (a kind, a
    status, a source, a tag, a value)."""

    __slots__ = ("layouts", "text", "numbers", "lists", "places", "shapes", "_shape_of")

    def __init__(self) -> None:
        # keys → (key → position, the positions worth sharing, updated's, created's)
        self.layouts: dict[tuple[str, ...], tuple[dict[str, int], tuple[int, ...], int, int]] = {}
        self.text: dict[str, str] = {}
        self.numbers: dict[float, float] = {}
        self.lists: dict[tuple[str, ...], tuple[str, ...]] = {}
        self.places: dict[str, Place] = {}  # folder → its place (names.place)
        # the layouts of keys the index snapshot's frontmatter is written by (``shaped``)
        self.shapes: list[tuple[str, ...]] = []
        self._shape_of: dict[tuple[str, ...], int] = {}

    def shaped(self, data: dict[str, Any]) -> bytes:
        """A note's frontmatter (JSON data: ``for_snapshot``) as the index
        snapshot keeps it: ``[n, values…]``, ``n`` the number of its layout
        of keys in ``shapes``, which the snapshot keeps once (its keys were
        ~70 bytes of every note's text at 100k notes); a layout past
        ``MAX_SHAPES`` as a JSON object. ``TypeError`` or ``ValueError`` for
        what JSON cannot hold. (Called by a snapshot's save, which holds the
        view's lock: two never add layouts at once.)"""
        keys = tuple(data)
        n = self._shape_of.get(keys)
        if n is None and len(self.shapes) < MAX_SHAPES:
            n = self._shape_of[keys] = len(self.shapes)
            self.shapes.append(keys)
        return json.dumps(data if n is None else [n, *data.values()], ensure_ascii=False,
                          separators=(",", ":")).encode("utf-8")

    def adopt(self, shapes: list[tuple[str, ...]]) -> None:
        """The layouts of a snapshot whose notes this pool reads (before any is read)."""
        self.shapes = list(shapes)
        self._shape_of = {keys: n for n, keys in enumerate(self.shapes)}

    def unshaped(self, raw: bytes) -> dict[str, Any]:
        """``shaped``'s text as JSON data again. ``ValueError`` (a snapshot
        that does not hold together: read the file instead)."""
        got = json.loads(raw)
        if type(got) is dict:
            return got
        keys = self.shape(raw)
        if type(got) is not list or keys is None or len(keys) != len(got) - 1:
            raise ValueError("frontmatter of no known layout")
        return dict(zip(keys, got[1:]))

    def shape(self, raw: bytes) -> tuple[str, ...] | None:
        """The keys of ``shaped``'s text, read from its start; None for a JSON object."""
        if raw[:1] != b"[":
            return None
        end = raw.find(b",")
        try:
            n = int(raw[1:end if end > 0 else -1])
        except ValueError:
            return None
        return self.shapes[n] if 0 <= n < len(self.shapes) else None

    def value(self, v: Any) -> Any:
        t = type(v)
        if t is str:
            # short text repeats (kinds, statuses, tags); long text is a title or a time
            return self.text.setdefault(v, v) if len(v) <= SHORT_TEXT else v
        if t is float:
            # (0.0 stays itself: -0.0 equals it but is written differently;
            # NaN equals nothing, so it is never shared)
            return self.numbers.setdefault(v, v) if v and not math.isnan(v) else v
        if t is list:
            # a list of short text (tags, the kind of list that repeats) is kept
            # as one shared tuple, and read back as a new list (YAML and JSON
            # never make a tuple, so a tuple always stands for a list)
            if all(type(x) is str and len(x) <= SHORT_TEXT for x in v):
                kept = tuple(self.text.setdefault(x, x) for x in v)
                return self.lists.setdefault(kept, kept)
            return v
        return v


# fields whose value is one of a kind for each note: never worth a place in the
# pool (it would hold one entry a note); ``updated`` is the same string as
# ``created`` until a note is changed
_OWN = frozenset(("id", "title", "created", "updated", "reason"))


def compact(meta: Mapping[str, Any], pool: Pool) -> Meta | Encoded:
    """``meta`` as the view keeps it (see ``Meta``), sharing what ``pool`` holds."""
    if isinstance(meta, (Meta, Encoded)):
        return meta
    keys = tuple(meta)
    layout = pool.layouts.get(keys)
    if layout is None:
        at = {k: i for i, k in enumerate(keys)}
        layout = pool.layouts[keys] = (at, tuple(i for i, k in enumerate(keys) if k not in _OWN),
                                       at.get("updated", -1), at.get("created", -1))
    at, shared, iu, ic = layout
    # (Pool.value, inlined: this runs for every note of a warm open)
    text, numbers, lists, value, isnan = pool.text, pool.numbers, pool.lists, pool.value, math.isnan
    values = list(meta.values())
    for i in shared:
        v = values[i]
        t = type(v)
        if t is str:
            if len(v) <= SHORT_TEXT:
                values[i] = text.setdefault(v, v)
        elif t is float:
            if v and not isnan(v):  # (see Pool.value)
                values[i] = numbers.setdefault(v, v)
        elif t is list:
            try:
                values[i] = lists.get(tuple(v)) or value(v)  # (a list seen before: its shared tuple)
            except TypeError:  # (it holds a list or a mapping: kept as it is)
                pass
    if iu >= 0 and ic >= 0 and values[iu] == values[ic]:
        values[iu] = values[ic]  # never updated: one string for both
    return Meta(at, tuple(values))


def _verbatim(text: str) -> bool:
    """Whether JSON (``ensure_ascii=False``) writes ``text`` as it is: no
    quote, backslash or control character to escape."""
    return text.isprintable() and '"' not in text and "\\" not in text


class Encoded(Mapping[str, Any]):
    """Frontmatter as the index snapshot keeps it (``freeze``'s JSON, UTF-8),
    read into a ``Meta`` the first time anything of it is asked. A warm open
    of 100,000 notes parsed every note's frontmatter and pooled its values
    (a third of the open's time) for searches that read a few dozen of them.

    Reads as ``Meta`` does. A question for a key the text does not hold
    (``get``, ``in``) is answered from the text itself, without parsing it:
    the people a note names (``entities``) are asked of every note by the
    first search. Safe from several threads: parsing twice gives equal
    values, and the one slot holds the text or the ``Meta``, never neither."""

    __slots__ = ("_v", "_pool")

    def __init__(self, raw: bytes, pool: Pool) -> None:
        self._v: bytes | Meta = raw  # the text until read, then the Meta (one slot: 100,000 of them)
        self._pool = pool

    @property
    def raw(self) -> bytes | None:
        """The JSON text, or None once read."""
        v = self._v
        return v if type(v) is bytes else None

    def _read(self) -> Meta:
        v = self._v
        if type(v) is not bytes:
            return v  # type: ignore[return-value]
        got = compact(thaw(self._pool.unshaped(v)), self._pool)
        assert isinstance(got, Meta)
        self._v = got
        return got

    def _absent(self, key: object) -> bool:
        """Whether the text surely has no such key: its layout's keys
        (``Pool.shaped``) lack it, or in a JSON object its JSON form (a key
        JSON writes as it is) appears nowhere. (There, a value equal to the
        key, or a nested key, only makes it read.)"""
        v = self._v
        if type(v) is not bytes or type(key) is not str:
            return False
        keys = self._pool.shape(v)
        if keys is not None:
            return key not in keys
        return _verbatim(key) and b'"' + key.encode("utf-8") + b'"' not in v

    def may_hold(self, text: str) -> bool:
        """False when no value of the frontmatter can be ``text``, or a text
        holding it (its JSON form appears nowhere), without parsing it. Keys
        are not asked (a layout's text does not spell them; ``in`` answers
        for a key): a first search asks this of every note at 100k, and
        reading each one's layout for keys was most of that walk."""
        v = self._v
        return type(v) is not bytes or not _verbatim(text) or text.encode("utf-8") in v

    def __getitem__(self, key: str) -> Any:
        if self._absent(key):
            raise KeyError(key)
        return self._read()[key]

    def get(self, key: str, default: Any = None) -> Any:
        if self._absent(key):
            return default
        return self._read().get(key, default)

    def __contains__(self, key: object) -> bool:
        return not self._absent(key) and key in self._read()

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())

    def __eq__(self, other: object) -> bool:
        return self._read() == other

    __hash__ = None  # type: ignore[assignment]  # as a dict's

    def __repr__(self) -> str:
        return repr(self._read())

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self._read()),)

    def copy(self) -> dict[str, Any]:
        return dict(self._read())

    def __or__(self, other: Any) -> dict[str, Any]:
        return self._read().__or__(other)

    def __ror__(self, other: Any) -> dict[str, Any]:
        return self._read().__ror__(other)


class _FromNotes(Mapping[str, _V]):
    """A map the view derives from its notes (``entries``: id → entry),
    built on first use (``_build``) and then kept current by the view: a
    process that only searches never builds it."""

    __slots__ = ("_ids", "_entries")

    def __init__(self, entries: Mapping[str, Any]) -> None:
        self._entries = entries
        self._ids: dict[str, Any] | None = None

    def _build(self) -> dict[str, Any]:
        raise NotImplementedError

    def _all(self) -> dict[str, Any]:
        ids = self._ids
        if ids is None:
            ids = self._ids = self._build()
        return ids

    def __contains__(self, key: object) -> bool:
        return key in self._all()

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


class Paths(_FromNotes[str]):
    """Path → the id of the note there (the view's ``by_path``; 4 MB at 100k notes)."""

    __slots__ = ()

    def _build(self) -> dict[str, Any]:
        return {e.path: eid for eid, e in self._entries.items()}

    def __getitem__(self, path: str) -> str:
        return self._all()[path]  # type: ignore[no-any-return]

    def get(self, path: str, default: Any = None) -> Any:
        return self._all().get(path, default)

    def __setitem__(self, path: str, eid: str) -> None:
        """(The view) the note ``eid``, already among its notes, is at ``path``."""
        if self._ids is not None:
            self._ids[path] = eid

    def pop(self, path: str, default: Any = None) -> Any:
        """(The view) the note at ``path``, about to leave its notes: its id."""
        return self._all().pop(path, default)


def _with(had: str | tuple[str, ...] | None, eid: str) -> str | tuple[str, ...]:
    return eid if had is None else (*((had,) if type(had) is str else had), eid)


class Named(_FromNotes[tuple[str, ...]]):
    """Name → the ids of the notes of that name (the view's ``by_name``;
    13 MB of names at 100k notes). Reads as a dict of tuples; holds one
    note's id itself, not a tuple of one (more than one only where a person
    named notes alike by hand)."""

    __slots__ = ()

    def _build(self) -> dict[str, Any]:
        ids: dict[str, Any] = {}
        for eid, e in self._entries.items():
            name = e.name
            ids[name] = _with(ids.get(name), eid)
        return ids

    def __getitem__(self, name: str) -> tuple[str, ...]:
        v = self._all()[name]
        return (v,) if type(v) is str else v

    def get(self, name: str, default: Any = None) -> Any:
        v = self._all().get(name)
        return default if v is None else (v,) if type(v) is str else v

    def add(self, name: str, eid: str) -> None:
        """(The view) the note ``eid``, already among its notes, is named ``name``."""
        ids = self._ids
        if ids is not None:
            ids[name] = _with(ids.get(name), eid)

    def rename(self, old: str, new: str, eid: str) -> None:
        """(The view) the note ``eid`` is named ``new`` now, not ``old``."""
        if old != new:
            self.discard(old, eid)
            self.add(new, eid)

    def discard(self, name: str, eid: str) -> None:
        """(The view) the note ``eid``, no longer among its notes, was named ``name``."""
        ids = self._ids
        if ids is None:
            return
        left = tuple(i for i in self.get(name, ()) if i != eid)
        if len(left) > 1:
            ids[name] = left
        elif left:
            ids[name] = left[0]
        else:
            ids.pop(name, None)


_FROZEN = "\x00dated"  # a snapshot's frontmatter holding tagged dates (see freeze)
_T = "\x00t"


def freeze(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """Frontmatter as JSON keeps it exactly, for the index snapshot: dates and
    date-times (Obsidian's date properties, common in a person's notes) as
    tagged text; None when it holds anything else JSON would change, or a
    key the tags are told by (a person may type one: ``thaw`` would read it
    as a tag)."""
    def enc(v: Any) -> Any:
        if isinstance(v, _dt.datetime):
            return {_T: v.isoformat(), "k": "dt"}
        if isinstance(v, _dt.date):
            return {_T: v.isoformat(), "k": "d"}
        if isinstance(v, dict):
            if not all(isinstance(k, str) for k in v) or _T in v or _FROZEN in v:
                raise TypeError("a key JSON would turn into text, or one of the tags'")
            return {k: enc(x) for k, x in v.items()}
        if isinstance(v, list):
            return [enc(x) for x in v]
        if v is None or isinstance(v, (str, bool, int)) or isinstance(v, float) and math.isfinite(v):
            return v
        raise TypeError(type(v).__name__)
    try:
        return {_FROZEN: 1, **enc(dict(meta))}
    except (TypeError, RecursionError):
        return None


def for_snapshot(meta: Mapping[str, Any], plain: bool) -> dict[str, Any] | None:
    """What the index snapshot keeps of ``meta`` (``plain``: JSON data, no
    dates), for ``thaw`` to give back as it is; None when it cannot."""
    return dict(meta) if plain and _FROZEN not in meta else freeze(meta)


def thaw(meta: dict[str, Any]) -> dict[str, Any]:
    """What ``freeze`` kept, as it was (frontmatter without dates: itself)."""
    if _FROZEN not in meta:
        return meta

    def dec(v: Any) -> Any:
        if isinstance(v, dict):
            if _T in v:
                return (_dt.datetime if v.get("k") == "dt" else _dt.date).fromisoformat(v[_T])
            return {k: dec(x) for k, x in v.items()}
        if isinstance(v, list):
            return [dec(x) for x in v]
        return v
    return {k: dec(x) for k, x in meta.items() if k != _FROZEN}
