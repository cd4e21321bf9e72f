"""The nebula: every memory a node (its layer, room, kind and strength now),
the edges between them (link, evidence, supersedes, event), kept current as
files change, and each change as a small numbered diff for the open pages.

Nodes come from ``list`` and ``strengths``, which read no body: a large root's
nodes are ready at once. Edges come from ``graph(format="json")``, which reads
every body for its links and takes seconds on a large root; they are computed
after the nodes and sent as a diff (``refresh``), so the page draws its first
picture without waiting for them. A changed file updates its node at once
(``apply``: ``get`` of its path); the edges, and every strength as time decays
it, are reconciled by ``refresh`` after the burst.

Past ``limit`` memories a page gets rooms: one aggregate node per layer and
room with its count, and a room's memories when a person opens it (``room``).

Node dicts are never changed in place (a change replaces the dict), so a
payload built under the lock can be serialised outside it.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..errors import SedimentError
from . import shape

if TYPE_CHECKING:
    from ..model.entry import Entry
    from ..repository import Repository

LIMIT = 20_000  # past this many memories the page draws rooms, and opens one on a click
Edge = tuple[str, str, str]  # source id, target id, type
Diff = dict[str, Any]
STRENGTH_STEP = 0.001  # a strength that moved less than this is not sent again


def key_of(node: dict[str, Any]) -> str:
    return shape.room_key(node["layer"], node["room"])


def _edge(e: Edge) -> list[str]:
    return [e[0], e[1], e[2]]


class Nebula:
    """The page's picture of one repository. ``on_diff(diff)`` is called with
    each change, in version order, under the nebula's lock (keep it quick)."""

    def __init__(self, repo: "Repository", on_diff: Callable[[Diff], None] | None = None) -> None:
        self.repo = repo
        self.on_diff = on_diff
        self._lock = threading.Lock()
        self.version = 0
        self.nodes: dict[str, dict[str, Any]] = {}
        self.paths: dict[str, str] = {}  # path → id
        self.edges: set[Edge] = set()
        self.edges_ready = False

    # ------------------------------------------------------------------ building

    def load_nodes(self) -> None:
        """Every memory's node, afresh (the edges stay until ``refresh``)."""
        strengths = self.repo.strengths()
        nodes = {e.id: shape.node(e, strengths.get(e.id)) for e in self.repo.list() if e.status != "purged"}
        with self._lock:
            self.nodes = nodes
            self.paths = {n["path"]: i for i, n in nodes.items()}
            self.edges = {x for x in self.edges if x[0] in nodes and x[1] in nodes}
            self.version += 1

    def _graph_edges(self) -> set[Edge]:
        data = json.loads(self.repo.graph(format="json"))
        return {(x["source"], x["target"], x["type"]) for x in data["edges"]}

    def load(self) -> None:
        """Nodes and edges, afresh (an export; a test)."""
        self.load_nodes()
        self.refresh()

    # ------------------------------------------------------------------ reading

    def payload(self, limit: int = LIMIT) -> dict[str, Any]:
        """What a page draws first: every node and edge, or past ``limit``
        memories the rooms only (``aggregated``)."""
        with self._lock:
            nodes = list(self.nodes.values())
            edges = list(self.edges)
            version, ready = self.version, self.edges_ready
        counts = Counter((n["layer"], n["room"]) for n in nodes)
        out: dict[str, Any] = {
            "version": version, "total": len(nodes), "limit": limit, "aggregated": len(nodes) > limit,
            "edges_ready": ready, "edge_count": len(edges),
            "rooms": [{"key": shape.room_key(layer, room), "layer": layer, "room": room, "count": n}
                      for (layer, room), n in sorted(counts.items())],
        }
        if not out["aggregated"]:
            out["nodes"] = nodes
            out["edges"] = [_edge(e) for e in sorted(edges)]
        return out

    def room(self, key: str, limit: int = LIMIT) -> dict[str, Any]:
        """The memories of one room (strongest first, at most ``limit``) and
        the edges that touch them."""
        with self._lock:
            members = [n for n in self.nodes.values() if key_of(n) == key]
            version = self.version
            members.sort(key=lambda n: (-n["strength"], n["path"]))
            shown = members[:limit]
            ids = {n["id"] for n in shown}
            edges = [_edge(e) for e in sorted(self.edges) if e[0] in ids or e[1] in ids]
        return {"key": key, "version": version, "nodes": shown, "more": len(members) - len(shown), "edges": edges}

    # ------------------------------------------------------------------ changing

    def _publish(self, diff: Diff) -> Diff:
        """Number a diff and hand it on (under the lock: in version order)."""
        self.version += 1
        diff["version"] = self.version
        if self.on_diff is not None:
            self.on_diff(diff)
        return diff

    def _look(self, path: str) -> "Entry | None":
        try:
            e = self.repo.get(path)
        except SedimentError:  # gone, or no longer readable: not a memory any more
            return None
        return None if e.status == "purged" or e.path != path else e

    def apply(self, paths: Iterable[str]) -> Diff | None:
        """Files that changed (relative paths): their nodes now. Upserts go
        first, so a move (a new path, then the old one gone) keeps its node."""
        found = {p: self._look(p) for p in sorted(set(paths))}
        strengths = {}
        for e in found.values():
            if e is not None:
                try:
                    strengths[e.id] = self.repo.strength(e.id)
                except SedimentError:
                    continue
        with self._lock:
            upsert, remove = [], []
            for e in found.values():
                if e is None:
                    continue
                n = shape.node(e, strengths.get(e.id))
                prev = self.nodes.get(e.id)
                if prev == n:
                    continue
                if prev is not None and prev["path"] != n["path"]:
                    self.paths.pop(prev["path"], None)
                self.nodes[e.id] = n
                self.paths[n["path"]] = e.id
                upsert.append({**n, "was": key_of(prev) if prev is not None else None})
            dropped: list[Edge] = []
            for p, e in found.items():
                i = self.paths.get(p) if e is None else None
                if i is None or self.nodes.get(i, {}).get("path") != p:
                    continue
                del self.paths[p]
                remove.append({"id": i, "was": key_of(self.nodes.pop(i))})
                dropped += [x for x in self.edges if i in (x[0], x[1])]
            self.edges.difference_update(dropped)
            if not upsert and not remove:
                return None
            return self._publish({"upsert": upsert, "remove": remove, "edges_add": [],
                                  "edges_remove": [_edge(x) for x in dropped]})

    def refresh(self) -> Diff | None:
        """Reconcile every strength and the edges with the repository (slow on
        a large root: run it off the request path)."""
        strengths = self.repo.strengths()
        edges = self._graph_edges()
        with self._lock:
            upsert = []
            for i, n in list(self.nodes.items()):
                s = strengths.get(i)
                now = round(s.strength, 3) if s is not None else 0.0
                if abs(now - n["strength"]) >= STRENGTH_STEP:
                    self.nodes[i] = {**n, "strength": now}
                    upsert.append({**self.nodes[i], "was": key_of(n)})
            edges = {x for x in edges if x[0] in self.nodes and x[1] in self.nodes}
            add, gone = sorted(edges - self.edges), sorted(self.edges - edges)
            first = not self.edges_ready
            self.edges, self.edges_ready = edges, True
            if not (upsert or add or gone or first):
                return None
            return self._publish({"upsert": upsert, "remove": [], "edges_add": [_edge(x) for x in add],
                                  "edges_remove": [_edge(x) for x in gone], "edges_ready": True})

    def reload(self) -> Diff:
        """Everything afresh (a folder moved, a checkout): pages load again."""
        self.load_nodes()
        with self._lock:
            return self._publish({"reload": True})
