"""Files a person edited by hand, badly.

None of them may stop open / search / list; ``check()`` reports each with path,
line (where known) and reason; the good notes are still found; and nothing the
library does - reading, checking, even ``check(fix=True)`` - rewrites, moves or
deletes them. A file fixed by hand comes back after ``refresh()``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from sediment import NotFound, ParseError, Problem, Repository

C = "created: '2026-01-01T00:00:00+08:00'\n"

# path → (bytes, expected in check(): (severity, line or a set of acceptable lines, words in the reason))
BAD = {
    "shallow/malformed.md": (
        ("---\nid: BAD-YAML\ntitle: [unclosed\n" + C + "---\nmalformed quokka\n").encode(),
        ("error", {3, 4}, ["yaml"])),
    "shallow/auth/density-word.md": (
        ("---\nid: BAD-DENSITY\ntitle: density word\n" + C + "density: high\n---\nquokka density\n").encode(),
        ("error", {5}, ["density"])),
    "sediment/no-frontmatter.md": (
        "# Just a heading\n\nquokka without any frontmatter\n".encode(),
        ("error", {None, 1}, ["frontmatter"])),
    "bedrock/not-utf8.md": (
        ("---\nid: BAD-LATIN1\ntitle: caf\xe9\n" + C + "---\nquokka caf\xe9\n").encode("latin-1"),
        ("error", {None}, ["utf-8"])),
    "shallow/empty.md": (b"", ("error", {None, 1}, ["frontmatter"])),
    "shallow/unclosed.md": (
        ("---\nid: BAD-UNCLOSED\ntitle: never closed\n" + C + "quokka\n").encode(),
        ("error", {None, 1}, ["closed"])),
    "shallow/no-id.md": (
        ("---\ntitle: no id\n" + C + "---\nquokka\n").encode(), ("error", {None, 2}, ["id"])),
}
# Outside the layer folders: a person's notes, read (searchable), never written.
PERSONS = {
    "stray.md": ("---\nid: STRAY\ntitle: stray\n" + C + "---\nstray wombat\n").encode(),
    "notes/inside-a-folder.md": ("---\nid: STRAY-2\ntitle: stray in folder\n" + C + "---\nstray wombat\n").encode(),
}
# Tolerated: read as memories (found by search), but reported as warnings.
TOLERATED = {
    "sediment/bom.md": (
        ("\ufeff---\nid: BOM-1\ntitle: written by notepad\n" + C + "---\nbom flamingo\n").encode(),
        "BOM-1", "flamingo", ["byte-order mark"]),
    "bedrock/crlf.md": (
        ("---\r\nid: CRLF-1\r\ntitle: windows line ends\r\n" + C.replace("\n", "\r\n")
         + "---\r\ncrlf walrus\r\n").encode(),
        "CRLF-1", "walrus", ["crlf"]),
    # two files with one id: one of them is served, the other reported
    "bedrock/dup-a.md": (
        ("---\nid: DUP-1\ntitle: first copy\n" + C + "---\nduplicate pelican\n").encode(),
        "DUP-1", "pelican", None),
    "sediment/dup-b.md": (
        ("---\nid: DUP-1\ntitle: second copy\n" + C + "---\nduplicate pelican\n").encode(),
        "DUP-1", "pelican", None),
    "shallow/unquoted-times.md": (
        ("---\nid: UNQUOTED\ntitle: unquoted\ncreated: 2026-01-01T10:00:00+08:00\n"
         "updated: 2026-01-02 10:00:00\ntags: [obsidian, legacy]\ndensity: 0.4\n---\nunquoted heron\n").encode(),
        "UNQUOTED", "heron", None),
}


def file_state(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every file outside _system/: (sha256, mtime_ns, inode)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root:
            dirnames[:] = [d for d in dirnames if d != "_system"]
        for f in filenames:
            p = Path(dirpath, f)
            st = p.stat()
            out[p.relative_to(root).as_posix()] = (hashlib.sha256(p.read_bytes()).hexdigest(),
                                                   st.st_mtime_ns, st.st_ino)
    return out


class RootPath(type(Path())):  # a Path that also carries the good notes the fixture wrote
    good: list


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """Built once per module (jieba's start-up is the slow part); each test gets a copy,
    as a person gets one from git clone or a backup."""
    root = tmp_path_factory.mktemp("badfiles") / "root"
    repo = Repository(root)
    good = [repo.add("部署之前先跑数据库迁移 quokka", title="部署顺序", tags=["部署"], room="ops"),
            repo.add("The user prefers short answers, quokka style", title="short answers", layer="bedrock")]
    repo.close()
    for rel, (data, _) in BAD.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    for rel, (data, *_) in TOLERATED.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    for rel, data in PERSONS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    Repository(root).close()  # warm the derived caches of the copies
    return root, good


@pytest.fixture
def root(tmp_path, template):
    src, good = template
    root = RootPath(tmp_path / "root")
    shutil.copytree(src, root, symlinks=True)
    root.good = good
    return root


def test_open_search_list_survive_bad_files(root):
    before = file_state(root)
    repo = Repository(root)
    good = root.good
    ids = {e.id for e in repo.list()}
    assert {e.id for e in good} <= ids
    assert {"BOM-1", "CRLF-1", "DUP-1", "UNQUOTED"} <= ids
    assert not ids & {"BAD-YAML", "BAD-DENSITY", "BAD-LATIN1", "BAD-UNCLOSED"}
    assert {h.entry.id for h in repo.search("wombat")} == {"STRAY", "STRAY-2"}  # a person's notes
    assert all(repo.get(i).reference for i in ("STRAY", "STRAY-2"))
    assert len(list(repo)) == len(repo) == len(ids)
    hits = {h.entry.id for h in repo.search("quokka")}
    assert hits == {e.id for e in good}
    # the one memory that says it comes first (the feedback lane may add memories
    # that share its other words, all of them readable ones)
    found = [h.entry.id for h in repo.search("部署")]
    assert found[0] == good[0].id and set(found) <= ids
    assert [h.entry.id for h in repo.search("部署", tags=["部署"])] == [good[0].id]
    for e in good:
        assert repo.get(e.id).text == e.text
    for rel, (_, eid, word, _) in TOLERATED.items():
        assert eid in {h.entry.id for h in repo.search(word)}, rel
    assert repo.get("DUP-1").id == "DUP-1"
    with pytest.raises(ParseError):  # it exists, damaged: not "not found"
        repo.get("BAD-DENSITY")
    stats = repo.stats()
    assert stats["memories"] == len(ids)
    assert file_state(root) == before


def test_tolerated_files_read_correctly(root):
    repo = Repository(root)
    bom = repo.get("BOM-1")
    assert bom.title == "written by notepad" and "flamingo" in bom.text
    crlf = repo.get("CRLF-1")
    assert crlf.title == "windows line ends" and "\r" not in crlf.title and "walrus" in crlf.text
    old = repo.get("UNQUOTED")
    assert old.value == pytest.approx(0.4)  # density is read as the old name of value
    assert list(old.tags) == ["obsidian", "legacy"]
    assert old.created.utcoffset() is not None and old.updated.utcoffset() is not None
    assert [e.id for e in repo.list(tag="legacy")] == ["UNQUOTED"]


def test_check_reports_each_bad_file(root):
    repo = Repository(root)
    problems = repo.check()
    assert all(isinstance(p, Problem) for p in problems)
    by_path: dict[str, list[Problem]] = {}
    for p in problems:
        by_path.setdefault(p.path.rstrip("/"), []).append(p)
    for rel, (_, (severity, lines, words)) in BAD.items():
        found = by_path.get(rel)
        assert found, f"check() did not report {rel}: {problems}"
        p = found[0]
        assert p.severity == severity, (rel, p)
        assert p.line in lines, (rel, p)
        assert p.reason and all(w.lower() in p.reason.lower() for w in words), (rel, p)
        assert rel.rsplit("/", 1)[-1] in str(p)
    for rel, (_, _, _, words) in TOLERATED.items():
        if words is None:
            continue
        found = by_path.get(rel)
        assert found and all(p.severity == "warning" for p in found), (rel, problems)
        assert any(all(w.lower() in p.reason.lower() for w in words) for p in found), (rel, found)
    # good notes are not reported
    for e in root.good:
        assert e.path not in by_path


def test_check_reports_duplicate_id_with_both_paths(root):
    repo = Repository(root)
    served = repo.get("DUP-1").path
    assert served in ("bedrock/dup-a.md", "sediment/dup-b.md")
    other = ({"bedrock/dup-a.md", "sediment/dup-b.md"} - {served}).pop()
    dup = [p for p in repo.check() if p.path == other]
    assert dup, "two files with one id must be reported"
    assert dup[0].severity == "error"
    assert "DUP-1" in dup[0].reason and served in dup[0].reason  # says which file it clashes with


@pytest.mark.parametrize("fix", [False, True])
def test_nothing_rewrites_moves_or_deletes_bad_files(root, fix):
    before = file_state(root)
    original = {rel: (root / rel).read_bytes() for rel in before}
    repo = Repository(root)
    repo.search("quokka")
    repo.list()
    repo.stats()
    repo.check(fix=fix)
    repo.refresh()
    repo.recover()
    repo.close()
    Repository(root).check(fix=fix)
    after = file_state(root)
    if fix:  # check(fix=True) adopts notes that only lack an id or times: lines inserted, nothing else
        for rel in [r for r in before if after.get(r) != before[r]]:
            old, new = original[rel], (root / rel).read_bytes()
            inserted = [ln for ln in new.splitlines() if ln not in old.splitlines()]
            ours = (b"id:", b"created:", b"updated:", b"kind:", b"title:", b"---")
            assert all(ln.startswith(ours) for ln in inserted), rel
            assert [ln for ln in new.splitlines() if ln not in inserted and ln != b"---"] == [
                ln for ln in old.splitlines() if ln != b"---"], rel
            after[rel] = before[rel]
    assert after == before


def test_writes_elsewhere_do_not_touch_bad_files(root):
    """Adding, updating, moving and archiving good notes leaves the bad files alone."""
    before = {k: v for k, v in file_state(root).items() if k in BAD or k in TOLERATED}
    repo = Repository(root)
    e = repo.add("another note", title="malformed")  # same title as a bad file's name
    assert e.path != "shallow/malformed.md"
    repo.update(root.good[0].id, text="updated by the agent")
    repo.move(root.good[0].id, "sediment")
    repo.archive(root.good[1].id, reason="old")
    after = {k: v for k, v in file_state(root).items() if k in BAD or k in TOLERATED}
    assert after == before


def test_fixed_file_comes_back_after_refresh(root):
    repo = Repository(root)
    with pytest.raises(ParseError):
        repo.get("BAD-DENSITY")
    target = root / "shallow" / "auth" / "density-word.md"
    target.write_bytes(target.read_bytes().replace(b"density: high", b"density: 0.9"))
    (root / "shallow" / "malformed.md").write_bytes(
        ("---\nid: BAD-YAML\ntitle: fixed\n" + C + "---\nmalformed quokka now fine\n").encode())
    repo.refresh()
    fixed = repo.get("BAD-DENSITY")
    assert fixed.value == pytest.approx(0.9) and fixed.room == "auth"
    assert repo.get("BAD-YAML").title == "fixed"
    assert {"BAD-DENSITY", "BAD-YAML"} <= {h.entry.id for h in repo.search("quokka")}
    reported = {p.path for p in repo.check()}
    assert "shallow/auth/density-word.md" not in reported and "shallow/malformed.md" not in reported


def test_duplicate_comes_back_when_its_twin_is_removed(root):
    repo = Repository(root)
    first = repo.get("DUP-1").path
    other = ({"bedrock/dup-a.md", "sediment/dup-b.md"} - {first}).pop()
    (root / first).unlink()
    repo.refresh()
    assert repo.get("DUP-1").path == other
    assert not [p for p in repo.check() if p.path in ("bedrock/dup-a.md", "sediment/dup-b.md")]


def test_file_broken_after_open_is_reported_not_fatal(root):
    repo = Repository(root)
    e = root.good[1]
    (root / e.path).write_bytes(b"---\nid: [oops\n---\nbroken later\n")
    repo.refresh()
    with pytest.raises(NotFound):
        repo.get(e.id)
    assert any(p.path == e.path for p in repo.check())
    assert {h.entry.id for h in repo.search("quokka")} == {root.good[0].id}
    assert (root / e.path).read_bytes() == b"---\nid: [oops\n---\nbroken later\n"


def test_bad_files_only_root_opens(tmp_path):
    root = tmp_path / "root"
    for rel, (data, _) in BAD.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    before = file_state(root)
    repo = Repository(root)
    assert len(repo) == 0 and repo.list() == [] and repo.search("quokka") == []
    assert len([p for p in repo.check() if p.severity == "error"]) >= 7
    after = {k: v for k, v in file_state(root).items() if k != ".gitignore"}
    assert after == before
