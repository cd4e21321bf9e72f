"""The semantic lane's vector file (derived data in the cache): what it keeps
of each memory version, and what a search reads of it while it changes."""

from __future__ import annotations

import threading

import pytest

from sediment import Repository
from sediment.semantic.embedding import text_of
from sediment.disk.files import WriterLock
from sediment.semantic.vectors import HEADER, VectorFile

np = pytest.importorskip("numpy")


def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v, axis=-1, keepdims=True)


def test_the_corpus_mean_is_taken_over_the_rows_in_use(tmp_path):
    rng = np.random.default_rng(5)
    vecs = rng.normal(size=(6, 8)).astype(np.float32)
    keys = [bytes([i]) * 16 for i in range(6)]
    vf = VectorFile(tmp_path / "v.bin", WriterLock.for_path(tmp_path / "lock"), 5)
    vf.add(keys[:5], vecs[:5])
    assert vf.mean() == pytest.approx(_unit(vecs[:5]).mean(axis=0), abs=0.01)  # none said: every row
    vf.live(keys[:3])
    assert vf.mean() == pytest.approx(_unit(vecs[:3]).mean(axis=0), abs=0.01)
    vf.add(keys[5:], vecs[5:])  # a memory just embedded counts at once
    assert vf.mean() == pytest.approx(_unit(vecs[[0, 1, 2, 5]]).mean(axis=0), abs=0.01)
    vf.live([keys[0], keys[3], keys[5]])  # an edit undone: its old text's row is in use again
    assert vf.mean() == pytest.approx(_unit(vecs[[0, 3, 5]]).mean(axis=0), abs=0.01)
    # a key appended twice (two processes at once, by a sediment that wrote
    # each key it embedded; add() now skips a key the file holds): by its later row
    older = VectorFile(tmp_path / "older.bin", WriterLock.for_path(tmp_path / "lock"), 5)
    older.add([keys[0]], vecs[4:5])
    with open(tmp_path / "v.bin", "ab") as fh:
        fh.write((tmp_path / "older.bin").read_bytes()[HEADER:])
    vf.reload()
    vf.live([keys[0], keys[3], keys[5]])
    assert vf.mean() == pytest.approx(_unit(vecs[[4, 3, 5]]).mean(axis=0), abs=0.01)
    vf.live(keys[:6])  # every key in use: the plain running sum of every row but the one replaced
    assert vf.mean() == pytest.approx(_unit(vecs[[1, 2, 3, 4, 5, 4]]).mean(axis=0), abs=0.01)
    vf.compact([keys[3], keys[5]])  # renumbered rows: all in use, until told otherwise
    assert vf.mean() == pytest.approx(_unit(vecs[[3, 5]]).mean(axis=0), abs=0.01)


class Axes:
    """A memory's vector: one axis per word of it it names, a little of every other."""
    model_id = "test-axes-1"
    WORDS = ("alpha", "beta", "gamma", "delta")

    def __call__(self, texts):
        return np.asarray([[0.05 + t.count(w) for w in self.WORDS] for t in texts], dtype=np.float32)


def test_editing_memories_does_not_move_the_mean_toward_their_old_versions(tmp_path):
    # the file keeps a row per version embedded until it is compacted (at
    # more than twice as many rows as memories, from 1000 on): 50 of 60
    # memories edited twice make 160 rows, and a mean of them all is mostly
    # of texts no memory has any more
    repo = Repository(tmp_path / "root", semantic=Axes())
    try:
        repo.semantic._background = False  # (embedded by the test: embed())
        mems = [repo.add(f"note {i}: alpha") for i in range(60)]
        repo.embed()
        for word in ("beta", "gamma"):
            for e in mems[:50]:
                repo.update(e.id, text=f"note {e.id}: {word}")
            repo.embed()
        assert len(repo.semantic.vectors) == 160
        with repo.view.reading() as view:
            live = _unit(Axes()([text_of(e) for e in view.entries.values()])).mean(axis=0)
        assert repo.semantic.vectors.mean() == pytest.approx(live, abs=0.01)
    finally:
        repo.close()


