"""Working memory: the few open todos and promises of the conversation, and
the agent's mood. Not memories: machine-local state in
``_system/working/state.json`` (never versioned: the folder carries its own
``.gitignore``, so a root made before it existed stays clean under git too),
written atomically under its own lock; reading it never writes.

* ``observe(text)`` runs ``intent.recognise`` over a message: a todo opens
  an item (at most ``working_items``, policy, 3: the next one replaces the
  oldest), a "done" closes the open item that names the same things
  (``closing``: "Q4 report sent" closes "Remember to send the Q4 report
  tomorrow", not "… the Q4 budget"; each of its clauses that reports a done
  closes one), and a message that shares words with an open item renews it. An item not
  mentioned for ``working_days`` (3) days, counted in the root's timezone,
  is gone.
* ``mood(text)`` sets one state, overwritten by the next, gone after
  ``mood_hours`` (6); ``mood("")`` clears it.
* ``working()`` lists what is open now.

A damaged state file (a person's typing, a torn disk) reads as empty and is
replaced by the next write; it never fails a call.
"""

from __future__ import annotations

import datetime as _dt
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..model import entry as E
from . import closing, intent
from ..model import validate as V
from ..errors import InvalidInput, StorageError
from ..disk.files import WriterLock, atomic_write, read_nofollow, symlink_in
from ..model.lifecycle import bigram_similarity
from ..store.store import Store
from ..store.system import SYSTEM

FOLDER = "working"
STATE = "state.json"
MAX_TEXT = 300  # characters kept of a sentence or a mood
RENEW_SIMILARITY = 0.6  # a todo this close to an open item is that item said again


@dataclass(frozen=True)
class Item:
    """An open todo or promise: the sentence it was said in, when it was
    opened, when it was last mentioned."""
    text: str
    created: str
    mentioned: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Mood:
    text: str
    since: str
    until: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Working:
    """What is open now: ``items`` oldest first, and the mood (or None)."""
    items: tuple[Item, ...] = ()
    mood: Mood | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"items": [i.to_dict() for i in self.items], "mood": self.mood.to_dict() if self.mood else None}


@dataclass(frozen=True)
class Observed:
    """What one ``observe`` changed."""
    opened: tuple[Item, ...] = ()
    closed: tuple[Item, ...] = ()
    renewed: tuple[Item, ...] = ()
    dropped: tuple[Item, ...] = ()  # replaced by a newer item, or expired
    working: Working = field(default_factory=Working)

    def to_dict(self) -> dict[str, Any]:
        return {"opened": [i.to_dict() for i in self.opened], "closed": [i.to_dict() for i in self.closed],
                "renewed": [i.to_dict() for i in self.renewed], "dropped": [i.to_dict() for i in self.dropped],
                "working": self.working.to_dict()}


# ---------------------------------------------------------------------------
# the state file

def _folder(store: Store) -> Path:
    return store.root / SYSTEM / FOLDER


def _linked(store: Store) -> str | None:
    return (symlink_in(store.root, f"{SYSTEM}/{FOLDER}/{STATE}")
            or symlink_in(store.root, f"{SYSTEM}/{FOLDER}/lock"))


def _load(store: Store) -> tuple[list[Item], Mood | None]:
    if not store.parts.usable("working") or _linked(store):
        return [], None  # not ours to follow
    try:
        raw = json.loads(read_nofollow(_folder(store) / STATE))
        items = [Item(str(d["text"]), str(d["created"]), str(d["mentioned"])) for d in raw.get("items", [])]
        m = raw.get("mood")
        mood = Mood(str(m["text"]), str(m["since"]), str(m["until"])) if m else None
        for x in items:
            _time(x.created), _time(x.mentioned)
        if mood:
            _time(mood.until)
        return items, mood
    except FileNotFoundError:
        return [], None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return [], None  # damaged: read as empty, replaced by the next write


def _save(store: Store, items: list[Item], mood: Mood | None) -> None:
    folder = _folder(store)
    data = {"items": [i.to_dict() for i in items], "mood": mood.to_dict() if mood else None}
    atomic_write(folder / STATE, (json.dumps(data, ensure_ascii=False, indent=1) + "\n").encode("utf-8"))


