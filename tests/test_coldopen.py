"""A cold open of a large root parses and tokenizes in a pool of forked
processes (issue "Speed", item 2): the view, the index and the problems it
ends with are those of a serial open, byte for byte, and the pool is never
used where forking is unsafe inside a library."""

from __future__ import annotations

import multiprocessing as mp
import shutil
import sys
import threading
from pathlib import Path

import pytest

from sediment import Repository
from sediment.model import entry as E

needs_fork = pytest.mark.skipif(sys.platform != "linux" or "fork" not in mp.get_all_start_methods(),
                                reason="the pool is used only where fork is safe (Linux)")


def _root(tmp_path: Path) -> Path:
    """Valid notes of every script, and what a person leaves lying around:
    broken YAML, a note with no frontmatter, a BOM and CRLF, two files with
    one id, a note in a room."""
    root = tmp_path / "root"
    with Repository(root) as repo:
        for i in range(90):
            repo.add(f"第{i}条 部署 deploy note {i} 移动端登录用 PKCE {'缓存' * (i % 4)}", title=f"n{i}",
                     tags=["auth", f"t{i % 5}"], kind="fact", room="work/auth" if i % 3 else None)
        keep = repo.add("the original of a copied note", title="twin")
    sh = root / "shallow"
    (sh / "broken.md").write_text("---\nid: [unclosed\n---\nbody\n", encoding="utf-8")
    (sh / "bare.md").write_text("just a person's note, no frontmatter\n", encoding="utf-8")
    (sh / "windows.md").write_bytes(b"\xef\xbb\xbf---\r\nid: 01WINDOWSNOTE0000000000000\r\ntitle: w\r\n"
                                    b"created: 2024-01-01\r\n---\r\n"
                                    b"crlf body \xe4\xb8\xad\xe6\x96\x87\r\n")
    (sh / "copy-of-twin.md").write_bytes((root / keep.path).read_bytes())
    (sh / "bad-date.md").write_text("---\nid: 01BADDATE00000000000000000\ncreated: not a date\n---\nx\n",
                                    encoding="utf-8")
    return root


def _alone() -> None:
    """The pool forks only while no other thread runs (pool_size): a thread
    an earlier test left running (a repository never closed: its semantic
    lane, its watcher) is named here, not seen as a pool that did not run."""
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    assert others == [], f"threads an earlier test left running: {others}"


def _cold(root: Path, processes: int, cache: Path | None = None) -> tuple[bytes, dict, list, list[int]]:
    """An open of ``root`` with no snapshot, or (``cache``) with that copy
    of its cache folder: what it ends with, and the workers it had."""
    shutil.rmtree(root / "_system" / "cache", ignore_errors=True)
    if cache is not None:
        shutil.copytree(cache, root / "_system" / "cache")
    children: list[int] = []  # worker processes alive while the open reports progress
    repo = Repository(root, policy={"open_processes": processes},
                      progress=lambda *_: children.append(len(mp.active_children())))
    snapshot = (root / "_system" / "cache" / "index.bin").read_bytes()
    view = {e.id: (e.path, e.version) for e in repo.view.entries.values()}
    problems = sorted(str(p) for p in repo.check())
    hits = [[h.entry.id for h in repo.search(q, limit=20)] for q in ("部署", "deploy", "缓存 PKCE", "中文")]
    repo.close()
    return snapshot, view, problems + [str(hits)], children


@needs_fork
def test_a_pooled_cold_open_ends_with_the_serial_one(tmp_path):
    _alone()
    root = _root(tmp_path)
    serial = _cold(root, processes=1)
    pooled = _cold(root, processes=2)
    assert max(pooled[3]) >= 1 and max(serial[3]) == 0  # the pool really ran, the serial open had none
    assert pooled[0] == serial[0]  # the same index snapshot, byte for byte (so the same terms, slots)
    assert pooled[1] == serial[1] and len(pooled[1]) == 92
    assert pooled[2] == serial[2]  # the same problems and the same search results
    assert any("broken.md" in p for p in serial[2]) and any("copy-of-twin" in p for p in serial[2])
    # the next open is warm: the snapshot the pooled open wrote is valid
    with Repository(root, progress=lambda *_: None) as repo:
        assert not repo.view.dirty and len(repo) == 92