def test_a_search_is_answered_while_a_compaction_writes_the_file(tmp_path, monkeypatch):
    # a compaction held the guard every search takes through the whole
    # rewrite; now only through the swap. An append waits for it (the
    # writers' lock) and is kept.
    from sediment.semantic import vectors as V
    rng = np.random.default_rng(9)
    vecs = rng.normal(size=(6, 8)).astype(np.float32)
    keys = [bytes([i]) * 16 for i in range(6)]
    vf = VectorFile(tmp_path / "v.bin", WriterLock.for_path(tmp_path / "lock"), 30)
    other = VectorFile(tmp_path / "v.bin", WriterLock.for_path(tmp_path / "lock"), 30)  # (another embedder)
    vf.add(keys[:5], vecs[:5])
    q = rng.normal(size=8)
    before = vf.similarities(q)
    seen: dict[str, object] = {}
    write = V.atomic_write

    def writing(target, data, **kw):
        if "append" not in seen:  # (the compacted file: the only whole file written here)
            search = threading.Thread(target=lambda: seen.setdefault("search", vf.scan_keys(q, center=True)))
            append = threading.Thread(target=lambda: other.add(keys[5:], vecs[5:]))
            search.start()
            append.start()
            search.join(10)  # (a guard against waiting forever, not a speed target)
            seen["answered"] = not search.is_alive()
            append.join(0.2)
            seen["appending"] = append.is_alive()
            seen["append"] = append
        write(target, data, **kw)
    monkeypatch.setattr(V, "atomic_write", writing)
    assert vf.compact(keys[1:4]) == 2
    assert seen["answered"]
    raw, cen, got = seen["search"]  # answered meanwhile, from the rows as they were
    assert got == keys[:5] and raw.tolist() == pytest.approx(before.tolist(), abs=1e-6) and len(cen) == 5
    assert seen["appending"]  # waits for the compaction...
    seen["append"].join(30)
    vf.reload()
    assert [vf.key(i) for i in range(len(vf))] == keys[1:4] + keys[5:]  # ...and is kept
    assert vf.similarities(q).tolist() == pytest.approx(before[1:4].tolist() + [
        float(_unit(vecs[5]) @ _unit(q))], abs=0.02)
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _stale_root(tmp_path):
    """A root of 20 memories whose vector file holds 2100 rows no memory has
    (past the compaction threshold: twice max(memories, 1000)); embedded by
    the test, not the background thread."""
    repo = Repository(tmp_path / "root", semantic=Axes())
    repo.semantic._background = False
    for i in range(20):
        repo.add(f"note {i}: alpha beta")
    repo.embed()
    rng = np.random.default_rng(3)
    repo.semantic.vectors.add([rng.bytes(16) for _ in range(2100)], rng.normal(size=(2100, 4)))
    return repo


def _opening_meanwhile(monkeypatch, root, act=None):
    """Once the compaction has staged its file, another process opens the
    root (its open sweeps the temp files it sees in _system/), or ``act``
    runs; returns whether the staged file was still there after."""
    import subprocess
    import sys
    from sediment.semantic import vectors as V
    write, seen = V.atomic_write, {}

    def writing(target, data, **kw):
        write(target, data, **kw)
        if target.name.endswith(".tmp") and "staged" not in seen:
            seen["staged"] = target
            if act is None:
                subprocess.run([sys.executable, "-c", "import sys; from sediment import Repository; "
                                "Repository(sys.argv[1], semantic=False).close()", str(root)], check=True)
            else:
                act()
            seen["kept"] = target.exists()
    monkeypatch.setattr(V, "atomic_write", writing)
    return seen


