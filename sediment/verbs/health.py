"""Health of a root: finishing what a crash interrupted (``recover``) and
reporting what is wrong without repairing it (``check``). Files a person
wrote are reported, never rewritten, moved or deleted.
"""

from __future__ import annotations

import errno
import logging
import os
from collections import Counter
from pathlib import Path

from ..model import names as N
from ..model import obsidian as O
from .adopt import adopt_all
from ..errors import LockTimeout, StorageError
from ..disk.files import has_temp, is_temp, read_nofollow
from ..disk.journal import JournalRead
from ..progress import Ticker
from ..store.store import SYSTEM, Store
from ..model.problem import Problem
from ..view.view import View
from ..model.fields import unwrap_link
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
    folders, or ``_system/`` holds one), under the locks as ``recover`` does."""
    seen, store.view.temps_seen = store.view.temps_seen, None  # (later walks keep no record)
    if store.parts.writes_off:
        return
    system = store.root / SYSTEM
    if seen or (not system.is_symlink() and has_temp(system)):
        try:
            with store.writing():
                store.sweep_temps()
        except (StorageError, LockTimeout) as exc:  # (a temp file costs only space: the next open tries again)
            log.warning("sediment: temp files not swept: %s", exc)


def check(store: Store, fix: bool = False) -> list[Problem]:
    if fix:
        recover(store)
        adopt_all(store)
    with store.view.reading() as view:  # a watcher thread may be changing the view
        view.refresh()
        problems = list(view.problems.values()) + store.parts.faults
        problems += _duplicate_names(view)
        problems += _file_shapes(view)
        problems += _not_regular(view)
        problems += _unresolved_links(view)
        problems += _layer_links(view.root)
        problems += [Problem(rel, why, severity="warning", code="vault_settings") for rel, why in view.rules.faults]
        problems += _journal(store)
        problems += _temps(view.root)
    unique = {(p.path, p.line, p.code): p for p in problems}  # the watcher may have named one too
    return sorted(unique.values(), key=lambda p: (p.path, p.line or 0, p.code))


def _duplicate_names(view: View) -> list[Problem]:
    names: dict[str, list[str]] = {}
    for e in view.entries.values():
        if not e.reference:  # a person's notes may share names: [[links]] resolve as Obsidian does
            names.setdefault(e.name, []).append(e.path)
    out = []
    for name, paths in names.items():
        if len(paths) > 1:
            for p in sorted(paths)[1:]:
                out.append(Problem(p, f"name {name!r} is also used by {sorted(paths)[0]}; "
                                      f"[[{name}]] links are ambiguous",
                                   severity="warning", code="duplicate_name"))
    return out


def _file_shapes(view: View) -> list[Problem]:
    """Reads the head of every note: the long part of a check ('check' progress)."""
    out = []
    files = list(view.walk())
    tick = Ticker(view.progress, "check", len(files))
    for rel, _ in files:
        tick()
        if rel not in view.by_path or not N.in_layer(rel):  # (a person's file is theirs as it is)
            continue
        try:
            raw = read_nofollow(view.root / rel)[:4096]
        except OSError:  # gone or replaced since the scan: the next check sees it
            continue
        if raw.startswith(b"\xef\xbb\xbf"):
            out.append(Problem(rel, "starts with a byte-order mark", severity="warning", code="bom"))
        if b"\r\n" in raw:
            out.append(Problem(rel, "has Windows (CRLF) line ends", severity="warning", code="crlf"))
    return out


def _not_regular(view: View) -> list[Problem]:
    """What the walk passes over in layer folders: symlinks (to a file or a
    folder: never followed, they may point anywhere), FIFOs, sockets and
    devices named like notes, and folders named like notes."""
    out = []
    stack = [(view.root / layer, layer) for layer in LAYERS if not (view.root / layer).is_symlink()]
    while stack:
        folder, rel = stack.pop()
        try:
            it = os.scandir(folder)
        except OSError:
            continue
        with it:
            for d in it:
                r = f"{rel}/{d.name}"
                if d.is_symlink():
                    if d.name.endswith(".md") or d.is_dir():
                        out.append(Problem(r, "is a symlink; sediment does not follow it", code="not_a_file"))
                elif d.is_dir(follow_symlinks=False):
                    if d.name.endswith(".md"):
                        out.append(Problem(r + "/", "a folder named like a note; its notes are read as a room",
                                           severity="warning", code="folder_md"))
                    if not d.name.startswith("."):
                        stack.append((Path(d.path), r))
                elif d.name.endswith(".md") and not d.is_file(follow_symlinks=False):
                    out.append(Problem(r, "not a regular file (a FIFO, socket or device); not read",
                                       code="not_a_file"))
    return out


def _unresolved_links(view: View) -> list[Problem]:
    """Every wikilink (frontmatter links, supersedes, superseded_by; the body;
    a person's note's properties) that names no note, resolved as Obsidian
    resolves it, with the line it is on. A link to a file that is no note
    (``[[photo.png]]``, ``![[paper.pdf]]``) is not checked; a damaged note,
    or a note Obsidian's settings leave out (a template), still counts as
    there: its links are not the problem."""
    known = {rel.rsplit("/", 1)[-1][:-3].casefold() for rel in view.problems if rel.endswith(".md")}
    left_out: set[str] | None = None
    out = []
    for e in view.entries.values():
        names = [*e.links, *(unwrap_link(x) for k in ("supersedes", "superseded_by")
                              for x in e.meta.get(k) or ())]
        missing = [n for n in dict.fromkeys(names) if n and n not in view.entries and view.link(n) is None
                   and not O.ATTACHMENT.search(n) and n.rsplit("/", 1)[-1].casefold() not in known]
        if missing and left_out is None:
            left_out = _left_out_names(view)
        missing = [n for n in missing if n.rsplit("/", 1)[-1].casefold() not in (left_out or ())]
        if not missing:
            continue
        try:
            lines = read_nofollow(view.root / e.path).decode("utf-8", "replace").splitlines()
        except OSError:
            lines = []
        for name in missing:
            line = next((i for i, text in enumerate(lines, 1) if f"[[{name}" in text), None)
            out.append(Problem(e.path, f"[[{name}]] names no note", line=line, severity="warning",
                               code="unresolved_link"))
    return out


def _left_out_names(view: View) -> set[str]:
    """Names (case-folded) of the .md files a walk leaves out on purpose:
    templates, Obsidian's excluded files. Links to them are Obsidian's links."""
    out: set[str] = set()
    for dirpath, dirs, files in os.walk(view.root):  # (os.walk does not follow links)
        rel = Path(dirpath).relative_to(view.root).as_posix()
        dirs[:] = [d for d in dirs if not d.startswith(".") and not (rel == "." and d == SYSTEM)]
        out.update(f[:-3].casefold() for f in files if f.endswith(".md")
                   and not view.rules.indexed(f if rel == "." else f"{rel}/{f}"))
    return out


def _layer_links(root: Path) -> list[Problem]:
    """A layer folder that is a symlink (a symlinked ``_system/`` is one of
    the store's faults)."""
    return [Problem(top + "/", "is a symlink; sediment does not follow it", code="symlink")
            for top in LAYERS if (root / top).is_symlink()]


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


def _temps(root: Path) -> list[Problem]:
    out = []
    for top in (*LAYERS, SYSTEM):  # where sediment writes, and recover sweeps
        if (root / top).is_symlink():
            continue
        for dirpath, _, filenames in os.walk(root / top):  # (os.walk does not follow links)
            for f in filenames:
                if is_temp(f):
                    rel = Path(dirpath, f).relative_to(root).as_posix()
                    out.append(Problem(rel, "temp file of an interrupted write (run recover)",
                                       severity="warning", code="temp"))
    return out
