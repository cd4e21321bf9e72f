"""Crash safety: real processes killed with SIGKILL, then the root is reopened.

The stream test runs a child process that performs adds, updates, moves,
archives and purges on one root. Before each call it appends the intended
result to an ack file ("intent"), after the call returns it appends the same
result as acknowledged ("ack"), each line flushed and fsync'd. The parent kills
the child at a random moment, reopens the root and checks that

* every acknowledged memory exists exactly once under the layer folders, parses,
  and looks like its last acknowledged state -- or like the result of the one
  operation that was in flight when the kill landed (it may or may not have
  happened);
* nothing else exists (an unacknowledged add may have happened, nothing more);
* no temp file is left anywhere under the root;
* ``check()`` reports no error.

A call that returns an Entry different from what it did (the files being
right) is collected and fails the test at the end, after all crash checks.

The deterministic tests drive the recovery paths one at a time: a move
interrupted before its destination exists (roll back), after the destination
is written but before the source is removed (roll forward), after the source
is removed but before "done" -- simulated with the Journal API, and for real by
a child that SIGKILLs itself at that point. Then: a live process must not lose
an update to a peer that died mid-move; a torn last journal line; temp files
anywhere under the root (the cache folder included) are swept on open.
"""

from __future__ import annotations

import errno
import json
import os
import random
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import sediment
from sediment import Conflict, Entry, NotFound, Repository
from sediment.verbs import health
from sediment.store import moves
from sediment.disk import journal as J
from sediment.disk.journal import Feed, Journal
from sediment.store.store import Store

from _disk import errors, scan, temp_files

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL (POSIX)")

POLICY = {"destructive_per_hour": 100000}
ROUNDS = 50

# ---------------------------------------------------------------------------
# the child of the stream test (run with ``python -c``; argv: root ack seed round)

STREAM_CHILD = r'''
import json, os, random, sys
import sediment.disk.journal
from sediment import LAYERS, Repository, parse

root, ack_path, seed, rnd = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# compaction (run by recover() on open) then happens within the test's rounds too
sediment.disk.journal.COMPACT_BYTES = 24 * 1024
rng = random.Random(seed)
ack = open(ack_path, "ab", buffering=0)


def log(rec):
    ack.write((json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"))
    os.fsync(ack.fileno())


def state(e):
    return {"title": e.title, "layer": e.layer, "room": e.room, "text": e.text, "status": e.status}


WORDS = ("granite", "silt", "river", "delta", "loam", "clay", "basalt", "ochre", "tide", "moraine",
         "café", "naïve", "strata")


def text(i):
    words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
    second = "\n\nsecond paragraph " + words[::-1] if rng.random() < 0.3 else ""
    return f"r{rnd} op{i} {words}{second}"


repo = Repository(root, policy={"destructive_per_hour": 100000})
sys.stdout.write("ready\n")
sys.stdout.flush()

for i in range(1, 100000):
    entries = repo.list()
    live = [e for e in entries if e.status != "purged"]
    p_add = 0.35 if len(entries) < 60 else 0.1
    r = rng.random()
    if not live or r < p_add:
        title = f"r{rnd} n{i} {rng.randrange(16 ** 6):06x}"
        layer = rng.choice(("shallow", "shallow", "sediment", "bedrock"))
        room = rng.choice(("", "", "topic", "topic/deeper"))
        op = "add"
        expect = {"title": title, "layer": layer, "room": room, "text": text(i), "status": "active"}
        log({"t": "intent", "op": op, "id": None, "expect": expect})
        e = repo.add(expect["text"], title=title, room=room or None, layer=layer, kind="fact")
    else:
        target = rng.choice(live)  # (a purged memory is never changed again: update and move refuse it)
        # the state to start from, as the file says (not the library's view of it)
        expect = state(parse(open(os.path.join(root, target.path), "rb").read(), target.path))
        if r < 0.55:
            op = "update"
            expect["text"] = text(i)
        elif r < 0.8:
            op = "move"
            expect["layer"] = rng.choice([x for x in LAYERS if x != expect["layer"]])
            if expect["layer"] != "archive" and expect["status"] == "archived":
                op = "restore"  # out of archive is restore's job
                expect["status"] = "active"
            elif expect["layer"] == "archive":
                expect["status"] = "archived"
        elif r < 0.9:
            op = "archive"
            expect["layer"], expect["status"] = "archive", "archived"
        else:
            op = "purge"
            expect["layer"], expect["status"] = "archive", "purged"
        log({"t": "intent", "op": op, "id": target.id, "expect": expect})
        if op == "update":
            e = repo.update(target.id, expected=target.version, text=expect["text"])
        elif op == "move":
            e = repo.move(target.id, expect["layer"])
        elif op == "restore":
            e = repo.restore(target.id, layer=expect["layer"])
        elif op == "archive":
            e = repo.archive(target.id, reason=f"round {rnd} op {i}")
        else:
            e = repo.purge(target.id, confirm=True, reason=f"round {rnd} op {i}")
    if state(e) != expect:  # the parent fails the test at the end, after all crash checks
        log({"t": "bad", "op": op, "id": e.id, "expect": expect, "returned": state(e)})
    log({"t": "ack", "id": e.id, "expect": expect})
'''


# ---------------------------------------------------------------------------
# helpers


def state_of(e: sediment.Entry) -> dict:
    return {"title": e.title, "layer": e.layer, "room": e.room, "text": e.text, "status": e.status}


def pending_ops(root: Path) -> list[dict]:
    j = Journal(root / "_system" / "journal.log")
    return j.pending(j.read().records)


def read_new_records(ack_path: Path, offset: int) -> tuple[list[dict], int]:
    """Complete lines from ``offset``. A torn last line (the kill landed inside
    the write) is cut off the file, so the next child appends on a fresh line."""
    data = ack_path.read_bytes() if ack_path.exists() else b""
    end = data.rfind(b"\n") + 1
    if end < len(data):
        os.truncate(ack_path, end)
    lines = data[offset:end].decode("utf-8").splitlines()
    return [json.loads(ln) for ln in lines if ln.strip()], end


