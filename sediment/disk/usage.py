"""Usage records (recalls, confirmations, refutations), kept outside the notes.

Reading must leave every ``.md`` byte-identical, so what reading teaches us —
this memory was recalled, that one confirmed — goes to ``_system/usage/``:

* ``events.log``: append-only JSON lines; the first line names a generation.
* ``summary.json``: per-id totals folded in by compaction, plus how many bytes
  of which log generation they already include.

An import brings whole usage records from another root as ``restore``
events (``UsageLog.restore``), folded in as another machine's totals are.

An event may carry a request key (``req``): a caller that may send the same
event again (an MCP client retrying a ``touch`` after the server died) gives
each of its calls one, and an event whose key was counted already is not
counted again. The key is in the event's own line, so the event and the
knowledge that it happened are one write. Keys are kept for
``REQUEST_TTL`` seconds (across compactions, in the summary).

Appends and compaction hold ``usage/lock`` (a lock separate from the writer
lock, held for microseconds) so that no append lands in a log that compaction
has already read. Compaction writes the summary first (atomically), then starts
a new log generation; a crash in between is harmless because the summary says
which bytes it already counted. Records are not fsync'd: a lost recall after a
power cut costs a little decay accuracy, never a memory.

Where the folder cannot be used — it is a symlink (``readable`` False: nothing
is read or written), or the root is read-only (``refused`` says why) — the
records read as empty or as they are, and writing one raises ``StorageError``.
Appends open the log without following a symlink put in its place.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import secrets
import threading
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from ..errors import LockTimeout, StorageError
from .files import NOFOLLOW, WriterLock, atomic_write, header_value, read_nofollow
from ..model.usage import Usage
from .shared import combine

log = logging.getLogger("sediment")

COMPACT_BYTES = 4 << 20
EVENTS = ("recall", "confirm", "refute")
RESTORE = "restore"  # a memory's whole usage record, brought by an import (``restore``)
REQUEST_TTL = 2 * 24 * 3600  # a retry comes within minutes; the server keeps its answers a day


def _day(t: float, tz: _dt.tzinfo = _dt.timezone.utc) -> str:
    """The day of an event, in the root's timezone (DESIGN.md, "Time")."""
    return _dt.datetime.fromtimestamp(t, tz).date().isoformat()


