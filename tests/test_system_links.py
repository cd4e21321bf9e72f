"""Symlinks inside ``_system/`` are not followed.

A link in place of ``_system/`` or one of its parts could make the library
write (or read settings) outside the root. The root still opens; ``check()``
names each link; what needed the linked part is off until a person fixes it:

| link | what is off |
| --- | --- |
| ``_system/cache`` | the index snapshot (neither read nor written), the segmenter's fallback cache |
| ``_system/usage`` | usage records (neither read nor written) |
| ``_system/policy.yaml`` | the file is not read: the defaults are used |
| ``_system/reports`` | the metabolize report |
| ``_system/journal.log``, ``_system/lock``, ``_system/`` | every write (``StorageError`` naming the link) |

Each test points the link at a folder or file outside the root and checks
that the outside tree is byte-identical after a full round of use.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
from pathlib import Path

import pytest

from sediment import Repository, StorageError
from sediment.search import tokenize as T
import sediment.disk.files as F
from sediment.model.policy import from_mapping

LINKS = ["_system", "_system/cache", "_system/usage", "_system/journal.log", "_system/policy.yaml",
         "_system/lock", "_system/reports"]
WRITES_OFF = {"_system", "_system/journal.log", "_system/lock"}
LATER = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2)


def tree(top: Path) -> dict[str, bytes | str | None]:
    """Every name under ``top`` with its bytes (folders: None; links: their target)."""
    out: dict[str, bytes | str | None] = {}
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            rel = p.relative_to(top).as_posix()
            out[rel] = os.readlink(p) if p.is_symlink() else None if p.is_dir() else p.read_bytes()
    return out


def make_root(root: Path) -> str:
    with Repository(root) as repo:
        e = repo.add("Run database migrations before you deploy.", title="Migrations first",
                     kind="fact", value=0.9)
        repo.search("deploy")  # a recall on record
        repo.metabolize(dry_run=False, now=LATER)  # a report, so _system/reports/ exists
    return e.id


def link_out(root: Path, rel: str, outside: Path) -> Path:
    """Move ``rel`` out of the root and leave a symlink to it in its place."""
    target = outside / rel.replace("/", "-")
    src = root / rel
    if src.exists():
        shutil.move(src, target)
    else:
        target.mkdir()
    if rel == "_system/policy.yaml":  # a setting the root must not pick up
        target.write_text("core_max: 3\n")
    if target.is_dir():
        (target / "keep.txt").write_text("outside, not sediment's")
    os.symlink(target, src, target_is_directory=target.is_dir())
    return target


def use(repo: Repository, rel: str, n: int = 1) -> None:
    """Add, search, metabolize: everything that writes somewhere in _system/.
    (``n`` keeps each call's text its own: an exact duplicate is not written.)"""
    if rel in WRITES_OFF:
        with pytest.raises(StorageError) as info:
            repo.add(f"granite boulders by the river, pass {n}", title="granite", kind="fact", value=0.9)
        assert rel in str(info.value), "the refusal must name the link"
        with pytest.raises(StorageError):
            repo.metabolize(dry_run=False, confirm=True, now=LATER + dt.timedelta(days=400))
    else:
        repo.add(f"granite boulders by the river, pass {n}", title="granite", kind="fact", value=0.9)
        plan = repo.metabolize(dry_run=False, confirm=True, now=LATER + dt.timedelta(days=400))
        assert plan.applied
        if rel == "_system/reports":
            assert plan.report is None  # skipped, not written through the link
    assert [h.entry.title for h in repo.search("deploy")] == ["Migrations first"]


@pytest.mark.parametrize("rel", LINKS)
def test_symlink_in_system_folder_is_not_followed(tmp_path, rel, monkeypatch):
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    eid = make_root(root)
    link_out(root, rel, outside)
    before = tree(outside)
    cache_dirs: list[Path | None] = []
    real_shared = T.shared
    monkeypatch.setattr(T, "shared", lambda cache_dir=None: (cache_dirs.append(cache_dir), real_shared())[1])

    repo = Repository(root)
    use(repo, rel)
    first = repo.check()
    core_max, recalls = repo.policy.core_max, repo.strength(eid).recalls
    repo.close()
    again = Repository(root)
    use(again, rel, 2)
    second = again.check()
    again.close()

    assert tree(outside) == before
    for problems in (first, second):
        assert [p.code for p in problems if p.path == rel] == ["symlink"], [str(p) for p in problems]
    if rel in ("_system/policy.yaml", "_system"):
        assert core_max == from_mapping({}).core_max  # not read: the defaults
    if rel in ("_system/usage", "_system"):
        assert recalls == 0  # the records behind the link are not read
    if rel in ("_system/cache", "_system"):
        assert all(d is None or F.symlink_in(root, d.relative_to(root).as_posix()) is None
                   for d in cache_dirs), "the segmenter's fallback cache must not be behind the link"
    assert os.path.islink(root / rel), "the link is a person's to fix, not ours to replace"


@pytest.mark.parametrize("rel", ["_system/journal.log", "_system/lock", "_system/usage/events.log"])
def test_file_replaced_by_a_symlink_while_open_is_not_followed(tmp_path, rel):
    """The second line of defence: the lock, journal appends and usage appends
    open their file with O_NOFOLLOW, so a link made after the open is refused."""
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    make_root(root)
    repo = Repository(root)
    target = outside / "victim"
    target.write_bytes((root / rel).read_bytes() if (root / rel).exists() else b"")
    (root / rel).unlink(missing_ok=True)
    os.symlink(target, root / rel)
    before = tree(outside)
    if rel == "_system/usage/events.log":
        repo.search("deploy")  # the recall is lost, the search is not
        with pytest.raises(StorageError):
            repo.touch(repo.list()[0].id, "confirm")
    elif rel == "_system/journal.log":
        # the note is written (durable before the journal is told); the journal
        # append through the link is refused, and the caller is told
        e = repo.add("granite", title="granite")
        assert any("journal" in w for w in e.warnings)
        with pytest.raises(StorageError):  # a move must record its intent first: refused
            repo.move(e.id, "sediment")
    else:
        with pytest.raises(StorageError):
            repo.add("granite", title="granite")
    assert tree(outside) == before


def test_symlink_in_finds_the_linked_component(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "f").write_text("x")
    os.symlink(tmp_path / "a", tmp_path / "l")
    os.symlink(tmp_path / "a" / "b" / "f", tmp_path / "a" / "lf")
    assert F.symlink_in(tmp_path, "a/b/f") is None
    assert F.symlink_in(tmp_path, "a/missing/f") is None
    assert F.symlink_in(tmp_path, "l/b/f") == "l"
    assert F.symlink_in(tmp_path, "a/lf") == "a/lf"
