"""Moves in batches (metabolize): the same steps as ``Store.move``, in phases,
so that a folder is fsync'd once for a batch instead of once for each move.

A move is durable in this order, for one move as for a batch:

1. its intent is in the journal, fsync'd (the caller: ``Journal.begin_many``);
2. its new copy is complete (written to a temp file, fsync'd) and linked at
   the destination, never over a file that is there;
3. the destination folder is fsync'd: the new name is durable;
4. the source is renamed to a temp name (``checked.detach``), the source
   folder fsync'd, and the renamed file removed if it is still what was read
   (``Detached.finish``; a person's save that landed is put back instead, and
   the new copy withdrawn);
5. ``done`` is recorded (not fsync'd: what it tells is durable already).

A batch does step 2 for every move, then step 3 once for each destination
folder, step 4 (rename) for every move, one fsync of each source folder, then
the rest of step 4 and step 5. A crash anywhere leaves what recovery sorts
out for one move (``Store._finish_move``): the intent is open, and the new
copy, where it exists, is whole; the source goes only once the copy is
durable. Nothing is lost, nothing is left twice.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Union

from . import names as N
from .checked import Changed, Detached, detach
from .entry import Entry
from .errors import Conflict, SedimentError, StorageError
from .files import fsync_dir, resolve_inside
from .store import MovePlan, Store

log = logging.getLogger("sediment")

Outcome = Union[Entry, SedimentError]


@dataclass
class _Placed:
    i: int
    entry: Entry
    plan: MovePlan
    seq: str | None
    target: Path
    source: Path
    fresh: Entry
    linked: bool  # the new copy is a second name of the source's file (same bytes)
    detached: Detached | None = None


def move_batch(store: Store, items: list[tuple[Entry, MovePlan, str | None]], *, op: str
               ) -> list[Outcome | None]:
    """Move each ``(entry, plan, seq)`` (``Store.prepare_move``'s plan, the
    ``seq`` of its journaled intent, None for a move within its own file);
    the caller holds the lock. One outcome per item, in order: the memory as
    it is now, or the error that stopped that move (``Conflict``: a person's
    save kept, or a file in the way; ``StorageError``: the file system
    refused, the intent left open for recovery). The first ``StorageError``
    while writing new copies (a full disk) stops the batch: the moves placed
    before it are finished, the ones after it are not attempted (``None``;
    their intents are the caller's to close)."""
    out: list[Outcome | None] = [None] * len(items)
    placed: list[_Placed] = []
    for i, (entry, plan, seq) in enumerate(items):
        try:
            p = _place(store, i, entry, plan, seq, op)
        except StorageError as exc:
            out[i] = exc
            break
        except SedimentError as exc:
            out[i] = exc
            continue
        if isinstance(p, _Placed):
            placed.append(p)
        else:
            out[i] = p
    for folder in _folders(p.target.parent for p in placed):
        fsync_dir(folder)  # every new copy's name is durable before any source goes
    ready = []
    for p in placed:
        try:
            p.detached = detach(p.source, p.entry.version, same_file_as=p.target if p.linked else None)
            ready.append(p)
        except Changed as exc:
            out[p.i] = _keep_persons(store, p, exc, op)
        except OSError as exc:
            out[p.i] = _refused(p, exc)
    for folder in _folders(p.source.parent for p in ready):
        fsync_dir(folder)  # the removals are durable (and an in-place save under way has landed)
    done = []
    for p in ready:  # (each finish closes its descriptor, whatever happens)
        assert p.detached is not None
        try:
            p.detached.finish()
            done.append(p)
        except Changed as exc:
            out[p.i] = _keep_persons(store, p, exc, op)
        except OSError as exc:
            out[p.i] = _refused(p, exc)
    for p in done:  # after every finish: a room folder the batch emptied holds no temp file now
        out[p.i] = _record(store, p, op)
    return out


def _place(store: Store, i: int, entry: Entry, plan: MovePlan, seq: str | None, op: str) -> _Placed | Entry:
    """Step 2 for one move: its new copy, whole, at the destination (the
    folder not yet fsync'd). A move within its own file is a rewrite, done
    here at once (``Entry``)."""
    N.refuse_persons(entry.path)
    rel, meta, same_bytes, text, _ = plan
    if rel == entry.path:  # (journaled as a move, if at all), done as a rewrite
        if seq is not None:
            store.journal.done(seq=seq, op=op)
        return entry if same_bytes else store.rewrite(entry, meta=meta)
    target = resolve_inside(store.root, rel)
    source = store.root / entry.path
    try:
        if target.exists():
            raise FileExistsError(str(target))
        if same_bytes:  # git sees a pure rename: the same file under a second name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)  # never over a file that appeared meanwhile
                fresh = Entry(meta=entry.meta, body=entry.body, path=rel, version=entry.version, tz=entry.tz)
                if "off" in entry._cache:
                    fresh._cache["off"] = entry._cache["off"]
                return _Placed(i, entry, plan, seq, target, source, fresh, True)
            except FileExistsError:
                raise
            except OSError:  # no hard links here: a copy of the same bytes
                pass
        fresh = store.publish(rel, entry.with_(meta=meta), exclusive=True, text=text, sync_folder=False)
    except FileExistsError:
        store.note_done(seq=seq, op=op, compact=False)
        raise Conflict(f"cannot move {entry.path} to {rel}: a file is already there", id=entry.id) from None
    except OSError as exc:
        # leave the intent open: recovery sorts out which copy is whole
        raise StorageError(f"cannot move {entry.path} to {rel}: {exc}", path=entry.path) from exc
    return _Placed(i, entry, plan, seq, target, source, fresh, False)


def _keep_persons(store: Store, p: _Placed, exc: Changed, op: str) -> Conflict:
    """A person saved the source while it moved: their save stays where it was
    and the new copy is withdrawn (the destination folder is fsync'd by the
    withdrawal)."""
    store._withdraw(p.target, None if p.linked else p.fresh.version)
    err = store._kept(p.entry.path, exc, "moving", id=p.entry.id)
    store.note_done(p.entry.path, seq=p.seq, op=op, compact=False)
    return err


def _refused(p: _Placed, exc: OSError) -> StorageError:
    # the intent stays open: recovery finds the new copy whole and finishes the move
    return StorageError(f"cannot move {p.entry.path} to {p.plan[0]}: {exc}", path=p.entry.path)


def _record(store: Store, p: _Placed, op: str) -> Entry:
    """Step 5 for one move, and the view told."""
    entry, fresh = p.entry, p.fresh
    if fresh.room == entry.room and entry.id in store.view.index:
        store.view.relocate(entry, fresh)
    else:  # the room is indexed too
        store.view.forget_path(entry.path)
        store.view.load_known(fresh)
    store._prune_rooms(p.source.parent)
    return fresh.warn(*store.note_done(entry.path, p.plan[0], seq=p.seq, op=op, compact=False))


def _folders(paths: Iterable[Path]) -> list[Path]:
    return list(dict.fromkeys(paths))
