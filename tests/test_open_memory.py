"""What a warm open keeps out of the process (issue "Speed", the 100k peak):
the word lane's term vectors stay in the index snapshot's file and are read
a document at a time, and the notes are stat'ed one at a time, not all held
at once. The vectors read as the ones a cold open builds; a snapshot
replaced or cut after the open costs nothing but feedback terms, never an
error; the file is let go with the repository."""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
from array import array
from pathlib import Path

import pytest

from sediment import Repository
from sediment.disk import vault
from sediment.search.index import DocTerms, Index
from sediment.search.postings import Vocab
from sediment.search.stored import Stored

needs_pread = pytest.mark.skipif(not hasattr(os, "pread"), reason="the vectors stay in memory without os.pread")

NOTES = [
    "the harbour crane was serviced on Thursday by the night shift",
    "Wang Lei keeps the crane log and the tide tables",
    "tide tables: high water at six, low water at noon",
    "起重机周四检修，码头东侧封闭",
    "码头的潮汐表由王磊维护",
    "the ferry timetable changes in winter; the crane stays idle",
    "night shift rota: Wang Lei, Chen Yu, and the harbour master",
]
QUERIES = ["crane", "tide tables", "Wang Lei", "起重机", "潮汐表", "night shift harbour"]


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    with Repository(root) as repo:
        for i in range(4):
            for n in NOTES:
                repo.add(f"{n} ({i})", kind="fact")
    return root


def _vectors(repo: Repository) -> dict[str, list[tuple[str, int]]]:
    idx = repo.view.index
    return {k: sorted(idx.words.vector(s)) for s, k in enumerate(idx.key_of) if k is not None}


def _found(repo: Repository) -> list[list[tuple[str, float]]]:
    return [[(h.entry.id, round(h.score, 9)) for h in repo.search(q, record=False)] for q in QUERIES]


@needs_pread
def test_term_vectors_are_read_from_the_snapshot_file_as_a_cold_open_builds_them(tmp_path):
    root = _root(tmp_path)
    (root / "_system" / "cache" / "index.bin").unlink()  # (the next open is cold)
    with Repository(root) as cold:
        assert not isinstance(cold.view.index.words.vec_terms, Stored)
        vectors, found = _vectors(cold), _found(cold)
    with Repository(root) as warm:
        assert isinstance(warm.view.index.words.vec_terms, Stored)
        assert _vectors(warm) == vectors
        assert any(vectors.values())
        assert _found(warm) == found


@needs_pread
def test_a_snapshot_replaced_or_cut_after_the_open_never_breaks_a_search(tmp_path):
    root = _root(tmp_path)
    snapshot = root / "_system" / "cache" / "index.bin"
    with Repository(root) as repo:
        vectors = _vectors(repo)
        with Repository(root) as other:  # another writer saves a new snapshot over this one's file
            new = other.add("a new note about the crane and the tide", kind="fact").id
            other.view.save_snapshot()
        assert new in [h.entry.id for h in repo.search("crane tide", record=False)]  # (seen, as a delta)
        # the notes it held read as they did: the bytes it opened, not the new file's
        assert {k: v for k, v in _vectors(repo).items() if k != new} == vectors
    with Repository(root) as repo:
        assert isinstance(repo.view.index.words.vec_terms, Stored)
        with open(snapshot, "r+b") as fh:  # cut in place, under the open repository
            fh.truncate(200)
        for q in QUERIES:
            repo.search(q, record=False)  # (feedback reads what is left: no error)
        repo.add("one more crane note", kind="fact")
        repo.view.index.compact()  # (reads the vectors whole: what is left of them)
        assert [h.entry.id for h in repo.search("crane", record=False)]


@needs_pread
def test_the_snapshot_file_is_let_go_with_the_repository(tmp_path):
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("counts open files by /proc")
    root = _root(tmp_path)
    gc.collect()
    before = len(os.listdir("/proc/self/fd"))
    repo = Repository(root)
    assert isinstance(repo.view.index.words.vec_terms, Stored)
    repo.close()
    del repo
    gc.collect()
    assert len(os.listdir("/proc/self/fd")) == before


def test_stat_notes_passes_over_what_the_walk_would_have(tmp_path):
    (tmp_path / "a.md").write_text("a", encoding="utf-8")
    (tmp_path / "b.md").symlink_to(tmp_path / "a.md")
    (tmp_path / "d.md").mkdir()
    got = vault.stat_notes(tmp_path, ["a.md", "b.md", "c.md", "d.md"])
    assert list(got) == ["a.md"]
    st = got["a.md"]
    assert st is not None and st.st_size == 1


def test_a_vocabulary_of_one_term_length_keeps_no_starts_and_finds_as_any_other():
    bigrams = sorted({"码头", "潮汐", "起重", "重机", "检修", "东侧"})
    fixed = Vocab.from_sorted(bigrams)
    assert fixed.width == 2 and fixed.starts is None
    mixed = Vocab.from_sorted(sorted(["crane", "tide", "码头", "a"]))
    assert mixed.width == 0 and mixed.starts is not None
    for vocab, terms in ((fixed, bigrams), (mixed, sorted(["crane", "tide", "码头", "a"]))):
        assert len(vocab) == len(terms) and list(vocab) == terms == vocab.terms()
        assert [vocab.find(t) for t in terms] == list(range(len(terms)))
        assert vocab.find("潮") is None and vocab.find("zz") is None and vocab.find("") is None
        text, starts = vocab.packed()
        assert Vocab(text.decode("utf-8"), None if vocab.width else array("I", bytes(starts)),
                     vocab.width).terms() == terms
    assert Vocab.from_sorted([]).terms() == [] and len(Vocab.from_sorted([])) == 0


