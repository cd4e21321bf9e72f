"""The bodies of the view's memories, kept in a file instead of in memory.

At 100,000 notes the bodies are about 60 MB of text that only a few readers
need at a time (a search's snippets, one memory shown, a check). The view
writes the body of every memory it holds, exactly as it was indexed, to
``_system/cache/bodies.bin`` beside the index snapshot, and from then on lets
an entry read its body back from that file (one ``pread``, a few µs).

Why that file and not the note itself: the file holds the text that was
indexed. A person may edit a note at any moment; until the watcher or a
refresh applies the edit, a reader must still see the text the index (and
every other part of the view) was built from, and the view needs that text
to take the note's terms out of the index exactly. The note's own bytes are
used only as a check's fallback: when a record fails its CRC, the note is
read (a regular file only, never through a symlink), and its text used only
if its bytes still hash to the entry's version.

The descriptor stays open for the life of the view, so a store replaced by
another process (every write is a new file renamed into place) leaves this
process reading the one it opened. A cache: a missing, old or damaged file
only means the bodies are kept in memory until the next snapshot.

Records are in the order of the index's slots, as the snapshot's documents
are, so that the open finds a note's record by its slot (and checks it by the
version of the note's bytes) without a table of every version in memory.

Format: ``MAGIC``, a little-endian u32 count, ``count`` records of (16-byte
version, u64 start, u32 length, u32 CRC-32), then the texts (UTF-8). A slot
without a body the store can hold has a record of zero length and no version.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import zlib
from pathlib import Path
from typing import Iterable, Mapping, Protocol, Sequence

from ..errors import LockTimeout
from ..model.entry import content_version
from ..disk.files import NOFOLLOW, WriterLock, atomic_write, read_nofollow

log = logging.getLogger("sediment")

MAGIC = b"sediment-bodies 1\n"
_RECORD = struct.Struct("<16sQII")
_COUNT = struct.Struct("<I")
_NONE = bytes(16)  # the version of a slot without a record

_VERSION_SIZE = 16  # characters of a note's version (``entry.content_version``)
_LENGTH = 0xFFFFFFFF  # ``at``: its low 32 bits are the record's length
_START = 0xFFFFFFFFFFFFFFFF  # … bits 64-127 where it starts
_GEN = 128  # … and from bit 128 on, the store's generation (``Shelf.stores``)

# (os.pread: POSIX; elsewhere the bodies stay in memory)
USABLE = hasattr(os, "pread")


class Kept(Protocol):
    """An entry whose body a store may keep (``held.Held``)."""

    @property
    def path(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def body(self) -> str: ...
    @property
    def off(self) -> int | None: ...
    def kept_in(self, shelf: object) -> int | None: ...
    def keep(self, shelf: Shelf, at: int) -> None: ...


def _storable(e: Kept) -> bool:
    """A body a warm open takes from the note's bytes (an ``off`` is known)."""
    return e.off is not None and len(e.version) == _VERSION_SIZE


class Shelf:
    """The stores a view has opened, and what an entry reads its body from
    (``Held.keep(shelf, at)``). ``at`` names the store, the record's
    place, length and CRC in one int, so that moving an entry to a newer
    store is one attribute write: a reader in another thread sees the old
    place or the new one, never half of each."""

    def __init__(self, root: Path, snapshot_path: Path | None) -> None:
        self.root = root
        # beside the index snapshot; None: nowhere (the cache folder cannot be used)
        self.path = snapshot_path.with_name("bodies.bin") if snapshot_path is not None and USABLE else None
        self.stores: list[Bodies] = []
        self.loading: Bodies | None = None  # the store ``find`` looks in

    def open(self) -> "Bodies | None":
        """Open the store for ``find`` (None: none there, or not usable)."""
        self.done()
        store = Bodies.open(self.path, self.root, len(self.stores)) if self.path is not None else None
        if store is not None:
            self.stores.append(store)
            self.loading = store
            self.find = store.find  # type: ignore[method-assign]  # (one call fewer for every note)
        return store

    def find(self, slot: int, version: str, length: int) -> int | None:
        """Where the store being loaded keeps the body of the note in this
        index slot, if it holds one of this version and this many bytes."""
        return self.loading.find(slot, version, length) if self.loading is not None else None

    def done(self) -> None:
        """The loading is over: let go of the records ``find`` used."""
        if self.loading is not None:
            self.loading.records = None
            self.loading = None
            del self.find  # (Shelf.find again)

    def read(self, entry: Kept, at: int) -> str:
        return self.stores[at >> _GEN].read(entry, at)

    def lacks(self, entries: Iterable[Kept]) -> bool:
        """Whether a body the store could hold is in memory (written by an
        older version, or the store was deleted, or an edit): ``keep`` is due."""
        return self.path is not None and any(e.kept_in(self) is None and _storable(e) for e in entries)

    def save(self, keys: Sequence[str | None], entries: Mapping[str, Kept], lock: WriterLock | None = None,
             timeout: float = 0.0) -> None:
        """``keep``, if a body it could hold is not there, holding the writer
        ``lock`` (so that recovery may sweep any temp file it finds) unless
        the caller holds it already (None). A cache: a store that cannot be
        written leaves the bodies in memory."""
        if not self.lacks(entries.values()):
            return
        try:
            with lock.hold(timeout) if lock is not None else contextlib.nullcontext():
                self.keep(keys, entries)
        except (OSError, LockTimeout) as exc:
            log.debug("could not write the body store: %s", exc)

    def keep(self, keys: Sequence[str | None], entries: Mapping[str, Kept]) -> None:
        """Write a new store of the entries' bodies in the order of the
        index's ``keys`` (its slots), then let each entry read its body from
        there (the text leaves memory); ``save`` calls it only when something
        ``lacks``. Raises OSError if the store cannot be written."""
        if self.path is None:
            return
        order = [entries.get(k) if k is not None else None for k in keys]
        write(self.path, order)
        if self.open() is None:
            return
        for slot, e in enumerate(order):
            if e is not None and _storable(e):
                was = e.kept_in(self)
                at = self.find(slot, e.version, len(e.body.encode("utf-8")) if was is None else was & _LENGTH)
                if at is not None:
                    e.keep(self, at)
        self.done()
        self.close_unused(entries.values())

    def close_unused(self, entries: Iterable[Kept]) -> None:
        """Close the older stores no entry reads from: each holds a deleted
        file open (its disk space, and any text erased since). An entry a
        caller kept from before reads its note instead (``_from_note``)."""
        used = {at >> _GEN for at in (e.kept_in(self) for e in entries) if at is not None}
        for store in self.stores[:-1]:
            if store.gen not in used:
                store.close()


