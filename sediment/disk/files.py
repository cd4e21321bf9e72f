"""Durable file operations and the writer lock.

Writes publish through a temp file in the same folder (so ``os.replace`` is an
atomic rename on one file system): write, flush, fsync the file, replace, fsync
the folder. After a crash a reader sees the old bytes or the new, never half.
Temp files are named ``.<name>.<random>.tmp`` so that globbing ``*.md`` and
Obsidian both ignore them, and ``recover()`` can sweep them.

The lock is one dedicated file, ``_system/lock``, never deleted: deleting a lock
file lets two writers each hold a lock on a different inode. portalocker locks
belong to an open file handle, so a process keeps one handle per root and puts
a threading lock in front of it for its own threads.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import re
import secrets
import stat
import threading
import time
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Iterator, TypeVar

from ..errors import LockTimeout, StorageError, UnsafePath

try:
    import fcntl
except ImportError:  # (Windows: portalocker's locker)
    fcntl = None  # type: ignore[assignment]

log = logging.getLogger("sediment")
T = TypeVar("T")
R = TypeVar("R")

TEMP_SUFFIX = ".tmp"
# Files the library appends to or locks are opened without following a symlink
# put in their place (where the OS has O_NOFOLLOW): a link could point anywhere.
NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _portalocker() -> Any:
    # imported where a lock is first taken, not at import: portalocker reads
    # its package metadata when imported (~20 ms), which a process that only
    # searches a root with nothing to recover never needs
    import portalocker
    return portalocker


def _try_lock(fh: IO[bytes]) -> bool:
    """Take the exclusive lock on ``fh`` without waiting: False while another
    handle holds it. Raises ``OSError`` for a handle that cannot be locked.
    On POSIX, ``fcntl.flock`` itself: what portalocker calls there (its
    default locker), without the ~20-40 ms its import costs a fresh process
    that records one search's recalls; elsewhere, portalocker."""
    if fcntl is None:
        pl = _portalocker()
        try:
            pl.lock(fh, pl.LOCK_EX | pl.LOCK_NB)
        except pl.exceptions.LockException:
            return False
        return True
    try:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
            return False
        raise
    return True


def _unlock(fh: IO[bytes]) -> None:
    if fcntl is None:
        _portalocker().unlock(fh)
    else:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def open_nofollow(path: str, flags: int) -> int:
    """An ``opener`` for ``open()`` that refuses a symlink as the last component."""
    return os.open(path, flags | NOFOLLOW, 0o666)


def symlink_in(root: Path, rel: str) -> str | None:
    """The first component of ``root / rel`` (as a path relative to ``root``)
    that is a symlink, or None. One ``lstat`` per component; a component that
    does not exist ends the walk (nothing below it can be a link)."""
    parts = Path(rel).parts
    for i in range(1, len(parts) + 1):
        sub = "/".join(parts[:i])
        try:
            if stat.S_ISLNK(os.lstat(root / sub).st_mode):
                return sub
        except (FileNotFoundError, NotADirectoryError):
            return None
    return None


def fsync_dir(path: Path) -> None:
    """Make a rename (or a new name) in ``path`` durable (``fsync_dirs``)."""
    fsync_dirs((path,))