class UsageLog:
    def __init__(self, folder: Path, lock_timeout: float = 10.0, *, readable: bool = True,
                 refused: str | None = None, tz: _dt.tzinfo = _dt.timezone.utc) -> None:
        self.folder = folder
        self.tz = tz  # recall days are counted here
        self.readable = readable  # False: the folder is a symlink, not ours to read
        self.refused = refused  # why records cannot be written, or None
        self.log = folder / "events.log"
        self.summary_path = folder / "summary.json"
        self._lock = WriterLock.for_path(folder / "lock")
        self._timeout = lock_timeout
        self._mutex = threading.Lock()
        self.usage: dict[str, Usage] = {}
        self.requests: dict[str, float] = {}  # request key → when its event happened
        self._pos: tuple[str, int, int] = ("", 0, -1)  # generation, offset read, size seen
        # the other machines' totals (``shared.SharedUsage``), set by the repository
        self.others: Callable[[], Mapping[str, Usage]] | None = None
        self._totals: tuple[object, dict[str, Usage]] = ((), {})
        self._dated_cache: tuple[object, tuple[dict[str, list[tuple[float, str, str]]], dict[str, list[str]]]] = \
            ((), ({}, {}))
        # the time of a record made without ``now`` (a search's recalls): the
        # wall clock, which a caller may set (a test searching on four days)
        self.clock: Callable[[], float] = time.time

    @property
    def writable(self) -> bool:
        return self.refused is None

    def lock(self) -> AbstractContextManager[None]:
        """The usage lock (held for an append or a compaction); nothing to hold
        where this process writes no records."""
        return self._lock.hold(self._timeout) if self.writable else nullcontext()

    def writable_folder(self) -> Path:
        """The folder, for another record kept beside the usage log (the rate
        limit); raises ``StorageError`` where records cannot be written."""
        if self.refused:
            raise StorageError(self.refused, path=str(self.folder))
        return self.folder

    def _ensure(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if not self.log.exists():
            self._new_generation()

    def _new_generation(self) -> str:
        gen = secrets.token_hex(6)
        atomic_write(self.log, (json.dumps({"gen": gen}) + "\n").encode(), durable=False)
        return gen

    def record(self, ids: Iterable[str], ev: str, *, now: float | None = None, request: str | None = None) -> None:
        """Append one event for each id, in a single write. With ``request``
        (one id only), an event of a request counted already counts nothing."""
        if ev not in EVENTS:
            raise ValueError(f"unknown usage event {ev!r}")
        ids = list(ids)
        if not ids:
            return
        if request is not None and len(ids) != 1:
            raise ValueError("a request key names one event")
        t = round(self.clock() if now is None else now, 3)
        extra = {} if request is None else {"req": request}
        self._append("".join(json.dumps({"t": t, "id": i, "ev": ev, **extra}, separators=(",", ":")) + "\n"
                             for i in ids))

    def restore(self, records: Iterable[tuple[str, Usage, str]]) -> None:
        """Add whole usage records (an import brings memories' usage from
        another root), one ``restore`` event each, in a single write: (id, its
        totals, a request key). They fold in as another machine's totals do
        (``shared.combine``); the key makes the same record brought again
        within ``REQUEST_TTL`` (an import run twice) count once."""
        t = round(self.clock(), 3)
        self._append("".join(json.dumps({"t": t, "id": i, "ev": RESTORE, "usage": u.to_json(), "req": req},
                                        separators=(",", ":")) + "\n" for i, u, req in records))

    def record_recalls(self, ids: Iterable[str], *, now: float | None = None) -> None:
        """Count these memories as recalled (a search's hits, a context block's
        reminders, what an agent was shown). Where records cannot be written
        nothing is recorded; a lost recall never fails the read that made it."""
        ids = list(ids)
        if not ids or not self.writable:
            return
        try:
            self.record(ids, "recall", now=now)
        except (LockTimeout, OSError) as exc:
            log.warning("sediment: recall not recorded: %s", exc)

    def _append(self, data: str) -> None:
        if not data:
            return
        if self.refused:
            raise StorageError(self.refused, path=str(self.folder))
        try:
            with self._lock.hold(self._timeout):
                self._ensure()
                fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | NOFOLLOW)
                try:
                    os.write(fd, data.encode())
                finally:
                    os.close(fd)
                if self.log.stat().st_size > COMPACT_BYTES:
                    self._compact_locked()
        except StorageError:
            raise
        except OSError as exc:  # a symlink in place of the log, a full disk
            raise StorageError(f"cannot record usage in {self.folder}: {exc}", path=str(self.folder)) from exc

    def follow(self, pairs: Iterable[tuple[str, str]]) -> None:
        """Notes whose id changed (a person's note renamed by hand): their usage
        goes with them. Written as events, so compaction and every process that
        folds the log agree on where it went. Like a recall, a move that cannot
        be recorded is logged, never raised into the read that found it."""
        if not self.writable:
            return
        known = self.load()
        t = round(_dt.datetime.now().timestamp(), 3)
        try:
            self._append("".join(json.dumps({"t": t, "id": old, "ev": "moved", "to": new},
                                            separators=(",", ":")) + "\n"
                                 for old, new in pairs if old in known))
        except (LockTimeout, StorageError) as exc:
            log.warning("sediment: the usage of a renamed note was not moved: %s", exc)

    def load(self) -> dict[str, Usage]:
        """Totals per id, including other processes' records. One stat when
        nothing changed; otherwise only the new part of the log is read."""
        if not self.readable:
            return self.usage  # (empty)
        with self._mutex:
            try:
                fh = open(self.log, "rb")
            except FileNotFoundError:
                if not self.usage:
                    self.usage, _, self.requests = self._read_summary()
                return self.usage
            with fh:
                size = os.fstat(fh.fileno()).st_size
                gen, offset, seen = self._pos
                if size == seen and gen:
                    return self.usage
                first = fh.readline()
                file_gen = header_value(first, "gen")
                if file_gen != gen:  # a new generation: start again from the summary
                    self.usage, consumed, self.requests = self._read_summary()
                    done = consumed.get("bytes", 0) if consumed.get("gen") == file_gen else len(first)
                    offset = done if isinstance(done, int) and not isinstance(done, bool) and done >= 0 else len(first)
                fh.seek(offset)
                data = fh.read()
            end = self._fold(data)
            self._pos = (file_gen, offset + end, offset + len(data))
            return self.usage

    def events(self, ids: Iterable[str]) -> list[tuple[float, str, str]]:
        """This machine's records of these ids that the log still holds, as
        (time, event, id), oldest first. Compaction folds older records into
        the summary's totals, which keep the recall days and the last times but
        no other dates. A note renamed by hand brings its old id's records."""
        by_id, moved = self._dated()
        wanted, todo = set(), list(ids)
        while todo:  # the ids this memory had before renames, and theirs
            i = todo.pop()
            if i not in wanted:
                wanted.add(i)
                todo += moved.get(i, ())
        return sorted(r for i in wanted for r in by_id.get(i, ()))

    def _dated(self) -> tuple[dict[str, list[tuple[float, str, str]]], dict[str, list[str]]]:
        """The log's records by id, and the renames (new id → old ids); read
        again only when the log changed (one card after another reads it once)."""
        if not self.readable:
            return {}, {}
        try:
            data = read_nofollow(self.log)
        except OSError:  # no log yet, or not a regular file: nothing dated
            return {}, {}
        key = (len(data), hash(data[:256]), hash(data[-256:]))
        if self._dated_cache[0] == key:
            return self._dated_cache[1]
        by_id: dict[str, list[tuple[float, str, str]]] = {}
        moved: dict[str, list[str]] = {}
        for line in data.splitlines()[1:]:
            try:
                rec = json.loads(line)
                t, ev, rid = float(rec["t"]), rec["ev"], rec["id"]
                if not isinstance(rid, str):
                    continue
                if ev == "moved" and isinstance(rec["to"], str):
                    moved.setdefault(rec["to"], []).append(rid)
                elif ev in EVENTS:
                    by_id.setdefault(rid, []).append((t, ev, rid))
            except (ValueError, KeyError, TypeError, OverflowError, RecursionError):
                continue  # a damaged record costs one event, as in _fold
        self._dated_cache = (key, (by_id, moved))
        return by_id, moved

    def totals(self) -> Mapping[str, Usage]:
        """What decisions use (the plan, strength, tie-breaks): this machine's
        records plus the other machines' synced summaries. Not to be changed."""
        mine = self.load()
        if self.others is None:
            return mine
        others = self.others()
        if not others:
            return mine
        key = (self._pos, id(mine), len(mine), id(others))
        if self._totals[0] != key:
            out: dict[str, Usage] = {}
            combine(out, mine)
            combine(out, others)
            self._totals = (key, out)
        return self._totals[1]

    def _fold(self, data: bytes) -> int:
        """Add the complete lines of ``data``; returns how many bytes they take
        (a torn last line is read next time, once complete)."""
        end = data.rfind(b"\n") + 1
        for line in data[:end].splitlines():
            try:
                rec = json.loads(line)
                t = float(rec["t"])
                if rec["ev"] == "moved" and isinstance(rec["id"], str) and isinstance(rec["to"], str):
                    moved = self.usage.pop(rec["id"], None)
                    if moved is not None:
                        combine(self.usage, {rec["to"]: moved})
                    continue
                if not isinstance(rec["id"], str) or rec["ev"] not in (*EVENTS, RESTORE):
                    continue
                restored = Usage.from_json(rec["usage"]) if rec["ev"] == RESTORE else None
                req = rec.get("req")
                if isinstance(req, str):
                    if req in self.requests:
                        continue  # the same request again (a retry): counted once
                    self.requests[req] = t
                if restored is not None:
                    combine(self.usage, {rec["id"]: restored})
                    continue
                self.usage.setdefault(rec["id"], Usage()).add(rec["ev"], t, _day(t, self.tz))
            except (ValueError, KeyError, TypeError, OverflowError, OSError, RecursionError):
                continue  # a damaged record costs one event, never the log
        return end

    def _read_summary(self) -> tuple[dict[str, Usage], dict[str, Any], dict[str, float]]:
        """The totals compaction folded in, what of the log they include, and
        the request keys they counted."""
        try:
            raw = json.loads(self.summary_path.read_bytes())
            items, consumed = raw["usage"].items(), raw.get("consumed", {})
            if not isinstance(consumed, dict):
                consumed = {}
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            return {}, {}, {}
        usage = {}
        for k, v in items:
            try:
                usage[k] = Usage.from_json(v)
            except ValueError:
                continue
        reqs = raw.get("requests")
        requests = {k: float(t) for k, t in reqs.items() if isinstance(k, str) and isinstance(t, (int, float))
                    and not isinstance(t, bool)} if isinstance(reqs, dict) else {}
        return usage, consumed, requests

    def compact(self) -> None:
        if self.refused:
            raise StorageError(self.refused, path=str(self.folder))
        with self._lock.hold(self._timeout):
            self._compact_locked()

    def _compact_locked(self) -> None:
        self._pos = ("", 0, -1)
        usage = {k: Usage.from_json(v.to_json()) for k, v in self.load().items()}
        data = self.log.read_bytes()
        gen = header_value(data[:data.find(b"\n")], "gen")
        consumed = {"gen": gen, "bytes": data.rfind(b"\n") + 1}
        recent = _dt.datetime.now().timestamp() - REQUEST_TTL
        summary = {"consumed": consumed, "usage": {k: v.to_json() for k, v in sorted(usage.items())},
                   "requests": {k: t for k, t in sorted(self.requests.items()) if t >= recent}}
        atomic_write(self.summary_path, json.dumps(summary, separators=(",", ":")).encode(), durable=True)
        self._new_generation()
        self._pos = ("", 0, -1)
        self.usage = {}
        self.requests = {}
