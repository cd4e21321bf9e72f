"""Adopting a note a person wrote: giving it what a memory needs (an id and
its times, a title when it has none) by inserting those keys as lines, and
keeping every other byte of the person's file as it was.

A note written in Obsidian often has no frontmatter, or only a title or tags.
Such a file is only a ``check()`` problem until it is adopted, by
``adopt(path)`` or ``check(fix=True)`` (which adopts only notes inside layer
folders). What adopt writes is checked to parse before anything is written.
"""

from __future__ import annotations

import datetime as _dt
import os
from typing import Any

import yaml

from ..model import entry as E
from ..model.entry import Entry
from ..errors import InvalidInput, NotFound, ParseError, UnsafePath
from ..disk.files import read_nofollow, resolve_inside
from ..store.store import Store
from ..model.fields import new_id, now_iso
from ..model.names import LAYERS


def adopted_bytes(data: bytes, rel: str, *, eid: str, when: _dt.datetime) -> bytes:
    """``data`` with the keys a memory needs inserted; raises ``ParseError``
    when the file cannot become a memory that way (its YAML is broken, it is
    not text), ``InvalidInput`` when it is a memory already."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ParseError(f"{rel}: not UTF-8 text; adopt leaves it as it is", path=rel) from None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text[len(bom):]
    nl = "\r\n" if "\r\n" in text.split("\n", 1)[0] + "\n" else "\n"
    lines = text.split(nl)
    meta: dict[str, Any] = {}
    has_frontmatter = lines[0] == "---"
    if not has_frontmatter and text.lstrip().startswith("---"):
        raise ParseError(f"{rel}: starts like frontmatter but is not ('---' alone on the first line; "
                         f"CR-only line ends?); fix it, then adopt", path=rel)
    if has_frontmatter and "---" not in lines[1:]:
        raise ParseError(f"{rel}: its frontmatter is not closed by a '---' line; fix it, then adopt", path=rel)
    if has_frontmatter:
        end = lines.index("---", 1)
        try:
            meta = yaml.safe_load(nl.join(lines[1:end])) or {}
        except Exception as exc:  # noqa: BLE001 - any YAML a person typed: a problem, not a crash
            raise ParseError(f"{rel}: its frontmatter is not valid YAML ({type(exc).__name__}); "
                             f"fix it, then adopt", path=rel) from None
        if not isinstance(meta, dict):
            raise ParseError(f"{rel}: its frontmatter is not a mapping; fix it, then adopt", path=rel)
    if "id" in meta and "created" in meta:
        raise InvalidInput(f"{rel} has an id and a created time already", path=rel)
    stamp = now_iso(when)
    new = [f"id: {eid}"] if "id" not in meta else []
    if "created" not in meta:
        new.append(f"created: '{stamp}'")
    if "updated" not in meta:
        new.append(f"updated: '{stamp}'")
    if "title" not in meta:  # Obsidian's title is the file name (an empty title: the person's, kept)
        new.append("title: '" + rel.rsplit("/", 1)[-1][:-3].replace("'", "''") + "'")
    if has_frontmatter:
        out = [lines[0], *new, *lines[1:]]
    else:
        out = ["---", *new, "---", *lines]
    return (bom + nl.join(out)).encode("utf-8")


def adopt(store: Store, path: str) -> Entry:
    """Make the note at ``path`` (relative to the root, inside a layer folder)
    a memory. An adopted note is returned as it is (adopting is idempotent)."""
    if not isinstance(path, str) or not path.endswith(".md"):
        raise InvalidInput(f"adopt takes the path of a .md note relative to the root, not {path!r}")
    parts = [p for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if any(p == ".." or p.startswith(".") for p in parts):
        raise InvalidInput(f"adopt takes a path inside the root, without '..' or hidden folders: {path!r}")
    rel = "/".join(parts)
    if rel.split("/", 1)[0] not in LAYERS:
        raise InvalidInput(f"{rel} is not in a layer folder: move it into one ({', '.join(LAYERS)}) "
                           f"to hand it to the agent's memory, then adopt it")
    full = resolve_inside(store.root, rel)
    with store.writing() as view:
        if rel in view.by_path:
            return view.entries[view.by_path[rel]]
        try:
            data = read_nofollow(full)
        except FileNotFoundError:
            raise NotFound(f"no note at {rel}", path=rel) from None
        except OSError as exc:
            raise UnsafePath(f"{rel} is not a regular file; not followed", path=rel) from exc
        mtime = _dt.datetime.fromtimestamp(os.stat(full, follow_symlinks=False).st_mtime).astimezone()
        new = adopted_bytes(data, rel, eid=new_id(int(mtime.timestamp() * 1000)), when=mtime)
        entry = E.parse(new, rel, tz=view.tz, max_meta_size=view.max_meta_size)  # refuses what would not read
        if not entry.body.strip():
            raise InvalidInput(f"{rel} has no text: an empty note is not a memory", path=rel)
        if entry.id in view.entries:
            raise InvalidInput(f"{rel}: id {entry.id} is used by {view.entries[entry.id].path}", path=rel)
        store.replace_bytes(rel, new, expected=E.content_version(data))
        view.load_file(rel)
        store.note_done(rel, op="adopt")
        return view.resolve(entry.id)


def adopt_all(store: Store) -> list[str]:
    """Adopt every note in a layer folder that only lacks what adopt inserts;
    returns their paths. Files that cannot be adopted stay problems."""
    done = []
    with store.view.reading() as view:
        view.refresh()  # notes written since the last look
        candidates = sorted(p for p, prob in view.problems.items() if prob.code == "parse")
    for rel in candidates:
        try:
            adopt(store, rel)
            done.append(rel)
        except (ParseError, InvalidInput, NotFound):
            continue
    return done