@needs_fork
def test_a_pooled_warm_open_ends_with_the_serial_one(tmp_path):
    """A warm open parses in the pool the notes its snapshot lacks (written
    by hand since), while it keeps the others' slots in the order of its walk
    between them: those whose frontmatter the snapshot keeps, and those it
    reads here (a BOM and CRLF, properties nobody can read). It ends with
    the serial open's view, index and problems."""
    _alone()
    root = _root(tmp_path)
    (root / "props.md").write_bytes(b"---\ntitle: [unclosed\n---\nproperties nobody can read, deploy\n")
    Repository(root, policy={"open_processes": 1}).close()
    cache = tmp_path / "cache"
    shutil.copytree(root / "_system" / "cache", cache)  # the snapshot both opens start from
    for i in range(40):  # between the kept notes in the walk's order: a person's, some saved on Windows,
        text = f"a person's note {i} about deploy and 缓存\n"  # and files in a layer that are no memory
        (root / "shallow" / f"m{i:02d}.md").write_bytes(text.encode())
        (root / f"n{i:02d}.md").write_bytes(text.encode().replace(b"\n", b"\r\n") if i % 3 else text.encode())
    serial = _cold(root, processes=1, cache=cache)
    pooled = _cold(root, processes=2, cache=cache)
    assert max(pooled[3]) >= 1 and max(serial[3]) == 0  # the pool really ran, the serial open had none
    assert pooled[0] == serial[0]  # the same index snapshot, byte for byte
    assert pooled[1] == serial[1] and len(pooled[1]) == 92 + 1 + 40
    assert pooled[2] == serial[2]  # the same problems and the same search results
    assert [any(f in p for p in serial[2]) for f in ("props.md", "broken.md", "shallow/m39.md")] == [True] * 3


@needs_fork
def test_notes_moved_by_hand_cost_a_pooled_open_no_merge_each(tmp_path):
    """A pooled open of a root where many notes were moved by hand (same
    ids, new paths: a sync of another machine's moves) puts each moved note
    again while the workers' batches wait; its old slot is in the base and
    is dropped without merging the batches (a merge is a pass over the
    whole base: one per moved note made the open quadratic)."""
    _alone()
    root = _root(tmp_path)
    Repository(root).close()  # a snapshot
    notes = sorted(p for p in (root / "shallow").rglob("*.md") if "deploy" in p.read_text(encoding="utf-8"))
    moved = root / "shallow" / "moved"
    moved.mkdir()
    for p in notes[:40]:
        shutil.move(p, moved / p.name)
    with Repository(root, policy={"open_processes": 1}) as other:  # and notes another process wrote
        for i in range(10):
            other.add(f"fresh deploy note {i}", title=f"f{i}")
    for p in notes[40:70]:  # moved after that snapshot too
        shutil.move(p, moved / p.name)
    children: list[int] = []
    with Repository(root, policy={"open_processes": 2},
                    progress=lambda *_: children.append(len(mp.active_children()))) as repo:
        assert max(children) >= 1  # the pool ran
        assert repo.view.index.merges <= 2, repo.view.index.merges
        assert len(repo) == 102 and len(repo.search("deploy", limit=200)) == 100
        assert sum(e.path.startswith("shallow/moved/") for e in repo.view.entries.values()) == 70


@needs_fork
def test_no_pool_while_another_thread_runs_or_when_switched_off(tmp_path):
    _alone()
    from sediment.view.load import POOL_MIN_FILES, pool_size
    assert pool_size(POOL_MIN_FILES, 0) == pool_size(10_000, 0) and pool_size(POOL_MIN_FILES - 1, 0) == 0
    assert pool_size(10_000, 1) == 0  # the policy switch
    root = _root(tmp_path)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)  # a host application's thread, a watcher of another root
    other.start()
    try:
        assert pool_size(10_000, 2) == 0
        assert max(_cold(root, processes=2)[3]) == 0
    finally:
        stop.set()
        other.join()
    assert pool_size(10_000, 2) == 2


