"""The commands for the agent (``context``, ``observe``, ``working``,
``mood``, ``about``, ``profile``, ``propose-entities``, ``apply-entities``),
for hygiene (``conflicts``, ``patrol``, ``map``, ``graph``), for the sources
(``add-source``, ``unlinked-sources``) and the semantic lane (``embed``): one
per ``Repository`` verb. ``consolidate_with`` takes a Python callable and has
no command."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .kit import SINCE_HELP, TIME_HELP, arg, command, open_root, split_values, text_arg
from ..errors import InvalidInput

if TYPE_CHECKING:
    from ..repository import Repository


def _open(ns: argparse.Namespace, **options: Any) -> Repository:
    from ..repository import Repository  # when a command runs, not at --help
    return open_root(Repository, ns, **options)


NOW = arg("--now", help=f"{TIME_HELP} (default: now)")


@command("context", "the context block for a system prompt, packed into a character budget; "
                    "the 'reminds me of' items count as recalled",
         arg("query", nargs="?", help="what the turn is about (nothing: no 'reminds me of' section)"),
         arg("--budget", type=int, default=6000, help="most characters of the block (default 6000)"), NOW)
def cmd_context(ns: argparse.Namespace) -> tuple[Any, str]:
    ctx = _open(ns).context(ns.query, budget=ns.budget, now=ns.now)
    return ctx.to_dict(), ctx.text.rstrip("\n")


@command("observe", "read a message for todos, promises and 'done' (working memory)",
         arg("text", nargs="?", help="the message; '-' or nothing reads stdin"), NOW,
         arg("--request", help="a key for this call: the same message sent again with it changes nothing"))
def cmd_observe(ns: argparse.Namespace) -> tuple[Any, str]:
    seen = _open(ns).observe(text_arg(ns.text), now=ns.now, request=ns.request)
    lines = ([f"opened: {i.text}" for i in seen.opened] + [f"closed: {i.text}" for i in seen.closed]
             + [f"renewed: {i.text}" for i in seen.renewed] + [f"dropped: {i.text}" for i in seen.dropped])
    return seen.to_dict(), "\n".join(lines) or "(nothing to remember)"


@command("working", "the open todos and promises, and the mood", NOW)
def cmd_working(ns: argparse.Namespace) -> tuple[Any, str]:
    w = _open(ns).working(now=ns.now)
    lines = [f"{i.created}  {i.text}" for i in w.items]
    if w.mood:
        lines.append(f"mood until {w.mood.until}: {w.mood.text}")
    return w.to_dict(), "\n".join(lines) or "(nothing open)"


@command("mood", "set the mood for a few hours ('' clears it)",
         arg("text", help="the mood; an empty string clears it"), NOW)
def cmd_mood(ns: argparse.Namespace) -> tuple[Any, str]:
    m = _open(ns).mood(ns.text, now=ns.now)
    return (m.to_dict() if m else None), (f"mood until {m.until}: {m.text}" if m else "mood cleared")


@command("about", "what is remembered about a topic: memories, recalls, confirmations, state",
         arg("topic"), NOW)
def cmd_about(ns: argparse.Namespace) -> tuple[Any, str]:
    a = _open(ns).about(ns.topic, now=ns.now)
    return a.to_dict(), str(a)


@command("profile", "what is remembered about a person (any of their names): their note, then decisions, "
                    "open items, impressions and facts naming them, with their roles counted",
         arg("name"))
def cmd_profile(ns: argparse.Namespace) -> tuple[Any, str]:
    p = _open(ns).profile(ns.name)
    return p.to_dict(), str(p)


@command("propose-entities", "the names (people, organisations, places) a memory's text holds that its "
                             "entities property does not (proposals: nothing is written)",
         arg("id"))
def cmd_propose_entities(ns: argparse.Namespace) -> tuple[Any, str]:
    found = _open(ns).propose_entities(ns.id)
    return [p.to_dict() for p in found], "\n".join(str(p) for p in found) or "(nothing to propose)"


@command("apply-entities", "write the proposed names (all, or --name's) into a memory's entities property",
         arg("id"),
         arg("--name", "--names", dest="names", action="append",
             help="only this name (a proposal's name or as written; repeatable, or comma-separated)"),
         arg("--expected", help="the version the proposals were read at: Conflict if it changed"))
def cmd_apply_entities(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _open(ns).apply_entities(ns.id, split_values(ns.names) if ns.names else None, expected=ns.expected)
    value = e.meta.get("entities") or {}
    return e.to_dict(), f"{e.id}  {e.path}\nentities: {', '.join(value) or '(none)'}"


@command("conflicts", "pairs of memories that may disagree, strongest clue first (reports only)",
         arg("--id", "--ids", dest="ids", action="append", help="only pairs with this memory (repeatable)"))
def cmd_conflicts(ns: argparse.Namespace) -> tuple[Any, str]:
    found = _open(ns).conflicts(split_values(ns.ids) or None)
    text = "\n".join(f"[{c.kind}] {c.a_name} ⟷ {c.b_name}: {c.clue}" for c in found) or "(no conflict candidates)"
    return [c.to_dict() for c in found], text


@command("patrol", "write today's patrol report to _system/patrol/ (changes no memory)",
         arg("--now", help=f"the time of the report, {TIME_HELP} (default: now)"))
def cmd_patrol(ns: argparse.Namespace) -> tuple[Any, str]:
    report = _open(ns).patrol(now=ns.now)
    return report.to_dict(), str(report)


@command("map", "write the palace map (MAP.md at the root: rooms, topics, links)")
def cmd_map(ns: argparse.Namespace) -> tuple[Any, str]:
    palace = _open(ns).map()
    return palace.to_dict(), str(palace)


@command("graph", "links, supersessions, evidence and events as Mermaid or JSON; --kind entities: "
                  "who appears with whom, in which roles",
         arg("--format", default="mermaid", choices=["mermaid", "json"]),
         arg("--kind", default="memories", choices=["memories", "entities"]))
def cmd_graph(ns: argparse.Namespace) -> tuple[Any, str]:
    out = _open(ns).graph(format=ns.format, kind=ns.kind)
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
         arg("--now", help=f"the time of the turns, {TIME_HELP} (default: now)"))
def cmd_add_source(ns: argparse.Namespace) -> tuple[Any, str]:
    src = _open(ns).add_source(ns.session, _turns(ns.turns), now=ns.now)
    return src.to_dict(), f"{src.path}: {src.added} turn(s) added, {len(src.turns)} in all"


@command("unlinked-sources", "turns of stored sessions that no memory's source_links points to",
         arg("--since", help=f"only turns of this time or later: {SINCE_HELP}"))
def cmd_unlinked_sources(ns: argparse.Namespace) -> tuple[Any, str]:
    turns = _open(ns).unlinked_sources(since=ns.since)
    text = "\n".join(f"{t.link}  {t.role}: {' '.join(t.text.split())[:100]}" for t in turns) or "(none)"
    return [t.to_dict() for t in turns], text


@command("embed", "compute the semantic lane's missing vectors now (extra [semantic]; "
                  "turns the lane on for this command even when policy.yaml has it off)")
def cmd_embed(ns: argparse.Namespace) -> tuple[Any, str]:
    with _open(ns, semantic=True) as repo:
        out = repo.embed()
        status = repo.semantic.status() if repo.semantic is not None else {}
    return {**out, **status}, (f"embedded {out['embedded']} memories in {out['seconds']:.1f} s; "
                               f"{status.get('vectors', 0)} of {status.get('memories', 0)} have a vector "
                               f"({out['model']})")


# (embed is listed after serve, which main holds: the order of `sediment --help`)
COMMANDS = (
    cmd_context, cmd_observe, cmd_working, cmd_mood, cmd_about, cmd_profile, cmd_propose_entities,
    cmd_apply_entities, cmd_conflicts, cmd_patrol, cmd_map, cmd_graph, cmd_add_source, cmd_unlinked_sources,
)
SEMANTIC = (cmd_embed,)
