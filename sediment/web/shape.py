"""What the page shows, as JSON-ready dicts, built from ``Repository``'s
public verbs only: a node of the nebula, a memory's card, the panels, a
search. Nothing here records a recall (searches run with ``record=False``)
or writes a file; the text of a note goes out as data, and the page escapes
it where it shows it.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..errors import SedimentError

if TYPE_CHECKING:
    from ..model.entry import Entry
    from ..model.lifecycle import Strength
    from ..repository import Repository

NOTES = "notes"  # the cluster of a person's own notes (outside the layer folders: layer '')
CLUSTERS = ("shallow", "sediment", "bedrock", "archive", NOTES)
TITLE_CHARS = 200  # a node's title (the card has it whole)
MAX_CHAIN = 50  # supersede links followed each way
MAX_MOVES = 500  # of the metabolize plan sent to the page (the counts are whole)

_LINK = re.compile(r"^\[\[([^\]|#]*)")
STATIC = Path(__file__).parent / "static"


def page(query: str, data: str = "") -> str:
    """index.html with the query each of its files is fetched with (the
    token; '' in an export) and an export's inlined data ('' when served)."""
    html = (STATIC / "index.html").read_text(encoding="utf-8")
    return html.replace("{{Q}}", query).replace("{{DATA}}", data)


def cluster(e: "Entry") -> str:
    """Where a memory sits in the nebula: its layer, or 'notes' for a person's."""
    return e.layer or NOTES


def room_key(layer: str, room: str) -> str:
    return f"{layer}/{room}"


def _safe(get: Callable[[], Any], default: Any = None) -> Any:
    """A field a person's hand-written note may not have in a readable form."""
    try:
        return get()
    except (SedimentError, ValueError, TypeError, KeyError):
        return default


def _iso(get: Callable[[], Any]) -> str | None:
    t = _safe(get)
    return t.isoformat(timespec="seconds") if t is not None else None


def node(e: "Entry", s: "Strength | None") -> dict[str, Any]:
    """A memory as the nebula draws it: clustered by layer, coloured by kind,
    sized by strength now."""
    out: dict[str, Any] = {"id": e.id, "title": (e.title or e.name)[:TITLE_CHARS], "layer": cluster(e),
                           "room": e.room, "kind": e.kind, "path": e.path,
                           "strength": round(s.strength, 3) if s is not None else 0.0}
    if e.status != "active":
        out["status"] = e.status
    tags = _safe(lambda: e.tags, ())
    if tags:
        out["tags"] = list(tags)[:20]
    return out


def _get(repo: "Repository", name: str) -> "Entry | None":
    try:
        return repo.get(name)
    except SedimentError:  # not found, ambiguous, unreadable: the card names it as written
        return None


def _unwrap(link: Any) -> str:
    m = _LINK.match(str(link).strip())
    return (m.group(1) if m else str(link)).strip()


def _brief(e: "Entry") -> dict[str, Any]:
    return {"id": e.id, "title": e.title or e.name, "path": e.path, "layer": cluster(e)}


def _chain(repo: "Repository", e: "Entry", key: str) -> list[dict[str, Any]]:
    """Follow ``supersedes`` (older) or ``superseded_by`` (newer) links."""
    out: list[dict[str, Any]] = []
    seen = {e.id}
    todo = list(e.meta.get(key) or ()) if isinstance(e.meta.get(key), list) else []
    while todo and len(out) < MAX_CHAIN:
        name = _unwrap(todo.pop(0))
        other = _get(repo, name)
        if other is None:
            out.append({"id": None, "title": name, "path": None, "layer": None})
            continue
        if other.id in seen:
            continue
        seen.add(other.id)
        out.append(_brief(other))
        more = other.meta.get(key)
        todo += list(more) if isinstance(more, list) else []
    return out