KILLED_PARENT = r'''
import multiprocessing as mp, os, signal, sys
from sediment import Repository

def progress(stage, done, total):
    kids = mp.active_children()
    if stage == "open" and kids:  # the pool is working: die now, as a kill -9 would
        with open(sys.argv[2], "w") as fh:
            fh.write(" ".join(str(k.pid) for k in kids))
        os.kill(os.getpid(), signal.SIGKILL)

Repository(sys.argv[1], policy={"open_processes": 2}, progress=progress)
'''


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@needs_fork
def test_the_workers_of_a_killed_open_end_with_it(tmp_path):
    import subprocess
    import time
    root = _root(tmp_path)
    shutil.rmtree(root / "_system" / "cache", ignore_errors=True)
    pids_file = tmp_path / "pids"
    proc = subprocess.run([sys.executable, "-c", KILLED_PARENT, str(root), str(pids_file)], timeout=60)
    assert proc.returncode == -9
    pids = [int(p) for p in pids_file.read_text().split()]
    assert pids
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(p) for p in pids), "a worker outlived the open it worked for"


@pytest.mark.skipif(sys.platform == "win32", reason="holds the lock with flock")
def test_an_open_after_a_hand_edit_does_not_wait_for_a_writer(tmp_path):
    """An open that finds the caches out of date (a person's edit since the
    last snapshot) saves them only if the writer lock is free at once: it
    never waits on another process's long write for a cache. The next open
    saves them."""
    import fcntl
    root = tmp_path / "root"
    with Repository(root) as repo:
        repo.add("pkce instead of client secret", title="pkce", kind="rule")
    (root / "notes-of-mine.md").write_text("a person's own note about pkce\n")
    snapshot = root / "_system" / "cache" / "index.bin"
    before = snapshot.stat().st_mtime_ns
    opened: list[Repository] = []
    with open(root / "_system" / "lock", "a+b") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process's long write
        opener = threading.Thread(target=lambda: opened.append(
            Repository(root, policy={"lock_timeout_seconds": 600})), daemon=True)
        opener.start()
        opener.join(60)  # a guard against waiting out the lock timeout, not a speed target
        alive = opener.is_alive()
    opener.join()
    assert not alive, "the open waited for the writer lock"
    assert [h.entry.path for h in opened[0].search("pkce", record=False)].count("notes-of-mine.md") == 1
    assert snapshot.stat().st_mtime_ns == before  # not saved while the lock was busy
    Repository(root).close()
    assert snapshot.stat().st_mtime_ns != before  # the next open saved it


