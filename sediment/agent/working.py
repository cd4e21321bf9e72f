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

The state, its file and its types are ``workstate``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import datetime as _dt

from . import closing, intent
from ..model import validate as V
from ..errors import InvalidInput
from ..model.lifecycle import bigram_similarity
from .workstate import Item, Mood, Observed, StateFile, Working, clip, mood_now
from ..model.fields import now_iso

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..store.store import Store

RENEW_SIMILARITY = 0.6  # a todo this close to an open item is that item said again


# ---------------------------------------------------------------------------
# the verbs

def _state(store: Store) -> StateFile:
    return StateFile(store.root, store.parts, store.policy)


def working(store: Store, *, now: _dt.datetime | str | None = None) -> Working:
    return _state(store).current(V.now(now, store.policy.tz))


def observe(store: Store, text: str, *, now: _dt.datetime | str | None = None,
            request: str | None = None) -> Observed:
    if not isinstance(text, str):
        raise InvalidInput(f"text must be a string, not {type(text).__name__}", what="text")
    key = V.request(request)
    when = V.now(now, store.policy.tz)
    stamp = now_iso(when)
    found = intent.recognise(text)
    state = _state(store)
    with state.writing().hold(store.policy.lock_timeout_seconds):
        known = state.requests(when) if key is not None else {}
        if key in known:  # observed already (a retry): nothing changes again
            return Observed((), (), (), (), state.current(when))
        items, mood = state.load()
        items, dropped = state.alive(items, when)
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
            item = Item(clip(sentence), stamp, stamp)
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
            state.save(items, mood, None if key is None else {**known, key: stamp})
    return Observed(tuple(opened), tuple(closed), tuple(renewed), tuple(dropped),
                    Working(tuple(items), mood_now(mood, when)))


def set_mood(store: Store, text: str, *, now: _dt.datetime | str | None = None) -> Mood | None:
    if not isinstance(text, str):
        raise InvalidInput(f"text must be a string, not {type(text).__name__}", what="text")
    when = V.now(now, store.policy.tz)
    clipped = clip(text) if text.strip() else ""
    mood = (Mood(clipped, now_iso(when),
                 now_iso(when + _dt.timedelta(hours=store.policy.mood_hours))) if clipped else None)
    state = _state(store)
    with state.writing().hold(store.policy.lock_timeout_seconds):
        items, _ = state.load()
        state.save(items, mood)
    return mood
