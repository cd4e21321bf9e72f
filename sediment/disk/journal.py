"""The operations journal: fsync'd intent records for changes of more than one step.

Every write of more than one step appends ``{"op": …, "seq": n, "phase": "begin", …}``
before it touches a memory file and ``{"phase": "done", …, "seq": n}`` after; a
plain write appends only its ``done``, with an id of its own. On open, a ``begin``
without ``done`` is finished or undone by the repository (see
``Repository.recover``), so that every memory exists exactly once.

The journal doubles as a change feed between processes: a writer that takes the
lock reads the records other processes appended since it last looked and
re-reads only the files they name, instead of rescanning the root.

A crash can tear the last line; that line is ignored (and the next append starts
on a fresh line). Damage anywhere else is reported by ``check``. When the file
grows past ``COMPACT_BYTES`` and nothing is pending, it is replaced by an empty
one with a new ``epoch``; readers that notice the new epoch rescan. So do
readers that find the bytes before where they stood changed (a person cut the
file back by hand, even if appends have made it as long again since): see
``Mark``.

A journal that is a symlink (or under one) is not used at all (``off``): it
reads as empty and appends are refused; the root's writes are off anyway.
Appends and reads open the file without following a link made after the open;
a link, a FIFO or anything else but a regular file put there later reads as no
journal (and ``check`` reports it), and appends are refused.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ..model.names import LAYERS
from ..errors import StorageError
from .files import append_line, atomic_write, header_value, last_line_end, open_regular

COMPACT_BYTES = 1 << 20
MARK_BYTES = 64  # what a read position remembers of the bytes before it

# What lies before a read position: the file's (device, inode) and its last
# ``MARK_BYTES`` bytes up to there. Appends and a torn tail's completion leave
# both as they were; a compaction (an atomic replace), an editor's save by
# rename, or a hand cut that later appends made as long again, do not.
Mark = tuple[int, int, bytes]


@dataclass
class JournalRead:
    records: list[dict[str, Any]]
    offset: int  # where the next read should start
    epoch: str
    damaged: list[tuple[int, str]]  # (line number, reason) of lines that are not the torn tail
    mark: Mark | None = None  # what lies before ``offset`` (None: no file)
    anew: bool = False  # read from the start, though asked from elsewhere: not the file read up to there
    refused: str | None = None  # why what is in the journal's place was not read (not a regular file)


def _text(x: Any) -> bool:
    return isinstance(x, str) and bool(x)


def _shape_problem(rec: Any) -> str | None:
    """Why a record is not one the library writes (it is then skipped and
    reported), or None. Only well-formed records may steer recovery."""
    if not isinstance(rec, dict):
        return "not an object"
    if "epoch" in rec:
        return None
    phase, seq = rec.get("phase"), rec.get("seq")
    if seq is not None and (isinstance(seq, bool) or not isinstance(seq, (str, int))):
        return "seq must be text"
    if phase == "begin":
        return _begin_problem(rec)
    if phase == "done":
        paths = rec.get("paths", [])
        listed = isinstance(paths, list) and all(isinstance(p, str) for p in paths)
        return None if listed else "paths must be a list of text"
    return "phase must be begin or done"


def _begin_problem(rec: dict[str, Any]) -> str | None:
    """``_shape_problem`` of a begin record."""
    if rec.get("seq") is None or not _text(rec.get("op")):
        return "a begin needs seq and op"
    a, b = ("old", "new") if rec["op"] == "supersede" else ("src", "dst")
    if not (_text(rec.get(a)) and _text(rec.get(b))) or rec[a] == rec[b]:
        return f"a {rec['op']} needs two different paths {a} and {b}"
    if not (note_path(rec[a]) and note_path(rec[b])):
        # recovery acts on these paths: only notes in layer folders, never a
        # person's other files, policy.yaml or anything else a line names
        return f"{a} and {b} must be notes in layer folders"
    if rec["op"] != "supersede" and not _text(rec.get("id")):
        return "a move needs the id of what it moves"
    return None


class Journal:
    def __init__(self, path: Path, *, off: str | None = None) -> None:
        self.path = path
        self.off = off  # why the file is not used at all (it is a symlink), or None

    def ensure(self) -> None:
        if self.off:
            raise StorageError(self.off, path=str(self.path))
        if not self.path.exists():
            self._start_epoch()

    def _start_epoch(self) -> str:
        epoch = secrets.token_hex(6)
        atomic_write(self.path, (json.dumps({"epoch": epoch}) + "\n").encode())
        return epoch

    def head(self) -> tuple[int, str, tuple[int, int, int], Mark | None]:
        """(where the next record starts, epoch, ``seen``, what lies before
        it), read from one open file, so a compaction in between cannot mix
        two files. Where the next record starts: after the last complete
        line, or after text pasted at the end, which the next append ends as
        a line of its own (``files.last_line_end``). ``seen`` (size,
        mtime_ns, inode) tells a later look whether anything changed."""
        if self.off:
            return 0, "", NOT_SEEN, None
        fh, _ = self._open()
        if fh is None:
            return 0, "", NOT_SEEN, None
        with fh:
            st = os.fstat(fh.fileno())
            first = fh.readline()
            end, _ = last_line_end(fh.fileno(), st.st_size)  # a torn last line is not ours to skip past
            mark = _mark(fh.fileno(), st, end)
        return end, header_value(first, "epoch"), seen_of(st), mark

    def _open(self) -> tuple[IO[bytes] | None, str | None]:
        """The journal open for reading, or None: there is none, or what is in
        its place is not a regular file (then why it is not read). A symlink
        put there after the open is not followed (it may point out of the
        root), a FIFO not waited on (its open blocks until someone writes):
        both read as no journal at all. Another error (no permission) is
        raised, as before."""
        try:
            return os.fdopen(open_regular(self.path), "rb"), None
        except FileNotFoundError:
            return None, None
        except OSError:
            try:
                mode = os.lstat(self.path).st_mode
            except FileNotFoundError:  # (gone meanwhile)
                return None, None
            if stat.S_ISREG(mode):
                raise
        what = "a symlink" if stat.S_ISLNK(mode) else "not a regular file (a FIFO, a folder, a device)"
        return None, (f"is {what}: sediment does not read it, and records no write in it (other "
                      "processes do not see this one's writes) until a person puts a regular file there")

    def read(self, offset: int = 0, epoch: str | None = None, mark: Mark | None = None) -> JournalRead:
        """Records from ``offset`` on (reading only that part of the file). If
        the file is not the one an earlier read ended at ``offset`` (its
        epoch is not ``epoch``: compacted in between; or it is shorter than
        ``offset``, or ``mark`` no longer lies before it: cut back or replaced
        by hand), everything is returned from the start (``anew``) and the
        caller must treat its view as stale: records may have been missed."""
        if self.off:
            return JournalRead([], 0, "", [])
        fh, refused = self._open()
        if fh is None:
            return JournalRead([], 0, "", [], refused=refused)
        with fh:
            fd = fh.fileno()
            st = os.fstat(fd)
            file_epoch = header_value(fh.readline(), "epoch")
            anew = ((epoch is not None and file_epoch != epoch) or offset > st.st_size
                    or (mark is not None and offset > 0 and _mark(fd, st, offset) != mark))
            if anew:
                offset = 0
            fh.seek(offset)
            data = fh.read()
            start = data.rfind(b"\n") + 1  # the records' end: a torn tail is not read past
            # (from the bytes read when they reach back far enough: one pread fewer)
            mark = ((st.st_dev, st.st_ino, data[max(0, start - MARK_BYTES):start])
                    if start >= MARK_BYTES or offset == 0 else _mark(fd, st, offset + start))
        records: list[dict[str, Any]] = []
        damaged: list[tuple[int, str]] = []
        at = 0
        line_no = 1  # relative to offset; exact when reading from the start (check)
        while at < start:  # (after ``start``: a torn tail, an append that a crash cut short)
            nl = data.find(b"\n", at)
            line = data[at:nl]
            at = nl + 1
            if line.strip():
                try:
                    rec = json.loads(line)
                except (ValueError, RecursionError) as exc:  # RecursionError: '[[[[…' typed by hand
                    damaged.append((line_no, f"unreadable journal line: {type(exc).__name__}: {exc}"[:200]))
                else:
                    why = _shape_problem(rec)
                    if why:
                        damaged.append((line_no, f"journal line skipped: {why}"))
                    elif "epoch" not in rec:
                        records.append(rec)
            line_no += 1
        return JournalRead(records, offset + start, file_epoch, damaged, mark, anew)

    def append(self, rec: dict[str, Any] | list[dict[str, Any]], *, durable: bool = True) -> None:
        """Append one record, or several in one write (the caller holds the
        writer lock). Raises ``StorageError`` when the file system refuses (a
        full disk)."""
        try:
            self._append(rec, durable)
        except StorageError:
            raise
        except OSError as exc:
            raise StorageError(f"cannot write the journal: {exc}", path=str(self.path)) from exc

    def _append(self, rec: dict[str, Any] | list[dict[str, Any]], durable: bool = True) -> None:
        if self.off:
            raise StorageError(self.off, path=str(self.path))
        recs = rec if isinstance(rec, list) else [rec]
        line = "\n".join(_json(r) for r in recs)
        try:  # (a torn tail is cut off first: see append_line's whole)
            append_line(self.path, line, durable=durable, whole=True)
        except FileNotFoundError:
            self._start_epoch()
            append_line(self.path, line, durable=durable, whole=True)

    def begin(self, op: str, **fields: Any) -> str:
        """Record an intent (fsync'd); the caller holds the writer lock. Returns
        the operation's id, random so that no two operations share one, across
        processes and compactions."""
        seq = secrets.token_hex(8)
        self.append({"seq": seq, "phase": "begin", "op": op, "pid": os.getpid(), **fields})
        return seq

    def begin_many(self, op: str, intents: list[dict[str, Any]]) -> list[str]:
        """Record several intents with one write and one fsync (a batch of
        moves); like ``begin``, one id each. An intent whose move never starts
        is harmless: recovery finds no new copy and leaves the note where it is."""
        seqs = [secrets.token_hex(8) for _ in intents]
        pid = os.getpid()
        self.append([{"seq": seq, "phase": "begin", "op": op, "pid": pid, **f} for seq, f in zip(seqs, intents)])
        return seqs

    def done(self, *paths: str, seq: str | None = None, op: str = "write", **fields: Any) -> None:
        """Record a finished operation and the note paths it changed (readers in
        other processes re-read exactly those). ``seq`` closes a ``begin``; an
        operation without one (a plain write) gets an id of its own, as
        ``begin`` would give it, which closes nothing."""
        rec: dict[str, Any] = {"phase": "done", "op": op, "pid": os.getpid(), "paths": list(paths), **fields}
        # The id comes last, so that no two records end alike: a reader's
        # ``Mark`` is the bytes before where it stood, and two rewrites of one
        # note, otherwise the same line, would let a line a person deleted
        # before that point (then an append as long) go unnoticed.
        rec["seq"] = secrets.token_hex(8) if seq is None else seq
        # Not fsync'd: what a "done" tells is durable already (the note was
        # fsync'd). A "done" a power cut loses costs nothing: an add or rewrite
        # needs no recovery, and a move's open intent is finished again by the
        # next writer, idempotently (a copy is removed only if it is still the
        # bytes the move wrote: ``dver``). Only an intent ("begin") must reach
        # the disk before its first step; its fsync flushes earlier lines too.
        self.append(rec, durable=False)

    @staticmethod
    def pending(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        begun: dict[Any, dict[str, Any]] = {}
        for rec in records:
            if rec.get("phase") == "begin":
                begun[rec["seq"]] = rec
            elif rec.get("phase") == "done":
                begun.pop(rec.get("seq"), None)
        return list(begun.values())

    def maybe_compact(self) -> bool:
        """Start a new epoch when the file is large and nothing is pending.
        The caller holds the writer lock. One stat when the file is small."""
        if self.off:
            return False
        try:
            if self.path.stat().st_size < COMPACT_BYTES:
                return False
        except FileNotFoundError:
            return False
        if self.pending(self.read().records):
            return False
        self._start_epoch()
        return True


NOT_SEEN = (-1, 0, 0)  # a ``seen`` no file has: the next poll reads


def seen_of(st: os.stat_result) -> tuple[int, int, int]:
    """What a poll compares to tell that the journal changed, from one stat:
    size, mtime and inode (a file replaced within one tick of the clock,
    at the same size, is still another file)."""
    return st.st_size, st.st_mtime_ns, st.st_ino


def _mark(fd: int, st: os.stat_result, offset: int) -> Mark:
    """The ``Mark`` of ``offset`` in the file open at ``fd``: one small pread."""
    n = min(MARK_BYTES, offset)
    return st.st_dev, st.st_ino, os.pread(fd, n, offset - n) if n > 0 else b""


def note_path(p: Any) -> bool:
    """A journal path we may read: relative, inside a layer folder, no '..'
    (the journal is ours, but a damaged line must not send us elsewhere)."""
    if not isinstance(p, str) or p.startswith(("/", "\\")) or "\x00" in p:
        return False
    parts = p.split("/")
    return parts[0] in LAYERS and ".." not in parts and p.endswith(".md")


class Feed:
    """The journal read as a change feed: what other processes finished since
    we last looked. One ``stat`` per poll when nothing changed; when it did,
    one read of what was appended, checked against what lay before where we
    stood (``Mark``) in the same open."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        # how far we have read: (offset, epoch, seen_of(the stat) when we
        # looked, the Mark of offset: None before the first read)
        self.pos: tuple[int, str, tuple[int, int, int], Mark | None] = (0, "", NOT_SEEN, None)
        self.open_ops: dict[Any, dict[str, Any]] = {}  # begins seen without their done
        self._begun: dict[str, dict[str, Any]] = {}  # note id → its latest begin read since ``moves``

    def start_at(self, jr: JournalRead) -> None:
        """Read on from where ``jr`` (a read of the journal) ended: the next
        poll reads whatever was appended since."""
        self.pos = (jr.offset, jr.epoch, NOT_SEEN, jr.mark)

    def skip_to_end(self) -> None:
        """Our own records are never read back: after each of our appends (under
        the lock, so nothing else came between) the position moves past it."""
        self.pos = self.journal.head()

    def _anew(self, jr: JournalRead, seen: tuple[int, int, int]) -> None:
        """After a read of the whole journal: what stays open is what it holds
        open now. (A compaction happens only when nothing is pending, but a
        writer may begin, and die, after it.)"""
        self.pos = (jr.offset, jr.epoch, seen, jr.mark)
        self.open_ops = {r.get("seq", ""): r for r in Journal.pending(jr.records)}
        for rec in jr.records:
            self._saw(rec)

    def _saw(self, rec: dict[str, Any]) -> None:
        if rec.get("phase") == "begin" and isinstance(rec.get("id"), str):
            self._begun[rec["id"]] = rec

    def moves(self, open_too: bool = False) -> dict[str, dict[str, Any]]:
        """The intents (``begin`` records: id, src, dst) read since the last
        call, the latest per note id; with ``open_too`` also those still open
        from before. Each tells where its note may be while it moves."""
        out = {r["id"]: r for r in self.open_ops.values() if isinstance(r.get("id"), str)} if open_too else {}
        out.update(self._begun)
        self._begun = {}
        return out

    def poll(self) -> list[str] | None:
        """Note paths finished by others since the last poll, sorted; ``None``
        when the journal is not the file we read up to where we stood
        (records may have been missed: the caller rescans)."""
        offset, epoch, seen, mark = self.pos
        if self.journal.off:
            return []
        try:
            st = self.journal.path.stat()
        except FileNotFoundError:
            return []
        now_seen = seen_of(st)
        if now_seen == seen:
            return []
        jr = self.journal.read(offset, epoch, mark)
        if jr.anew:
            # compacted by another process (a new epoch), or cut back by hand
            # (a paste taken out again), even if appends made it as long again
            # since: records may be missed, and a begin we hold may have been
            # closed meanwhile. It was read whole, so what stays open is what
            # the journal holds open now (a begin kept stale would be finished
            # by our next write: a note removed)
            self._anew(jr, now_seen)
            return None
        self.pos = (jr.offset, jr.epoch, now_seen, jr.mark)
        paths: set[str] = set()
        for rec in jr.records:
            self._saw(rec)
            if rec.get("phase") == "begin":
                self.open_ops[rec.get("seq", "")] = rec
            elif rec.get("phase") == "done":
                self.open_ops.pop(rec.get("seq", ""), None)
                got = rec.get("paths")
                paths.update(p for p in (got if isinstance(got, list) else ()) if note_path(p))
        return sorted(paths)


def _json(rec: dict[str, Any]) -> str:
    """One record's line: UTF-8 as typed, but a path a person named in
    another encoding (a lone surrogate, as ``os.fsdecode`` gives it) is
    written escaped, which ``json.loads`` reads back to the same path."""
    line = json.dumps(rec, ensure_ascii=False, separators=(",", ":"))
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(rec, separators=(",", ":"))
    return line

