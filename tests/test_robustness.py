"""Things that must not stop a root or lose a memory: damaged journal records,
notes broken by hand in the middle of a metabolism, symlinked layer folders,
partial policy files, a snapshot made by another version."""

from __future__ import annotations

import datetime as dt
import json
import os

import pytest

from sediment import InvalidInput, Repository
from sediment.search import index as I
from sediment.store import moves
from sediment.search.tokenize import Tokenizer

UTC = dt.timezone.utc


def _journal(root):
    return root / "_system" / "journal.log"


def test_pending_supersede_over_a_hand_broken_note_does_not_stop_the_root(tmp_path):
    repo = Repository(tmp_path)
    a = repo.add("old judgement", title="a", kind="fact")
    b = repo.add("new judgement", title="b", kind="fact")
    repo.close()
    with open(_journal(tmp_path), "a") as fh:
        fh.write(json.dumps({"seq": "dead1", "phase": "begin", "op": "supersede",
                             "old": a.path, "new": b.path}) + "\n")
    broken = b"---\nid: [oops\n---\nbroken by hand\n"
    (tmp_path / a.path).write_bytes(broken)

    again = Repository(tmp_path)  # must open
    assert (tmp_path / a.path).read_bytes() == broken  # never rewritten
    assert again.get(b.id).title == "b"
    codes = {p.code for p in again.check()}
    assert "journal_failed" in codes and "journal_pending" not in codes
    again.add("writes still work", title="c")  # the record no longer blocks writers


def test_journal_record_pointing_outside_the_root_is_refused(tmp_path):
    repo = Repository(tmp_path)
    a = repo.add("x", title="a")
    repo.close()
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    outside.write_text("precious")
    with open(_journal(tmp_path), "a") as fh:
        fh.write(json.dumps({"seq": "dead2", "phase": "begin", "op": "move",
                             "src": f"../{outside.name}", "dst": a.path, "id": "x"}) + "\n")
    Repository(tmp_path)
    assert outside.read_text() == "precious"


def test_metabolize_skips_a_note_broken_by_hand_and_applies_the_rest(tmp_path):
    now = dt.datetime(2026, 1, 10, tzinfo=UTC)
    repo = Repository(tmp_path)
    notes = [repo.add(f"useful fact {i}", title=f"fact {i}", kind="fact", value=0.9,
                      now=now - dt.timedelta(days=5)) for i in range(3)]
    repo.close()
    repo = Repository(tmp_path)
    broken = b"---\nid: [oops\n---\n"
    (tmp_path / notes[1].path).write_bytes(broken)  # no watcher: the view still has it
    plan = repo.metabolize(dry_run=False, confirm=True, now=now)
    assert {m.id for m in plan.moves} == {notes[0].id, notes[2].id}
    assert [m.id for m, _ in plan.skipped] == [notes[1].id]
    assert (tmp_path / notes[1].path).read_bytes() == broken
    assert plan.report and "skipped" in (tmp_path / plan.report).read_text()


@pytest.mark.parametrize("field,value", [("event", ["a", "b"]), ("density", "high"),
                                          ("source", {"k": "v"})])
def test_add_refuses_fields_that_would_not_read_back(tmp_path, field, value):
    repo = Repository(tmp_path)
    kwargs = {field: value} if field != "source" else {"source": value}
    with pytest.raises(InvalidInput):
        repo.add("x", title="t", **kwargs)
    assert not any((tmp_path / "shallow").iterdir())