class Bodies:
    """One store, open for reading. ``find`` (while the view loads) says
    where a slot's body is; an entry then reads it through the shelf."""

    def __init__(self, fd: int, records: bytes, root: Path, gen: int) -> None:
        self._fd = fd
        self.records: bytes | None = records  # let go once the view is loaded
        self.root = root
        self.gen = gen

    def __del__(self) -> None:
        self.close()

    def close(self) -> None:
        """Let go of the file (a read from here on reads the note instead)."""
        fd, self._fd = getattr(self, "_fd", -1), -1
        self.records = None
        if fd >= 0:
            try:
                os.close(fd)
            except OSError:
                pass

    @classmethod
    def open(cls, path: Path, root: Path, gen: int = 0) -> "Bodies | None":
        """The store at ``path``, or None (none yet, another format, unreadable)."""
        if not USABLE:
            return None
        try:
            fd = os.open(path, os.O_RDONLY | NOFOLLOW)
        except OSError:
            return None
        try:
            head = os.pread(fd, len(MAGIC) + _COUNT.size, 0)
            if len(head) < len(MAGIC) + _COUNT.size or not head.startswith(MAGIC):
                raise ValueError("not a body store of this format")
            (n,) = _COUNT.unpack_from(head, len(MAGIC))
            records = os.pread(fd, n * _RECORD.size, len(head))
            if len(records) != n * _RECORD.size:
                raise ValueError("a truncated body store")
        except (OSError, ValueError, struct.error) as exc:
            log.debug("ignoring the body store: %s", exc)
            os.close(fd)
            return None
        return cls(fd, records, root, gen)

    def find(self, slot: int, version: str, length: int) -> int | None:
        records = self.records
        if records is None or not 0 <= slot < len(records) // _RECORD.size:
            return None
        record: tuple[bytes, int, int, int] = _RECORD.unpack_from(records, slot * _RECORD.size)
        v, start, size, crc = record
        if size != length or v != version.encode("ascii", "replace"):
            return None
        return (self.gen << _GEN) | (start << 64) | (crc << 32) | size

    def read(self, entry: Kept, at: int) -> str:
        """The body kept for ``entry`` at ``at``: exactly the text it was indexed with."""
        start, crc, length = (at >> 64) & _START, (at >> 32) & _LENGTH, at & _LENGTH
        if self._fd < 0:  # closed: no entry of the view reads from here (see Shelf.close_unused)
            return self._from_note(entry, damaged=False)
        try:
            data = os.pread(self._fd, length, start)
            if len(data) == length and zlib.crc32(data) == crc:
                return data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            pass
        return self._from_note(entry)

    def _from_note(self, entry: Kept, damaged: bool = True) -> str:
        """A damaged record: the note's own text, if its bytes are still the
        ones indexed; else "" (a person edited it as well, and the watcher is
        about to apply the edit). Only a regular file at the note's own name
        is read: a symlink put in its place could point outside the root, and
        a FIFO would block the reader."""
        if damaged:
            log.warning("sediment: the body store is damaged at %s; reading the note", entry.path)
        off = entry.off
        try:
            data = read_nofollow(self.root / entry.path)
        except OSError:
            return ""
        if off is not None and content_version(data) == entry.version:
            return data[off:].decode("utf-8", "replace")
        return ""


def write(path: Path, order: Sequence[Kept | None]) -> None:
    """Write a store of these entries' bodies, one record per slot (an
    entry, or None for a dead slot)."""
    texts = [e.body.encode("utf-8") if e is not None and _storable(e) else b"" for e in order]
    pos = len(MAGIC) + _COUNT.size + len(order) * _RECORD.size
    records = []
    for e, data in zip(order, texts):
        version = e.version.encode("ascii") if e is not None and _storable(e) else _NONE
        records.append(_RECORD.pack(version, pos, len(data), zlib.crc32(data)))
        pos += len(data)
    # a cache: losing it costs memory only
    atomic_write(path, [MAGIC + _COUNT.pack(len(order)), b"".join(records), *texts], durable=False)
