"""An entry as the view holds it (``Held``): the value ``Entry``, plus what
the view knows of its file and where it keeps its body.

The view holds every note of the root, and readers walk all of them (a
search's filters, a context block, a check), so a held entry is the entry
itself, not a record that makes entries on demand: an ``Entry`` made for
each read would cost an allocation every time, and lose what the entry
works out once (its id, place, tags, links). A subclass adds the few things
only the view has, in slots, without a second object per note:

* where its body is (``keep``): in memory, or in the view's body store
  (``bodies.py``), which gives back exactly the text that was indexed;
* ``off``: where the body starts in the note's bytes, so that the body store
  and a warm open can take it from them;
* ``plain``: whether JSON keeps its frontmatter as it is (the index snapshot);
* for a person's note, the view's clock of file times (``file_time``).

Its frontmatter is kept compact (``settle``: ``compact.Meta``, sharing what
the view's ``Pool`` holds). A held entry reads, compares, copies (``warn``)
and pickles as the value it is: a copy in another process is an ``Entry``.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Mapping, Protocol

from ..model.entry import Entry
from ..model.shape import is_plain
from .compact import Encoded, Pool, compact

Clock = Callable[[str, str], "float | None"]  # (path, 'created' | 'updated') → a POSIX time, or None
_BOM = b"\xef\xbb\xbf"


class Reader(Protocol):
    """Where the view keeps bodies out of memory (``bodies.Shelf``): gives
    back exactly the text it was given for this entry."""

    def read(self, entry: Held, at: int) -> str: ...


class Held(Entry):
    """An entry of the view (see the module's docstring). Immutable to its
    readers; only the view settles it and moves its body."""

    __slots__ = ("_shelf", "_at", "_off", "_plain", "_clock")
    _shelf: Reader | None  # None: the body is in memory
    _at: int
    _off: int | None
    _plain: bool | None
    _clock: Clock | None

    def __init__(self, meta: Mapping[str, Any], body: str, path: str, version: str, *, tz: _dt.tzinfo,
                 off: int | None = None, plain: bool | None = None) -> None:
        super().__init__(meta, body, path, version, tz=tz)
        put = object.__setattr__
        put(self, "_shelf", None)
        put(self, "_at", 0)
        put(self, "_off", off)
        put(self, "_plain", plain)
        put(self, "_clock", None)

    @classmethod
    def of(cls, entry: Entry, *, off: int | None = None, plain: bool | None = None) -> Held:
        """``entry`` as the view holds it (itself, if it is held already);
        ``off`` and ``plain`` as for ``Held``."""
        if isinstance(entry, Held):
            return entry
        return cls(entry.meta, entry.body, entry.path, entry.version, tz=entry.tz, off=off, plain=plain)

    @property
    def body(self) -> str:
        """The markdown after the frontmatter: the text that was indexed,
        from memory or from the view's body store."""
        b = self._body
        shelf = self._shelf
        # (keep lets the text go only once the store holds it: read in this
        # order, another thread's keep is seen before it or after it)
        if b or shelf is None:
            return b
        return shelf.read(self, self._at)

    @property
    def off(self) -> int | None:
        """Where the body starts in the note's bytes; None when it is no
        slice of them (a BOM, CRLF line ends), or not known."""
        return self._off

    @property
    def plain(self) -> bool:
        """Whether the frontmatter is plain JSON data (no dates): the index
        snapshot keeps it as it is. Known from the parse, else found once."""
        p = self._plain
        if p is None:
            p = is_plain(self.meta)
            object.__setattr__(self, "_plain", p)
        return p

    @property
    def in_memory(self) -> bool:
        """Whether the body is held in memory (else the body store keeps it)."""
        return self._shelf is None

    def kept_in(self, shelf: object) -> int | None:
        """Where ``shelf`` keeps the body (its ``at``), or None: not there."""
        return self._at if self._shelf is shelf and shelf is not None else None

    def keep(self, shelf: Reader, at: int) -> None:
        """(The body store) the body is now kept by ``shelf`` at ``at``, which
        gives back exactly ``self.body``: the text in memory is let go."""
        put = object.__setattr__
        put(self, "_at", at)
        put(self, "_shelf", shelf)
        put(self, "_body", "")

    def settle(self, pool: Pool, clock: Clock, eid: str | None = None) -> None:
        """(The view, taking the entry in) keep the frontmatter compact,
        sharing what ``pool`` holds, and work out the id and place now; a
        person's note takes its file times from ``clock``. ``eid``: its id,
        when the view knows it already (a note the index snapshot vouches
        for, its frontmatter still its JSON text: ``compact.Encoded``)."""
        object.__setattr__(self, "meta", compact(self.meta, pool))
        self.derive(pool.text, pool.places, eid)
        if self._ref:
            object.__setattr__(self, "_clock", clock)

    def may_hold(self, text: str) -> bool:
        """False when no value of the frontmatter can be ``text``, known
        without parsing it (``compact.Encoded.may_hold``); True otherwise.
        (``type``, not ``isinstance``: a Mapping's ABC check, once a note,
        was a fifth of the walk.)"""
        m = self.meta
        return type(m) is not Encoded or m.may_hold(text)

    def file_time(self, which: str) -> float | None:
        clock = self._clock
        return clock(self.path, which) if clock is not None else None


def offset(data: bytes, body: str) -> int | None:
    """Where ``body`` (as ``parse`` read it from ``data``) starts in those
    bytes; None when it is no slice of them (a BOM, CRLF line ends)."""
    if data.startswith(_BOM) or b"\r" in data:
        return None
    return len(data) - len(body.encode("utf-8"))


def at_path(entry: Entry, rel: str) -> Held:
    """``entry`` at ``rel``, its bytes unchanged (a move that renamed its file)."""
    return Held(entry.meta, entry.body, rel, entry.version, tz=entry.tz,
                off=entry.off if isinstance(entry, Held) else None)
