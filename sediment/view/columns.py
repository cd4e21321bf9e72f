"""What the index snapshot keeps of each note beside its terms, as columns
(``search.index.Columns``): its path, version and frontmatter as lists by
length (``snapshot.pack_texts``), where its body starts and its settled stat
as fixed-width numbers. Each column is
one section of the snapshot, written and read in one call: a warm open of
100,000 notes spent a second decoding them from one JSON document, and held
the decoded lists of it at its peak memory.

A note's frontmatter stays the JSON text it was saved as
(``compact.Encoded``) until something reads it. Pure.
"""

from __future__ import annotations

import json
from array import array
from typing import Iterable, Mapping, NamedTuple, Sequence

from ..search.snapshot import pack_blobs, pack_texts, unpack_blobs, unpack_texts

_STAMP = 32  # bytes of a ``vault.stamp`` (ctime, mtime, size, inode), big-endian; all zero: none
_NO_OFF = -1
_NAMES = ("paths", "versions", "metas", "offs", "stamps")


class Doc(NamedTuple):
    """One note as the view saves it."""
    path: str
    version: str
    meta: bytes  # its frontmatter as JSON (``load.snapshot_meta``); empty: parse it again at open
    off: int | None  # where its body starts in its bytes (``Held.off``)
    stamp: int | None  # its settled stat (``Stamps.settled``), or None


def encode(docs: Iterable[Doc], shapes: Sequence[Sequence[str]]) -> list[tuple[str, bytes]]:
    """The columns of ``docs`` (in slot order), their frontmatter written by
    ``shapes`` (``compact.Pool.shaped``: the layouts of keys, kept once);
    ``shapes`` is read after ``docs``, which may add to it."""
    docs = list(docs)
    paths = pack_texts([d.path for d in docs])
    versions = pack_texts([d.version for d in docs])
    metas = pack_blobs([d.meta for d in docs])
    offs = array("q", [_NO_OFF if d.off is None else d.off for d in docs]).tobytes()
    zero = bytes(_STAMP)
    stamps = b"".join(zero if d.stamp is None else d.stamp.to_bytes(_STAMP, "big") for d in docs)
    kept = json.dumps([list(k) for k in shapes], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return [*zip(_NAMES, (paths, versions, metas, offs, stamps)), ("shapes", kept)]


class Docs:
    """The notes a snapshot recorded, by slot (``decode``)."""

    __slots__ = ("paths", "versions", "metas", "offs", "stamps", "slot_of", "shapes")

    def __init__(self, columns: Mapping[str, bytes], n: int) -> None:
        """The columns of ``n`` notes; ``ValueError`` for any missing or inconsistent."""
        try:
            paths, versions, metas, offs, stamps = (columns[k] for k in _NAMES)
        except KeyError as exc:
            raise ValueError(f"snapshot has no {exc.args[0]} column") from None
        self.paths = unpack_texts(paths, n)
        self.versions = unpack_texts(versions, n)
        self.metas: list[bytes | None] = list(unpack_blobs(metas, n))  # (None: taken)
        self.offs = array("q")
        self.offs.frombytes(offs)
        self.stamps = stamps
        if len(self.metas) != n or len(self.offs) != n or len(stamps) != n * _STAMP:
            raise ValueError("snapshot columns are inconsistent")
        self.slot_of = dict(zip(self.paths, range(n)))
        try:
            shapes = json.loads(columns["shapes"])
        except (KeyError, ValueError) as exc:
            raise ValueError("snapshot has no readable shapes column") from exc
        if not isinstance(shapes, list) or not all(
                isinstance(k, list) and all(isinstance(x, str) for x in k) for k in shapes):
            raise ValueError("snapshot shapes are inconsistent")
        self.shapes = [tuple(k) for k in shapes]

    def __len__(self) -> int:
        return len(self.paths)

    def off(self, slot: int) -> int | None:
        o = self.offs[slot]
        return None if o == _NO_OFF else o

    def stamp(self, slot: int) -> int | None:
        return int.from_bytes(self.stamps[slot * _STAMP:(slot + 1) * _STAMP], "big") or None

    def take_meta(self, slot: int) -> bytes:
        """The frontmatter's JSON (empty: none kept), let go here: the note
        holds it now (``compact.Encoded``), or it is parsed from the file."""
        m = self.metas[slot]
        self.metas[slot] = None
        return m or b""

