"""Concurrency torture: P writer processes x M mixed operations on one root, a
watcher process, and a person saving notes by hand -- all at once.

    python benchmarks/torture/concurrency.py                    # 4 x 10,000
    python benchmarks/torture/concurrency.py --procs 2 --ops 2000
    python benchmarks/torture/concurrency.py --smoke            # CI

Processes (forked from this warmed-up one; ``--spawn`` for fresh interpreters):

* P workers, each M operations: counter updates (``update(expected=version)``,
  retried on ``Conflict``), adds, searches (recording usage), get/list, touch,
  moves, archives and restores of agent notes, metabolize dry runs, refresh;
* a watcher: ``Repository(root, watch=True)`` searching, listing and reading
  in a loop (every exception it sees is a finding);
* a person: editor-style saves of the "hand" notes, either temp file + rename
  (``x.md___jb_tmp___`` → ``os.replace``) or in place (truncate and write, or
  overwrite and truncate). The person never takes the lock, as no editor does.

Bookkeeping (see README.md): every note body carries three lines,

    counter: 17
    stamp: w2-4711-0
    base: p-388

Every change -- a worker's accepted update or a person's save -- reads the
note, and writes counter+1, a new unique stamp and, as ``base``, the stamp it
read. Each writer logs each change it made (stamp, base, counter; a worker
only after ``update`` returned). Stamps are unique, so the changes of one note
form a tree: each change is a child of the version (stamp) it was based on.
Moves and archives change only frontmatter; the stamp in the body stays, so
they are transparent to this bookkeeping.

At the end the note's final body names its final stamp; following ``base``
back to the creation gives the *surviving history*. Then:

* a person's save is **lost** when its stamp is not on the surviving history
  (nobody built on it, and it is not what the file holds): something wrote a
  change based on an older version over it;
* a **stale edit was accepted** when two changes share one base and the later
  of them is a worker's update: the library let ``expected=`` pass although the
  file no longer held that version (the later is the one on the surviving
  history; off it, the later finish time). When the later one is the person's
  save, the person overwrote an agent update from a stale read -- the editor's
  own race, counted for information only, not a broken promise;
* along the surviving history the counter rises by exactly one per change,
  and the final counter equals the number of changes on it.

Two windows are left that a rename-based writer cannot close (docs/reliability.md):
an in-place save whose ``open()`` found the note before the library's swap and whose
write lands after the library's last look goes to a file no longer at the path; and an
editor that reads the note in the instant between a refused write's swap and its
put-back may save on top of that withdrawn write (workers log refused writes as
``withdrawn``, so such a history is still traced). Saves lost in those two ways are
counted as *residual*, apart from the broken promises: they are reported, never hidden,
and their rate is the figure to watch. A rename save lost, or a stale update accepted
over another agent's update, is a broken promise.

Also: every note exists exactly once, ``check()`` reports no error at the end,
no temp file remains, no read raised anything and no write anything but
``Conflict`` / ``NotFound`` / ``ParseError`` (a note a person is half-way
through saving) / ``InvalidInput`` (a note another worker just archived).
Exit status 1 when a promise is broken.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import describe, scan, temp_files  # noqa: E402

import sediment  # noqa: E402
from sediment import Conflict, InvalidInput, NotFound, ParseError, Repository  # noqa: E402

POLICY = {"lock_timeout_seconds": 120, "destructive_per_hour": 10 ** 9}
WORDS = ("granite", "silt", "river", "delta", "loam", "clay", "basalt", "ochre", "tide", "沉积", "河流")
COUNTER = re.compile(r"^counter: (\d+)$", re.M)
STAMP = re.compile(r"^stamp: (\S+)$", re.M)
BASE = re.compile(r"^base: (\S+)$", re.M)


def body(words: str, counter: int, stamp: str, base: str) -> str:
    return f"{words}\n\ncounter: {counter}\nstamp: {stamp}\nbase: {base}"


def read_counter(text: str) -> tuple[int, str] | None:
    c, s = COUNTER.search(text), STAMP.search(text)
    return (int(c.group(1)), s.group(1)) if c and s else None


def bump(text: str, stamp: str) -> tuple[str, int, str] | None:
    """The text of the next change: counter+1, a new stamp, the old stamp as base."""
    cur = read_counter(text)
    if cur is None:
        return None
    counter, base = cur
    words = text.split("\n\ncounter:", 1)[0]
    return body(words, counter + 1, stamp, base), counter + 1, base


class Log:
    def __init__(self, path: Path) -> None:
        self.fh = open(path, "a", encoding="utf-8", buffering=1)

    def __call__(self, rec: dict) -> None:
        self.fh.write(json.dumps(rec, ensure_ascii=False) + "\n")


def wait_go(go: Path) -> None:
    while not go.exists():
        time.sleep(0.001)


# ---------------------------------------------------------------------------
# the processes


# A write racing another process's write may be refused with these (the note
# moved, was archived, or is half-way through a person's in-place save); a
# read (search, list, refresh, metabolize dry run) may raise nothing.
RACES = (Conflict, NotFound, ParseError, InvalidInput)


def worker(root: Path, out: Path, wid: int, seed: int, ops: int, hand: list[str], go: Path,
           ready) -> None:
    rng = random.Random(seed)
    log = Log(out)
    repo = Repository(root, policy=POLICY)
    ready()
    wait_go(go)
    c = Counter()
    hand_set = set(hand)

    def agent(status: str = "active") -> list[str]:
        return [e.id for e in repo.list(status=status) if e.id not in hand_set]

    def counted_update(eid: str, i: int) -> None:
        for attempt in range(50):
            try:
                e = repo.get(eid)
            except (NotFound, ParseError):
                c["unreadable"] += 1  # a person's in-place save half done
                time.sleep(0.001)
                continue
            stamp = f"w{wid}-{i}-{attempt}"
            nxt = bump(e.text, stamp)
            if nxt is None:
                c["unreadable counter"] += 1
                log({"op": "problem", "what": f"no counter in the view of {eid}: {e.text[-80:]!r}"})
                return
            text, counter, base = nxt
            try:
                got = repo.update(eid, expected=e.version, text=text)
            except Conflict:
                # refused: but the write may have been on disk for the instant
                # between its swap and the library's look, where an editor can read it
                log({"op": "withdrawn", "id": eid, "stamp": stamp, "base": base, "counter": counter,
                     "t": time.time()})
                c["conflicts"] += 1
                continue
            except (NotFound, ParseError):
                c["unreadable"] += 1
                continue
            except InvalidInput:  # archived meanwhile by another worker: not ours to update
                c["refused"] += 1
                return
            log({"op": "update", "id": eid, "stamp": stamp, "base": base, "counter": counter,
                 "t": time.time()})
            c["updates"] += 1
            if got.text != text:
                log({"op": "bad", "what": f"update of {eid} returned {got.text[-60:]!r}, not {text[-60:]!r}"})
            return
        c["gave up"] += 1

    for i in range(ops):
        r = rng.random()
        write = True
        try:
            if r < 0.40:
                pool = hand if rng.random() < 0.6 else (agent() or hand)
                counted_update(rng.choice(pool), i)
            elif r < 0.48:
                stamp = f"a-w{wid}-{i}"
                e = repo.add(body(" ".join(rng.sample(WORDS, 3)), 0, stamp, "-"),
                             title=f"agent w{wid} {i}", kind="fact", tags=[f"w{wid}"])
                log({"op": "add", "id": e.id, "stamp": stamp})
            elif r < 0.63:
                write = False
                repo.search(" ".join(rng.sample(WORDS, 2)), limit=5)
            elif r < 0.70:
                write = False
                repo.list(layer=rng.choice(sediment.LAYERS))
                c["len"] = len(repo)
                write = True  # a get may meet a half-saved hand note
                repo.get(rng.choice(hand + agent()))
            elif r < 0.76:
                repo.touch(rng.choice(hand + agent()), "confirm")
            elif r < 0.86:
                active = agent()
                if active:
                    repo.move(rng.choice(active), rng.choice(("shallow", "sediment", "bedrock")),
                              reason=f"w{wid} op {i}")
            elif r < 0.90:
                active = agent()
                if active:
                    repo.archive(rng.choice(active), reason=f"w{wid} op {i}")
            elif r < 0.93 and hasattr(repo, "restore"):
                archived = agent("archived")
                if archived:
                    repo.restore(rng.choice(archived), layer=rng.choice(("shallow", "sediment")))
            elif r < 0.97:
                write = False
                repo.metabolize(dry_run=True, now=_dt.datetime.now(_dt.timezone.utc)
                                + _dt.timedelta(days=3650))
            else:
                write = False
                repo.refresh()
            c["ops"] += 1
        except RACES as exc:
            c["ops"] += 1
            if write:  # a write racing another process, or a half-saved hand note
                c["conflicts" if isinstance(exc, Conflict) else "refused"] += 1
            else:
                c["errors"] += 1
                log({"op": "error", "exc": f"{describe(exc)} (in {common.where(exc)})", "own": True,
                     "tb": traceback.format_exc()[-1200:]})
        except Exception as exc:  # noqa: BLE001 - every other escape is a finding
            c["ops"] += 1
            c["errors"] += 1
            log({"op": "error", "exc": f"{describe(exc)} (in {common.where(exc)})", "own": common.is_own(exc),
                 "tb": traceback.format_exc()[-1200:]})
        if rng.random() < 0.2:
            time.sleep(rng.uniform(0, 0.002))  # an agent thinks between calls
    repo.close()
    log({"op": "end", **c})


def person(root: Path, out: Path, seed: int, hand_paths: dict[str, str], go: Path, stop: Path,
           active: bool, ready) -> None:
    """Saves hand notes as editors do, never taking the lock."""
    rng = random.Random(seed)
    log = Log(out)
    ready()
    wait_go(go)
    n = 0
    c = Counter()
    while not active and not stop.exists():
        time.sleep(0.01)
    while not stop.exists():
        eid = rng.choice(sorted(hand_paths))
        path = root / hand_paths[eid]
        t0 = time.time()
        data = path.read_bytes()
        s = data.decode("utf-8", errors="replace")
        end = s.find("\n---\n", 3)
        if not s.startswith("---\n") or end < 0:
            c["skipped: no frontmatter"] += 1
            continue
        head, text = s[: end + 5], s[end + 5:]
        n += 1
        stamp = f"p-{n}"
        nxt = bump(text.rstrip("\n"), stamp)
        if nxt is None:
            c["skipped: no counter"] += 1
            continue
        new_text, counter, base = nxt
        new = (head + new_text + "\n").encode("utf-8")
        mode = rng.choice(("replace", "replace", "truncate", "overwrite"))
        if mode == "replace":  # temp + rename: an IDE's "safe write", and many other editors
            tmp = path.with_name(path.name + "___jb_tmp___")
            with open(tmp, "wb") as fh:
                fh.write(new)
            os.replace(tmp, path)
        elif mode == "truncate":  # open with O_TRUNC, then write (in place)
            with open(path, "wb") as fh:
                fh.write(new)
        else:  # overwrite from the start, then cut the rest (in place)
            with open(path, "r+b") as fh:
                fh.write(new)
                fh.truncate()
        log({"op": "save", "id": eid, "stamp": stamp, "base": base, "counter": counter, "mode": mode,
             "t0": t0, "t": time.time()})
        c[mode] += 1
        time.sleep(rng.uniform(0, 0.003))
    log({"op": "end", **c})


def watcher(root: Path, out: Path, seed: int, hand: list[str], go: Path, stop: Path, ready) -> None:
    rng = random.Random(seed)
    log = Log(out)
    repo = Repository(root, policy=POLICY, watch=True)
    ready()
    wait_go(go)
    c = Counter()
    with common.LogCatcher() as caught:
        while not stop.exists():
            try:
                repo.search(" ".join(rng.sample(WORDS, 2)), limit=5)
                c["searches"] += 1
                repo.list()
                try:
                    repo.get(rng.choice(hand))
                except (NotFound, ParseError):
                    c["hand note unreadable for a moment"] += 1
            except Exception as exc:  # noqa: BLE001
                c["errors"] += 1
                log({"op": "error", "exc": f"{describe(exc)} (in {common.where(exc)})",
                     "tb": traceback.format_exc()[-1200:]})
            time.sleep(rng.uniform(0, 0.004))
        # after everyone stopped: does the watched view catch up with the disk?
        current = False
        for _ in range(100):
            found, _bad = scan(root)
            try:
                view = {e.id: e.version for e in repo.list()}
            except Exception:  # noqa: BLE001
                view = {}
            disk = {}
            for eid, es in found.items():
                disk[eid] = sediment.parse((root / es[0].path).read_bytes(), es[0].path).version
            if view == disk:
                current = True
                break
            time.sleep(0.05)
        c["view current at end"] = int(current)
        for msg in caught.exceptions():
            c["errors"] += 1
            log({"op": "error", "exc": "watcher thread: " + msg})
    repo.close()
    log({"op": "end", **c})


# ---------------------------------------------------------------------------
# the parent


class Proc:
    def __init__(self, spawn: bool, role: str, fn, args: tuple, argv: list[str]) -> None:
        self.role = role
        if spawn:
            r, w = os.pipe()
            self.proc = subprocess.Popen([sys.executable, __file__, "--role", role, str(w), *argv],
                                         pass_fds=(w,))
            self.pid = self.proc.pid
            os.close(w)
        else:
            self.proc = None
            self.pid, r = common.fork(lambda w: fn(*args, lambda: os.write(w, b"ready\n")))
        self.fd = r

    def wait_ready(self, timeout: float) -> bool:
        import select
        ready, _, _ = select.select([self.fd], [], [], timeout)
        return bool(ready) and os.read(self.fd, 16).startswith(b"ready")

    def wait(self) -> int:
        if self.proc is not None:
            return self.proc.wait()
        _, st = os.waitpid(self.pid, 0)
        return os.waitstatus_to_exitcode(st)

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def read_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def analyse(root: Path, created: dict[str, str], changes: list[dict], verbose: bool) -> tuple[dict, list[str]]:
    """The bookkeeping of the module docstring. ``created``: note id → creation stamp;
    ``changes``: every accepted update and every hand save."""
    broken: list = []
    c = Counter()
    by_stamp: dict[str, dict] = {}
    for ch in changes:
        if ch["stamp"] in by_stamp:
            broken.append(("harness", f"stamp {ch['stamp']} logged twice"))
        by_stamp[ch["stamp"]] = ch
    children: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for ch in changes:
        children[(ch["id"], ch["base"])].append(ch)

    found, torn = scan(root)
    for rel in torn:
        broken.append(("torn or invalid note at the end", rel))
    for eid, es in found.items():
        if len(es) > 1:
            c["duplicated"] += 1
            broken.append(("duplicated", f"{eid} in {[e.path for e in es]}"))
    on_path: set[str] = set()
    for eid, first in created.items():
        if eid not in found:
            c["missing notes"] += 1
            broken.append(("missing notes", f"note {eid} is gone"))
            continue
        cur = read_counter(found[eid][0].text)
        if cur is None:
            c["unknown content"] += 1
            broken.append(("unknown content",
                           f"{eid}: the final file has no counter: {found[eid][0].text[-80:]!r}"))
            continue
        counter, stamp = cur
        path = []
        while stamp != first:
            ch = by_stamp.get(stamp)
            if ch is None or ch["id"] != eid or len(path) > len(changes):
                c["unknown content"] += 1
                broken.append(("unknown content", f"{eid}: version {stamp} was never acknowledged by anyone"))
                break
            path.append(ch)
            stamp = ch["base"]
        else:
            on_path.update(ch["stamp"] for ch in path)
            if counter != len(path):
                c["counter jumps"] += 1
                broken.append(("counter jumps", f"{eid}: final counter {counter} after {len(path)} changes"))
            for ch in path:
                base = by_stamp.get(ch["base"])
                if ch["counter"] != (base["counter"] if base else 0) + 1:
                    c["counter jumps"] += 1
                    broken.append(("counter jumps",
                                   f"{eid}: {ch['stamp']} wrote counter {ch['counter']} on {ch['base']}"))
    through_withdrawn = {by_stamp[s]["id"] for s in on_path if by_stamp[s]["op"] == "withdrawn"}
    for ch in changes:
        if ch["op"] == "save" and ch["stamp"] not in on_path:
            over = [x for x in children[(ch["id"], ch["base"])] if x is not ch]
            msg = (f"hand save {ch['stamp']} of {ch['id']} (counter {ch['counter']}, {ch['mode']}) is "
                   f"neither in the file nor the base of a later change")
            if over:
                msg += f"; overwritten by {', '.join(x['stamp'] for x in over)} (also based on {ch['base']})"
            if ch["id"] in through_withdrawn:
                # the person's editor read the note in the instant a refused write was on
                # disk and saved on top of it: the residual window of rename-based writes
                c["hand saves lost through a withdrawn write (residual)"] += 1
            elif ch["mode"] != "replace" and any(x["op"] == "update" for x in over):
                # an in-place save whose open() found the file before the library's swap and
                # whose write came after its last look: no rename-based writer can see it
                c["in-place saves lost in the swap window (residual)"] += 1
            else:
                c["hand saves lost"] += 1
                broken.append(("hand saves lost", msg))
    for (eid, base), kids in children.items():
        if len(kids) < 2:
            continue
        c["forks"] += 1
        # the child on the surviving history was written last; the others by finish time
        kids = sorted(kids, key=lambda x: (x["stamp"] in on_path, x["t"]))
        kids = [k for k in kids if k["op"] != "withdrawn"]  # refused writes accepted nothing
        for late in kids[1:]:
            if late["op"] == "update":
                first = kids[0]
                if first["op"] == "save" and (first.get("mode") != "replace" or eid in through_withdrawn):
                    c["stale accepted over an in-place save in the swap window (residual)"] += 1
                    continue
                c["stale accepted"] += 1
                c["stale accepted over a hand save" if first["op"] == "save"
                  else "stale accepted over an agent update"] += 1
                broken.append(("stale accepted", f"{late['stamp']} on {eid} was based on {base}, which "
                                                 f"{first['stamp']} ({first['op']}) had already replaced"))
            else:
                c["agent updates overwritten by the person (editor's own race)"] += 1
    return c, broken


def main() -> int:
    p = common.parser(__doc__)
    p.add_argument("--procs", type=int, default=4, help="worker processes (4)")
    p.add_argument("--ops", type=int, default=10_000, help="operations per worker (10,000)")
    p.add_argument("--hand", type=int, default=3, help="notes the person edits (3)")
    p.add_argument("--agent", type=int, default=20, help="agent notes at the start (20)")
    p.add_argument("--spawn", action="store_true", help="fresh interpreters instead of forks")
    p.add_argument("--no-person", action="store_true",
                   help="a control run: nobody saves by hand (stale accepted must still be 0)")
    p.add_argument("--role", nargs="+", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.role:  # a spawned process: role, ready fd, then the role's arguments as JSON
        role, fd, payload = args.role[0], int(args.role[1]), json.loads(args.role[2])
        fn = {"worker": worker, "person": person, "watcher": watcher}[role]
        conv = [Path(x["path"]) if isinstance(x, dict) and list(x) == ["path"] else x for x in payload]
        fn(*conv, lambda: os.write(fd, b"ready\n"))
        return 0
    if args.smoke:
        args.procs, args.ops, args.hand, args.agent = 2, 300, 2, 6
    common.quiet_library_log(args.verbose)
    seed = common.seed_of(args)
    rng = random.Random(seed)
    print(f"concurrency.py: seed={seed} procs={args.procs} ops={args.ops} hand notes={args.hand} "
          f"({'spawned' if args.spawn else 'forked'})")
    started = time.monotonic()
    common.warm_up()
    with common.temp_dir("concurrent") as tmp:
        root, go, stop = tmp / "mem", tmp / "go", tmp / "stop"
        repo = Repository(root, policy=POLICY)
        created: dict[str, str] = {}
        hand_paths: dict[str, str] = {}
        for h in range(args.hand):
            stamp = f"h{h}"
            e = repo.add(body(f"hand note {h} " + " ".join(rng.sample(WORDS, 3)), 0, stamp, "-"),
                         title=f"hand note {h}", kind="fact", room="desk")
            created[e.id], hand_paths[e.id] = stamp, e.path
        for a in range(args.agent):
            stamp = f"a{a}"
            e = repo.add(body(" ".join(rng.sample(WORDS, 3)), 0, stamp, "-"), title=f"agent note {a}",
                         kind="fact", layer=rng.choice(("shallow", "sediment")))
            created[e.id] = stamp
        repo.close()
        hand = sorted(hand_paths)

        procs: list[Proc] = []
        outs = {}

        def start(role: str, fn, *fargs) -> None:
            out = tmp / f"{role}{len(procs)}.jsonl"
            outs[len(procs)] = out
            full = (fargs[0], out, *fargs[1:])
            payload = [{"path": str(x)} if isinstance(x, Path) else x for x in full]
            procs.append(Proc(args.spawn, role, fn, full, [json.dumps(payload)]))

        try:
            for w in range(args.procs):
                start("worker", worker, root, w, rng.randrange(2 ** 31), args.ops, hand, go)
            start("watcher", watcher, root, rng.randrange(2 ** 31), hand, go, stop)
            start("person", person, root, rng.randrange(2 ** 31), hand_paths, go, stop, not args.no_person)
            for pr in procs:
                if not pr.wait_ready(120):
                    raise RuntimeError(f"{pr.role} never got ready")
            go.touch()
            codes = {i: procs[i].wait() for i in range(args.procs)}
            stop.touch()
            codes.update({i: procs[i].wait() for i in range(args.procs, len(procs))})
        finally:
            for pr in procs:
                pr.kill()
        elapsed = time.monotonic() - started

        logs = {i: read_log(outs[i]) for i in outs}
        broken: list = []
        totals = Counter()
        changes: list[dict] = []
        for i, recs in logs.items():
            role = procs[i].role
            if codes[i] != 0:
                broken.append((f"{role} crashed", f"{role} {i} exited with {codes[i]}"))
            end = [r for r in recs if r["op"] == "end"]
            if not end:
                broken.append((f"{role} crashed", f"{role} {i} did not finish"))
            else:
                for k, n in end[-1].items():
                    if k != "op":
                        totals[f"{role}:{k}"] += n
            for r in recs:
                if r["op"] in ("update", "save", "withdrawn"):
                    changes.append(r)
                elif r["op"] == "add":
                    created[r["id"]] = r["stamp"]
                elif r["op"] in ("error", "bad", "problem"):
                    broken.append((f"{role} {r['op']}s", f"{role} {i}: {r.get('exc') or r.get('what')}"
                                   + (f"\n{r['tb']}" if args.verbose and r.get("tb") else "")))
        counts, found_broken = analyse(root, created, changes, args.verbose)
        broken += found_broken

        final_problems: list[str] = []
        try:
            fresh = Repository(root, policy=POLICY)
            final_problems = [str(p) for p in fresh.check() if p.severity == "error"]
            view = {e.id for e in fresh.list()}
            fresh.close()
            found, _ = scan(root)
            if view != set(found):
                broken.append(("view differs from disk", f"after reopening: {sorted(view ^ set(found))[:4]}"))
        except Exception as exc:  # noqa: BLE001
            broken.append(("reopen failed", describe(exc)))
        broken += [("check errors at end", p) for p in final_problems]
        temps = temp_files(root)
        if temps:
            broken.append(("temp files left", str(temps[:5])))

    saves = sum(1 for ch in changes if ch["op"] == "save")
    out = {
        "operations": totals["worker:ops"],
        "accepted updates": sum(1 for ch in changes if ch["op"] == "update"),
        "refused updates (withdrawn)": sum(1 for ch in changes if ch["op"] == "withdrawn"),
        "conflicts raised": totals["worker:conflicts"],
        "hand note unreadable for a moment": totals["worker:unreadable"],
        "writes refused (raced another worker)": totals["worker:refused"],
        "updates given up after 50 conflicts": totals["worker:gave up"],
        "hand saves": f"{saves} (replace {totals['person:replace']}, truncate {totals['person:truncate']}, "
                      f"overwrite {totals['person:overwrite']})",
        "stale accepted": counts["stale accepted"],
        "  over a hand save": counts["stale accepted over a hand save"],
        "  over an agent update": counts["stale accepted over an agent update"],
        "hand saves lost": counts["hand saves lost"],
        "residual: in-place saves lost in the swap window": counts[
            "in-place saves lost in the swap window (residual)"],
        "residual: saves lost through a withdrawn write": counts[
            "hand saves lost through a withdrawn write (residual)"],
        "residual: stale accepted over such an in-place save": counts[
            "stale accepted over an in-place save in the swap window (residual)"],
        "agent updates overwritten by the person": counts[
            "agent updates overwritten by the person (editor's own race)"],
        "forks in the histories": counts["forks"],
        "counter jumps": counts["counter jumps"],
        "unknown content": counts["unknown content"],
        "duplicated": counts["duplicated"],
        "missing notes": counts["missing notes"],
        "worker errors": totals["worker:errors"],
        "watcher searches": totals["watcher:searches"],
        "watcher errors": totals["watcher:errors"],
        "watcher view current at end": "yes" if totals["watcher:view current at end"] else "no",
        "check errors at end": len(final_problems),
        "seconds": f"{elapsed:.0f}",
    }
    common.summary(f"concurrency.py seed={seed}", out)
    return common.finish(broken)


if __name__ == "__main__":
    sys.exit(main())
