"""The index snapshot's layout: the index (``index.Index``) and its owner's
columns as bytes, and back. Fixed-layout sections, no document to parse —
a warm open of 100,000 memories spent a second decoding the one JSON
document that held the view's notes and the vocabularies (format 10), and
its peak memory held the decoded lists:

    magic | sha256 of the rest | n | n section sizes | header (JSON: format,
    byte order, tokenizer fingerprint, the number of keys, each lane's
    totals, the names of the owner's columns) | flags | keys | per lane: its
    vocabulary, then its arrays | the owner's columns, in the header's order

Text sections (the keys, a vocabulary) are UTF-8, the keys after their
lengths; arrays are native (the header's byte order). Each section is read in one
call; each lane's arrays are views of one buffer, not copies of it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import sys
from array import array
from itertools import accumulate
from typing import Any, BinaryIO, Callable, Iterable, Protocol, Sequence

from .postings import Postings, Vocab
from .stored import Stored


class Index(Protocol):
    """What the snapshot holds of an index (``index.Index``)."""
    flags: bytearray
    key_of: list[str | None]
    slot_of: dict[str, int]
    words: Postings
    bigrams: Postings

# 14: the view's frontmatter by layouts of keys (its "shapes" column);
# 13: a vocabulary of terms of one length without starts (``Vocab.width``);
# 12: the view's text columns by length (``pack_texts``); 11: fixed-layout
# sections, the owner's documents as columns (10 held them, and the
# vocabularies, in its JSON header); 10: the view's documents hold
# each file's settled stat (an older version would fail on them); 9:
# frequencies as bytes where they fit; 8: term vectors of the word lane (ids
# only; 7 held frequencies too); 6: superseded flag bit
SNAPSHOT_FORMAT = 14
_MAGIC = b"SEDIDX\n"
# what a snapshot holds of each lane, in order ("starts": the vocabulary's)
_LANE_ARRAYS = {
    "words": ("starts", "base_offsets", "base_slots", "base_tfs", "lengths", "vec_offsets", "vec_terms"),
    "bigrams": ("starts", "base_offsets", "base_slots", "base_tfs", "lengths"),
}
# the others "I"; a lane's frequencies are "B" or "H" (its "tfs" in the header)

Buffer = bytes | memoryview  # (a chunk of a snapshot: written as it is)

# the owner's part of a snapshot: given the keys in slot order, its named sections
Columns = Callable[[Sequence[str]], Iterable[tuple[str, bytes]]]


def pack(idx: Index, columns: Iterable[tuple[str, bytes]], fingerprint: str) -> list[Buffer]:
    """``idx`` (dead slots dropped, delta folded: ``Index.snapshot``) and the
    owner's ``columns`` as chunks of bytes to write in order."""
    keys: Sequence[str] = idx.key_of  # type: ignore[assignment]  # (none dead)
    blobs: list[Buffer] = [bytes(idx.flags), pack_texts(keys)]
    header: dict[str, Any] = {"format": SNAPSHOT_FORMAT, "byteorder": sys.byteorder,
                              "fingerprint": fingerprint, "keys": len(keys)}
    for name, lane in (("words", idx.words), ("bigrams", idx.bigrams)):
        tfs = lane.base_tfs
        header[name] = {"total_len": lane.total_len, "live": lane.live, "width": lane.base_index.width,
                        "tfs": tfs.typecode if isinstance(tfs, array) else tfs.format}
        text, starts = lane.base_index.packed()
        blobs.append(text)
        # the arrays as they are, not copies (at 100k a copy of each was 150 MB
        # more at a save's peak); the lengths, which a put resizes, copied
        blobs += [starts if a == "starts"
                  else getattr(lane, a).tobytes() if a == "lengths" or isinstance(getattr(lane, a), Stored)
                  else memoryview(getattr(lane, a)).cast("B")
                  for a in _LANE_ARRAYS[name]]
    owned = list(columns)
    header["columns"] = [name for name, _ in owned]
    blobs += [data for _, data in owned]
    head = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    sizes = [len(head)] + [len(b) for b in blobs]
    chunks = [struct.pack(f"<Q{len(sizes)}Q", len(sizes), *sizes), head, *blobs]
    digest = hashlib.sha256()
    for c in chunks:
        digest.update(c)
    return [_MAGIC, digest.digest(), *chunks]


