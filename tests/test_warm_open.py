"""A warm open stats every note and reads only those whose stat is not the
one the index snapshot recorded (issue "Speed", item 1), without ever
hiding a person's edit: a stat vouches for a file's bytes only when it was
taken well after the file's last change (git's "racily clean" rule), and it
holds the ctime, which no tool can put back."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from sediment import Repository
from sediment.disk import vault
from sediment.view import load as L
from sediment.view import view as V


@pytest.fixture
def reads(monkeypatch):
    """The notes a warm open reads (the paths it hands ``read_nofollow``)."""
    seen: list[str] = []
    real = L.read_nofollow

    def counting(path):
        seen.append(Path(path).name)
        return real(path)
    monkeypatch.setattr(L, "read_nofollow", counting)
    return seen


def _root(tmp_path: Path, n: int = 12) -> tuple[Path, list]:
    root = tmp_path / "root"
    with Repository(root) as repo:
        notes = [repo.add(f"note {i} about the harbour crane number {i}", title=f"crane {i}") for i in range(n)]
    return root, notes


def _settled(tmp_path: Path, monkeypatch, n: int = 12) -> tuple[Path, list]:
    """A root whose snapshot holds a settled stamp for every note: our own
    writes never have one (see the last test), so one open reads them and,
    as for many notes, saves the snapshot with their stamps."""
    monkeypatch.setattr(vault, "RACY_NS", 0)  # (every file here is older than its stat)
    root, notes = _root(tmp_path, n)
    time.sleep(0.01)
    restamp = L.RESTAMP
    monkeypatch.setattr(L, "RESTAMP", 1)
    Repository(root).close()
    monkeypatch.setattr(L, "RESTAMP", restamp)
    return root, notes


def test_a_warm_open_reads_only_the_notes_whose_stat_changed(tmp_path, monkeypatch, reads):
    root, notes = _settled(tmp_path, monkeypatch)
    edited = root / notes[3].path
    edited.write_text(edited.read_text(encoding="utf-8").replace("harbour crane", "harbour ferry, longer"),
                      encoding="utf-8")
    (root / "jotting.md").write_text("a person's jotting about the ferry\n", encoding="utf-8")
    time.sleep(0.01)
    reads.clear()
    with Repository(root) as repo:
        assert sorted(reads) == sorted([edited.name, "jotting.md"])
        assert {h.entry.path for h in repo.search("ferry", record=False)} == {notes[3].path, "jotting.md"}
        assert "crane number 5" in repo.get(notes[5].id).body  # (from the body store, not the file)
    reads.clear()
    with Repository(root) as repo:
        assert reads == []
        assert len(repo.search("crane", record=False, limit=50)) == len(notes)  # (titles say crane)


def test_an_edit_that_puts_back_the_old_size_and_mtime_is_still_seen(tmp_path, monkeypatch, reads):
    root, notes = _settled(tmp_path, monkeypatch, 3)
    path = root / notes[1].path
    before = path.stat()
    data = path.read_bytes()
    swapped = data.replace(b"crane number 1", b"plane number 1")
    assert len(swapped) == len(data) and swapped != data
    path.write_bytes(swapped)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # (``touch -r``, ``cp -p``)
    assert (path.stat().st_size, path.stat().st_mtime_ns, path.stat().st_ino) == (
        before.st_size, before.st_mtime_ns, before.st_ino)
    reads.clear()
    with Repository(root) as repo:
        assert [Path(r).name for r in reads] == [path.name]  # (the others: their stat is the snapshot's)
        assert "plane number 1" in repo.get(notes[1].id).body
        assert [h.entry.id for h in repo.search("plane", record=False)] == [notes[1].id]


def test_a_stat_taken_just_after_a_change_does_not_vouch_for_the_file(tmp_path):
    """Within a timestamp's granularity of a change, a second change may keep
    the very same stat: such a stat is not written into the snapshot."""
    f = tmp_path / "note.md"
    f.write_text("x\n", encoding="utf-8")
    st = f.stat()
    assert not vault.settled(st, time.time_ns())
    assert vault.settled(st, time.time_ns() + vault.RACY_NS + 10**9)
    # a time in the future (another machine's clock, a tool's mistake) never settles
    os.utime(f, ns=(st.st_atime_ns, time.time_ns() + 3600 * 10**9))
    assert not vault.settled(f.stat(), time.time_ns() + vault.RACY_NS + 10**9)


def test_notes_read_for_want_of_a_settled_stamp_are_stamped_for_the_next_open(tmp_path, monkeypatch, reads):
    """Notes written just before a snapshot was saved have no stamp in it; the
    first open after they settle reads them and, when they are many, saves
    the snapshot again, so that the opens after it need not."""
    monkeypatch.setattr(L, "RESTAMP", 4)
    root, notes = _root(tmp_path, 8)  # (just written: no stamp can vouch for them yet)
    reads.clear()
    Repository(root).close()
    assert len(reads) == len(notes)
    monkeypatch.setattr(vault, "RACY_NS", 0)  # (now they have settled)
    reads.clear()
    Repository(root).close()
    assert len(reads) == len(notes)
    reads.clear()
    with Repository(root) as repo:
        assert reads == []
        assert len(repo.search("crane", record=False, limit=50)) == len(notes)


def test_a_hand_edit_made_between_our_write_and_its_stat_is_seen_at_the_next_open(tmp_path, monkeypatch):
    """A stat taken after our own write may already be of a person's edit
    made since, however long ago it settled: it never vouches for the bytes
    we wrote."""
    monkeypatch.setattr(vault, "RACY_NS", 20_000_000)  # (20 ms, so that the edit below has settled)
    root = tmp_path / "root"
    real, edited = V.View.forget_path, []

    def forget_path(self, rel):  # (the first thing the view does with a note it just wrote)
        path = self.root / rel
        if rel.endswith(".md") and path.name.startswith("harbour") and os.path.exists(path) and not edited:
            edited.append(path)  # the person saves just after our write; the library looks a while later
            path.write_bytes(path.read_bytes().replace(b"harbour crane", b"harbour plane"))
            time.sleep(0.05)
        return real(self, rel)
    with Repository(root) as repo:
        monkeypatch.setattr(V.View, "forget_path", forget_path)
        note = repo.add("the harbour crane is painted", title="harbour")
        monkeypatch.setattr(V.View, "forget_path", real)
    assert edited and b"harbour plane" in edited[0].read_bytes()
    time.sleep(0.05)
    with Repository(root) as repo:
        assert "harbour plane" in repo.get(note.id).body
        assert [h.entry.id for h in repo.search("plane", record=False)] == [note.id]


def test_a_save_that_keeps_the_stat_of_our_write_is_still_seen(tmp_path, monkeypatch):
    """On coarse file times a person's save of the same size within a step
    of our write keeps the very stat the view took after the write. Such a
    stat is not settled, so the watcher's look at the path reads the bytes
    before it calls the file unchanged."""
    root = tmp_path / "root"
    with Repository(root) as repo:
        note = repo.add("the harbour crane is painted", title="harbour")
        path = root / note.path
        kept = path.stat()  # the stat the view took after our write
        assert repo.view.file_stats.of[note.path] == vault.stamp(kept)
        path.write_bytes(path.read_bytes().replace(b"harbour crane", b"harbour plane"))
        real = Path.stat
        monkeypatch.setattr(Path, "stat", lambda self, **kw: kept if self == path else real(self, **kw))
        repo.view.apply_paths([note.path])  # (what the watcher does with the save's event)
        monkeypatch.setattr(Path, "stat", real)
        assert "harbour plane" in repo.get(note.id).body
