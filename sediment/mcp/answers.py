"""Compact answers for agents (the MCP tools): text that carries ids, packed
into a character budget, with the same items as data for programs. Pure.

A client rejects a tool result over ~25,000 tokens, and a long answer costs
the model its context, so every answer is packed: items go in, in order, while
they fit; the rest are counted in a last line, "N more — narrow with …".

>>> text, shown, more = pack("2 notes", ["a" * 40, "b" * 90], budget=130, narrow="kind")
>>> print(text)
2 notes
aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
1 more — narrow with kind
>>> shown, more
(1, 1)
"""

from __future__ import annotations

from typing import Any, Sequence

from ..model.entry import Entry, one_line
from ..errors import InvalidInput, ParseError
from ..search.query import SearchHit

BUDGET_MIN = 200
BUDGET_MAX = 50_000  # ~12k tokens: half what clients accept in one result
MORE_RESERVE = 80  # room kept for the "N more" line


def budget(v: Any) -> int:
    """A caller's ``budget`` in characters, checked."""
    if isinstance(v, bool) or not isinstance(v, int) or not BUDGET_MIN <= v <= BUDGET_MAX:
        raise InvalidInput(f"budget must be a whole number of characters from {BUDGET_MIN} to {BUDGET_MAX}, "
                           f"not {v!r}", what="budget")
    return v


def more_line(n: int, narrow: str) -> str:
    return f"{n} more — narrow with {narrow}"


def pack(header: str, items: Sequence[str], *, budget: int, narrow: str) -> tuple[str, int, int]:
    """``header`` and then ``items`` while they fit in ``budget`` characters.
    Returns the text, how many items it shows and how many it left out. Packing
    stops at the first item that does not fit: the items are ranked, and an
    answer that skipped one would misstate the order."""
    lines = [header] if header else []
    used = len(header)
    shown = 0
    for item in items:
        room = budget - MORE_RESERVE if shown + 1 < len(items) else budget
        if used + 1 + len(item) > room:
            break
        lines.append(item)
        used += 1 + len(item)
        shown += 1
    more = len(items) - shown
    if more:
        lines.append(more_line(more, narrow))
    return "\n".join(lines), shown, more


def clip(text: str, *, budget: int, narrow: str) -> tuple[str, int]:
    """A long text (a report, a plan) cut at a line end within the budget;
    returns it and the number of lines left out."""
    if len(text) <= budget:
        return text, 0
    lines = text.split("\n")
    body, shown, more = pack("", lines, budget=budget, narrow=narrow)
    if shown == 0:  # one line longer than the budget
        cut = text[:budget - MORE_RESERVE]
        return cut + "\n" + more_line(len(lines), narrow), len(lines)
    return body, more


def _when(e: Entry) -> str:
    try:
        return e.updated.date().isoformat()
    except (ParseError, ValueError, OverflowError, KeyError):  # a person's odd date shows as '?'
        return "?"


def where(e: Entry) -> str:
    return f"{e.kind}, {e.layer}" + (f"/{e.room}" if e.room else "") + ("" if e.status == "active"
                                                                         else f", {e.status}")


def hit_line(i: int, h: SearchHit) -> str:
    e = h.entry
    line = f"{i}. {e.id} · {one_line(e.title, 120)} [{where(e)}]"
    if h.snippet:
        line += f"\n   {one_line(h.snippet, 240)}"
    if h.superseded_by:
        line += f"\n   superseded by {', '.join(h.superseded_by)}"
    return line


def hit_data(h: SearchHit) -> dict[str, Any]:
    e = h.entry
    out = {"id": e.id, "title": e.title, "path": e.path, "kind": e.kind, "layer": e.layer, "room": e.room,
           "status": e.status, "snippet": h.snippet, "terms": list(h.terms), "score": round(h.score, 6)}
    if h.superseded_by:
        out["superseded_by"] = list(h.superseded_by)
    return out


def entry_line(e: Entry) -> str:
    return f"{e.id} · {_when(e)} · {one_line(e.title, 120)} [{where(e)}]"


def entry_data(e: Entry) -> dict[str, Any]:
    """An entry's place and fields without its body (the body is asked for by range)."""
    return {"id": e.id, "name": e.name, "path": e.path, "title": e.title, "kind": e.kind, "layer": e.layer,
            "room": e.room, "status": e.status, "tags": list(e.tags), "version": e.version,
            "updated": _when(e), "links": list(e.links)}


def wrote(verb: str, e: Entry) -> tuple[str, dict[str, Any]]:
    """The answer of a write: what was done, the id, where, and the version to
    pass back to ``update``."""
    lines = [f"{verb} {e.id} · {one_line(e.title, 120)} [{where(e)}] · version {e.version}"]
    lines += [f"warning: {w}" for w in e.warnings]
    data = entry_data(e)
    data["done"] = verb
    if e.warnings:
        data["warnings"] = list(e.warnings)
    return "\n".join(lines), data


def body_range(e: Entry, start: int, budget: int) -> tuple[str, dict[str, Any]]:
    """A note for reading: its fields, then its body from character ``start``
    for as much as the budget leaves, and where to go on."""
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise InvalidInput(f"start must be a whole number from 0, not {start!r}", what="start")
    head = [f"{e.id} · {one_line(e.title, 200)} [{where(e)}]", f"path {e.path} · version {e.version} · updated "
            f"{_when(e)}"]
    if e.tags:
        head.append("tags " + " ".join(f"#{t}" for t in e.tags))
    if e.links:
        head.append("links " + ", ".join(e.links[:20]) + (" …" if len(e.links) > 20 else ""))
    header = "\n".join(head) + "\n\n"
    total = len(e.body)
    room = max(0, budget - len(header) - MORE_RESERVE)
    end = min(total, start + room)
    part = e.body[start:end]
    text = header + part
    if start > 0 or end < total:
        text += f"\n[characters {start}–{end} of {total}"
        text += f"; read again with start={end} for more]" if end < total else "]"
    data = entry_data(e)
    data.update(body=part, start=start, end=end, length=total)
    return text, data


def since(v: str | None) -> str | None:
    """``since`` as the library takes it: as given (a date, or a time without
    an offset, is in the root's timezone; ``7d``, ``yesterday`` are accepted),
    and no bound for an empty string."""
    return v if v else None
