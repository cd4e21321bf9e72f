"""``sediment view --export DIR``: the same page as static files, for a person
to share or attach. No server, no token, no live updates: the nebula and the
panels are inlined in ``index.html``; the cards (and, past the limit, the
rooms) are in ``data/*.js`` files the page loads when a person opens one (a
page opened from disk may load scripts beside it, but not fetch JSON).

Nothing of the machine it was made on goes in: paths are relative to the
root, the open command names the file from the root, and the root's location
is left out of the statistics.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput, StorageError
from ..progress import Progress, Ticker
from . import shape
from .nebula import LIMIT, Nebula

if TYPE_CHECKING:
    from ..repository import Repository

SHARD = 500  # cards per data file
MARKER = ".sediment-view-export"  # a folder with it may be written over (an earlier export)
BACKLINK_TYPES = ("link", "evidence")


def inline_json(data: Any) -> str:
    """JSON to sit inside a ``<script type="application/json">`` element: no
    ``<``, ``>`` or ``&`` in it, so no note's ``</script>`` can end the element."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")


def _script(kind: str, key: Any, data: Any) -> str:
    # ensure_ascii: a JavaScript file, where U+2028 in a string is trouble in older engines
    return (f"Sediment.loaded({json.dumps(kind)}, {json.dumps(key)}, "
            f"{json.dumps(data, ensure_ascii=True, separators=(',', ':'), default=str)});\n")


def _target(repo: "Repository", folder: Path) -> Path:
    out = folder.absolute()
    root = repo.root.resolve()
    if out.resolve() == root or root in out.resolve().parents:
        raise InvalidInput(f"export to a folder outside the memory root, not {folder} (inside it, the export "
                           "would be versioned with the notes)", what="export")
    if out.exists() and (not out.is_dir() or (any(out.iterdir()) and not (out / MARKER).exists())):
        raise InvalidInput(f"{folder} exists and is not an empty folder or an earlier export: "
                           "choose another folder", what="export")
    return out


def export(repo: "Repository", folder: str | Path, *, limit: int = LIMIT,
           progress: Progress | None = None) -> dict[str, Any]:
    """Write the page into ``folder`` (made if missing; an earlier export
    there is replaced). Returns counts. Raises ``InvalidInput`` for a folder
    inside the root or one holding other files, ``StorageError`` when it
    cannot be written."""
    out = _target(repo, Path(folder))
    nebula = Nebula(repo)
    nebula.load()
    payload = {**nebula.payload(limit), "root": repo.root.name, "exported": True}
    panels = {name: fn(repo) for name, fn in shape.PANELS.items()}
    panels["stats"] = {k: v for k, v in panels["stats"].items() if k != "root"}
    back: dict[str, list[dict[str, Any]]] = {}
    for source, target, kind in sorted(nebula.edges):
        if kind in BACKLINK_TYPES and source in nebula.nodes:
            n = nebula.nodes[source]
            back.setdefault(target, []).append({k: n[k] for k in ("id", "title", "path", "layer")})
    ids = sorted(nebula.nodes, key=lambda i: nebula.nodes[i]["path"])
    shards = {i: k // SHARD for k, i in enumerate(ids)}
    rooms = {r["key"]: k for k, r in enumerate(payload["rooms"])} if payload["aggregated"] else {}
    try:
        if out.exists():
            shutil.rmtree(out)
        (out / "data").mkdir(parents=True)
        (out / MARKER).write_text("written by sediment view --export; a next export may replace this folder\n",
                                  encoding="utf-8")
        shutil.copytree(shape.STATIC, out / "static", ignore=shutil.ignore_patterns("index.html"))
        tick = Ticker(progress, "export", len(ids))
        for start in range(0, len(ids), SHARD):
            cards = {}
            for i in ids[start:start + SHARD]:
                cards[i] = shape.card(repo, i, step=7, exported=True,
                                      backlinks=sorted(back.get(i, []), key=lambda b: b["path"]))
                tick()
            (out / "data" / f"cards-{start // SHARD}.js").write_text(_script("cards", start // SHARD, cards),
                                                                     encoding="utf-8")
        for key, k in rooms.items():
            (out / "data" / f"room-{k}.js").write_text(_script("room", key, nebula.room(key, limit)),
                                                       encoding="utf-8")
        data = {"nebula": payload, "panels": panels, "shards": shards, "rooms": rooms}
        html = shape.page("", f'<script type="application/json" id="sediment-data">{inline_json(data)}</script>')
        (out / "index.html").write_text(html, encoding="utf-8")
    except OSError as exc:
        raise StorageError(f"cannot write the export to {folder}: {exc}", path=str(folder)) from exc
    return {"folder": str(folder), "memories": len(ids), "edges": len(nebula.edges),
            "aggregated": payload["aggregated"], "files": len(ids) // SHARD + 1 + len(rooms) + 1}
