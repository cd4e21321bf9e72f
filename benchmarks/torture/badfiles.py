"""Bad-file torture: files a person edited by hand, badly -- one kind at a time.

    python benchmarks/torture/badfiles.py             # every kind
    python benchmarks/torture/badfiles.py --smoke     # CI: a representative dozen
    python benchmarks/torture/badfiles.py --only fifo,date-property -v

For each kind a fresh root gets three good notes (one each in shallow/,
sediment/<room>/ and bedrock/), then:

1. **watch**: the root is open with a watcher running while the bad file
   arrives; after the watcher has seen it (or a short wait), search and list;
2. **open**: a fresh ``Repository(root)``; search for each good note's word;
   ``list()``; ``check()``; ``metabolize()`` dry run, then applied with ``now``
   ten years ahead and ``confirm=True``; ``check(fix=True)``; close; open again.

Asserted for every kind: no exception escapes any call (nor the watcher
thread, whose swallowed exceptions are read from the ``sediment`` log); the bad
file's bytes (or the FIFO, folder or link) are unchanged; the good notes are
still listed and found; and the bad file is accounted for -- *reported* kinds
must be named by ``check()`` (path), *tolerated* kinds must be read as a memory,
*either* kinds may be one or the other. Files under ``_system/`` (journal,
usage, cache) are the library's own: there only "no exception, good notes
found, damage reported where it is the journal" is asserted; a broken
``policy.yaml`` must raise ``PolicyFileError`` and nothing else.

Each kind runs in its own forked process with a memory limit and a time limit
(a huge alias expansion or a FIFO must not take the run down): running out of
either is reported as ``exception: MemoryError`` / ``hang``.

Prints one line per kind: ok / exception (where, what) / bytes changed /
not reported / good notes lost. Exit status 1 when any kind is not ok.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import resource
import select
import signal
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import describe, path_state  # noqa: E402

from sediment import PolicyFileError, Repository  # noqa: E402

C = "created: '2026-01-01T00:00:00+08:00'\n"


def fm(body: str, *, id: str = "BAD-1", title: str = "bad file", extra: str = "", created: str = C,
       text: str = "bad quagga note\n") -> bytes:
    return f"---\nid: {id}\ntitle: {title}\n{created}{extra}---\n{text}".encode("utf-8")


def billion_laughs(levels: int = 9) -> bytes:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return fm("", extra="\n".join(lines) + "\n")


def mkfifo(p: Path) -> None:
    os.mkfifo(p)


def mkfolder(p: Path) -> None:
    p.mkdir()


def symlink_outside(p: Path) -> None:
    outside = p.parents[2] / "outside"
    outside.mkdir(exist_ok=True)
    (outside / "secret.md").write_bytes(fm("", id="OUTSIDE-1", title="outside", text="outside quagga\n"))
    os.symlink(outside / "secret.md", p)


def symlink_dangling(p: Path) -> None:
    os.symlink(p.parents[2] / "outside" / "nothing-here.md", p)


def append_to(data: bytes):
    def make(p: Path) -> None:
        with open(p, "ab") as fh:
            fh.write(data)
    return make


def overwrite(data: bytes):
    def make(p: Path) -> None:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return make


# name -> (path relative to the root, bytes or a maker, category)
#   reported: check() must name the path, and it is not read as a memory
#   tolerated: read as a memory (check() may warn)
#   either: one or the other
# Kinds that may be read as a memory live in bedrock/, where metabolize (ten
# years ahead) moves nothing, so "bytes unchanged" stays meaningful for them.
#   system: a file of the library's own under _system/
#   policy: opening must raise PolicyFileError
DUP = "DUP-OF-BEDROCK"  # replaced by the bedrock good note's id
KINDS: dict[str, tuple[str, object, str]] = {
    "bad-utf8": ("shallow/bad-utf8.md",
                 b"---\nid: BAD-1\ntitle: caf\xe9\n" + C.encode() + b"---\nbad quagga caf\xe9\n", "reported"),
    "utf16": ("shallow/utf16.md", fm("").decode().encode("utf-16"), "reported"),
    "no-frontmatter": ("shallow/no-frontmatter.md", b"# a heading\n\nbad quagga without frontmatter\n",
                       "reported"),
    "unclosed-frontmatter": ("sediment/topic/unclosed.md",
                             b"---\nid: BAD-1\ntitle: never closed\n" + C.encode() + b"bad quagga\n",
                             "reported"),
    "git-conflict-frontmatter": ("shallow/conflict-fm.md", (
        "---\n<<<<<<< HEAD\nid: BAD-1\ntitle: ours\n=======\nid: BAD-1\ntitle: theirs\n>>>>>>> other\n"
        + C + "---\nbad quagga\n").encode(), "reported"),
    "git-conflict-body": ("shallow/conflict-body.md", fm("", text=(
        "<<<<<<< HEAD\nbad quagga ours\n=======\nbad quagga theirs\n>>>>>>> other\n")), "reported"),
    "date-property": ("bedrock/date-property.md", fm("", extra="reviewed: 2024-01-01\n"), "tolerated"),
    "datetime-property": ("bedrock/datetime-property.md", fm("", extra="seen: 2024-01-01 10:00:00\n"),
                          "tolerated"),
    "created-date-only": ("bedrock/created-date.md", fm("", created="created: 2024-01-01\n"), "tolerated"),
    "created-2024-13-45": ("shallow/created-bad.md", fm("", created="created: 2024-13-45\n"), "reported"),
    "created-int": ("shallow/created-int.md", fm("", created="created: 7\n"), "reported"),
    "circular-alias": ("bedrock/circular.md", fm("", extra="a: &x [*x]\n"), "either"),
    "binary-tag": ("bedrock/binary.md", fm("", extra="blob: !!binary aGVsbG8=\n"), "either"),
    "set-tag": ("bedrock/set.md", fm("", extra="things: !!set {a: null, b: null}\n"), "either"),
    "python-tag": ("shallow/python-tag.md", fm("", extra="x: !!python/object/apply:os.getcwd []\n"),
                   "reported"),
    "huge-alias-expansion": ("bedrock/laughs.md", billion_laughs(), "either"),
    "deep-nesting": ("bedrock/deep.md", fm("", extra="x: " + "[" * 3000 + "]" * 3000 + "\n"), "either"),
    "merge-key": ("bedrock/merge.md", fm("", extra="base: &b {k: 1}\nm:\n  <<: *b\n  j: 2\n"), "either"),
    "bom": ("bedrock/bom.md", b"\xef\xbb\xbf" + fm(""), "tolerated"),
    "crlf": ("bedrock/crlf.md", fm("").replace(b"\n", b"\r\n"), "tolerated"),
    "cr-only": ("bedrock/cr-only.md", fm("").replace(b"\n", b"\r"), "either"),
    "nul-in-body": ("bedrock/nul-body.md", fm("", text="bad quagga \x00 nul\n"), "either"),
    "nul-in-frontmatter": ("shallow/nul-fm.md", fm("", title="bad\x00title"), "reported"),
    "fifo": ("shallow/fifo.md", mkfifo, "reported"),
    "folder-named-md": ("shallow/folder.md", mkfolder, "reported"),
    "symlink-outside": ("shallow/link-out.md", symlink_outside, "reported"),
    "symlink-dangling": ("sediment/dangling.md", symlink_dangling, "reported"),
    "duplicate-id": ("bedrock/zz-duplicate.md", DUP, "either"),
    "empty": ("shallow/empty.md", b"", "reported"),
    "only-dashes": ("shallow/only-dashes.md", b"---\n", "reported"),
    "only-dashes-no-newline": ("shallow/only-dashes2.md", b"---", "reported"),
    "empty-frontmatter": ("shallow/empty-fm.md", b"---\n---\nbad quagga\n", "reported"),
    "tabs-in-yaml": ("shallow/tabs.md", fm("", extra="tags:\n\t- a\n\t- b\n"), "reported"),
    "list-frontmatter": ("shallow/list-fm.md", b"---\n- id\n- title\n---\nbad quagga\n", "reported"),
    "scalar-frontmatter": ("shallow/scalar-fm.md", b"---\njust a sentence\n---\nbad quagga\n", "reported"),
    "no-id": ("shallow/no-id.md", b"---\ntitle: no id\n" + C.encode() + b"---\nbad quagga\n", "reported"),
    "id-mapping": ("shallow/id-map.md", fm("", id="{a: 1}"), "reported"),
    "id-list": ("shallow/id-list.md", fm("", id="[1, 2]"), "reported"),
    "id-int": ("bedrock/id-int.md", fm("", id="7"), "tolerated"),
    "value-abc": ("shallow/value-abc.md", fm("", extra="value: abc\n"), "reported"),
    "value-7": ("shallow/value-7.md", fm("", extra="value: 7\n"), "reported"),
    "value-nan": ("shallow/value-nan.md", fm("", extra="value: .nan\n"), "reported"),
    "tags-mapping": ("shallow/tags-map.md", fm("", extra="tags: {a: 1}\n"), "reported"),
    "status-weird": ("shallow/status.md", fm("", extra="status: weird\n"), "reported"),
    "weights-bad": ("shallow/weights.md", fm("", extra="weights: {importance: 9}\n"), "reported"),
    "duplicate-keys": ("bedrock/dup-keys.md", fm("", extra="kind: fact\nkind: rule\n"), "either"),
    "complex-key": ("bedrock/complex-key.md", fm("", extra="? [a, b]\n: c\n"), "either"),
    "huge-body": ("bedrock/huge.md", fm("", text="bad quagga " + "x" * 3_000_000 + "\n"), "either"),
    "long-title": ("bedrock/long-title.md", fm("", title="t" * 100_000), "either"),
    "control-chars": ("bedrock/control.md", fm("", title="bad\u200b\u202etitle\x07"), "either"),
    # the library's own files, damaged by hand
    "journal-seq-list": ("_system/journal.log", append_to(b'{"seq":[1]}\n'), "system"),
    "journal-seq-list-done": ("_system/journal.log", append_to(b'{"seq":[1],"phase":"done"}\n'), "system"),
    "journal-begin-bad-fields": ("_system/journal.log", append_to(
        b'{"seq":"s1","phase":"begin","op":"move","id":5,"src":5,"dst":null}\n'), "system"),
    "journal-garbage": ("_system/journal.log", append_to(b"\x00\xff garbage line\n[1, 2]\n\"x\"\n"), "system"),
    "usage-garbage": ("_system/usage/events.log", append_to(
        b'{"t":"x","id":[1],"ev":"recall"}\n\xff\xfe\n{"t":1,"id":{"a":1},"ev":"confirm"}\n'), "system"),
    "usage-summary-garbage": ("_system/usage/summary.json", overwrite(b'{"usage": [1, 2], "consumed": 5}'),
                              "system"),
    "cache-garbage": ("_system/cache/index.bin", overwrite(b"\x00" * 64 + b"not a snapshot"), "system"),
    "policy-not-yaml": ("_system/policy.yaml", overwrite(b"kinds: [unclosed\n"), "policy"),
    "policy-date-value": ("_system/policy.yaml", overwrite(b"lock_timeout_seconds: 2024-01-01\n"), "policy"),
}
SMOKE = ("bad-utf8", "git-conflict-frontmatter", "git-conflict-body", "date-property", "created-2024-13-45",
         "binary-tag",
         "circular-alias", "bom", "fifo", "folder-named-md", "symlink-outside", "duplicate-id", "value-abc",
         "journal-seq-list-done", "policy-not-yaml")

GOOD = (("quokka marsupial on the good shallow note", "shallow", "", "quokka"),
        ("pelican seabird on the good sediment note", "sediment", "topic", "pelican"),
        ("walrus tusk on the good bedrock note", "bedrock", "", "walrus"))
FUTURE = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(days=3650)


def run_kind(name: str, base: Path, watch_wait: float) -> dict:
    rel, make, category = KINDS[name]
    root = base / "root"
    findings: list[str] = []
    notes: list[str] = []

    def attempt(where: str, fn, *a, **k):
        try:
            return fn(*a, **k)
        except Exception as exc:  # noqa: BLE001 - every escape is a finding
            if category == "policy" and isinstance(exc, PolicyFileError):
                notes.append(f"{where}: PolicyFileError as documented")
                return None
            findings.append(f"exception: {where}: {describe(exc)} (in {common.where(exc)})")
            notes.append(traceback.format_exc()[-1500:])
            return None

    repo = Repository(root)
    good = {}
    for text, layer, room, word in GOOD:
        e = repo.add(text, title=f"good {word}", layer=layer, room=room or None, kind="fact")
        good[word] = e.id
    repo.close()
    target = root / rel

    def create() -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        if make == DUP:
            src = next(p for p in (root / "bedrock").glob("*.md"))
            target.write_bytes(src.read_bytes().replace(b"walrus tusk", b"walrus duplicate copy"))
        elif callable(make):
            make(target)
        else:
            target.write_bytes(make)

    def good_found(where: str, repo: Repository, *, archive: bool = False) -> None:
        listed = attempt(f"{where} list", repo.list)
        if listed is not None:
            ids = {e.id for e in listed}
            missing = [w for w, i in good.items() if i not in ids]
            if missing:
                findings.append(f"good notes lost: {where}: list() misses {missing}")
        for word, eid in good.items():
            hits = attempt(f"{where} search", repo.search, word, include_archive=archive)
            if hits is not None and eid not in {h.entry.id for h in hits}:
                findings.append(f"good notes lost: {where}: search({word!r}) does not find it")

    # --- 1. the bad file arrives while a watcher runs
    seen: list[tuple[str, str]] = []
    with common.LogCatcher() as caught:
        repo = attempt("watch: open", Repository, root)
        created = False
        if repo is not None:
            try:
                with repo.watch(lambda what, p: seen.append((what, p))):
                    create()
                    created = True
                    # the watcher ignores _system/: nothing to wait for there
                    wait = watch_wait if rel.split("/")[0] != "_system" else 0.0
                    deadline = time.monotonic() + wait
                    while time.monotonic() < deadline and not any(
                            p == rel or what == "rescan" for what, p in seen):
                        time.sleep(0.01)
                    time.sleep(0.1)  # let the batch finish
                    good_found("watch", repo)
            except Exception as exc:  # noqa: BLE001
                findings.append(f"exception: watch: {describe(exc)}")
                notes.append(traceback.format_exc()[-1500:])
            attempt("watch: close", repo.close)
        if not created:
            create()
        for msg in caught.exceptions():
            findings.append(f"exception: watcher thread: {msg}")
    notes.append(f"watcher saw: {seen[:4]}")

    # --- 2. a fresh open, every read, metabolize, check
    before = path_state(target)
    before_bytes = target.read_bytes() if before[0] == "file" else None
    with common.LogCatcher() as caught:
        repo = attempt("open", Repository, root)
        if repo is not None:
            good_found("open", repo)
            listed = attempt("list", repo.list) or []
            indexed = any(e.path == rel for e in listed)
            problems = attempt("check", repo.check) or []
            named = [str(p) for p in problems if p.path == rel or p.path.startswith(rel + "/")
                     or (category == "system" and p.path == rel)]
            attempt("metabolize dry run", repo.metabolize, dry_run=True, now=FUTURE)
            attempt("metabolize apply", repo.metabolize, dry_run=False, now=FUTURE, confirm=True)
            good_found("after metabolize", repo, archive=True)
            attempt("check(fix=True)", repo.check, fix=True)
            attempt("close", repo.close)
            again = attempt("reopen", Repository, root)
            if again is not None:
                good_found("reopen", again, archive=True)
                attempt("reopen close", again.close)
            if category == "reported" and not named:
                findings.append("not reported: check() does not name it"
                                + (" (it was read as a memory)" if indexed else ""))
            if category == "reported" and indexed:
                findings.append("read as a memory although it is not valid")
            if category == "tolerated" and not indexed:
                findings.append("not read: a valid memory left out" + (f" ({named[0]})" if named else ""))
            if category == "either" and not indexed and not named:
                findings.append("not reported: neither read as a memory nor named by check()")
            if category == "system" and name.startswith("journal") and not named:
                findings.append("not reported: check() does not name the damaged journal line")
            notes.append(f"indexed={indexed} check: {named[:2]}")
        elif category == "policy" and not any(f.startswith("exception") for f in findings):
            pass  # PolicyFileError, as documented
        if category == "policy" and repo is not None:
            findings.append("an invalid policy.yaml was accepted")
        for msg in caught.exceptions():
            findings.append(f"exception: logged by the library: {msg}")
    if category not in ("system",) and path_state(target) != before:
        if before_bytes is not None and target.is_file() and adopted_only(before_bytes, target.read_bytes()):
            notes.append("adopted by check(fix=True): only id/created/updated/title lines inserted")
        else:
            findings.append("bytes changed")
    return {"kind": name, "category": category, "findings": findings, "notes": notes}


def adopted_only(old: bytes, new: bytes) -> bool:
    """``check(fix=True)`` adopts a note that only lacks an id or times: the
    new file is the old one with those key lines (and a frontmatter's '---'
    lines, when it had none) inserted, every other line kept in order."""
    ours = (b"id:", b"created:", b"updated:", b"title:", b"---")
    old_lines, new_lines = old.splitlines(), new.splitlines()
    inserted = [ln for ln in new_lines if ln not in old_lines]
    return (bool(inserted) and all(ln.startswith(ours) for ln in inserted)
            and [ln for ln in new_lines if ln not in inserted] == old_lines)


def run_isolated(name: str, timeout: float, watch_wait: float) -> dict:
    """Fork; the child runs one kind under a memory limit and reports as JSON."""
    def child(w: int) -> int:
        code = 0
        try:
            with open("/proc/self/statm") as fh:
                vm = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            limit = vm + (1 << 30)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (OSError, ValueError):
            pass
        try:
            with common.temp_dir(f"bad-{name}") as base:
                res = run_kind(name, base, watch_wait)
        except BaseException as exc:  # noqa: BLE001 - the harness itself, or a MemoryError
            res = {"kind": name, "findings": [f"exception: harness: {describe(exc)}"],
                   "notes": [traceback.format_exc()[-1500:]]}
            code = 2
        data = json.dumps(res).encode()
        with os.fdopen(w, "wb") as fh:
            fh.write(data)
        return code
    pid, r = common.fork(child)
    chunks = []
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([r], [], [], max(0, left))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return {"kind": name, "findings": [f"hang: no answer within {timeout:.0f} s (killed)"],
                    "notes": []}
        chunk = os.read(r, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(r)
    _, st = os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        return {"kind": name, "findings": [f"exception: the run died (status {st})"], "notes": []}


def main() -> int:
    p = common.parser(__doc__)
    p.add_argument("--only", help="comma-separated kinds")
    p.add_argument("--list", action="store_true", help="list the kinds and exit")
    p.add_argument("--timeout", type=float, default=60.0, help="per kind, seconds (a guard, not a limit)")
    args = p.parse_args()
    if args.list:
        for k, (rel, _, cat) in KINDS.items():
            print(f"{k:28} {cat:9} {rel}")
        return 0
    if not hasattr(os, "fork"):
        print("skipped: needs fork (POSIX)")
        return 0
    kinds = list(KINDS)
    if args.only:
        kinds = [k.strip() for k in args.only.split(",")]
        unknown = [k for k in kinds if k not in KINDS]
        if unknown:
            p.error(f"unknown kinds: {unknown} (see --list)")
    elif args.smoke:
        kinds = list(SMOKE)
    watch_wait = 0.5 if args.smoke else 2.0
    common.quiet_library_log(args.verbose)
    print(f"badfiles.py: {len(kinds)} kinds")
    started = time.monotonic()
    common.warm_up()  # jieba loaded once, inherited by every fork
    results = []
    for name in kinds:
        res = run_isolated(name, args.timeout, watch_wait)
        results.append(res)
        verdict = "ok" if not res["findings"] else "; ".join(dict.fromkeys(res["findings"]))
        print(f"  {name:28} {KINDS[name][2]:9} {verdict}", flush=True)
        if args.verbose:
            for n in res.get("notes", []):
                print("      " + n.replace("\n", "\n      "))
    bad = [r for r in results if r["findings"]]

    def count(prefix: str) -> int:
        return sum(1 for r in results if any(f.startswith(prefix) for f in r["findings"]))

    common.summary("badfiles.py", {
        "kinds": len(results),
        "ok": len(results) - len(bad),
        "exception": count("exception"),
        "hang": count("hang"),
        "bytes changed": count("bytes changed"),
        "not reported": count("not reported"),
        "good notes lost": count("good notes lost"),
        "other findings": sum(1 for r in results if any(
            not f.startswith(("exception", "hang", "bytes changed", "not reported", "good notes lost"))
            for f in r["findings"])),
        "seconds": f"{time.monotonic() - started:.0f}",
    })
    def category(f: str) -> str:
        for c in ("exception", "hang", "bytes changed", "not reported", "good notes lost"):
            if f.startswith(c):
                return c
        return "other"
    return common.finish([(category(f), f"{r['kind']}: {f}") for r in bad for f in dict.fromkeys(r["findings"])])


if __name__ == "__main__":
    sys.exit(main())