def test_notes_the_snapshot_cannot_keep_do_not_rewrite_it_at_each_open(tmp_path, monkeypatch):
    """A note whose body is not a slice of its bytes (CRLF line ends, a BOM:
    a vault written on Windows) keeps its snapshot entry whole while its
    bytes hash to the snapshot's version: its frontmatter is not parsed
    again, its terms are the slot's. One with properties that cannot be
    read is parsed again (check must see its problem), its terms kept. A
    second open with nothing changed leaves ``index.bin`` alone, and an edit
    of such a note still shows."""
    root = tmp_path / "root"
    with Repository(root) as repo:
        memory = repo.add("a plain memory about walruses", title="walrus", tags=["sea"])
    (root / memory.path).write_bytes((root / memory.path).read_bytes().replace(b"\n", b"\r\n"))
    (root / "windows.md").write_bytes(b"---\r\ntitle: crlf\r\nday: 2024-05-01\r\n---\r\nwritten on windows\r\n")
    (root / "bom.md").write_bytes(b"\xef\xbb\xbf---\ntitle: bom\n---\nbyte order mark\n")
    (root / "bare.md").write_bytes(b"a jotting without frontmatter\r\n\r\nin two paragraphs\r\n")
    (root / "props.md").write_bytes(b"---\ntitle: [unclosed\n---\nproperties nobody can read\n")
    snapshot, store = root / "_system" / "cache" / "index.bin", root / "_system" / "cache" / "bodies.bin"
    Repository(root).close()  # the first open after the hand edits saves the snapshot
    first, kept = snapshot.stat(), store.stat()
    real, parsed = E.parse_note, []
    monkeypatch.setattr(E, "parse_note", lambda data, path="", **kw: parsed.append(path) or real(data, path, **kw))
    with Repository(root) as repo:
        assert parsed == ["props.md"]  # the only one whose frontmatter the snapshot does not keep
        for rel in (memory.path, "windows.md", "bom.md", "bare.md"):  # what a parse gives, without one
            parse = E.parse((root / rel).read_bytes(), rel)
            assert (repo.get(rel).meta, repo.get(rel).body) == (parse.meta, parse.body), rel
        assert {h.entry.path for h in repo.search("walruses windows mark nobody jotting", record=False)} == {
            memory.path, "windows.md", "bom.md", "bare.md", "props.md"}
        assert [p.code for p in repo.check() if p.path == "props.md"] == ["properties"]
    again = snapshot.stat()
    assert (again.st_ino, again.st_mtime_ns) == (first.st_ino, first.st_mtime_ns), "rewritten"
    assert store.stat().st_ino == kept.st_ino, "the body store rewritten"
    (root / "windows.md").write_bytes(b"---\r\ntitle: crlf\r\n---\r\nedited on windows\r\n")
    with Repository(root) as repo:
        assert [h.entry.path for h in repo.search("edited", record=False)] == ["windows.md"]
        assert repo.search("written", record=False) == []
    assert snapshot.stat().st_ino != first.st_ino


def test_a_dated_note_kept_by_the_snapshot_does_not_stop_the_next_save(tmp_path):
    """A person's note with a date property, kept whole by a warm open (its
    dates thawed from the snapshot's tagged text), must not keep later
    snapshots from being written: JSON cannot hold its dates as they are."""
    root = tmp_path / "root"
    Repository(root).close()
    (root / "diary.md").write_bytes(b"---\nday: 2024-05-01\n---\na person's dated note\n")
    Repository(root).close()  # the snapshot keeps it
    snapshot = root / "_system" / "cache" / "index.bin"
    before = snapshot.stat().st_ino
    with Repository(root) as repo:  # warm: the dated note kept as the snapshot had it
        repo.add("a memory written after", title="after")
    assert snapshot.stat().st_ino != before, "the snapshot was not saved"
    with Repository(root) as repo:
        assert not repo.view.dirty and repo.get("diary.md").meta["day"] == E.parse(
            (root / "diary.md").read_bytes(), "diary.md").meta["day"]


_POOLED_OPEN = """
import json, sys
from sediment import Repository
from sediment.search.tokenize import shared
with Repository(sys.argv[1], policy={"open_processes": 2}) as repo:
    print(json.dumps([len(repo), shared()._seg is not None, [h.entry.title for h in repo.search("部署", limit=3)]]))
"""


@needs_fork
def test_a_pooled_cold_open_loads_the_whole_dictionary_before_it_forks(tmp_path):
    """The workers share the pages of a dictionary loaded before the fork:
    a short note alone would be cut by the words it needs (segdict), and
    each worker would then load its own."""
    import json
    import os
    import subprocess
    root = tmp_path / "root"
    with Repository(root) as repo:
        for i in range(30):
            repo.add(f"第{i}次部署用的是新的流水线", title=f"n{i}")
    shutil.rmtree(root / "_system" / "cache")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    run = subprocess.run([sys.executable, "-c", _POOLED_OPEN, str(root)], capture_output=True, text=True,
                         encoding="utf-8", env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    count, loaded, titles = json.loads(run.stdout.strip().splitlines()[-1])
    assert count == 30 and loaded is True and len(titles) == 3
