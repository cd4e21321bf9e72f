"""The view's open: reading and parsing notes (a cold open), and reading them
against the index snapshot (a warm open).

Cold: each note is read and parsed (``read_parse``), in this process or, for
a large root without a valid snapshot (a fresh clone, a new version), in a
pool of forked processes, so that parsing and tokenizing use every core. The
view applies the outcomes in the order of its walk, so a pooled open ends
with the same view, index and problems as a serial one. Only parsing and
tokenizing move to the workers: every change to the view (and the index)
stays in the opening process.

The pool is used only where forking is safe inside a library: the ``fork``
start method exists and is not macOS's (its system libraries do not survive
a fork), and no other thread runs in this process (a watcher of another root,
the host application's threads: a fork copies the locks they may hold, not
the threads that would release them). Anywhere else — Windows, macOS, a
threaded host, a daemonic process, a failed fork — the open is serial.
``spawn`` is never used: a fresh interpreter per worker costs more than the
parsing it would take over at the sizes that matter, and it cannot inherit
the tokenizer's added words.

Warm (``load_files``): a note's index slot is kept only for a file whose bytes
hash to the version the snapshot recorded, at the path it recorded, under the
id the slot holds; anything else is parsed and indexed again
(``View.load_file``), so the snapshot can never hide an edit. Every file is
stat'ed; one whose settled stat is the one the snapshot recorded is not read
at all (``vault.settled``: git's answer to the racily clean file).
"""

from __future__ import annotations

import datetime as _dt
import logging
import os
import struct
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Generator, Iterator, Mapping, NamedTuple, Protocol, Sequence

from ..disk.files import read_nofollow
from ..disk.vault import settled, stamp, stat_note
from ..errors import ParseError
from ..model import entry as E
from ..model.problem import Problem
from ..model.shape import MAX_META_SIZE
from ..progress import Ticker
from ..search.index import Batch, DocTerms, Index, Pending
from .bodies import Shelf
from .columns import Docs
from .compact import Encoded, Pool, for_snapshot, thaw
from .held import Held, offset

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

log = logging.getLogger("sediment")

# below this many notes to parse, a pool costs more (forking, moving the
# results back) than it saves
POOL_MIN_FILES = 1500
# notes per task at most: large enough that the per-task cost is small, and
# that the opening process merges few postings lists per term (one per chunk)
CHUNK = 1000
AHEAD = 3  # chunks in flight per worker
MAX_WORKERS = 8
CHUNKS_PER_WORKER = 4  # at least, even for few notes: a slow chunk delays the others less
ORPHAN_POLL = 0.2  # seconds between a worker's looks at whether the opening process lives
# a cold open folds the index's delta into its compact base past this many
# terms: a safety valve for very large roots (a fold costs ~10 µs a term, so
# it is not worth it below a few hundred thousand memories' worth of terms)
FOLD_TERMS = 2_000_000

Terms = Callable[[E.Entry], DocTerms]  # what a note is indexed with (``search.query.doc_terms``)


# what a read and parse of one file came to (a worker sends it back pickled)
class Gone(NamedTuple):
    """Removed before it was read."""


class Unreadable(NamedTuple):
    """An OSError while reading."""
    reason: str


class Bad(NamedTuple):
    """Read, but not a valid memory."""
    reason: str
    line: int | None


class Read(NamedTuple):
    """A note. ``terms`` when asked for (from a worker: ``Pending``, its
    postings made there)."""
    parsed: E.Parsed
    off: int | None
    terms: DocTerms | Pending | None


Outcome = Gone | Unreadable | Bad | Read