def test_another_process_s_open_leaves_a_compaction_s_staged_file_alone(tmp_path, monkeypatch):
    # the open's sweep of _system/ took the staged file for an interrupted
    # write's and deleted it: the compaction failed (FileNotFoundError) and
    # the lane was off for the rest of the process
    repo = _stale_root(tmp_path)
    try:
        seen = _opening_meanwhile(monkeypatch, repo.root)
        out = repo.embed()
        assert seen["kept"] and out["vectors"] == 20  # compacted
        monkeypatch.undo()
        assert repo.semantic.status()["state"] == "ready"
        cache = repo.root / "_system" / "cache"
        (cache / ".vectors-x.bin.0123abcd.tmp").write_bytes(b"")  # (an interrupted write's, lock free)
        Repository(repo.root, semantic=False).close()
        assert not [p.name for p in cache.iterdir() if p.name.endswith(".tmp")]  # swept when free
    finally:
        repo.close()


def test_a_staged_file_swept_away_is_nothing_compacted_and_the_next_pass_compacts(tmp_path, monkeypatch):
    # a sweep that does not wait for the vector lock (an older sediment's)
    # deletes the staged file: the compaction raised FileNotFoundError out of
    # embed(), where it now compacts nothing and says nothing
    from sediment.disk.files import sweep_temps
    repo = _stale_root(tmp_path)
    try:
        cache = repo.root / "_system" / "cache"
        seen = _opening_meanwhile(monkeypatch, repo.root, act=lambda: sweep_temps(cache))
        assert repo.embed()["vectors"] == 2120 and not seen["kept"]  # nothing compacted
        monkeypatch.undo()
        assert repo.embed()["vectors"] == 20  # the next pass compacts
        assert repo.semantic.status()["state"] == "ready"
    finally:
        repo.close()


def test_a_failed_compaction_out_of_embed_is_a_storage_error(tmp_path, monkeypatch):
    import errno
    from sediment.semantic import vectors as V
    from sediment.errors import StorageError
    repo = _stale_root(tmp_path)
    try:
        def full(target, data, **kw):
            raise OSError(errno.ENOSPC, "No space left on device", str(target))
        monkeypatch.setattr(V, "atomic_write", full)  # (a disk full while the compacted file is written)
        with pytest.raises(StorageError) as got:
            repo.embed()
        assert got.value.code == "storage" and "No space left" in str(got.value)
        assert len(repo.semantic.vectors) == 2120  # the file as it was
    finally:
        repo.close()


def _full_once(monkeypatch):
    """The next whole file the vector file writes (the compacted one) meets a full disk."""
    import errno
    from sediment.semantic import vectors as V
    write, left = V.atomic_write, [1]

    def writing(target, data, **kw):
        if left:
            left.pop()
            raise OSError(errno.ENOSPC, "No space left on device", str(target))
        write(target, data, **kw)
    monkeypatch.setattr(V, "atomic_write", writing)


def _until(repo, state):
    import time
    deadline = time.monotonic() + 30  # (a guard against waiting forever, not a speed target)
    while repo.semantic.status()["state"] != state and time.monotonic() < deadline:
        time.sleep(0.02)
    return repo.semantic.status()


def test_a_pass_that_failed_on_the_vector_file_is_tried_again_at_the_next_search(tmp_path, monkeypatch):
    # the background thread stopped on any OSError and the error stayed: the
    # lane was off, and no memory added after was embedded, until a restart
    repo = _stale_root(tmp_path)
    repo.semantic.retry_after = 0.0  # (no pause after the failed pass: the next wake tries at once)
    try:
        _full_once(monkeypatch)
        repo.semantic._background = True
        repo.search("alpha", record=False)  # starts the thread: its pass compacts, on a full disk
        assert "No space left" in _until(repo, "failed")["error"]
        assert repo.semantic.lanes({}, {}, "alpha") == []  # (off meanwhile; this wakes the thread too)
        repo.add("note 20: gamma delta")
        repo.search("gamma", record=False)  # wakes it again: compacts, embeds the new memory
        status = _until(repo, "ready")
        assert status["state"] == "ready" and "error" not in status
        assert status["vectors"] == status["memories"] == 21 and len(repo.semantic.vectors) == 21
        assert repo.semantic._thread is not None and repo.semantic._thread.is_alive()
    finally:
        repo.close()


