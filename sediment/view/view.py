"""The in-memory view of a root: every memory by id, path and name, the
problems found in files, and the search index, kept current with the disk.

Files are the truth; the view is derived and rebuilt on open. A snapshot of
the index (``_system/cache/index.bin``) saves parsing and tokenizing, but only
for files whose bytes hash to the version recorded in it. Where the cache
folder cannot be used (a symlink: no ``snapshot_path``) nothing is read or
written there; on a read-only root (``save_snapshots`` False) it is read only.

Three sources of change reach the view:

* the library's own writes (``store``) update it directly;
* other processes' writes arrive through the journal (``sync``: one ``stat``
  per call, and a read of the new journal lines when the file grew);
* edits a person makes behind the library's back arrive through ``refresh``
  (a stat scan) or the watcher (``apply_paths``).

Consistency: every reader holds ``lock`` (a re-entrant lock) for the whole of
one call — ``with view.reading():`` — and every change to the view is made
under it, so a call that iterates 10k entries while the watcher applies an
edit sees the view before the edit or after it, never half of it. The lock is
held for reads of memory only (never for disk I/O of other processes), so
holding it for a call costs a watcher batch a short wait, nothing more.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import stat
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from ..disk.files import WriterLock, atomic_write
from ..disk.journal import Feed
from ..disk.vault import FileTimes, Rules, load_rules, note_paths, stat_notes, walk as walk_notes
from ..errors import Ambiguous, LockTimeout, NotFound, ParseError
from ..model import names as N
from ..model import obsidian as O
from ..model.entry import Entry
from ..model.fields import unwrap_link
from ..model.names import LAYERS
from ..model.policy import Policy
from ..model.problem import Problem
from ..progress import Progress, Ticker
from ..search import query as S
from ..search import tokenize as T
from ..search.index import DocTerms, Index, Pending
from ..search.rank import LaneSource
from . import bodies as B
from . import load as L
from . import moving
from .columns import Doc, encode
from .compact import Named, Paths, Pool
from .held import Held
from .problems import damaged, keep_first, text_key
from .renames import Renames
from .stamps import Stamps

log = logging.getLogger("sediment")


class View:
    """Read-only for feature code: use ``reading()``, ``entries``, ``resolve``,
    ``index`` and ``problems``; only the store and the watcher change it."""

    def __init__(self, root: Path, *, tokenizer: T.Tokenizer, feed: Feed, snapshot_path: Path | None,
                 writer_lock: WriterLock, policy: Policy, save_snapshots: bool = True) -> None:
        """``policy``: the root's settings the view reads (its timezone, the
        largest frontmatter, the open's processes, the lock timeout, the
        files that are sediment's own: the map and the sources folder)."""
        self.root = root
        self.tz = policy.tz  # the root's timezone, for dates a person wrote without one
        self.progress: Progress | None = None  # long jobs report here (a cold open, metabolize)
        self.max_meta_size = policy.max_meta_size
        self.open_processes = policy.open_processes  # 0 = one per core, 1 = no pool
        self.tokenizer = tokenizer
        self.feed = feed
        self.snapshot_path = snapshot_path
        self.save_snapshots = save_snapshots and snapshot_path is not None
        self._writer_lock = writer_lock
        self._lock_timeout = policy.lock_timeout_seconds
        self.lock = threading.RLock()
        self.ready = False  # loaded: from now on writers sync before writing
        self._entries: dict[str, Held] = {}  # (see entries)
        self.changes = 0  # of entries: what a reader keeps of them all is good while this is the same
        self.by_path = Paths(self._entries)  # path → id; on first use
        self.by_name = Named(self._entries)  # name → ids (more than one only by hand); on first use
        self._names: O.Names | None = None  # what [[links]] may name (see names)
        self.rules = Rules(own=(policy.map_file, policy.sources_folder))  # what the vault's settings leave out
        self.problems: dict[str, Problem] = {}
        self.file_stats = Stamps()  # path → its stat when last read (or written)
        self.clock = FileTimes(root, self.file_stats.of)  # a person's note's times, when it has none
        self.index = Index()
        self.lanes: list[LaneSource] = []  # further lanes of a search (the semantic one), wired at open
        self.dirty = False  # changed since the snapshot was written
        self.erased_pending = False  # an erased note loaded since the body store was written (Store.writing)
        self._by_text: dict[str, set[str]] | None = None  # main text (normalised) → ids: duplicates; on first use
        self.pool = Pool()  # what the entries' frontmatter shares (see Held.settle)
        self.shelf = B.Shelf(root, snapshot_path)  # the bodies, kept on disk rather than in memory
        self.on_renamed: Callable[[list[tuple[str, str]]], None] | None = None  # (old, new id): renamed by hand
        self._renames = Renames()
        # temp files of interrupted writes in the layer folders that the open's walk met, while the open
        # owes their sweep (health.sweep_at_open takes them); None: not looked for (later walks, or swept)
        self.temps_seen: set[str] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def entries(self) -> Mapping[str, Entry]:
        """Every memory of the view by id, as the view holds it (``held.Held``:
        an ``Entry``). Read-only: only the store and the watcher change it."""
        return self._entries

    @contextlib.contextmanager
    def reading(self) -> Iterator["View"]:
        """Hold the view for one reader's call, current with other processes."""
        with self.lock:
            self.sync()
            yield self

    def resolve(self, key: Any) -> Entry:
        """The entry with this id, path or name (``[[name]]``, ``folder/name``,
        an alias accepted). A name several notes have is ``Ambiguous``."""
        if not isinstance(key, str) or not key:
            raise NotFound(f"no memory {key!r}", id=key)
        e = self._entries.get(key)
        if e is None and (key in self.by_path or key + ".md" in self.by_path):
            e = self._entries[self.by_path.get(key) or self.by_path[key + ".md"]]
        if e is None:
            ids = self.names.candidates(unwrap_link(key).split("|")[0].split("#")[0])
            if len(ids) > 1:  # a person's notes of one name in several folders
                paths = sorted((self._entries[i].path for i in ids), key=lambda p: (len(p), p))
                raise Ambiguous(f"{key!r} names {len(ids)} notes: {', '.join(paths)}; name one by its "
                                f"id or as folder/name", candidates=paths)
            e = self._entries[ids[0]] if ids else None
        if e is None:
            broken = damaged(self.root, self.problems, key)
            if broken is not None:  # it exists: say so, and why it cannot be read
                raise ParseError(f"{broken.path}{':' + str(broken.line) if broken.line else ''}: "
                                 f"{key!r} exists but cannot be read: {broken.reason}",
                                 path=broken.path, line=broken.line)
            raise NotFound(f"no memory with id or name {key!r}", id=key)
        return e

    @property
    def names(self) -> O.Names:
        """What ``[[links]]`` may name (``obsidian.Names``); built on first use, then kept current."""
        if self._names is None:
            self._names = O.Names()
            for e in self._entries.values():
                self._names.add(e.id, e.path, e.name, e.aliases, None if e.reference else e.title)
        return self._names

    def link(self, target: str) -> Entry | None:
        """The note ``[[target]]`` links to, as Obsidian resolves it (one name
        in several folders: the shortest path, then path order), or None."""
        eid = self.names.resolve(target)
        return None if eid is None else self._entries.get(eid)

    def same_text(self, text: str) -> list[Entry]:
        """Memories whose main text is ``text`` once whitespace is normalised."""
        if self._by_text is None:
            self._by_text = {}
            for e in self._entries.values():
                self._by_text.setdefault(text_key(e.text), set()).add(e.id)
        norm = " ".join(text.split())
        found = (self._entries[i] for i in self._by_text.get(text_key(text), ()))
        return sorted((e for e in found if " ".join(e.text.split()) == norm), key=lambda e: e.id)

    def knows(self, key: Any) -> bool:
        return isinstance(key, str) and (key in self._entries or unwrap_link(key) in self.by_name
                                         or key in self.by_path)

    def counts(self) -> dict[str, Any]:
        es = self._entries.values()
        return {
            "root": str(self.root),
            "memories": len(self._entries),
            "layers": {layer: sum(1 for e in es if e.layer == layer) for layer in LAYERS},
            "reference": sum(1 for e in es if e.reference),  # a person's notes, outside the layers
            "kinds": dict(sorted(Counter(e.kind for e in es).items())),
            "rooms": dict(sorted(Counter(e.room or "-" for e in es).items())),
            "problems": len(self.problems),
            "index_terms": len(self.index.words) + len(self.index.bigrams),
        }

    # ------------------------------------------------------------------ loading

    def walk(self) -> Iterator[tuple[str, os.stat_result]]:
        """Every note of the root, as ``vault.walk`` finds them: (relative posix path, stat)."""
        return walk_notes(*self._walking())

    def _walking(self) -> tuple[Path, Rules, Callable[[str, OSError | None], None], Callable[[str], None] | None]:
        self.rules = load_rules(self.root, self.rules.own)

        def unreadable(rel: str, exc: OSError | None) -> None:
            if exc is None:
                self.problems.pop(rel, None)
            else:
                self.problems[rel] = Problem(rel, f"cannot read this folder: {exc.strerror}", code="storage")
        seen = self.temps_seen  # (one in a person's folder is not ours to sweep: theirs, or their tool's)
        temp = None if seen is None else lambda rel: seen.add(rel) if N.in_layer(rel) else None
        return self.root, self.rules, unreadable, temp

    def load_all(self) -> None:
        """Build the view. Every file is still stat'ed, and read unless its
        settled stat is the snapshot's, so the snapshot can never hide an
        edit; anything not matching it is parsed and indexed afresh.
        The feed is placed before, by the open's recovery (``health``)."""
        fingerprint = L.fingerprint(self.tokenizer.fingerprint(), self.max_meta_size)
        self.index, snap = L.read_snapshot(self.snapshot_path, fingerprint)
        recorded = snap.slot_of if snap is not None else {}  # path → the snapshot's slot
        if snap is not None:
            self.shelf.open()
        since = time.time_ns()  # (before any stat of the open's: see vault.settled)
        files = sorted(note_paths(*self._walking()))  # (a recorded note is stat'ed by load_files)
        tick = Ticker(self.progress, "open", len(files))
        # the notes the snapshot cannot give (all of them on a cold open),
        # stat'ed before a pool of processes reads them when there are many
        fresh = stat_notes(self.root, [rel for rel in files if rel not in recorded])
        workers = L.pool_size(len(fresh), self.open_processes)
        parsed = L.pooled(self.root, [rel for rel, st in fresh.items() if st], tz=self.tz, workers=workers,
                          max_meta_size=self.max_meta_size, terms=functools.partial(S.doc_terms, self.tokenizer),
                          first=len(self.index.key_of), load=self.tokenizer.load) if workers else None
        try:
            loaded = L.load_files(self, files, snap, parsed, tick, fresh=fresh, since=since)
        finally:
            if parsed is not None:
                parsed.close()  # stops the pool
        self.index.settle()  # the workers' postings merged, in one pass
        matched, versions = loaded.matched, (snap.versions if snap is not None else [])
        for rel, slot in recorded.items() if len(matched) != len(recorded) else ():
            key = self.index.key_of[slot]
            if slot not in matched and key is not None and key not in self._entries:
                self._renames.left(key, rel, versions[slot])  # (gone from the snapshot's path)
        for slot, key in enumerate(list(self.index.key_of)):
            if key is not None and slot not in matched and self._entries.get(key) is None:
                self.index.remove(key, None)  # its body is gone: compacted below
        self._follow_renames()
        if not self.index.exact:
            self.index.compact()
        self.shelf.done()
        if self.dirty or len(matched) != len(recorded) or loaded.restamp(len(files)):
            self.save_snapshot(timeout=0.0)  # (a cache: saved only if the lock is free now)
        elif self.save_snapshots:  # (a snapshot without its bodies: an older version wrote it)
            self.shelf.save(self.index.key_of, self._entries, self._writer_lock, 0.0)

    def save_snapshot(self, timeout: float | None = None) -> None:  # (None: the lock timeout)
        if not self.save_snapshots or self.snapshot_path is None:
            return
        stats, entries, path = self.file_stats, self._entries, self.snapshot_path

        def columns(keys: Sequence[str]) -> list[tuple[str, bytes]]:  # (in the index's slot order)
            return encode((Doc(e.path, e.version, L.snapshot_meta(e, self._warned(e.path), self.pool), e.off,
                               stats.settled(e.path)) for e in map(entries.__getitem__, keys)), self.pool.shapes)
        try:
            data = self.index.snapshot(columns, L.fingerprint(self.tokenizer.fingerprint(), self.max_meta_size))
            self.snapshot_path.parent.mkdir(parents=True, exist_ok=True)
            # under the writer lock, so that recovery may sweep any temp file it finds
            with self._writer_lock.hold(self._lock_timeout if timeout is None else timeout):
                atomic_write(self.snapshot_path, data, durable=False)  # a cache: losing it costs time only
                self.index.reattach(lambda: open(path, "rb"))  # (vectors read from the old file: from this one)
                self.shelf.save(self.index.key_of, self._entries)  # (the bodies, out of memory: bodies.py)
            self.dirty = False
        except (OSError, LockTimeout, TypeError, ValueError, KeyError) as exc:
            # a cache: failing to write it costs the next open time, nothing else
            log.debug("could not write the index snapshot: %s", exc)

    def _warned(self, rel: str) -> bool:
        """Whether reading the note at ``rel`` found properties that cannot be read."""
        p = self.problems.get(rel)
        return p is not None and p.code == "properties"

    def load_file(self, rel: str, st: os.stat_result | None = None, data: bytes | None = None,
                  outcome: L.Outcome | None = None, *, since: int | None = None) -> None:
        """(Re)read one file into the view, or drop it from the view if gone/bad.
        ``outcome``: its ``read_parse`` done already (by a worker of the open).
        ``since``: a ``time.time_ns()`` from before ``st`` was taken (None:
        unknown, so its stamp is never settled)."""
        self.forget_path(rel)
        if (misnamed := L.misnamed(rel)) is not None:
            self.problems[rel] = misnamed
            return
        try:
            if st is None:
                # (a stat vouches only for bytes read after it: not for ``data``)
                since = time.time_ns() if data is None else None
                st = os.stat(os.path.join(self.root, rel), follow_symlinks=False)  # (a str: pathlib costs more)
        except (FileNotFoundError, NotADirectoryError):  # (gone: its folder too, or made a file)
            return
        except OSError as exc:
            self.problems[rel] = Problem(rel, f"cannot read: {exc}", code="storage")
            return
        if not stat.S_ISREG(st.st_mode):
            self.problems[rel] = Problem(rel, "not a regular file (a symlink?); not followed", code="not_a_file")
            return
        if outcome is None:
            outcome = L.read_parse(self.root, rel, self.tz, self.max_meta_size, data=data)
        if isinstance(outcome, L.Gone):
            return
        if isinstance(outcome, L.Unreadable):
            self.problems[rel] = Problem(rel, outcome.reason, code="storage")
            return
        self.file_stats.record(rel, st, since)
        if isinstance(outcome, L.Bad):
            self.problems[rel] = Problem(rel, outcome.reason, line=outcome.line)
            return
        parsed = outcome.parsed
        entry = Held.of(parsed.entry, off=outcome.off, plain=parsed.plain)
        other = self._entries.get(entry.id)
        if other is not None and not (self.root / other.path).exists():
            self.forget_path(other.path)  # moved by hand; the old path's event is still on its way
            other = None
        if other is not None:
            keep, drop = (entry, other) if keep_first(entry, other) else (other, entry)
            if keep is entry:
                self.forget_path(other.path)
            self.problems[drop.path] = Problem(drop.path, f"id {entry.id} is also used by {keep.path}; "
                                                          f"this copy is left out", code="duplicate_id")
            # no stat kept: when the twin goes, this file must be read again
            self.file_stats.drop(drop.path)
            if keep is other:
                return
        self._add(entry, outcome.terms, parsed.warning)
        self._renames.came(entry.id, rel, entry.version)

    def load_known(self, entry: Entry) -> None:
        """Put an entry we just wrote into the view without parsing it again
        (a ``Held`` tells where its body starts in the file, ``off``): its
        bytes are only read back, to check they are still ours."""
        self.forget_path(entry.path)
        # (a stat taken after our write may be of a person's save since: read back)
        if not self.file_stats.vouch(str(self.root / entry.path), entry.path, entry.version):
            self.load_file(entry.path)  # theirs is the note now
            return
        self._add(Held.of(entry))

    def relocate(self, old: Entry, moved: Entry) -> None:
        """The view after a move that changed no indexed text: same index slot,
        new path and flags. No tokenizing: moves are metabolism's bulk work."""
        fresh = Held.of(moved)
        if not self.file_stats.vouch(str(self.root / fresh.path), fresh.path, fresh.version):
            self.forget_path(old.path)  # a person saved it at its new place since: read as it is
            self.load_file(fresh.path)
            return
        self.problems.pop(old.path, None)
        self.file_stats.drop(old.path)
        self.by_path.pop(old.path, None)
        self._entries[fresh.id] = fresh
        self.changes += 1
        self.by_path[fresh.path] = fresh.id
        self.by_name.rename(old.name, fresh.name, fresh.id)  # (a pulled rename: sync._follow_moves)
        if self._names is not None:
            self._names.remove(old.id, old.name, old.aliases, None if old.reference else old.title)
            self._names.add(fresh.id, fresh.path, fresh.name, fresh.aliases, None if fresh.reference else fresh.title)
        self.index.set_flags(fresh.id, S.flags(fresh))
        self.dirty = True

    def forget_path(self, rel: str) -> None:
        """Drop whatever the view holds for this path."""
        self.problems.pop(rel, None)
        self.file_stats.drop(rel)
        eid = self.by_path.pop(rel, None)
        if eid is None:
            return
        old = self._entries.pop(eid, None)
        self.changes += 1
        if old is not None:
            self._renames.left(eid, rel, old.version)
            if self._by_text is not None:
                self._by_text.get(text_key(old.text), set()).discard(eid)
            self.by_name.discard(old.name, eid)
            if self._names is not None:
                self._names.remove(eid, old.name, old.aliases, None if old.reference else old.title)
        # the terms it was indexed with, so document frequencies stay exact
        self.index.remove(eid, S.doc_terms(self.tokenizer, old) if old is not None else None)
        self.dirty = True

    def admit(self, entry: Held, st: os.stat_result, warning: str | None = None, *, since: int,
              eid: str | None = None, settled_as: int | None = None) -> None:
        """Put a note read against the index snapshot into the view: its
        slot's terms are kept (the same bytes, the same terms), nothing is
        indexed again. ``warning``: its properties cannot be read. ``st``
        was taken after ``since`` (``settled_as``: its stamp, found settled).
        ``eid``: its id, known already (its frontmatter is not read for it)."""
        self.file_stats.record(entry.path, st, since, settled_as=settled_as)
        self._register(entry, warning, eid)

    def _register(self, entry: Held, warning: str | None = None, eid: str | None = None) -> None:
        entry.settle(self.pool, self.clock, eid)
        eid = entry.id
        if self._by_text is not None:
            self._by_text.setdefault(text_key(entry.text), set()).add(eid)
        self._entries[eid] = entry
        self.changes += 1
        self.by_path[entry.path] = eid
        self.by_name.add(entry.name, eid)
        if self._names is not None:
            self._names.add(eid, entry.path, entry.name, entry.aliases, None if entry.reference else entry.title)
        if warning:  # a person's note's properties that cannot be read: indexed by its text
            self.problems[entry.path] = Problem(entry.path, warning, severity="warning", code="properties")

    def _add(self, entry: Held, terms: DocTerms | Pending | None = None, warning: str | None = None) -> None:
        self._register(entry, warning)
        self.index.put(entry.id, terms if terms is not None else S.doc_terms(self.tokenizer, entry), S.flags(entry))
        self.dirty = True
        if self.ready and "erased" in entry.meta:  # (its old text may be in the body store: see save_bodies)
            self.erased_pending = True

    def save_bodies(self) -> None:
        """(The store, holding the writer lock, at the end of a write that
        loaded an erased note: our erase, or another machine's that sync
        pulled) rewrite the body store now if a body it could hold is in
        memory, so that the erased text leaves the disk; otherwise it waits
        for the snapshot. Never from a read or the watcher: those hold the
        view's lock only, and the writer lock is not taken under it."""
        self.erased_pending = False
        if self.save_snapshots:
            self.shelf.save(self.index.key_of, self._entries)

    # ------------------------------------------------------------------ keeping current

    def sync(self) -> None:
        """Apply what other processes wrote since we last looked (via the
        journal), a note they move meanwhile included (``moving``)."""
        moving.catch_up(self)

    def apply_paths(self, rels: Iterable[str]) -> list[tuple[str, str]]:
        """Re-read these paths as they are on disk now. Removals first, so that
        a note moved by hand is never seen twice (as a duplicate id)."""
        out: list[tuple[str, str]] = []
        with self.lock:
            since = time.time_ns()
            present: list[tuple[str, os.stat_result | None]] = []
            gone = []
            for rel in rels:
                try:
                    present.append((rel, (self.root / rel).stat(follow_symlinks=False)))
                except (FileNotFoundError, NotADirectoryError):
                    gone.append(rel)
            freed = False
            for rel in gone:
                if rel in self.file_stats or rel in self.problems:
                    freed = freed or rel in self.by_path
                    self.forget_path(rel)
                    out.append(("removed", rel))
            if freed:  # a copy left out as a duplicate may be the only one now
                named = {r for r, _ in present}
                present += [(rel, None) for rel, p in self.problems.items()
                            if p.code == "duplicate_id" and rel not in named]
            for rel, st in present:
                if st is not None and self._unchanged(rel, st, since):
                    continue  # our own write, or a touch that changed nothing
                self.load_file(rel, st, since=since if st is not None else None)
                out.append(("invalid" if rel in self.problems else "changed", rel))
            self._follow_renames()
        return out

    def refresh(self) -> dict[str, int]:
        """Rescan the root: stat every file, re-read only what changed."""
        with self.lock:
            seen: set[str] = set()
            added = changed = 0
            since = time.time_ns()
            for rel, st in self.walk():
                seen.add(rel)
                if self._unchanged(rel, st, since):
                    continue
                if rel not in self.file_stats:
                    added += 1
                else:
                    changed += 1
                self.load_file(rel, st, since=since)
            gone = [p for p in self.file_stats if p not in seen]
            for rel in gone:
                self.forget_path(rel)
            # a file that stopped being a duplicate (its twin was fixed or removed) comes back
            for rel, prob in list(self.problems.items()):
                if prob.code == "duplicate_id":
                    self.load_file(rel)
            self._follow_renames()
            return {"added": added, "changed": changed, "removed": len(gone)}

    def _unchanged(self, rel: str, st: os.stat_result, since: int) -> bool:
        eid = self.by_path.get(rel)
        held = self._entries.get(eid) if eid is not None else None
        return self.file_stats.unchanged(rel, st, since, str(self.root / rel), held.version if held else None)

    def _follow_renames(self) -> None:
        pairs = self._renames.pairs()
        if pairs and self.on_renamed is not None:
            self.on_renamed(pairs)
