"""Health of a root: finishing what a crash interrupted (``recover``),
reporting what is wrong without repairing it (``check``; the finders are in
``checks``) and adopting a note a person wrote (``adopt``; its bytes are
``adopt.adopted_bytes``). Files a person wrote are reported, never
rewritten, moved or deleted, but by ``adopt``, which only inserts lines.
"""

from __future__ import annotations

import datetime as _dt
import errno
import logging
import os
from collections import Counter
from typing import Iterable

from ..model import entry as E
from ..model import validate as V
from . import checks as C
from . import people as P
from .adopt import ADOPTED_KIND, adopted_bytes
from ..model.entry import Entry
from ..errors import InvalidInput, LockTimeout, NotFound, ParseError, StorageError, UnsafePath
from ..disk.files import has_temp, read_nofollow, resolve_inside
from ..disk.journal import JournalRead
from ..store.store import SYSTEM, Store
from ..store.system import own_temps
from ..model.problem import Problem
from ..model.fields import new_id
from ..model.names import LAYERS

log = logging.getLogger("sediment")


def recover(store: Store) -> dict[str, int]:
    report = {"rolled_forward": 0, "rolled_back": 0, "temp_removed": 0}
    with store.writing() as view:
        store.journal.ensure()
        pending = store.journal.pending(store.journal.read().records)
        for key, n in Counter(store.finish_ops(pending)).items():
            report[key] += n
        report["temp_removed"] = store.sweep_temps()
        store.compact_journal()  # (a journal left long is no reason to call recovery failed)
        view.feed.skip_to_end()  # (under the lock: at an open, the feed reads on from here)
    return report


def recover_at_open(store: Store) -> bool:
    """Recovery on open, where it can run. Where it cannot (a read-only root,
    a symlinked journal or lock, no permission), the root still opens for
    reading and ``check`` reports what was left as it was.

    An open with nothing to recover (the usual one) takes no lock for
    recovery: the journal, read without the lock, has no open intent, and the
    lock file can be opened. Temp files are looked for by the open's own walk
    instead (``sweep_at_open``). Returns whether that sweep is still owed.
    Reading without the lock is safe: an intent a live writer appends
    meanwhile is its own to finish, and one seen open sends us down the
    locked path, which waits for that writer as before. (An open that finds
    the caches out of date saves them under the writer lock only if it is
    free at once: it never waits on a writer for a cache.)

    The view's feed starts where recovery read the journal to, so that an
    intent appended after that read (by a writer killed at once) is seen by
    the feed, and the next write finishes it."""
    why = store.parts.writes_off
    if why is None:
        jr = _nothing_pending(store)
        if jr is not None:
            store.view.feed.start_at(jr)
            store.view.temps_seen = set()  # (the open's walk looks for them: sweep_at_open)
            return True
        try:
            recover(store)
            return False
        except StorageError as exc:
            why = str(exc)
            cause = exc.__cause__
            if isinstance(cause, OSError) and cause.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
                store.turn_writes_off(f"{why} (the root is read-only to this process)")
    try:  # (one read: where the feed starts, and what is left open)
        jr = store.journal.read()
    except OSError:
        jr = JournalRead([], 0, "", [])  # (check() reports an unreadable journal)
    store.view.feed.start_at(jr)  # (nothing of ours to finish here)
    pending = len(store.journal.pending(jr.records))
    if pending or why != store.parts.writes_off:
        left = f"{pending} interrupted operation(s) left as they are" if pending else "nothing was pending"
        store.parts.faults.append(Problem(f"{SYSTEM}/journal.log", f"recovery could not run: {left}; {why}",
                                          severity="error" if pending else "warning", code="not_recovered"))
    return False


def _nothing_pending(store: Store) -> JournalRead | None:
    """The journal, read without the lock, if the locked recovery can be
    skipped: a journal of ours (its epoch line readable), no intent without
    its done, and a lock file this process may open (media that refuse writes
    fail here, as the lock would)."""
    journal = store.journal
    if journal.off:
        return None
    try:
        jr = journal.read()
    except OSError:
        return None
    return jr if jr.epoch and not journal.pending(jr.records) and store.lock.can_open() else None


def sweep_at_open(store: Store) -> None:
    """After an open that skipped the locked recovery: sweep the temp files of
    interrupted writes if there are any (the walk met some in the layer
    folders, ``_system/`` or the top of the root holds one), under the locks
    as ``recover`` does."""
    seen, store.view.temps_seen = store.view.temps_seen, None  # (later walks keep no record)
    if store.parts.writes_off:
        return
    system = store.root / SYSTEM
    if seen or (not system.is_symlink() and has_temp(system)) or own_temps(store.root):
        try:
            with store.writing():
                store.sweep_temps()
        except (StorageError, LockTimeout) as exc:  # (a temp file costs only space: the next open tries again)
            log.warning("sediment: temp files not swept: %s", exc)


