"""What a person puts in a file's place after the library looked at it.

The journal, or a note, replaced by a FIFO or by a symlink (to a file outside
the root) after the open, between the library's look and its read. A FIFO is
never opened to wait on (its open blocks until something writes to it: with
the writer lock held, for good); a symlink is never followed (it may point
anywhere). Each read that would block runs in a thread with a guard: a test
that would hang fails instead, and the FIFO is then opened for writing to let
the reader go.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

import pytest

from sediment import Conflict, Repository, UnsafePath
from sediment.store import moves
from sediment.view import load as W
from sediment.disk.journal import Journal

from _fifo import unblocked

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")

POLICY = {"lock_timeout_seconds": 5}


def test_a_fifo_put_in_place_of_the_journal_blocks_no_search_and_check_names_it(tmp_path):
    """After the open a person replaces the journal with a FIFO: the next
    search (its feed reads the journal) and ``check`` do not wait on it; it
    reads as no journal, ``check`` names it, and a write still stands (with
a warning: the journal took no record of it)."""
    root = tmp_path / "mem"
    writer = Repository(root, policy=POLICY)
    e = writer.add("a memory about walruses", title="walrus")
    reader = Repository(root, policy=POLICY)
    journal = root / "_system" / "journal.log"
    journal.unlink()
    os.mkfifo(journal)
    hits = unblocked(lambda: reader.search("walruses", record=False), journal)
    assert [h.entry.id for h in hits] == [e.id]
    problems = unblocked(reader.check, journal)
    assert any(p.path == "_system/journal.log" and p.code == "not_a_file" for p in problems), problems
    new = unblocked(lambda: writer.add("written while the journal is a FIFO", title="later"), journal)
    assert writer.get(new.id).body.strip() == "written while the journal is a FIFO"
    assert any("journal" in w for w in new.warnings), new.warnings  # (its record went nowhere: said so)
    assert stat.S_ISFIFO(os.lstat(journal).st_mode)  # (the person's FIFO is left where it is)


def test_a_symlink_put_in_place_of_the_journal_is_not_followed(tmp_path):
    """After the open a person replaces the journal with a symlink to a file
    outside the root: its records are not read (no path it names reaches a
    feed, no damaged line of it is reported), ``check`` names the link, and
    nothing is appended to the file it points to."""
    base = tmp_path
    root = base / "mem"
    writer = Repository(root, policy=POLICY)
    e = writer.add("a memory about walruses", title="walrus")
    reader = Repository(root, policy=POLICY)
    journal = root / "_system" / "journal.log"
    outside = base / "elsewhere.log"
    outside.write_bytes(journal.read_bytes() + b"not a record\n"
                        + json.dumps({"phase": "done", "op": "write", "paths": ["shallow/elsewhere.md"]}).encode()
                        + b"\n")
    kept = outside.read_bytes()
    journal.unlink()
    journal.symlink_to(outside)
    jr = Journal(journal).read()  # (what a feed and recovery read)
    assert jr.records == [] and jr.damaged == [] and jr.refused
    reader.search("walruses", record=False)  # (its feed: it reads the journal again)
    problems = reader.check()
    ours = [(p.code, p.line) for p in problems if p.path == "_system/journal.log"]
    assert ours == [("not_a_file", None)], problems
    writer.update(e.id, text="walruses, rewritten while the journal is a link")
    assert outside.read_bytes() == kept


@pytest.mark.parametrize("verb", ["move", "rewrite"])
def test_a_note_swapped_for_a_fifo_after_the_reread_blocks_no_write(tmp_path, verb):
    """A person replaces a note with a FIFO after a verb re-read it (under
    the writer lock) and before it replaces or moves the note: the write's
    checked open does not wait on the FIFO (with the lock held, every other
    writer would wait too). The person's FIFO is kept (``Conflict``), no copy
    of it is left behind, and the lock is free again."""
    root = tmp_path / "mem"
    repo = Repository(root, policy=POLICY)
    e = repo.add("a memory about walruses", title="walrus")
    store, src = repo.store, root / e.path

    def write_after_the_swap() -> Any:
        with store.writing():
            cur = store.reread(e)
            src.unlink()
            os.mkfifo(src)  # (the window metabolize's batch has for every item, too)
            if verb == "move":
                return moves.move(store, cur, "sediment", cur.room, op="move", meta_changes={})
            return store.rewrite(cur, meta=dict(cur.meta), body="walruses, rewritten")
    with pytest.raises(Conflict):
        unblocked(write_after_the_swap, src)
    assert stat.S_ISFIFO(os.lstat(src).st_mode)
    assert not [p for p in (root / "sediment").rglob("*") if p.is_file() or p.is_fifo()]
    other = Repository(root, policy=POLICY)
    assert other.add("written after the refused write", title="after").path.startswith("shallow/")


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_note_swapped_after_the_walk_is_not_read_by_a_warm_open(tmp_path, monkeypatch, kind):
    """A note replaced by a symlink to a file outside the root (or by a
    FIFO) after the open's walk listed it and before the warm open reads
    it against the snapshot (the swap is made at the start of that read):
    the outside file is not indexed as the note, the FIFO does not block
    the open; the note is left out as the walk leaves out what is not a
    regular file, and ``check`` names it."""
    root = tmp_path / "mem"
    with Repository(root, policy=POLICY) as r:
        e = r.add("a memory about walruses", title="walrus")
    note, outside = root / e.path, tmp_path / "outside.md"
    outside.write_bytes(note.read_bytes().replace(b"a memory about walruses", b"zebracorn outside the root"))
    real = W.load_files

    def swapped(*args: Any, **kwargs: Any) -> Any:
        note.unlink()
        if kind == "symlink":
            note.symlink_to(outside)
        else:
            os.mkfifo(note)
        return real(*args, **kwargs)
    monkeypatch.setattr(W, "load_files", swapped)
    repo = unblocked(lambda: Repository(root, policy=POLICY), note)
    monkeypatch.setattr(W, "load_files", real)
    assert [x.path for x in repo.list()] == []
    assert repo.search("zebracorn", record=False) == []
    assert any(p.path == e.path and p.code == "not_a_file" for p in repo.check())


@pytest.mark.parametrize("verb", ["update", "move"])
def test_an_update_or_move_of_a_note_replaced_by_a_fifo_is_refused_at_once(tmp_path, verb):
    """A person puts a FIFO where an agent's note was; the agent then updates
    (or moves) that memory: ``UnsafePath`` at once (the verb's re-read does
    not wait on the FIFO with the writer lock held), the FIFO is kept, and
    another writer is not kept waiting."""
    root = tmp_path / "mem"
    repo = Repository(root, policy=POLICY)
    e = repo.add("a memory about walruses", title="walrus")
    note = root / e.path
    note.unlink()
    os.mkfifo(note)
    with pytest.raises(UnsafePath):
        unblocked(lambda: repo.update(e.id, text="new text") if verb == "update" else repo.move(e.id, "sediment"),
                  note)
    assert stat.S_ISFIFO(os.lstat(note).st_mode)
    other = Repository(root, policy=POLICY)
    assert other.add("written after the refused write", title="after").path.startswith("shallow/")
