"""The verbs that read: get, list, search, stats. Each holds the view for
the whole call (``View.reading``) and never writes a memory file; a search
records its recalls outside the notes, in the usage log.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

from . import search as S
from . import validate as V
from .entry import Entry
from .errors import LockTimeout
from .search import SearchHit
from .store import Store

log = logging.getLogger("sediment")


def get(store: Store, id: str) -> Entry:
    with store.view.reading() as view:
        return view.resolve(id)


def list_entries(store: Store, *, layer: str | Iterable[str] | None = None, room: str | None = None,
                 tag: str | None = None, kind: str | Iterable[str] | None = None,
                 status: str | None = None) -> list[Entry]:
    pred = S.make_filter(layer=layer, room=room, tags=[tag] if tag else None, kind=kind, status=status)
    with store.view.reading() as view:
        return sorted((e for e in view.entries.values() if pred(e)), key=lambda e: e.path)


def search(store: Store, query: str, *, limit: int = 10, layer: str | Iterable[str] | None = None,
           room: str | None = None, tags: Iterable[str] | str | None = None,
           kind: str | Iterable[str] | None = None, since: Any = None, until: Any = None,
           include_archive: bool = False, record: bool = True) -> list[SearchHit]:
    V.query(query)
    V.limit(limit)
    pred = None
    if any(x for x in (layer, room, tags, kind, since, until)):
        tag_list = [tags] if isinstance(tags, str) else list(tags) if tags else None
        pred = S.make_filter(layer=layer, room=room, tags=tag_list, kind=kind, since=since, until=until)
    # archive is searched only when asked (by flag or by naming the layer); purged never
    asked = include_archive or (layer == "archive" if isinstance(layer, str)
                                else bool(layer) and "archive" in layer)  # type: ignore[operator]
    with store.view.reading() as view:
        tiebreak = S.Tiebreak(view.entries, store.usage.load, store.policy.kinds)
        hits = S.run(view.index, view.entries, view.tokenizer, query, limit=limit, pred=pred,
                     include_archive=asked, tiebreak=tiebreak)
    if record and hits and store.usage.writable:  # (a read-only root records nothing)
        try:
            store.usage.record([h.entry.id for h in hits], "recall")
        except (LockTimeout, OSError) as exc:  # a lost recall must not fail a search
            log.warning("sediment: recall not recorded: %s", exc)
    return hits


def stats(store: Store) -> dict[str, Any]:
    with store.view.reading() as view:
        return view.counts()
