"""Term vector ids left in the index snapshot's file (``Stored``), read a
slice at a time, rather than held in memory. Plain data: stdlib only."""

from __future__ import annotations

import os
import weakref
from array import array
from typing import Iterator


class Stored:
    """An array of 4-byte ids left in a file (a snapshot's term vectors),
    read a slice at a time: the feedback lane reads a few documents' vectors
    a search, and at 100k memories the whole array is 37 MB a process need
    not hold (in the page cache, it is shared by every process reading the
    root, and the kernel may drop it). ``fd`` is the file's, kept open (an
    atomic save of a new snapshot leaves this one's bytes in place) and
    closed when the array goes. A short read (the file cut in place) gives
    fewer ids, and every id is checked against the postings where it is
    used: a damaged file makes feedback miss terms, never raise."""

    __slots__ = ("_fd", "_at", "_n", "__weakref__")
    typecode = "I"
    itemsize = 4
    _CHUNK = 1 << 16  # ids a pass over all of them reads at once

    def __init__(self, fd: int, at: int, n: int) -> None:
        self._fd, self._at, self._n = fd, at, n
        weakref.finalize(self, os.close, fd)

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, s: slice) -> array[int]:
        start, stop, _ = s.indices(self._n)
        out = array("I")
        if stop > start:
            try:
                raw = os.pread(self._fd, 4 * (stop - start), self._at + 4 * start)
            except OSError:
                return out
            out.frombytes(raw[:len(raw) - len(raw) % 4])
        return out

    def __iter__(self) -> Iterator[int]:
        for i in range(0, self._n, self._CHUNK):
            yield from self[i:i + self._CHUNK]

    def tobytes(self) -> bytes:
        return b"".join(self[i:i + self._CHUNK].tobytes() for i in range(0, self._n, self._CHUNK))
