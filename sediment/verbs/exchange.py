"""Memories out and in: ``export`` writes every memory (its file, fields and
usage) as JSON Lines (``exported``; ``docs/export-format.md``), or as a
folder of the notes' files with that file beside them; ``import_`` reads
such an export back, a mem0 export, or a folder of markdown notes
(``foreign``), and writes the notes it brings.

An import is a dry run unless told otherwise: it says what it would add,
skip and refuse, and writes nothing. Applied, each note is written whole
(atomically, under the writer lock, told to the journal), never over a file
that is there; a memory whose id the root holds is skipped, so an import run
twice, or again after a crash, writes each note once. A record that cannot
be a note here (malformed, a path outside the layer folders' world: ``..``,
absolute, ``_system/``, hidden) is refused with where it is, and the rest go
on. Usage comes back as it left (``UsageLog.restore``), before its note, so
a crash in between loses none of it and the next run counts it once.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from itertools import islice
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator

from .._version import __version__
from ..disk.files import atomic_write, read_nofollow, resolve_inside
from ..errors import InvalidInput, NotFound, ParseError, SedimentError, StorageError
from ..model import entry as E
from ..model import validate as V
from ..model.names import MAX_PATH_BYTES
from ..progress import Ticker
from ..store.store import SYSTEM, Store
from . import exported as X
from . import foreign as F
from .adopt import ADOPTED_KIND
from .exported import Item, Note, Refused

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..view.view import View

CHUNK = 200  # notes written under one hold of the lock (a long import lets other writers in between)
_DRIVE = re.compile(r"^[A-Za-z]:")


# --------------------------------------------------------------------------- export

def export(store: Store, jsonl: str | os.PathLike[str] | IO[str] | None = None, *,
           dir: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    if (jsonl is None) == (dir is None):
        raise InvalidInput("export writes JSON Lines (jsonl: a file or a stream) or a folder (dir): give one")
    lines, files, missing = _records(store)
    try:
        return {"memories": len(lines) - 1, "missing": missing, **_write_out(store, lines, files, jsonl, dir)}
    except OSError as exc:
        raise StorageError(f"the export cannot be written: {exc}", path=exc.filename
                           if isinstance(exc.filename, str) else None) from exc


def _write_out(store: Store, lines: list[bytes], files: list[tuple[str, bytes]],
               jsonl: str | os.PathLike[str] | IO[str] | None, dir: str | os.PathLike[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if dir is not None:
        folder = _outside(store, Path(dir), "dir")
        if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
            raise InvalidInput(f"{folder} is not an empty folder: export --dir writes into a new or empty one",
                               path=str(folder))
        for rel, data in files:
            atomic_write(folder / rel, data, durable=False)
        atomic_write(folder / X.MANIFEST, lines)
        out["folder"] = str(folder)
    elif isinstance(jsonl, (str, os.PathLike)):
        target = _outside(store, Path(jsonl), "jsonl")
        atomic_write(target, lines)  # (a half-written export never stands where a whole one was)
        out["file"] = str(target)
    else:
        assert jsonl is not None
        for ln in lines:
            jsonl.write(ln.decode("utf-8"))
        jsonl.flush()
        out["file"] = getattr(jsonl, "name", None)
    return out


def _records(store: Store) -> tuple[list[bytes], list[tuple[str, bytes]], list[str]]:
    """The export's lines (a header, then a record a memory, by path), the
    notes' files, and the paths that vanished while being read."""
    with store.view.reading() as view:
        view.refresh()  # what a person saved since the last look
        entries = sorted(view.entries.values(), key=lambda e: e.path)
        usage = store.usage.totals()
        tick = Ticker(view.progress, "export", len(entries))
        lines, files, missing = [], [], []
        for e in entries:
            tick()
            try:
                data = read_nofollow(store.root / e.path)
                if E.content_version(data) != e.version:  # changed under us: as it is now
                    e = E.parse_note(data, e.path, tz=view.tz, max_meta_size=view.max_meta_size).entry
            except (OSError, ParseError):
                missing.append(e.path)
                continue
            lines.append(X.line(X.record(e, data, usage.get(e.id))))
            files.append((e.path, data))
    now = _dt.datetime.now().astimezone(store.policy.tz)
    return [X.line(X.header(len(lines), now, __version__)), *lines], files, missing