def in_threads(fn: Callable[[T], R], items: list[T], threads: int = 8) -> list[R]:
    """``[fn(x) for x in items]``, run from up to ``threads`` threads (for
    calls that wait on the disk), in order; the first item's error is raised
    once all are done."""
    if len(items) <= 1:  # (nothing to run beside it)
        return [fn(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor  # (here: 1 MB a reader's process never loads)

    with ThreadPoolExecutor(max_workers=min(threads, len(items))) as pool:
        futures = [pool.submit(fn, x) for x in items]
    return [f.result() for f in futures]  # (all done: leaving the block waited for them)


def fsync_all(fds: list[int]) -> None:
    """fsync many files at once, from a few threads. A journaling file system
    commits requests that wait together in one commit (ext4, XFS), so a
    batch of files costs about one fsync's wait instead of one each: 200 new
    files took 0.8-0.9 s one after another and 0.02-0.05 s from 8 threads on
    the disk this was measured on. Raises the first error."""
    in_threads(os.fsync, fds)


def fsync_dirs(folders: Iterable[Path]) -> None:
    """fsync each folder (once each), together as ``fsync_all``. A rename is
    durable only once the folder entry is; not every OS allows opening a
    folder (Windows), and there the rename is journaled anyway: a folder
    that cannot be opened or fsync'd is passed over."""
    fds = []
    try:
        for folder in dict.fromkeys(folders):
            try:
                fds.append(os.open(folder, os.O_RDONLY))
            except OSError:
                continue
        try:
            fsync_all(fds)
        except OSError:
            pass
    finally:
        for fd in fds:
            os.close(fd)


def write_temp(target: Path, data: bytes, *, mode: int | None = None) -> tuple[Path, int]:
    """A temp file beside ``target`` holding ``data``, not yet fsync'd (the
    caller fsyncs it, with others: ``fsync_all``, before linking it in place
    with ``move_new``): its name and its open descriptor. ``mode``: the
    permissions it gets (a note replaced keeps the ones its person gave it)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(target)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW | getattr(os, "O_BINARY", 0), 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        if mode is not None and hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    return tmp, fd


def sweep_temps(folder: Path, skip: Path | None = None) -> int:
    """Remove the temp files of interrupted writes under ``folder`` (but not
    under ``skip``, a folder inside it swept under a lock of its own); how many."""
    n = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        if skip is not None:
            dirnames[:] = [d for d in dirnames if Path(dirpath, d) != skip]
        for f in filenames:
            if is_temp(f):
                try:
                    os.unlink(os.path.join(dirpath, f))
                    n += 1
                except FileNotFoundError:
                    pass
    return n


def has_temp(folder: Path) -> bool:
    """Whether any temp file of an interrupted write is under ``folder``."""
    return any(is_temp(f) for _, _, names in os.walk(folder) for f in names)


def temp_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.{secrets.token_hex(4)}{TEMP_SUFFIX}")


_TEMP = re.compile(r"\..+\.[0-9a-f]{8}\.tmp")


def is_temp(name: str) -> bool:
    """A temp file sediment makes (``temp_name``): ``.<name>.<8 hex>.tmp``,
    and nothing else — a sync tool's or a person's ``.x.tmp`` is theirs."""
    return _TEMP.fullmatch(name) is not None


def atomic_write(target: Path, data: bytes | list[bytes] | list[bytes | memoryview], *, durable: bool = True,
                 exclusive: bool = False) -> None:
    """Publish ``data`` (bytes, or a list of chunks written in order) at
    ``target`` atomically. With ``exclusive``, never
    replace an existing file, not even one a person created a moment ago:
    the temp file is hard-linked into place, which fails if the name is taken."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_name(target)
    try:
        with open(tmp, "xb") as fh:
            for chunk in (data if isinstance(data, list) else [data]):
                fh.write(chunk)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if exclusive:
            move_new(tmp, target)
        else:
            os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    if durable:
        fsync_dir(target.parent)


def move_new(src: Path, target: Path) -> None:
    """Move ``src`` to ``target``, failing with FileExistsError if that name is
    taken (``os.rename`` would silently replace it): hard-link, then unlink.
    Where the file system has no hard links, check-then-rename (racy only
    against writers that ignore our lock)."""
    try:
        os.link(src, target)
    except FileExistsError:
        raise
    except OSError:
        if target.exists():
            raise FileExistsError(str(target)) from None
        os.rename(src, target)
        return
    os.unlink(src)


def append_line(path: Path, line: str, *, durable: bool = True, whole: bool = False) -> None:
    """Append one line with a single write on an O_APPEND descriptor: lines from
    several processes interleave whole (they are far below the pipe-buffer size
    for which POSIX promises atomic appends on local file systems). A symlink in
    place of the file is not followed (OSError).

    ``whole`` (the journal; the caller holds the lock every writer of the file
    takes): the file must exist (FileNotFoundError), and a torn last line (a
    crash cut an append short) is cut off first, so that the new line neither
    glues itself to it nor leaves it behind as damage. Readers never read past
    the last newline, so the cut changes nothing they saw; text a person
    pasted is ended as a line of its own instead (``last_line_end``). One
    descriptor for the look and the write; it must be a regular file (OSError)."""
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    # (whole: a FIFO put in the journal's place is neither waited on nor written into the void)
    flags = os.O_RDWR | getattr(os, "O_NONBLOCK", 0) if whole else os.O_WRONLY | os.O_CREAT
    fd = os.open(path, flags | os.O_APPEND | NOFOLLOW, 0o644)
    try:
        if whole:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(errno.EINVAL, "not a regular file", str(path))
            size = st.st_size
            end, pasted = last_line_end(fd, size)
            if pasted:
                data = b"\n" + data
            elif end < size:
                os.ftruncate(fd, end)
        os.write(fd, data)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


TORN_AT_MOST = 65536  # far longer than any append: a line without its newline longer than this was pasted


def last_line_end(fd: int, size: int) -> tuple[int, bool]:
    """Where the last whole line of a log (open at ``fd``, ``size`` bytes)
    ends, and whether bytes after the last newline were pasted. A torn last
    line (an append a crash cut short) is shorter than any append: the end
    is before it, where the next append cuts it off. A tail with no newline
    in its last ``TORN_AT_MOST`` bytes is longer than any append: text a
    person pasted, a line of its own (the next append ends it), so the end
    is the file's. The journal's appends and its feed both ask here, so they
    agree. Usually one byte read: the last line is whole."""
    if not size or os.pread(fd, 1, size - 1) == b"\n":
        return size, False
    start = max(0, size - TORN_AT_MOST)
    cut = os.pread(fd, size - start, start).rfind(b"\n")
    if cut >= 0 or start == 0:
        return start + cut + 1, False  # (no line at all: 0)
    return size, True


def resolve_inside(root: Path, rel: str) -> Path:
    """``root / rel``, refusing anything that would land outside the root:
    absolute paths, '..', and symlinks (of the file or any folder) pointing out."""
    if "\x00" in rel:
        raise UnsafePath("path contains a NUL byte")
    p = Path(rel)
    if p.is_absolute() or rel.startswith(("/", "\\")) or ".." in p.parts:
        raise UnsafePath(f"{rel!r} is not a path inside the root")
    full = root / p
    # (os.path on strings: pathlib's resolve and parents cost several times more, on every write)
    real_root = os.path.realpath(root)
    real = os.path.realpath(full)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise UnsafePath(f"{rel!r} resolves outside the root (a symlink?)")
    return full


class WriterLock:
    """Cross-process + cross-thread exclusive lock on one never-deleted file.

    Re-entrant within a thread, so a verb may call another verb while holding it.
    """

    _handles: dict[str, tuple[int, "WriterLock"]] = {}  # path → (the process that made it, the handle)
    _registry_lock = threading.Lock()

    @classmethod
    def for_path(cls, path: Path) -> "WriterLock":
        key = str(path.resolve())
        with cls._registry_lock:
            got = cls._handles.get(key)
            if got is None or got[0] != os.getpid():  # a forked child needs its own handle
                got = cls._handles[key] = (os.getpid(), cls(path))
            return got[1]

    def __init__(self, path: Path) -> None:
        self.path = path
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fh: IO[bytes] | None = None

    @contextlib.contextmanager
    def hold(self, timeout: float) -> Iterator[None]:
        deadline = time.monotonic() + timeout
        if not self._thread_lock.acquire(timeout=max(timeout, 0)):
            raise LockTimeout(f"another thread held the sediment lock for over {timeout}s",
                              path=str(self.path))
        try:
            if self._depth == 0:
                self._acquire_file(deadline, timeout)
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    self._release_file()
        finally:
            self._thread_lock.release()

    def can_open(self) -> bool:
        """Whether this process may open the lock file for writing (created if
        missing), without locking it: a root on media that refuses writes
        says so here as it would when the lock is taken."""
        try:
            with open(self.path, "a+b", opener=open_nofollow):
                return True
        except OSError:
            return False

    def _acquire_file(self, deadline: float, timeout: float) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fh = open(self.path, "a+b", opener=open_nofollow)  # a link in its place: not followed
        except OSError as exc:  # a read-only root, no permission, a symlink
            raise StorageError(f"cannot open the lock file {self.path}: {exc}", path=str(self.path)) from exc
        delay = 0.001
        while True:
            try:
                if _try_lock(fh):
                    self._fh = fh
                    return
            except OSError as exc:
                fh.close()
                raise StorageError(f"cannot lock {self.path}: {exc}") from exc
            if time.monotonic() >= deadline:
                fh.close()
                raise LockTimeout(f"another process held the sediment lock for over {timeout}s "
                                  f"({self.path})", path=str(self.path))
            time.sleep(delay)
            delay = min(delay * 2, 0.005)  # short: a busy writer takes the lock again at once

    def _release_file(self) -> None:
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                _unlock(fh)
            finally:
                fh.close()  # closing drops the lock even if unlock failed


def open_regular(path: Path | str) -> int:
    """A descriptor open for reading on the regular file at ``path``, never
    following a symlink put in its place (O_NOFOLLOW where the OS has it): a
    link could point anywhere outside the root. Anything else there (a
    FIFO, a folder, a device) is an OSError, and is never read: a FIFO would
    block the reader until something wrote to it, so it is not even waited
    on to open. The caller closes the descriptor."""
    fd = os.open(path, os.O_RDONLY | NOFOLLOW | getattr(os, "O_NONBLOCK", 0))  # (a FIFO's open waits, else)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_nofollow(path: Path | str) -> bytes:
    """The bytes of the regular file at ``path`` (``open_regular``)."""
    with os.fdopen(open_regular(path), "rb") as fh:
        return fh.read()


def header_value(first_line: bytes, key: str) -> str:
    """``key`` of the JSON object on a log's first line (the journal's epoch,
    the usage log's generation), or '' for a line a person broke."""
    try:
        value = json.loads(first_line).get(key, "")
    except (ValueError, AttributeError, RecursionError):
        return ""
    return value if isinstance(value, str) else ""
