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
read, and its text used only if its bytes still hash to the entry's version.

The descriptor stays open for the life of the view, so a store replaced by
another process (every write is a new file renamed into place) leaves this
process reading the one it opened. A cache: a missing, old or damaged file
only means the bodies are kept in memory until the next snapshot.

Format: ``MAGIC``, a little-endian u32 count, ``count`` records of (16-byte
version, u64 start, u32 length, u32 CRC-32), then the texts (UTF-8).
"""

from __future__ import annotations

import logging
import os
import struct
import zlib
from pathlib import Path
from typing import Any, Collection, Iterable

from . import entry as E
from .files import atomic_write

log = logging.getLogger("sediment")

MAGIC = b"sediment-bodies 1\n"
_RECORD = struct.Struct("<16sQII")
_COUNT = struct.Struct("<I")

# (os.pread: POSIX; elsewhere the bodies stay in memory)
USABLE = hasattr(os, "pread")


class Shelf:
    """The stores a view has opened, and what an entry reads its body from
    (``Entry.keep_body(shelf, at)``). ``at`` names the store, the record's
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
        return store

    def find(self, version: str, length: int) -> int | None:
        """Where the store being loaded keeps the body of this version, if it holds one of this many bytes."""
        return self.loading.find(version, length) if self.loading is not None else None

    def done(self) -> None:
        """The loading is over: let go of the table ``find`` used."""
        if self.loading is not None:
            self.loading.table = None
            self.loading = None

    def lacks(self, entries: Iterable[Any]) -> bool:
        """Whether a body the store could hold is in memory (written by an
        older version, or the store was deleted): then ``keep`` is due."""
        return self.path is not None and any(e._body is not None and e._cache.get("off") is not None
                                             and len(e.version) == 16 for e in entries)

    def keep(self, entries: Collection[Any]) -> None:
        """Write the entries' bodies to a new store, then let each entry the
        store holds read its body from there (the text leaves memory).
        Raises OSError if the store cannot be written."""
        if self.path is None or not self.lacks(entries):
            return
        placed = write(self.path, entries)
        if self.open() is None:
            return
        for e in entries:
            if e.version in placed and e._cache.get("off") is not None:
                length = len(e.body.encode("utf-8")) if e._body is not None else e._cache.at & 0xFFFFFFFF
                at = self.find(e.version, length)
                if at is not None:
                    e.keep_body(self, at)
        self.done()

    def read(self, entry: Any, at: int) -> str:
        return self.stores[at >> 128].read(entry, at)


class Bodies:
    """One store, open for reading. ``find`` (while the view loads) says
    where a version's body is; an entry then reads it through the shelf."""

    def __init__(self, fd: int, table: dict[bytes, int], root: Path, gen: int) -> None:
        self._fd = fd
        self.table: dict[bytes, int] | None = table  # version → at; let go once the view is loaded
        self.root = root
        self.gen = gen

    def __del__(self) -> None:
        try:
            os.close(self._fd)
        except (OSError, AttributeError):
            pass

    @classmethod
    def open(cls, path: Path, root: Path, gen: int = 0) -> "Bodies | None":
        """The store at ``path``, or None (none yet, another format, unreadable)."""
        if not USABLE:
            return None
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return None
        try:
            head = os.pread(fd, len(MAGIC) + _COUNT.size, 0)
            if len(head) < len(MAGIC) + _COUNT.size or not head.startswith(MAGIC):
                raise ValueError("not a body store of this format")
            (n,) = _COUNT.unpack_from(head, len(MAGIC))
            raw = os.pread(fd, n * _RECORD.size, len(head))
            if len(raw) != n * _RECORD.size:
                raise ValueError("a truncated body store")
            table = {v: (gen << 128) | (start << 64) | (crc << 32) | length
                     for v, start, length, crc in _RECORD.iter_unpack(raw)}
        except (OSError, ValueError, struct.error) as exc:
            log.debug("ignoring the body store: %s", exc)
            os.close(fd)
            return None
        return cls(fd, table, root, gen)

    def find(self, version: str, length: int) -> int | None:
        """Where the body of the note with this version is, if this store
        holds it with this many bytes (UTF-8)."""
        at = self.table.get(version.encode("ascii", "replace")) if self.table is not None else None
        return at if at is not None and at & 0xFFFFFFFF == length else None

    def read(self, entry: Any, at: int) -> str:
        """The body kept for ``entry`` at ``at``: exactly the text it was indexed with."""
        start, crc, length = (at >> 64) & 0xFFFFFFFFFFFFFFFF, (at >> 32) & 0xFFFFFFFF, at & 0xFFFFFFFF
        try:
            data = os.pread(self._fd, length, start)
            if len(data) == length and zlib.crc32(data) == crc:
                return data.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            pass
        return self._from_note(entry)

    def _from_note(self, entry: Any) -> str:
        """A damaged record: the note's own text, if its bytes are still the
        ones indexed; else (a person edited it as well) the note as it is now,
        which the watcher is about to apply."""
        log.warning("sediment: the body store is damaged at %s; reading the note", entry.path)
        off = entry._cache.get("off")
        try:
            with open(self.root / entry.path, "rb") as fh:
                data = fh.read()
        except OSError:
            return ""
        if off is not None and E.content_version(data) == entry.version:
            return data[off:].decode("utf-8", "replace")
        try:
            return E.parse(data, entry.path, tz=entry.tz).body
        except Exception:  # noqa: BLE001 - whatever the person typed: no text, never an error
            return ""


def write(path: Path, entries: Iterable[Any]) -> set[str]:
    """Write a store of these entries' bodies (those the index snapshot lets
    a warm open take from the note's bytes: an ``off`` is known). Returns
    the versions it holds: open it, and ``find`` them."""
    kept: list[tuple[bytes, bytes]] = []
    seen: dict[str, int] = {}
    clash: set[str] = set()
    for e in entries:
        if e._cache.get("off") is None or len(e.version) != 16:
            continue
        data = e.body.encode("utf-8")
        if e.version in seen:  # one file's bytes in two places: one record, if one text
            if kept[seen[e.version]][1] != data:
                clash.add(e.version)
            continue
        seen[e.version] = len(kept)
        kept.append((e.version.encode("ascii"), data))
    kept = [k for k in kept if k[0].decode("ascii") not in clash]
    pos = len(MAGIC) + _COUNT.size + len(kept) * _RECORD.size
    records = []
    for version, data in kept:
        records.append(_RECORD.pack(version, pos, len(data), zlib.crc32(data)))
        pos += len(data)
    head = MAGIC + _COUNT.pack(len(kept))
    # a cache: losing it costs memory only
    atomic_write(path, [head, b"".join(records), *(data for _, data in kept)], durable=False)
    return set(seen) - clash
