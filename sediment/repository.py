"""``Repository``: the one front door. Open → recover → load → index; the verbs.

Files are the truth. The repository holds a view of them in memory (entries by
id, by path and by name, and the search index) and keeps it current:

* its own writes update the view directly;
* other processes' writes arrive through the journal (``_sync``: one ``stat``
  per call, and a read of the new journal lines when the file grew);
* edits a person makes behind the library's back arrive through ``refresh()``
  (a stat scan) or ``watch()``.

Writers take the lock; readers never do. Reading never writes a memory file.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import logging
import os
import re
import stat
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

from . import entry as E
from . import policy as P
from .entry import Entry
from .errors import (Conflict, InvalidInput, LockTimeout, NotFound, ParseError, PolicyError, StorageError,
                     TooLarge, UnsafePath)
from .files import WriterLock, append_line, atomic_write, fsync_dir, move_new, resolve_inside
from .index import TAG_WEIGHT, TITLE_WEIGHT, DocTerms, Index
from .journal import Journal
from .lifecycle import strength
from . import tokenize as T
from .health import HealthVerbs, Problem, _read_nofollow
from .lifecycle_verbs import LifecycleVerbs
from .usage import UsageLog

log = logging.getLogger("sediment")

SYSTEM = "_system"
GITIGNORE = """\
# sediment: derived and machine-local files. Notes and policy.yaml are versioned.
_system/lock
_system/journal.log
_system/cache/
_system/usage/
_system/reports/
.*.tmp
.obsidian/workspace*.json
"""
_RESERVED_FIELDS = {"id", "created", "updated", "status", "path", "layer", "room", "name", "version",
                    "body", "superseded_by", "supersedes"}


def _viewing(fn):
    """Run a reader under the view lock, so that a watcher thread applying a
    person's edits never shows it a half-updated index."""
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        with self._view_lock:
            return fn(self, *args, **kwargs)
    return wrapper


@dataclass
class SearchHit:
    entry: Entry
    score: float
    terms: tuple[str, ...]
    snippet: str
    lanes: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.entry.id, "title": self.entry.title, "path": self.entry.path,
                "score": round(self.score, 6), "terms": list(self.terms), "snippet": self.snippet,
                "lanes": self.lanes}


