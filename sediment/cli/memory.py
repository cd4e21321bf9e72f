"""The commands of the core verbs: one per ``Repository`` verb of reading,
writing, the lifecycle and health (``init`` and ``watch`` too)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .kit import (ENTITY_ARG, FIELD_ARG, SECTION_ARGS, SINCE_HELP, TIME_HELP, arg, command, entry_out, entry_text,
                  entity_args, field_args, filter_args, open_root, root_path, split_values, text_arg)

if TYPE_CHECKING:
    from ..repository import Repository


def _open(ns: argparse.Namespace) -> Repository:
    from ..repository import Repository  # when a command runs, not at --help
    return open_root(Repository, ns)


@command("init", "create a memory root (folders, policy.yaml, .gitignore)",
         arg("--git", action="store_true", help="also make the root a git repository"))
def cmd_init(ns: argparse.Namespace) -> tuple[Any, str]:
    repo = _open(ns)
    out = {"root": str(repo.root), "git": False, "reference": repo.stats()["reference"]}
    if ns.git:
        from ..sync.git import git_init
        out["git"] = git_init(repo.root)
    yours = f"; {out['reference']} note(s) of yours indexed in place" if out["reference"] else ""
    return out, f"initialised {repo.root}" + (" (git)" if out["git"] else "") + yours


@command("add", "write a new memory; the text comes from the argument or stdin",
         arg("text", nargs="?", help="markdown body; '-' or nothing reads stdin"),
         arg("--title"), arg("--room"), arg("--tag", "--tags", dest="tags", action="append",
                                            help="a tag (repeatable, or comma-separated)"),
         arg("--kind"), arg("--value", type=float), arg("--source"),
         arg("--link", "--links", dest="links", action="append", help="name of a linked memory (repeatable)"),
         arg("--layer", default="shallow"), arg("--event"),
         arg("--now", help=f"creation time, {TIME_HELP} (importing older memories)"),
         ENTITY_ARG, *SECTION_ARGS, FIELD_ARG)
def cmd_add(ns: argparse.Namespace) -> tuple[Any, str]:
    extra = {"event": ns.event} if ns.event else {}
    e = _open(ns).add(text_arg(ns.text), title=ns.title, room=ns.room, tags=split_values(ns.tags), kind=ns.kind,
                  value=ns.value, source=ns.source, links=split_values(ns.links), layer=ns.layer,
                  now=ns.now, entities=entity_args(ns.entities), **extra, **field_args(ns))
    return entry_out(e, "added")


@command("update", "change a memory in place; --expected refuses a stale edit",
         arg("id"), arg("--expected", help="the version you read (sediment get ID --json): Conflict if it changed"),
         arg("--text", help="new main text; '-' reads stdin (sections stay unless given)"),
         arg("--title"),
         arg("--tags", dest="tags", action="append",
             help="replace the tags with these (comma-separated or repeated; --tags '' removes them all)"),
         arg("--add-tag", "--tag", dest="add_tags", action="append", help="add a tag, keeping the others (repeatable)"),
         arg("--remove-tag", dest="remove_tags", action="append", help="remove a tag (repeatable)"),
         arg("--kind"), arg("--value", type=float), arg("--source"),
         arg("--link", "--links", dest="links", action="append", help="replace the links"),
         arg("--unset", action="append", metavar="KEY", help="remove a frontmatter field (repeatable)"),
         *SECTION_ARGS, FIELD_ARG)
def cmd_update(ns: argparse.Namespace) -> tuple[Any, str]:
    changes: dict[str, Any] = field_args(ns)
    if ns.text is not None:
        changes["text"] = text_arg(ns.text)
    for key in ("title", "kind", "value", "source"):
        if getattr(ns, key) is not None:
            changes[key] = getattr(ns, key)
    if ns.tags is not None:
        changes["tags"] = split_values(ns.tags)
    for key in ("add_tags", "remove_tags"):
        if getattr(ns, key):
            changes[key] = split_values(getattr(ns, key))
    if ns.links is not None:
        changes["links"] = split_values(ns.links)
    changes.update({k: None for k in ns.unset or ()})
    e = _open(ns).update(ns.id, expected=ns.expected, **changes)
    return entry_out(e, "updated")


@command("get", "show one memory by id or name", arg("id"))
def cmd_get(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _open(ns).get(ns.id)
    return e.to_dict(), entry_text(e)


@command("list", "list memories, filtered by layer, room, tag, kind, status, time",
         *filter_args(), arg("--status"), arg("--since", help=f"updated at or after: {SINCE_HELP}"),
         arg("--until", help=f"updated at or before: {SINCE_HELP}"),
         arg("--sort", default="path", choices=["path", "updated", "created"],
             help="path, or updated / created newest first"),
         arg("--limit", type=int))
def cmd_list(ns: argparse.Namespace) -> tuple[Any, str]:
    entries = _open(ns).list(layer=ns.layer, room=ns.room, tags=split_values(ns.tags) or None, kind=ns.kind,
                         status=ns.status, since=ns.since, until=ns.until, sort=ns.sort, limit=ns.limit,
                         entity=ns.entity)
    text = "\n".join(f"{e.id}  {e.path}  {e.title}" for e in entries) or "(no memories)"
    return [e.to_dict() for e in entries], text


@command("search", "ranked search (jieba words + CJK bigrams)",
         arg("query"), arg("--limit", type=int, default=10), *filter_args(),
         arg("--since", help=f"updated at or after: {SINCE_HELP}"),
         arg("--until", help=f"updated at or before: {SINCE_HELP}"), arg("--archive", action="store_true",
                                             help="also search archive/"),
         arg("--superseded", action="store_true", help="also superseded memories (each names its successor)"),
         arg("--record", action=argparse.BooleanOptionalAction, default=False,
             help="count the hits as recalled, as an agent's search does (recalls feed "
                  "promotion); default --no-record: a person looking something up "
                  "promotes nothing"),
         arg("--explain", action="store_true",
             help="show why each memory came up: its rank in each lane and the expansion terms"))
def cmd_search(ns: argparse.Namespace) -> tuple[Any, str]:
    repo = _open(ns)
    if repo.semantic is not None:  # one search, then the process ends: no use loading in the background
        repo.semantic.prepare()
    hits = repo.search(ns.query, limit=ns.limit, layer=ns.layer, room=ns.room,
                            tags=split_values(ns.tags) or None, kind=ns.kind, since=ns.since,
                            until=ns.until, include_archive=ns.archive, include_superseded=ns.superseded,
                            record=ns.record, explain=ns.explain, entity=ns.entity)
    # (a shared root's hit as label:path, which get takes too)
    lines = [f"{h.score:.4f}  {h.root + ':' if h.root else ''}{h.entry.path}\n        {h.entry.title}\n"
             f"        {h.snippet}" for h in hits]
    if ns.explain:
        lines = [line + "\n" + _why(h.explain or {}) for line, h in zip(lines, hits)]
        if hits and hits[0].explain and hits[0].explain["expansion"]:
            lines.append("expansion: " + ", ".join(f"{t} {w:g}" for t, w in hits[0].explain["expansion"].items()))
    return [h.to_dict() for h in hits], "\n".join(lines) or "(no match)"


def _why(explain: dict[str, Any]) -> str:
    ranks = "  ".join(f"{lane} #{r}" for lane, r in explain.get("lanes", {}).items())
    out = f"        lanes: {ranks}"
    if explain.get("terms"):
        out += "\n        terms: " + ", ".join(explain["terms"])
    if explain.get("expansion_matched"):
        out += "\n        via expansion: " + ", ".join(explain["expansion_matched"])
    return out


@command("move", "move a memory to another layer (and/or room)",
         arg("id"), arg("layer"), arg("--room"), arg("--reason"))
def cmd_move(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _open(ns).move(ns.id, ns.layer, room=ns.room, reason=ns.reason)
    return e.to_dict(), f"moved to {e.path}"


@command("archive", "move a memory to archive/ with a reason", arg("id"), arg("--reason", required=True))
def cmd_archive(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _open(ns).archive(ns.id, reason=ns.reason)
    return e.to_dict(), f"archived to {e.path}"


@command("purge", "retire a memory for good (kept in archive/, marked purged); needs --confirm",
         arg("id"), arg("--confirm", action="store_true"), arg("--reason", default="purged"),
         arg("--erase", action="store_true", help="leave only a tombstone: id, name, reason, dates (a secret "
                                                  "written by mistake; README, 'Erasing a memory')"))
def cmd_purge(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _open(ns).purge(ns.id, confirm=ns.confirm, reason=ns.reason, erase=ns.erase)
    return e.to_dict(), f"purged; kept at {e.path}"


@command("check", "report malformed files, duplicates, unfinished operations; exit 1 on errors",
         arg("--fix", action="store_true", help="run recover first, and adopt notes in layer folders that "
                                                "only lack an id or times (no other file is touched)"))
def cmd_check(ns: argparse.Namespace) -> tuple[Any, str]:
    problems = _open(ns).check(fix=ns.fix)
    text = "\n".join(str(p) for p in problems) or "no problems"
    ns.exit_code = 1 if any(p.severity == "error" for p in problems) else 0
    return [p.to_dict() for p in problems], text


@command("recover", "finish or undo interrupted operations, remove temp files")
def cmd_recover(ns: argparse.Namespace) -> tuple[Any, str]:
    rep = _open(ns).recover()
    return rep, ", ".join(f"{k.replace('_', ' ')}: {v}" for k, v in rep.items())


@command("stats", "counts by layer, kind and room; recalls, confirmations, refutations; "
                  "the last metabolize report")
def cmd_stats(ns: argparse.Namespace) -> tuple[Any, str]:
    repo = _open(ns)
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
         arg("--now", help=f"the time to plan for, {TIME_HELP} (default: now)"))
def cmd_metabolize(ns: argparse.Namespace) -> tuple[Any, str]:
    p = _open(ns).metabolize(dry_run=not ns.apply, confirm=ns.confirm, now=ns.now)
    return p.to_dict(), str(p) + (f"\nreport: {p.report}" if p.report else "")


@command("touch", "record that a memory proved right (confirm) or wrong (refute)",
         arg("id"), arg("outcome", choices=["confirm", "refute"]),
         arg("--confirm", action="store_true", help="with refute: archive at once"),
         arg("--now", help=f"when it happened, {TIME_HELP}"),
         arg("--request", help="a key for this call: a retry with the same key counts once"))
def cmd_touch(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _open(ns).touch(ns.id, ns.outcome, confirm=ns.confirm, now=ns.now, request=ns.request)
    return e.to_dict(), f"{ns.outcome} recorded for {e.id}  {e.path}"


@command("supersede", "retire OLD in favour of NEW (links both ways)",
         arg("old"), arg("new"), arg("--reason", default="superseded"))
def cmd_supersede(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _open(ns).supersede(ns.old, ns.new, reason=ns.reason)
    return e.to_dict(), f"{e.path} is superseded by {ns.new}"


@command("consolidate", "write one memory from inbox fragments and retire them",
         arg("text"), arg("--fragment", dest="fragments", action="append", default=[],
                          help="id of a fragment it covers (repeatable)"),
         arg("--kind", required=True), arg("--title"), arg("--room"),
         arg("--tag", dest="tags", action="append"), *SECTION_ARGS, FIELD_ARG)
def cmd_consolidate(ns: argparse.Namespace) -> tuple[Any, str]:
    extra = {k: v for k, v in (("title", ns.title), ("room", ns.room)) if v is not None}
    e = _open(ns).consolidate(split_values(ns.fragments), ns.text, kind=ns.kind, tags=split_values(ns.tags),
                          **extra, **field_args(ns))
    return e.to_dict(), f"added {e.id}  {e.path}; covers {', '.join(e.meta.get('supersedes') or []) or 'nothing'}"


@command("strength", "explain a memory's strength (value x decay)", arg("id"), arg("--now", help=TIME_HELP))
def cmd_strength(ns: argparse.Namespace) -> tuple[Any, str]:
    s = _open(ns).strength(ns.id, now=ns.now)
    return s.to_dict(), s.explain()


@command("restore", "bring an archived or superseded memory back to active (purged: --confirm)",
         arg("id"), arg("--layer", default="shallow"), arg("--confirm", action="store_true"))
def cmd_restore(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _open(ns).restore(ns.id, layer=ns.layer, confirm=ns.confirm)
    return e.to_dict(), f"restored to {e.path}"


@command("adopt", "make a note a person wrote (no frontmatter or no id) a memory, keeping its bytes",
         arg("path", help="the note's file (in a layer folder of the root)"),
         arg("--kind", help="the kind of a note that declares none (default: fact); a note keeps its own"))
def cmd_adopt(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _open(ns).adopt(root_path(ns, ns.path), kind=ns.kind)
    return entry_out(e, "adopted")


@command("links-to", "memories that link to this one (backlinks)", arg("id"))
def cmd_links_to(ns: argparse.Namespace) -> tuple[Any, str]:
    entries = _open(ns).links_to(ns.id)
    text = "\n".join(f"{e.id}  {e.path}  {e.title}" for e in entries) or "(no backlinks)"
    return [e.to_dict() for e in entries], text


@command("recalled", "count memories as recalled: what an agent was shown (a search's hits count only "
                     "with search --record)",
         arg("ids", nargs="+", metavar="ID", help="a memory's id or name (repeatable)"))
def cmd_recalled(ns: argparse.Namespace) -> tuple[Any, str]:
    ids = split_values(ns.ids)
    _open(ns).recalled(ids)
    return {"recalled": ids}, f"recalled: {', '.join(ids)}"


@command("locate", "the memory at a path, or where it went (by its file name; by --memory-path)",
         arg("path", help="where the note's file is or was (in the root)"),
         arg("--memory-path", help="the path the memory tool created it at (its memory_path field)"))
def cmd_locate(ns: argparse.Namespace) -> tuple[Any, str]:
    e = _open(ns).locate(root_path(ns, ns.path), memory_path=ns.memory_path)
    return e.to_dict(), f"{e.id}  {e.path}  {e.title}"


@command("markdown", "a memory's file as it is on disk (frontmatter and all)", arg("id"))
def cmd_markdown(ns: argparse.Namespace) -> tuple[Any, str]:
    text = _open(ns).markdown(ns.id)
    return {"id": ns.id, "markdown": text}, text.rstrip("\n")


@command("report", "the latest patrol report, or the map (MAP.md), as text",
         arg("kind", nargs="?", default="patrol", choices=["patrol", "map"]))
def cmd_report(ns: argparse.Namespace) -> tuple[Any, str]:
    text = _open(ns).report(ns.kind)
    return {"kind": ns.kind, "text": text}, (text.rstrip("\n") if text is not None else f"(no {ns.kind} yet)")


@command("watch", "keep the index current while files change; runs until interrupted",
         arg("--verbose", "-v", action="store_true", help="print a line per change"),
         arg("--seconds", type=float, help="stop after this long (default: until Ctrl-C)"))
def cmd_watch(ns: argparse.Namespace) -> tuple[Any, str]:
    import threading
    import time
    repo = _open(ns)
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


COMMANDS = (
    cmd_init, cmd_add, cmd_update, cmd_get, cmd_list, cmd_search, cmd_move, cmd_archive, cmd_purge,
    cmd_check, cmd_recover, cmd_stats, cmd_metabolize, cmd_touch, cmd_supersede, cmd_consolidate,
    cmd_strength, cmd_restore, cmd_adopt, cmd_links_to, cmd_recalled, cmd_locate, cmd_markdown, cmd_report,
    cmd_watch,
)
