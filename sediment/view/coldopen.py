"""Reading and parsing notes for the view, in this process or, for a cold open
of a large root (no valid snapshot: a fresh clone, a new version), in a pool
of forked processes, so that parsing and tokenizing use every core.

Both paths run ``read_parse`` on each file, and the view applies the outcomes
in the order of its walk, so a pooled open ends with the same view, index and
problems as a serial one. Only parsing and tokenizing move to the workers:
every change to the view (and the index) stays in the opening process.

The pool is used only where forking is safe inside a library: the ``fork``
start method exists and is not macOS's (its system libraries do not survive
a fork), and no other thread runs in this process (a watcher of another root,
the host application's threads: a fork copies the locks they may hold, not
the threads that would release them). Anywhere else — Windows, macOS, a
threaded host, a daemonic process, a failed fork — the open is serial.

``spawn`` is never used: a fresh interpreter per worker costs more than the
parsing it would take over at the sizes that matter, and it cannot inherit
the tokenizer's added words.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, Generator, Sequence

from ..model import entry as E
from ..search import query as S
from ..search import tokenize as T
from ..errors import ParseError
from ..disk.files import read_nofollow
from ..search.index import Batch, DocTerms, Pending

log = logging.getLogger("sediment")

# below this many notes to parse, a pool costs more (forking, moving the
# results back) than it saves
POOL_MIN_FILES = 1500
# notes per task at most: large enough that the per-task cost is small, and
# that the opening process merges few postings lists per term (one per chunk)
CHUNK = 1000
AHEAD = 3  # chunks in flight per worker
MAX_WORKERS = 8

# what a read and parse of one file came to:
#   ("gone",)                                  removed before it was read
#   ("unreadable", reason)                     an OSError while reading
#   ("bad", reason, line)                      read, but not a valid memory
#   ("ok", entry, off | None, terms | None)    terms when asked for (from a worker:
#                                              Pending, its postings made there)
Outcome = tuple[Any, ...]


def read_parse(root: Path, rel: str, tz: Any, max_meta_size: int, data: bytes | None = None,
               tok: T.Tokenizer | None = None) -> Outcome:
    """Read (unless ``data`` is given) and parse one note; with ``tok``, its
    index terms too."""
    if data is None:
        try:
            data = read_nofollow(root / rel)
        except FileNotFoundError:
            return ("gone",)
        except OSError as exc:
            return ("unreadable", f"cannot read: {exc}")
    try:
        entry = E.parse(data, rel, tz=tz, max_meta_size=max_meta_size)
    except ParseError as exc:
        reason = exc.message.split(": ", 1)[-1] if exc.message.startswith(rel) else exc.message
        return ("bad", reason, exc.details.get("line"))
    except Exception as exc:  # noqa: BLE001 - one file must never stop an open or the watcher
        log.warning("sediment: %s could not be read: %r", rel, exc)
        return ("bad", f"could not be read: {type(exc).__name__}: {exc}"[:300], None)
    off = None
    if not data.startswith(b"\xef\xbb\xbf") and b"\r" not in data:
        off = len(data) - len(entry.body.encode("utf-8"))
    terms: DocTerms | None = None
    if tok is not None:
        try:
            terms = S.doc_terms(tok, entry)
        except Exception:  # noqa: BLE001 - the opening process tokenizes it again, and reports
            terms = None
    return ("ok", entry, off, terms)


def pool_size(files: int, setting: int) -> int:
    """How many worker processes a cold open of ``files`` notes may use here
    (0 or 1: none). ``setting`` is the policy's ``open_processes``: 0 = one
    per core for a root of ``POOL_MIN_FILES`` or more; a number above 1, that
    many for any root."""
    if setting == 1 or files == 0 or (setting == 0 and files < POOL_MIN_FILES):
        return 0
    if sys.platform == "darwin" or sys.platform == "win32":
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


def stamp(st: os.stat_result) -> int:
    """What the view remembers of a file's stat to tell a change: mtime, size
    and inode, exactly, in one int (a third of a tuple's memory)."""
    return (st.st_mtime_ns << 128) | (st.st_size << 64) | st.st_ino


# the job a forked worker inherits (set just before the fork, never pickled)
_JOB: tuple[Path, Any, int, T.Tokenizer] | None = None


def _orphan_watch(parent: int) -> None:
    """In a worker: end with the opening process. A killed parent's workers
    would otherwise wait on their task queue for ever."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        os._exit(1)
    threading.Thread(target=watch, daemon=True).start()


def _work(rels: Sequence[str], first: int) -> list[Outcome]:
    """A worker's chunk: read, parsed, tokenized, and its postings made (one
    batch: the opening process merges the chunks' postings per term, which
    costs it far less than a put per note and a fold after)."""
    assert _JOB is not None
    root, tz, max_meta_size, tok = _JOB
    out = [read_parse(root, rel, tz, max_meta_size, tok=tok) for rel in rels]
    batch = Batch([o[3] if o[0] == "ok" else None for o in out], first)
    return [(*o[:3], Pending(batch, i)) if o[0] == "ok" and o[3] is not None else o for i, o in enumerate(out)]


def pooled(root: Path, rels: Sequence[str], *, tz: Any, max_meta_size: int, tok: T.Tokenizer,
           workers: int, first: int = 0) -> Generator[Outcome, None, None] | None:
    """The outcomes of ``read_parse`` for ``rels``, in order, computed by
    ``workers`` forked processes while the caller consumes them; None when
    no pool could be started (the caller reads serially). A worker that dies
    (killed, out of memory) costs time only: what it had not done is read
    here."""
    global _JOB
    from concurrent.futures import ProcessPoolExecutor
    import multiprocessing as mp
    # the segmenter is loaded before the fork, so the workers share its
    # dictionary's pages instead of each loading their own
    tok.terms("索引")
    size = max(1, min(CHUNK, len(rels) // (4 * workers)))  # several chunks a worker, even when few
    chunks = [(first + i, rels[i:i + size]) for i in range(0, len(rels), size)]
    _JOB = (root, tz, max_meta_size, tok)
    try:
        pool = ProcessPoolExecutor(workers, mp_context=mp.get_context("fork"), initializer=_orphan_watch,
                                   initargs=(os.getpid(),))
        ahead = deque(pool.submit(_work, c, at) for at, c in chunks[:AHEAD * workers])
    except (OSError, ValueError, RuntimeError) as exc:  # no fork here after all: serial
        log.debug("sediment: no process pool for the open: %s", exc)
        _JOB = None
        return None
    return _drain(pool, ahead, chunks, (root, tz, max_meta_size, tok))


def _drain(pool: Any, ahead: deque[Any], chunks: list[tuple[int, Sequence[str]]], job: tuple[Any, ...]
           ) -> Generator[Outcome, None, None]:
    global _JOB
    root, tz, max_meta_size, tok = job
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
                part = [read_parse(root, rel, tz, max_meta_size, tok=tok) for rel in chunk]
            yield from part
    finally:
        for fut in ahead:
            fut.cancel()
        pool.shutdown(wait=True, cancel_futures=True)
        _JOB = None
