"""The commands that take memories out and bring them in: ``export`` and
``import`` (the library's ``export`` and ``import_``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from .kit import arg, command, open_root

if TYPE_CHECKING:
    from ..repository import Repository


def _open(ns: argparse.Namespace) -> Repository:
    from ..repository import Repository  # when a command runs, not at --help
    return open_root(Repository, ns)


@command("export", "write every memory (its file, fields and usage) as JSON Lines: to stdout, "
                   "a file (--jsonl) or a folder of the notes' files (--dir)",
         arg("--jsonl", metavar="FILE", help="the JSON Lines file to write (replaced whole)"),
         arg("--dir", metavar="DIR", help="a new or empty folder: every note's file at its path, and "
                                          "sediment-export.jsonl beside them"))
def cmd_export(ns: argparse.Namespace) -> tuple[Any, str]:
    repo = _open(ns)
    if ns.jsonl is None and ns.dir is None:
        out = repo.export(sys.stdout)
        print(f"exported {out['memories']} memories", file=sys.stderr)
        raise SystemExit(0)  # stdout is the export: nothing may follow it
    out = repo.export(ns.jsonl, dir=ns.dir)
    gone = f"; {len(out['missing'])} vanished while read" if out["missing"] else ""
    return out, f"exported {out['memories']} memories to {out.get('folder') or out['file']}{gone}"


@command("import", "bring memories in from an export (file or folder), a mem0 export (JSON of get_all) "
                   "or a folder of markdown notes; a dry run that says what it would do: --apply writes",
         arg("source", help="the export's .jsonl file or folder, mem0's JSON, or a folder of .md notes"),
         arg("--apply", action="store_true", help="write the notes (default: a dry run)"),
         arg("--kind", help="the kind of mem0's memories and of notes that declare none (default fact)"))
def cmd_import(ns: argparse.Namespace) -> tuple[Any, str]:
    from ..verbs.exchange import lines_of
    r = _open(ns).import_(ns.source, dry_run=not ns.apply, kind=ns.kind)
    ns.exit_code = 1 if r["refused"] else 0  # (as check's errors: a script sees what was left out)
    verb = ("would add", "would skip", "would refuse") if r["dry_run"] else ("added", "skipped", "refused")
    tail = f"{r['format']}: {verb[0]} {r['added']}, {verb[1]} {r['skipped']}, {verb[2]} {r['refused']}"
    if r["dry_run"]:
        tail += " (a dry run: --apply writes)"
    return r, "\n".join([*lines_of(r["items"]), tail])


COMMANDS = (cmd_export, cmd_import)
