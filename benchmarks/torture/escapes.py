"""Path-escape torture: every way we can think of to make the library read or
write outside its root, through its verbs and through hand-made files.

    python benchmarks/torture/escapes.py            # every attempt
    python benchmarks/torture/escapes.py --smoke    # CI: one of each family
    python benchmarks/torture/escapes.py --list

Each attempt gets a fresh temp folder holding ``root/`` (a memory root with one
good note in ``shallow/topic/``), ``outside/`` (a valid note with the marker
word OUTSIDESECRET, a folder with another, a temp-looking file, a journal-,
policy- and log-like file) and ``cwd/`` (the process's working folder during
the attempt, so a path resolved against the working folder shows up too).

Families: rooms (``..``, ``../x``, an absolute path, ``a/../../b``, ``C:\\x``,
``\\\\server\\share``, NUL, …) through ``add`` and ``move``; layers through
``add`` and ``move``; titles; ids and names that look like paths through get,
update, move, archive, purge, touch, strength, supersede and consolidate; search
and list filters; path-like field values (source, links, tags, event); and
hand-made files: symlinked layer folders, symlinked room folders (also as the
*target* of a move, an archive or metabolism), a symlinked ``_system/`` and
symlinks for ``_system/cache``, ``usage``, ``reports``, ``journal.log``,
``policy.yaml``, ``lock``, the usage logs and the index snapshot (to existing
files and dangling), a note replaced by a symlink after open, a note that is a
hard link to a file outside, journal records whose src/dst/old/new point
outside, path-like frontmatter, and ``[[../..]]`` links. (An absolute path is
always one inside the attempt's own ``outside/`` folder, so a library that
followed it would write there, not anywhere on the machine.)

After the attempt's own calls, every attempt also opens the root afresh,
searches for the marker word, lists, applies metabolize (ten years ahead,
``confirm=True``), checks, recovers and closes.

Asserted: nothing outside the root is created, changed or removed (a snapshot
of everything beside the root, bytes and link targets, before and after); no
call raises anything but the library's own errors (``SedimentError``); nothing
from outside is served (the marker never comes back from search, list or get).
Reported, not failed: files created inside the root but outside the layer
folders and ``_system/``. Exit status 1 when a promise is broken.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import sys
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import describe, diff_snapshots, is_own, tree_snapshot  # noqa: E402

import sediment  # noqa: E402
from sediment import Repository  # noqa: E402

MARK = "OUTSIDESECRET"
C = "created: '2026-01-01T00:00:00+08:00'\n"
FUTURE = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(days=3650)
POLICY = {"destructive_per_hour": 10 ** 6}


def note(id: str, title: str, text: str) -> bytes:
    return f"---\nid: {id}\ntitle: {title}\n{C}kind: fact\n---\n{text}\n".encode()


class Env:
    def __init__(self, base: Path, verbose: bool) -> None:
        self.base = base
        self.root = base / "root"
        self.out = base / "outside"
        self.cwd = base / "cwd"
        self.verbose = verbose
        self.outcomes: list[tuple[str, str]] = []
        self.foreign: list[str] = []
        self.leaks: list[str] = []
        for d in (self.out / "dir", self.out / "sys", self.out / "empty", self.cwd):
            d.mkdir(parents=True, exist_ok=True)
        (self.out / "secret.md").write_bytes(note("OUTSIDE-1", "outside secret", f"{MARK} granite"))
        (self.out / "dir" / "inner.md").write_bytes(note("OUTSIDE-2", "outside inner", f"{MARK} basalt"))
        (self.out / "dir" / ".inner.md.0a1b2c3d.tmp").write_bytes(b"looks like a temp file")
        (self.out / "plain.txt").write_bytes(b"plain outside bytes\n")
        (self.out / "journal.log").write_bytes(b'{"epoch": "outside"}\n')
        (self.out / "policy.yaml").write_bytes(b"confirm_destructive: true\n")
        (self.out / "events.log").write_bytes(b'{"gen": "outside"}\n')
        repo = Repository(self.root, policy=POLICY)
        self.good = repo.add("good granite note", title="good note", room="topic", kind="fact")
        self.other = repo.add("other granite fragment", title="other note", kind=None)
        repo.close()

    # --- calls

    def call(self, desc: str, fn: Callable, *a, **k):
        try:
            res = fn(*a, **k)
        except Exception as exc:  # noqa: BLE001 - classified below
            if is_own(exc):
                self.outcomes.append((desc, f"refused: {type(exc).__name__}"))
            else:
                self.outcomes.append((desc, f"FOREIGN {describe(exc)}"))
                self.foreign.append(f"{desc}: {describe(exc)} (in {common.where(exc)})"
                                    + (f"\n{traceback.format_exc()[-1200:]}" if self.verbose else ""))
            return None
        self.outcomes.append((desc, "ok" + (f" -> {res.path}" if isinstance(res, sediment.Entry) else "")))
        self.look_for_leaks(desc, res)
        return res

    def look_for_leaks(self, desc: str, res) -> None:
        items = res if isinstance(res, list) else [res]
        for x in items:
            e = getattr(x, "entry", x)
            if isinstance(e, sediment.Entry) and (MARK in e.body or e.id.startswith("OUTSIDE-")):
                self.leaks.append(f"{desc}: served {e.id} from outside ({e.path})")

    def open(self, desc: str = "open", **kw) -> Repository | None:
        return self.call(desc, Repository, self.root, policy=POLICY, **kw)

    def link(self, rel: str, target: Path, *, replace: bool = True) -> None:
        """Put a symlink at root/rel pointing to ``target`` (removing what is there)."""
        p = self.root / rel
        if replace and (p.is_symlink() or p.exists()):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink()
        p.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, p)

    def journal(self, rec: dict) -> None:
        with open(self.root / "_system" / "journal.log", "ab") as fh:
            fh.write((json.dumps(rec) + "\n").encode())


# ---------------------------------------------------------------------------
# the attempts: name -> function(env)


def verbs_with_key(key: str) -> list[tuple[str, Callable[[Env, Repository], object]]]:
    return [
        ("get", lambda env, r: r.get(key)),
        ("update", lambda env, r: r.update(key, text="changed")),
        ("move", lambda env, r: r.move(key, "sediment")),
        ("archive", lambda env, r: r.archive(key, reason="x")),
        ("purge", lambda env, r: r.purge(key, confirm=True)),
        ("touch", lambda env, r: r.touch(key, "refute", confirm=True)),
        ("strength", lambda env, r: r.strength(key)),
        ("supersede", lambda env, r: r.supersede(key, env.good.id)),
        ("consolidate", lambda env, r: r.consolidate([key], "consolidated granite", kind="fact")),
        ("contains", lambda env, r: key in r),
    ]


def build_attempts(out_hint: str = "<outside>") -> dict[str, tuple[str, Callable[[Env], None]]]:
    # name -> (family, setup or None, attempt); the "outside" snapshot is taken
    # between the two, so a setup may put links (or copies) in place
    A: dict[str, tuple[str, Callable[[Env], None] | None, Callable[[Env], None]]] = {}

    def verb_attempt(family: str, name: str, fn: Callable[[Env, Repository], object]) -> None:
        def run(env: Env) -> None:
            r = env.open()
            if r is not None:
                env.call(name, fn, env, r)
                r.close()
        A[name] = (family, None, run)

    # rooms: a callable gets the env, so absolute paths point into its outside/
    rooms: list[tuple[str, Callable[[Env], str]]] = [
        ("..", lambda e: ".."), ("../x", lambda e: "../x"), ("../../x", lambda e: "../../x"),
        ("../../../escaped", lambda e: "../../../escaped"), ("abs", lambda e: str(e.out / "abs-room")),
        ("abs-outside-itself", lambda e: str(e.out)), ("a/../../b", lambda e: "a/../../b"),
        ("a/../../../../escaped", lambda e: "a/../../../../escaped"), ("C:\\x", lambda e: "C:\\x"),
        ("C:/x", lambda e: "C:/x"), ("C:x", lambda e: "C:x"), ("\\\\server\\share", lambda e: "\\\\server\\share"),
        ("\\\\?\\C:\\x", lambda e: "\\\\?\\C:\\x"), ("..\\..\\..\\escaped", lambda e: "..\\..\\..\\escaped"),
        ("NUL in room", lambda e: "a\x00b"), ("NUL then ..", lambda e: "a\x00/../../.."),
        (".", lambda e: "."), ("./a", lambda e: "./a"), ("a/./b", lambda e: "a/./b"), ("a//b", lambda e: "a//b"),
        ("a/", lambda e: "a/"), ("a/..", lambda e: "a/.."), ("~", lambda e: "~"), ("~/x", lambda e: "~/x"),
        ("$HOME/x", lambda e: "$HOME/x"), ("newline", lambda e: "a\n../../../escaped"),
        ("file URL", lambda e: "file://" + str(e.out / "url-room")),
        ("two-dot leader", lambda e: "\u2025/x"), ("fullwidth dots", lambda e: "\uff0e\uff0e/\uff0e\uff0e/escaped"),
        ("very deep", lambda e: "/".join(["d"] * 300)),
    ]
    for label, room in rooms:
        verb_attempt("room", f"add(room={label})",
                     lambda env, r, room=room: r.add("room attempt granite", title="room attempt",
                                                     room=room(env)))
        verb_attempt("room", f"move(room={label})",
                     lambda env, r, room=room: r.move(env.good.id, "sediment", room=room(env)))
    layers: list[tuple[str, Callable[[Env], str]]] = [
        ("..", lambda e: ".."), ("../outside", lambda e: "../outside"), ("abs", lambda e: str(e.out)),
        ("shallow/../..", lambda e: "shallow/../.."), ("shallow/../../outside", lambda e: "shallow/../../outside"),
        ("archive/..", lambda e: "archive/.."), ("empty", lambda e: ""), ("_system", lambda e: "_system"),
        ("shallow/", lambda e: "shallow/"), ("SHALLOW", lambda e: "SHALLOW"),
    ]
    for label, layer in layers:
        verb_attempt("layer", f"add(layer={label})",
                     lambda env, r, layer=layer: r.add("layer attempt granite", layer=layer(env)))
        verb_attempt("layer", f"move(layer={label})",
                     lambda env, r, layer=layer: r.move(env.good.id, layer(env)))
    titles: list[tuple[str, Callable[[Env], str]]] = [
        ("../x", lambda e: "../x"), ("../../../escaped", lambda e: "../../../escaped"),
        ("abs", lambda e: str(e.out / "abs-title")), ("..\\..\\x", lambda e: "..\\..\\x"), ("a/b/c", lambda e: "a/b/c"),
        (".", lambda e: "."), ("..", lambda e: ".."), (".hidden", lambda e: ".hidden"), ("con", lambda e: "con"),
        ("long", lambda e: "x" * 2000), ("~/x", lambda e: "~/x"), ("_system/policy", lambda e: "../../_system/policy"),
    ]
    for label, title in titles:
        verb_attempt("title", f"add(title={label})",
                     lambda env, r, title=title: r.add("title attempt granite", title=title(env)))
    keys: list[tuple[str, Callable[[Env], str]]] = [
        ("../outside/secret", lambda e: "../outside/secret"),
        ("abs note path", lambda e: str(e.out / "secret.md")),
        ("shallow/../../outside/secret.md", lambda e: "shallow/../../outside/secret.md"),
        ("[[../../outside/secret]]", lambda e: "[[../../outside/secret]]"),
        ("outside note's id", lambda e: "OUTSIDE-1"),
    ]
    for label, key in keys:
        for verb, _ in verbs_with_key("k"):
            verb_attempt("key", f"{verb}(key={label})",
                         lambda env, r, key=key, verb=verb: dict(verbs_with_key(key(env)))[verb](env, r))
    filters = [
        ("search(room=../..)", lambda env, r: r.search("granite", room="../../outside")),
        ("search(room=abs)", lambda env, r: r.search("granite", room=str(env.out))),
        ("search(layer=../outside)", lambda env, r: r.search("granite", layer="../outside")),
        ("list(room=../..)", lambda env, r: r.list(room="../../outside")),
        ("list(layer=abs)", lambda env, r: r.list(layer=str(env.out))),
        ("search(marker, archive)", lambda env, r: r.search(MARK, include_archive=True)),
    ]
    for name, fn in filters:
        verb_attempt("filter", name, fn)
    fields = [
        ("add(source=../..)", lambda env, r: r.add("field granite", source="../../../escaped")),
        ("add(links=../..)", lambda env, r: r.add("field granite", links=["../../outside/secret"])),
        ("add(links=abs)", lambda env, r: r.add("field granite", links=[str(env.out / "secret.md")])),
        ("add(tags=../..)", lambda env, r: r.add("field granite", tags=["../../../escaped"])),
        ("add(event=../..)", lambda env, r: r.add("field granite", event="../../../escaped")),
        ("add(source_links=file URL)", lambda env, r: r.add(
            "field granite", source_links=["file://" + str(env.out / "secret.md")])),
        ("update(links=../..)", lambda env, r: r.update(env.good.id, links=["../../../escaped"])),
        ("archive(reason=../..)", lambda env, r: r.archive(env.good.id, reason="../../../escaped")),
        ("consolidate(title=../..)", lambda env, r: r.consolidate(
            [env.other.id], "consolidated other granite fragment", kind="fact", title="../../../escaped")),
    ]
    for name, fn in fields:
        verb_attempt("field", name, fn)

    # --- hand-made files and folders

    def hand(name: str, setup: Callable[[Env], None], act: Callable[[Env, Repository], None] | None = None,
             *, reopen_first: bool = True) -> None:
        def run(env: Env) -> None:
            r = env.open()
            if r is not None:
                if act is not None:
                    act(env, r)
                env.call("add", r.add, "hand attempt granite", title="hand attempt", room="topic")
                env.call("search", r.search, "granite")
                r.close()
        A[name] = ("hand", setup, run)

    def every_write(env: Env, r: Repository) -> None:
        g = env.good.id
        env.call("touch", r.touch, g, "confirm")
        env.call("update", lambda: r.update(g, text="updated granite"))
        env.call("move", r.move, g, "sediment")
        env.call("archive", r.archive, g, reason="x")
        env.call("purge", r.purge, g, confirm=True)
        env.call("metabolize", r.metabolize, dry_run=False, now=FUTURE, confirm=True)
        env.call("recover", r.recover)
        env.call("check", r.check, fix=True)

    for layer in sediment.LAYERS:
        hand(f"symlinked layer {layer}/ -> outside", lambda env, layer=layer: env.link(layer, env.out / "dir"),
             every_write)
    hand("symlinked room shallow/topic2 -> outside",
         lambda env: env.link("shallow/topic2", env.out / "dir"),
         lambda env, r: env.call("add(room=topic2)", r.add, "x granite", room="topic2"))
    for layer in ("sediment", "bedrock", "archive"):
        hand(f"symlinked target room {layer}/topic -> outside",
             lambda env, layer=layer: env.link(f"{layer}/topic", env.out / "dir"), every_write)
    hand("symlinked room holding a temp-looking file (recover sweeps)",
         lambda env: env.link("shallow/sweep", env.out / "dir"), lambda env, r: env.call("recover", r.recover))
    hand("symlinked _system/ -> outside (empty)",
         lambda env: (shutil.rmtree(env.root / "_system"), env.link("_system", env.out / "sys")), every_write)
    hand("symlinked _system/ -> outside (a copy)",
         lambda env: (shutil.copytree(env.root / "_system", env.out / "sys", dirs_exist_ok=True),
                      shutil.rmtree(env.root / "_system"), env.link("_system", env.out / "sys")), every_write)
    for sub in ("cache", "usage", "reports"):
        hand(f"symlinked _system/{sub} -> outside", lambda env, sub=sub: env.link(f"_system/{sub}", env.out / "empty"),
             every_write)
    for f, target in (("journal.log", "journal.log"), ("policy.yaml", "policy.yaml"), ("lock", "plain.txt"),
                      ("usage/events.log", "events.log"), ("usage/destructive.log", "plain.txt"),
                      ("usage/summary.json", "plain.txt"), ("usage/lock", "plain.txt"),
                      ("cache/index.bin", "plain.txt")):
        hand(f"_system/{f} -> outside file", lambda env, f=f, t=target: env.link(f"_system/{f}", env.out / t),
             every_write)
        hand(f"_system/{f} -> dangling outside",
             lambda env, f=f: env.link(f"_system/{f}", env.out / f"new-{f.replace('/', '-')}"), every_write)
    hand(".gitignore -> dangling outside", lambda env: env.link(".gitignore", env.out / "new-gitignore"), every_write)

    def replaced_after_open(env: Env) -> None:
        r = env.open()
        if r is None:
            return
        p = env.root / env.good.path
        p.unlink()
        os.symlink(env.out / "secret.md", p)
        every_write(env, r)
        r.close()
    A["note replaced by a symlink after open"] = ("hand", None, replaced_after_open)

    # a hard link is a regular file of the root (the same inode as one outside):
    # serving it is fine, but no write may change the bytes outside (in place)
    def hardlinked_setup(env: Env) -> None:
        (env.out / "linked.md").write_bytes(note("LINKED-1", "linked", "hard-linked granite"))
        os.link(env.out / "linked.md", env.root / "bedrock" / "hardlinked.md")

    def hardlinked(env: Env) -> None:
        r = env.open()
        if r is not None:
            env.call("update", lambda: r.update("LINKED-1", text="rewritten granite"))
            env.call("move", r.move, "LINKED-1", "sediment")
            env.call("archive", r.archive, "LINKED-1", reason="x")
            env.call("touch", r.touch, "LINKED-1", "confirm")
            env.call("metabolize", r.metabolize, dry_run=False, now=FUTURE, confirm=True)
            every_write(env, r)
            r.close()
    A["note hard-linked to a file outside"] = ("hand", hardlinked_setup, hardlinked)

    def journal_attempt(name: str, rec: Callable[[Env], dict]) -> None:
        def run(env: Env) -> None:
            r = env.open()
            if r is not None:
                every_write(env, r)
                r.close()
        A[name] = ("journal", lambda env: env.journal(rec(env)), run)

    journal_attempt("journal begin: src outside (relative)", lambda env: {
        "seq": "j1", "phase": "begin", "op": "move", "id": "OUTSIDE-1", "src": "../outside/secret.md",
        "dst": "shallow/stolen.md"})
    journal_attempt("journal begin: src outside (absolute)", lambda env: {
        "seq": "j2", "phase": "begin", "op": "move", "id": "OUTSIDE-1", "src": str(env.out / "secret.md"),
        "dst": "shallow/stolen.md"})
    journal_attempt("journal begin: dst outside (absolute)", lambda env: {
        "seq": "j3", "phase": "begin", "op": "move", "id": env.good.id, "src": env.good.path,
        "dst": str(env.out / "moved.md")})
    journal_attempt("journal begin: dst outside (relative)", lambda env: {
        "seq": "j4", "phase": "begin", "op": "archive", "id": env.good.id, "src": env.good.path,
        "dst": "../outside/moved.md"})
    journal_attempt("journal begin: src via shallow/../../", lambda env: {
        "seq": "j5", "phase": "begin", "op": "move", "id": "OUTSIDE-1",
        "src": "shallow/../../outside/secret.md", "dst": "shallow/stolen.md"})
    journal_attempt("journal begin: dst == existing outside file", lambda env: {
        "seq": "j6", "phase": "begin", "op": "move", "id": env.good.id, "src": env.good.path,
        "dst": "../outside/secret.md"})
    journal_attempt("journal supersede: old/new outside", lambda env: {
        "seq": "j7", "phase": "begin", "op": "supersede", "old": "../outside/secret.md",
        "new": str(env.out / "dir" / "inner.md"), "reason": "x"})
    journal_attempt("journal consolidate: src outside", lambda env: {
        "seq": "j8", "phase": "begin", "op": "consolidate", "id": "OUTSIDE-1",
        "src": "../outside/secret.md", "dst": "archive/stolen.md"})

    def done_feed(env: Env) -> None:
        r = env.open()  # open first: the done record arrives as another process's change
        env.journal({"seq": "j9", "phase": "done", "op": "move", "pid": 1,
                     "paths": ["../outside/secret.md", str(env.out / "secret.md"),
                               "shallow/../../outside/secret.md"]})
        if r is not None:
            env.call("get after feed", r.get, env.good.id)
            env.call("search after feed", r.search, MARK)
            env.call("list after feed", r.list)
            r.close()
    A["journal done: paths outside (change feed)"] = ("journal", None, done_feed)

    def link_in_root_setup(env: Env) -> None:
        os.symlink(env.out / "secret.md", env.root / "shallow" / "link.md")
        env.journal({"seq": "j10", "phase": "begin", "op": "move", "id": "OUTSIDE-1", "src": "shallow/link.md",
                     "dst": env.good.path})

    def link_in_root(env: Env) -> None:
        r = env.open()
        if r is not None:
            every_write(env, r)
            r.close()
    A["journal begin: src is a symlink to outside"] = ("journal", link_in_root_setup, link_in_root)

    def pathy_setup(env: Env) -> None:
        (env.root / "shallow" / "pathy.md").write_bytes(
            f"---\nid: ../../outside/secret\ntitle: ../../../escaped\n{C}kind: fact\nlayer: ../../outside\n"
            f"room: {env.out}\npath: ../../../escaped.md\nname: ../../../escaped\n---\n"
            "pathy granite [[../../outside/secret]]\n".encode())

    def pathy_frontmatter(env: Env) -> None:
        r = env.open()
        if r is not None:
            key = "../../outside/secret"
            env.call("get", r.get, key)
            env.call("update", lambda: r.update(key, text="pathy granite updated"))
            env.call("move", r.move, key, "sediment")
            env.call("archive", r.archive, key, reason="x")
            every_write(env, r)
            r.close()
    A["hand note with path-like frontmatter and id"] = ("hand", pathy_setup, pathy_frontmatter)

    def wikilink_body(env: Env) -> None:
        r = env.open()
        if r is not None:
            e = env.call("add", r.add, "see [[../../outside/secret]] and [[" + str(env.out / "secret") + "]] granite",
                         links=["[[../../../escaped]]"])
            if e is not None:
                env.call("get", r.get, e.id)
                env.call("supersede", r.supersede, env.good.id, e.id)
            r.close()
    A["wikilinks that look like paths"] = ("field", None, wikilink_body)
    return A


SMOKE_FAMILIES_EACH = 4


def run_attempt(name: str, setup, fn: Callable[[Env], None], verbose: bool) -> dict:
    with common.temp_dir("esc") as base:
        env = Env(base, verbose)
        if setup is not None:
            setup(env)
        before_out = tree_snapshot(base, exclude=(env.root,))
        before_root = set(tree_snapshot(env.root))
        old_cwd = os.getcwd()
        os.chdir(env.cwd)
        try:
            fn(env)
            # the same root afterwards: open, read, metabolize, check, recover
            r = env.open("reopen")
            if r is not None:
                env.call("search marker", r.search, MARK, include_archive=True)
                env.call("list", r.list)
                env.call("get outside id", r.get, "OUTSIDE-1")
                env.call("metabolize apply", r.metabolize, dry_run=False, now=FUTURE, confirm=True)
                env.call("check", r.check)
                env.call("recover", r.recover)
                env.call("close", r.close)
        except Exception as exc:  # noqa: BLE001 - the harness's own setup failing
            env.foreign.append(f"harness: {describe(exc)}\n{traceback.format_exc()[-1200:]}")
        finally:
            os.chdir(old_cwd)
        escapes = diff_snapshots(before_out, tree_snapshot(base, exclude=(env.root,)))
        strays = []
        for rel in sorted(set(tree_snapshot(env.root)) - before_root):
            top = rel.split(os.sep)[0]
            if top not in (*sediment.LAYERS, "_system", ".gitignore", "."):
                strays.append(rel)
        return {"name": name, "escapes": escapes, "foreign": env.foreign, "leaks": env.leaks,
                "strays": strays, "outcomes": env.outcomes}


def main() -> int:
    p = common.parser(__doc__)
    p.add_argument("--only", help="attempts whose name contains this text")
    p.add_argument("--list", action="store_true", help="list the attempts and exit")
    args = p.parse_args()
    attempts = build_attempts()
    if args.list:
        for name, (family, _, _) in attempts.items():
            print(f"{family:8} {name}")
        return 0
    chosen = list(attempts.items())
    if args.only:
        chosen = [(n, a) for n, a in chosen if args.only in n]
    elif args.smoke:
        seen: Counter = Counter()
        picked = []
        for n, (family, setup, fn) in chosen:
            # every hand-made and journal attempt (they find the real escapes), a few of each other family
            if family in ("hand", "journal") or seen[family] < SMOKE_FAMILIES_EACH:
                picked.append((n, (family, setup, fn)))
                seen[family] += 1
        chosen = picked
    common.quiet_library_log(args.verbose)
    print(f"escapes.py: {len(chosen)} attempts")
    started = time.monotonic()
    common.warm_up()
    results = []
    broken: list = []
    for name, (family, setup, fn) in chosen:
        res = run_attempt(name, setup, fn, args.verbose)
        res["family"] = family
        results.append(res)
        flags = []
        if res["escapes"]:
            flags.append(f"ESCAPE {res['escapes'][:3]}")
            broken.append(("escapes", f"{name}: {', '.join(res['escapes'][:4])}"
                                      + (f" (+{len(res['escapes']) - 4})" if len(res["escapes"]) > 4 else "")))
        if res["foreign"]:
            flags.append(f"FOREIGN ERROR {res['foreign'][0].splitlines()[0]}")
            broken += [("non-sediment errors", f"{name}: {x}") for x in res["foreign"]]
        if res["leaks"]:
            flags.append(f"LEAK {res['leaks'][:2]}")
            broken += [("outside content served", f"{name}: {x}") for x in res["leaks"]]
        if res["strays"]:
            flags.append(f"(inside the root, outside the layers: {res['strays'][:3]})")
        if flags or args.verbose:
            print(f"  {family:8} {name}: {'; '.join(flags) or 'ok'}")
            if args.verbose:
                for desc, outcome in res["outcomes"]:
                    print(f"      {desc}: {outcome}")
    counts = Counter()
    for r in results:
        counts["attempts"] += 1
        counts["escapes"] += bool(r["escapes"])
        counts["non-sediment errors"] += bool(r["foreign"])
        counts["outside content served"] += bool(r["leaks"])
        counts["strays inside the root"] += bool(r["strays"])
        counts["calls"] += len(r["outcomes"])
        counts["calls refused with the library's error"] += sum(1 for _, o in r["outcomes"] if o.startswith("refused"))
    fams = Counter(r["family"] for r in results)
    common.summary("escapes.py", {
        "attempts": counts["attempts"],
        "  by family": ", ".join(f"{k} {v}" for k, v in sorted(fams.items())),
        "calls made": counts["calls"],
        "calls refused (own errors)": counts["calls refused with the library's error"],
        "escapes": counts["escapes"],
        "non-sediment errors": counts["non-sediment errors"],
        "outside content served": counts["outside content served"],
        "strays inside the root (reported only)": counts["strays inside the root"],
        "seconds": f"{time.monotonic() - started:.0f}",
    })
    return common.finish(broken)


if __name__ == "__main__":
    sys.exit(main())
