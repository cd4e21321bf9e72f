"""Kinds, layers and tags as a caller gives them (issue 26, items 6-9): what
is refused, what is kept, and the same in the library, the CLI and over MCP
(the SDK's own client, a real ``sediment serve`` process)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from sediment import InvalidInput, Repository

from _cli import cli

from _mcp import mcp_calls

DEFAULT_KINDS = ("core", "fact", "rule", "skill", "event", "daily-core", "daily", "mood", "inbox")


def notes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))}



@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    return Repository(tmp_path / "mem")


# --------------------------------------------------------------------------- 6. unknown kinds

def test_an_unknown_kind_is_refused_by_add_and_update_naming_the_kinds(repo):
    before = notes(repo.root)
    with pytest.raises(InvalidInput) as exc:
        repo.add("the cat is fed at seven", kind="fcat")
    assert "'fcat'" in str(exc.value) and all(k in str(exc.value) for k in DEFAULT_KINDS)
    assert notes(repo.root) == before  # nothing written
    e = repo.add("the cat is fed at seven", kind="fact")
    with pytest.raises(InvalidInput) as exc:
        repo.update(e.id, kind="fcat")
    assert "'fcat'" in str(exc.value) and "fact" in str(exc.value)
    # no kind at all is still a fragment for a person to classify, as before
    f = repo.add("something to sort out later")
    assert f.kind == "inbox" and f.meta["unclassified"] is True


def test_a_kind_the_policy_adds_is_accepted(tmp_path):
    repo = Repository(tmp_path / "mem", policy={"kinds": {"recipe": [30, 365, 1000]}})
    assert repo.add("rice: 1 cup to 1.5 cups of water", kind="recipe").kind == "recipe"


def test_the_cli_refuses_an_unknown_kind_naming_the_kinds(tmp_path, capsys):
    root = tmp_path / "mem"
    assert cli(capsys, "--root", root, "init")[0] == 0
    code, _, err = cli(capsys, "--root", root, "add", "the cat is fed at seven", "--kind", "fcat")
    assert code == 1 and err.startswith("error: invalid: ") and "kind 'fcat' is not one of core, fact" in err
    assert not list((root / "shallow").rglob("*.md"))
    code, out, _ = cli(capsys, "--root", root, "--json", "add", "the cat is fed at seven", "--kind", "fact")
    eid = json.loads(out)["id"]
    code, _, err = cli(capsys, "--root", root, "update", eid, "--kind", "fcat")
    assert code == 1 and "kind 'fcat' is not one of" in err


def test_mcp_refuses_an_unknown_kind_naming_the_kinds(tmp_path):
    root = tmp_path / "mem"
    e = Repository(root).add("the cat is fed at seven", kind="fact")
    (bad_add, text, data), (bad_update, text2, _) = mcp_calls(root, [
        ("remember", {"text": "the dog is fed at eight", "kind": "fcat"}),
        ("update", {"id": e.id, "expected": e.version, "kind": "fcat"})])
    assert bad_add and data["error"]["code"] == "invalid" and "core, fact, rule" in text
    assert bad_update and "kind 'fcat' is not one of" in text2
    assert [x.kind for x in Repository(root).list()] == ["fact"]


# --------------------------------------------------------------------------- 7. adopt's kind

def test_an_adopted_note_keeps_its_kind_or_becomes_a_fact_that_outlives_the_inbox(repo):
    (repo.root / "shallow" / "plain.md").write_text("The boiler is serviced every October.\n", encoding="utf-8")
    (repo.root / "shallow" / "ruled.md").write_text("---\nkind: rule\n---\nNever deploy on Fridays.\n",
                                                    encoding="utf-8")
    plain, ruled = repo.adopt("shallow/plain.md"), repo.adopt("shallow/ruled.md")
    assert (plain.kind, ruled.kind) == ("fact", "rule")
    assert "kind: fact" in (repo.root / plain.path).read_text(encoding="utf-8")  # in the file, for Obsidian
    # the inbox's clock archived a handed-over note 18 days later; a fact's does not
    later = plain.created + dt.timedelta(days=18)
    assert not [m for m in repo.metabolize(now=later).moves if m.target == "archive"]


def test_adopt_kind_sets_the_kind_of_a_note_that_declares_none(repo, capsys):
    (repo.root / "shallow" / "how.md").write_text("Bleed the radiators from the top floor down.\n",
                                                  encoding="utf-8")
    (repo.root / "shallow" / "ruled.md").write_text("---\nkind: rule\n---\nNever deploy on Fridays.\n",
                                                    encoding="utf-8")
    before = (repo.root / "shallow" / "ruled.md").read_bytes()
    with pytest.raises(InvalidInput):
        repo.adopt("shallow/how.md", kind="fcat")
    with pytest.raises(InvalidInput, match="declares kind: rule"):
        repo.adopt("shallow/ruled.md", kind="skill")  # the person's own kind is kept, never overwritten
    assert (repo.root / "shallow" / "ruled.md").read_bytes() == before
    # a path the CLI is given is relative to the current directory, as in every CLI
    code, out, err = cli(capsys, "--root", repo.root, "--json", "adopt", repo.root / "shallow" / "how.md",
                         "--kind", "skill")
    assert code == 0, err
    assert json.loads(out)["kind"] == "skill" and Repository(repo.root).get("how").kind == "skill"


# --------------------------------------------------------------------------- 8. add into archive/

def test_add_refuses_the_archive_layer_everywhere(repo, capsys):
    before = notes(repo.root)
    with pytest.raises(InvalidInput, match="shallow, sediment or bedrock"):
        repo.add("an old phone number", kind="fact", layer="archive")
    code, _, err = cli(capsys, "--root", repo.root, "add", "an old phone number", "--layer", "archive")
    assert code == 1 and "archive" in err
    assert notes(repo.root) == before and repo.check() == []
    e = repo.add("an old phone number", kind="fact", layer="bedrock")  # the other layers are fine
    assert e.layer == "bedrock" and e.status == "active"


# --------------------------------------------------------------------------- 9. changing tags

def test_update_replaces_tags_with_tags_and_changes_them_with_add_and_remove(repo):
    e = repo.add("the boiler is serviced in October", kind="fact", tags=["a", "b"])
    assert repo.update(e.id, add_tags=["c"]).meta["tags"] == ["a", "b", "c"]
    assert repo.update(e.id, remove_tags=["a"], add_tags=["d"]).meta["tags"] == ["b", "c", "d"]
    gone = repo.update(e.id, remove_tags=["zzz"])
    assert gone.meta["tags"] == ["b", "c", "d"] and any("no tag 'zzz'" in w for w in gone.warnings)
    assert repo.update(e.id, tags=["x"]).meta["tags"] == ["x"]
    with pytest.raises(InvalidInput, match="one or the other"):
        repo.update(e.id, tags=["y"], add_tags=["z"])
    assert "tags" not in repo.update(e.id, remove_tags=["x"]).meta
    assert [x.id for x in repo.list(tags="x")] == []


def test_the_cli_says_what_each_tag_option_does(repo, capsys):
    e = repo.add("the boiler is serviced in October", kind="fact", tags=["a", "b"])
    code, _, err = cli(capsys, "--root", repo.root, "update", e.id, "--tag", "c")
    assert code == 0, err
    assert repo.get(e.id).meta["tags"] == ["a", "b", "c"]  # --tag adds: it replaced them with [c]
    assert cli(capsys, "--root", repo.root, "update", e.id, "--add-tag", "d", "--remove-tag", "a")[0] == 0
    assert Repository(repo.root).get(e.id).meta["tags"] == ["b", "c", "d"]
    assert cli(capsys, "--root", repo.root, "update", e.id, "--tags", "x,y")[0] == 0
    assert Repository(repo.root).get(e.id).meta["tags"] == ["x", "y"]
    code, out, _ = cli(capsys, "--root", repo.root, "update", "--help")
    assert "replace the tags" in out and "add a tag, keeping the others" in out and "remove a tag" in out


def test_mcp_update_adds_and_removes_tags(tmp_path):
    root = tmp_path / "mem"
    e = Repository(root).add("the boiler is serviced in October", kind="fact", tags=["a", "b"])
    (err, text, data), = mcp_calls(root, [("update", {"id": e.id, "expected": e.version,
                                                      "add_tags": ["c"], "remove_tags": ["a"]})])
    assert not err, text
    assert Repository(root).get(e.id).meta["tags"] == ["b", "c"]