def _outside(store: Store, path: Path, what: str) -> Path:
    """``path``, refused inside the root: an export there would be read as notes (a folder: every id twice)."""
    full, root = Path(os.path.abspath(path)), os.path.realpath(store.root)
    real = os.path.realpath(full)
    if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
        raise InvalidInput(f"{what}: {path} is inside the memory root; export outside it", path=str(path),
                           what=what)
    return full


# --------------------------------------------------------------------------- import

def import_(store: Store, source: str | os.PathLike[str], *, dry_run: bool = True,
            kind: str | None = None) -> dict[str, Any]:
    ctx = F.Reading(store.view.tz, store.policy.max_meta_size, store.policy.max_body_bytes,
                    V.kind(kind, store.policy.kinds) if kind is not None else ADOPTED_KIND)
    fmt, items, total = _source(store, Path(source), ctx)
    return _apply(store, items, total, fmt=fmt, dry_run=dry_run)


def _source(store: Store, path: Path, ctx: F.Reading) -> tuple[str, Iterator[Item], int]:
    """What ``path`` holds: its format, its notes, how many."""
    if "\x00" in str(path):
        raise InvalidInput("the source's path holds a NUL byte", what="source")
    if path.is_dir():
        real, root = os.path.realpath(path), os.path.realpath(store.root)
        if os.path.commonpath([real, root]) in (real, root):  # (copies of the root's own notes, every one twice)
            raise InvalidInput(f"{path} is the memory root, inside it or around it: a folder is imported from "
                               "elsewhere (to hand a note of yours in the root to the agent's memory, move it "
                               "into a layer folder and adopt it)", path=str(path), what="source")
        manifest = path / X.MANIFEST
        if manifest.is_file():
            return _counted("sediment", X.read(read_nofollow(manifest)))
        files = F.folder_files(path)
        return "markdown", F.from_folder(path, files, ctx), len(files)
    try:
        data = read_nofollow(path)
    except FileNotFoundError:
        raise NotFound(f"nothing to import at {path}", path=str(path)) from None
    except OSError as exc:
        raise InvalidInput(f"{path} cannot be read: {exc.strerror or exc}", path=str(path)) from None
    try:
        doc = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        doc = None  # JSON Lines (one record a line), or nothing we read: the lines say which
    items = F.mem0_items(doc)
    if items is not None:
        return "mem0", F.from_mem0(items, ctx), len(items)
    return _counted("sediment", X.read(data))


def _counted(fmt: str, items: Iterator[Item]) -> tuple[str, Iterator[Item], int]:
    got = list(items)
    return fmt, iter(got), len(got)


def _apply(store: Store, items: Iterator[Item], total: int, *, fmt: str, dry_run: bool) -> dict[str, Any]:
    report: dict[str, Any] = {"format": fmt, "dry_run": dry_run, "added": 0, "skipped": 0, "refused": 0,
                              "items": []}
    seen = _Seen()
    tick = Ticker(store.view.progress, "import", total)
    while chunk := list(islice(items, CHUNK)):
        with (store.view.reading() if dry_run else store.writing()) as view:
            if seen.keys is None:
                seen.keys = {k for e in view.entries.values() if (k := F.mem0_key(e.meta))}
            done = [_decide(store, view, item, seen) for item in chunk]
            if not dry_run:
                _write(store, view, [(d, item) for d, item in zip(done, chunk)
                                     if d["action"] == "add" and isinstance(item, Note)])
        for d in done:
            tick()
            report["items"].append(d)
            report[{"add": "added", "skip": "skipped", "refuse": "refused"}[d["action"]]] += 1
    return report


def _write(store: Store, view: View, adds: list[tuple[dict[str, Any], Note]]) -> None:
    """Write a chunk's notes (their usage first: see the module's docstring)
    and tell the view and the journal; a note the file system refuses is
    marked refused in its report, and the others go on."""
    if not adds:
        return
    usage = [(d["id"], n.usage, f"import:{d['id']}:{E.content_version(n.data)}") for d, n in adds
             if n.usage is not None]
    if usage:
        store.usage.restore(usage)
    why = store.create_many([(d["path"], n.data) for d, n in adds])
    written = []
    for (d, _), w in zip(adds, why):
        if w is None:
            view.load_file(d["path"])  # (read again: a person may have saved it since the write)
            written.append(d["path"])
        else:
            d.update(action="refuse", why=w)
    if written:
        store.note_done(*written, op="import")


class _Seen:
    """What this import has planned so far (ids, paths, foreign keys)."""

    def __init__(self) -> None:
        self.ids: set[str] = set()
        self.paths: set[str] = set()
        self.keys: set[str] | None = None  # the foreign keys the root holds, read at the first chunk


