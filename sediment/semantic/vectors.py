"""The semantic lane's vectors on disk: derived data, never in the notes.

One file per model under ``_system/cache/`` (``vectors-<model>.bin``), keyed by
the hash of the text a vector was computed from, so an edited memory simply
has no vector until it is embedded again, and two machines (or a clone)
compute the same keys. Vectors are stored as int8 with one float scale per
row — a quarter of float32, a 100k-memory root's vectors are ~52 MB — and
read through a memory map, so they cost page cache rather than the process's
own memory, and opening a root reads none of them.

Layout: a 64-byte header (magic, dimension), then fixed-size records
``key (16 bytes) | scale (float32) | int8[dim]``. Records are only ever
appended, under a lock of their own (two processes embedding at once write
whole records in turn, and a key already in the file is not written again:
one record per memory version); a torn last record (a crash mid-append) is
ignored and overwritten by the next append. ``compact`` rewrites the file
atomically with only the keys still in use.

What is in the file's place is the cache's, but not always what sediment
wrote: a damaged header (its magic, a dimension no model has or not the
model's) is reported (``fault``) and the file rewritten by the next append;
anything that is no regular file (a FIFO, whose open would wait for a
writer; a folder; a symlink, which may point anywhere) is neither read nor
replaced, and the vectors are kept in memory instead.

numpy is imported by the functions that need it: this module is only used
when the ``[semantic]`` extra is installed and the lane is on.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
import threading
from pathlib import Path
from typing import Any, Iterable, Sequence

from .embedding import require_numpy
from ..errors import StorageError
from ..disk.files import WriterLock, atomic_write, open_nofollow, open_regular, temp_name

MAGIC = b"SEDVEC1\n"
HEADER = 64
_MATRIX = 2  # the dimensions of an embedder's answer: (texts, vector)
MAX_DIM = 1 << 16  # more than any sentence encoder gives: a header saying more is damaged
DAMAGED = "vectors"  # the fault's code of a damaged file (rewritten by the next append)


def _header(dim: int) -> bytes:
    return (MAGIC + struct.pack("<I", dim)).ljust(HEADER, b"\0")


class VectorFile:
    """Vectors by content key; ``path=None`` keeps them in memory only (a
    read-only root, or a root whose cache is unusable). ``where`` is the
    file's path even then, and ``fault`` what ``check`` says of it: (code,
    reason), or None."""

    def __init__(self, path: Path | None, lock: WriterLock | None, lock_timeout: float) -> None:
        self.path = path
        self.where = path
        self.fault: tuple[str, str] | None = None
        self.rewrites = 0  # files written anew over rows they had (a damaged header): those rows are gone
        self._lock = lock
        self._timeout = lock_timeout
        self.dim = 0
        self._rows: dict[bytes, int] = {}
        self._keys: list[bytes] = []
        self._mem: Any = None  # (n, dim) int8, a memory map or an in-memory array
        self._scale: Any = None  # (n,) float32
        self._size = 0  # bytes of the file already read
        self._ino = 0
        self._sum: Any = None  # (dim,) float64: the sum of the rows, for the corpus mean
        self._done = 0  # the rows looked at for it
        self._summed = 0  # the rows in it (not NaN)
        # the rows of no key in use (``live``), taken back out of that sum:
        # per row known at the last ``live`` call, whether it is one; their sum; how many (not NaN)
        self._stale: Any = None
        self._stale_sum: Any = None
        self._stale_n = 0
        self._live: frozenset[bytes] | None = None  # the keys of the last call, and the rows then
        self._live_rows = 0
        self._mean: Any = None  # the last mean made of it (the same object until rows are added)
        self._centred: Any = None  # (rows, mean, x·mean, |x - mean|, mean·mean), see _centre
        # searches (any thread) and the embedding thread reload, sum the mean
        # and scan at once: a reload extends the keys in place and the mean is
        # a running sum, so two at once would add the same rows twice
        self._guard = threading.RLock()
        try:
            self.reload()
        except StorageError as exc:  # (no permission to look: the lane works, in memory)
            self._refuse("storage", f"cannot be read ({exc})")

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._rows

    def row(self, key: bytes) -> int | None:
        return self._rows.get(key)

    def key(self, row: int) -> bytes:
        return self._keys[row]

    def reload(self) -> None:
        """Map what the file holds now (records another process appended too).
        A file that only grew has its new keys read, not all of them again (a
        full embed appends a batch at a time: rereading every key at each would
        be quadratic); a replaced one (compacted by another process) is read whole."""
        if self.path is None:
            return
        with self._guard:
            self._reload()

    def _reload(self) -> None:
        assert self.path is not None
        try:
            st = os.lstat(self.path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StorageError(f"cannot read {self.path}: {exc}", path=str(self.path)) from exc
        if not stat.S_ISREG(st.st_mode):
            self._not_regular(st.st_mode)
            return
        size = st.st_size
        if (st.st_ino, size) == (self._ino, self._size):
            return
        # the keys are filled in their own containers when the file is read
        # whole, and put in place at the end: callers outside the guard (is a
        # key embedded?) never see a half-filled map, which would have the
        # embedding thread embed every memory again
        rows, keys = self._rows, self._keys
        if st.st_ino != self._ino or size < self._size:  # replaced or cut: read it whole
            rows, keys, self._mem, self._scale = {}, [], None, None
            self._sum, self._done, self._summed, self._size = None, 0, 0, 0
            self._mean = self._centred = None
            self._forget_live()  # (rows renumbered: every row counts until the next ``live``)
        self._ino = st.st_ino
        try:
            self._read_new(size, rows, keys)
        except OSError as exc:
            try:
                mode = os.lstat(self.path).st_mode
            except FileNotFoundError:  # (gone meanwhile: none to read)
                return
            except OSError:
                mode = stat.S_IFREG
            if stat.S_ISREG(mode):
                raise StorageError(f"cannot read {self.path}: {exc}", path=str(self.path)) from exc
            self._not_regular(mode)  # (put in its place since the look)
        finally:
            self._rows, self._keys = rows, keys

    def _not_regular(self, mode: int) -> None:
        what = ("a symlink" if stat.S_ISLNK(mode) else "a folder" if stat.S_ISDIR(mode)
                else "not a regular file (a FIFO, a socket, a device)")
        self._refuse("symlink" if stat.S_ISLNK(mode) else "not_a_file",
                     f"is {what}: sediment neither follows nor replaces it")

    def _refuse(self, code: str, why: str) -> None:
        """Keep the vectors in memory from now on: the file is not usable."""
        self.fault = (code, f"{why}; the semantic lane keeps its vectors in memory only (computed "
                            "again at every open) until a person puts it right or removes it")
        self.path = None

    def _damaged(self, why: str) -> None:
        self.fault = (DAMAGED, f"damaged: {why}; the semantic lane leaves it out, and its next "
                               "embedding pass writes it anew")

    def mismatch(self, dim: int) -> bool:
        """Whether vectors of ``dim`` dimensions (the model's) cannot be
        compared with the file's rows: their header says another dimension
        (then the file is damaged, and ``fault`` says so)."""
        with self._guard:
            if not len(self._keys) or dim == self.dim:
                return False
            self._damaged(f"its header says {self.dim} dimensions, the model gives {dim}")
            return True

    def _read_new(self, size: int, rows: dict[bytes, int], keys: list[bytes]) -> None:
        """The records past the ``keys`` known, into ``rows`` and ``keys``."""
        assert self.path is not None
        np = require_numpy()
        # (never a FIFO's open, which waits; the map is of the file read, not of the name again)
        with os.fdopen(open_regular(self.path), "rb") as fh:
            st = os.fstat(fh.fileno())
            if st.st_ino != self._ino:  # (replaced since the look: read whole at the next reload)
                self._ino = 0
                return
            size = st.st_size  # (the file opened: never a map past its end)
            head = fh.read(HEADER)
            if len(head) < HEADER or not head.startswith(MAGIC):
                if size:  # (an empty file is one being born)
                    self._damaged("it does not start with the header of a vector file")
                return  # the next append rewrites it
            dim = struct.unpack_from("<I", head, len(MAGIC))[0]
            if not 0 < dim <= MAX_DIM:
                self._damaged(f"its header says {dim} dimensions")
                return
            rec = 20 + dim
            n = (size - HEADER) // rec
            if n <= 0:
                self.dim, self._size = dim, size
                return
            table = np.memmap(fh, dtype=np.uint8, mode="r", offset=HEADER, shape=(n, rec))
        start = len(keys)
        new = [bytes(k) for k in table[start:, :16]]
        scale = table[start:, 16:20].copy().view("<f4").reshape(n - start)
        self._scale = scale if self._scale is None or not start else np.concatenate([self._scale[:start], scale])
        self._mem = table[:, 20:].view(np.int8)
        self.dim, self._size = dim, HEADER + n * rec
        keys.extend(new)
        for i, k in enumerate(new, start):
            rows[k] = i  # a key appended twice: the later row

    def mean(self, chunk: int = 8192) -> Any:
        """The mean of the rows in use (unit vectors, dequantized), or None
        without rows: every row but those ``live`` last said are of no key in
        use. Kept as a running sum of every row, the rows appended since the
        last call added to it, less the sum of the rows not in use (a NaN
        row, a model's fault, is left out of both)."""
        with self._guard:
            return self._mean_now(chunk)

    def live(self, keys: Iterable[bytes]) -> None:
        """Say which keys are in use (one per current memory version): the
        corpus mean is taken over their rows only. The file keeps a row for
        each version embedded until it is compacted, and a root whose notes
        are edited often would otherwise be centred on what they said before.
        Rows appended after this call count until the next one (they are of
        memories just embedded); a key appended twice counts by its later row."""
        live = frozenset(keys)
        with self._guard:
            n = len(self._keys)
            if live == self._live and n == self._live_rows:
                return  # (every embedding pass says it: mostly nothing changed)
            np = require_numpy()
            stale = np.ones(n, dtype=bool)
            stale[[r for k in live if (r := self._rows.get(k)) is not None]] = False
            was = np.zeros(n, dtype=bool)
            if self._stale is not None:
                was[:len(self._stale)] = self._stale
            gone, back = np.flatnonzero(stale & ~was), np.flatnonzero(was & ~stale)
            if len(gone) or len(back):
                if self._stale_sum is None:
                    self._stale_sum = np.zeros(self.dim, dtype=np.float64)
                for rows, sign in ((gone, 1), (back, -1)):
                    got, count = self._sum_of(rows)
                    self._stale_sum += sign * got
                    self._stale_n += sign * count
                if not self._stale_n:  # (none left: the plain running sum again, to the bit)
                    self._stale_sum = None
                self._mean = None
            self._stale, self._live, self._live_rows = stale, live, n

    def _sum_of(self, rows: Any) -> tuple[Any, int]:
        """The sum of these rows (dequantized, NaN rows left out), and how many it has."""
        np = require_numpy()
        scale = self._scale[rows]
        ok = np.isfinite(scale)
        got = self._mem[rows[ok]].astype(np.float32) * scale[ok, None]
        return got.sum(axis=0, dtype=np.float64), int(ok.sum())

    def _forget_live(self) -> None:
        self._stale = self._stale_sum = self._live = None
        self._stale_n = self._live_rows = 0

    def _mean_now(self, chunk: int) -> Any:
        np = require_numpy()
        n = len(self._keys)
        if self._sum is None or self._sum.shape != (self.dim,):
            self._sum, self._done = np.zeros(self.dim, dtype=np.float64), 0
            self._summed = 0
        for i in range(self._done, n, chunk):
            j = min(i + chunk, n)
            scale = self._scale[i:j]
            ok = np.isfinite(scale)
            rows = self._mem[i:j][ok].astype(np.float32) * scale[ok, None]
            self._sum += rows.sum(axis=0, dtype=np.float64)
            self._summed += int(ok.sum())
        if self._done != n or self._mean is None:
            total, count = self._sum, self._summed
            if self._stale_sum is not None:
                total, count = total - self._stale_sum, count - self._stale_n
            self._mean = (total / count).astype(np.float32) if count > 0 else None
        self._done = n
        return self._mean

    def add(self, keys: Sequence[bytes], vectors: Any) -> None:
        """Append vectors (float, shape (len(keys), dim)) for these keys."""
        np = require_numpy()
        vecs = np.asarray(vectors, dtype=np.float32)
        if vecs.ndim != _MATRIX or len(vecs) != len(keys):
            raise ValueError(f"an embedder returned shape {vecs.shape} for {len(keys)} texts")
        if not len(keys):
            return
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs = vecs / np.where(norms > 0, norms, 1)  # cosine: unit vectors
        scale = np.abs(vecs).max(axis=1) / 127.0
        with np.errstate(invalid="ignore"):  # (a NaN row keeps a NaN scale: its similarity is NaN, skipped)
            q = np.round(vecs / np.where(scale > 0, scale, 1)[:, None]).astype(np.int8)
        scale = scale.astype(np.float32)
        if self.path is not None:
            assert self._lock is not None
            with self._lock.hold(self._timeout):
                self.reload()
                if self.path is not None:  # (else: found unusable just now)
                    self._append_file(keys, q, scale)
                    return
        self._append_memory(keys, q, scale)

    def _new(self, keys: Sequence[bytes]) -> list[int]:
        """Which of ``keys`` (their places) are not held yet: another process
        may have embedded them since we looked (once in a batch too)."""
        seen: set[bytes] = set()
        out = []
        for i, k in enumerate(keys):
            if k not in self._rows and k not in seen:
                seen.add(k)
                out.append(i)
        return out

    def _append_file(self, keys: Sequence[bytes], q: Any, scale: Any) -> None:
        """Append under the writers' lock, the file just reloaded. A file of
        none (or a damaged one) is written whole; so is one whose header
        says another dimension than the model's (damaged: its rows cannot be
        compared with the model's vectors)."""
        assert self.path is not None
        np = require_numpy()
        whole = not self._size or self.dim != q.shape[1]
        keep = list(range(len(keys))) if whole else self._new(keys)
        if not keep:
            return
        keys, q, scale = [keys[i] for i in keep], q[keep], scale[keep]
        rec = np.empty((len(keys), 20 + q.shape[1]), dtype=np.uint8)
        rec[:, :16] = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 16)
        rec[:, 16:20] = scale.astype("<f4").view(np.uint8).reshape(len(keys), 4)
        rec[:, 20:] = q.view(np.uint8)
        try:
            if whole:
                atomic_write(self.path, [_header(q.shape[1]), rec.tobytes()], durable=False)
                self.fault = None
                self.rewrites += bool(self._keys)
            else:
                with open(self.path, "r+b", opener=open_nofollow) as fh:
                    fh.seek(self._size)  # over a torn record, if any
                    fh.write(rec.tobytes())
                    fh.truncate()
        except OSError as exc:
            raise StorageError(f"cannot write {self.path}: {exc}", path=str(self.path)) from exc
        self.reload()

    def _append_memory(self, keys: Sequence[bytes], q: Any, scale: Any) -> None:
        with self._guard:
            keep = self._new(keys)
            if keep:
                self._append_memory_now([keys[i] for i in keep], q[keep], scale[keep])

    def _append_memory_now(self, keys: Sequence[bytes], q: Any, scale: Any) -> None:
        np = require_numpy()
        start = len(self._keys)
        self._mem = q if self._mem is None else np.concatenate([self._mem, q])
        self._scale = scale if self._scale is None else np.concatenate([self._scale, scale])
        self.dim = q.shape[1]
        self._keys.extend(keys)
        for i, k in enumerate(keys, start):
            self._rows[k] = i

    def dequantized(self, rows: Any) -> Any:
        """These rows' vectors, float32 (unit vectors as embedded; a NaN row stays NaN)."""
        with self._guard:
            return self._mem[rows].astype(require_numpy().float32) * self._scale[rows, None]

    def similarities(self, query: Any, chunk: int = 8192) -> Any:
        """Cosine of a query vector with every row (float32, one per row)."""
        return self.scan(query, center=False, chunk=chunk)[0]

    def scan(self, query: Any, center: bool = True, chunk: int = 8192) -> tuple[Any, Any]:
        """``scan_keys`` without the keys."""
        raw, cen, _ = self.scan_keys(query, center, chunk)
        return raw, cen

    def scan_keys(self, query: Any, center: bool = True, chunk: int = 8192) -> tuple[Any, Any, list[bytes]]:
        """The cosine of a query vector with every row, and with ``center``
        also the cosine after the corpus mean (``mean``: of the rows in use)
        is subtracted from the query and from every row (else None). Rows are
        widened chunk by chunk, so the peak is one chunk of float32.

        Why centre: a sentence encoder gives every text of one genre (a chat
        log, a wiki) a large shared component. What is left after removing it
        is what sets a text apart, and that is what a paraphrase shares with
        its memory. Both cosines come out of one product with two columns
        (``x·q`` and ``x·mean`` of each row).

        Also the keys of the rows scanned: row ``i`` of the result is the
        key at ``i`` of that list, even after rows are appended or the file is
        compacted meanwhile (the scan holds the guard; a compaction makes a
        new list)."""
        with self._guard:
            raw, cen = self._scan(query, center, chunk)
            return raw, cen, self._keys

    def _scan(self, query: Any, center: bool, chunk: int) -> tuple[Any, Any]:
        np = require_numpy()
        n = len(self._keys)
        raw = np.empty(n, dtype=np.float32)
        mu = self._mean_now(chunk) if center else None
        if not n:
            return raw, None  # (no rows: no mean either)
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(q))
        q = q / (norm or 1.0)
        for i in range(0, n, chunk):
            raw[i:i + chunk] = (self._mem[i:i + chunk].astype(np.float32) @ q) * self._scale[i:i + chunk]
        if mu is None:
            return raw, None
        xm, xn, mm = self._centre(mu, chunk)
        qm = float(q @ mu)
        qn = max(1.0 - 2.0 * qm + mm, 1e-12) ** 0.5  # |q - mean| (q is a unit vector)
        cen = (raw - qm - xm + mm) / (qn * xn)
        return raw, cen

    def _centre(self, mu: Any, chunk: int) -> tuple[Any, Any, float]:
        """Per row ``x·mean`` and ``|x - mean|`` (with ``|x| = 1``: rows were
        unit vectors before quantization), and ``mean·mean``; kept until the
        mean changes (rows appended), so a query pays one pass, not two."""
        np = require_numpy()
        n = len(self._keys)
        got = self._centred
        if got is not None and got[0] == n and got[1] is mu:
            return got[2], got[3], got[4]
        xm = np.empty(n, dtype=np.float32)
        for i in range(0, n, chunk):
            xm[i:i + chunk] = (self._mem[i:i + chunk].astype(np.float32) @ mu) * self._scale[i:i + chunk]
        mm = float(mu @ mu)
        xn = np.sqrt(np.maximum(1.0 - 2.0 * xm + mm, 1e-12))
        self._centred = (n, mu, xm, xn, mm)
        return xm, xn, mm

    def compact(self, live: Iterable[bytes]) -> int:
        """Rewrite the file with only ``live`` keys; returns the rows dropped.

        Searches wait for the swap only, not for the rewrite: the compacted
        file is written under the writers' lock (no thread or process appends
        until it is in place) but outside the guard, so a search meanwhile
        scans the old rows, which stay as they are; it is renamed over the
        file under the guard, once the file is seen unchanged since it was read."""
        live = list(live)
        with self._guard:
            keep = sorted({self._rows[k] for k in live if k in self._rows})
            dropped = len(self._keys) - len(keep)
        if self.path is None or not dropped:
            return 0
        np = require_numpy()
        assert self._lock is not None
        with self._lock.hold(self._timeout):  # (then the guard: the order add takes them in)
            with self._guard:
                self._reload()
                if self.path is None:  # (found unusable just now: the rows are in memory)
                    return 0
                keep = sorted({self._rows[k] for k in live if k in self._rows})
                dropped, dim, n = len(self._keys) - len(keep), self.dim, len(self._keys)
                seen = self._stat()
            staged = temp_name(self.path)  # (a crash leaves a temp file, which sweep_temps removes)
            try:
                with os.fdopen(open_regular(self.path), "rb") as fh:
                    rows = np.memmap(fh, dtype=np.uint8, mode="r", offset=HEADER, shape=(n, 20 + dim))[keep]
                atomic_write(staged, [_header(dim), rows.tobytes()], durable=False)
                del rows
                with self._guard:
                    if self._stat() != seen:  # (only a writer that ignores the lock: keep its rows)
                        return 0
                    os.replace(staged, self.path)
                    self._size = self._ino = 0
                    self._reload()
            except FileNotFoundError:
                # the staged file (or its temp) gone: a sweep that did not wait
                # for this lock (an older sediment's) took it for an interrupted
                # write's. Nothing compacted; the next pass tries again.
                return 0
            except StorageError:
                raise
            except OSError as exc:
                raise StorageError(f"cannot compact {self.path}: {exc}", path=str(self.path)) from exc
            finally:
                with contextlib.suppress(OSError):
                    staged.unlink(missing_ok=True)
        return dropped

    def _stat(self) -> tuple[int, int, int]:
        assert self.path is not None
        st = os.stat(self.path)
        return st.st_ino, st.st_size, st.st_mtime_ns
