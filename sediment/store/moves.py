"""Moves: one (``move``: the verbs) or a batch (``move_batch``: metabolize),
by the same steps. A batch takes each step for all its moves at once, so
that each fsync waits together with the batch's others (``files.fsync_all``)
and a folder is fsync'd once for a batch instead of once for each move; a
single move is a batch of one.

A move is durable in this order, for one move as for a batch:

1. its intent is in the journal, fsync'd (``move``: ``Journal.begin``; a
   batch's caller: ``Journal.begin_many``);
2. its new copy is complete: written to a temp file beside the destination
   and fsync'd;
3. the temp file is linked at the destination, never over a file that is
   there, and the destination folder fsync'd: the new name is durable;
4. the source is renamed to a temp name (``checked.detach``), the source
   folder fsync'd, and the renamed file removed if it is still what was read
   (``Detached.finish``; a person's save that landed is put back instead, and
   the new copy withdrawn);
5. ``done`` is recorded (not fsync'd: what it tells is durable already).

A batch does each step for every move before the next step. A crash anywhere
leaves what recovery sorts out for one move (``Store._finish_move``): the
intent is open; a new copy, where one is at the destination, is whole; the
source goes only once every copy's name is durable. Nothing is lost, nothing
is left twice, and a temp file left over is swept at the next open.
"""

from __future__ import annotations

import contextlib
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, NamedTuple, Protocol

from ..disk.checked import Changed, Detached, detach, read_checked, remove_checked
from ..disk.files import fsync_all, fsync_dir, fsync_dirs, in_threads, move_new, resolve_inside, write_temp
from ..disk.journal import Journal
from ..errors import Conflict, NotFound, SedimentError, StorageError
from ..model import entry as E
from ..model import names as N
from ..model.entry import Entry
from ..view.held import at_path

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..view.view import View

log = logging.getLogger("sediment")

Outcome = Entry | SedimentError


class Writer(Protocol):
    """What a move asks of the store (``store.Store``), which holds the lock."""

    @property
    def root(self) -> Path: ...
    @property
    def journal(self) -> Journal: ...
    @property
    def view(self) -> View: ...

    def written(self, rel: str, entry: Entry, text: bytes) -> Entry: ...
    def rewrite(self, entry: Entry, *, meta: Mapping[str, Any], body: str | None = None) -> Entry: ...
    def note_done(self, *paths: str, seq: str | None = None, op: str = "write",
                  compact: bool = True) -> tuple[str, ...]: ...
    def compact_journal(self) -> None: ...
    def conflict_kept(self, rel: str, exc: Changed, doing: str = "writing", **details: Any) -> Conflict: ...


class MovePlan(NamedTuple):
    """What a move will write (``plan``)."""
    target: str  # the path it moves to
    meta: dict[str, Any]
    same_bytes: bool  # the frontmatter does not change
    text: bytes | None  # the new copy's bytes, or None: the same bytes, or a move within its file
    dver: str  # the new copy's version


def plan(entry: Entry, layer: str, room: str, meta_changes: Mapping[str, Any]) -> MovePlan:
    """What a move of ``entry`` to ``layer``/``room`` with ``meta_changes``
    will write. Raises ``UnsafePath`` for a person's note (never moved)."""
    N.refuse_persons(entry.path)
    rel = N.join_path(layer, room, entry.name)
    meta = {**entry.meta, **meta_changes}
    meta = {k: v for k, v in meta.items() if v is not None}
    same_bytes = meta == dict(entry.meta)
    # the new copy's version too (dver): recovery undoes a move only by
    # removing a copy that is still exactly what the move wrote
    text = None if same_bytes or rel == entry.path else E.render(entry.with_(meta=meta)).encode("utf-8")
    dver = entry.version if text is None else E.content_version(text)
    return MovePlan(rel, meta, same_bytes, text, dver)


