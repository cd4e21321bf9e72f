"""The export format (JSON Lines, ``docs/export-format.md``): one memory's
record out, and the records of a file read back as notes to write.

Every line is one JSON object with ``schema`` (the format's version, so it
can change) and ``type``: a ``header`` first, then a ``memory`` per note. A
memory's record carries the note's file as it is (``text``: the bytes an
import writes back, so a round trip gives the same file) beside the fields
read from it, and its usage summary. What an import does with the notes is
``exchange``'s; mem0 and folders of markdown are read by ``foreign``.
"""

from __future__ import annotations

import codecs
import datetime as _dt
import json
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from ..model import entry as E
from ..model.entry import Entry
from ..model.usage import Usage

SCHEMA = 1
FORMAT = "sediment-export"
MANIFEST = "sediment-export.jsonl"  # an export as a folder: the notes' files, and this beside them


@dataclass(frozen=True)
class Note:
    """A note an import may write: ``data`` at ``rel``, from ``where`` in the
    source. ``id``: the id its record says it has (checked against its text).
    ``key``: its id in the system it came from (mem0's), so a second import
    skips it. ``rename``: another file name to use when ``rel`` is taken (a
    new note of ours, not one with a place of its own). ``there``: what a
    file at ``rel`` means: another file (refused) or this note adopted
    before (skipped)."""
    where: str
    rel: str
    data: bytes
    id: str | None = None
    usage: Usage | None = None
    key: str | None = None
    rename: str | None = None
    there: str = "refuse"


@dataclass(frozen=True)
class Refused:
    """What the source holds at ``where`` that cannot become a note, and why."""
    where: str
    why: str


Item = Note | Refused


def header(count: int, now: _dt.datetime, version: str) -> dict[str, Any]:
    return {"schema": SCHEMA, "type": "header", "format": FORMAT, "exported": now.isoformat(timespec="seconds"),
            "memories": count, "sediment": version}


def record(e: Entry, data: bytes, usage: Usage | None) -> dict[str, Any]:
    """The record of memory ``e``, whose file holds ``data`` (UTF-8: a note
    the view holds was read as text)."""
    return {"schema": SCHEMA, "type": "memory", "id": e.id, "path": e.path, "layer": e.layer or None,
            "room": e.room, "name": e.name, "title": e.title, "kind": e.kind, "status": e.status,
            "tags": list(e.tags), "person": e.reference, "frontmatter": _json(e.meta), "body": e.body,
            "text": data.decode("utf-8"), "file_version": E.content_version(data),
            "usage": usage.to_json() if usage is not None else None}


def line(obj: Mapping[str, Any]) -> bytes:
    """One JSON line. Dates of a person's properties become their ISO text;
    U+2028 and the like stay as they are (a reader splits lines at '\\n' only)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), default=_iso).encode("utf-8") + b"\n"


def _json(v: Any) -> Any:
    """Frontmatter as JSON holds it: keys as text, dates as ISO text, any other value as its text."""
    if isinstance(v, Mapping):
        return {k if isinstance(k, str) else _iso(k): _json(x) for k, x in v.items()}
    if isinstance(v, (list, tuple, set, frozenset)):
        return [_json(x) for x in v]
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return _iso(v)


def _iso(v: Any) -> str:
    return v.isoformat() if isinstance(v, (_dt.date, _dt.time)) else str(v)


def read(data: bytes) -> Iterator[Item]:
    """The notes of an export file, line by line; a line that is not a
    memory record of a schema this version reads is ``Refused`` with its
    number, never an exception. Blank lines and the header are passed over."""
    if data.startswith(codecs.BOM_UTF8):  # (an editor on Windows saved it)
        data = data[len(codecs.BOM_UTF8):]
    for n, raw in enumerate(data.split(b"\n"), 1):
        if not raw.strip():
            continue
        where = f"line {n}"
        try:
            rec = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            yield Refused(where, "not a JSON object on one line (UTF-8)")
            continue
        if not isinstance(rec, dict):
            yield Refused(where, "not a JSON object")
            continue
        schema = rec.get("schema")
        if isinstance(schema, bool) or not isinstance(schema, int) or schema < 1:
            yield Refused(where, "no 'schema' (the format's version): not a record of a sediment export")
        elif schema > SCHEMA:
            yield Refused(where, f"schema {schema} is newer than this sediment reads ({SCHEMA}): upgrade it")
        elif rec.get("type", "memory") == "header":
            continue
        elif rec.get("type", "memory") != "memory":
            yield Refused(where, f"unknown record type {rec.get('type')!r}")
        else:
            yield _note(where, rec)


def _note(where: str, rec: dict[str, Any]) -> Item:
    """A memory record as the note to write: its ``text``, or (a record a
    program made without it) its frontmatter and body rendered as ``add``
    renders a note."""
    eid, rel = rec.get("id"), rec.get("path")
    if not isinstance(eid, str) or not eid:
        return Refused(where, "no 'id'")
    if not isinstance(rel, str) or not rel:
        return Refused(where, f"{eid}: no 'path'")
    text = rec.get("text")
    if text is None:
        meta, body = rec.get("frontmatter"), rec.get("body")
        if not isinstance(meta, dict) or not isinstance(body, str):
            return Refused(where, f"{eid}: neither 'text' nor 'frontmatter' and 'body'")
        text = E.render(Entry(meta, body if not body or body.endswith("\n") else body + "\n"))
    if not isinstance(text, str):
        return Refused(where, f"{eid}: 'text' is not a string")
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:
        return Refused(where, f"{eid}: 'text' holds a lone surrogate (not UTF-8 text)")
    version = rec.get("file_version")
    if isinstance(version, str) and version != E.content_version(data):
        return Refused(where, f"{eid}: 'text' is not the file its 'file_version' names (changed or damaged)")
    usage = None
    if rec.get("usage") is not None:
        try:
            usage = Usage.from_json(rec["usage"])
        except ValueError as exc:
            return Refused(where, f"{eid}: 'usage' is not a usage summary ({exc})")
    return Note(where, rel, data, id=eid, usage=usage)