def read_parse(root: Path, rel: str, tz: _dt.tzinfo, max_meta_size: int, *, data: bytes | None = None,
               terms: Terms | None = None) -> Outcome:
    """Read (unless ``data`` is given) and parse one note; with ``terms``,
    its index terms too."""
    if data is None:
        try:
            data = read_nofollow(root / rel)
        except FileNotFoundError:
            return Gone()
        except OSError as exc:
            return Unreadable(f"cannot read: {exc}")
    try:
        parsed = E.parse_note(data, rel, tz=tz, max_meta_size=max_meta_size)
    except ParseError as exc:
        reason = exc.message.split(": ", 1)[-1] if exc.message.startswith(rel) else exc.message
        line = exc.details.get("line")
        return Bad(reason, line if isinstance(line, int) else None)
    except Exception as exc:  # noqa: BLE001 - one file must never stop an open or the watcher
        log.warning("sediment: %s could not be read: %r", rel, exc)
        return Bad(f"could not be read: {type(exc).__name__}: {exc}"[:300], None)
    found: DocTerms | None = None
    if terms is not None:
        try:
            found = terms(parsed.entry)
        except Exception:  # noqa: BLE001 - the opening process tokenizes it again, and reports
            found = None
    return Read(parsed, offset(data, parsed.entry.body), found)


def pool_size(files: int, setting: int) -> int:
    """How many worker processes a cold open of ``files`` notes may use here
    (0 or 1: none). ``setting`` is the policy's ``open_processes``: 0 = one
    per core for a root of ``POOL_MIN_FILES`` or more; a number above 1, that
    many for any root."""
    if setting == 1 or files == 0 or (setting == 0 and files < POOL_MIN_FILES):
        return 0
    if sys.platform in ("darwin", "win32"):
        return 0
    import multiprocessing as mp
    if "fork" not in mp.get_all_start_methods() or mp.current_process().daemon:
        return 0
    if threading.active_count() > 1:  # see the module docstring
        return 0
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    n = setting if setting > 1 else min(cores, MAX_WORKERS)
    return n if n > 1 else 0


class _Job(NamedTuple):
    """What every worker does, the same for each: inherited by the fork, never pickled."""
    root: Path
    tz: _dt.tzinfo
    max_meta_size: int
    terms: Terms

    def read(self, rel: str) -> Outcome:
        return read_parse(self.root, rel, self.tz, self.max_meta_size, terms=self.terms)


# the job a forked worker inherits (set just before the fork)
_JOB: _Job | None = None