def check(store: Store, fix: bool = False, more: Iterable[Problem] = ()) -> list[Problem]:
    """``more``: the problems of parts the store does not hold (the semantic lane's)."""
    if fix:
        recover(store)
        adopt_all(store)
    with store.view.reading() as view:  # a watcher thread may be changing the view
        view.refresh()
        problems = list(view.problems.values()) + store.parts.faults
        problems += C.duplicate_names(view)
        problems += C.file_shapes(view)
        problems += C.not_regular(view)
        problems += C.unresolved_links(view)
        problems += C.layer_links(view.root)
        problems += [Problem(rel, why, severity="warning", code="vault_settings") for rel, why in view.rules.faults]
        problems += _journal(store)
        problems += C.temps(view.root)
        problems += P.problems(P.known(store.policy, view.entries.values()), view.entries)
    problems += more
    unique = {(p.path, p.line, p.code): p for p in problems}  # the watcher may have named one too
    return sorted(unique.values(), key=lambda p: (p.path, p.line or 0, p.code))


def _journal(store: Store) -> list[Problem]:
    where = f"{SYSTEM}/journal.log"
    jr = store.journal.read()
    out = [Problem(where, why, line=line, code="journal") for line, why in jr.damaged]
    if jr.refused:
        out.append(Problem(where, jr.refused, code="not_a_file"))
    for rec in store.journal.pending(jr.records):
        out.append(Problem(where, f"unfinished {rec.get('op')} of {rec.get('src')} (run recover)",
                           code="journal_pending"))
    for rec in jr.records:
        if rec.get("failed"):
            out.append(Problem(where, "an interrupted operation could not be finished and was left "
                                      f"as it was: {rec['failed']}", severity="warning", code="journal_failed"))
    return out


def adopt(store: Store, path: str, *, kind: str | None = None) -> Entry:
    """Make the note at ``path`` (relative to the root, inside a layer folder)
    a memory. An adopted note is returned as it is (adopting is idempotent).
    It keeps the kind it declares; one that declares none gets ``kind``
    (default ``adopt.ADOPTED_KIND``). A ``kind`` other than the one the note
    declares is ``InvalidInput`` (the note's is the person's word)."""
    if kind is not None:
        kind = V.kind(kind, store.policy.kinds)
    if not isinstance(path, str) or not path.endswith(".md"):
        raise InvalidInput(f"adopt takes the path of a .md note relative to the root, not {path!r}")
    if os.path.isabs(path):  # a path a person copied whole: the same note, if it is inside the root
        inside = os.path.relpath(os.path.realpath(path), os.path.realpath(store.root))
        if inside == ".." or inside.startswith(".." + os.sep):
            raise UnsafePath("adopt takes a note inside the root; this path is outside it "
                             "(copy the note into a layer folder first)")
        path = inside
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if any(p == ".." or p.startswith(".") for p in parts):
        raise InvalidInput(f"adopt takes a path inside the root, without '..' or hidden folders: {path!r}")
    rel = "/".join(parts)
    if rel.split("/", 1)[0] not in LAYERS:
        raise InvalidInput(f"{rel} is not in a layer folder: move it into one ({', '.join(LAYERS)}) "
                           f"to hand it to the agent's memory, then adopt it")
    full = resolve_inside(store.root, rel)
    with store.writing() as view:
        if rel in view.by_path:
            return view.entries[view.by_path[rel]]
        try:
            data = read_nofollow(full)
        except FileNotFoundError:
            raise NotFound(f"no note at {rel}", path=rel) from None
        except OSError as exc:
            raise UnsafePath(f"{rel} is not a regular file; not followed", path=rel) from exc
        mtime = _dt.datetime.fromtimestamp(os.stat(full, follow_symlinks=False).st_mtime).astimezone()
        new = adopted_bytes(data, rel, eid=new_id(int(mtime.timestamp() * 1000)), when=mtime,
                            kind=kind or ADOPTED_KIND)
        entry = E.parse(new, rel, tz=view.tz, max_meta_size=view.max_meta_size)  # refuses what would not read
        if kind is not None and entry.kind != kind:
            raise InvalidInput(f"{rel} declares kind: {entry.kind}; adopt keeps a person's kind: change it "
                               f"in the note, or adopt it and then update its kind", path=rel, what="kind")
        if not entry.body.strip():
            raise InvalidInput(f"{rel} has no text: an empty note is not a memory", path=rel)
        if entry.id in view.entries:
            raise InvalidInput(f"{rel}: id {entry.id} is used by {view.entries[entry.id].path}", path=rel)
        store.replace_bytes(rel, new, expected=E.content_version(data))
        view.load_file(rel)
        store.note_done(rel, op="adopt")
        adopted = view.resolve(entry.id)
        if adopted.kind not in store.policy.kinds:
            return adopted.warn(f"kind {adopted.kind!r} is not one of the policy's kinds: it decays as inbox "
                                f"until it is (update --kind, or 'kinds' in policy.yaml)")
        return adopted


def adopt_all(store: Store) -> list[str]:
    """Adopt every note in a layer folder that only lacks what adopt inserts;
    returns their paths. Files that cannot be adopted stay problems."""
    done = []
    with store.view.reading() as view:
        view.refresh()  # notes written since the last look
        candidates = sorted(p for p, prob in view.problems.items() if prob.code == "parse")
    for rel in candidates:
        try:
            adopt(store, rel)
            done.append(rel)
        except (ParseError, InvalidInput, NotFound):
            continue
    return done