def unpack(idx: Index, data: bytes | BinaryIO, fingerprint: str) -> dict[str, bytes]:
    """Fill the empty ``idx`` from ``pack``'s bytes (or a file open on them);
    the owner's columns by name. ``ValueError`` for anything damaged or of
    another format or tokenizer."""
    head, parts = _read_snapshot(data)
    if head.get("format") != SNAPSHOT_FORMAT or head.get("byteorder") != sys.byteorder:
        raise ValueError("snapshot of another format")
    if head.get("fingerprint") != fingerprint:
        raise ValueError("snapshot made by another version of the tokenizer or parser")
    n = head["keys"]
    flags, keys_blob, *lanes = parts
    keys = unpack_texts(keys_blob, n)
    idx.flags = bytearray(flags)
    if len(idx.flags) != n:
        raise ValueError("snapshot flags are inconsistent")
    for (name, lane), (vocab, buf, sizes, stored) in zip((("words", idx.words), ("bigrams", idx.bigrams)), lanes[:2]):
        _restore_lane(lane, name, head[name], vocab.decode("utf-8"), buf, sizes=sizes, keys=n, stored=stored)
    idx.key_of = keys  # type: ignore[assignment]
    idx.slot_of = dict(zip(keys, range(n)))
    names = head.get("columns")
    if not isinstance(names, list) or len(names) != len(lanes) - 2:
        raise ValueError("snapshot columns are inconsistent")
    return {str(k): b[0] for k, b in zip(names, lanes[2:])}


def reattach(idx: Index, opened: Callable[[], BinaryIO]) -> bool:
    """After ``pack``'s chunks for ``idx`` were written to a file
    (``opened()`` opens it for reading: only when there is something to
    move): term vectors left in an older snapshot's file (``Stored``) are
    read from this one instead, the same bytes (``pack`` copied them), so
    that the older file, replaced, is not kept on disk for as long as the
    process holds it (~210 MB at 100k). False when there is nothing to
    move, or the new file does not hold them whole (the old one was cut)."""
    if not isinstance(idx.words.vec_terms, Stored):
        return False
    with opened() as fh:
        return _reattach(idx, fh)


def _reattach(idx: Index, fh: BinaryIO) -> bool:
    vec = idx.words.vec_terms
    fileno = _fileno(fh)
    if fileno is None:
        return False
    start = len(_MAGIC) + 32 + 8
    head = fh.read(start)
    if len(head) != start or not head.startswith(_MAGIC):
        return False
    (n,) = struct.unpack_from("<Q", head, start - 8)
    at = 3 + 1 + len(_LANE_ARRAYS["words"]) - 1  # (header, flags, keys, the words' vocabulary, then its arrays)
    raw = fh.read(8 * n) if _FIXED <= n <= _MAX_SECTIONS else b""
    if len(raw) != 8 * n:
        return False
    sizes = struct.unpack(f"<{n}Q", raw)
    if sizes[at] != 4 * len(vec):
        return False
    idx.words.vec_terms = Stored(os.dup(fileno), start + 8 * n + sum(sizes[:at]), len(vec))  # type: ignore[assignment]
    return True


# Lists of text or bytes as one section: their lengths (``I``), then their
# contents one after the other. (Not a separator: a key is any text a
# person's note may give as its id, a NUL included.)

def pack_texts(items: Sequence[str]) -> bytes:
    """``items`` as one section (lengths in characters, then the UTF-8 text)."""
    return array("I", map(len, items)).tobytes() + "".join(items).encode("utf-8")


