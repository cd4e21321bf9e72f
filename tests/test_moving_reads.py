"""A note another process moves is read at its old or its new place, never
nowhere: a reader that follows the journal sees the move's paths after the
files changed, and another move may change them again while it looks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sediment import Repository

MOVE = ("import sys\nfrom sediment import Repository\n"
        "r = Repository(sys.argv[1]); r.move(sys.argv[2], sys.argv[3]); r.close()\n")


def _move(root: Path, eid: str, layer: str) -> None:
    """Another process moves the note (a real process: its own view and journal feed)."""
    subprocess.run([sys.executable, "-c", MOVE, str(root), eid, layer], check=True)


def _get_while_moved_back(reader: Repository, root: Path, eid: str):
    """``reader.get(eid)`` of a note the reader saw go to sediment/: as the
    reader is about to read it there, another process moves it back to
    shallow/ (seen there, not yet read)."""
    view, load, moved = reader.view, reader.view.load_file, []

    def load_file(rel, *a, **kw):
        if rel.startswith("sediment/") and not moved:
            moved.append(rel)
            _move(root, eid, "shallow")
        return load(rel, *a, **kw)
    view.load_file = load_file
    try:
        got = reader.get(eid)
    finally:
        del view.load_file
    assert moved  # (the interleaving the test is about did happen)
    return got


def test_a_note_moved_again_while_the_reader_reads_its_new_place_is_found(tmp_path):
    # the reader learns from the journal that the note went to sediment/; by
    # the time it reads the file there, a second move has taken it back to
    # shallow/. It dropped the note, and get() said NotFound until the next
    # move's record came in
    root = tmp_path / "root"
    reader = Repository(root)
    e = reader.add("the deploy key rotates every ninety days")
    assert e.layer == "shallow"
    _move(root, e.id, "sediment")
    got = _get_while_moved_back(reader, root, e.id)
    assert got.id == e.id and got.layer == "shallow" and (root / got.path).exists()
    reader.close()


PAUSED_MOVE = r'''
import os, sys, time
from sediment import Repository
from sediment.disk.journal import Journal
root, eid, layer, began, go = sys.argv[1:6]
begin = Journal.begin

def begin_then_wait(self, *a, **kw):  # the intent is in the journal; the files have not moved yet
    seq = begin(self, *a, **kw)
    open(began, "w").close()
    while not os.path.exists(go):
        time.sleep(0.01)
    return seq
Journal.begin = begin_then_wait
r = Repository(root); r.move(eid, layer); r.close()
'''


def test_a_note_moved_again_while_the_reader_reads_a_move_it_saw_begin_is_found(tmp_path):
    # the reader read a move's intent while the move was under way (the note
    # still at its old place), and its end later. Reading the note's new
    # place, it found it gone: a second move had begun after the reader read
    # the journal. With no intent in what it had read, it looked no further
    # and get() said NotFound
    root = tmp_path / "root"
    reader = Repository(root)
    e, other = reader.add("the deploy key rotates every ninety days"), reader.add("lunch is at noon")
    began, go = tmp_path / "began", tmp_path / "go"
    mover = subprocess.Popen([sys.executable, "-c", PAUSED_MOVE, str(root), e.id, "sediment", str(began), str(go)])
    try:
        for _ in range(3000):
            if began.exists() or mover.poll() is not None:
                break
            time.sleep(0.01)
        assert began.exists()
        assert reader.get(other.id).id == other.id  # (the reader reads the intent: the move under way)
    finally:
        go.touch()
    assert mover.wait(timeout=60) == 0
    got = _get_while_moved_back(reader, root, e.id)
    assert got.id == e.id and got.layer == "shallow" and (root / got.path).exists()
    reader.close()


MOVER = r'''
import os, sys, time
from sediment import Repository
root, ids, done, n = sys.argv[1], sys.argv[2].split(","), sys.argv[3], int(sys.argv[4])
repo = Repository(root, policy={"lock_timeout_seconds": 60})
for _ in range(12000):  # (the reader opens its root before the first move)
    if os.path.exists(done + ".ready"):
        break
    time.sleep(0.01)
i = 0
# each note there and back at once between shallow/ and sediment/, one after another, until the
# reader has read enough times while they moved (a get that meets a stream of moves follows it, so
# on a loaded machine the mover alone could finish before the reader had made a handful of gets)
while i < n or (not os.path.exists(done + ".enough") and i < 40 * n):
    e = repo.get(ids[i // 2 % len(ids)])
    repo.move(e.id, "sediment" if e.layer == "shallow" else "shallow")
    if i % 50 == 25:  # a metabolize's batch of moves too
        repo.metabolize(dry_run=False)
    i += 1
open(done, "w").close()
'''


READER = r'''
import json, os, random, sys
from sediment import NotFound, Repository
root, ids, done = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
rng = random.Random(7)
counts = {"gets": 0, "missed": 0, "fresh": 0, "fresh_missed": 0}
repo = Repository(root)
open(done + ".ready", "w").close()
while not os.path.exists(done):
    if counts["gets"] >= 40 and counts["fresh"] >= 4 and not os.path.exists(done + ".enough"):
        open(done + ".enough", "w").close()
    if counts["gets"] % 10 == 0:  # a fresh open's first get, now and then
        fresh = Repository(root)
        counts["fresh"] += 1
        try:
            fresh.get(rng.choice(ids))
        except NotFound:
            counts["fresh_missed"] += 1
        fresh.close()
    counts["gets"] += 1
    try:
        repo.get(rng.choice(ids))
    except NotFound:
        counts["missed"] += 1
print(json.dumps(counts))
'''


@pytest.mark.slow
def test_a_reader_finds_every_note_while_another_process_moves_them(tmp_path):
    root = tmp_path / "root"
    with Repository(root) as r:
        # (long notes: the reader takes a while over each, as over a real root's)
        ids = [r.add(f"note {i}: " + "the release train and its carriages, 发布列车和它的车厢. " * 400).id
               for i in range(6)]
    done = tmp_path / "done"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    reader = subprocess.Popen([sys.executable, "-c", READER, str(root), ",".join(ids), str(done)],
                              stdout=subprocess.PIPE, text=True, env=env)
    mover = subprocess.run([sys.executable, "-c", MOVER, str(root), ",".join(ids), str(done), "600"], env=env)
    out, _ = reader.communicate(timeout=600)
    assert mover.returncode == 0 and reader.returncode == 0
    counts = json.loads(out)
    # (the reader did read while the notes moved: the mover went on until it had)
    assert counts["gets"] >= 40 and counts["fresh"] >= 4, counts
    assert counts["missed"] == 0 and counts["fresh_missed"] == 0, counts
