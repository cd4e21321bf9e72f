"""After a merge: the invariants of a memory, restored by rule.

A merge of two machines' histories can give what neither machine would have
written itself. ``repair`` finds and settles, each by a rule of the files
alone (so two machines that repair at once write the same bytes):

* **one id in two files** of the memory's own name (one side moved the note,
  the other changed it, and git could not pair the two): one file, with both
  versions merged field by field, in the place ``syncmerge.pick``'s order
  gives (archive, then the further layer). A copy a person made under another
  name is theirs: ``check()`` reports it (duplicate id), nothing is removed;
* **an exact duplicate** (two active memories with the same main text, added
  on two machines): the older id stays; the newer is superseded by it, so
  metabolize archives it;
* **a supersede cycle** (A superseded by B here, B by A there): the newest
  memory of the cycle is active again; its links into the cycle go.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Iterable

from . import entry as E
from .errors import SedimentError
from .files import atomic_write, read_nofollow
from .notemerge import merge_note
from .store import Store
from .syncmerge import LAYER_RANK

log = logging.getLogger("sediment")


def _own_name(e: E.Entry) -> bool:
    return any(e.name.endswith("-" + s) for s in (e.id[-4:].lower(), e.id[-10:].lower()))


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
    done += _one_file_per_id(store)
    done += _no_exact_duplicates(store, ids)
    done += _no_cycles(store, ids)
    return done


def _one_file_per_id(store: Store) -> list[str]:
    view, root, out = store.view, store.root, []
    for path, prob in sorted(view.problems.items()):
        if prob.code != "duplicate_id":
            continue
        try:
            data = read_nofollow(root / path)
            copy = E.parse(data, path, tz=view.tz)
        except (OSError, SedimentError):
            continue
        kept = view.entries.get(copy.id)
        if kept is None or kept.name != copy.name or not _own_name(copy):
            continue  # a person's copy under another name: check() reports it
        other = read_nofollow(root / kept.path)
        first, second = sorted((data, other))  # sorted: the same on every machine
        merged, clean = merge_note(b"", first, second, path)
        if not clean:
            continue
        keep = max((path, kept.path), key=lambda p: (LAYER_RANK.get(p.split("/")[0], 0), p))
        drop = kept.path if keep == path else path
        atomic_write(root / keep, merged)
        os.unlink(root / drop)
        view.forget_path(drop)
        view.forget_path(keep)
        view.load_file(keep)
        out.append(f"{copy.id}: one file again, {keep} (the copy at {drop} was merged into it)")
    return out


def _active(e: E.Entry) -> bool:
    return e.status == "active" and e.layer != "archive"


def _no_exact_duplicates(store: Store, ids: list[str]) -> list[str]:
    view, out = store.view, []
    seen: set[str] = set()
    for eid in ids:
        e = view.entries.get(eid)
        if e is None or eid in seen or not _active(e) or not e.text.strip():
            continue
        group = [x for x in view.same_text(e.text) if _active(x)]  # sorted by id
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
            ids += [i for i in view.by_name.get(E.unwrap_link(link), []) if i in view.entries]
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
        members = {view.entries[i].name for i in cycle}
        meta: dict[str, Any] = dict(newest.meta)
        left = [x for x in meta.get("superseded_by") or () if E.unwrap_link(x) not in members]
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
