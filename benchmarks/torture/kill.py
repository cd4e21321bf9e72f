"""SIGKILL torture: a writer doing mixed operations is killed N times; after each
kill the root is opened again and every acknowledged operation is verified.

    python benchmarks/torture/kill.py                 # 1,000 kills
    python benchmarks/torture/kill.py --kills 200 --seed 7
    python benchmarks/torture/kill.py --smoke         # CI: a dozen kills

The writer (a forked child by default, ``--spawn`` for a fresh interpreter each
time, which also lands kills in start-up) runs add, update with ``expected=``,
move, restore, archive, purge (``confirm=True``; ``destructive_per_hour`` raised
through the ``policy=`` override), touch, supersede, consolidate of inbox fragments,
metabolize applying many moves with ``now=`` years ahead and ``confirm=True``,
and search (which records usage). Before each call it appends an *intent* to an
ack file, and only after the call returned the *acknowledgement*: the state
every memory it touched must have from then on (title, layer, room, text,
status, kind, supersede links). Each line is fsync'd. A call refused with the
library's own ``InvalidInput``/``PolicyError`` is acknowledged as "nothing
changed" (and verified so).

Kill timing, per round: during operations (after a random number of acks and a
random short sleep); during open (a random moment within the measured open
time, so kills land in start-up, in recovery and in the first operations); and
"recovery" rounds: the writer is killed while a journal intent is pending, then
a second writer is killed while it opens (and recovers) that root, and only
then is the root verified.

After each round the parent opens the root and checks, reading the files
directly (not through the library):

* every acknowledged memory exists exactly once (no id in two files) with its
  last acknowledged state -- or with the state of an operation that was in
  flight when a kill landed (it may or may not have happened);
* nothing else exists except what an in-flight add/consolidate was writing;
* every file under the layer folders parses (no torn file);
* ``check()`` right after open reports no ``journal_pending`` and no error;
  no temp file remains (open runs recovery); the library's view equals the disk.

Exit status 1 when any of that fails or the writer met an unexpected error.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import random
import select
import signal
import statistics
import string
import subprocess
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402
from common import describe, fsync_append, journal_pending, read_jsonl, scan, temp_files  # noqa: E402

import sediment  # noqa: E402
from sediment import LAYERS, InvalidInput, PolicyError, Repository  # noqa: E402

POLICY = {"destructive_per_hour": 10 ** 9, "lock_timeout_seconds": 30}
WORDS = ("granite", "silt", "river", "delta", "loam", "clay", "basalt", "ochre", "tide", "moraine",
         "café", "naïve", "strata", "沉积", "河流", "岩层", "记忆")
ROOMS = ("", "", "", "topic", "topic/deeper", "岩层")


# ---------------------------------------------------------------------------
# the writer


def state(e: sediment.Entry) -> dict:
    return {"title": e.title, "layer": e.layer, "room": e.room, "text": e.text, "status": e.status,
            "kind": e.kind, "sup_by": sorted(e.get("superseded_by") or []),
            "sups": sorted(e.get("supersedes") or [])}


def link(name: str) -> str:
    return f"[[{name}]]"


def with_link(lst: list[str], name: str | None) -> list[str]:
    return sorted(set(lst) | ({link(name)} if name else set()))


class Writer:
    def __init__(self, root: str, ack_path: str, seed: int, rnd: int) -> None:
        self.root = Path(root)
        self.rng = random.Random(seed)
        self.rnd = rnd
        self.ack = open(ack_path, "ab", buffering=0)
        self.repo = Repository(root, policy=POLICY)

    def log(self, rec: dict) -> None:
        fsync_append(self.ack, rec)

    def disk(self, e: sediment.Entry) -> dict:
        """The state to start from, as the file says (not the library's view)."""
        return state(sediment.parse((self.root / e.path).read_bytes(), e.path))

    def text(self, i: int) -> str:
        rng = self.rng
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        second = "\n\nsecond paragraph " + words[::-1] if rng.random() < 0.3 else ""
        return f"r{self.rnd} op{i} {words}{second}"

    def run(self, ready_fd: int) -> None:
        os.write(ready_fd, b"ready\n")
        for i in range(1, 10 ** 9):
            try:
                self.step(i)
            except Exception as exc:  # noqa: BLE001 - every escape is a finding
                self.log({"t": "error", "op": getattr(self, "_op", "?"), "own": common.is_own(exc),
                          "exc": f"{describe(exc)} (in {common.where(exc)})",
                          "tb": traceback.format_exc()[-1500:]})

    def step(self, i: int) -> None:
        rng = self.rng
        entries = self.repo.list()
        active = [e for e in entries if e.status == "active"]
        retired = [e for e in entries if e.status != "active"]
        frags = [e for e in active if e.kind == "inbox" and e.layer != "archive"]
        p_add = 0.45 if len(active) < 25 else 0.18
        if not active or rng.random() < p_add:
            return self.op_add(i)
        r = rng.random()
        if r < 0.20:
            return self.op_update(i, rng.choice(entries))
        if r < 0.32:
            return self.op_move(i, rng.choice(active))
        if r < 0.37 and retired and hasattr(self.repo, "restore"):
            return self.op_restore(i, rng.choice(retired))
        if r < 0.42:
            return self.op_archive(i, rng.choice(active))
        if r < 0.47:
            return self.op_purge(i, rng.choice([e for e in entries if e.status != "purged"] or active))
        if r < 0.56:
            return self.op_touch(i, rng.choice(active))
        if r < 0.63 and len(active) >= 2:
            old, new = rng.sample(active, 2)
            return self.op_supersede(i, old, new)
        if r < 0.72 and len(frags) >= 2:
            return self.op_consolidate(i, rng.sample(frags, min(len(frags), rng.randint(2, 3))))
        if r < 0.76:
            return self.op_metabolize(i)
        return self.op_search(i)

    def call(self, op: str, i: int, before: dict, expect: dict, new: list | None, fn, check=None) -> None:
        """Intent, the call, then the acknowledgement (only after it returned).
        A call the library refuses with its own InvalidInput or PolicyError
        (the rules of the day: e.g. only ``restore`` brings an archived memory
        back) must change nothing: ``before`` becomes the acknowledged state."""
        self._op = op
        self.log({"t": "intent", "op": op, "i": i, "expect": expect, "new": new or []})
        try:
            result = fn()
        except (InvalidInput, PolicyError) as exc:
            self.log({"t": "refused", "op": op, "i": i, "expect": before, "exc": describe(exc, 120)})
            return
        acked = check(result) if check else expect
        self.log({"t": "ack", "op": op, "i": i, "expect": acked})

    def returned(self, op: str, e: sediment.Entry, expect: dict) -> None:
        got = state(e)
        if not matches(got, expect):
            self.log({"t": "bad", "op": op, "id": e.id, "expect": expect, "returned": got})

    # --- operations

    def op_add(self, i: int) -> None:
        rng = self.rng
        title = f"r{self.rnd} n{i} {rng.randrange(16 ** 6):06x}"
        layer = rng.choice(("shallow", "shallow", "shallow", "sediment", "bedrock"))
        room = rng.choice(ROOMS)
        kind = rng.choice(("fact", "fact", "rule", "skill", "event", None, None))
        text = self.text(i) if kind else f"frag r{self.rnd} i{i} {rng.randrange(16 ** 8):08x} " + rng.choice(WORDS)
        exp = {"title": title, "layer": layer, "room": room, "text": text, "status": "active",
               "kind": kind or "inbox", "sup_by": [], "sups": []}

        def check(e):
            self.returned("add", e, exp)
            return {e.id: exp}
        self.call("add", i, {}, {}, [exp], lambda: self.repo.add(text, title=title, room=room or None,
                                                                 layer=layer, kind=kind), check)

    def one(self, op: str, i: int, e: sediment.Entry, change: dict, fn) -> None:
        """An operation on one memory: its disk state, changed by ``change``."""
        before = self.disk(e)
        exp = {**before, **change}

        def check(got):
            self.returned(op, got, exp)
            return {e.id: exp}
        self.call(op, i, {e.id: before}, {e.id: exp}, None, fn, check)

    def op_update(self, i: int, e: sediment.Entry) -> None:
        text = self.text(i)
        self.one("update", i, e, {"text": text}, lambda: self.repo.update(e.id, expected=e.version, text=text))

    def op_move(self, i: int, e: sediment.Entry) -> None:
        layer = self.rng.choice([x for x in LAYERS if x != e.layer])
        room = self.rng.choice(ROOMS) if self.rng.random() < 0.3 else None
        change = {"layer": layer}
        if room is not None:
            change["room"] = room
        if layer == "archive":  # the status a move to archive implies
            change["status"] = "archived"
        self.one("move", i, e, change, lambda: self.repo.move(e.id, layer, room=room, reason=f"op {i}"))

    def op_restore(self, i: int, e: sediment.Entry) -> None:
        layer = self.rng.choice(("shallow", "sediment", "bedrock"))
        # a restored memory is no longer superseded: its superseded_by may go ("at least []")
        self.one("restore", i, e, {"layer": layer, "status": "active", "sup_by": []},
                 lambda: self.repo.restore(e.id, layer=layer, confirm=True))

    def op_archive(self, i: int, e: sediment.Entry) -> None:
        self.one("archive", i, e, {"layer": "archive", "status": "archived"},
                 lambda: self.repo.archive(e.id, reason=f"round {self.rnd} op {i}"))

    def op_purge(self, i: int, e: sediment.Entry) -> None:
        self.one("purge", i, e, {"layer": "archive", "status": "purged"},
                 lambda: self.repo.purge(e.id, confirm=True, reason=f"round {self.rnd} op {i}"))

    def op_touch(self, i: int, e: sediment.Entry) -> None:
        refute = self.rng.random() < 0.2
        change = {"layer": "archive", "status": "archived"} if refute else {}
        self.one("touch", i, e, change,
                 lambda: self.repo.touch(e.id, "refute" if refute else "confirm", confirm=refute))

    def op_supersede(self, i: int, old: sediment.Entry, new: sediment.Entry) -> None:
        bo, bn = self.disk(old), self.disk(new)
        eo = {**bo, "status": "superseded", "sup_by": with_link(bo["sup_by"], new.name)}
        en = {**bn, "sups": with_link(bn["sups"], old.name)}

        def check(got):
            self.returned("supersede", got, eo)
            return {old.id: eo, new.id: en}
        self.call("supersede", i, {old.id: bo, new.id: bn}, {old.id: eo, new.id: en}, None,
                  lambda: self.repo.supersede(old.id, new.id, reason=f"op {i}"), check)

    def op_consolidate(self, i: int, frags: list[sediment.Entry]) -> None:
        rng = self.rng
        title = f"r{self.rnd} consolidated {i} {rng.randrange(16 ** 6):06x}"
        # a long distinct tail keeps any other fragment's bigram similarity far below 0.55
        tail = "".join(rng.choice(string.ascii_lowercase) for _ in range(120))
        text = "consolidated: " + "; ".join(f.text for f in frags) + " " + tail
        before = {f.id: self.disk(f) for f in frags}
        # a retired fragment's superseded_by names the new memory (its name is
        # known only afterwards: "at least" nothing, until the ack)
        inflight = {fid: {**s, "layer": "archive", "status": "superseded", "sup_by": []}
                    for fid, s in before.items()}
        new = {"title": title, "layer": "shallow", "room": "", "text": text, "status": "active",
               "kind": "fact", "sup_by": [], "sups": sorted(link(f.name) for f in frags)}
        # killed between writing the memory and its links: no supersedes yet
        new_inflight = {**new, "sups": []}

        def check(got):
            self.returned("consolidate", got, new)
            out = {got.id: new}
            for fid, s in inflight.items():
                out[fid] = {**s, "sup_by": [link(got.name)]}
            return out
        self.call("consolidate", i, before, inflight, [new_inflight],
                  lambda: self.repo.consolidate([f.id for f in frags], text, kind="fact", title=title),
                  check)

    def op_metabolize(self, i: int) -> None:
        days = 3650 if self.rng.random() < 0.7 else self.rng.randint(30, 800)
        when = _dt.datetime.now(_dt.timezone.utc) + _dt.timedelta(days=days)
        plan = self.repo.metabolize(dry_run=True, now=when)
        before, exp = {}, {}
        for m in plan.moves:
            s = self.disk(self.repo.get(m.id))
            before[m.id] = s
            exp[m.id] = {**s, "layer": m.target, **({"status": m.status} if m.status else {})}
        planned = sorted((m.id, m.target, m.status or "") for m in plan.moves)

        def check(result):
            applied = sorted((m.id, m.target, m.status or "") for m in result.moves)
            if applied != planned or result.skipped:
                self.log({"t": "bad", "op": "metabolize", "planned": planned, "applied": applied,
                          "skipped": [str(w) for _, w in result.skipped]})
            return exp
        self.call("metabolize", i, before, exp, None,
                  lambda: self.repo.metabolize(dry_run=False, now=when, confirm=True), check)

    def op_search(self, i: int) -> None:
        q = " ".join(self.rng.sample(WORDS, 2))
        self.call("search", i, {}, {}, None, lambda: self.repo.search(q, limit=5))


def child_main(root: str, ack: str, seed: int, rnd: int, ready_fd: int) -> None:
    Writer(root, ack, seed, rnd).run(ready_fd)


# ---------------------------------------------------------------------------
# the parent


class Child:
    """A writer process: forked from this (warmed-up) process, or spawned."""

    def __init__(self, spawn: bool, root: Path, ack: Path, seed: int, rnd: int) -> None:
        self.t0 = time.monotonic()
        self.ready_at: float | None = None
        if spawn:
            self.proc = subprocess.Popen([sys.executable, __file__, "--child", str(root), str(ack),
                                          str(seed), str(rnd)], stdout=subprocess.PIPE,
                                         stderr=subprocess.PIPE)
            self.pid, self.fd = self.proc.pid, self.proc.stdout.fileno()
            return
        self.proc = None
        self.pid, self.fd = common.fork(lambda w: child_main(str(root), str(ack), seed, rnd, w))
        self.status: int | None = None

    def wait_ready(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready and os.read(self.fd, 64).startswith(b"ready"):
            self.ready_at = time.monotonic()
            return True
        return False

    def is_ready_now(self) -> bool:
        return self.ready_at is not None or self.wait_ready(0)

    def alive(self) -> bool:
        if self.proc is not None:
            return self.proc.poll() is None
        if self.status is not None:
            return False
        pid, st = os.waitpid(self.pid, os.WNOHANG)
        if pid:
            self.status = st
            return False
        return True

    def kill(self) -> bool:
        """SIGKILL it; True when it was still running (a real kill)."""
        was_alive = self.alive()
        if was_alive:
            os.kill(self.pid, signal.SIGKILL)
        if self.proc is not None:
            self.proc.communicate()
            self.proc.stdout.close()
        else:
            if self.status is None:
                os.waitpid(self.pid, 0)
            os.close(self.fd)
        return was_alive


def wait_for(pred, timeout: float, step: float = 0.001) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def count_acks(ack: Path, offset: int) -> int:
    with open(ack, "rb") as fh:
        fh.seek(offset)
        return fh.read().count(b'"t": "ack"')


def matches(actual: dict, expect: dict) -> bool:
    return (all(actual[k] == v for k, v in expect.items() if k not in ("sup_by", "sups"))
            and set(expect["sup_by"]) <= set(actual["sup_by"]) and set(expect["sups"]) <= set(actual["sups"]))


class Verifier:
    def __init__(self, verbose: bool) -> None:
        self.verbose = verbose
        self.model: dict[str, dict] = {}
        self.last_ack: dict[str, int] = {}
        self.pos = 0
        self.c = Counter()
        self.by_op = Counter()
        self.refusals = Counter()
        self.broken: list[str] = []

    def bad(self, kind: str, msg: str) -> None:
        self.c[kind] += 1
        self.broken.append((kind, msg))
        if self.verbose:
            print(f"  ! {kind}: {msg}")

    def take(self, records: list[dict]) -> list[dict]:
        """Fold the new ack-file records into the model; returns the uncertain
        operations (in flight at a kill, or ended by an error)."""
        uncertain: list[dict] = []
        current = None
        for rec in records:
            self.pos += 1
            rec["pos"] = self.pos
            t = rec.get("t")
            if t == "intent":
                if current is not None:
                    uncertain.append(current)  # its writer was killed inside it
                current = rec
            elif t == "ack":
                for eid, s in rec["expect"].items():
                    self.model[eid] = s
                    self.last_ack[eid] = self.pos
                self.c["acknowledged"] += 1
                self.by_op[rec["op"]] += 1
                if rec["op"] == "metabolize":
                    self.c["metabolize moves"] += len(rec["expect"])
                current = None
            elif t == "refused":  # the library said no: nothing may have changed
                for eid, s in rec["expect"].items():
                    self.model[eid] = s
                    self.last_ack[eid] = self.pos
                self.c["refused"] += 1
                self.refusals[rec["exc"].split(":")[0] + " " + rec["op"]] += 1
                current = None
            elif t == "error":
                if current is not None:
                    uncertain.append(current)
                current = None
                self.bad("writer errors", f"{rec['op']} raised {rec['exc']}"
                         + ("" if not self.verbose else "\n" + rec.get("tb", "")))
            elif t == "bad":
                self.bad("bad returns", f"{rec['op']}: returned {rec.get('returned') or rec.get('applied')} "
                                        f"for {rec.get('expect') or rec.get('planned')}")
        if current is not None:
            uncertain.append(current)
        self.c["kills inside an operation"] += sum(1 for u in uncertain)
        return uncertain

    def verify(self, root: Path, uncertain: list[dict], ctx: str) -> bool:
        """Open the root and check it. False when it cannot be opened at all."""
        try:
            repo = Repository(root, policy=POLICY)
        except Exception as exc:  # noqa: BLE001
            self.bad("open failures", f"{ctx}: {describe(exc)}")
            return False
        try:
            problems = repo.check()
            view = {e.id: e for e in [*repo.list(), *repo.list(status="purged")]}  # purged: listed when asked for
        except Exception as exc:  # noqa: BLE001
            self.bad("open failures", f"{ctx}: check/list raised {describe(exc)}")
            return False
        finally:
            try:
                repo.close()
            except Exception as exc:  # noqa: BLE001
                self.bad("open failures", f"{ctx}: close raised {describe(exc)}")
        pending = [p for p in problems if p.code == "journal_pending"]
        if pending:
            self.bad("journal pending after open", f"{ctx}: {[str(p) for p in pending][:3]}")
        errs = [str(p) for p in problems if p.severity == "error" and p.code != "journal_pending"]
        if errs:
            self.bad("check errors", f"{ctx}: {errs[:3]}")
        temps = temp_files(root)
        if temps:
            self.bad("temp files after recover", f"{ctx}: {temps[:5]}")

        found, torn = scan(root)
        for rel in torn:
            self.bad("torn files", f"{ctx}: {rel} does not parse")
        for eid, es in found.items():
            if len(es) > 1:
                self.bad("duplicated", f"{ctx}: {eid} in {[e.path for e in es]}")

        def alternatives(eid: str) -> list[dict]:
            return [u["expect"][eid] for u in uncertain
                    if eid in u["expect"] and u["pos"] > self.last_ack.get(eid, -1)]

        for eid, exp in list(self.model.items()):
            if eid not in found:
                self.bad("lost", f"{ctx}: acknowledged memory {eid} ({exp['title']}) is gone")
                del self.model[eid]
                continue
            actual = state(found[eid][0])
            if matches(actual, exp):
                continue
            if any(matches(actual, alt) for alt in alternatives(eid)):
                self.c["in-flight operation had happened"] += 1
            elif actual["text"] != exp["text"] or actual["title"] != exp["title"]:
                self.bad("lost", f"{ctx}: {eid} has content {actual['text'][:60]!r}, acknowledged "
                                 f"{exp['text'][:60]!r}")
            else:
                diff = {k: (actual[k], exp[k]) for k in exp if actual[k] != exp[k]}
                self.bad("wrong state", f"{ctx}: {eid} (actual, acknowledged): {diff}")
            self.model[eid] = actual
        news = [n for u in uncertain for n in u.get("new", [])]
        for eid in sorted(set(found) - set(self.model)):
            actual = state(found[eid][0])
            if any(matches(actual, n) for n in news):
                self.c["in-flight add had happened"] += 1
            else:
                self.bad("phantom memories", f"{ctx}: {eid} ({actual['title']}) was never written")
            self.model[eid] = actual
        if set(view) != set(found):
            self.bad("view differs from disk", f"{ctx}: view-only {sorted(set(view) - set(found))[:3]}, "
                                               f"disk-only {sorted(set(found) - set(view))[:3]}")
        else:
            for eid, e in view.items():
                if e.path != found[eid][0].path or state(e) != state(found[eid][0]):
                    self.bad("view differs from disk", f"{ctx}: {eid} view {e.path}, disk {found[eid][0].path}")
        return True


def main() -> int:
    p = common.parser(__doc__)
    p.add_argument("--kills", type=int, default=1000, help="SIGKILLs in all (default 1000)")
    p.add_argument("--per-root", type=int, default=250, help="kills before starting a fresh root (250)")
    p.add_argument("--spawn", action="store_true",
                   help="a fresh interpreter per writer (slower; kills land in imports too)")
    p.add_argument("--child", nargs=4, metavar=("ROOT", "ACK", "SEED", "ROUND"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        root, ack, seed, rnd = args.child
        child_main(root, ack, int(seed), int(rnd), sys.stdout.fileno())
        return 0
    if not hasattr(signal, "SIGKILL") or not hasattr(os, "fork"):
        print("skipped: needs SIGKILL and fork (POSIX)")
        return 0
    if args.smoke:
        args.kills, args.per_root = 20, 20
    common.quiet_library_log(args.verbose)
    seed = common.seed_of(args)
    rng = random.Random(seed)
    print(f"kill.py: seed={seed} kills={args.kills} per-root={args.per_root} "
          f"writer={'spawned' if args.spawn else 'forked'}")

    started = time.monotonic()
    v = Verifier(args.verbose)
    kinds = Counter()
    ready_times: list[float] = []
    kills = 0
    rnd = 0
    next_report = 50
    # warm up this process (jieba's dictionary), so forked writers start fast
    common.warm_up()
    with common.temp_dir("kill") as tmp:
        root = ack = None
        root_no = -1
        while kills < args.kills:
            if kills // args.per_root != root_no:
                root_no = kills // args.per_root
                root = tmp / f"mem{root_no}"
                ack = tmp / f"ack{root_no}.jsonl"
                Repository(root, policy=POLICY).close()
                v.model.clear()
                v.last_ack.clear()
                offset = 0
            rnd += 1
            r = rng.random()
            kind = "op" if r < 0.7 or rnd < 3 else ("open" if r < 0.85 else "recovery")
            if kind == "recovery" and args.kills - kills < 2:
                kind = "op"
            ctx = f"seed={seed} round={rnd} ({kind})"
            children = []
            if kind in ("op", "recovery"):
                ch = Child(args.spawn, root, ack, rng.randrange(2 ** 31), rnd)
                children.append(ch)
                if not ch.wait_ready(60):
                    ch.kill()
                    v.bad("writer never ready", ctx)
                    break
                ready_times.append(ch.ready_at - ch.t0)
                if kind == "recovery":
                    # kill while a journal intent is pending (a move, purge, metabolize…)
                    n0 = count_acks(ack, offset)

                    def pending_or_enough(ch=ch, root=root, ack=ack, offset=offset, n0=n0):
                        return bool(journal_pending(root)) or count_acks(ack, offset) > n0 + 40 or not ch.alive()
                    wait_for(pending_or_enough, 30, 0.0005)
                else:
                    n = rng.randint(0, 8)

                    def acked_enough(ch=ch, ack=ack, offset=offset, n=n):
                        return count_acks(ack, offset) >= n or not ch.alive()
                    wait_for(acked_enough, 30)
                    time.sleep(rng.choice((rng.uniform(0, 0.003), rng.uniform(0, 0.02), rng.uniform(0, 0.08))))
                if not ch.kill():
                    v.bad("writer exited by itself", ctx)
                else:
                    kills += 1
                    kinds["during operations"] += 1
                    kinds["left a journal intent pending"] += bool(journal_pending(root))
            if kind in ("open", "recovery"):
                pending_before = bool(journal_pending(root))
                med = statistics.median(ready_times) if ready_times else 0.2
                ch = Child(args.spawn, root, ack, rng.randrange(2 ** 31), rnd)
                children.append(ch)
                time.sleep(rng.uniform(0, med * 1.3))
                ready = ch.is_ready_now()
                if not ch.kill():
                    v.bad("writer exited by itself", ctx)
                else:
                    kills += 1
                    kinds["left a journal intent pending"] += bool(journal_pending(root))
                    if ready:
                        kinds["open-timed, landed after open"] += 1
                    else:
                        kinds["during open/recovery"] += 1
                        kinds["during open/recovery with a journal intent pending"] += pending_before
            records, offset = read_jsonl(ack, offset, cut_torn=True)
            uncertain = v.take(records)
            if not v.verify(root, uncertain, ctx):
                break
            if kills >= next_report and not args.smoke:
                next_report += 50
                print(f"  … {kills} kills, {v.c['acknowledged']} acknowledged, "
                      f"{time.monotonic() - started:.0f} s", flush=True)

    elapsed = time.monotonic() - started
    counts = {
        "kills": kills,
        "  during operations": kinds["during operations"],
        "  during open/recovery": kinds["during open/recovery"],
        "  … of those with an intent pending": kinds["during open/recovery with a journal intent pending"],
        "  open-timed, landed after open": kinds["open-timed, landed after open"],
        "  left a journal intent pending": kinds["left a journal intent pending"],
        "acknowledged operations": v.c["acknowledged"],
        "  by op": ", ".join(f"{k} {n}" for k, n in sorted(v.by_op.items())),
        "  metabolize moves acknowledged": v.c["metabolize moves"],
        "refused by the library (verified unchanged)": v.c["refused"],
        "  by error and op": ", ".join(f"{k} {n}" for k, n in sorted(v.refusals.items())) or "-",
        "kills inside an operation": v.c["kills inside an operation"],
        "in-flight op had happened": v.c["in-flight operation had happened"] + v.c["in-flight add had happened"],
        "lost": v.c["lost"],
        "duplicated": v.c["duplicated"],
        "wrong state": v.c["wrong state"],
        "phantom memories": v.c["phantom memories"],
        "torn files": v.c["torn files"],
        "journal pending after open": v.c["journal pending after open"],
        "temp files after recover": v.c["temp files after recover"],
        "check errors": v.c["check errors"],
        "view differs from disk": v.c["view differs from disk"],
        "open failures": v.c["open failures"],
        "writer errors": v.c["writer errors"],
        "bad returns": v.c["bad returns"],
        "seconds": f"{elapsed:.0f}",
    }
    common.summary(f"kill.py seed={seed}", counts)
    return common.finish(v.broken)


if __name__ == "__main__":
    sys.exit(main())