def _orphan_watch(parent: int) -> None:
    """In a worker: end with the opening process. A killed parent's workers
    would otherwise wait on their task queue for ever."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(ORPHAN_POLL)
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def _work(rels: Sequence[str], first: int) -> list[Outcome]:
    """A worker's chunk: read, parsed, tokenized, and its postings made (one
    batch: the opening process merges the chunks' postings per term, which
    costs it far less than a put per note and a fold after)."""
    assert _JOB is not None
    out = [_JOB.read(rel) for rel in rels]
    batch = Batch([o.terms if isinstance(o, Read) and isinstance(o.terms, DocTerms) else None for o in out],
                  first)
    return [o._replace(terms=Pending(batch, i)) if isinstance(o, Read) and o.terms is not None else o
            for i, o in enumerate(out)]


def pooled(root: Path, rels: Sequence[str], *, tz: _dt.tzinfo, max_meta_size: int, terms: Terms,
           workers: int, load: Callable[[], object], first: int = 0
           ) -> Generator[Outcome, None, None] | None:
    """The outcomes of ``read_parse`` for ``rels`` (with their ``terms``), in
    order, computed by ``workers`` forked processes while the caller consumes
    them; None when no pool could be started (the caller reads serially). A
    worker that dies (killed, out of memory) costs time only: what it had not
    done is read here."""
    global _JOB
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor  # (here: a warm open never forks)
    # the segmenter's whole dictionary is loaded before the fork, so the
    # workers share its pages instead of each loading their own
    load()
    size = max(1, min(CHUNK, len(rels) // (CHUNKS_PER_WORKER * workers)))
    chunks = [(first + i, rels[i:i + size]) for i in range(0, len(rels), size)]
    job = _JOB = _Job(root, tz, max_meta_size, terms)
    try:
        pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("fork"), initializer=_orphan_watch,
                                   initargs=(os.getpid(),))
        ahead = deque(pool.submit(_work, c, at) for at, c in chunks[:AHEAD * workers])
    except (OSError, ValueError, RuntimeError) as exc:  # no fork here after all: serial
        log.debug("sediment: no process pool for the open: %s", exc)
        _JOB = None
        return None
    return _drain(pool, ahead, chunks, job)


def _drain(pool: ProcessPoolExecutor, ahead: deque[Future[list[Outcome]]],
           chunks: list[tuple[int, Sequence[str]]], job: _Job) -> Generator[Outcome, None, None]:
    global _JOB
    queued = len(ahead)
    try:
        for _, chunk in chunks:
            fut = ahead.popleft()
            if queued < len(chunks):
                # a bounded number of chunks in flight: parsed notes waiting to
                # be indexed would otherwise pile up in this process's memory
                ahead.append(pool.submit(_work, chunks[queued][1], chunks[queued][0]))
                queued += 1
            try:
                part = fut.result()
            except Exception as exc:  # noqa: BLE001 - a broken pool: this chunk is read here
                log.debug("sediment: a worker of the open failed: %r", exc)
                part = [job.read(rel) for rel in chunk]
            yield from part
    finally:
        for fut in ahead:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        _JOB = None


# ---------------------------------------------------------------------------
# against the index snapshot


class Opening(Protocol):
    """What a warm open reads of the view (``view.View``), and the ways it
    puts a note into it."""

    @property
    def root(self) -> Path: ...
    @property
    def tz(self) -> _dt.tzinfo: ...
    @property
    def max_meta_size(self) -> int: ...
    @property
    def entries(self) -> Mapping[str, E.Entry]: ...
    @property
    def index(self) -> Index: ...
    @property
    def shelf(self) -> Shelf: ...
    @property
    def pool(self) -> Pool: ...

    def load_file(self, rel: str, st: os.stat_result | None = None, data: bytes | None = None,
                  outcome: Outcome | None = None, *, since: int | None = None) -> None: ...

    def admit(self, entry: Held, st: os.stat_result, warning: str | None = None, *, since: int,
              eid: str | None = None, settled_as: int | None = None) -> None: ...


# an open rewrites the snapshot when at least this many notes (and a
# sixteenth of them) were read only because it had no settled stamp for them:
# below that, reading them costs the later opens less than a rewrite
RESTAMP = 256


def fingerprint(tokenizer: str, max_meta_size: int) -> str:
    """What a snapshot is valid for: the tokenizer's fingerprint, and the
    frontmatter limit (policy ``max_meta_size``) when not the default. Its
    notes were read under that limit: once lowered, a note over it has
    properties that cannot be read, and other terms."""
    return tokenizer if max_meta_size == MAX_META_SIZE else f"{tokenizer}|max_meta_size={max_meta_size}"


def read_snapshot(path: Path | None, fingerprint: str) -> tuple[Index, Docs | None]:
    """The index the snapshot at ``path`` holds, and the notes it recorded
    (``columns.Docs``); an empty index and None when there is none, or it is
    damaged or of another version (a cache: a cold open costs time only)."""
    if path is None:
        return Index(), None
    try:
        with open(path, "rb") as fh:
            index, columns = Index.restore(fh, fingerprint)
        return index, Docs(columns, len(index.key_of))
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError, IndexError, struct.error, UnicodeDecodeError) as exc:
        log.debug("ignoring index snapshot: %s", exc)  # (OSError: one this process may not read)
    return Index(), None


class Loaded(NamedTuple):
    """What ``load_files`` came to."""
    matched: set[int]  # the snapshot's slots it kept
    restamped: int  # notes read only because the snapshot had no settled stamp for them, and now have one

    def restamp(self, files: int) -> bool:
        """Whether so many notes were read only for want of a settled stamp
        that the snapshot is worth saving again for them."""
        return self.restamped >= max(RESTAMP, files // 16)


def load_files(view: Opening, files: list[str], snap: Docs | None, parsed: Iterator[Outcome] | None,
               tick: Ticker, *, fresh: Mapping[str, os.stat_result | None], since: int) -> Loaded:
    """load_all's walk over the files, by path, stat'ed after ``since``
    (``time.time_ns()``): the snapshot's slots it could keep. ``fresh``:
    the stats of those the snapshot does not record, taken before
    ``parsed`` (the workers) read them; the others are stat'ed here, one
    at a time.

    A note whose stat is the one the snapshot recorded (ctime, mtime, size,
    inode: ``vault.stamp``), recorded when it was settled (``vault.settled``)
    and settled now, is not read: its frontmatter and terms are the
    snapshot's (its frontmatter kept as the snapshot's text until it is
    read: ``compact.Encoded``), its body the body store's. Any other is
    read, and kept only if its bytes hash to the snapshot's version."""
    matched: set[int] = set()
    restamped = 0
    root = str(view.root)
    slot_of = snap.slot_of if snap is not None else {}
    key_of, entries, shelf, pool, tz = view.index.key_of, view.entries, view.shelf, view.pool, view.tz
    if snap is not None:
        pool.adopt(snap.shapes)  # (the layouts its notes' frontmatter is kept by: Pool.shaped)
    for rel in files:
        tick()
        slot = slot_of.get(rel)
        if slot is None or snap is None:
            if rel in fresh:
                st0 = fresh[rel]  # (None: not given to the workers)
                _load(view, rel, st0, outcome=next(parsed) if parsed is not None and st0 is not None else None,
                      since=since)
            continue
        st = stat_note(root, rel)
        if st is None:
            continue  # (gone since the walk, or not a regular file now: its slot dies below)
        if isinstance(st, OSError):
            _load(view, rel, None, since=since)  # (load_file tells why)
            continue
        version, meta, off, seen = snap.versions[slot], snap.take_meta(slot), snap.off(slot), snap.stamp(slot)
        now_settled = settled(st, since)
        key = key_of[slot]
        if meta and off is not None and seen is not None and now_settled and seen == stamp(st):
            # (its id is the slot's: the snapshot saved them together, of
            # these bytes, at this path; the body store holds its body)
            at = shelf.find(slot, version, st.st_size - off)
            if at is not None and key is not None and key not in entries:
                entry = Held(Encoded(meta, pool), "", rel, version, tz=tz, off=off)
                entry.keep(shelf, at)
                view.admit(entry, st, since=since, eid=key, settled_as=seen)
                matched.add(slot)
                continue
        restamped += seen is None and now_settled
        try:  # (a str: pathlib costs more than the read)
            data = read_nofollow(os.path.join(root, rel))
        except OSError:
            # gone already, unreadable, or no longer a regular file (a symlink,
            # a FIFO put in its place since the walk: never followed, never
            # waited on), which the walk would have passed over: the slot dies below
            continue
        if not meta:  # (properties with a warning, which check must see again)
            if kept(view, rel, st, data, slot=slot, version=version, since=since):
                matched.add(slot)
            continue
        restored = _restored(view, rel, data, slot=slot, version=version, meta=meta, off=off)
        if restored is None:
            _load(view, rel, st, data, since=since)
            continue
        view.admit(restored, st, since=since)
        matched.add(slot)
    return Loaded(matched, restamped)