def intent(entry: Entry, planned: MovePlan) -> dict[str, Any]:
    """The journal record of a move's intent (``Journal.begin``), which
    recovery (``Store.finish_ops``) finishes or undoes after a crash."""
    return {"id": entry.id, "src": entry.path, "dst": planned.target, "ver": entry.version, "dver": planned.dver}


def move(store: Writer, entry: Entry, layer: str, room: str, *, meta_changes: Mapping[str, Any],
         op: str) -> Entry:
    """Move (and possibly restamp) one memory, journaled as ``op``; the
    caller holds the lock. The memory as it is now; ``Conflict`` (a person's
    save kept, or a file in the way), ``NotFound`` (removed meanwhile) or
    ``StorageError`` (the intent left open for recovery) otherwise. A move
    to where it is already is a rewrite."""
    planned = plan(entry, layer, room, meta_changes)
    seq = None
    if planned.target != entry.path:
        if resolve_inside(store.root, planned.target).exists():  # in the way: refused before anything is journaled
            raise _in_way(entry, planned.target)
        seq = store.journal.begin(op, **intent(entry, planned))
    got = move_batch(store, [(entry, planned, seq)], op=op)[0]
    if seq is not None and not isinstance(got, StorageError):  # (a rewrite compacted it already)
        store.compact_journal()
    if isinstance(got, SedimentError):
        raise got
    assert got is not None  # (only the moves after a refused one are not attempted)
    return got


@dataclass
class _Move:
    i: int
    entry: Entry
    plan: MovePlan
    seq: str | None
    target: Path
    source: Path
    fresh: Entry
    # the new copy's temp file and descriptor; None: the new copy is a second
    # name of the source's file (the same bytes, linked at once)
    temp: tuple[Path, int] | None = None
    detached: Detached | None = None

    @property
    def linked(self) -> bool:
        """The new copy is the source's file under a second name."""
        return self.temp is None


def move_batch(store: Writer, items: list[tuple[Entry, MovePlan, str | None]], *, op: str) -> list[Outcome | None]:
    """Move each ``(entry, planned, seq)`` (``plan``'s plan, the
    ``seq`` of its journaled intent, None for a move within its own file);
    the caller holds the lock. One outcome per item, in order: the memory as
    it is now, or the error that stopped that move (``Conflict``: a person's
    save kept, or a file in the way; ``NotFound``: removed meanwhile;
    ``StorageError``: the file system refused, the intent left open for
    recovery). The first ``StorageError`` while writing new copies (a full
    disk) stops the batch: the copies written before it are moved, the moves
    after it are not attempted
    (``None``; their intents are the caller's to close)."""
    out: list[Outcome | None] = [None] * len(items)
    moves = _copies(_write_all(store, items, op, out), out)  # step 2: the new copies' bytes, durable
    linked = [m for m in moves if _link(store, m, out, op)]  # step 3
    fsync_dirs(m.target.parent for m in linked)  # every new copy's name durable before any source goes
    ready = []
    for m in linked:  # step 4
        try:
            m.detached = detach(m.source, m.entry.version, same_file_as=m.target if m.linked else None)
            ready.append(m)
        except Changed as exc:
            out[m.i] = _keep_persons(store, m, exc, op)
        except OSError as exc:
            out[m.i] = _refused(m.entry, m.plan.target, exc)
    fsync_dirs(m.source.parent for m in ready)  # the removals durable (and an in-place save under way landed)
    finished = []
    for m, err in zip(ready, _finish_all([m.detached for m in ready if m.detached])):
        if err is None:
            finished.append(m)
        elif isinstance(err, Changed):
            out[m.i] = _keep_persons(store, m, err, op)
        elif isinstance(err, OSError):
            out[m.i] = _refused(m.entry, m.plan.target, err)
        else:
            raise err
    for m in finished:  # step 5, after every finish: a room folder the batch emptied holds no temp file now
        out[m.i] = _record(store, m, op)
    return out