def test_update_refuses_to_clear_fields_the_library_owns(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("x", title="t")
    repo.archive(e.id, reason="old")
    for field in ("status", "created", "updated", "superseded_by"):
        with pytest.raises(InvalidInput):
            repo.update(e.id, **{field: None})
    assert repo.get(e.id).status == "archived"


def test_duplicate_comes_back_when_its_twin_goes(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("the twin", title="twin")
    copy = tmp_path / "sediment" / f"{e.name}.md"
    copy.write_bytes((tmp_path / e.path).read_bytes())  # a move by hand, half done
    repo.refresh()
    os.unlink(tmp_path / e.path)
    repo.view.apply_paths([e.path])  # what the watcher does for the removal alone
    assert repo.get(e.id).path == f"sediment/{e.name}.md"
    assert [h.entry.id for h in repo.search("twin", record=False)] == [e.id]


def test_symlinked_layer_folder_is_not_followed(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    Repository(root).close()
    outside.mkdir()
    (outside / "sub").mkdir()
    (outside / "sub" / ".precious.md.0a1b2c3d.tmp").write_text("keep me")
    (outside / "x.md").write_text("---\nid: OUT\ncreated: '2026-01-01T00:00:00+00:00'\n---\nzanzibar\n")
    os.rmdir(root / "archive")
    os.symlink(outside, root / "archive")
    repo = Repository(root)
    assert (outside / "sub" / ".precious.md.0a1b2c3d.tmp").exists()
    assert repo.search("zanzibar", include_archive=True, record=False) == []
    assert "symlink" in {p.code for p in repo.check()}


def test_policy_listing_some_kinds_keeps_the_other_defaults(tmp_path):
    Repository(tmp_path).close()
    (tmp_path / "_system" / "policy.yaml").write_text("kinds:\n  rule: [1, 2, 3]\n  recipe: [5, 50, 500]\n")
    repo = Repository(tmp_path)
    kinds = repo.policy.kinds
    assert kinds["rule"] == (1, 2, 3) and kinds["recipe"] == (5, 50, 500)
    assert kinds["fact"] == (15, 365, 1095) and kinds["core"] is None


def test_snapshot_from_another_tokenizer_version_is_rebuilt(tmp_path, monkeypatch):
    repo = Repository(tmp_path)
    e = repo.add("granite boulder", title="rock")
    repo.close()
    snap = tmp_path / "_system" / "cache" / "index.bin"
    data = snap.read_bytes()
    monkeypatch.setattr(Tokenizer, "fingerprint", lambda self: "another-version")
    with pytest.raises(ValueError):
        I.Index.restore(data, "another-version")
    again = Repository(tmp_path)
    assert [h.entry.id for h in again.search("granite", record=False)] == [e.id]
    assert snap.read_bytes() != data  # rebuilt with the new fingerprint


def test_a_save_during_a_move_keeps_the_persons_edit(tmp_path, monkeypatch):
    from sediment import Conflict
    repo = Repository(tmp_path)
    e = repo.add("draft", title="edited meanwhile")
    real = moves.move_new

    def place_then_person_saves(tmp, target):  # the new copy in place, the source not yet gone
        real(tmp, target)
        (tmp_path / e.path).write_text((tmp_path / e.path).read_text() + "a person's new line\n")

    monkeypatch.setattr(moves, "move_new", place_then_person_saves)
    with pytest.raises(Conflict):
        repo.move(e.id, "sediment", reason="promoted")
    monkeypatch.setattr(moves, "move_new", real)
    assert "a person's new line" in (tmp_path / e.path).read_text()
    assert not (tmp_path / "sediment" / f"{e.name}.md").exists()
    assert [p for p in repo.check() if p.severity == "error"] == []


def test_move_never_replaces_a_file_that_appeared_at_the_target(tmp_path):
    from sediment import Conflict
    repo = Repository(tmp_path)
    e = repo.add("x", title="target taken")
    (tmp_path / "sediment").mkdir(exist_ok=True)
    squatter = tmp_path / "sediment" / f"{e.name}.md"
    squatter.write_text("a person's own file")
    with pytest.raises(Conflict):
        repo.move(e.id, "sediment")
    assert squatter.read_text() == "a person's own file"
    assert (tmp_path / e.path).exists()


def test_rate_limit_survives_a_damaged_line_and_its_log_stays_small(tmp_path):
    from sediment import PolicyError
    repo = Repository(tmp_path, policy={"destructive_per_hour": 2})
    log = tmp_path / "_system" / "usage" / "destructive.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("garbage\n" + "1.0\n" * 500)  # one damaged line, 500 stale ones
    notes = [repo.add(f"n{i}", title=f"n{i}") for i in range(3)]
    repo.purge(notes[0].id, confirm=True)
    assert len(log.read_text().split()) < 100  # stale lines dropped
    repo.purge(notes[1].id, confirm=True)
    with pytest.raises(PolicyError):  # the damaged line did not switch the limit off
        repo.purge(notes[2].id, confirm=True)


def test_consolidate_retried_after_a_crash_writes_nothing_twice(tmp_path, monkeypatch):
    repo = Repository(tmp_path)
    frags = [repo.add(f"deploy fragment {i}") for i in range(2)]
    real_move = moves.move
    calls = {"n": 0}

    def crash_after_first_move(*a, **k):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("simulated crash")
        return real_move(*a, **k)

    monkeypatch.setattr(moves, "move", crash_after_first_move)
    with pytest.raises(OSError):
        repo.consolidate([f.id for f in frags], "Deploys go out on Fridays.", kind="fact")
    monkeypatch.setattr(moves, "move", real_move)
    again = Repository(tmp_path)
    new = again.consolidate([f.id for f in frags], "Deploys go out on Fridays.", kind="fact")
    facts = again.list(kind="fact")
    assert [e.id for e in facts] == [new.id]  # one memory, not two
    assert all(again.get(f.id).layer == "archive" for f in frags)
    assert sorted(new.meta["supersedes"]) == sorted(f"[[{f.name}]]" for f in frags)


@pytest.mark.parametrize("value", ["12", "0.5", "true", "'[[base]]'", "{a: 1}", "[1, null, '[[base]]']"])
def test_a_persons_supersedes_property_of_any_shape_breaks_no_reading(tmp_path, value):
    """A person's note is not validated: ``supersedes`` and ``superseded_by``
    may be a number, a text, a map. Each reader takes the texts it holds
    (as ``tags`` are taken) and goes on."""
    with Repository(tmp_path) as repo:
        repo.add("the base crane note", title="base", kind="fact")
    (tmp_path / "Notes").mkdir()
    (tmp_path / "Notes" / "hand.md").write_text(
        f"---\ntitle: hand\nsupersedes: {value}\nsuperseded_by: {value}\n---\nthe crane by hand\n", encoding="utf-8")
    with Repository(tmp_path) as repo:
        repo.check()
        repo.patrol()
        repo.about("crane")
        repo.context("crane")
        repo.graph()
        hits = repo.search("crane", record=False, include_superseded=True)
        assert {h.entry.path for h in hits} >= {"Notes/hand.md"}
        for h in hits:
            h.to_dict()


def test_a_file_name_that_is_not_utf8_is_a_problem_not_a_crash(tmp_path):
    """A file named in another encoding (an archive unpacked from another
    system; Linux keeps the bytes as they are) is reported and left out: no
    id, link or snapshot can hold its name. The other notes open as ever."""
    with Repository(tmp_path) as repo:
        repo.add("the crane schedule", title="cranes", kind="fact")
    for folder in ("Notes", "shallow"):
        (tmp_path / folder).mkdir(exist_ok=True)
        try:
            with open(os.path.join(os.fsencode(tmp_path / folder), "\u8d77\u91cd\u673a".encode("gbk") + b".md"),
                      "wb") as fh:
                fh.write(b"crane notes in gbk\n")
        except OSError:
            pytest.skip("this file system refuses a name that is not UTF-8")
    for _ in range(2):  # (cold, then warm)
        with Repository(tmp_path) as repo:
            assert [h.entry.title for h in repo.search("crane", record=False)] == ["cranes"]
            problems = [p for p in repo.check() if p.code == "name"]
            assert sorted(p.path.split("/")[0] for p in problems) == ["Notes", "shallow"]
            assert all(os.path.exists(os.fsencode(tmp_path / p.path)) for p in problems)  # (the path the system gives)
            assert all("\\xc6\\xf0" in p.reason for p in problems)  # (its bytes, shown)
            repo.refresh()