def _writing(store: Store) -> WriterLock:
    refused = store.parts.refusal("working") or (f"{_linked(store)} is a symlink; sediment does not follow it"
                                         if _linked(store) else None)
    if refused:
        raise StorageError(f"cannot write working memory: {refused}", path=str(_folder(store)))
    folder = _folder(store)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        ignore = folder / ".gitignore"
        if not ignore.exists():  # machine-local, whatever the root's own .gitignore says
            atomic_write(ignore, b"# sediment working memory: machine-local, never versioned\n*\n")
    except OSError as exc:
        raise StorageError(f"cannot write working memory in {folder}: {exc}", path=str(folder)) from exc
    return WriterLock.for_path(folder / "lock")


def _time(s: str) -> _dt.datetime:
    t = _dt.datetime.fromisoformat(s)
    if t.tzinfo is None:
        raise ValueError("time without an offset")
    return t


def _alive(store: Store, items: list[Item], now: _dt.datetime) -> tuple[list[Item], list[Item]]:
    """(open, expired): an item lives while fewer than ``working_days`` days
    (in the root's timezone) have passed since it was last mentioned."""
    tz, days = store.policy.tz, store.policy.working_days
    today = now.astimezone(tz).date()
    keep: list[Item] = []
    gone: list[Item] = []
    for x in items:
        (keep if (today - _time(x.mentioned).astimezone(tz).date()).days <= days else gone).append(x)
    return keep, gone


def _mood_now(mood: Mood | None, now: _dt.datetime) -> Mood | None:
    return mood if mood is not None and _time(mood.until) > now else None


def _clip(s: str) -> str:
    s = E.one_line(s, MAX_TEXT + 1)
    return s if len(s) <= MAX_TEXT else s[:MAX_TEXT - 1] + "…"


# ---------------------------------------------------------------------------
# the verbs

def working(store: Store, *, now: Any = None) -> Working:
    when = V.now(now)
    items, mood = _load(store)
    return Working(tuple(_alive(store, items, when)[0]), _mood_now(mood, when))


def observe(store: Store, text: str, *, now: Any = None) -> Observed:
    if not isinstance(text, str):
        raise InvalidInput(f"text must be a string, not {type(text).__name__}", what="text")
    when = V.now(now)
    stamp = E.now_iso(when)
    found = intent.recognise(text)
    with _writing(store).hold(store.policy.lock_timeout_seconds):
        items, mood = _load(store)
        items, dropped = _alive(store, items, when)
        opened: list[Item] = []
        closed: list[Item] = []
        renewed: list[Item] = []
        said = intent.terms(text)
        for what, sentence in found:
            if what == "done":  # the items naming the same things; on a tie the oldest
                done = [items[i] for i in closing.closes(sentence, [x.text for x in items])]
                items = [x for x in items if x not in done]
                closed.extend(done)
                continue
            same = next((x for x in items if bigram_similarity(x.text, sentence) >= RENEW_SIMILARITY), None)
            if same is not None:
                items[items.index(same)] = fresh = Item(same.text, same.created, stamp)
                renewed.append(fresh)
                continue
            item = Item(_clip(sentence), stamp, stamp)
            items.append(item)
            opened.append(item)
            while len(items) > store.policy.working_items:
                dropped.append(items.pop(0))  # the oldest makes room
        # a message about an open item keeps it alive
        for i, x in enumerate(items):
            if x in opened or x in renewed:
                continue
            mine = intent.terms(x.text)
            shared = intent.overlap(said, mine)
            if shared >= 2 or (mine and shared >= 0.5 * intent.overlap(mine, mine)):
                items[i] = fresh = Item(x.text, x.created, stamp)
                renewed.append(fresh)
        changed = opened or closed or renewed or dropped
        if changed:
            _save(store, items, mood)
    return Observed(tuple(opened), tuple(closed), tuple(renewed), tuple(dropped),
                    Working(tuple(items), _mood_now(mood, when)))


def set_mood(store: Store, text: str, *, now: Any = None) -> Mood | None:
    if not isinstance(text, str):
        raise InvalidInput(f"text must be a string, not {type(text).__name__}", what="text")
    when = V.now(now)
    clipped = _clip(text) if text.strip() else ""
    mood = (Mood(clipped, E.now_iso(when),
                 E.now_iso(when + _dt.timedelta(hours=store.policy.mood_hours))) if clipped else None)
    with _writing(store).hold(store.policy.lock_timeout_seconds):
        items, _ = _load(store)
        _save(store, items, mood)
    return mood