def open_command(repo: "Repository", e: "Entry", *, exported: bool = False) -> dict[str, str]:
    """How a person opens the note: their editor on the file, and the CLI."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or ("open" if sys.platform == "darwin"
                                                                      else "xdg-open")
    where = e.path if exported else str(repo.root / e.path)
    root = "." if exported else str(repo.root)
    return {"editor": f"{editor} {shlex.quote(where)}",
            "cli": f"sediment --root {shlex.quote(root)} get {shlex.quote(e.id)}"}


def card(repo: "Repository", id: str, *, step: int = 1, exported: bool = False,
         backlinks: Iterable[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Everything the card of one memory shows. ``step`` thins the forecast
    (an export keeps one point a week); ``backlinks`` (``id``, ``title``,
    ``path``, ``layer`` each) may be given by a caller that has them already
    (an export of every card: ``links_to`` for each would read every note's
    links each time). Raises ``NotFound``."""
    e = repo.get(id)
    s = repo.strength(e.id)
    f = repo.forecast(e.id, days=180)
    h = repo.history(e.id)
    back = list(backlinks) if backlinks is not None else [_brief(b) for b in repo.links_to(e.id)]
    links = []
    for name in e.links:
        target = _get(repo, name)
        links.append(_brief(target) if target is not None else {"id": None, "title": name, "path": None})
    return {
        "id": e.id, "name": e.name, "title": e.title or e.name, "path": e.path, "layer": cluster(e),
        "room": e.room, "kind": e.kind, "status": e.status, "tags": list(_safe(lambda: e.tags, ())),
        "value": _safe(lambda: e.value), "created": _iso(lambda: e.created), "updated": _iso(lambda: e.updated),
        "event": e.event if isinstance(e.event, str) else None, "source": _safe(lambda: e.source),
        "reason": e.meta.get("reason") if isinstance(e.meta.get("reason"), str) else None,
        "text": e.text, "sections": dict(e.sections), "warnings": list(e.warnings),
        "strength": {"now": round(s.strength, 4), "value": s.value, "decay": round(s.decay, 4),
                     "recalls": s.recalls, "confirms": s.confirms, "explain": s.explain()},
        "forecast": {"days": list(f.days[::step]), "as_is": list(f.as_is[::step]),
                     "recalled": list(f.recalled[::step])},
        "history": h.to_dict(),
        "supersedes": _chain(repo, e, "supersedes"), "superseded_by": _chain(repo, e, "superseded_by"),
        "backlinks": back, "links": links,
        "open": open_command(repo, e, exported=exported),
    }


# --------------------------------------------------------------------------- panels

def plan(repo: "Repository") -> dict[str, Any]:
    """What metabolize would do now (a dry run: nothing moves, no report)."""
    p = repo.metabolize(dry_run=True).to_dict()
    p["total"] = len(p["moves"])
    p["moves"] = p["moves"][:MAX_MOVES]
    return p


def working(repo: "Repository") -> dict[str, Any]:
    return repo.working().to_dict()


_HEADING = re.compile(r"^## (.+) \((\d+)\)$", re.MULTILINE)
_OVER = re.compile(r"^Over (\d+) memories at (\S+)\.", re.MULTILINE)
_DATE = re.compile(r"^# Patrol (\S+)", re.MULTILINE)


def patrol(repo: "Repository") -> dict[str, Any] | None:
    """The last patrol report (``report('patrol')``), and what its headings
    say: its date, the time it was made for, how many memories it went over,
    the item count of each section. None when patrol never ran here."""
    text = repo.report("patrol")
    if text is None:
        return None
    date, over = _DATE.search(text), _OVER.search(text)
    day = date.group(1) if date else None
    return {"date": day, "now": over.group(2) if over else None, "memories": int(over.group(1)) if over else None,
            "counts": {m.group(1): int(m.group(2)) for m in _HEADING.finditer(text)},
            "path": f"_system/patrol/{day}.md" if day else None, "text": text}


def attention(repo: "Repository") -> dict[str, Any]:
    return repo.attention(weeks=12, desert_days=90).to_dict()


def stats(repo: "Repository") -> dict[str, Any]:
    return dict(repo.stats())


PANELS: dict[str, Callable[["Repository"], Any]] = {
    "plan": plan, "working": working, "patrol": patrol, "attention": attention, "stats": stats}


def search(repo: "Repository", query: str, *, limit: int = 50) -> dict[str, Any]:
    """The hits of a search as the agent's would rank them, each with its lanes
    (``explain``). A person looking records no recall. Raises ``InvalidInput``."""
    hits = repo.search(query, limit=limit, record=False, explain=True)
    return {"query": query, "hits": [h.to_dict() for h in hits]}