def test_an_explicit_embed_that_succeeds_clears_the_lane_s_error(tmp_path, monkeypatch):
    repo = _stale_root(tmp_path)
    try:
        _full_once(monkeypatch)
        repo.semantic._background = True
        repo.search("alpha", record=False)
        assert _until(repo, "failed")["state"] == "failed"
        assert repo.embed()["vectors"] == 20
        assert repo.semantic.status()["state"] == "ready"
    finally:
        repo.close()


def _failed_in_background(tmp_path, embedder, n, spoil=None, retry_after=30.0):
    """A root of ``n`` memories embedded by ``embedder``, whose first
    background pass (the first search's) has failed; ``spoil(root)`` readies
    the failure, if the embedder does not bring it."""
    repo = Repository(tmp_path / "root", semantic=embedder)
    repo.semantic.retry_after = retry_after
    repo.semantic._background = False
    for i in range(n):
        repo.add(f"note {i}: alpha beta")
    if spoil is not None:
        spoil(repo.root)
    repo.semantic._background = True
    repo.search("alpha", record=False)
    if _until(repo, "failed")["state"] != "failed":
        repo.close()
        pytest.fail(f"the first background pass did not fail: {repo.semantic.status()}")
    return repo


class Counting(Axes):
    model_id = "test-count-1"
    calls = 0

    def __call__(self, texts):
        type(self).calls += 1
        return super().__call__(texts)


def test_a_vector_file_that_stays_unwritable_costs_no_embedding_at_every_search(tmp_path):
    # after a failed pass every search woke another: each embedded a batch
    # (about a second of model CPU) and threw it away, while the lane was off
    import time

    def unwritable(root):
        cache = root / "_system" / "cache"
        cache.mkdir(parents=True, exist_ok=True)
        (cache / "vectors.lock").unlink(missing_ok=True)
        (cache / "vectors.lock").mkdir()  # the vector file's lock cannot be taken: every add fails

    def passes_in_ten_searches(folder, retry_after):
        repo = _failed_in_background(folder, Counting(), 70, unwritable, retry_after)
        try:
            first = Counting.calls
            for _ in range(10):
                repo.search("alpha", record=False)
                time.sleep(0.05)  # (room for a pass)
            assert repo.semantic._thread is not None and repo.semantic._thread.is_alive()  # paused, not stopped
            return Counting.calls - first
        finally:
            repo.close()
    assert passes_in_ten_searches(tmp_path / "paused", 30.0) == 0
    # the control: with no pause, the same searches do bring passes (so the
    # room above is enough for one to come, on this machine, now)
    assert passes_in_ten_searches(tmp_path / "unpaused", 0.0) > 0


class Flaky(Axes):
    model_id = "test-flaky-1"

    def __init__(self):
        self.bad = 1

    def __call__(self, texts):
        if self.bad:  # a wrong shape, once: the embedder's fault stops the thread
            self.bad -= 1
            return np.ones((len(texts) + 1, 4), dtype=np.float32)
        return super().__call__(texts)


def test_an_explicit_embed_after_the_embedder_s_fault_starts_the_background_again(tmp_path):
    # the error was cleared but the stopped thread stayed stopped: status()
    # said 'embedding' for good and no memory added after was embedded
    repo = _failed_in_background(tmp_path, Flaky(), 5)
    try:
        assert repo.embed()["vectors"] == 5
        repo.add("note 5: alpha gamma")
        repo.search("alpha", record=False)
        status = _until(repo, "ready")
        assert status["vectors"] == status["memories"] == 6
    finally:
        repo.close()
