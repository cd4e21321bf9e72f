"""Journaled writes: the writer lock, the journal and the view, together.

Every change to a memory file goes through here, under the writer lock (one
file, ``_system/lock``, never deleted; re-entrant within a thread). Taking the
lock first syncs the view with what other processes wrote, and finishes any
operation a dead writer left half done (a live writer never leaves a
``begin`` without its ``done`` across a lock hold, so such a record can only
be a dead one's). Each write then publishes atomically, updates the view and
records ``done`` with the paths it changed, which is how other processes'
views learn of it.

The rules of what may be touched live here too: a file a person wrote is
reported, never rewritten, moved or deleted by recovery.

Which parts of ``_system/`` may be used is decided once, at open
(``open_system``): a part that is a symlink (or sits under one) is not
followed, and a root that cannot be written (read-only media) is opened for
reading. What is off is kept as ``Problem``s (``Parts.faults``) that ``check``
reports; ``writing()`` then refuses at once, with the reason.

A note a person may be editing at this very moment is replaced only through
``checked.replace_checked`` and removed only through ``checked.remove_checked``,
which detect an editor's save landing between our last read and our rename,
put it back and raise; here that becomes a ``Conflict`` saying the person's
save was kept, and the view re-reads the note so it shows their version.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from ..model import entry as E
from ..model import names as N
from ..model.entry import Entry
from ..disk.checked import Changed, remove_checked, replace_checked
from ..errors import (Conflict, InvalidInput, LockTimeout, NotFound, ParseError, SedimentError, StorageError,
                     UnsafePath)
from ..disk.files import (WriterLock, atomic_write, fsync_all, fsync_dir, fsync_dirs, has_temp, move_new, read_nofollow,
                          resolve_inside, sweep_temps, write_temp)
from ..disk.journal import Journal
from ..model.policy import Policy
from ..disk.usage import UsageLog
from .system import CACHE, SYSTEM as SYSTEM, VECTORS_LOCK, Parts, own_temps  # SYSTEM: part of this module's API
from ..view.held import Held
from ..model.fields import wikilink
from ..model.names import LAYERS

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..view.view import View

log = logging.getLogger("sediment")

CLOSE_WAIT = 0.25  # seconds a close waits for the writer lock to save the index snapshot (a cache)

def add_link(meta: dict[str, Any], key: str, name: str) -> None:
    links = list(meta.get(key) or ())
    if wikilink(name) not in links:
        links.append(wikilink(name))
    meta[key] = links


class Store:
    def __init__(self, root: Path, policy: Policy, view: View, *, lock: WriterLock, journal: Journal,
                 usage: UsageLog, parts: Parts | None = None) -> None:
        self.root = root
        self.parts = parts or Parts()
        self.policy = policy
        self.view = view
        self.lock = lock
        self.journal = journal
        self.usage = usage
        # how an interrupted operation is finished, by the kind of its record;
        # every op that carries src/dst (archive, purge, metabolize, …) is a move
        self.recovery: dict[str, Callable[[dict[str, Any]], tuple[str, list[str]]]] = {
            "move": self._finish_move, "supersede": self._finish_supersede}
        view.on_renamed = usage.follow  # a person's note renamed by hand keeps its usage

    # ------------------------------------------------------------------ the lock

    def turn_writes_off(self, reason: str) -> None:
        """The file system refused what the open expected to be writable (the
        lock, on media ``access()`` misjudged): writes are off from now on."""
        self.parts.writes_off = reason
        self.usage.refused = self.usage.refused or reason
        self.view.save_snapshots = False

    def check_writable(self) -> None:
        """Raise ``StorageError`` (with the reason) when writes are off."""
        if self.parts.writes_off:
            raise StorageError(f"cannot write: {self.parts.writes_off}", path=str(self.root))

    @contextlib.contextmanager
    def writing(self) -> Iterator[View]:
        """Hold the writer lock (and the view) for one write. A refusal of the
        file system is a ``StorageError``, never a raw ``OSError``."""
        self.check_writable()
        # file lock first, then the view lock; the watcher takes only the view
        # lock, so the order cannot deadlock
        try:
            with self.lock.hold(self.policy.lock_timeout_seconds), self.view.lock:
                if self.view.ready:
                    self.view.sync()
                    if self.view.feed.open_ops:  # begun by a writer that died before its done
                        self.finish_ops(list(self.view.feed.open_ops.values()))
                        self.view.feed.skip_to_end()
                try:
                    yield self.view
                finally:  # an erase loaded under this lock (ours, or pulled by sync): its text leaves the disk now
                    if self.view.erased_pending:
                        self.view.save_bodies()
        except SedimentError:
            raise
        except OSError as exc:
            raise StorageError(f"the file system refused a write: {exc}",
                               path=exc.filename if isinstance(exc.filename, str) else None) from exc

    def save_view(self) -> None:
        """Save the index snapshot if the view changed (at close). A cache: when
        it cannot be written now, the next open or close saves it, and an open
        until then rebuilds what it lacks. So a close waits for another
        process's write only briefly (``CLOSE_WAIT``), never the lock timeout."""
        if not self.view.dirty or not self.view.save_snapshots or self.parts.writes_off:
            return
        try:  # lock order as in writes: the file lock, then the view lock
            with self.lock.hold(min(self.policy.lock_timeout_seconds, CLOSE_WAIT)), self.view.lock:
                if self.view.dirty:
                    self.view.save_snapshot()
        except (LockTimeout, StorageError) as exc:
            log.debug("index snapshot not saved: %s", exc)

    # ------------------------------------------------------------------ single files

    def publish(self, rel: str, entry: Entry, *, exclusive: bool = False, expected: str | None = None) -> Entry:
        """Write ``entry`` at ``rel`` atomically; returns it as now on disk.

        ``expected``: the version of the note this write replaces (what was
        read). If a person's save landed since, it is kept, nothing is
        written, and ``Conflict`` raised."""
        text = E.render(entry).encode("utf-8")
        N.refuse_persons(rel)
        target = resolve_inside(self.root, rel)
        try:
            if expected:
                replace_checked(target, text, expected)
            else:
                atomic_write(target, text, exclusive=exclusive)
        except FileExistsError:
            raise
        except Changed as exc:
            raise self.conflict_kept(rel, exc, id=entry.meta.get("id"), expected=expected) from exc
        except OSError as exc:
            raise StorageError(f"cannot write {rel}: {exc}", path=rel) from exc
        return self.written(rel, entry, text)

    def written(self, rel: str, entry: Entry, text: bytes) -> Entry:
        """``entry`` as it is on disk once ``text`` (its rendering) is at ``rel``."""
        body = entry.body if not entry.body or entry.body.endswith("\n") else entry.body + "\n"
        # (rendered: no BOM, no CR, so the body is the end of ``text``)
        return Held(entry.meta, body, rel, E.content_version(text), tz=self.view.tz,
                    off=len(text) - len(body.encode("utf-8")))

    def rewrite(self, entry: Entry, *, meta: Mapping[str, Any], body: str | None = None) -> Entry:
        """Replace a note in place with new frontmatter (and body), and tell the
        view and other processes."""
        fresh = self.publish(entry.path, entry.with_(meta=meta, body=body), expected=entry.version)
        self.view.load_known(fresh)
        return fresh.warn(*self.note_done(fresh.path))

    def replace_bytes(self, rel: str, data: bytes, *, expected: str) -> None:
        """Write ``data`` at ``rel`` as given (adopt keeps a person's bytes), if
        the file still has the ``expected`` version; else ``Conflict``."""
        target = resolve_inside(self.root, rel)
        try:
            replace_checked(target, data, expected)
        except Changed as exc:
            raise self.conflict_kept(rel, exc, "adopting") from None
        except OSError as exc:
            raise StorageError(f"cannot write {rel}: {exc}", path=rel) from exc

    def create_many(self, files: list[tuple[str, bytes]]) -> list[str | None]:
        """Write new files (``rel``, ``data`` as given: an import keeps a
        note's bytes), each atomically: a crash leaves a whole note or a temp
        file the next recovery sweeps, never half a note. A batch waits for
        its fsyncs together, as a batch of moves does. Never over a file that
        is there, not even one a person saved a moment ago. A person's note
        brought back to its place outside the layer folders is allowed:
        creating it rewrites nothing of theirs. Returns, for each file, None
        (written) or why it was not. The caller holds the lock, checks the
        paths and tells the journal."""
        why: list[str | None] = [None] * len(files)
        temps: dict[int, tuple[Path, Path, int]] = {}  # index → (target, temp, fd)
        try:
            for i, (rel, data) in enumerate(files):
                try:
                    target = resolve_inside(self.root, rel)
                    temps[i] = (target, *write_temp(target, data))
                except (SedimentError, OSError) as exc:
                    why[i] = exc.message if isinstance(exc, SedimentError) else f"cannot write {rel}: {exc}"
            fsync_all([fd for _, _, fd in temps.values()])
            for i, (target, tmp, fd) in list(temps.items()):
                os.close(fd)
                del temps[i]
                try:
                    move_new(tmp, target)
                except OSError as exc:
                    why[i] = f"a file came to {files[i][0]} meanwhile; not overwritten" \
                        if isinstance(exc, FileExistsError) else f"cannot write {files[i][0]}: {exc}"
                    with contextlib.suppress(OSError):
                        tmp.unlink()
            fsync_dirs((self.root / rel).parent for (rel, _), w in zip(files, why) if w is None)
        except OSError as exc:  # (an fsync refused: what is not linked yet stays unwritten)
            raise StorageError(f"cannot write: {exc}") from exc
        finally:
            for _, tmp, fd in temps.values():
                os.close(fd)
                with contextlib.suppress(OSError):
                    tmp.unlink()
        return why

    def conflict_kept(self, rel: str, exc: Changed, doing: str = "writing", **details: Any) -> Conflict:
        """The Conflict for a person's save that a write (or a move) found in
        its way at ``rel``, and kept; the view takes the note as it is now."""
        try:
            details["actual"] = E.content_version(read_nofollow(self.root / rel))
        except OSError:
            pass
        if self.view.ready:
            self.view.load_file(rel)
        return Conflict(f"{rel} changed on disk while sediment was {doing} it ({exc.message}): what a "
                        f"person saved there was kept and this change was not applied", path=rel, **details)

    def note_done(self, *paths: str, seq: str | None = None, op: str = "write",
                  compact: bool = True) -> tuple[str, ...]:
        """Tell other processes what changed; returns warnings for the caller.
        The change itself is durable already: if the journal cannot take the
        record (a full disk, a journal made unwritable), the write still stands
        and is not reported as failed (a retry would write it twice); other
        processes learn of it at their next rescan, and a move's open intent is
        closed by the next writer's recovery."""
        try:
            self.journal.done(*paths, seq=seq, op=op)
        except StorageError as exc:
            log.warning("sediment: %s is written, but the journal could not record it: %s",
                        ", ".join(paths) or op, exc)
            return (f"written, but other processes were not told (the journal refused: {exc})",)
        if compact:  # (a compaction that fails leaves the journal long: the write still stands)
            self.compact_journal()
        self.view.feed.skip_to_end()  # so sync does not re-read our own files
        return ()

    def compact_journal(self) -> None:
        """Compact the journal if it is due (the caller holds the lock), and
        move our feed past it: our own compaction is no sign of records missed,
        which would cost this process a rescan of the root at its next write."""
        with contextlib.suppress(OSError, StorageError):  # a journal left long costs reading time only
            if self.journal.maybe_compact():
                log.debug("journal compacted")
                self.view.feed.skip_to_end()

    def reread(self, entry: Entry) -> Entry:
        """The entry as it is on disk now (a person may have edited it)."""
        try:
            data = read_nofollow(self.root / entry.path)
        except FileNotFoundError:
            self.view.forget_path(entry.path)
            raise NotFound(f"{entry.path} was removed", id=entry.id) from None
        except OSError as exc:  # ELOOP: the note was replaced by a symlink
            self.view.load_file(entry.path)
            raise UnsafePath(f"{entry.path} is no longer a regular file; not followed",
                             id=entry.id) from exc
        if E.content_version(data) == entry.version:
            return entry
        try:
            fresh = E.parse(data, entry.path, tz=self.view.tz, max_meta_size=self.view.max_meta_size)
        except ParseError as exc:
            self.view.load_file(entry.path)
            raise Conflict(f"{entry.path} was edited and is no longer valid: {exc.message}",
                           id=entry.id, actual=E.content_version(data)) from exc
        self.view.load_file(entry.path)
        return fresh

    def unique_name(self, base: str, eid: str) -> str:
        # Every name carries four characters of its (random) id: two machines
        # that write a note with the same title must not create the same file,
        # or their git histories would conflict on merge.
        name = f"{base}-{eid[-4:].lower()}"
        if name in self.view.by_name or self._name_on_disk(name):
            name = f"{base}-{eid[-10:].lower()}"
        return name

    def _name_on_disk(self, name: str) -> bool:
        # the view may miss a file another process wrote without journaling (a person);
        # a cheap check of the usual places
        root = str(self.root)
        return any(os.path.exists(os.path.join(root, layer, name + ".md")) for layer in LAYERS)

    def supersede(self, old: Entry, new: Entry, reason: str) -> Entry:
        """Mark ``old`` superseded by ``new`` (links both ways); journaled, as it
        changes two files. Returns the old memory as it is now."""
        seq = self.journal.begin("supersede", old=old.path, new=new.path, reason=E.one_line(reason))
        try:
            fresh, _ = self._apply_supersede(old.path, new.path, reason)
        except Conflict:
            # a person saved one of the two meanwhile: their save was kept; the
            # operation ends here, half done at most (the old one marked, the
            # new one not yet linked back), and running it again finishes it
            self.note_done(old.path, new.path, seq=seq, op="supersede")
            raise
        return fresh.warn(*self.note_done(old.path, new.path, seq=seq, op="supersede"))

    def _apply_supersede(self, old_path: str, new_path: str, reason: str) -> tuple[Entry, Entry]:
        # Idempotent, so that recovery can simply run it again.
        tz, limit = self.view.tz, self.view.max_meta_size
        old = E.parse(read_nofollow(self.root / old_path), old_path, tz=tz, max_meta_size=limit)
        new = E.parse(read_nofollow(self.root / new_path), new_path, tz=tz, max_meta_size=limit)
        meta = dict(old.meta)
        meta["status"] = "superseded"
        meta["reason"] = E.one_line(reason)
        add_link(meta, "superseded_by", new.name)
        # each publish is checked against what was just read: a person's save
        # in between is kept (Conflict), and the view learns of the old one's
        # write before the new one's can fail
        if meta != dict(old.meta):
            old = self.publish(old_path, old.with_(meta=meta), expected=old.version)
        if self.view.ready:
            self.view.load_known(old)
        nmeta = dict(new.meta)
        add_link(nmeta, "supersedes", old.name)
        if nmeta != dict(new.meta):
            new = self.publish(new_path, new.with_(meta=nmeta), expected=new.version)
        if self.view.ready:
            self.view.load_known(new)
        return old, new

    # ------------------------------------------------------------------ recovery

    def finish_ops(self, pending: list[dict[str, Any]]) -> list[str]:
        """Finish or undo operations whose writer died (the caller holds the
        lock). Returns one outcome per operation finished."""
        outcomes = []
        for rec in pending:
            self.view.feed.open_ops.pop(rec.get("seq"), None)
            paths: list[str] = []
            failed: dict[str, str] = {}
            try:
                handler = self.recovery["supersede" if rec.get("op") == "supersede" else "move"]
                outcome, paths = handler(rec)
                outcomes.append(outcome)
            except (SedimentError, OSError) as exc:
                # One damaged record or hand-broken file must not stop the root
                # from opening: give up on this operation, say so, carry on.
                # Nothing is lost: both files (if any) are still there.
                failed = {"failed": f"{type(exc).__name__}: {exc}"}
                log.warning("sediment: could not finish an interrupted %s: %s", rec.get("op"), exc)
            self.journal.done(*paths, seq=rec.get("seq"), op="recover", **failed)
            if self.view.ready:
                self.view.apply_paths(paths)
        return outcomes

    def _finish_move(self, rec: dict[str, Any]) -> tuple[str, list[str]]:
        """Roll forward when the new file is whole (it was complete before the
        old one was touched), else leave the old one where it was. The old one
        goes only if it is still what the move read (``ver``): a person who
        edited it since keeps their edit, and the move is undone instead."""
        src, dst = rec.get("src"), rec.get("dst")
        if not (isinstance(src, str) and isinstance(dst, str)):
            raise InvalidInput(f"journal record without src/dst: {rec}")
        s, d = resolve_inside(self.root, src), resolve_inside(self.root, dst)
        if d.exists() and s.exists() and _same_id(d, rec.get("id")):
            # the new copy's name durable before the source goes: a writer
            # killed (not a power cut) may have left it in the page cache only
            fsync_dir(d.parent)
            ver = rec.get("ver")
            if not isinstance(ver, str):  # a record from before versions were kept
                s.unlink()
                fsync_dir(s.parent)
                return "rolled_forward", [src, dst]
            try:
                remove_checked(s, ver)
            except Changed:
                # the source was edited since: undo the move, but remove the new
                # copy only if it is still what the move wrote (dver); edited
                # too, both stay, and check() reports the id in two files
                dver = rec.get("dver")
                if os.path.samefile(s, d):
                    # the move linked the same bytes (one file, two names), so the
                    # person's save shows under both: drop the name the move made
                    d.unlink()
                    fsync_dir(d.parent)
                elif isinstance(dver, str):
                    try:
                        remove_checked(d, dver)
                    except Changed:
                        log.warning("sediment: %s and %s were both edited after an interrupted move; "
                                    "both kept", src, dst)
                return "rolled_back", [src, dst]
            return "rolled_forward", [src, dst]
        return ("rolled_forward" if d.exists() else "rolled_back"), [src, dst]

    def _finish_supersede(self, rec: dict[str, Any]) -> tuple[str, list[str]]:
        """Both files still exist after an interrupted supersede: run it again."""
        old, new = rec.get("old"), rec.get("new")
        if not isinstance(old, str) or not isinstance(new, str):
            return "rolled_forward", []
        if not resolve_inside(self.root, old).exists() or not resolve_inside(self.root, new).exists():
            return "rolled_forward", []
        self._apply_supersede(old, new, rec.get("reason") or "superseded")
        return "rolled_forward", [old, new]

    def sweep_temps(self) -> int:
        """Remove temp files of interrupted writes. Everything under the root is
        written under the writer lock we hold (notes, journal, policy, the index
        snapshot), except usage records, which have their own lock: we take it
        too; and the semantic lane's vector files (``_sweep_cache``)."""
        n = 0
        cache = self.root / SYSTEM / CACHE
        with self.usage.lock():
            for top in (*LAYERS, SYSTEM):
                if not (self.root / top).is_symlink():  # never delete through a link
                    n += sweep_temps(self.root / top, skip=cache)
            for tmp in own_temps(self.root):  # (the root's own: a killed first open's .gitignore)
                with contextlib.suppress(FileNotFoundError):
                    tmp.unlink()
                    n += 1
            n += self._sweep_cache(cache)
        if n:
            log.info("removed %d temp file(s) left by an interrupted write", n)
        return n

    def _sweep_cache(self, cache: Path) -> int:
        """The cache folder's temp files, under the vector files' lock: a
        compaction in flight (in any process) stages its file there under that
        lock alone, and a sweep without it would delete the file before it is
        renamed in place. Not waited for (a compaction takes a while): when
        busy, the temp files stay for the next sweep. (No deadlock: whoever
        holds that lock takes no other lock inside it.)"""
        if (self.root / SYSTEM).is_symlink() or cache.is_symlink() or not has_temp(cache):
            return 0  # (the lock file is made only when there is something to sweep)
        try:
            with WriterLock.for_path(cache / VECTORS_LOCK).hold(0):
                return sweep_temps(cache)
        except (LockTimeout, StorageError) as exc:
            log.info("temp files in %s left for the next sweep: %s", cache, exc)
            return 0


def _same_id(path: Path, eid: str | None) -> bool:
    if not eid:  # (the journal refuses such records; never remove a file on no evidence)
        return False
    try:
        return E.parse(read_nofollow(path)).id == eid
    except (ParseError, OSError):
        return False
