"""An open against the index snapshot (``_system/cache/index.bin``): which
notes' slots the view can keep as they are, and which notes are read into it
afresh (``View.load_file``). A slot is kept only for a file whose bytes hash to
the version the snapshot recorded, at the path it recorded, under the id the
slot holds: anything else is parsed and indexed again, so the snapshot can
never hide an edit."""

from __future__ import annotations

import os
from typing import Any, Iterator

from . import coldopen as C
from ..model import entry as E
from ..model.entry import Entry
from .compact import thaw
from ..disk.files import read_nofollow
from ..progress import Ticker

# a cold open folds the index's delta into its compact base past this many
# terms: a safety valve for very large roots (a fold costs ~10 µs a term, so
# it is not worth it below a few hundred thousand memories' worth of terms)
FOLD_TERMS = 2_000_000


def load_files(view: Any, files: list[tuple[str, os.stat_result]], snap: dict[str, tuple[int, list[Any]]],
               parsed: Iterator[C.Outcome] | None, tick: Ticker) -> set[int]:
    """load_all's walk over the files: the snapshot's slots it could keep."""
    matched: set[int] = set()
    root = str(view.root)
    for rel, st in files:
        tick()
        hit = snap.get(rel)
        if hit is None:
            _load(view, rel, st, outcome=next(parsed) if parsed is not None else None)
            continue
        slot, (_, version, meta, off) = hit
        hit[1][2] = None  # (the entry keeps its own compact copy: this one may go now)
        try:  # (a str: pathlib costs more than the read)
            data = read_nofollow(os.path.join(root, rel))
        except OSError:
            # gone already, unreadable, or no longer a regular file (a symlink,
            # a FIFO put in its place since the walk: never followed, never
            # waited on), which the walk would have passed over: the slot dies below
            continue
        if meta is None:  # (properties with a warning, which check must see again)
            if kept(view, rel, st, data, slot, version):
                matched.add(slot)
            continue
        kept_as_is = meta
        meta = thaw(meta)  # (dates the snapshot kept as tagged text)
        eid = E.id_of(meta, rel)
        if E.content_version(data) != version or eid in view.entries or view.index.key_of[slot] != eid:
            _load(view, rel, st, data)
            continue
        if "id" in meta:  # (a person's note may have none: its id is its path's)
            meta["id"] = view.index.key_of[slot]  # (equal: checked above) one string, not two
        if off is None:  # (CRLF, a BOM: its body is not a slice of its bytes, nor in the body store)
            body: str | None = body_of(data)
            at = None
        else:
            at = view._shelf.find(slot, version, len(data) - off)  # (its body in the body store: bodies.py)
            body = data[off:].decode("utf-8") if at is None else None
        entry = Entry(meta=meta, body=body, path=rel, version=version, tz=view.tz, stored=(view._shelf, at))
        if off is not None:
            entry._cache.off = off
        entry._cache.plain = meta is kept_as_is  # (thawed dates: JSON cannot keep them as they are)
        view.file_stats[rel] = C.stamp(st)
        view._register(entry)
        matched.add(slot)
    return matched


def body_of(data: bytes) -> str:
    """The body ``parse`` found in these bytes (they hashed to the version
    it parsed), without reading their frontmatter again."""
    text = E.normal(data.decode("utf-8"))
    parts = E.split(text)
    return text if parts is None else parts[1]  # (None: a person's note without frontmatter, all body)


def kept(view: Any, rel: str, st: os.stat_result, data: bytes, slot: int, version: str) -> bool:
    """A note the snapshot keeps the terms of, not its frontmatter
    (``slot``, of bytes that hashed to ``version``): parsed again, and if
    these are those bytes its slot's terms are kept (same bytes, same
    terms), so an open with nothing changed does not rewrite the snapshot."""
    outcome = C.read_parse(view.root, rel, view.tz, view.max_meta_size, data)
    if (outcome[0] != "ok" or outcome[1].version != version  # (the parse hashed the bytes)
            or outcome[1].id in view.entries or view.index.key_of[slot] != outcome[1].id):
        _load(view, rel, st, data, outcome)
        return False
    _, entry, off, _ = outcome
    if off is not None:
        entry._cache["off"] = off
        at = view._shelf.find(slot, entry.version, len(data) - off)
        if at is not None:
            entry.keep_body(view._shelf, at)
    view.file_stats[rel] = C.stamp(st)
    view._register(entry)
    return True


def _load(view: Any, rel: str, st: os.stat_result, data: bytes | None = None, outcome: Any = None) -> None:
    """``view.load_file``, the index's delta folded first when it is due
    (checked here, where the delta can grow, and nowhere else)."""
    if view.index.delta_terms > FOLD_TERMS:
        view.index.fold()
    view.load_file(rel, st, data, outcome)