def _restored(view: Opening, rel: str, data: bytes, *, slot: int, version: str, meta: bytes,
              off: int | None) -> Held | None:
    """The note the snapshot's slot recorded, from its frontmatter there (its
    JSON text, ``meta``) and its body from the body store or its bytes;
    None when the file is not that note any more (other bytes, or its id
    taken or not the slot's)."""
    if E.content_version(data) != version:
        return None
    try:
        kept_as_is = view.pool.unshaped(meta)
    except (ValueError, IndexError, TypeError):
        return None
    fields = thaw(kept_as_is)  # (dates the snapshot kept as tagged text)
    eid = E.id_of(fields, rel)
    key = view.index.key_of[slot]
    if eid in view.entries or key != eid:
        return None
    if fields.get("id") == key:  # (a person's note may have none, or one not taken: its id is its path's)
        fields["id"] = key  # one string, not two (the property stays as written otherwise)
    at = None
    if off is None:  # (CRLF, a BOM: its body is not a slice of its bytes, nor in the body store)
        body = body_of(data)
    else:
        at = view.shelf.find(slot, version, len(data) - off)  # (its body in the body store: bodies.py)
        body = data[off:].decode("utf-8") if at is None else ""
    # (thawed dates: JSON cannot keep them as they are)
    entry = Held(fields, body, rel, version, tz=view.tz, off=off, plain=fields is kept_as_is)
    if at is not None:
        entry.keep(view.shelf, at)
    return entry