def _write_all(store: Writer, items: list[tuple[Entry, MovePlan, str | None]], op: str,
               out: list[Outcome | None]) -> list[_Move]:
    """Step 2 for each move, in order (``_write``), until the file system
    refuses one (``StorageError``: the moves after it are not attempted). A
    move refused or done at once (a rewrite) has its outcome in ``out``."""
    moves: list[_Move] = []
    for i, (entry, planned, seq) in enumerate(items):
        try:
            m = _write(store, i, entry, planned, seq=seq, op=op)
        except StorageError as exc:
            out[i] = exc
            break
        except SedimentError as exc:
            out[i] = exc
            continue
        if isinstance(m, _Move):
            moves.append(m)
        else:
            out[i] = m
    return moves


def _copies(moves: list[_Move], out: list[Outcome | None]) -> list[_Move]:
    """The new copies written to temp files made durable together (one
    fsync wait for the batch), their descriptors closed. If that fails, none
    of them is linked: those moves did not happen (``out``), and the moves
    left are those linked at once (the same bytes)."""
    copies = [m for m in moves if m.temp is not None]
    try:
        fsync_all([m.temp[1] for m in copies if m.temp])
    except OSError as exc:
        for m in copies:
            out[m.i] = _refused(m.entry, m.plan.target, exc)
            with contextlib.suppress(OSError):
                os.unlink(m.temp[0] if m.temp else "")
        return [m for m in moves if m.temp is None]
    finally:
        for m in copies:
            if m.temp:
                os.close(m.temp[1])
    return moves


def _finish_all(detached: list[Detached]) -> list[BaseException | None]:
    """``Detached.finish`` for each (each closes its descriptor, whatever
    happens), from a few threads: freeing a file waits on a busy
    journal (~3 ms each, measured: as long as an fsync), and the waits overlap."""
    def one(d: Detached) -> BaseException | None:
        try:
            d.finish()
        except BaseException as exc:  # (handed back to the batch, in order)
            return exc
        return None
    return in_threads(one, detached)


def _write(store: Writer, i: int, entry: Entry, planned: MovePlan, *, seq: str | None, op: str) -> _Move | Entry:
    """Step 2 for one move: its new copy's bytes in a temp file beside the
    destination (or, for the same bytes, the source linked there at once: its bytes are durable already). A move
    within its own file is a rewrite, done here at once (``Entry``)."""
    N.refuse_persons(entry.path)
    rel, meta, same_bytes, text, _ = planned
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
                return _Move(i, entry, planned, seq, target, source, at_path(entry, rel))
            except FileExistsError:
                raise
            except OSError:  # no hard links here: a copy of the bytes read, as they are (not rendered again)
                pass
            kept, st = _as_read(store, entry, source, seq, op)
            temp = write_temp(target, kept, mode=stat.S_IMODE(st.st_mode))  # (a private note stays private)
            return _Move(i, entry, planned, seq, target, source, at_path(entry, rel), temp)
        new = entry.with_(meta=meta)
        data = text if text is not None else E.render(new).encode("utf-8")
        temp = write_temp(target, data, mode=_mode(source))
    except FileExistsError:
        store.note_done(seq=seq, op=op, compact=False)
        raise _in_way(entry, rel) from None
    except OSError as exc:  # nothing is at the destination: recovery closes the intent
        raise _refused(entry, rel, exc) from exc
    return _Move(i, entry, planned, seq, target, source, store.written(rel, new, data), temp)


def _as_read(store: Writer, entry: Entry, source: Path, seq: str | None, op: str) -> tuple[bytes, os.stat_result]:
    """The source's bytes (and its stat), for a copy of the same bytes where
    the file system has no hard links, if they are still what the move read.
    Otherwise nothing is written: a copy of other bytes would not be the
    intent's ``dver``, so after a crash recovery could not withdraw it (the id
    in two files, or a removed note back). The intent is closed and the move
    refused: ``NotFound`` (removed) or ``Conflict`` (a person's save, kept)."""
    # (another OSError: the file system refused the read, and nothing is at the destination)
    try:
        return read_checked(source, entry.version)
    except FileNotFoundError:
        store.view.forget_path(entry.path)
        store.note_done(entry.path, seq=seq, op=op, compact=False)
        raise NotFound(f"{entry.path} was removed while it was being moved", id=entry.id) from None
    except Changed as exc:
        err = store.conflict_kept(entry.path, exc, "moving", id=entry.id)
        store.note_done(entry.path, seq=seq, op=op, compact=False)
        raise err from None


