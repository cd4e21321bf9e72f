"""Several writers on one root at the same time: processes, instances and threads.

The multi-process test makes every update an append of a unique token to the
memory's text, read-modify-write with ``expected=version`` and a retry on
``Conflict``. Writers are serialized by the lock, so for every memory the
acknowledged texts must form one chain: the final text holds every
acknowledged token exactly once, and every acknowledged text is a prefix of
it. A lost update, a torn file or a stale read that slipped past the version
check breaks that.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest

import sediment
from sediment import Conflict, Repository

from _disk import errors, scan, temp_files

PROCS = 4
OPS = 100

WORKER = r'''
import json, os, random, sys, time
from sediment import Conflict, Repository

root, out, wid, seed, go, n_ops = sys.argv[1:7]
wid, n_ops = int(wid), int(n_ops)
rng = random.Random(int(seed))
repo = Repository(root, policy={"lock_timeout_seconds": 60})
log = open(out, "ab", buffering=0)


def ack(rec):
    log.write((json.dumps(rec) + "\n").encode())


print("ready", flush=True)
while not os.path.exists(go):
    time.sleep(0.001)

mine, conflicts, cross = [], 0, 0
for i in range(n_ops):
    # a pause between calls, as an agent makes: without it one process re-takes the
    # lock at once while the others are asleep in their back-off, and runs alone
    time.sleep(rng.uniform(0, 0.006))
    r = rng.random()
    if len(mine) < 3 or r < 0.3:
        tok = f"w{wid}a{i}"
        # some titles are shared by all workers: the names must still come out unique
        title = f"shared {i % 5}" if rng.random() < 0.3 else f"w{wid} note {i}"
        e = repo.add(tok, title=title, tags=[f"w{wid}"], kind="fact")
        if e.text != tok:
            sys.exit(f"add returned {e.text!r}, not {tok!r}")
        mine.append(e.id)
        ack({"op": "add", "id": e.id, "token": tok, "text": e.text, "path": e.path})
        continue
    hot = rng.random() < 0.5  # half the updates go to a few memories everyone writes
    if r < 0.6:
        eid = rng.choice(mine[:2] if hot else mine)
    else:
        others = [e.id for e in repo.list() if f"w{wid}" not in e.tags]
        eid = rng.choice((others[:4] if hot else others) or mine)
        cross += bool(others)
    tok = f"w{wid}u{i}"
    for _ in range(2000):
        cur = repo.get(eid)
        new = cur.text + " " + tok
        if hot:
            time.sleep(rng.uniform(0, 0.003))  # think a little: others may write meanwhile
        try:
            e = repo.update(eid, expected=cur.version, text=new)
            break
        except Conflict:
            conflicts += 1
    else:
        sys.exit(f"update of {eid} kept raising Conflict")
    if e.text != new:
        sys.exit(f"update returned {e.text!r}, not {new!r}")
    ack({"op": "update", "id": eid, "token": tok, "text": new})
ack({"op": "end", "conflicts": conflicts, "cross": cross})
'''


def _readline(proc: subprocess.Popen, timeout: float) -> str:
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return proc.stdout.readline().decode().strip() if ready else ""


def _scan_while(root: Path, running, timeout: float) -> tuple[list[str], int]:
    torn: list[str] = []
    scans = 0
    deadline = time.monotonic() + timeout
    seen: dict[Path, tuple[int, int]] = {}
    while running() and time.monotonic() < deadline:
        for p in root.rglob("*.md"):
            try:
                st = p.stat()
                if seen.get(p) == (st.st_mtime_ns, st.st_size):
                    continue  # unchanged since it last parsed
                sediment.parse(p.read_bytes(), p.relative_to(root).as_posix())
                seen[p] = (st.st_mtime_ns, st.st_size)
            except FileNotFoundError:
                continue
            except sediment.ParseError as exc:
                torn.append(str(exc))
        scans += 1
        time.sleep(0.002)
    return torn, scans


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in procs:
        if p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.wait()


# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_processes_writing_at_once_lose_nothing(tmp_path):
    root = tmp_path / "mem"
    Repository(root).close()
    go = tmp_path / "go"
    outs = [tmp_path / f"worker{w}.jsonl" for w in range(PROCS)]
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, str(root), str(outs[w]), str(w),
                               str(1000 + w), str(go), str(OPS)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
             for w in range(PROCS)]
    try:
        for p in procs:
            assert _readline(p, 60) == "ready", p.communicate()[1].decode(errors="replace")
        go.touch()  # all start writing together
        # meanwhile read every file, as an editor or a git client would: none may be torn
        torn, scans = _scan_while(root, lambda: any(p.poll() is None for p in procs), 120)
        assert not torn, f"a reader saw a half-written file: {torn[:3]}"
        assert scans > 0
        deadline = time.monotonic() + 120
        for w, p in enumerate(procs):
            _, err = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            assert p.returncode == 0, f"worker {w} failed: {err.decode(errors='replace')}"
    finally:
        _stop(procs)

    adds: dict[str, dict] = {}
    updates: dict[str, list[dict]] = defaultdict(list)
    conflicts = cross = 0
    for w, out in enumerate(outs):
        recs = [json.loads(line) for line in out.read_text().splitlines()]
        assert recs[-1]["op"] == "end" and len(recs) == OPS + 1, f"worker {w} did not finish"
        conflicts += recs[-1]["conflicts"]
        cross += recs[-1]["cross"]
        for rec in recs[:-1]:
            if rec["op"] == "add":
                assert rec["id"] not in adds, f"id {rec['id']} handed out twice"
                adds[rec["id"]] = rec
            else:
                updates[rec["id"]].append(rec)
    assert cross > 0, "no worker updated another worker's memory"

    found = scan(root)
    assert temp_files(root) == []
    assert set(found) == set(adds), (
        f"missing: {sorted(set(adds) - set(found))}, unexpected: {sorted(set(found) - set(adds))}")
    dupes = {i: [e.path for e in es] for i, es in found.items() if len(es) > 1}
    assert not dupes
    names = [es[0].name for es in found.values()]
    assert len(set(names)) == len(names), "two memories got the same name"

    for eid, add in adds.items():
        final = found[eid][0].text
        tokens = final.split(" ")
        acked = [add["token"]] + [u["token"] for u in updates[eid]]
        assert tokens[0] == add["token"]
        assert sorted(tokens) == sorted(acked), (
            f"{eid}: tokens on disk {tokens}, acknowledged {acked} (lost or phantom update)")
        for u in updates[eid]:
            assert final.startswith(u["text"]), (
                f"{eid}: acknowledged text {u['text']!r} is not part of the final history {final!r}")
        last = next((u for u in updates[eid] if u["token"] == tokens[-1]), add)
        assert last["text"] == final

    repo = Repository(root)
    assert {e.id for e in repo.list()} == set(adds)
    for eid in adds:
        assert repo.get(eid).text == found[eid][0].text
    assert errors(repo) == []
    print(f"\n{PROCS} processes x {OPS} ops: {len(adds)} memories, "
          f"{sum(map(len, updates.values()))} updates, {conflicts} conflicts retried, "
          f"{cross} cross-process updates")


# ---------------------------------------------------------------------------
# stale reads


def test_stale_update_between_two_instances_is_a_conflict(tmp_path):
    root = tmp_path / "mem"
    one = Repository(root)
    e = one.add("first version", title="contested")
    two = Repository(root)

    read_one = one.get(e.id)
    read_two = two.get(e.id)
    assert read_one.version == read_two.version

    won = one.update(e.id, expected=read_one.version, text="one's version")
    path = root / won.path
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    with pytest.raises(Conflict):
        two.update(e.id, expected=read_two.version, text="two's lost update")
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert temp_files(root) == []
    # after the conflict, two sees the current version and can build on it
    fresh = two.get(e.id)
    assert fresh.text == "one's version" and fresh.version == won.version
    two.update(e.id, expected=fresh.version, text="two's merged version")
    assert Repository(root).get(e.id).text == "two's merged version"
    assert [x.path for x in scan(root)[e.id]] == [won.path]


STALE_READER = r'''
import sys
from sediment import Conflict, Repository

root, eid = sys.argv[1], sys.argv[2]
repo = Repository(root)
seen = repo.get(eid)
print(seen.version, flush=True)
sys.stdin.readline()  # the other process writes in the meantime
try:
    repo.update(eid, expected=seen.version, text="stale process overwrote it")
    print("ok", flush=True)
except Conflict as exc:
    print("conflict", exc.details.get("actual"), flush=True)
'''


def test_stale_update_from_another_process_is_a_conflict_and_writes_nothing(tmp_path):
    root = tmp_path / "mem"
    repo = Repository(root)
    e = repo.add("first version", title="contested")
    proc = subprocess.Popen([sys.executable, "-c", STALE_READER, str(root), e.id],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            cwd=tmp_path)
    try:
        seen_version = _readline(proc, 60)
        assert seen_version == e.version, proc.communicate()[1].decode(errors="replace")
        won = repo.update(e.id, expected=e.version, text="the newer version")
        path = root / won.path
        before, mtime = path.read_bytes(), path.stat().st_mtime_ns
        files_before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))

        out, err = proc.communicate(b"go\n", timeout=60)
    finally:
        _stop([proc])
    assert proc.returncode == 0, err.decode(errors="replace")
    assert out.decode().split() == ["conflict", won.version]
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md")) == files_before
    assert temp_files(root) == []
    assert repo.get(e.id).text == "the newer version"
    assert Repository(root).get(e.id).text == "the newer version"


# ---------------------------------------------------------------------------
# threads sharing one Repository


def test_threads_sharing_one_repository_lose_no_adds(tmp_path):
    root = tmp_path / "mem"
    repo = Repository(root)
    per_thread = 50
    results: dict[int, list[sediment.Entry]] = defaultdict(list)
    failures: list[str] = []
    start = threading.Barrier(4 + 1)
    done = threading.Event()

    def writer(t: int) -> None:
        try:
            start.wait()
            for i in range(per_thread):
                title = f"same title {i % 3}" if i % 2 else f"thread {t} item {i}"
                e = repo.add(f"thread {t} wrote item {i}", title=title, tags=[f"t{t}"])
                results[t].append(e)
                assert repo.get(e.id).text == e.text  # reads its own write
        except Exception as exc:  # reported below, with the thread
            failures.append(f"writer {t}: {exc!r}")

    def reader() -> None:
        try:
            start.wait()
            while not done.is_set():
                repo.list()
                repo.search("thread item")
                len(repo)
                time.sleep(0.001)
        except Exception as exc:
            failures.append(f"reader: {exc!r}")

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    rd = threading.Thread(target=reader)
    for th in [*threads, rd]:
        th.start()
    for th in threads:
        th.join(60)
    done.set()
    rd.join(60)
    assert not failures, failures

    added = [e for t in range(4) for e in results[t]]
    assert len(added) == 4 * per_thread
    assert len({e.id for e in added}) == len(added)
    assert len({e.path for e in added}) == len(added), "two adds wrote the same file"
    assert len(repo) == len(added)
    found = scan(root)
    assert set(found) == {e.id for e in added} and all(len(v) == 1 for v in found.values())
    assert temp_files(root) == []
    fresh = Repository(root)
    for e in added:
        got = fresh.get(e.id)
        assert (got.path, got.text) == (e.path, e.text)
    assert errors(fresh) == []
