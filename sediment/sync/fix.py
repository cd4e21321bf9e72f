"""After a merge: the invariants of a memory, restored by rule.

A merge of two machines' histories can give what neither machine would have
written itself. ``repair`` finds and settles, each by a rule of the files
alone (so two machines that repair at once write the same bytes):

* **an exact duplicate** (two active memories with the same main text, added
  on two machines): the older id stays; the newer is superseded by it, so
  metabolize archives it;
* **a supersede cycle** (A superseded by B here, B by A there): the newest
  memory of the cycle is active again; its links into the cycle go.

One id in two files is settled while merging (``syncmerge``: a note moved on
one side and changed on the other is one file, where it was moved). Any other
second copy is a file someone made: ``check()`` reports the duplicate id, and
nothing of it is removed.
"""

from __future__ import annotations

import logging
from typing import Any, Iterable

from ..model import entry as E
from ..agent.conflicts import active
from ..errors import SedimentError
from ..store.store import Store
from .merge import is_note
from ..model.fields import unwrap_link

log = logging.getLogger("sediment")


def repair(store: Store, changed: Iterable[str] | None = None) -> list[str]:
    """Restore the invariants after a merge; returns what was done, as text.
    ``changed``: the note paths the merge changed (only they can have broken
    an invariant); None looks at every memory. The caller holds the writer lock."""
    view = store.view
    if changed is None:
        ids = sorted(view.entries)
    else:
        ids = sorted({view.by_path[p] for p in changed if p in view.by_path})
    done: list[str] = []
    done += _no_exact_duplicates(store, ids)
    done += _no_cycles(store, ids)
    return done


def _no_exact_duplicates(store: Store, ids: list[str]) -> list[str]:
    view, out = store.view, []
    seen: set[str] = set()
    for eid in ids:
        e = view.entries.get(eid)
        # (active: sediment's memories only; a person's own notes are never rewritten)
        if e is None or eid in seen or not active(e) or not e.text.strip():
            continue
        group = [x for x in view.same_text(e.text) if active(x)]  # sorted by id
        seen.update(x.id for x in group)
        if len(group) < 2:
            continue
        keeper = group[0]
        for twin in group[1:]:
            try:
                store.supersede(store.reread(view.entries[twin.id]), store.reread(view.entries[keeper.id]),
                                f"an exact duplicate of [[{keeper.name}]], written on another machine")
                out.append(f"{twin.id}: an exact duplicate of {keeper.id}, superseded by it")
            except SedimentError as exc:
                log.warning("sediment: duplicate %s not retired: %s", twin.path, exc)
    return out


def _no_cycles(store: Store, ids: list[str]) -> list[str]:
    view, out = store.view, []
    def succ(e: E.Entry) -> list[str]:
        ids: list[str] = []
        for link in e.meta.get("superseded_by") or ():
            ids += [i for i in view.by_name.get(unwrap_link(link), []) if i in view.entries]
        return ids
    seen: set[str] = set()
    for start in ids:
        if start in seen or start not in view.entries:
            continue
        path: list[str] = []
        on_path: dict[str, int] = {}
        node: str | None = start
        while node is not None and node not in seen:  # superseded_by mostly has one link: follow the first
            seen.add(node)
            on_path[node] = len(path)
            path.append(node)
            nxt = succ(view.entries[node])
            node = next((n for n in nxt if n in on_path), nxt[0] if nxt else None)
        if node is None or node not in on_path:
            continue
        cycle = path[on_path[node]:]
        newest = view.entries[max(cycle)]
        if not is_note(newest.path):
            continue  # a person's own note: check() is the place for it
        members = {view.entries[i].name for i in cycle}
        meta: dict[str, Any] = dict(newest.meta)
        left = [x for x in meta.get("superseded_by") or () if unwrap_link(x) not in members]
        if left:
            meta["superseded_by"] = left
        else:
            meta.pop("superseded_by", None)
            if meta.get("status") == "superseded":
                meta["status"] = "active"
                meta.pop("reason", None)
        try:
            store.rewrite(store.reread(newest), meta=meta)
            out.append(f"{newest.id}: a supersede cycle of {len(cycle)} broken; it is the newest, so it stays")
        except SedimentError as exc:
            log.warning("sediment: supersede cycle at %s not broken: %s", newest.path, exc)
    return out
