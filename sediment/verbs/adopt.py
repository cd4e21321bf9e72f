"""The bytes of adopting a note a person wrote: giving it what a memory needs
(an id and its times, a title when it has none) by inserting those keys as
lines, and keeping every other byte of the person's file as it was. The
verbs that write them are ``health.adopt`` and ``health.adopt_all``.

A note written in Obsidian often has no frontmatter, or only a title or tags.
Such a file is only a ``check()`` problem until it is adopted, by
``adopt(path)`` or ``check(fix=True)`` (which adopts only notes inside layer
folders). What adopt writes is checked to parse before anything is written.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from typing import Any

import yaml

from ..errors import InvalidInput, ParseError
from ..model.fields import now_iso


# What a note that declares no kind becomes: a person handing a note to the
# agent's memory vouches for it, so it must not decay as an unsorted inbox
# fragment (archived within three weeks); ``fact`` is the durable kind that
# claims no more than that (a year's half-life, and promotion only by use),
# where ``rule`` would claim a decision and ``core`` a place in every context.
ADOPTED_KIND = "fact"
_PLAIN = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


def adopted_bytes(data: bytes, rel: str, *, eid: str, when: _dt.datetime, kind: str = ADOPTED_KIND) -> bytes:
    """``data`` with the keys a memory needs inserted (``kind`` where the note
    declares none: a kind it declares is kept as written); raises
    ``ParseError`` when the file cannot become a memory that way (its YAML is
    broken, it is not text), ``InvalidInput`` when it is a memory already."""
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
    if "kind" not in meta:
        new.append(f"kind: {kind}" if _PLAIN.fullmatch(kind) else "kind: " + json.dumps(kind))
    if "title" not in meta:  # Obsidian's title is the file name (an empty title: the person's, kept)
        new.append("title: '" + rel.rsplit("/", 1)[-1][:-3].replace("'", "''") + "'")
    if has_frontmatter:
        out = [lines[0], *new, *lines[1:]]
    else:
        out = ["---", *new, "---", *lines]
    return (bom + nl.join(out)).encode("utf-8")