def unpack_texts(data: bytes, n: int) -> list[str]:
    """The ``n`` texts of a ``pack_texts`` section (``ValueError`` for anything inconsistent)."""
    lengths, rest = _lengths(data, n)
    return _cut(rest.decode("utf-8"), lengths)


def pack_blobs(items: Sequence[bytes]) -> bytes:
    """``items`` as one section (lengths in bytes, then the bytes)."""
    return array("I", map(len, items)).tobytes() + b"".join(items)


def unpack_blobs(data: bytes, n: int) -> list[bytes]:
    """The ``n`` byte strings of a ``pack_blobs`` section (``ValueError`` for anything inconsistent)."""
    lengths, rest = _lengths(data, n)
    return _cut(rest, lengths)


def _lengths(data: bytes, n: int) -> tuple[array[int], bytes]:
    lengths = array("I")
    lengths.frombytes(data[:lengths.itemsize * n])
    if len(lengths) != n:
        raise ValueError("a snapshot section is inconsistent")
    return lengths, data[lengths.itemsize * n:]


def _cut(whole: Any, lengths: array[int]) -> list[Any]:
    if sum(lengths) != len(whole):
        raise ValueError("a snapshot section is inconsistent")
    ends = list(accumulate(lengths))
    return list(map(whole.__getitem__, map(slice, [0, *ends[:-1]], ends)))


# the sections of a snapshot, in order: header, flags, keys, each lane's
# vocabulary and arrays (one buffer a lane), then the owner's columns
_FIXED = 3 + sum(1 + len(a) for a in _LANE_ARRAYS.values())
_MAX_SECTIONS = _FIXED + 64