def _decide(store: Store, view: View, item: Item, seen: _Seen) -> dict[str, Any]:
    """What to do with one item: add, skip (here already) or refuse, and why."""
    if isinstance(item, Refused):
        return {"action": "refuse", "where": item.where, "why": item.why}
    out: dict[str, Any] = {"where": item.where, "id": item.id, "path": item.rel}
    assert seen.keys is not None
    if item.key is not None and item.key in seen.keys:
        return {**out, "action": "skip", "why": f"{item.key} was imported already"}
    eid, why = _read(store, view, item)
    if eid is None:
        return {**out, "action": "refuse", "why": why}
    out["id"] = eid
    here = _here(view, eid, item, seen)
    if here is not None:
        return {**out, "action": "skip", "why": here}
    rel = item.rel
    if _taken(store, view, rel, seen) and item.rename is not None:
        rel = item.rename
    if _taken(store, view, rel, seen):
        if item.there == "skip":
            return {**out, "action": "skip", "why": f"a note is at {rel} already (imported before?)"}
        return {**out, "action": "refuse", "why": f"a file is at {rel} already; not overwritten"}
    seen.ids.add(eid)
    seen.paths.add(rel)
    if item.key is not None:
        seen.keys.add(item.key)
    return {**out, "path": rel, "action": "add"}


def _read(store: Store, view: View, item: Note) -> tuple[str | None, str]:
    """The id of the note ``item`` would write, or None and why it cannot be written."""
    why = _refused_path(store, view, item.rel)
    if why is not None:
        return None, f"path {item.rel!r}: {why}"
    try:
        entry = E.parse(item.data, item.rel, tz=view.tz, max_meta_size=view.max_meta_size)
    except ParseError as exc:
        return None, exc.message
    if item.id is not None and entry.id != item.id:
        return None, f"its record says id {item.id}, its text {entry.id}"
    return entry.id, ""


def _here(view: View, eid: str, item: Note, seen: _Seen) -> str | None:
    """Why a note with id ``eid`` is skipped: the root holds that id (or this import brings it twice)."""
    held = view.entries.get(eid)
    if held is None and eid not in seen.ids:
        return None
    if held is None:
        return "brought twice by this import"
    if held.path != item.rel:
        return f"its id is here already, at {held.path}"
    return "here already" + (", the same file" if held.version == E.content_version(item.data) else
                             ", changed since: left as it is")


def _refused_path(store: Store, view: View, rel: str) -> str | None:
    why = unsafe_path(rel, view.rules.indexed)
    if why is None:
        try:
            resolve_inside(store.root, rel)  # (a folder on the way that is a link out of the root)
        except SedimentError as exc:
            why = exc.message
    return why


def _taken(store: Store, view: View, rel: str, seen: _Seen) -> bool:
    return rel in seen.paths or rel in view.by_path or os.path.lexists(store.root / rel)


def unsafe_path(rel: str, indexed: Callable[[str], bool]) -> str | None:
    """Why a record's path is no place for a note this import may write (None:
    it is one). ``indexed(rel)``: whether the root's walk reads a note there."""
    parts = rel.split("/")
    checks = (
        ("\x00" in rel or "\\" in rel, "a NUL or a backslash"),
        (rel.startswith("/") or bool(_DRIVE.match(rel)), "an absolute path"),
        (any(p in ("", ".", "..") for p in parts), "'..', '.' or an empty folder name: not a path inside the root"),
        (parts[0] == SYSTEM, f"{SYSTEM}/ is sediment's own: no note is written there"),
        (any(p.startswith(".") for p in parts), "a hidden file or folder"),
        (not rel.endswith(".md"), "not a note (.md)"),
        (len(rel.encode("utf-8")) > MAX_PATH_BYTES, f"longer than {MAX_PATH_BYTES} bytes"),
    )
    why = next((why for bad, why in checks if bad), None)
    if why is None and not indexed(rel):
        why = "not where notes are read (the palace map, sources/, a folder the vault's settings leave out)"
    return why


def lines_of(items: Iterable[dict[str, Any]]) -> Iterator[str]:
    """An import's report, a line an item (the CLI's text)."""
    for it in items:
        if it["action"] == "refuse":
            yield f"refuse {it['where']}: {it['why']}"
        elif it["action"] == "skip":
            yield f"skip   {it.get('id') or '-'}  {it['path']}  ({it['why']})"
        else:
            yield f"add    {it['id']}  {it['path']}"

