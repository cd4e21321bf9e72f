"""The verbs that read: get, list, search, links_to, stats. Each holds the
view for the whole call (``View.reading``) and never writes a memory file; a
search records its recalls outside the notes, in the usage log.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

from ..search import query as S
from ..model import validate as V
from ..model.entry import Entry
from ..errors import InvalidInput, LockTimeout, ParseError
from ..search.query import SearchHit
from ..store.store import Store

log = logging.getLogger("sediment")

SORTS = ("path", "updated", "created")


def get(store: Store, id: str) -> Entry:
    with store.view.reading() as view:
        return view.resolve(id)


def _filter(store: Store, *, layer: Any, room: Any, tags: Any, kind: Any, status: Any = None,
            since: Any = None, until: Any = None) -> S.Predicate | None:
    """The predicate of the filters given (each checked), or None for none."""
    if all(x is None or x == () or x == [] for x in (layer, room, tags, kind, status, since, until)):
        return None
    return S.make_filter(layers=V.layers(layer), room=V.room_filter(room), tags=V.tags(tags) or None,
                         kinds=V.kinds(kind, store.policy.kinds), status=V.status(status),
                         since=V.optional_time(since, key="since"), until=V.optional_time(until, key="until"))


def list_entries(store: Store, *, layer: str | Iterable[str] | None = None, room: str | None = None,
                 tags: str | Iterable[str] | None = None, kind: str | Iterable[str] | None = None,
                 status: str | None = None, since: Any = None, until: Any = None, sort: str = "path",
                 limit: int | None = None) -> list[Entry]:
    if sort not in SORTS:
        raise InvalidInput(f"sort: {sort!r} is not one of {', '.join(SORTS)}", what="sort")
    if limit is not None:
        V.limit(limit)
    pred = _filter(store, layer=layer, room=room, tags=tags, kind=kind, status=status, since=since, until=until)
    with store.view.reading() as view:
        found = [e for e in view.entries.values() if pred is None or pred(e)]
    if sort == "path":
        found.sort(key=lambda e: e.path)
    else:  # newest first; an unreadable time sorts last
        found.sort(key=lambda e: (-_timestamp(e, sort), e.path))
    return found if limit is None else found[:limit]


def _timestamp(e: Entry, which: str) -> float:
    try:
        return (e.updated if which == "updated" else e.created).timestamp()
    except (ParseError, OverflowError, ValueError):
        return float("-inf")


def search(store: Store, query: str, *, limit: int = 10, layer: str | Iterable[str] | None = None,
           room: str | None = None, tags: Iterable[str] | str | None = None,
           kind: str | Iterable[str] | None = None, since: Any = None, until: Any = None,
           include_archive: bool = False, include_superseded: bool = False,
           record: bool = True, explain: bool = False) -> list[SearchHit]:
    V.query(query)
    V.limit(limit)
    pred = _filter(store, layer=layer, room=room, tags=tags, kind=kind, since=since, until=until)
    layers = V.layers(layer)
    # archive is searched only when asked (by flag or by naming the layer); purged never
    asked = include_archive or (layers is not None and "archive" in layers)
    with store.view.reading() as view:
        tiebreak = S.Tiebreak(view.entries, store.usage.totals, store.policy.kinds)
        hits = S.run(view.index, view.entries, S.ask(view.tokenizer, query, view.lanes), limit=limit, pred=pred,
                     include_archive=asked, include_superseded=include_superseded, tiebreak=tiebreak,
                     fb=S.feedback(store.policy), explain=explain)
    if record:
        record_recalls(store, [h.entry.id for h in hits])
    return hits


def record_recalls(store: Store, ids: list[str], *, now: float | None = None) -> None:
    """Count these memories as recalled (a search's hits, a context block's
    reminders). A read-only root records nothing; a lost recall never fails
    the read that made it."""
    if not ids or not store.usage.writable:
        return
    try:
        store.usage.record(ids, "recall", now=now)
    except (LockTimeout, OSError) as exc:
        log.warning("sediment: recall not recorded: %s", exc)


def links_to(store: Store, id: str) -> list[Entry]:
    """Memories whose links (frontmatter or body) name this one, by path: by
    its id, or by a name, ``folder/name`` or alias Obsidian resolves to it."""
    with store.view.reading() as view:
        target = view.resolve(id)
        return sorted((e for e in view.entries.values() if e.id != target.id
                       and any(x == target.id or view.link(x) is target for x in e.links)),
                      key=lambda e: e.path)


def stats(store: Store) -> dict[str, Any]:
    with store.view.reading() as view:
        return view.counts()
