"""The commands of the hygiene verbs: conflicts, patrol, map, graph, and the
sources (add-source, unlinked-sources). ``consolidate_with`` takes a Python
callable and has no command."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .kit import arg, command, open_repo, split_values
from ..errors import InvalidInput


@command("conflicts", "pairs of memories that may disagree, strongest clue first (reports only)",
         arg("--id", "--ids", dest="ids", action="append", help="only pairs with this memory (repeatable)"))
def cmd_conflicts(ns: argparse.Namespace) -> tuple[Any, str]:
    found = open_repo(ns).conflicts(split_values(ns.ids) or None)
    text = "\n".join(f"[{c.kind}] {c.a_name} ⟷ {c.b_name}: {c.clue}" for c in found) or "(no conflict candidates)"
    return [c.to_dict() for c in found], text


@command("patrol", "write today's patrol report to _system/patrol/ (changes no memory)",
         arg("--now", help="the time of the report, ISO 8601 with an offset (default: now)"))
def cmd_patrol(ns: argparse.Namespace) -> tuple[Any, str]:
    report = open_repo(ns).patrol(now=ns.now)
    return report.to_dict(), str(report)


@command("map", "write the palace map (MAP.md at the root: rooms, topics, links)")
def cmd_map(ns: argparse.Namespace) -> tuple[Any, str]:
    palace = open_repo(ns).map()
    return palace.to_dict(), str(palace)


@command("graph", "links, supersessions, evidence and events as Mermaid or JSON",
         arg("--format", default="mermaid", choices=["mermaid", "json"]))
def cmd_graph(ns: argparse.Namespace) -> tuple[Any, str]:
    out = open_repo(ns).graph(format=ns.format)
    data: Any = json.loads(out) if ns.format == "json" else {"mermaid": out}
    return data, out.rstrip("\n")


def _turns(path: str | None) -> Any:
    raw = sys.stdin.read() if path is None or path == "-" else Path(path).read_text(encoding="utf-8")
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"--turns: not JSON ({exc}); give a list of strings, [role, text] pairs or "
                           '{"role": …, "text": …} objects', what="turns") from None


@command("add-source", "store a raw conversation under sources/ (turns as JSON from --turns or stdin)",
         arg("session", help="the session name, which is also the file name"),
         arg("--turns", help="a JSON file of turns ('-' or nothing: stdin)"),
         arg("--now", help="the time of the turns, ISO 8601 with an offset (default: now)"))
def cmd_add_source(ns: argparse.Namespace) -> tuple[Any, str]:
    src = open_repo(ns).add_source(ns.session, _turns(ns.turns), now=ns.now)
    return src.to_dict(), f"{src.path}: {src.added} turn(s) added, {len(src.turns)} in all"


@command("unlinked-sources", "turns of stored sessions that no memory's source_links points to",
         arg("--since", help="only turns of this time or later (ISO 8601 with an offset)"))
def cmd_unlinked_sources(ns: argparse.Namespace) -> tuple[Any, str]:
    turns = open_repo(ns).unlinked_sources(since=ns.since)
    text = "\n".join(f"{t.link}  {t.role}: {' '.join(t.text.split())[:100]}" for t in turns) or "(none)"
    return [t.to_dict() for t in turns], text
