"""The ``sediment`` command: one subcommand per ``Repository`` verb.

Prints readable text by default and JSON with ``--json``. Exit codes: 0 ok,
1 an error from the library (printed as ``error: <code>: <message>``), 2 usage,
141 (128 + SIGPIPE) when the reader of stdout went away (``| head -1``): quietly.

The commands are in ``memory`` (the core verbs), ``sync`` (several machines),
``exchange`` (export, import) and ``agent`` (the agent's verbs, hygiene, sources, the semantic lane); each
lists its own, and ``COMMANDS`` below is every one, in the order of
``sediment --help``. ``serve`` is here: it hands the MCP server the front door; so is ``view``, the
page (its body is ``web.run``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any, Sequence

from . import agent, exchange, memory, sync
from .kit import Command, arg, command, refuse_undecodable, require_root
from ..errors import SedimentError


@command("serve", "serve the memory to an MCP client (Claude Code, Cursor, …) over stdio; needs the [mcp] extra",
         arg("--wait", type=float, default=2.0, metavar="SECONDS",
             help="how long a tool waits for the index while it loads before answering 'loading' (default 2)"))
def cmd_serve(ns: argparse.Namespace) -> tuple[Any, str]:
    require_root(ns)  # a mistyped root is an error, not a new root
    from ..mcp.tools import serve  # raises NotInstalled (exit 1, with what to install) without the extra
    from functools import partial
    from ..repository import Repository
    from .kit import shared_roots
    shared = shared_roots(ns)  # (read through the served root: search, context, about, profile)
    serve(ns.root, open=partial(Repository, shared=shared) if shared else Repository, wait=ns.wait)
    # The protocol owned stdout; the CLI must not print a result after it.
    raise SystemExit(0)


@command("view", "a read-only page of the memory in your browser (the [view] extra); --export writes it as files",
         arg("--port", type=int, default=None, help="the port (default 8377, else any free one; 0: any free one)"),
         arg("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1, this machine "
                                                 "only; another is warned about)"),
         arg("--no-browser", action="store_true", help="print the URL, do not open a browser"),
         arg("--export", metavar="DIR", help="write the page as static files into DIR (no server, no token, "
                                             "no live updates) and stop"))
def cmd_view(ns: argparse.Namespace) -> tuple[Any, str]:
    require_root(ns)
    from ..progress import terminal_bar
    from ..web import run  # the server raises NotInstalled (exit 1, with what to install) without the extra
    if ns.export:
        done = run.export(ns.root, ns.export, progress=terminal_bar())
        return done, f"wrote {done['memories']} memories to {done['folder']}/index.html"
    run.serve(ns.root, host=ns.host, port=ns.port, open_browser=not ns.no_browser, progress=terminal_bar())
    raise SystemExit(0)  # stopped: the URL was the output


COMMANDS: dict[str, Command] = {c.name: c for c in (*memory.COMMANDS, *sync.COMMANDS, *agent.COMMANDS, cmd_serve,
                                                    cmd_view, *agent.SEMANTIC, *exchange.COMMANDS)}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sediment", description="Long-term memory in markdown files.")
    p.add_argument("--root", default=os.environ.get("SEDIMENT_ROOT") or "./memory_root",
                   help="memory root (default: $SEDIMENT_ROOT, else ./memory_root)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--shared", action="append", metavar="[LABEL=]PATH", default=None,
                   help="a shared root, read through this one (searched, never written; repeatable; default: "
                        "$SEDIMENT_SHARED, paths separated by ':'); LABEL names its hits (default: its folder)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, cmd in COMMANDS.items():
        sp = sub.add_parser(name, help=cmd.help, description=cmd.help)
        # --json/--root are accepted after the subcommand too
        sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
        sp.add_argument("--root", default=argparse.SUPPRESS, help="memory root")
        sp.add_argument("--shared", action="append", metavar="[LABEL=]PATH", default=argparse.SUPPRESS,
                        help="a shared root, read through this one (repeatable)")
        for names, kw in cmd.args:
            sp.add_argument(*names, **kw)
        sp.set_defaults(func=cmd.run)
    return p


# The library's messages name its parameters (``confirm=True``); at the command
# line a person typed flags. A keyword argument is translated wherever it
# stands; a parameter name only where it is the subject a message opens with
# ("now: not an ISO 8601 time", "value must be …"), and only when the command
# has that flag (``move ID LAYER`` takes the layer as an argument, not --layer).
FLAGS = {
    "confirm=True": "--confirm",
    "dry_run=False": "--apply",
    "include_archive=True": "--archive",
}
PARAMS = {"now": "--now", "limit": "--limit", "value": "--value", "kind": "--kind",
          "title": "--title", "room": "--room", "layer": "--layer", "tag": "--tag",
          "link": "--link", "reason": "--reason", "since": "--since", "until": "--until",
          "source": "--source", "event": "--event", "status": "--status"}
_SUBJECT = re.compile(r"^([a-z_]+)(?=: | must | is | '|$)")


def cli_message(message: str, command: str) -> str:
    """A library error message in the words of the command line."""
    for kw, flag in FLAGS.items():
        message = re.sub(rf"(?<![\w-]){re.escape(kw)}(?!\w)", flag, message)
    m = _SUBJECT.match(message)
    if m and PARAMS.get(m.group(1)) in _options(command):
        message = PARAMS[m.group(1)] + message[m.end(1):]
    return message


def _options(command: str) -> set[str]:
    return {n for names, _ in COMMANDS[command].args for n in names if n.startswith("--")}


EXIT_PIPE = 141  # 128 + SIGPIPE: what a tool killed by a closed pipe reports


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (`sediment list | head -1`): stop quietly, as a
        # tool killed by SIGPIPE would. What is still buffered for stdout goes
        # to /dev/null, so the interpreter's last flush raises nothing either.
        _stdout_to_devnull()
        return EXIT_PIPE


def _stdout_to_devnull() -> None:
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    ns = parser.parse_args(argv)  # exits 2 on usage errors
    ns.exit_code = 0
    try:
        refuse_undecodable(ns)
        data, text = ns.func(ns)
    except BrokenPipeError:
        raise
    except SedimentError as exc:
        message = cli_message(exc.message, ns.command)
        if ns.json:
            print(json.dumps({"error": {"code": exc.code, "message": message}}, ensure_ascii=False))
        print(f"error: {exc.code}: {message}", file=sys.stderr)
        return 1
    except OSError as exc:  # the file system said no (permissions, disk full, …)
        if ns.json:
            print(json.dumps({"error": {"code": "storage", "message": str(exc)}}, ensure_ascii=False))
        print(f"error: storage: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    if ns.json:
        print(json.dumps(data, ensure_ascii=False, indent=2, default=str))
    else:
        print(text)
    sys.stdout.flush()  # a pipe closed early shows here, inside the try of main()
    return int(ns.exit_code)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