def wait_acks(proc: subprocess.Popen, ack_path: Path, offset: int, n: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        with open(ack_path, "rb") as fh:
            fh.seek(offset)
            if fh.read().count(b'"t": "ack"') >= n:
                return
        time.sleep(0.002)


def wait_ready(proc: subprocess.Popen, timeout: float) -> bool:
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    return bool(ready) and proc.stdout.readline().strip() == b"ready"


# ---------------------------------------------------------------------------
# the stream under SIGKILL


@pytest.mark.slow
def test_sigkill_during_a_stream_of_writes_loses_nothing_acknowledged(tmp_path):
    seed = random.randrange(2 ** 32)
    rng = random.Random(seed)
    root = tmp_path / "mem"
    ack_path = tmp_path / "ack.jsonl"
    Repository(root, policy=POLICY)

    model: dict[str, dict] = {}  # id -> last acknowledged (or observed) state
    offset = 0
    acked_ops = 0
    mid_op_kills = 0
    journal_pending_kills = 0
    in_flight_happened = 0
    bad_returns: list[dict] = []  # calls whose returned Entry differs from what was asked

    for rnd in range(ROUNDS):
        ctx = f"seed={seed} round={rnd}"
        proc = subprocess.Popen(
            [sys.executable, "-c", STREAM_CHILD, str(root), str(ack_path), str(rng.randrange(2 ** 32)),
             str(rnd)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
        try:
            if rnd % 5 == 4:
                # counted from the start: may land in start-up, in recovery, or in the first ops
                time.sleep(rng.uniform(0.05, 0.6))
            else:
                if not wait_ready(proc, 30):
                    proc.kill()
                    pytest.fail(f"{ctx}: child never got ready: {proc.communicate()[1].decode(errors='replace')}")
                # let it acknowledge a few operations (none, sometimes), then kill at a
                # random point of the following ones
                wait_acks(proc, ack_path, offset, rng.randint(0, 12), 30)
                time.sleep(rng.choice((rng.uniform(0, 0.003), rng.uniform(0, 0.02), rng.uniform(0, 0.08))))
            alive = proc.poll() is None
            if alive:
                os.kill(proc.pid, signal.SIGKILL)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
            _, err = proc.communicate()
        records, offset = read_new_records(ack_path, offset)
        bad_returns += [r for r in records if r["t"] == "bad"]
        assert alive, f"{ctx}: child exited by itself ({proc.returncode}): {err.decode(errors='replace')}"
        assert proc.returncode == -signal.SIGKILL
        in_flight = None
        for rec in records:
            if rec["t"] == "intent":
                in_flight = rec
            elif rec["t"] == "ack":
                assert in_flight is not None and in_flight["expect"] == rec["expect"]
                model[rec["id"]] = rec["expect"]
                in_flight = None
                acked_ops += 1
        mid_op_kills += in_flight is not None
        journal_pending_kills += bool(pending_ops(root))

        repo = Repository(root, policy=POLICY)  # recovery runs here
        found = scan(root)

        dupes = {i: [e.path for e in es] for i, es in found.items() if len(es) != 1}
        assert not dupes, f"{ctx}: memories on disk more than once: {dupes}"
        for eid, expect in model.items():
            assert eid in found, f"{ctx}: acknowledged memory {eid} ({expect}) is gone"
            actual = state_of(found[eid][0])
            if actual == expect:
                continue
            assert in_flight is not None and in_flight["id"] == eid and actual == in_flight["expect"], (
                f"{ctx}: {eid} is {actual}, acknowledged {expect}; in flight: {in_flight}")
            model[eid] = actual
            in_flight_happened += 1
        extra = [eid for eid in found if eid not in model]
        if extra:
            assert len(extra) == 1 and in_flight is not None and in_flight["op"] == "add", (
                f"{ctx}: unknown memories on disk: {extra}; in flight: {in_flight}")
            actual = state_of(found[extra[0]][0])
            assert actual == in_flight["expect"], f"{ctx}: unacknowledged add looks wrong: {actual}"
            model[extra[0]] = actual
            in_flight_happened += 1

        assert temp_files(root) == [], f"{ctx}: temp files left after reopen"
        assert not pending_ops(root), f"{ctx}: journal operations still pending after reopen"
        view = {e.id: e for e in [*repo.list(), *repo.list(status="purged")]}  # (purged: listed when asked for)
        assert set(view) == set(found), f"{ctx}: the repository's view differs from the files"
        for eid, e in view.items():
            assert e.path == found[eid][0].path and state_of(e) == model[eid]
        assert errors(repo) == [], f"{ctx}: check() reports errors"

    print(f"\ncrash stream: seed={seed} rounds={ROUNDS} acked ops={acked_ops} memories={len(model)} "
          f"kills mid-op={mid_op_kills} with journal op pending={journal_pending_kills} "
          f"in-flight op had happened={in_flight_happened}")
    assert not bad_returns, (f"{len(bad_returns)} calls returned an Entry that differs from what they "
                             f"did (the files are right): {bad_returns[:2]}")
    # the harness itself must have done real work and killed inside operations
    assert acked_ops >= 2 * ROUNDS
    assert mid_op_kills >= ROUNDS // 5
    assert len(model) >= 20


# ---------------------------------------------------------------------------
# deterministic recovery paths (the crash simulated with the Journal API)


def _one_memory(root: Path) -> sediment.Entry:
    repo = Repository(root, policy=POLICY)
    e = repo.add("the original text", title="moving note", room="topic", kind="fact")
    repo.close()
    return e


def test_roll_forward_when_destination_written_but_source_not_removed(tmp_path):
    root = tmp_path / "mem"
    e = _one_memory(root)
    dst = f"sediment/topic/{e.name}.md"
    Journal(root / "_system" / "journal.log").begin("move", id=e.id, src=e.path, dst=dst)
    (root / dst).parent.mkdir(parents=True)
    shutil.copyfile(root / e.path, root / dst)  # the new file complete, the old not yet removed

    repo = Repository(root, policy=POLICY)
    found = scan(root)
    assert [x.path for x in found[e.id]] == [dst]
    assert not (root / e.path).exists()
    assert repo.get(e.id).path == dst and repo.get(e.id).text == "the original text"
    assert not pending_ops(root)
    assert errors(repo) == []
    # and it stays that way on the next open
    assert [x.path for x in scan(root)[e.id]] == [dst]
    assert Repository(root).get(e.id).path == dst


def test_a_person_saving_in_place_into_a_hard_linked_move_keeps_one_file(tmp_path):
    """A move of unchanged bytes links the source at the destination (one file,
    two names). Killed before the source went, then a person saved the source
    in place: both names show the save. Recovery undoes the move by dropping
    the name it made, so the memory is in one file, with the person's line."""
    root = tmp_path / "mem"
    e = _one_memory(root)
    dst = f"sediment/topic/{e.name}.md"
    (root / dst).parent.mkdir(parents=True)
    os.link(root / e.path, root / dst)
    Journal(root / "_system" / "journal.log").begin("metabolize", id=e.id, src=e.path, dst=dst,
                                                    ver=e.version, dver=e.version)
    with open(root / e.path, "ab") as fh:  # an editor that saves in place
        fh.write(b"\nA line the person added.\n")

    repo = Repository(root, policy=POLICY)
    assert [x.path for x in scan(root)[e.id]] == [e.path]
    assert "A line the person added." in repo.get(e.id).text
    assert not pending_ops(root)
    assert errors(repo) == []


class _Killed(BaseException):
    """The process killed at this point (nothing after it runs)."""


@pytest.mark.parametrize("person", ["saved", "removed"])
def test_a_same_bytes_move_without_hard_links_writes_nothing_once_the_source_changed(tmp_path, monkeypatch,
                                                                                      person):
    """Where the file system has no hard links, a move of unchanged bytes
    copies the bytes it reads. A person who saved (or removed) the note just
    before that read gets their save kept and nothing written: a copy of other
    bytes (the note rendered again) is not what the intent says the move
    writes, so a kill before the source went left it where recovery cannot
    withdraw it (the id in two files, or the removed note back)."""
    note = tmp_path / "shallow" / "ops" / "deploy.md"
    note.parent.mkdir(parents=True)
    data = (b"---\nid: HAND1\ntitle:   Deploy   # typed by hand\n"
            b"created: '2026-01-01T00:00:00+00:00'\n---\nby hand\n")
    note.write_bytes(data)
    saved = data.replace(b"by hand", b"by hand, and a line the person added")
    repo = Repository(tmp_path, policy=POLICY)

    def no_hard_links(src, dst, **kw):
        if note.exists() and note.read_bytes() == data:  # the person acts as the move tries to link
            note.write_bytes(saved) if person == "saved" else note.unlink()
        raise OSError(errno.EPERM, "this file system has no hard links")

    def killed(*a, **k):
        raise _Killed()
    monkeypatch.setattr(os, "link", no_hard_links)
    monkeypatch.setattr(moves, "detach", killed)
    with pytest.raises(Conflict if person == "saved" else NotFound):
        repo.move("HAND1", "sediment")
    monkeypatch.undo()
    assert not pending_ops(tmp_path)
    if person == "saved":  # (the view shows the save the Conflict kept)
        assert "the person added" in repo.get("HAND1").text
    again = Repository(tmp_path, policy=POLICY)
    if person == "saved":
        assert {x.path for x in scan(tmp_path)["HAND1"]} == {"shallow/ops/deploy.md"}
        assert note.read_bytes() == saved and "the person added" in again.get("HAND1").text
    else:
        assert "HAND1" not in scan(tmp_path)
        with pytest.raises(NotFound):
            again.get("HAND1")
    assert temp_files(tmp_path) == [] and errors(again) == []


def test_roll_forward_when_source_already_removed(tmp_path):
    root = tmp_path / "mem"
    e = _one_memory(root)
    dst = f"bedrock/topic/{e.name}.md"
    Journal(root / "_system" / "journal.log").begin("move", id=e.id, src=e.path, dst=dst)
    (root / dst).parent.mkdir(parents=True)
    os.replace(root / e.path, root / dst)  # crash after the unlink, before "done"

    repo = Repository(root, policy=POLICY)
    assert [x.path for x in scan(root)[e.id]] == [dst]
    assert repo.get(e.id).path == dst
    assert not pending_ops(root)
    assert errors(repo) == []


def test_roll_back_when_destination_never_written(tmp_path):
    root = tmp_path / "mem"
    e = _one_memory(root)
    before = (root / e.path).read_bytes()
    dst = f"archive/topic/{e.name}.md"
    Journal(root / "_system" / "journal.log").begin("archive", id=e.id, src=e.path, dst=dst)
    # the crash landed inside the atomic write: only a half-written temp file
    (root / "archive" / "topic").mkdir(parents=True)
    (root / "archive" / "topic" / f".{e.name}.md.0badf00d.tmp").write_bytes(before[: len(before) // 2])

    repo = Repository(root, policy=POLICY)
    assert [x.path for x in scan(root)[e.id]] == [e.path]
    assert (root / e.path).read_bytes() == before
    assert not (root / dst).exists()
    assert temp_files(root) == []
    assert repo.get(e.id).path == e.path
    assert not pending_ops(root)
    assert errors(repo) == []
    # the memory is usable: the interrupted move can simply be done again
    assert repo.archive(e.id, reason="again").path == dst
    assert [x.path for x in scan(root)[e.id]] == [dst]


# ---------------------------------------------------------------------------
# real SIGKILL at chosen points inside a move (the child kills itself there)

KILL_AT_CHILD = r'''
import os, signal, sys
import sediment.disk.journal
import sediment.repository as R
from sediment import Repository

root, point, eid = sys.argv[1], sys.argv[2], sys.argv[3]
repo = Repository(root)
import portalocker  # noqa: E402,F401  (imported at the first lock; its import unlinks a probe file of tempfile's)


def die(*a, **k):
    os.kill(os.getpid(), signal.SIGKILL)


if point == "before_destination":        # inside atomic_write, just before the rename (or link)
    os.replace = die
    os.link = die
elif point == "before_source_removed":   # destination published, source still there
    os.unlink = die
elif point == "before_done":             # source removed, "done" not yet written
    real = sediment.disk.journal.Journal.append
    def append(self, rec, **kw):
        if rec.get("phase") == "done":
            die()
        real(self, rec, **kw)
    sediment.disk.journal.Journal.append = append
repo.move(eid, "sediment", reason="promoted")
sys.exit(0)  # not reached
'''


def _kill_inside_move(root: Path, eid: str, point: str) -> None:
    proc = subprocess.run([sys.executable, "-c", KILL_AT_CHILD, str(root), point, eid],
                          capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode(errors="replace")


@pytest.mark.parametrize("point,where", [
    ("before_destination", "src"),
    ("before_source_removed", "dst"),
    ("before_done", "dst"),
])
def test_real_kill_inside_a_move_is_finished_or_undone(tmp_path, point, where):
    root = tmp_path / "mem"
    e = _one_memory(root)
    dst = f"sediment/topic/{e.name}.md"
    _kill_inside_move(root, e.id, point)
    assert pending_ops(root), "the kill should have left the move's intent without 'done'"
    if point == "before_source_removed":
        assert (root / e.path).exists() and (root / dst).exists()  # the state recovery must resolve

    repo = Repository(root, policy=POLICY)
    expected_path = e.path if where == "src" else dst
    assert [x.path for x in scan(root)[e.id]] == [expected_path]
    got = repo.get(e.id)
    assert got.path == expected_path and got.text == "the original text"
    if where == "dst":
        assert got.get("reason") == "promoted"
    assert temp_files(root) == []
    assert not pending_ops(root)
    assert errors(repo) == []


def test_live_writer_keeps_its_update_when_another_process_died_mid_move(tmp_path):
    """Process A has the root open; process B is killed between writing a move's
    destination and removing its source. A then updates the memory and gets an
    acknowledgement. The update must survive the next open's recovery."""
    root = tmp_path / "mem"
    e = _one_memory(root)
    a = Repository(root, policy=POLICY)
    assert a.get(e.id).path == e.path
    _kill_inside_move(root, e.id, "before_source_removed")

    acked = a.update(e.id, text="an update A was told is saved")

    reopened = Repository(root, policy=POLICY)
    copies = scan(root)[e.id]
    assert len(copies) == 1, [x.path for x in copies]
    assert reopened.get(e.id).text == acked.text, (
        f"acknowledged update lost: A wrote {acked.path}, recovery kept {copies[0].path}")


# ---------------------------------------------------------------------------
# torn journal tail (a crash cut the last append short: half a line, no newline)


def _tear_last_line(journal: Path) -> bytes:
    data = journal.read_bytes()
    assert data.endswith(b"\n")
    start = data.rstrip(b"\n").rfind(b"\n") + 1
    last = data[start:-1]
    journal.write_bytes(data[:start] + last[: len(last) // 2])
    assert not journal.read_bytes().endswith(b"\n")
    return last


def _torn_root(tmp_path: Path, torn_record: str) -> tuple[Path, sediment.Entry, str]:
    """A root whose journal ends in a torn record. 'done': the crash hit the
    append of a finished move's "done" (the move itself completed). 'begin': it
    hit the append of a move's intent, so the move never started."""
    root = tmp_path / "mem"
    e = _one_memory(root)
    journal = root / "_system" / "journal.log"
    if torn_record == "done":
        where = Repository(root, policy=POLICY).move(e.id, "sediment").path
    else:
        Journal(journal).begin("move", id=e.id, src=e.path, dst=f"bedrock/topic/{e.name}.md")
        where = e.path
    torn = _tear_last_line(journal)
    assert f'"phase":"{torn_record}"'.encode() in torn  # the line that was cut in half
    return root, e, where


@pytest.mark.parametrize("torn_record", ["done", "begin"])
def test_torn_last_journal_line_is_tolerated_on_open(tmp_path, torn_record):
    root, e, where = _torn_root(tmp_path, torn_record)
    journal = root / "_system" / "journal.log"

    repo = Repository(root, policy=POLICY)
    assert [x.path for x in scan(root)[e.id]] == [where]
    assert repo.get(e.id).path == where and repo.get(e.id).text == "the original text"
    assert not pending_ops(root)
    assert temp_files(root) == []
    # the journal keeps working: the next records start on a fresh line and are read back
    moved = repo.move(e.id, "archive" if where.startswith("sediment/") else "sediment")
    updated = repo.update(e.id, text="after the torn line")
    assert journal.read_bytes().endswith(b"\n")
    records = Journal(journal).read().records
    assert any(r.get("phase") == "done" and moved.path in r.get("paths", ()) for r in records)
    reopened = Repository(root, policy=POLICY)
    assert [x.path for x in scan(root)[e.id]] == [moved.path]
    assert reopened.get(e.id).text == updated.text == "after the torn line"
    assert not pending_ops(root)


@pytest.mark.parametrize("torn_record", ["done", "begin"])
def test_torn_journal_tail_is_not_reported_as_damage(tmp_path, torn_record):
    """The journal promises that a torn last line is ignored. After the next
    append (recovery's own, or the next write's) it must not turn into an
    error-severity problem that check() reports for ever after."""
    root, e, where = _torn_root(tmp_path, torn_record)
    repo = Repository(root, policy=POLICY)
    repo.update(e.id, text="one more write")
    problems = [str(p) for p in Repository(root, policy=POLICY).check() if p.severity == "error"]
    assert problems == [], "a crash-torn journal tail is reported as damage"


def test_text_pasted_into_the_journal_costs_no_record_before_it(tmp_path):
    """A torn tail longer than the 64 KiB the next append looks at is no torn
    append (records are small): bytes a person pasted at the end of the journal.
    The next append must not cut the journal back to nothing (its epoch, the
    records before the paste): it starts on a line of its own instead."""
    root = tmp_path / "mem"
    e = _one_memory(root)
    journal = root / "_system" / "journal.log"
    repo = Repository(root, policy=POLICY)
    repo.move(e.id, "sediment")
    before = journal.read_bytes()
    with open(journal, "ab") as fh:
        fh.write(("pasted by hand " * 5000).encode())  # 75,000 bytes, no newline
    repo.update(e.id, text="after the paste")
    after = journal.read_bytes()
    assert after.startswith(before), "records before the pasted text were cut off"
    assert after.endswith(b"\n") and Journal(journal).read().records[-1].get("phase") == "done"
    assert Repository(root, policy=POLICY).get(e.id).text == "after the paste"


def test_a_view_opened_after_a_paste_into_the_journal_reads_on_from_its_end(tmp_path):
    """The view of a process opened while pasted text ends the journal starts
    its feed where the next append puts its record (after the paste, which
    the append ends as a line of its own): at the next write of another
    process it reads that write, not every record since the journal's start."""
    root = tmp_path / "mem"
    writer = Repository(root, policy=POLICY)
    for i in range(20):
        writer.add(f"a note written before the paste {i}")
    with open(root / "_system" / "journal.log", "ab") as fh:
        fh.write(("pasted by hand " * 5000).encode())  # 75,000 bytes, no newline
    reader = Repository(root, policy=POLICY)
    new = writer.add("written after the paste")
    # what the reader's next sync re-reads (each path a stat, the changed ones a
    # parse): before, every path the journal named since its start
    assert reader.store.view.feed.poll() == [new.path]


def test_a_paste_taken_out_of_the_journal_again_costs_no_record_after_it(tmp_path):
    """A pasted block (ending with a newline, as pastes do) that a view has
    read past, removed again by hand (an editor's undo): the journal is now
    shorter than where that view stood, and it reads it again rather than
    miss the records that come next."""
    root = tmp_path / "mem"
    writer = Repository(root, policy=POLICY)
    writer.add("a note written before the paste")
    journal = root / "_system" / "journal.log"
    before = journal.read_bytes()
    journal.write_bytes(before + ("pasted by hand " * 50 + "\n").encode() * 40)
    reader = Repository(root, policy=POLICY)
    reader.search("note", record=False)  # its feed reads on past the paste
    journal.write_bytes(before)
    new = [writer.add(f"written after the paste was taken out {i}", title=f"after {i}") for i in range(3)]
    assert {e.id for e in new} <= {e.id for e in reader.list()}


@pytest.mark.parametrize("reader_was", ["polling", "opening"])
def test_a_cut_by_hand_then_appends_past_where_a_reader_stood_cost_it_no_record(tmp_path, reader_was):
    """A pasted block that a reader's feed read past (while polling, or at its
    open), taken out by hand again; then other processes append past where
    that reader stood before it looks again. The journal is no shorter than
    the reader's offset, but what lies there now is the middle of other
    records: the reader must read the journal again, not read on from there
    (missing every note recorded before that point, and any rescan)."""
    root = tmp_path / "mem"
    writer = Repository(root, policy=POLICY)
    writer.add("a note written before the paste")
    journal = root / "_system" / "journal.log"
    before = journal.read_bytes()
    reader = Repository(root, policy=POLICY) if reader_was == "polling" else None
    journal.write_bytes(before + ("pasted by hand " * 20 + "\n").encode() * 3)
    if reader is None:
        reader = Repository(root, policy=POLICY)  # (a lock-free open: its feed starts past the paste)
    else:
        reader.search("note", record=False)  # its feed reads on past the paste
    stood = reader.store.view.feed.pos[0]
    journal.write_bytes(before)  # the paste taken out (in place, as an editor's undo saves it)
    new = []
    while journal.stat().st_size < stood + 100:
        new.append(writer.add(f"written after the paste was taken out {len(new)}", title=f"after {len(new)}"))
    assert {e.id for e in new} - {e.id for e in reader.list()} == set()


@pytest.mark.parametrize("cut", ["the last line", "an older line"])
def test_a_line_cut_by_hand_then_the_same_rewrite_again_costs_a_reader_no_record(tmp_path, cut):
    """One note rewritten again and again by one process; a person deletes
    one of its records by hand, in place (the last one, or an older one of
    the same length), then the note is rewritten once more. The bytes before
    where a reader stood must not read as they were (each record ends
    differently): the reader reads the journal again and sees the rewrite."""
    root = tmp_path / "mem"
    writer = Repository(root, policy=POLICY)
    e = writer.add("alpha, the first version of the body", title="same")
    for word in ("beta", "delta"):
        writer.update(e.id, text=f"{word} version")
    reader = Repository(root, policy=POLICY)
    assert reader.get(e.id).body.strip() == "delta version"
    journal = root / "_system" / "journal.log"
    lines = journal.read_bytes().splitlines(keepends=True)
    del lines[-1 if cut == "the last line" else -2]  # (-2: the record of the rewrite to beta)
    with open(journal, "r+b") as fh:  # in place, as an editor's save into the file
        fh.truncate(0)
        fh.write(b"".join(lines))
    writer.update(e.id, text="gamma version")
    assert reader.get(e.id).body.strip() == "gamma version"
    assert [h.entry.id for h in reader.search("gamma", record=False)] == [e.id]


def test_a_torn_tail_cut_off_by_the_next_append_costs_a_reader_no_rescan(tmp_path):
    """A reader's feed stands before a torn last line (an append a crash cut
    short); the next append cuts it off and writes its record there. What
    lies before where the reader stood is as it was: the reader reads that
    record on, and does not take the file for one cut back by hand (a
    rescan of the root)."""
    root = tmp_path / "mem"
    writer = Repository(root, policy=POLICY)
    writer.add("written before the crash")
    path = root / "_system" / "journal.log"
    feed = Feed(Journal(path))
    feed.skip_to_end()
    with open(path, "ab") as fh:
        fh.write(b'{"phase":"done","op":"write","paths":["shallow/')  # the crash's torn append
    assert feed.poll() == []
    new = writer.add("written after the crash")
    assert feed.poll() == [new.path]


def test_a_feed_placed_at_the_end_of_a_pasted_journal_reads_only_what_comes_next(tmp_path):
    """``head`` on a journal ending in pasted text (no newline, longer than any
    append) is its end: the next append ends the paste as a line of its own."""
    root = tmp_path / "mem"
    writer = Repository(root, policy=POLICY)
    for i in range(5):
        writer.add(f"before the paste {i}")
    path = root / "_system" / "journal.log"
    with open(path, "ab") as fh:
        fh.write(("pasted by hand " * 5000).encode())
    feed = Feed(Journal(path))
    feed.skip_to_end()
    new = writer.add("after the paste")
    assert feed.poll() == [new.path]


def _walrus_and_a_reader(root: Path, fillers: int) -> tuple[Entry, Repository, Journal]:
    """A root with one memory (and ``fillers`` more, written by another
    process's Repository), a second process's reader of it, and the journal
    for a test to write records into as a third writer would."""
    writer = Repository(root, policy=POLICY)
    e = writer.add("a memory about walruses", title="walrus")
    for i in range(fillers):
        writer.add(f"filler {i}")
    return e, Repository(root, policy=POLICY), Journal(root / "_system" / "journal.log")


def test_a_begin_seen_before_a_compaction_is_not_finished_after_it(tmp_path, monkeypatch):
    """A reader's feed saw another writer's begin; that writer closed it and
    compacted the journal (shorter than where the reader stood). The begin
    must not stay open in the reader: its next write would finish it, and
    remove a note at the move's source."""
    root = tmp_path / "mem"
    e, reader, journal = _walrus_and_a_reader(root, fillers=30)  # (a journal longer than after compaction)
    dst = f"sediment/{e.name}.md"
    seq = journal.begin("move", id=e.id, src=e.path, dst=dst, ver=e.version, dver=e.version)
    reader.search("walruses", record=False)  # readers poll without the writer lock
    assert seq in reader.store.view.feed.open_ops
    journal.done(seq=seq, op="move")  # that writer gave up: nothing moved
    monkeypatch.setattr(J, "COMPACT_BYTES", 0)  # (compacts at once: nothing is pending)
    assert journal.maybe_compact()
    reader.search("walruses", record=False)
    assert reader.store.view.feed.open_ops == {}
    (root / dst).parent.mkdir(parents=True, exist_ok=True)
    (root / dst).write_bytes((root / e.path).read_bytes())  # a person puts a copy there
    reader.add("a later write of the reader", title="later")
    assert (root / e.path).exists()


# ---------------------------------------------------------------------------
# temp files of interrupted writes are swept on open


def test_temp_files_of_interrupted_writes_are_swept_on_open(tmp_path):
    root = tmp_path / "mem"
    e = _one_memory(root)
    planted = [
        "shallow/topic/.moving-note.md.0a1b2c3d.tmp",
        "sediment/.other.md.deadbeef.tmp",
        "archive/deep/room/.x.md.12345678.tmp",
        "_system/.policy.yaml.0a1b2c3d.tmp",
        "_system/.journal.log.0a1b2c3d.tmp",
        "_system/usage/.destructive.log.0a1b2c3d.tmp",
    ]
    for rel in planted:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"---\nid: half")
    assert temp_files(root) == sorted(planted)

    repo = Repository(root, policy=POLICY)
    assert temp_files(root) == []
    assert [x.path for x in scan(root)[e.id]] == [e.path]
    assert errors(repo) == []


def test_the_walks_after_the_open_keep_no_record_of_temp_files(tmp_path):
    """Only the open asks which temp files its walk met (to sweep them). A
    process that stays open walks the root again and again (refresh, the
    watcher's rescans) while other processes write, each write with a new
    temp name: what it keeps of them must not grow with every walk."""
    root = tmp_path / "mem"
    _one_memory(root)
    repo = Repository(root, policy=POLICY)
    for i in range(5):  # another process's write in flight at each walk
        (root / "shallow" / f".note-{i}.md.{i:08x}.tmp").write_bytes(b"---\nid: half")
        repo.refresh()
    assert not repo.store.view.temps_seen
    assert len(temp_files(root)) == 5  # (they are the writers' to finish: the next open sweeps what is left)


@pytest.mark.parametrize("journal", ["an intent to finish", "nothing pending"])
def test_an_open_keeps_no_record_of_temp_files_it_does_not_sweep(tmp_path, journal, monkeypatch):
    """The open's walk notes temp files only for the sweep an open without
    the locked recovery owes, and only those the sweep removes (the layer
    folders'): an open that recovered under the lock (which swept already)
    and a temp file in a person's folder (theirs, left as it is) leave no
    record behind in a process that stays open, and the person's file
    costs the open no sweep (no wait for the writer lock)."""
    root = tmp_path / "mem"
    e = _one_memory(root)
    if journal == "an intent to finish":
        Journal(root / "_system" / "journal.log").begin("move", id=e.id, src=e.path, dst=f"sediment/{e.name}.md")
    person = root / "notes" / ".draft.md.0a1b2c3d.tmp"  # (named as sediment's temp files are)
    person.parent.mkdir()
    person.write_bytes(b"a person's draft")
    sweeps = []
    real = Store.sweep_temps
    monkeypatch.setattr(Store, "sweep_temps", lambda self: sweeps.append(1) or real(self))
    repo = Repository(root, policy=POLICY)
    assert not pending_ops(root)
    assert not repo.store.view.temps_seen
    assert person.read_bytes() == b"a person's draft"
    assert len(sweeps) == (1 if journal == "an intent to finish" else 0)  # (recovery's own)


def test_temp_file_of_an_interrupted_cache_save_is_swept_on_open(tmp_path):
    """The index snapshot in ``_system/cache`` is saved with atomic_write too (on
    open and on close), so a process killed while saving it leaves a
    ``.index.bin.<hex>.tmp`` there; nothing else ever removes it."""
    root = tmp_path / "mem"
    _one_memory(root)
    Repository(root).close()
    leftover = root / "_system" / "cache" / ".index.bin.0a1b2c3d.tmp"
    leftover.parent.mkdir(parents=True, exist_ok=True)
    leftover.write_bytes(b"half a snapshot")

    Repository(root, policy=POLICY)
    assert temp_files(root) == [], "a killed cache save leaves its temp file for ever"


def _held_lock(root: Path):
    """The writer lock, held as another process would (flock on its own open file)."""
    import fcntl
    fh = open(root / "_system" / "lock", "a+b")
    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fh


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_an_open_with_nothing_to_recover_does_not_wait_for_a_writer(tmp_path):
    """A reader opening a clean root is not held up by a long write elsewhere:
    with nothing pending it takes no lock. An open intent still sends the
    open to the lock (recovery waits for the writer), and a temp file the
    open's walk meets is swept once the lock is free."""
    root = tmp_path / "mem"
    e = _one_memory(root)
    quick = {**POLICY, "lock_timeout_seconds": 0.2}
    held = _held_lock(root)
    try:
        repo = Repository(root, policy=quick)
        assert [h.entry.id for h in repo.search("original text", record=False)] == [e.id]
        temp = root / "shallow" / "topic" / ".moving-note.md.0a1b2c3d.tmp"
        temp.write_bytes(b"---\nid: half")
        Repository(root, policy=quick)  # the sweep needs the lock: it is left for a later open
        assert temp_files(root) == ["shallow/topic/.moving-note.md.0a1b2c3d.tmp"]
        Journal(root / "_system" / "journal.log").begin(
            "move", id=e.id, src=e.path, dst=f"sediment/topic/{e.name}.md")
        with pytest.raises(sediment.LockTimeout):  # something to recover: the writer is waited for
            Repository(root, policy=quick)
    finally:
        held.close()
    repo = Repository(root, policy=POLICY)
    assert temp_files(root) == [] and not pending_ops(root)
    assert [x.path for x in scan(root)[e.id]] == [e.path]


HOLD_LOCK = r'''
import fcntl, sys
fh = open(sys.argv[1], "a+b")
fcntl.flock(fh, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()  # until the parent closes our stdin
'''


@pytest.mark.skipif(sys.platform == "win32", reason="flock")
def test_a_close_does_not_wait_the_lock_timeout_for_another_process(tmp_path):
    """A close saves the index snapshot (a cache) if the view changed. While
    another process holds the writer lock for a long write, the close gives
    up on it after a short wait, not the lock timeout; the next open saves
    it once the lock is free, and nothing the view held is lost."""
    root = tmp_path / "mem"
    e = _one_memory(root)
    note = root / e.path
    note.write_text(note.read_text(encoding="utf-8").replace("the original text", "edited by hand"),
                    encoding="utf-8")
    snapshot = root / "_system" / "cache" / "index.bin"
    before = snapshot.read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(root / "_system" / "lock")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        repo = Repository(root, policy={**POLICY, "lock_timeout_seconds": 30})
        assert repo.get(e.id).text == "edited by hand" and repo.view.dirty  # (the open could not save it)
        started = time.monotonic()
        repo.close()
        assert time.monotonic() - started < 15  # before: the full 30 s
        assert snapshot.read_bytes() == before
    finally:
        holder.communicate(timeout=30)
    with Repository(root, policy=POLICY) as again:
        assert again.get(e.id).text == "edited by hand"
    assert snapshot.read_bytes() != before


def test_a_search_in_a_fresh_process_imports_no_lock_library(tmp_path):
    """The lock library's import reads package metadata (tens of ms); a process
    that only opens a clean root and searches it never takes a lock."""
    root = tmp_path / "mem"
    _one_memory(root)
    code = ("import sys\nfrom sediment import Repository\n"
            f"r = Repository({str(root)!r})\nr.search('original', record=False)\n"
            "print('portalocker' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False"]


# ---------------------------------------------------------------------------
# what the stream's acknowledgements rely on: a call returns the memory as it left it


def test_move_returns_the_memory_in_its_new_layer(tmp_path):
    """A move made in the same second as the memory's last write changes no
    frontmatter, so it is a pure rename; the Entry it returns (and the view)
    must still say where the file now is."""
    repo = Repository(tmp_path / "mem", policy=POLICY)
    e = repo.add("a note that is promoted at once", title="quick promotion", kind="fact")
    for layer in ("sediment", "bedrock", "archive", "shallow"):
        # out of archive is restore's job (move refuses it)
        moved = repo.restore(e.id, layer=layer) if layer == "shallow" else repo.move(e.id, layer)
        assert moved.path == f"{layer}/{e.name}.md" and e.name.startswith("quick-promotion-")
        assert (moved.layer, repo.get(e.id).layer) == (layer, layer), (
            f"moved to {moved.path}, but the returned entry says layer {moved.layer!r} and the "
            f"view says {repo.get(e.id).layer!r}")
        assert [x.id for x in repo.list(layer=layer)] == [e.id]


# ---------------------------------------------------------------------------
# metabolize journals a batch of intents with one fsync and moves the batch in
# phases (every new copy, one fsync of each destination folder, every source
# renamed away, one fsync of each source folder, the renamed sources removed,
# the "done" records); a kill in any phase leaves each memory exactly once
# after recovery, and the moves not finished can simply be done again

KILL_IN_BATCH_CHILD = r'''
import os, signal, sys
import sediment.disk.checked as C
import sediment.store.moves as M
from sediment import Repository

root, point, at, now = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
repo = Repository(root, policy={"destructive_per_hour": 100000})
calls = [0]


def killing(real):
    def call(*a, **k):
        calls[0] += 1
        if calls[0] == at:  # the calls before were made; this one and those after not
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*a, **k)
    return call


if point == "write":         # new copies being written to temp files
    M._write = killing(M._write)
elif point == "link":        # copies fsync'd, some linked in place, the folder not synced
    M.move_new = killing(M.move_new)
elif point == "detach":      # copies durable, some sources renamed to temp names
    M.detach = killing(M.detach)
elif point == "finish":      # sources renamed and synced, some removed
    C.Detached.finish = killing(C.Detached.finish)
elif point == "record":      # all files moved, some "done" records written
    M._record = killing(M._record)
repo.metabolize(dry_run=False, confirm=True, now=now)
sys.exit(0)  # not reached
'''


@pytest.mark.parametrize("point,pending,moved", [
    ("write", 12, 0),    # no copy in place: every memory stays where it was
    ("link", 12, 4),     # four copies in place: recovery finishes those four, the rest stay
    ("detach", 12, 12),  # every copy durable: recovery finishes every move
    ("finish", 12, 12),
    ("record", 8, 12),   # four moves recorded done
])
def test_a_kill_in_a_batch_of_moves_leaves_every_memory_once(tmp_path, point, pending, moved):
    root = tmp_path / "mem"
    with Repository(root, policy=POLICY) as repo:
        ids = [repo.add(f"a valuable note {i}", title=f"v{i}", kind="fact", value=0.9,
                        room="topic" if i % 2 else None).id for i in range(12)]
    import datetime as dt
    now = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=3)).isoformat()  # old enough to promote
    proc = subprocess.run([sys.executable, "-c", KILL_IN_BATCH_CHILD, str(root), point, "5", now],
                          capture_output=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode(errors="replace")
    assert len(pending_ops(root)) == pending

    repo = Repository(root, policy=POLICY)
    found = scan(root)
    assert sorted(found) == sorted(ids) and all(len(v) == 1 for v in found.values())
    layers = sorted(x[0].path.split("/")[0] for x in found.values())
    assert layers == ["sediment"] * moved + ["shallow"] * (12 - moved)
    assert not pending_ops(root) and temp_files(root) == [] and errors(repo) == []
    assert {e.layer for e in repo.list()} == set(layers)
    done = repo.metabolize(dry_run=False, confirm=True, now=now)  # the rest can simply be done again
    assert len(done.moves) == 12 - moved and {e.layer for e in repo.list()} == {"sediment"}


def test_an_intent_begun_just_after_the_lock_free_open_read_the_journal_is_finished(tmp_path, monkeypatch):
    """The open that finds nothing to recover takes no lock, so a writer may
    append an intent right after the open read the journal, and then be
    killed. The view's feed reads on from where that read ended, so the
    intent is seen and the next write finishes it (here: a move killed
    before its source went, rolled forward), instead of the memory staying
    in two files until the next open."""
    root = tmp_path / "mem"
    e = _one_memory(root)
    dst = f"sediment/topic/{e.name}.md"
    checked = health._nothing_pending

    def then_a_writer_begins_and_dies(store):
        nothing = checked(store)
        (root / dst).parent.mkdir(parents=True)
        shutil.copyfile(root / e.path, root / dst)  # the new file complete, the old not yet removed
        Journal(root / "_system" / "journal.log").begin("move", id=e.id, src=e.path, dst=dst, ver=e.version)
        return nothing
    monkeypatch.setattr(health, "_nothing_pending", then_a_writer_begins_and_dies)
    repo = Repository(root, policy=POLICY)
    monkeypatch.undo()
    assert pending_ops(root)  # (the open took the lock-free path)
    repo.add("a later write by this process", title="later")
    assert not pending_ops(root)
    assert [x.path for x in scan(root)[e.id]] == [dst]
    assert repo.get(e.id).path == dst and errors(repo) == []


def test_a_move_that_compacts_the_journal_costs_its_process_no_rescan(tmp_path, monkeypatch):
    """Our own compaction (after a move, or a metabolize batch) is no sign of
    records missed: the next write of the same process must not rescan the
    whole root for it."""
    root = tmp_path / "mem"
    repo = Repository(root, policy=POLICY)
    e = repo.add("a memory about walruses", title="walrus")
    rescans = []
    real = repo.store.view.refresh
    monkeypatch.setattr(repo.store.view, "refresh", lambda *a, **k: rescans.append(1) or real(*a, **k))
    monkeypatch.setattr(J, "COMPACT_BYTES", 0)  # (the move compacts at its end)
    repo.move(e.id, "sediment")
    assert repo.store.view.feed.pos[1] == repo.store.journal.head()[1]  # the new epoch
    repo.add("another", title="another")
    assert rescans == []


def test_a_writer_killed_after_another_process_compacted_is_finished(tmp_path, monkeypatch):
    """Another process compacted the journal, then more records came (longer
    than where a reader stood), then a writer began a move and was killed.
    The reader's feed, seeing the new epoch, must keep that begin open, so its
    next write finishes the move (one file for the memory)."""
    root = tmp_path / "mem"
    e, reader, journal = _walrus_and_a_reader(root, fillers=5)
    reader.search("walruses", record=False)
    stood = reader.store.view.feed.pos[0]
    path = journal.path
    monkeypatch.setattr(J, "COMPACT_BYTES", 0)
    assert journal.maybe_compact()
    monkeypatch.setattr(J, "COMPACT_BYTES", 1 << 20)
    while path.stat().st_size < stood + 10:
        journal.done(op="write")
    dst = f"sediment/{e.name}.md"
    (root / dst).parent.mkdir(parents=True, exist_ok=True)
    (root / dst).write_bytes((root / e.path).read_bytes())  # killed after its copy, before the source went
    journal.begin("move", id=e.id, src=e.path, dst=dst, ver=e.version, dver=e.version)
    reader.add("a later write of the reader", title="later")
    assert not Journal.pending(journal.read().records)
    assert [(root / e.path).exists(), (root / dst).exists()] == [False, True]
    assert not [p for p in reader.check() if p.code == "duplicate_id"]