class Repository(LifecycleVerbs, HealthVerbs):
    """A memory root on disk.

    >>> import tempfile
    >>> with Repository(tempfile.mkdtemp()) as repo:
    ...     e = repo.add("移动端登录用 PKCE，不再下发 client secret", tags=["auth", "移动端"])
    ...     [h.entry.id == e.id for h in repo.search("移动")]
    [True]

    Parameters (keyword-only after ``root``): ``create`` (default True) makes the
    folders and policy file of a new root; ``policy`` overrides keys of
    ``policy.yaml`` for this process (tests shrink timeouts this way).

    Raises ``PolicyFileError`` for an invalid policy file, ``LockTimeout`` when
    another writer holds the lock during recovery for too long.
    ``watch=True`` starts a watcher at once (see ``watch``).
    """

    def __init__(self, root: str | os.PathLike[str], *, create: bool = True,
                 policy: Mapping[str, Any] | None = None, watch: bool = False) -> None:
        self.root = Path(root).absolute()
        if not self.root.exists():
            if not create:
                raise NotFound(f"no memory root at {self.root}", path=str(self.root))
            self.root.mkdir(parents=True)
        self.system = self.root / SYSTEM
        if create:
            self._init_layout()
        self.policy = P.load(self.system / "policy.yaml", policy)
        self._lock = WriterLock.for_path(self.system / "lock")
        self._journal = Journal(self.system / "journal.log")
        self._snapshot_path = self.system / "cache" / "index.bin"
        self._tokenizer = T.shared(self.system / "cache")
        self._usage = UsageLog(self.system / "usage", self.policy["lock_timeout_seconds"])
        self._closed = False
        self._watcher = None
        self._view_lock = threading.RLock()
        self._view_ready = False
        self._usage_now: tuple[dict, float] | None = None  # usage and time for tie-breaking, per search
        self._open_ops: dict[Any, dict[str, Any]] = {}  # journal begins seen without their done
        self._reset_view()
        self.recover()
        self._load_all()
        self._view_ready = True
        if watch:
            self._start_watch()

    # ------------------------------------------------------------------ setup

    def _init_layout(self) -> None:
        for d in (*E.LAYERS, SYSTEM):
            (self.root / d).mkdir(exist_ok=True)
        gi = self.root / ".gitignore"
        if not gi.exists():
            atomic_write(gi, GITIGNORE.encode())

    def _reset_view(self) -> None:
        self._entries: dict[str, Entry] = {}
        self._by_path: dict[str, str] = {}
        self._by_name: dict[str, list[str]] = {}  # name → ids (more than one only by hand)
        self._problems: dict[str, Problem] = {}
        self._stats: dict[str, tuple[int, int, int]] = {}  # path → (mtime_ns, size, inode)
        self._index = Index()
        self._index_dirty = False  # changed since the snapshot was written
        # how far we have read the journal: (offset, epoch, (size, mtime_ns) when we looked)
        self._journal_pos: tuple[int, str, tuple[int, int]] = (0, "", (-1, 0))

    def __enter__(self) -> "Repository":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop watching and save the derived cache. The repository stays readable."""
        self._stop_watch()
        if not self._closed:
            try:  # lock order as in writes: the file lock, then the view lock
                with self._lock.hold(self.policy["lock_timeout_seconds"]), self._view_lock:
                    if self._index_dirty:
                        self._save_snapshot()
            except LockTimeout:
                log.debug("index snapshot not saved: the lock was busy")
            self._closed = True

    # ------------------------------------------------------------------ watching

    @contextlib.contextmanager
    def watch(self, on_change=None) -> Iterator["Repository"]:
        """Keep the index current while files change behind the library's back
        (an editor, Obsidian, ``git pull``), until the block ends.

        ``on_change(what, path)`` is called from the watcher thread for each
        change applied; ``what`` is 'changed', 'removed', 'invalid' or 'rescan'.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> with repo.watch():
        ...     pass
        """
        self._start_watch(on_change)
        try:
            yield self
        finally:
            self._stop_watch()

    def _start_watch(self, on_change=None) -> None:
        from .watch import Watcher
        if self._watcher is None:
            self._watcher = Watcher(self, on_change).start()
            self.refresh()  # what changed before the observer was listening

    def _stop_watch(self) -> None:
        w, self._watcher = self._watcher, None
        if w is not None:
            w.stop()

    def _apply_paths(self, rels: Iterable[str]) -> list[tuple[str, str]]:
        """Re-read these paths as they are on disk now. Removals first, so that
        a note moved by hand is never seen twice (as a duplicate id)."""
        out: list[tuple[str, str]] = []
        with self._view_lock:
            present, gone = [], []
            for rel in rels:
                try:
                    st = (self.root / rel).stat(follow_symlinks=False)
                    present.append((rel, st))
                except (FileNotFoundError, NotADirectoryError):
                    gone.append(rel)
            freed = False
            for rel in gone:
                if rel in self._stats or rel in self._problems:
                    freed = freed or rel in self._by_path
                    self._forget_path(rel)
                    out.append(("removed", rel))
            if freed:  # a copy left out as a duplicate may be the only one now
                present += [(rel, None) for rel, p in self._problems.items() if p.code == "duplicate_id"
                            and rel not in {r for r, _ in present}]
            for rel, st in present:
                if st is not None and self._stats.get(rel) == (st.st_mtime_ns, st.st_size, st.st_ino):
                    continue  # our own write, or a touch that changed nothing
                self._load_file(rel, st)
                out.append(("invalid" if rel in self._problems else "changed", rel))
        return out

    def __repr__(self) -> str:
        return f"Repository({str(self.root)!r}, memories={len(self._entries)})"

    # ------------------------------------------------------------------ loading

    def _walk(self) -> Iterator[tuple[str, os.stat_result]]:
        """Every ``.md`` under the layer folders: (relative posix path, stat).
        Symlinks are not followed: a link pointing out of the root is not ours."""
        # a layer folder that is a symlink may point anywhere: not ours
        stack = [(self.root / layer, layer) for layer in E.LAYERS
                 if not (self.root / layer).is_symlink()]
        while stack:
            folder, rel = stack.pop()
            try:
                it = os.scandir(folder)
            except FileNotFoundError:
                continue
            with it:
                for d in it:
                    if d.name.startswith("."):
                        continue
                    r = f"{rel}/{d.name}"
                    if d.is_dir(follow_symlinks=False):
                        stack.append((Path(d.path), r))
                    elif d.name.endswith(".md") and d.is_file(follow_symlinks=False):
                        yield r, d.stat(follow_symlinks=False)

    def _load_all(self) -> None:
        """Build the view. A snapshot of the index (``_system/cache/index.bin``)
        saves parsing and tokenizing, but only for files whose bytes hash to the
        version recorded in it: every file is still read, so the snapshot can
        never hide an edit. Anything else is parsed and indexed afresh."""
        self._journal_pos = self._journal_head()
        snap: dict[str, tuple[int, list]] = {}
        try:
            self._index, docs = Index.restore(self._snapshot_path.read_bytes(), T.fingerprint())
            snap = {d[0]: (slot, d) for slot, d in enumerate(docs)}
        except FileNotFoundError:
            pass
        except (ValueError, KeyError, TypeError, IndexError, struct.error, UnicodeDecodeError) as exc:
            log.debug("ignoring index snapshot: %s", exc)
            self._index = Index()
        matched: set[int] = set()
        root = str(self.root)
        for rel, st in sorted(self._walk()):
            if self._index.delta_terms > FOLD_TERMS:
                self._index.fold()
            hit = snap.get(rel)
            if hit is None:
                self._load_file(rel, st)
                continue
            slot, (_, version, meta, off) = hit
            try:
                with open(os.path.join(root, rel), "rb") as fh:  # (pathlib costs more than the read)
                    data = fh.read()
            except OSError:
                continue  # gone already, or unreadable: the slot dies below
            if (off is None or E.content_version(data) != version or meta.get("id") in self._entries
                    or self._index.key_of[slot] != meta.get("id")):
                self._load_file(rel, st, data)
                continue
            entry = Entry(meta=meta, body=data[off:].decode("utf-8"), path=rel, version=version)
            entry._cache["off"] = off
            self._stats[rel] = (st.st_mtime_ns, st.st_size, st.st_ino)
            self._register(entry)
            matched.add(slot)
        for slot, key in enumerate(list(self._index.key_of)):
            if key is not None and slot not in matched and self._entries.get(key) is None:
                self._index.remove(key, None)  # its body is gone: compacted below
        if not self._index.exact:
            self._index.compact()
        if self._index_dirty or len(matched) != len(snap):
            self._save_snapshot()

    def _save_snapshot(self) -> None:
        docs = {}
        for eid, e in self._entries.items():
            docs[eid] = [e.path, e.version, dict(e.meta), e._cache.get("off")]
        try:
            data = self._index.snapshot(docs, T.fingerprint())
            self._snapshot_path.parent.mkdir(parents=True, exist_ok=True)
            # under the writer lock, so that recovery may sweep any temp file it finds
            with self._lock.hold(self.policy["lock_timeout_seconds"]):
                atomic_write(self._snapshot_path, data, durable=False)  # a cache: losing it costs time only
            self._index_dirty = False
        except (OSError, LockTimeout) as exc:
            log.debug("could not write the index snapshot: %s", exc)

    def _journal_head(self) -> tuple[int, str, tuple[int, int]]:
        """Our position at the end of the journal (the caller holds the lock or
        has just read everything)."""
        offset, epoch, seen = self._journal.head()
        return offset, epoch, seen

    def _load_file(self, rel: str, st: os.stat_result | None = None, data: bytes | None = None) -> None:
        """(Re)read one file into the view, or drop it from the view if gone/bad."""
        self._forget_path(rel)
        path = self.root / rel
        try:
            if st is None:
                st = path.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                self._problems[rel] = Problem(rel, "not a regular file (a symlink?); not followed",
                                              code="not_a_file")
                return
            if data is None:
                data = _read_nofollow(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            self._problems[rel] = Problem(rel, f"cannot read: {exc}", code="storage")
            return
        self._stats[rel] = (st.st_mtime_ns, st.st_size, st.st_ino)
        try:
            entry = E.parse(data, rel)
        except ParseError as exc:
            self._problems[rel] = Problem(rel, exc.message.split(": ", 1)[-1] if exc.message.startswith(rel)
                                          else exc.message, line=exc.details.get("line"))
            return
        other = self._entries.get(entry.id)
        if other is not None and not (self.root / other.path).exists():
            self._forget_path(other.path)  # moved by hand; the old path's event is still on its way
            other = None
        if other is not None:
            self._problems[rel] = Problem(rel, f"id {entry.id} is also used by {other.path}; "
                                               f"this copy is left out", code="duplicate_id")
            # no stat kept: when the twin goes, this file must be read again
            self._stats.pop(rel, None)
            return
        if not data.startswith(b"\xef\xbb\xbf") and b"\r" not in data:
            entry._cache["off"] = len(data) - len(entry.body.encode("utf-8"))
        self._add_to_view(entry)

    def _relocate(self, old: Entry, fresh: Entry) -> None:
        """The view after a move that changed no indexed text: same index slot,
        new path and flags. No tokenizing: moves are metabolism's bulk work."""
        self._problems.pop(old.path, None)
        self._stats.pop(old.path, None)
        self._by_path.pop(old.path, None)
        self._entries[fresh.id] = fresh
        self._by_path[fresh.path] = fresh.id
        try:
            st = os.stat(self.root / fresh.path)
            self._stats[fresh.path] = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            pass
        self._index.set_flags(fresh.id, _flags(fresh))
        self._index_dirty = True

    def _forget_path(self, rel: str) -> None:
        """Drop whatever the view holds for this path."""
        self._problems.pop(rel, None)
        self._stats.pop(rel, None)
        eid = self._by_path.pop(rel, None)
        if eid is None:
            return
        old = self._entries.pop(eid, None)
        if old is not None:
            ids = self._by_name.get(old.name, [])
            if eid in ids:
                ids.remove(eid)
            if not ids:
                self._by_name.pop(old.name, None)
        # the terms it was indexed with, so document frequencies stay exact
        self._index.remove(eid, self._doc_terms(old) if old is not None else None)
        self._index_dirty = True

    def _register(self, entry: Entry) -> None:
        self._entries[entry.id] = entry
        self._by_path[entry.path] = entry.id
        self._by_name.setdefault(entry.name, []).append(entry.id)

    def _add_to_view(self, entry: Entry) -> None:
        self._register(entry)
        self._index.put(entry.id, self._doc_terms(entry), _flags(entry))
        self._index_dirty = True

    # ------------------------------------------------------------------ tokens

    def _fields(self, entry: Entry) -> tuple[str, str, str]:
        rest = "\n".join([entry.body, entry.room.replace("/", " "), " ".join(entry.links)])
        return entry.title, "\n".join(entry.tags), rest

    def _doc_terms(self, entry: Entry) -> DocTerms:
        title, tags, rest = self._fields(entry)
        if title and entry.body.lstrip(" #\t\n").startswith(title):
            title = ""  # a title taken from the first line would count that line four times
        tw, tb = self._tokenizer.terms(title)
        gw, gb = self._tokenizer.terms(tags)
        # a tag also matches as a whole, so '移动端' finds the tag even though
        # jieba cuts the query into '移动' + '端'
        gw = gw + [_whole(t) for t in entry.tags]
        rw, rb = self._tokenizer.terms(rest)
        return DocTerms.build([(tw, tb, TITLE_WEIGHT), (gw, gb, TAG_WEIGHT), (rw, rb, 1)])

    # ------------------------------------------------------------------ sync with other writers

    def _sync(self) -> None:
        """Apply what other processes wrote since we last looked (via the journal).
        One stat when nothing changed."""
        offset, epoch, seen = self._journal_pos
        try:
            st = self._journal.path.stat()
        except FileNotFoundError:
            return
        now_seen = (st.st_size, st.st_mtime_ns)
        if now_seen == seen:
            return
        jr = self._journal.read(offset, epoch)
        if jr.epoch != epoch:  # compacted by someone: we may have missed records
            self._journal_pos = (jr.offset, jr.epoch, now_seen)
            self._open_ops.clear()  # compaction happens only when nothing is pending
            self.refresh()
            return
        # Our own records are never read here: after each of our appends we
        # skip past it (we hold the lock, so nothing else was appended between).
        paths = set()
        for rec in jr.records:
            if rec.get("phase") == "begin":
                self._open_ops[rec.get("seq")] = rec
            elif rec.get("phase") == "done":
                self._open_ops.pop(rec.get("seq"), None)
                paths.update(p for p in rec.get("paths") or () if _note_path(p))
        self._apply_paths(sorted(paths))
        self._journal_pos = (jr.offset, jr.epoch, now_seen)

    @_viewing
    def refresh(self) -> dict[str, int]:
        """Rescan the root for changes made behind the library's back (an editor,
        git, a file manager): stat every file, re-read only what changed.
        Returns counts of added, changed and removed files."""
        seen: set[str] = set()
        added = changed = 0
        for rel, st in self._walk():
            seen.add(rel)
            old = self._stats.get(rel)
            if old == (st.st_mtime_ns, st.st_size, st.st_ino):
                continue
            if old is None:
                added += 1
            else:
                changed += 1
            self._load_file(rel, st)
        gone = [p for p in self._stats if p not in seen]
        for rel in gone:
            self._forget_path(rel)
        # a file that stopped being a duplicate (its twin was fixed or removed) comes back
        for rel, prob in list(self._problems.items()):
            if prob.code == "duplicate_id":
                self._load_file(rel)
        return {"added": added, "changed": changed, "removed": len(gone)}

    # ------------------------------------------------------------------ writing

    @contextlib.contextmanager
    def _write_lock(self) -> Iterator[None]:
        # file lock first, then the view lock; the watcher takes only the view
        # lock, so the order cannot deadlock
        with self._lock.hold(self.policy["lock_timeout_seconds"]), self._view_lock:
            if self._view_ready:
                self._sync()
                if self._open_ops:  # begun by a writer that died before its done
                    self._finish_ops(list(self._open_ops.values()))
                    self._journal_pos = self._journal_head()
            yield

    def _publish(self, rel: str, entry: Entry, *, exclusive: bool = False) -> Entry:
        text = E.render(entry).encode("utf-8")
        target = resolve_inside(self.root, rel)
        try:
            atomic_write(target, text, exclusive=exclusive)
        except FileExistsError:
            raise
        except OSError as exc:
            raise StorageError(f"cannot write {rel}: {exc}", path=rel) from exc
        body = entry.body if not entry.body or entry.body.endswith("\n") else entry.body + "\n"
        fresh = Entry(meta=entry.meta, body=body, path=rel, version=E.content_version(text))
        fresh._cache["off"] = len(text) - len(body.encode("utf-8"))
        return fresh

    def _note_done(self, *paths: str, seq: str | None = None, op: str = "write") -> None:
        rec = {"phase": "done", "op": op, "pid": os.getpid(), "paths": list(paths)}
        if seq is not None:
            rec["seq"] = seq
        self._journal._append(rec)
        if self._journal.maybe_compact():
            log.debug("journal compacted")
        # skip past our own record, so _sync does not re-read our files
        self._journal_pos = self._journal_head()

    def _check_body(self, body: str) -> None:
        if not isinstance(body, str):
            raise InvalidInput("text must be a string")
        if "\x00" in body:
            raise InvalidInput("text contains a NUL byte")
        n = len(body.encode("utf-8"))
        if n > self.policy["max_body_bytes"]:
            raise TooLarge(f"body is {n} bytes; policy max_body_bytes is {self.policy['max_body_bytes']}",
                           size=n)

    def _unique_name(self, base: str, eid: str) -> str:
        # Every name carries four characters of its (random) id: two machines
        # that write a note with the same title must not create the same file,
        # or their git histories would conflict on merge.
        name = f"{base}-{eid[-4:].lower()}"
        if name in self._by_name or self._name_on_disk(name):
            name = f"{base}-{eid[-10:].lower()}"
        return name

    def _name_on_disk(self, name: str) -> bool:
        # the view may miss a file another process wrote without journaling (a person);
        # a cheap check of the usual places
        return any((self.root / layer / f"{name}.md").exists() for layer in E.LAYERS)

    def add(self, text: str, *, title: str | None = None, room: str | None = None,
            tags: Iterable[str] = (), kind: str | None = None, value: float | None = None,
            source: str | None = None, links: Iterable[str] = (), layer: str = "shallow",
            now: _dt.datetime | None = None, **fields: Any) -> Entry:
        """Write a new memory and return it.

        ``text`` is the markdown body. ``title`` defaults to the first line of the
        text. ``kind`` is one of the policy's kinds; missing or unknown → ``inbox``,
        marked ``unclassified``. ``value`` 0–1, or ``weights={'importance': 1–5, …}``.
        ``links`` are names (or ``[[name]]``) of other memories. Structured
        reasoning goes in ``evidence``, ``hesitation``, ``conclusion``; narrative in
        ``context``, ``gesture``, ``direction`` (strings or lists): they are written
        as markdown sections. Other keyword fields (``event``, ``source_links``, …)
        are stored in the frontmatter as given. ``now`` sets the creation time
        (timezone-aware; for importing older memories).

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("Use PKCE on mobile.", title="PKCE", kind="rule", tags=["auth"],
        ...              evidence=["mobile apps cannot keep a secret"])
        >>> e.path == f"shallow/pkce-{e.id[-4:].lower()}.md", e.kind, e.sections["evidence"]
        (True, 'rule', '- mobile apps cannot keep a secret')

        Raises ``InvalidInput``/``UnsafePath`` for bad arguments, ``TooLarge`` over
        the body limit, ``PolicyError`` beyond the core cap; nothing is written then.
        """
        self._check_body(text)
        layer = E.check_layer(layer)
        room = E.check_room(room)
        sections = {k: fields.pop(k) for k in list(fields) if k in E.SECTIONS}
        extra = self._check_fields(fields)
        tags = self._check_tags(tags)
        if title is None:
            first = next((ln.strip(" #\t") for ln in text.splitlines() if ln.strip()), "")
            title = first[:80] or "note"
        if not isinstance(title, str) or "\x00" in title or "\n" in title:
            raise InvalidInput("title must be one line of text")
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or not 0 <= value <= 1):
            raise InvalidInput(f"value must be a number from 0 to 1, not {value!r}")
        if kind is None or kind not in self.policy["kinds"]:
            if kind is not None and not isinstance(kind, str):
                raise InvalidInput("kind must be a string")
            extra["unclassified"] = True if kind is None else str(kind)
            kind = "inbox"
        if "weights" in extra:
            try:
                E.validate_meta({"id": "x", "created": E.now_iso(), "weights": extra["weights"]})
            except ParseError as exc:
                raise InvalidInput(exc.message.split(": ", 1)[-1]) from None
        links = [self._link_target(self._check_link(x)) for x in links]
        body = E.compose_body(text, sections)
        self._check_body(body)
        created = E.now_iso(now)
        event = extra.get("event")
        with self._write_lock():
            siblings = [e for e in self._entries.values() if e.event == event] if event is not None else []
            for e in siblings:  # a retry of the same payload creates nothing new
                if e.title == title and e.body == body and e.status != "purged":
                    return e
            if kind == "core":
                self._check_core_cap()
            if extra.get("unclassified") is True and self._unclassified_repeats(text) >= 2:
                extra["flag"] = "classify: written unclassified 3 times"
            eid = E.new_id(None if now is None else int(now.timestamp() * 1000))
            meta = E.build_meta(id=eid, title=title, created=created, kind=kind, tags=tags,
                                value=value, source=source, links=links, extra=extra)
            try:  # what we write must be what any later open reads back
                meta = E.validate_meta(meta)
            except ParseError as exc:
                raise InvalidInput(exc.message.split(": ", 1)[-1]) from None
            name = self._unique_name(E.slugify(title), eid)
            rel = E.join_path(layer, room, name)
            draft = Entry(meta=meta, body=body)
            try:
                fresh = self._publish(rel, draft, exclusive=True)
            except FileExistsError:  # someone took the name between our check and the rename
                rel = E.join_path(layer, room, f"{name}-{eid[-16:-10].lower()}")
                fresh = self._publish(rel, draft, exclusive=True)
            self._load_known(fresh)
            self._note_done(rel)
            if siblings:
                self._auto_supersede(fresh, siblings)
        return fresh

    def _unclassified_repeats(self, text: str) -> int:
        norm = " ".join(text.split())
        return sum(1 for e in self._entries.values()
                   if e.meta.get("unclassified") and e.layer != "archive" and " ".join(e.text.split()) == norm)

    def _load_known(self, entry: Entry) -> None:
        """Put an entry we just wrote into the view without reading it back."""
        self._forget_path(entry.path)
        try:
            st = (self.root / entry.path).stat()
            self._stats[entry.path] = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            pass
        self._add_to_view(entry)

    def _check_core_cap(self) -> None:
        n = sum(1 for e in self._entries.values() if e.kind == "core" and e.layer != "archive")
        if n >= self.policy["core_max"]:
            raise PolicyError(f"there are already {n} core memories (policy core_max is "
                              f"{self.policy['core_max']}); archive one or use another kind",
                              rule="core_max")

    def _check_tags(self, tags: Iterable[str]) -> list[str]:
        if isinstance(tags, str):
            tags = [tags]
        out = []
        for t in tags:
            if not isinstance(t, str) or not t.strip() or any(c in t for c in "\n\r\x00"):
                raise InvalidInput(f"tag {t!r}: tags are non-empty one-line strings")
            out.append(t.strip().lstrip("#"))
        return out

    def _check_link(self, x: Any) -> str:
        name = E.unwrap_link(x)
        if not name or any(c in name for c in "\n\x00[]"):
            raise InvalidInput(f"link {x!r} is not a memory name")
        return name

    def _link_target(self, key: str) -> str:
        """The name a link should carry: a caller may name a memory by its name,
        its id or its exact title; anything else is kept as written (a link to a
        note not written yet, as in Obsidian)."""
        e = self._entries.get(key)
        if e is None and key not in self._by_name:
            titled = [x for x in self._entries.values() if x.title == key]
            e = titled[0] if len(titled) == 1 else None
        return e.name if e is not None else key

    def _check_fields(self, fields: Mapping[str, Any]) -> dict[str, Any]:
        out = {}
        for k, v in fields.items():
            if k in _RESERVED_FIELDS:
                raise InvalidInput(f"{k} is set by the library, not by the caller")
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", k):
                raise InvalidInput(f"field name {k!r} is not a plain identifier")
            if not _plain_yaml(v):
                raise InvalidInput(f"field {k}: only strings, numbers, booleans, lists and "
                                   f"mappings of those can be stored")
            out[k] = v
        return out

    def update(self, id: str, *, expected: str | None = None, **changes: Any) -> Entry:
        """Change a memory in place (its file name and folder stay).

        ``changes`` may set ``text`` (the main text; sections are kept unless
        given), ``title``, ``tags``, ``kind``, ``value``, ``links``, ``source``,
        section names, and other frontmatter fields (``None`` removes one).
        ``expected`` is the ``version`` the caller read: if the file changed since
        (another process, or a person in an editor), ``Conflict`` is raised and
        nothing is written.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("draft", title="t")
        >>> e2 = repo.update(e.id, expected=e.version, text="final")
        >>> repo.update(e.id, expected=e.version, text="lost update")
        Traceback (most recent call last):
        ...
        sediment.errors.Conflict: ...
        """
        with self._write_lock():
            current = self._reread(self._resolve(id))
            if expected is not None and expected != current.version:
                raise Conflict(f"{current.path} changed since version {expected} was read "
                               f"(now {current.version}); read it again and retry",
                               id=current.id, expected=expected, actual=current.version)
            meta = dict(current.meta)
            main, sections = E.split_sections(current.body)
            text = changes.pop("text", None)
            if text is not None:
                self._check_body(text)
                main = text
            for k in list(changes):
                if k in E.SECTIONS:
                    sections[k] = changes.pop(k)
            if "title" in changes:
                t = changes.pop("title")
                if not isinstance(t, str) or not t.strip() or "\n" in t:
                    raise InvalidInput("title must be one line of text")
                meta["title"] = t
            if "tags" in changes:
                meta["tags"] = self._check_tags(changes.pop("tags")) or None
            if "links" in changes:
                meta["links"] = [E.wikilink(self._link_target(self._check_link(x)))
                                 for x in changes.pop("links")] or None
            if "kind" in changes:
                k = changes.pop("kind")
                if k not in self.policy["kinds"]:
                    raise InvalidInput(f"kind {k!r} is not one of {', '.join(self.policy['kinds'])}")
                if k == "core" and current.kind != "core":
                    self._check_core_cap()
                meta["kind"] = k
                meta.pop("unclassified", None)
            if "value" in changes:
                v = changes.pop("value")
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))
                                      or not 0 <= v <= 1):
                    raise InvalidInput(f"value must be a number from 0 to 1, not {v!r}")
                meta["value"] = v
            for k in ("layer", "room"):
                if k in changes:
                    raise InvalidInput(f"use move() to change {k}")
            if "source" in changes:
                meta["source"] = changes.pop("source")
            for k in changes:
                if k in _RESERVED_FIELDS:
                    raise InvalidInput(f"{k} is set by the library, not by the caller")
            meta.update(self._check_fields({k: v for k, v in changes.items() if v is not None}))
            for k, v in changes.items():
                if v is None:
                    meta.pop(k, None)
            body = E.compose_body(main, sections)
            self._check_body(body)
            meta["updated"] = E.now_iso()
            try:
                meta = E.validate_meta({k: v for k, v in meta.items() if v is not None}, path=current.path)
            except ParseError as exc:
                raise InvalidInput(exc.message.split(": ", 1)[-1]) from None
            fresh = self._publish(current.path, current.with_(meta=meta, body=body))
            self._load_known(fresh)
            self._note_done(fresh.path)
            return fresh

    def _reread(self, entry: Entry) -> Entry:
        """The entry as it is on disk now (a person may have edited it)."""
        try:
            data = _read_nofollow(self.root / entry.path)
        except FileNotFoundError:
            self._forget_path(entry.path)
            raise NotFound(f"{entry.path} was removed", id=entry.id) from None
        except OSError as exc:  # ELOOP: the note was replaced by a symlink
            self._load_file(entry.path)
            raise UnsafePath(f"{entry.path} is no longer a regular file; not followed",
                             id=entry.id) from exc
        if E.content_version(data) == entry.version:
            return entry
        try:
            fresh = E.parse(data, entry.path)
        except ParseError as exc:
            self._load_file(entry.path)
            raise Conflict(f"{entry.path} was edited and is no longer valid: {exc.message}",
                           id=entry.id, actual=E.content_version(data)) from exc
        self._load_file(entry.path)
        return fresh

    # ------------------------------------------------------------------ moves

    def _move(self, entry: Entry, layer: str, room: str, *, meta_changes: Mapping[str, Any],
              op: str) -> Entry:
        """Move (and possibly restamp) one memory; journaled. Caller holds the lock.

        Order matters: the intent is durable before any file changes; the new
        file is complete (atomic write) before the old one is removed. A crash
        in between leaves both; recovery sees the intent and removes the old one.
        """
        rel = E.join_path(layer, room, entry.name)
        meta = {**entry.meta, **meta_changes}
        meta = {k: v for k, v in meta.items() if v is not None}
        same_bytes = meta == dict(entry.meta)
        if rel == entry.path:
            if same_bytes:
                return entry
            fresh = self._publish(rel, entry.with_(meta=meta))
            self._load_known(fresh)
            self._note_done(rel)
            return fresh
        target = resolve_inside(self.root, rel)
        source = self.root / entry.path
        if target.exists():
            raise Conflict(f"cannot move {entry.path} to {rel}: a file is already there", id=entry.id)
        seq = self._journal.begin(op, id=entry.id, src=entry.path, dst=rel)
        try:
            if same_bytes:  # git sees a pure rename
                target.parent.mkdir(parents=True, exist_ok=True)
                move_new(source, target)  # never over a file that appeared meanwhile
                fsync_dir(target.parent)
                fsync_dir(source.parent)
                fresh = Entry(meta=entry.meta, body=entry.body, path=rel, version=entry.version)
                if "off" in entry._cache:
                    fresh._cache["off"] = entry._cache["off"]
            else:
                fresh = self._publish(rel, entry.with_(meta=meta), exclusive=True)
                if E.content_version(_read_nofollow(source)) != entry.version:
                    # a person saved the note while we moved it: keep their file,
                    # withdraw our copy
                    os.unlink(target)
                    fsync_dir(target.parent)
                    raise Conflict(f"{entry.path} changed while it was being moved; nothing moved",
                                   id=entry.id)
                os.unlink(source)
                fsync_dir(source.parent)
        except FileExistsError:
            self._note_done(seq=seq, op=op)
            raise Conflict(f"cannot move {entry.path} to {rel}: a file is already there",
                           id=entry.id) from None
        except Conflict:
            self._note_done(seq=seq, op=op)
            raise
        except OSError as exc:
            # leave the intent pending: recovery sorts out which copy is whole
            raise StorageError(f"cannot move {entry.path} to {rel}: {exc}", path=entry.path) from exc
        if fresh.room == entry.room and entry.id in self._index:
            self._relocate(entry, fresh)
        else:  # the room is indexed too
            self._forget_path(entry.path)
            self._load_known(fresh)
        self._note_done(entry.path, rel, seq=seq, op=op)
        return fresh


    def move(self, id: str, layer: str, *, room: str | None = None, reason: str | None = None) -> Entry:
        """Move a memory to another layer (and/or room; the room is kept unless
        given). The file name stays, so ``[[name]]`` links keep working.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", title="note", room="auth")
        >>> repo.move(e.id, "sediment").path == f"sediment/auth/{e.name}.md"
        True
        """
        layer = E.check_layer(layer)
        with self._write_lock():
            entry = self._reread(self._resolve(id))
            new_room = entry.room if room is None else E.check_room(room)
            changes: dict[str, Any] = {}
            if reason is not None:
                changes["reason"] = E.one_line(reason)
            if layer != "archive" and entry.status in ("archived", "purged"):
                changes["status"] = "active"
            if layer != entry.layer or changes:
                changes["updated"] = E.now_iso()
            return self._move(entry, layer, new_room, meta_changes=changes, op="move")

    def archive(self, id: str, *, reason: str) -> Entry:
        """Move a memory to ``archive/`` with status ``archived`` and the reason.
        Archived memories are searched only when asked (``include_archive``)."""
        if not reason or not isinstance(reason, str):
            raise InvalidInput("archive needs a reason")
        with self._write_lock():
            entry = self._reread(self._resolve(id))
            return self._move(entry, "archive", entry.room,
                              meta_changes={"status": "archived", "reason": E.one_line(reason),
                                            "updated": E.now_iso()}, op="archive")

    def purge(self, id: str, *, confirm: bool = False, reason: str = "purged") -> Entry:
        """Retire a memory for good: it moves to ``archive/`` marked ``purged`` and
        is no longer found by any search. Nothing is deleted (a person can still
        read, restore or delete the file).

        Needs ``confirm=True`` (policy ``confirm_destructive``) and counts against
        ``destructive_per_hour``; a refused or failed call changes nothing and
        uses up nothing. Raises ``PolicyError``.
        """
        if self.policy["confirm_destructive"] and not confirm:
            raise PolicyError("purge needs confirm=True (policy confirm_destructive)", rule="confirm")
        with self._write_lock():
            entry = self._reread(self._resolve(id))
            self._check_rate()
            fresh = self._move(entry, "archive", entry.room,
                               meta_changes={"status": "purged", "reason": E.one_line(reason),
                                             "updated": E.now_iso()}, op="purge")
            self._record_destructive()
            return fresh

    def _rate_path(self) -> Path:
        return self.system / "usage" / "destructive.log"

    def _rate_times(self) -> tuple[list[float], int]:
        """Times of the destructive operations in the last hour, and how many
        lines the log has. A damaged line costs that line, never the limit."""
        cutoff = time.time() - 3600
        try:
            lines = self._rate_path().read_text().split()
        except FileNotFoundError:
            return [], 0
        recent = []
        for x in lines:
            try:
                t = float(x)
            except ValueError:
                continue
            if t > cutoff:
                recent.append(t)
        return recent, len(lines)

    def _check_rate(self) -> None:
        limit = self.policy["destructive_per_hour"]
        recent = len(self._rate_times()[0])
        if recent >= limit:
            raise PolicyError(f"{recent} destructive operations in the last hour; policy "
                              f"destructive_per_hour is {limit}", rule="rate_limit")

    def _record_destructive(self) -> None:
        p = self._rate_path()
        p.parent.mkdir(parents=True, exist_ok=True)
        recent, total = self._rate_times()
        if total > 2 * len(recent) + 100:  # mostly stale: keep only the last hour (we hold the lock)
            atomic_write(p, "".join(f"{t:.3f}\n" for t in recent).encode())
        append_line(p, f"{time.time():.3f}")

    # ------------------------------------------------------------------ reading

    def _resolve(self, key: str) -> Entry:
        if not isinstance(key, str) or not key:
            raise NotFound(f"no memory {key!r}", id=key)
        e = self._entries.get(key)
        if e is None:
            ids = self._by_name.get(E.unwrap_link(key))
            e = self._entries.get(ids[0]) if ids else None
        if e is None:
            raise NotFound(f"no memory with id or name {key!r}", id=key)
        return e

    @_viewing
    def get(self, id: str) -> Entry:
        """The memory with this id (or name). Raises ``NotFound`` (a ``KeyError``)."""
        self._sync()
        return self._resolve(id)

    @_viewing
    def __contains__(self, id: object) -> bool:
        self._sync()
        return isinstance(id, str) and (id in self._entries or E.unwrap_link(id) in self._by_name)

    @_viewing
    def __len__(self) -> int:
        self._sync()
        return len(self._entries)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.list())

    @_viewing
    def list(self, *, layer: str | Iterable[str] | None = None, room: str | None = None,
             tag: str | None = None, kind: str | Iterable[str] | None = None,
             status: str | None = None) -> list[Entry]:
        """Memories that match every filter given, ordered by path."""
        self._sync()
        pred = self._filter(layer=layer, room=room, tags=[tag] if tag else None, kind=kind,
                            status=status)
        return sorted((e for e in self._entries.values() if pred(e)), key=lambda e: e.path)

    def _filter(self, *, layer=None, room=None, tags=None, kind=None, status=None,
                since=None, until=None, include_archive=True):
        layers = {layer} if isinstance(layer, str) else set(layer) if layer else None
        kinds = {kind} if isinstance(kind, str) else set(kind) if kind else None
        tagset = set(tags) if tags else None
        since_dt = E.parse_time(since, key="since") if since else None
        until_dt = E.parse_time(until, key="until") if until else None
        room = room.strip("/") if room else None

        def pred(e: Entry) -> bool:
            if layers is not None and e.layer not in layers:
                return False
            if layers is None and not include_archive and e.layer == "archive":
                return False
            if room is not None and e.room != room and not e.room.startswith(room + "/"):
                return False
            if kinds is not None and e.kind not in kinds:
                return False
            if status is not None and e.status != status:
                return False
            if tagset is not None and not tagset.issubset(e.tags):
                return False
            if since_dt or until_dt:
                try:
                    t = e.updated
                except ParseError:
                    return False
                if since_dt and t < since_dt or until_dt and t > until_dt:
                    return False
            return True
        return pred

    @_viewing
    def search(self, query: str, *, limit: int = 10, layer: str | Iterable[str] | None = None,
               room: str | None = None, tags: Iterable[str] | None = None,
               kind: str | Iterable[str] | None = None, since: Any = None, until: Any = None,
               include_archive: bool = False, record: bool = True) -> list[SearchHit]:
        """Memories that share words with ``query``, best first.

        Three rankings — words (jieba + Latin words, BM25), rare terms (the
        summed IDF of the query words a memory has) and CJK character bigrams
        (BM25) — fused by reciprocal rank. A memory with no term of the query is
        never returned; strength and recency only break ties. ``archive/`` is
        searched only with ``include_archive=True`` (or ``layer='archive'``);
        purged memories never. ``since``/``until`` bound the updated time.
        Each memory returned counts as recalled (``record=False`` to not count).
        """
        self._sync()
        if not isinstance(query, str):
            raise InvalidInput("query must be a string")
        if not isinstance(limit, int) or limit < 1:
            raise InvalidInput("limit must be a positive whole number")
        words, bigrams = self._tokenizer.terms(query)
        words += [_whole(r) for r in T.CJK_RUN.findall(query) if 2 < len(r) <= 8]
        if not words and not bigrams:
            return []
        entries = self._entries
        allowed = None
        if any(x for x in (layer, room, tags, kind, since, until)):
            tag_list = [tags] if isinstance(tags, str) else list(tags) if tags else None
            pred = self._filter(layer=layer, room=room, tags=tag_list, kind=kind,
                                since=since, until=until, include_archive=True)
            allowed = lambda eid: pred(entries[eid])  # noqa: E731
        # archive is skipped unless asked for (by flag or by naming the layer); purged always
        asked = include_archive or (layer == "archive" if isinstance(layer, str)
                                    else bool(layer) and "archive" in layer)
        exclude = PURGED | (0 if asked else IN_ARCHIVE)
        self._usage_now = None  # loaded by the first tie, if any
        hits = self._index.search(_weights(words), _weights(bigrams), exclude=exclude, allowed=allowed,
                                  tiebreak=self._tiebreak, limit=limit)
        if record and hits:
            try:
                self._usage.record([h.key for h in hits], "recall")
            except (LockTimeout, OSError) as exc:  # a lost recall must not fail a search
                log.warning("sediment: recall not recorded: %s", exc)
        return [SearchHit(entries[h.key], h.score, h.terms, _snippet(entries[h.key], h.terms), h.lanes)
                for h in hits]

    def _tiebreak(self, eid: str) -> tuple:
        """Strength now, then recency: only ever compared between equal scores."""
        e = self._entries[eid]
        if self._usage_now is None:
            self._usage_now = self._usage.load(), time.time()
        usage, now = self._usage_now
        try:
            t = e.updated.timestamp()
            st = strength(e, usage.get(eid), self.policy["kinds"], now).strength
        except ParseError:
            t, st = 0.0, e.value
        return (round(st, 9), e.value, t)  # value matters when both have decayed to ~0

    # ------------------------------------------------------------------ health

    @_viewing
    def stats(self) -> dict[str, Any]:
        """Counts by layer, kind and room; problems; index size."""
        self._sync()
        es = self._entries.values()
        return {
            "root": str(self.root),
            "memories": len(self._entries),
            "layers": {layer: sum(1 for e in es if e.layer == layer) for layer in E.LAYERS},
            "kinds": dict(sorted(Counter(e.kind for e in es).items())),
            "rooms": dict(sorted(Counter(e.room or "-" for e in es).items())),
            "problems": len(self._problems),
            "index_terms": len(self._index.words) + len(self._index.bigrams),
        }




