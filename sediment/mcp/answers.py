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
from ..agent.profile import GROUPS, TITLES, Profile

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
    line = f"{i}. {h.ref} · {one_line(e.title, 120)} [{where(e)}]"  # (label:id from a shared root)
    if h.snippet:
        line += f"\n   {one_line(h.snippet, 240)}"
    if h.superseded_by:
        line += f"\n   superseded by {', '.join(h.superseded_by)}"
    return line


def hit_data(h: SearchHit) -> dict[str, Any]:
    e = h.entry
    out = {"id": e.id, "title": e.title, "path": e.path, "kind": e.kind, "layer": e.layer, "room": e.room,
           "status": e.status, "snippet": h.snippet, "terms": list(h.terms), "score": round(h.score, 6)}
    if h.root is not None:
        out["root"] = h.root
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


MIN_PART = 50  # characters of the body every read gives, at least (where that many are left)


def _trailer(start: int, end: int, total: int) -> str:
    """Where a part of a body lies, and where to go on."""
    if start == 0 and end == total:
        return ""
    more = f"; read again with start={end} for more]" if end < total else "]"
    return f"\n[characters {start}–{end} of {total}{more}"


def _head(e: Entry, start: int, room: int) -> str:
    """The fields of a note before its body, as many as fit in ``room``: all
    of them on a first read, the id and version when going on (or when the
    fields would not leave the body its part). Ends with a blank line."""
    essential = f"{e.id} · version {e.version}"
    if start > 0:
        return essential + "\n\n"
    lines = [f"{e.id} · {one_line(e.title, 200)} [{where(e)}]",
             f"path {e.path} · version {e.version} · updated {_when(e)}"]
    if e.tags:
        lines.append("tags " + " ".join(f"#{t}" for t in e.tags))
    if e.links:
        lines.append("links " + ", ".join(e.links[:20]) + (" …" if len(e.links) > 20 else ""))
    while lines:
        head = "\n".join(lines) + "\n\n"
        if len(head) <= room:
            return head
        lines.pop()  # links, then tags, then the path line: the data carries them all
    return essential + "\n\n"


def body_range(e: Entry, start: int, budget: int) -> tuple[str, dict[str, Any]]:
    """A note for reading: its fields, then its body from character ``start``
    for as much as the budget leaves, and where to go on.

    Every read that is not at the end gives at least ``MIN_PART`` characters
    of the body (or the rest): the fields give way to the body, and a budget
    too small even for the id, the version and that part is refused with the
    budget it needs, so that reading on always ends. Raises ``InvalidInput``
    for a ``start`` that is not a whole number from 0 to the body's length,
    and for such a budget.

    >>> from sediment.model.entry import Entry
    >>> e = Entry(meta={"id": "01J", "title": "t", "tags": ["x" * 300]}, body="abcdefghij" * 100)
    >>> text, data = body_range(e, 0, 200)
    >>> len(text) <= 200, data["start"], data["end"] > MIN_PART, "tags" in text
    (True, 0, True, False)
    >>> body_range(e, 1001, 200)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    sediment.errors.InvalidInput: start 1001 is past the end of 01J: its text has 1000 characters ...
    """
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise InvalidInput(f"start must be a whole number from 0, not {start!r}", what="start")
    total = len(e.body)
    if start > total:
        raise InvalidInput(f"start {start} is past the end of {e.id}: its text has {total} characters "
                           "(start=0 reads from the beginning)", what="start")
    part_min = min(MIN_PART, total - start)
    # the trailer at its longest (no position has more digits than ``total``): the budget a note
    # needs is the same wherever a read starts, so one that read its start reads it to the end
    longest = len(f"\n[characters {total}–{total} of {total}; read again with start={total} for more]") if total else 0
    essential = len(f"{e.id} · version {e.version}\n\n")
    need = essential + longest + part_min
    if budget < need:
        raise InvalidInput(f"budget {budget} is too small to read {e.id}: at least {need} characters "
                           "(its id, version and a part of its text)", what="budget", minimum=need)
    header = _head(e, start, budget - longest - part_min)
    end = min(total, start + budget - len(header) - longest)
    part = e.body[start:end]
    text = header + part + _trailer(start, end, total)
    data = entry_data(e)
    data.update(body=part, start=start, end=end, length=total)
    return text, data


def retired(e: Entry) -> tuple[str, dict[str, Any]]:
    """A purged (or erased) note for reading: what it was and why it went,
    not its text, and how it comes back."""
    erased = bool(e.meta.get("erased"))
    why = one_line(str(e.meta.get("reason") or "purged"), 200)
    back = ("only its tombstone is left" if erased
            else "its text is not shown; restore with confirm=true brings it back")
    text = f"{e.id} · {one_line(e.title, 200)} [{where(e)}]\n{'erased' if erased else 'purged'} ({why}): {back}"
    data = entry_data(e)
    data.update(body=None, erased=erased)
    return text, data


def since(v: str | None) -> str | None:
    """``since`` as the library takes it: as given (a date, or a time without
    an offset, is in the root's timezone; ``7d``, ``yesterday`` are accepted),
    and no bound for an empty string."""
    return v if v else None


def profile(p: Profile, budget: int) -> tuple[str, dict[str, Any]]:
    """A person's profile packed into ``budget``: who they are (their note's
    first lines, their roles counted), then the memories naming them, group
    by group, while they fit; the data holds what the text shows."""
    head = str(p).split("\n\n## ", 1)[0]
    items: list[tuple[str, str | None]] = []  # (line, the group of a memory's line)
    for g in GROUPS:
        mentioned = getattr(p, g)
        if mentioned:
            items += [(f"## {TITLES[g]}", None), *((str(m), g) for m in mentioned)]
    text, shown, more = pack(head, [line for line, _ in items], budget=budget, narrow="recall(entity=…)")
    data = {k: v for k, v in p.to_dict().items() if k not in GROUPS}
    for g in GROUPS:
        n = sum(1 for _, group in items[:shown] if group == g)
        data[g] = [m.to_dict() for m in getattr(p, g)[:n]]
    return text, {**data, "more": more}
