"""Working memory's state: the open todos and promises, and the mood, in
``_system/working/state.json`` (machine-local, never versioned: the folder
carries its own ``.gitignore``), written atomically under its own lock.
What the verbs (``working``) and the context block (``context``) read.

A damaged state file (a person's typing, a torn disk) reads as empty and is
replaced by the next write; it never fails a call.

The file also keeps the request keys of the messages that changed it (for
``REQUEST_DAYS``): a message observed again with the same key (a retry that
cannot know whether the first call landed) changes nothing, and the key is
written in the same atomic replace as the change it stands for.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..model import entry as E
from ..errors import StorageError
from ..disk.files import WriterLock, atomic_write, read_nofollow, symlink_in
from ..model.policy import Policy
from ..model.record import Record
from ..store.system import SYSTEM, Parts

FOLDER = "working"
STATE = "state.json"
MAX_TEXT = 300  # characters kept of a sentence or a mood
REQUEST_DAYS = 2  # how long a request key is remembered: a retry comes within minutes


@dataclass(frozen=True)
class Item(Record):
    """An open todo or promise: the sentence it was said in, when it was
    opened, when it was last mentioned."""
    text: str
    created: str
    mentioned: str


@dataclass(frozen=True)
class Mood(Record):
    text: str
    since: str
    until: str


@dataclass(frozen=True)
class Working(Record):
    """What is open now: ``items`` oldest first, and the mood (or None)."""
    items: tuple[Item, ...] = ()
    mood: Mood | None = None


@dataclass(frozen=True)
class Observed(Record):
    """What one ``observe`` changed."""
    opened: tuple[Item, ...] = ()
    closed: tuple[Item, ...] = ()
    renewed: tuple[Item, ...] = ()
    dropped: tuple[Item, ...] = ()  # replaced by a newer item, or expired
    working: Working = field(default_factory=Working)


# ---------------------------------------------------------------------------
# the state file

class StateFile:
    """The state file of the root at ``root`` (``parts``: which parts of
    ``_system/`` this process may use)."""

    def __init__(self, root: Path, parts: Parts, policy: Policy) -> None:
        self.root, self.parts, self.policy = root, parts, policy
        self.folder = root / SYSTEM / FOLDER

    def _linked(self) -> str | None:
        return (symlink_in(self.root, f"{SYSTEM}/{FOLDER}/{STATE}")
                or symlink_in(self.root, f"{SYSTEM}/{FOLDER}/lock"))

    def load(self) -> tuple[list[Item], Mood | None]:
        if not self.parts.usable("working") or self._linked():
            return [], None  # not ours to follow
        try:
            raw = json.loads(read_nofollow(self.folder / STATE))
            items = [Item(str(d["text"]), str(d["created"]), str(d["mentioned"])) for d in raw.get("items", [])]
            m = raw.get("mood")
            mood = Mood(str(m["text"]), str(m["since"]), str(m["until"])) if m else None
            for x in items:
                time_of(x.created), time_of(x.mentioned)
            if mood:
                time_of(mood.until)
            return items, mood
        except FileNotFoundError:
            return [], None
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return [], None  # damaged: read as empty, replaced by the next write

    def requests(self, now: _dt.datetime) -> dict[str, str]:
        """The request keys of the messages that changed the state, and when
        (those of the last ``REQUEST_DAYS`` days before ``now``)."""
        if not self.parts.usable("working") or self._linked():
            return {}
        try:
            raw = json.loads(read_nofollow(self.folder / STATE)).get("requests") or {}
            since = now - _dt.timedelta(days=REQUEST_DAYS)
            return {str(k): str(t) for k, t in raw.items() if time_of(str(t)) >= since}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return {}

    def save(self, items: list[Item], mood: Mood | None, requests: dict[str, str] | None = None) -> None:
        """Write the state (``requests``: the request keys to keep; None keeps
        the file's)."""
        if requests is None:
            requests = self.requests(_dt.datetime.now(_dt.timezone.utc))
        data = {"items": [i.to_dict() for i in items], "mood": mood.to_dict() if mood else None,
                **({"requests": requests} if requests else {})}
        atomic_write(self.folder / STATE, (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))

    def writing(self) -> WriterLock:
        """The state's lock (after making its folder); ``StorageError`` where it may not be written."""
        linked = self._linked()
        refused = self.parts.refusal("working") or (f"{linked} is a symlink; sediment does not follow it"
                                                    if linked else None)
        if refused:
            raise StorageError(f"cannot write working memory: {refused}", path=str(self.folder))
        folder = self.folder
        try:
            folder.mkdir(parents=True, exist_ok=True)
            ignore = folder / ".gitignore"
            if not ignore.exists():  # machine-local, whatever the root's own .gitignore says
                atomic_write(ignore, b"# sediment working memory: machine-local, never versioned\n*\n")
        except OSError as exc:
            raise StorageError(f"cannot write working memory in {folder}: {exc}", path=str(folder)) from exc
        return WriterLock.for_path(folder / "lock")

    def alive(self, items: list[Item], now: _dt.datetime) -> tuple[list[Item], list[Item]]:
        """(open, expired): an item lives while fewer than ``working_days`` days
        (in the root's timezone) have passed since it was last mentioned."""
        tz, days = self.policy.tz, self.policy.working_days
        today = now.astimezone(tz).date()
        keep: list[Item] = []
        gone: list[Item] = []
        for x in items:
            (keep if (today - time_of(x.mentioned).astimezone(tz).date()).days <= days else gone).append(x)
        return keep, gone

    def current(self, now: _dt.datetime) -> Working:
        """What is open at ``now``, and the mood. Reads only."""
        items, mood = self.load()
        return Working(tuple(self.alive(items, now)[0]), mood_now(mood, now))


def time_of(s: str) -> _dt.datetime:
    t = _dt.datetime.fromisoformat(s)
    if t.tzinfo is None:
        raise ValueError("time without an offset")
    return t


def mood_now(mood: Mood | None, now: _dt.datetime) -> Mood | None:
    return mood if mood is not None and time_of(mood.until) > now else None


def clip(s: str) -> str:
    s = E.one_line(s, MAX_TEXT + 1)
    return s if len(s) <= MAX_TEXT else s[:MAX_TEXT - 1] + "…"
