"""The ``sediment`` command: one subcommand per ``Repository`` verb.

Prints readable text by default and JSON with ``--json``. Exit codes: 0 ok,
1 an error from the library (printed as ``error: <code>: <message>``), 2 usage,
141 (128 + SIGPIPE) when the reader of stdout went away (``| head -1``): quietly.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .entry import SECTIONS
from .errors import InvalidInput, SedimentError
from .progress import terminal_bar

if TYPE_CHECKING:  # the CLI imports the library only when a command runs (fast --help)
    from .repository import Repository

Arg = tuple[Sequence[str], dict[str, Any]]
Handler = Callable[[argparse.Namespace], tuple[Any, str]]  # → (data for --json, text)


@dataclass(frozen=True)
class Command:
    run: Handler
    help: str
    args: tuple[Arg, ...]


COMMANDS: dict[str, Command] = {}


def command(name: str, help: str, *args: Arg) -> Callable[[Handler], Handler]:
    def deco(fn: Handler) -> Handler:
        COMMANDS[name] = Command(fn, help, args)
        return fn
    return deco


def arg(*names: str, **kw: Any) -> Arg:
    return names, kw


def _repo(ns: argparse.Namespace) -> "Repository":
    from .repository import Repository
    from .errors import NotFound
    # Only init makes a root: a mistyped --root must not sprout layer folders
    # and a _system/ in some unrelated directory.
    if ns.command != "init" and not os.path.isdir(os.path.join(ns.root, "_system")):
        raise NotFound(f"{ns.root} is not a memory root (no _system/ folder); "
                       f"create one with: sediment --root {ns.root} init", path=ns.root)
    return Repository(ns.root, create=ns.command == "init", progress=terminal_bar())




def _split(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


def _entry_text(e: Any) -> str:
    head = f"{e.id}  {e.path}\n{e.title}  [{e.kind}, {e.status}, value {e.value:g}]"
    if e.tags:
        head += "  #" + " #".join(e.tags)
    return head + "\n\n" + e.body.rstrip("\n")


@command("init", "create a memory root (folders, policy.yaml, .gitignore)",
         arg("--git", action="store_true", help="also make the root a git repository"))
def cmd_init(ns: argparse.Namespace) -> tuple[Any, str]:
    repo = _repo(ns)
    out = {"root": str(repo.root), "git": False}
    if ns.git:
        from .gitutil import git_init
        out["git"] = git_init(repo.root)
    return out, f"initialised {repo.root}" + (" (git)" if out["git"] else "")


SECTION_ARGS = tuple(arg(f"--{name}", action="append", metavar="LINE",
                         help=f"a line of the '{heading}' section (repeatable)")
                     for name, heading in SECTIONS.items())
FIELD_ARG = arg("--field", dest="fields", action="append", metavar="KEY=VALUE",
                help="another frontmatter field; VALUE is read as YAML (42, true, [a, b]) (repeatable)")


def _fields(ns: argparse.Namespace) -> dict[str, Any]:
    """--evidence/--hesitation/… and --field KEY=VALUE as keyword fields."""
    import yaml
    out: dict[str, Any] = {k: getattr(ns, k) for k in SECTIONS if getattr(ns, k, None)}
    for item in getattr(ns, "fields", None) or ():
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidInput(f"--field takes KEY=VALUE, not {item!r}")
        if key in vars(ns) or key in ("text", "now", "expected"):  # a flag of its own: use it
            raise InvalidInput(f"--field {key}=… names an option of this command: use --{key} instead")
        try:
            out[key] = yaml.safe_load(value) if value.strip() else ""
        except Exception:  # noqa: BLE001 - any YAML a person types: kept as the text it is
            out[key] = value
    return out


def _text(value: str | None) -> str:
    return sys.stdin.read() if value is None or value == "-" else value


def _entry_out(e: Any, verb: str) -> tuple[Any, str]:
    text = f"{verb} {e.id}  {e.path}"
    return e.to_dict(), "\n".join([text, *(f"warning: {w}" for w in e.warnings)])


@command("add", "write a new memory; the text comes from the argument or stdin",
         arg("text", nargs="?", help="markdown body; '-' or nothing reads stdin"),
         arg("--title"), arg("--room"), arg("--tag", "--tags", dest="tags", action="append",
                                            help="a tag (repeatable, or comma-separated)"),
         arg("--kind"), arg("--value", type=float), arg("--source"),
         arg("--link", "--links", dest="links", action="append", help="name of a linked memory (repeatable)"),
         arg("--layer", default="shallow"), arg("--event"),
         arg("--now", help="creation time, ISO 8601 with an offset (importing older memories)"),
         *SECTION_ARGS, FIELD_ARG)
def cmd_add(ns: argparse.Namespace) -> tuple[Any, str]:
    extra = {"event": ns.event} if ns.event else {}
    e = _repo(ns).add(_text(ns.text), title=ns.title, room=ns.room, tags=_split(ns.tags), kind=ns.kind,
                      value=ns.value, source=ns.source, links=_split(ns.links), layer=ns.layer,
                      now=ns.now, **extra, **_fields(ns))
    return _entry_out(e, "added")


@command("update", "change a memory in place; --expected refuses a stale edit",
         arg("id"), arg("--expected", help="the version you read (sediment get ID --json): Conflict if it changed"),
         arg("--text", help="new main text; '-' reads stdin (sections stay unless given)"),
         arg("--title"), arg("--tag", "--tags", dest="tags", action="append", help="replace the tags"),
         arg("--kind"), arg("--value", type=float), arg("--source"),
         arg("--link", "--links", dest="links", action="append", help="replace the links"),
         arg("--unset", action="append", metavar="KEY", help="remove a frontmatter field (repeatable)"),
         *SECTION_ARGS, FIELD_ARG)
def cmd_update(ns: argparse.Namespace) -> tuple[Any, str]:
    changes: dict[str, Any] = _fields(ns)
    if ns.text is not None:
        changes["text"] = _text(ns.text)
    for key in ("title", "kind", "value", "source"):
        if getattr(ns, key) is not None:
            changes[key] = getattr(ns, key)
    if ns.tags is not None:
        changes["tags"] = _split(ns.tags)
    if ns.links is not None:
        changes["links"] = _split(ns.links)
    changes.update({k: None for k in ns.unset or ()})
    e = _repo(ns).update(ns.id, expected=ns.expected, **changes)
    return _entry_out(e, "updated")


@command("get", "show one memory by id or name", arg("id"))
def cmd_get(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _repo(ns).get(ns.id)
    return e.to_dict(), _entry_text(e)


def _filters(p_args: tuple[Arg, ...] = ()) -> tuple[Arg, ...]:
    return (arg("--layer", action="append"), arg("--room"),
            arg("--tag", "--tags", dest="tags", action="append", help="a tag (repeatable): all are required"),
            arg("--kind", action="append"), *p_args)


@command("list", "list memories, filtered by layer, room, tag, kind, status, time",
         *_filters(), arg("--status"), arg("--since"), arg("--until"),
         arg("--sort", default="path", choices=["path", "updated", "created"],
             help="path, or updated / created newest first"),
         arg("--limit", type=int))
def cmd_list(ns: argparse.Namespace) -> tuple[Any, str]:
    entries = _repo(ns).list(layer=ns.layer, room=ns.room, tags=_split(ns.tags) or None, kind=ns.kind,
                             status=ns.status, since=ns.since, until=ns.until, sort=ns.sort, limit=ns.limit)
    text = "\n".join(f"{e.id}  {e.path}  {e.title}" for e in entries) or "(no memories)"
    return [e.to_dict() for e in entries], text


@command("search", "ranked search (jieba words + CJK bigrams)",
         arg("query"), arg("--limit", type=int, default=10), *_filters(),
         arg("--since"), arg("--until"), arg("--archive", action="store_true",
                                             help="also search archive/"),
         arg("--superseded", action="store_true", help="also superseded memories (each names its successor)"),
         arg("--record", action=argparse.BooleanOptionalAction, default=False,
             help="count the hits as recalled, as an agent's search does (recalls feed "
                  "promotion); default --no-record: a person looking something up "
                  "promotes nothing"))
def cmd_search(ns: argparse.Namespace) -> tuple[Any, str]:
    hits = _repo(ns).search(ns.query, limit=ns.limit, layer=ns.layer, room=ns.room,
                            tags=_split(ns.tags) or None, kind=ns.kind, since=ns.since,
                            until=ns.until, include_archive=ns.archive, include_superseded=ns.superseded,
                            record=ns.record)
    lines = [f"{h.score:.4f}  {h.entry.path}\n        {h.entry.title}\n        {h.snippet}" for h in hits]
    return [h.to_dict() for h in hits], "\n".join(lines) or "(no match)"


@command("move", "move a memory to another layer (and/or room)",
         arg("id"), arg("layer"), arg("--room"), arg("--reason"))
def cmd_move(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _repo(ns).move(ns.id, ns.layer, room=ns.room, reason=ns.reason)
    return e.to_dict(), f"moved to {e.path}"


@command("archive", "move a memory to archive/ with a reason", arg("id"), arg("--reason", required=True))
def cmd_archive(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _repo(ns).archive(ns.id, reason=ns.reason)
    return e.to_dict(), f"archived to {e.path}"


@command("purge", "retire a memory for good (kept in archive/, marked purged); needs --confirm",
         arg("id"), arg("--confirm", action="store_true"), arg("--reason", default="purged"),
         arg("--erase", action="store_true", help="leave only a tombstone: id, name, reason, dates (a secret "
                                                  "written by mistake; README, 'Erasing a memory')"))
def cmd_purge(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _repo(ns).purge(ns.id, confirm=ns.confirm, reason=ns.reason, erase=ns.erase)
    return e.to_dict(), f"purged; kept at {e.path}"


@command("check", "report malformed files, duplicates, unfinished operations; exit 1 on errors",
         arg("--fix", action="store_true", help="run recover first, and adopt notes in layer folders that "
                                                "only lack an id or times (no other file is touched)"))
def cmd_check(ns: argparse.Namespace) -> tuple[Any, str]:
    problems = _repo(ns).check(fix=ns.fix)
    text = "\n".join(str(p) for p in problems) or "no problems"
    ns.exit_code = 1 if any(p.severity == "error" for p in problems) else 0
    return [p.to_dict() for p in problems], text


@command("recover", "finish or undo interrupted operations, remove temp files")
def cmd_recover(ns: argparse.Namespace) -> tuple[Any, str]:
    rep = _repo(ns).recover()
    return rep, ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in rep.items())


@command("stats", "counts by layer, kind and room; recalls, confirmations, refutations; "
                  "the last metabolize report")
def cmd_stats(ns: argparse.Namespace) -> tuple[Any, str]:
    repo = _repo(ns)
    s = dict(repo.stats())
    usage = repo.usage.load().values()  # what this machine recorded, of any memory
    s["usage"] = {"recalls": sum(u.recalls for u in usage),
                  "confirmations": sum(u.confirms for u in usage),
                  "refutations": sum(u.refutes for u in usage)}
    s["last_metabolize"] = _last_report(repo.root)
    return s, _table(s)


def _last_report(root: Path) -> dict[str, str] | None:
    """The metabolize report written last (by its file time), or None."""
    import datetime as dt
    found = []
    for p in (root / "_system" / "reports").glob("metabolize-*.md"):
        try:
            found.append((p.stat().st_mtime, p.name))
        except OSError:
            continue
    if not found:
        return None
    mtime, name = max(found)
    when = dt.datetime.fromtimestamp(mtime).astimezone().isoformat(timespec="seconds")
    return {"time": when, "report": f"_system/reports/{name}"}


def _table(data: dict[str, Any]) -> str:
    """Two aligned columns; a mapping is a section of indented rows."""
    rows: list[tuple[str, str]] = []
    for key, value in data.items():
        label = key.replace("_", " ")
        if isinstance(value, dict) and key != "last_metabolize":
            rows.append((label, "" if value else "(none)"))
            rows += [(f"  {k}", _cell(v)) for k, v in value.items()]
        elif key == "last_metabolize":
            rows.append((label, f"{value['time']}  {value['report']}" if value else "never"))
        else:
            rows.append((label, _cell(value)))
    width = max(len(k) for k, _ in rows) + 2
    return "\n".join(f"{k:<{width}}{v}".rstrip() for k, v in rows)


def _cell(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items()) or "-"
    return "-" if value is None else str(value)


@command("metabolize", "plan promotions and decay (dry run); --apply carries the plan out",
         arg("--apply", action="store_true", help="apply the plan"),
         arg("--confirm", action="store_true", help="allow the plan to archive (policy confirm_destructive)"),
         arg("--now", help="ISO 8601 time to plan for (default: now)"))
def cmd_metabolize(ns: argparse.Namespace) -> tuple[Any, str]:
    p = _repo(ns).metabolize(dry_run=not ns.apply, confirm=ns.confirm, now=ns.now)
    return p.to_dict(), str(p) + (f"\nreport: {p.report}" if p.report else "")


@command("touch", "record that a memory proved right (confirm) or wrong (refute)",
         arg("id"), arg("outcome", choices=["confirm", "refute"]),
         arg("--confirm", action="store_true", help="with refute: archive at once"),
         arg("--now", help="when it happened, ISO 8601 with an offset"))
def cmd_touch(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _repo(ns).touch(ns.id, ns.outcome, confirm=ns.confirm, now=ns.now)
    return e.to_dict(), f"{ns.outcome} recorded for {e.id}  {e.path}"


@command("supersede", "retire OLD in favour of NEW (links both ways)",
         arg("old"), arg("new"), arg("--reason", default="superseded"))
def cmd_supersede(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _repo(ns).supersede(ns.old, ns.new, reason=ns.reason)
    return e.to_dict(), f"{e.path} is superseded by {ns.new}"


@command("consolidate", "write one memory from inbox fragments and retire them",
         arg("text"), arg("--fragment", dest="fragments", action="append", default=[],
                          help="id of a fragment it covers (repeatable)"),
         arg("--kind", required=True), arg("--title"), arg("--room"),
         arg("--tag", dest="tags", action="append"), *SECTION_ARGS, FIELD_ARG)
def cmd_consolidate(ns: argparse.Namespace) -> tuple[Any, str]:
    extra = {k: v for k, v in (("title", ns.title), ("room", ns.room)) if v is not None}
    e = _repo(ns).consolidate(_split(ns.fragments), ns.text, kind=ns.kind, tags=_split(ns.tags),
                              **extra, **_fields(ns))
    return e.to_dict(), f"added {e.id}  {e.path}; covers {', '.join(e.meta.get('supersedes') or []) or 'nothing'}"


@command("strength", "explain a memory's strength (value x decay)", arg("id"), arg("--now"))
def cmd_strength(ns: argparse.Namespace) -> tuple[Any, str]:
    from dataclasses import asdict
    s = _repo(ns).strength(ns.id, now=ns.now)
    return asdict(s), s.explain()


@command("restore", "bring an archived or superseded memory back to active (purged: --confirm)",
         arg("id"), arg("--layer", default="shallow"), arg("--confirm", action="store_true"))
def cmd_restore(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _repo(ns).restore(ns.id, layer=ns.layer, confirm=ns.confirm)
    return e.to_dict(), f"restored to {e.path}"


@command("adopt", "make a note a person wrote (no frontmatter or no id) a memory, keeping its bytes",
         arg("path", help="relative to the root, inside a layer folder"))
def cmd_adopt(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _repo(ns).adopt(ns.path)
    return e.to_dict(), f"adopted {e.id}  {e.path}"


@command("links-to", "memories that link to this one (backlinks)", arg("id"))
def cmd_links_to(ns: argparse.Namespace) -> tuple[Any, str]:
    entries = _repo(ns).links_to(ns.id)
    text = "\n".join(f"{e.id}  {e.path}  {e.title}" for e in entries) or "(no backlinks)"
    return [e.to_dict() for e in entries], text


@command("watch", "keep the index current while files change; runs until interrupted",
         arg("--verbose", "-v", action="store_true", help="print a line per change"),
         arg("--seconds", type=float, help="stop after this long (default: until Ctrl-C)"))
def cmd_watch(ns: argparse.Namespace) -> tuple[Any, str]:
    import threading
    import time
    repo = _repo(ns)
    count = {"changes": 0}

    reader_gone = threading.Event()

    def on_change(what: str, path: str) -> None:  # runs in the watcher's thread
        count["changes"] += 1
        if ns.verbose and not reader_gone.is_set():
            try:
                print(f"{what}: {path}", flush=True)
            except BrokenPipeError:  # `watch -v | head`: stop the loop, quietly
                reader_gone.set()

    deadline = None if ns.seconds is None else time.monotonic() + ns.seconds
    if not ns.json:
        print(f"watching {repo.root} (Ctrl-C to stop)", flush=True)
    try:
        with repo.watch(on_change):
            while (deadline is None or time.monotonic() < deadline) and not reader_gone.is_set():
                time.sleep(0.2)
    except KeyboardInterrupt:
        pass
    if reader_gone.is_set():
        raise BrokenPipeError("the reader of stdout went away")
    return count, f"stopped after {count['changes']} change(s)"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sediment", description="Long-term memory in markdown files.")
    p.add_argument("--root", default=os.environ.get("SEDIMENT_ROOT") or "./memory_root",
                   help="memory root (default: $SEDIMENT_ROOT, else ./memory_root)")
    p.add_argument("--json", action="store_true", help="print JSON")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, cmd in COMMANDS.items():
        sp = sub.add_parser(name, help=cmd.help, description=cmd.help)
        # --json/--root are accepted after the subcommand too
        sp.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
        sp.add_argument("--root", default=argparse.SUPPRESS, help="memory root")
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
    return ns.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