def _note_path(p: Any) -> bool:
    """A journal path we may read: relative, inside a layer folder, no '..'
    (the journal is ours, but a damaged line must not send us elsewhere)."""
    if not isinstance(p, str) or p.startswith(("/", "\\")) or "\x00" in p:
        return False
    parts = p.split("/")
    return parts[0] in E.LAYERS and ".." not in parts and p.endswith(".md")


def _weights(terms: list[str]) -> dict[str, float]:
    """Query term weights: a repeated term counts a little more."""
    return {t: 1 + 0.5 * (n - 1) for t, n in Counter(terms).items()}


# a cold open folds the index's delta into its compact base past this many
# terms: a safety valve for very large roots (a fold costs ~10 µs a term, so
# it is not worth it below a few hundred thousand memories' worth of terms)
FOLD_TERMS = 2_000_000

# index flag bits: searches skip these groups without looking at each entry
IN_ARCHIVE = 1
PURGED = 2


def _flags(e: Entry) -> int:
    return (IN_ARCHIVE if e.layer == "archive" else 0) | (PURGED if e.status == "purged" else 0)


def _whole(s: str) -> str:
    return "#" + E.slugify(s, max_bytes=200)


def _plain_yaml(v: Any, depth: int = 0) -> bool:
    if depth > 4:
        return False
    if v is None or isinstance(v, (str, bool, int, float)):
        return not (isinstance(v, str) and "\x00" in v)
    if isinstance(v, (list, tuple)):
        return all(_plain_yaml(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain_yaml(x, depth + 1) for k, x in v.items())
    return False


def _snippet(entry: Entry, terms: Iterable[str], width: int = 80) -> str:
    text = " ".join(entry.body.split())
    pos = T.find_term(text, {t.lstrip("#") for t in terms})
    if pos < 0:
        return text[:width] + ("…" if len(text) > width else "")
    start = max(0, pos - width // 3)
    end = start + width
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")
