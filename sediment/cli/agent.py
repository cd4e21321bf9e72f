"""The commands for the agent: ``context``, ``observe``, ``working``, ``mood``
and ``about`` (one per ``Repository`` verb)."""

from __future__ import annotations

import argparse
from typing import Any

from .kit import arg, command, open_repo, text_arg

NOW = arg("--now", help="ISO 8601 time with an offset (default: now)")


@command("context", "the context block for a system prompt, packed into a character budget; "
                    "the 'reminds me of' items count as recalled",
         arg("query", nargs="?", help="what the turn is about (nothing: no 'reminds me of' section)"),
         arg("--budget", type=int, default=6000, help="most characters of the block (default 6000)"), NOW)
def cmd_context(ns: argparse.Namespace) -> tuple[Any, str]:
    ctx = open_repo(ns).context(ns.query, budget=ns.budget, now=ns.now)
    return ctx.to_dict(), ctx.text.rstrip("\n")


@command("observe", "read a message for todos, promises and 'done' (working memory)",
         arg("text", nargs="?", help="the message; '-' or nothing reads stdin"), NOW)
def cmd_observe(ns: argparse.Namespace) -> tuple[Any, str]:
    seen = open_repo(ns).observe(text_arg(ns.text), now=ns.now)
    lines = ([f"opened: {i.text}" for i in seen.opened] + [f"closed: {i.text}" for i in seen.closed]
             + [f"renewed: {i.text}" for i in seen.renewed] + [f"dropped: {i.text}" for i in seen.dropped])
    return seen.to_dict(), "\n".join(lines) or "(nothing to remember)"


@command("working", "the open todos and promises, and the mood", NOW)
def cmd_working(ns: argparse.Namespace) -> tuple[Any, str]:
    w = open_repo(ns).working(now=ns.now)
    lines = [f"{i.created}  {i.text}" for i in w.items]
    if w.mood:
        lines.append(f"mood until {w.mood.until}: {w.mood.text}")
    return w.to_dict(), "\n".join(lines) or "(nothing open)"


@command("mood", "set the mood for a few hours ('' clears it)",
         arg("text", help="the mood; an empty string clears it"), NOW)
def cmd_mood(ns: argparse.Namespace) -> tuple[Any, str]:
    m = open_repo(ns).mood(ns.text, now=ns.now)
    return (m.to_dict() if m else None), (f"mood until {m.until}: {m.text}" if m else "mood cleared")


@command("about", "what is remembered about a topic: memories, recalls, confirmations, state",
         arg("topic"), NOW)
def cmd_about(ns: argparse.Namespace) -> tuple[Any, str]:
    a = open_repo(ns).about(ns.topic, now=ns.now)
    return a.to_dict(), str(a)