def _mode(path: Path) -> int | None:
    """The permissions a new copy of ``path`` keeps (a private note stays
    private); None when it is gone (the detach finds that out)."""
    try:
        return stat.S_IMODE(os.lstat(path).st_mode)
    except OSError:
        return None


def _link(store: Writer, m: _Move, out: list[Outcome | None], op: str) -> bool:
    """Step 3 for one move: its fsync'd copy linked at the destination."""
    if m.temp is None:
        return True  # linked already
    tmp = m.temp[0]
    try:
        move_new(tmp, m.target)
        return True
    except FileExistsError:  # a file appeared there meanwhile (a person's): it stays
        out[m.i] = _in_way(m.entry, m.plan.target)
        store.note_done(seq=m.seq, op=op, compact=False)
    except OSError as exc:
        out[m.i] = _refused(m.entry, m.plan.target, exc)
    with contextlib.suppress(OSError):
        tmp.unlink()
    return False


def _keep_persons(store: Writer, m: _Move, exc: Changed, op: str) -> Conflict:
    """A person saved the source while it moved: their save stays where it was
    and the new copy is withdrawn."""
    withdraw(m.target, None if m.linked else m.fresh.version)
    err = store.conflict_kept(m.entry.path, exc, "moving", id=m.entry.id)
    store.note_done(m.entry.path, seq=m.seq, op=op, compact=False)
    return err


def _in_way(entry: Entry, rel: str) -> Conflict:
    return Conflict(f"cannot move {entry.path} to {rel}: a file is already there", id=entry.id)


def _refused(entry: Entry, rel: str, exc: OSError) -> StorageError:
    """The file system refused a step of the move. (Its intent stays open, where
    it was journaled: recovery finds what is at the destination and sorts it out.)"""
    return StorageError(f"cannot move {entry.path} to {rel}: {exc}", path=entry.path)


def _record(store: Writer, m: _Move, op: str) -> Entry:
    """Step 5 for one move, and the view told."""
    entry, fresh = m.entry, m.fresh
    if fresh.room == entry.room and entry.id in store.view.index:
        store.view.relocate(entry, fresh)
    else:  # the room is indexed too
        store.view.forget_path(entry.path)
        store.view.load_known(fresh)
    prune_rooms(store.root, m.source.parent)
    return fresh.warn(*store.note_done(entry.path, m.plan.target, seq=m.seq, op=op, compact=False))


def prune_rooms(root: Path, folder: Path) -> None:
    """Remove the room folders a move emptied (Obsidian shows empty folders),
    up to the layer folder, which stays. Only an empty folder can be removed:
    one a person put anything in (a file, a hidden file) stays as it is."""
    layers = {root / layer for layer in N.LAYERS}
    removed = False
    while folder not in layers and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:  # not empty (or not ours to remove): stop here
            break
        removed = True
        folder = folder.parent
    if removed:  # (the move's own removal of the note synced the folder it was in)
        fsync_dir(folder)


def withdraw(copy: Path, version: str | None) -> None:
    """Remove the new copy of a move that did not happen: the second name
    of a hard-linked source (``version`` None), or the copy we wrote —
    unless someone edited that copy meanwhile, then both stay."""
    try:
        if version is None:
            os.unlink(copy)
            fsync_dir(copy.parent)
        else:
            remove_checked(copy, version)
    except Changed:
        log.warning("sediment: %s was edited before a move was withdrawn; both copies kept", copy)