def _read_snapshot(data: bytes | BinaryIO) -> tuple[dict[str, Any], list[Any]]:
    """A snapshot's header and its sections — the flags, the keys, for each
    lane (its vocabulary, one buffer of its arrays, their sizes, and its
    term vectors when they are left in the file), then each owner's column
    as (bytes,) — its checksum checked. Raises ``ValueError`` for anything
    damaged."""
    fh: Any = io.BytesIO(data) if isinstance(data, (bytes, bytearray)) else data  # (readinto: not in BinaryIO)
    if fh.read(len(_MAGIC)) != _MAGIC:
        raise ValueError("not a sediment index snapshot")
    digest = fh.read(32)
    count_raw = fh.read(8)
    if len(count_raw) != 8:
        raise ValueError("snapshot is truncated")
    (n,) = struct.unpack("<Q", count_raw)
    if not _FIXED <= n <= _MAX_SECTIONS:
        raise ValueError("snapshot of another format")
    raw = fh.read(8 * n)
    if len(raw) != 8 * n:
        raise ValueError("snapshot is truncated")
    sizes: tuple[int, ...] = struct.unpack(f"<{n}Q", raw)
    here = fh.tell()
    if fh.seek(0, io.SEEK_END) - here != sum(sizes):
        raise ValueError("snapshot is truncated")
    fh.seek(here)
    src = _Sections(fh, count_raw + raw)
    fileno = _fileno(fh)
    head_bytes, flags, keys = src.read(sizes[0]), src.read(sizes[1]), src.read(sizes[2])
    parts: list[Any] = [flags, keys]
    k = 3
    for arrays in _LANE_ARRAYS.values():  # one buffer per lane
        vocab = src.read(sizes[k])
        own = sizes[k + 1:k + 1 + len(arrays)]
        if arrays[-1] == "vec_terms" and fileno is not None:  # (left in the file: stored.Stored)
            buf = src.read(sum(own[:-1]))
            stored = Stored(os.dup(fileno), fh.tell(), own[-1] // 4)
            src.skip(own[-1])
            parts.append((vocab, buf, own[:-1], stored))
        else:
            parts.append((vocab, src.read(sum(own)), own, None))
        k += 1 + len(arrays)
    # (the columns as bytes, read as they are: a copy of 40 MB of frontmatter saved at 100k)
    parts += [(src.read(size, copy=False),) for size in sizes[k:]]
    if src.check.digest() != digest:
        raise ValueError("snapshot checksum mismatch")
    head = json.loads(head_bytes)
    if not isinstance(head, dict):
        raise ValueError("snapshot header is damaged")
    return head, parts


class _Sections:
    """Reads a snapshot's sections in order, each into the checksum."""

    def __init__(self, fh: Any, start: bytes) -> None:
        self.fh, self.check = fh, hashlib.sha256(start)

    def read(self, size: int, *, copy: bool = True) -> Any:
        """The next ``size`` bytes: a bytearray (views of it are cast to
        arrays), or with ``copy=False`` bytes as the file gave them."""
        if copy:
            buf: Any = bytearray(size)
            got = self.fh.readinto(buf)
        else:
            buf = self.fh.read(size)
            got = len(buf)
        if got != size:
            raise ValueError("snapshot is truncated")
        self.check.update(buf)
        return buf

    def skip(self, size: int) -> None:
        """Past the next ``size`` bytes, read for the checksum only."""
        chunk = memoryview(bytearray(min(size, 1 << 20)))
        while size:
            got = self.fh.readinto(chunk[:min(size, len(chunk))])
            if not got:
                raise ValueError("snapshot is truncated")
            self.check.update(chunk[:got])
            size -= got


def _restore_lane(lane: Postings, name: str, meta: dict[str, Any], vocab: str, buf: bytearray, *,
                  sizes: Sequence[int], keys: int, stored: Stored | None) -> None:
    """Set a lane's arrays to views of its snapshot buffer (``sizes``: of
    each of its arrays, in order), ``keys`` slots in all; ``stored``: its
    last array, left in the file. Raises ``ValueError`` for anything
    inconsistent."""
    view, pos = memoryview(buf), 0
    got: dict[str, Any] = {}
    names = _LANE_ARRAYS[name]
    if stored is not None:
        got[names[-1]], names = stored, names[:-1]
    for attr, size in zip(names, sizes, strict=True):
        code = str(meta.get("tfs")) if attr == "base_tfs" else "I"
        if code not in ("B", "H", "I"):
            raise ValueError("snapshot lane is inconsistent")
        if size % array(code).itemsize:
            raise ValueError("snapshot lane is inconsistent")
        got[attr] = view[pos:pos + size].cast(code)  # type: ignore[call-overload]
        pos += size
    lengths = got.pop("lengths")
    lane.lengths = array("I")
    lane.lengths.frombytes(lengths.cast("B"))  # (changes with every put: an array of its own)
    starts = got.pop("starts")
    for attr, a in got.items():
        setattr(lane, attr, a)
    width = meta.get("width")
    if not isinstance(width, int) or width < 0:
        raise ValueError("snapshot lane is inconsistent")
    if width:
        if len(starts) or len(vocab) % width or len(lane.base_offsets) != len(vocab) // width + 1:
            raise ValueError("snapshot lane is inconsistent")
        lane.base_index = Vocab(vocab, width=width)
    elif (len(lane.base_offsets) != len(starts) or not starts or starts[0] != 0
            or starts[-1] != len(vocab) + 1 and len(starts) > 1):
        raise ValueError("snapshot lane is inconsistent")
    else:
        lane.base_index = Vocab(vocab, starts)
    # (a term id past the vocabulary is skipped where vectors are read:
    # a pass over every id here cost ~1 s of a 100k warm open)
    if lane.vectors and (len(lane.vec_offsets) != keys + 1 or lane.vec_offsets[-1] != len(lane.vec_terms)):
        raise ValueError("snapshot term vectors are inconsistent")
    lane.total_len, lane.live = meta["total_len"], meta["live"]


def _fileno(fh: Any) -> int | None:
    """The descriptor of the file a snapshot is read from, when its term
    vectors can be left there (``postings.Stored``: ``os.pread``, which
    Windows lacks; and there a file held open could not be replaced by the
    next save); None for bytes in memory."""
    if not hasattr(os, "pread"):
        return None
    try:
        return int(fh.fileno())
    except (AttributeError, OSError, io.UnsupportedOperation):
        return None
