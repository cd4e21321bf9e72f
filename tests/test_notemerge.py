"""The merge driver for notes on its own: the field rules, a body conflict
kept as a conflict, the same answer whichever side is "ours", and through a
plain ``git merge`` in a registered clone: notes only one side changed keep
their bytes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sediment import Repository
from sediment.model.entry import Entry, parse, render
from sediment.sync.notemerge import merge_meta, merge_note

from _machines import GIT, apply_env, git, git_env

BASE = {"id": "01J0000000000000000000ABCD", "title": "printer", "created": "2026-03-01T09:00:00+00:00",
        "updated": "2026-03-01T09:00:00+00:00", "kind": "fact", "tags": ["office", "old"], "value": 0.5,
        "weights": {"importance": 2, "emotional": 1}, "status": "active"}


def note(meta: dict, body: str = "the printer is on floor 2\n\nit jams on mondays\n") -> bytes:
    return render(Entry(meta=meta, body=body)).encode()


def both(base: dict, ours: dict, theirs: dict) -> dict:
    """merge_meta both ways round: the rules may not depend on which side is ours."""
    one, two = merge_meta(base, ours, theirs), merge_meta(base, theirs, ours)
    assert one == two
    return one


def test_status_takes_the_later_lifecycle_state_and_its_reason():
    ours = {**BASE, "status": "superseded", "reason": "overturned", "superseded_by": ["[[new-1]]"]}
    theirs = {**BASE, "status": "archived", "reason": "decayed"}
    m = both(BASE, ours, theirs)
    assert (m["status"], m["reason"], m["superseded_by"]) == ("archived", "decayed", ["[[new-1]]"])


def test_lists_are_unions_and_a_removal_on_one_side_stays_removed():
    ours = {**BASE, "tags": ["office", "printing"], "links": ["[[a]]"]}
    theirs = {**BASE, "tags": ["office", "old", "hardware"], "links": ["[[b]]"], "supersedes": ["[[c]]"]}
    m = both(BASE, ours, theirs)
    assert m["tags"] == ["office", "hardware", "printing"]  # "old" was removed by ours
    assert m["links"] == ["[[a]]", "[[b]]"] and m["supersedes"] == ["[[c]]"]


def test_updated_is_the_later_and_value_and_weights_follow_the_later_update():
    ours = {**BASE, "updated": "2026-03-05T10:00:00+00:00", "value": 0.9, "title": "printer (ours)",
            "weights": {"importance": 4, "emotional": 1}}
    theirs = {**BASE, "updated": "2026-03-04T10:00:00+08:00", "value": 0.2, "title": "printer (theirs)",
              "weights": {"importance": 3, "emotional": 5}}
    m = both(BASE, ours, theirs)
    assert m["updated"] == "2026-03-05T10:00:00+00:00"
    assert (m["value"], m["title"]) == (0.9, "printer (ours)")
    assert m["weights"] == {"importance": 4, "emotional": 5}  # emotional: only theirs changed it


def test_with_equal_updates_the_higher_value_wins_and_one_sided_changes_are_kept():
    ours = {**BASE, "value": 0.7, "source": "chat"}
    theirs = {**BASE, "value": 0.6, "event": "office-move"}
    m = both(BASE, ours, theirs)
    assert (m["value"], m["source"], m["event"]) == (0.7, "chat", "office-move")


def test_a_note_only_one_side_changed_comes_back_byte_for_byte():
    b = note(BASE)
    hand = b.replace(b"title: printer", b"title:    printer   ")  # a person's own spacing
    assert merge_note(b, hand, b) == (hand, True)
    assert merge_note(b, b, hand) == (hand, True)


def test_edits_of_different_body_lines_merge_and_of_the_same_lines_conflict():
    b = note(BASE)
    o = note({**BASE, "tags": ["office", "old", "x"]}, "the printer is on floor 3\n\nit jams on mondays\n")
    t = note({**BASE, "status": "archived"}, "the printer is on floor 2\n\nit jams on fridays\n")
    data, clean = merge_note(b, o, t, "shallow/p.md")
    e = parse(data, "shallow/p.md")
    assert clean and e.body == "the printer is on floor 3\n\nit jams on fridays\n"
    assert e.status == "archived" and "x" in e.tags
    t2 = note(BASE, "the printer is on floor 4\n\nit jams on mondays\n")
    data, clean = merge_note(b, o, t2, "shallow/p.md")
    text = data.decode()
    assert not clean and text.count("<<<<<<<") == 1 and text.count(">>>>>>>") == 1
    assert "floor 3" in text and "floor 4" in text and text.startswith("---\n")


@pytest.fixture
def gitenv(tmp_path, monkeypatch):
    if GIT is None:
        pytest.skip("git is not installed")
    apply_env(git_env(tmp_path), monkeypatch.setenv)


def test_the_driver_command_keeps_a_body_conflict_as_a_conflict(tmp_path, gitenv):
    b, o = note(BASE), note({**BASE, "tags": ["office"]}, "floor 3\n")
    t = note({**BASE, "value": 0.8}, "floor 4\n")
    for name, data in (("O", b), ("A", o), ("B", t)):
        (tmp_path / name).write_bytes(data)
    proc = subprocess.run([sys.executable, "-m", "sediment", "merge-driver", str(tmp_path / "O"),
                           str(tmp_path / "A"), str(tmp_path / "B"), "shallow/p.md"], capture_output=True)
    assert proc.returncode == 1
    text = (tmp_path / "A").read_text()
    assert "<<<<<<<" in text and "value: 0.8" in text and "- old" not in text


def test_a_plain_git_merge_in_a_registered_repository_uses_the_driver(tmp_path, gitenv):
    root = tmp_path / "mem"
    with Repository(root) as repo:
        x = repo.add("the printer is on floor 2", kind="fact", tags=["office"])
        y = repo.add("the kitchen closes at 6", kind="fact")
    from sediment.sync.git import git_init
    git_init(root)
    (root / "shallow" / "by-hand.md").write_text("---\ntitle:   mine\n---\nmy own spacing\n")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "by hand")
    untouched = {p: (root / p).read_bytes() for p in (y.path, "shallow/by-hand.md")}
    git(root, "checkout", "-qb", "other")
    with Repository(root) as repo:
        repo.update(x.id, tags=["office", "printing"])
    git(root, "commit", "-qam", "other: a tag")
    git(root, "checkout", "-q", "main")
    with Repository(root) as repo:
        repo.update(x.id, tags=["office", "hardware"], value=0.9)
    git(root, "commit", "-qam", "main: another tag")
    assert git(root, "check-attr", "merge", "--", x.path).stdout.strip().endswith(": merge: sediment")
    assert not (root / ".gitattributes").exists(), "registered in .git/info/attributes, not in a versioned file"
    git(root, "merge", "-q", "--no-edit", "other")  # no conflict: the driver merged the tags
    e = parse((root / x.path).read_bytes(), x.path)
    assert set(e.tags) == {"office", "printing", "hardware"} and e.value == 0.9
    assert {p: (root / p).read_bytes() for p in untouched} == untouched