def test_a_snapshot_whose_vocabulary_width_is_wrong_is_refused(tmp_path):  # (read_snapshot: a cold open)
    idx = Index()
    idx.put("a", DocTerms({"crane": 1}, {"码头": 1, "潮汐": 2}))
    idx.put("b", DocTerms({"tide": 1}, {"码头": 1}))
    data = b"".join(idx.snapshot())
    assert Index.restore(data)[0].bigrams.base_index.width == 2
    bad = data.replace(b'"width":2', b'"width":3')
    bad = bad[:len(b"SEDIDX\n")] + hashlib.sha256(bad[len(b"SEDIDX\n") + 32:]).digest() + bad[len(b"SEDIDX\n") + 32:]
    with pytest.raises(ValueError, match="inconsistent"):
        Index.restore(bad)


def test_names_built_on_first_use_read_as_names_kept_from_the_open(tmp_path):
    """``by_name`` is built when first read: the same names as one built at
    the open and kept current through writes, moves, purges and hand edits."""
    root = tmp_path / "root"
    with Repository(root) as repo:
        a = repo.add("crane log", kind="fact", title="Crane log")
        b = repo.add("tide table", kind="fact", title="Tide table")
        c = repo.add("ferry timetable", kind="fact", title="Ferry")
    with Repository(root) as early:
        assert dict(early.view.by_name)  # (built at once: kept current from here)
        early.add("crane log again", kind="fact", title="Crane log")
        early.move(a.id, "bedrock")
        early.purge(b.id, confirm=True)
        (root / "Harbour.md").write_text("a note of a person's about the harbour\n", encoding="utf-8")
        (root / "Logs").mkdir()
        (root / "Logs" / "Harbour.md").write_text("another, named alike\n", encoding="utf-8")
        early.archive(c.id, reason="old")
        early.refresh()  # (the hand edit, seen)
        kept = dict(early.view.by_name)
        with Repository(root) as late:  # built on first read, from the notes
            assert dict(late.view.by_name) == kept
        assert {n: set(ids) for n, ids in kept.items()} == {
            n: {e.id for e in early.view.entries.values() if e.name == n} for n in kept}
        assert len(kept["Harbour"]) == 2 and len(kept) == len(early.view.entries) - 1  # (two named alike)


def test_a_note_whose_folder_became_a_file_since_the_walk_is_gone_not_a_problem(tmp_path):
    """The open stats each recorded note after the walk, while it loads: a
    folder replaced by a file in between leaves its notes gone, as a
    removed folder does (the walk would have passed over them), not
    unreadable."""
    root = tmp_path / "root"
    with Repository(root) as repo:
        repo.add("the ferry timetable", kind="fact")
    (root / "Zed").mkdir()
    (root / "Zed" / "x.md").write_text("a person's note\n", encoding="utf-8")
    Repository(root).close()  # (the snapshot records Zed/x.md)

    def progress(stage: str, done: int, total: int) -> None:  # (called as the open loads, after its walk)
        if stage == "open" and (root / "Zed").is_dir():
            for f in (root / "Zed").iterdir():
                f.unlink()
            (root / "Zed").rmdir()
            (root / "Zed").write_text("now a file\n", encoding="utf-8")

    with Repository(root, progress=progress) as repo:
        assert not (root / "Zed").is_dir()  # (the folder went while the open loaded)
        assert repo.check() == [] and "Zed/x.md" not in repo.view.by_path
    assert vault.stat_notes(root, ["Zed/x.md"]) == {}


def test_a_duplicate_whose_folder_became_a_file_is_gone_not_a_problem(tmp_path):
    """A copy left out as a duplicate is read again at each refresh; once its
    folder is a file, it is gone, as a removed folder's notes are, not an
    unreadable note no refresh clears."""
    root = tmp_path / "root"
    with Repository(root) as repo:
        e = repo.add("the crane log", kind="fact")
        (root / "Zed").mkdir()
        (root / "Zed" / "copy.md").write_bytes((root / e.path).read_bytes())  # a person's copy: one id, twice
        repo.refresh()
        assert [p.code for p in repo.check() if p.path == "Zed/copy.md"] == ["duplicate_id"]
        shutil.rmtree(root / "Zed")
        (root / "Zed").write_text("now a file", encoding="utf-8")
        repo.refresh()
        assert [p for p in repo.check() if p.path.startswith("Zed")] == []
        assert repo.get(e.id).path == e.path


def _open_files() -> list[str]:
    out = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            out.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:  # (the listing's own descriptor, closed since)
            pass
    return out


@needs_pread
def test_a_save_reads_the_vectors_from_the_new_snapshot_and_lets_the_old_file_go(tmp_path):
    """A save that folds nothing into the postings (a move within a room, a
    restamp) writes the vectors it still reads from the old snapshot into
    the new one: from then on they are read from the new file, and the old
    one, replaced, is not kept on disk for the life of the process."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("reads open files by /proc")
    root = _root(tmp_path)
    snapshot = root / "_system" / "cache" / "index.bin"
    with Repository(root) as repo:
        vec = repo.view.index.words.vec_terms
        assert isinstance(vec, Stored)
        vectors = _vectors(repo)
        e = next(iter(repo.view.entries.values()))
        repo.move(e.id, "bedrock")  # (same room: the index keeps its slot, no postings change)
        repo.view.save_snapshot()
        assert repo.view.index.words.vec_terms is not vec  # (its file, the old one, let go with it)
        del vec
        gc.collect()
        assert not [p for p in _open_files() if "index.bin" in p and "(deleted)" in p]
        assert os.fstat(repo.view.index.words.vec_terms._fd).st_ino == snapshot.stat().st_ino
        assert _vectors(repo) == vectors
        found = _found(repo)
    with Repository(root) as again:
        assert _found(again) == found
