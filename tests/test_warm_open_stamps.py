"""Review of the warm open's settled stamps: a stamp may vouch for a note's
bytes at the next open only if it was taken after those bytes were read
(or written) by the view. Where the view is handed bytes it wrote a while
ago (an import's chunk, a batch of moves) and stats the file only now, a
person's save in between is stamped as settled and, at every open after,
hidden behind the bytes the view wrote.

``vault.RACY_NS`` is shortened so that the tests need not wait two seconds:
the sleep stands for the rest of a slow batch (a few hundred fsyncs)."""

from __future__ import annotations

import time
from pathlib import Path

from sediment import Repository
from sediment.disk import vault
from sediment.model import entry as E
from sediment.store import moves as M
from sediment.store.store import Store
from sediment.view import load as L

RACY = 50_000_000  # 50 ms instead of 2 s (file times here move in steps of a few ms at most)


def _persons_save(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


def _export(tmp_path: Path) -> tuple[E.Entry, str, Path]:
    """A memory exported from one root, and an empty root to import it into."""
    src = tmp_path / "src"
    with Repository(src) as a:
        e = a.add("the boiler room key hangs by the door", kind="fact")
    out = Repository(src).export(tmp_path / "out.jsonl")["file"]
    root = tmp_path / "root"
    Repository(root).close()
    return e, out, root


def test_a_persons_save_during_an_import_chunk_is_not_hidden_at_the_next_open(tmp_path, monkeypatch):
    monkeypatch.setattr(vault, "RACY_NS", RACY)
    e, out, root = _export(tmp_path)
    real = Store.create_many

    def slow_chunk(self, files):
        why = real(self, files)
        # a person (or their sync tool) saves the first note just written,
        # and the chunk goes on for longer than RACY_NS before the view stats it
        _persons_save(root / files[0][0], "by the door", "at the gate")  # (the same size)
        time.sleep(RACY * 2 / 1e9)
        return why
    monkeypatch.setattr(Store, "create_many", slow_chunk)
    with Repository(root) as b:
        assert b.import_(out, dry_run=False)["added"] == 1
    monkeypatch.setattr(Store, "create_many", real)
    time.sleep(RACY * 2 / 1e9)  # (settled now, as any file is two seconds later)
    with Repository(root) as b:
        assert "at the gate" in b.get(e.id).body  # the person's save, on disk
        assert [h.entry.id for h in b.search("gate", record=False)] == [e.id]


def test_a_persons_save_during_a_batch_of_moves_is_not_hidden_at_the_next_open(tmp_path, monkeypatch):
    monkeypatch.setattr(vault, "RACY_NS", RACY)
    root = tmp_path / "root"
    with Repository(root) as repo:
        e = repo.add("the ferry leaves at seven from pier four", kind="fact")
    time.sleep(RACY * 2 / 1e9)
    real = M._finish_all

    def slow_batch(detached):
        got = real(detached)
        # the moves are linked and their sources gone; before the view is
        # told (step 5) a person saves the note at its new place, and the
        # batch goes on for longer than RACY_NS
        for p in (root / "sediment").rglob("*.md"):
            _persons_save(p, "pier four", "pier nine")  # (the same size)
        time.sleep(RACY * 2 / 1e9)
        return got
    monkeypatch.setattr(M, "_finish_all", slow_batch)
    with Repository(root) as repo:
        moved = repo.move(e.id, "sediment")
    monkeypatch.setattr(M, "_finish_all", real)
    assert "pier nine" in (root / moved.path).read_text(encoding="utf-8")
    time.sleep(RACY * 2 / 1e9)
    with Repository(root) as repo:
        assert "pier nine" in repo.get(e.id).body
        assert [h.entry.id for h in repo.search("nine", record=False)] == [e.id]


def test_the_snapshot_never_pairs_a_stamp_with_other_bytes(tmp_path, monkeypatch):
    """Every stamp the snapshot holds, checked against the file: when the
    file still has that stat, its bytes hash to the document's version. The
    notes sediment wrote are stamped by the first open that reads them."""
    monkeypatch.setattr(vault, "RACY_NS", 0)
    monkeypatch.setattr(L, "RESTAMP", 1)
    root = tmp_path / "root"
    with Repository(root) as repo:
        ids = [repo.add(f"note {i} on the tide tables", kind="fact").id for i in range(5)]
        repo.move(ids[0], "sediment")
    time.sleep(0.05)
    for _ in range(2):
        with Repository(root) as repo:
            fingerprint = repo.view.tokenizer.fingerprint()
        _, docs = L.read_snapshot(root / "_system" / "cache" / "index.bin", fingerprint)
        assert docs is not None
        checked = 0
        for slot, (path, version) in enumerate(zip(docs.paths, docs.versions)):
            seen = docs.stamp(slot)
            if seen is not None and seen == vault.stamp((root / path).stat()):
                assert E.content_version((root / path).read_bytes()) == version, path
                checked += 1
        assert checked == len(ids)


def test_a_persons_save_during_an_import_chunk_is_seen_by_a_refresh(tmp_path, monkeypatch):
    """(Older than the warm open's stamps.) In the process that imported, the
    stat the view took after the chunk is already the person's: ``refresh``
    and the watcher take it for the import's own write and skip the file."""
    e, out, root = _export(tmp_path)
    real = Store.create_many

    def chunk(self, files):
        why = real(self, files)
        _persons_save(root / files[0][0], "by the door", "at the gate")
        return why
    monkeypatch.setattr(Store, "create_many", chunk)
    with Repository(root) as b:
        assert b.import_(out, dry_run=False)["added"] == 1
        b.refresh()
        assert "at the gate" in b.get(e.id).body


def test_a_persons_save_during_a_batch_of_moves_is_seen_by_a_refresh(tmp_path, monkeypatch):
    root = tmp_path / "root"
    with Repository(root) as repo:
        e = repo.add("the ferry leaves at seven from pier four", kind="fact")
    real = M._finish_all

    def batch(detached):
        got = real(detached)
        for p in (root / "sediment").rglob("*.md"):
            _persons_save(p, "pier four", "pier nine")  # (the same size)
        return got
    monkeypatch.setattr(M, "_finish_all", batch)
    with Repository(root) as repo:
        repo.move(e.id, "sediment")
        repo.refresh()
        assert "pier nine" in repo.get(e.id).body