def misnamed(rel: str) -> Problem | None:
    """The problem of a file whose name is not UTF-8 (an archive unpacked
    from another system; the walk hands its bytes on as lone surrogates):
    no id, link or snapshot can hold it, so it is left out. None for any
    other. Its path is the one the system gives (``os.fsencode`` finds the
    file); the reason shows its bytes."""
    try:
        rel.encode("utf-8")
        return None
    except UnicodeEncodeError:
        shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
        return Problem(rel, f"file name is not UTF-8 text ({shown}); rename it to have it indexed", code="name")


def body_of(data: bytes) -> str:
    """The body ``parse`` found in these bytes (they hashed to the version
    it parsed), without reading their frontmatter again."""
    text = E.normal(data.decode("utf-8"))
    parts = E.split(text)
    return text if parts is None else parts[1]  # (None: a person's note without frontmatter, all body)


def kept(view: Opening, rel: str, st: os.stat_result, data: bytes, *, slot: int, version: str,
         since: int) -> bool:
    """A note the snapshot keeps the terms of, not its frontmatter
    (``slot``, of bytes that hashed to ``version``): parsed again, and if
    these are those bytes its slot's terms are kept (same bytes, same
    terms), so an open with nothing changed does not rewrite the snapshot."""
    outcome = read_parse(view.root, rel, view.tz, view.max_meta_size, data=data)
    if (not isinstance(outcome, Read) or outcome.parsed.entry.version != version  # (the parse hashed the bytes)
            or outcome.parsed.entry.id in view.entries or view.index.key_of[slot] != outcome.parsed.entry.id):
        _load(view, rel, st, data, outcome, since=since)
        return False
    parsed, off = outcome.parsed, outcome.off
    entry = Held.of(parsed.entry, off=off, plain=parsed.plain)
    if off is not None:
        at = view.shelf.find(slot, entry.version, len(data) - off)
        if at is not None:
            entry.keep(view.shelf, at)
    view.admit(entry, st, parsed.warning, since=since)
    return True


def _load(view: Opening, rel: str, st: os.stat_result | None, data: bytes | None = None,
          outcome: Outcome | None = None, *, since: int) -> None:
    """``view.load_file``, the index's delta folded first when it is due
    (checked here, where the delta can grow, and nowhere else)."""
    if view.index.delta_terms > FOLD_TERMS:
        view.index.fold()
    view.load_file(rel, st, data, outcome, since=since)


def snapshot_meta(e: Held, warned: bool, pool: Pool) -> bytes:
    """What the index snapshot keeps of a note's frontmatter, as JSON by the
    layouts of ``pool`` (``Pool.shaped``): empty (parse it again on open)
    when JSON cannot keep it, or when reading it found a problem ``check``
    must see again (``warned``). Frontmatter still the snapshot's own text
    is written back as it is."""
    if warned:
        return b""
    meta = e.meta
    if isinstance(meta, Encoded) and (raw := meta.raw) is not None:
        return raw
    data = for_snapshot(meta, e.plain)
    if data is None:
        return b""
    try:
        return pool.shaped(data)
    except (ValueError, TypeError):  # (text UTF-8 cannot hold: a lone surrogate)
        return b""
