"""Memories from elsewhere, as notes an import writes: a mem0 export (what
``Memory.get_all()`` returns: ``{"results": [...]}``, or the bare list of
older versions) and a plain folder of markdown notes (each adopted, as
``adopt`` does a person's note: its bytes kept, an id, times, a kind and a
title inserted where missing).

mem0's fields, checked against its source (``Memory._get_all_from_vector_store``):
``id``, ``memory`` (the text), ``hash``, ``metadata``, ``created_at``,
``updated_at``, and the ids it promotes from its payload (``user_id``,
``agent_id``, ``run_id``, ``actor_id``, ``role``). The text becomes the body,
the times ``created`` and ``updated``, and the rest a ``mem0`` field (its id
there is how a second import knows the memory came already).
"""

from __future__ import annotations

import datetime as _dt
import os
from pathlib import Path
from typing import Any, Iterator, Mapping, NamedTuple

from ..disk.files import read_nofollow
from ..errors import InvalidInput, ParseError, SedimentError
from ..model import entry as E
from ..model import names as N
from ..model import validate as V
from ..model.entry import Entry
from ..model.fields import build_meta, new_id, now_iso
from .adopt import ADOPTED_KIND, adopted_bytes
from .exported import MANIFEST, Item, Note, Refused

MEM0_FIELDS = ("id", "hash", "user_id", "agent_id", "run_id", "actor_id", "role", "metadata", "categories")
ACTIVE_LAYERS = ("shallow", "sediment", "bedrock")  # where an adopted note may stay; else it goes to shallow/


class Reading(NamedTuple):
    """What reading a foreign memory needs of the root: its timezone, limits,
    and the kind a memory that declares none gets."""
    tz: _dt.tzinfo
    max_meta_size: int
    max_body_bytes: int
    kind: str = ADOPTED_KIND


def mem0_items(doc: Any) -> list[Any] | None:
    """The memories of a mem0 export, or None when ``doc`` is not one."""
    if isinstance(doc, dict) and isinstance(doc.get("results"), list):
        return list(doc["results"])
    if isinstance(doc, list) and doc and all(isinstance(x, dict) and "memory" in x for x in doc):
        return doc
    return None


def mem0_key(meta: Any) -> str | None:
    """The mem0 id a note's ``mem0`` field records, if any."""
    m = meta.get("mem0") if isinstance(meta, Mapping) else None
    mid = m.get("id") if isinstance(m, Mapping) else None
    return f"mem0:{mid}" if isinstance(mid, str) and mid else None


def from_mem0(items: list[Any], ctx: Reading) -> Iterator[Item]:
    for n, item in enumerate(items, 1):
        where = f"item {n}"
        try:
            yield _mem0(where, item, ctx)
        except SedimentError as exc:
            yield Refused(where, exc.message)


def _mem0(where: str, item: Any, ctx: Reading) -> Item:
    if not isinstance(item, dict):
        return Refused(where, "not an object")
    text = item.get("memory")
    if not isinstance(text, str) or not text.strip():
        return Refused(where, "no 'memory' text")
    V.body(text, ctx.max_body_bytes)
    created = _time(item.get("created_at"), "created_at", ctx.tz) or _dt.datetime.now().astimezone(ctx.tz)
    updated = _time(item.get("updated_at"), "updated_at", ctx.tz) or created
    eid = new_id(int(created.timestamp() * 1000))
    title = next((ln.strip(" #\t") for ln in text.splitlines() if ln.strip()), "")[:80] or "note"
    kept = {k: _plain(item[k]) for k in MEM0_FIELDS if k in item}
    kept = {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if "id" in kept:
        kept["id"] = str(kept["id"])
    meta = build_meta(id=eid, title=title, created=now_iso(created), kind=ctx.kind, tags=(), value=None,
                      source="mem0", links=(), extra=V.fields({"mem0": kept}) if kept else {})
    meta["updated"] = now_iso(max(created, updated))
    meta = V.meta(meta)
    body = text if text.endswith("\n") else text + "\n"
    data = E.render(Entry(meta, body)).encode("utf-8")
    slug = N.slugify(title)
    return Note(where, N.join_path("shallow", "", f"{slug}-{eid[-4:].lower()}"), data, id=eid,
                key=mem0_key(meta), rename=N.join_path("shallow", "", f"{slug}-{eid[-10:].lower()}"))


def _time(v: Any, key: str, tz: _dt.tzinfo) -> _dt.datetime | None:
    if v is None or v == "":
        return None
    return V.time(v, key=key, tz=tz)


def _plain(v: Any) -> Any:
    """``v`` as frontmatter can hold it: nulls left out (YAML would write them, and a field
    that is null reads as absent)."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_plain(x) for x in v if x is not None]
    return v


def folder_files(folder: Path) -> list[str]:
    """The ``.md`` files under ``folder`` (relative, with '/'), sorted; links
    are not followed, hidden folders, ``_system/`` and an export's manifest
    left out."""
    out = []
    for top, dirs, files in os.walk(folder):
        rel_top = os.path.relpath(top, folder).replace(os.sep, "/")
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not (rel_top == "." and d == "_system")
                         and not os.path.islink(os.path.join(top, d)))
        for f in files:
            if f.endswith(".md") and not f.startswith(".") and f != MANIFEST:
                out.append(f if rel_top == "." else f"{rel_top}/{f}")
    return sorted(out)


def from_folder(folder: Path, files: list[str], ctx: Reading) -> Iterator[Item]:
    """Each note of a folder, adopted into the layer folder it names (else
    ``shallow/``, its folders kept as rooms). A note that is a memory already
    keeps its id; one that is not gets an id from its file time."""
    for src in files:
        try:
            yield _adopted(folder, src, ctx)
        except SedimentError as exc:
            yield Refused(src, exc.message)


def _adopted(folder: Path, src: str, ctx: Reading) -> Item:
    try:
        data = read_nofollow(folder / src)
        mtime = os.stat(folder / src, follow_symlinks=False).st_mtime
    except OSError as exc:
        return Refused(src, f"cannot be read ({exc.strerror or exc}): not a regular file?")
    top = src.split("/", 1)[0]
    rel = src if top in ACTIVE_LAYERS and "/" in src else f"shallow/{src}"
    try:
        entry = E.parse(data, rel, tz=ctx.tz, max_meta_size=ctx.max_meta_size)
        return Note(src, rel, data, id=entry.id, there="skip")  # a memory already: as it is
    except ParseError:
        pass
    when = _dt.datetime.fromtimestamp(mtime).astimezone()
    try:
        new = adopted_bytes(data, rel, eid=new_id(int(mtime * 1000)), when=when, kind=ctx.kind)
        entry = E.parse(new, rel, tz=ctx.tz, max_meta_size=ctx.max_meta_size)
    except InvalidInput as exc:  # an id and a created time, and still no memory
        return Refused(src, f"{exc.message}, but does not read as a memory: fix it, then import it")
    if not entry.body.strip():
        return Refused(src, "no text: an empty note is not a memory")
    return Note(src, rel, new, id=entry.id, there="skip")
