"""What the interfaces (the MCP server, the memory tool) needed from the front
door, as verbs of their own: ``recalled``, ``locate``, ``markdown``,
``report`` and ``edit``; their commands; and that the interfaces call the
verbs only, never the parts below them."""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

import sediment
from sediment import Conflict, InvalidInput, NotFound, Repository
from sediment.cli.main import main

PKG = Path(sediment.__file__).parent


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "root") as r:
        yield r


# --------------------------------------------------------------------------- recalled

def test_recalled_counts_each_memory_once_a_day_and_skips_what_is_not_there(repo):
    a = repo.add("Deploys go through ArgoCD.", kind="fact")
    b = repo.add("The office is on floor 3.", kind="fact")
    repo.recalled([a.id, a.id, b.name, "no-such-memory"])
    repo.recalled([a.id])  # the same day again
    usage = repo.usage.load()
    assert (usage[a.id].recalls, usage[b.id].recalls) == (1, 1)
    assert "no-such-memory" not in usage
    with pytest.raises(InvalidInput):
        repo.recalled(a.id)  # one string is not a list of ids


# --------------------------------------------------------------------------- locate

def test_locate_finds_a_note_where_it_is_where_it_went_and_where_it_was_created(repo):
    e = repo.add("Use PKCE on mobile.", title="pkce", kind="rule", memory_path="/memories/auth.md")
    assert repo.locate(e.path).id == e.id
    moved = repo.move(e.id, "sediment", room="auth")
    assert repo.locate(e.path).path == moved.path  # the old path: by its file name
    assert repo.locate("shallow/auth.md", memory_path="/memories/auth.md").id == e.id
    with pytest.raises(NotFound):
        repo.locate("shallow/auth.md")  # the created path is asked for only with memory_path
    # the path created again after the first note was archived: the current one
    repo.archive(e.id, reason="deleted with the memory tool")
    again = repo.add("Use PKCE everywhere.", title="pkce", kind="rule", memory_path="/memories/auth.md")
    assert repo.locate("shallow/auth.md", memory_path="/memories/auth.md").id == again.id


# --------------------------------------------------------------------------- markdown

def test_markdown_is_the_file_as_a_person_left_it(repo):
    e = repo.add("likes green tea", title="tea")
    path = repo.root / e.path
    text = path.read_text(encoding="utf-8").replace("---\n", "---\n# a person's comment\n", 1)
    path.write_text(text, encoding="utf-8")
    repo.refresh()
    assert repo.markdown(e.id) == text
    assert repo.markdown(e.name) == text
    with pytest.raises(NotFound):
        repo.markdown("no-such-memory")


# --------------------------------------------------------------------------- report

def test_report_reads_the_latest_patrol_report_and_the_map_and_writes_nothing(repo):
    assert repo.report() is None and repo.report("map") is None
    repo.add("likes green tea")
    r = repo.patrol(now="2027-01-01T09:00:00+00:00")
    assert repo.report("patrol") == (repo.root / r.path).read_text(encoding="utf-8")
    m = repo.map()
    assert repo.report("map") == (repo.root / m.path).read_text(encoding="utf-8")
    before = sorted(p.relative_to(repo.root) for p in repo.root.rglob("*"))
    repo.report("patrol"), repo.report("map")
    assert sorted(p.relative_to(repo.root) for p in repo.root.rglob("*")) == before
    with pytest.raises(InvalidInput):
        repo.report("journal")


def test_report_does_not_follow_a_symlinked_patrol_folder(repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "2027-01-01.md").write_text("a secret outside the root\n", encoding="utf-8")
    folder = repo.root / "_system" / "patrol"
    if folder.exists():
        folder.rmdir()
    os.symlink(outside, folder)
    assert repo.report("patrol") is None


# --------------------------------------------------------------------------- edit

def test_edit_changes_the_body_the_file_holds_now(repo):
    e = repo.add("Deploys go through ArgoCD.\nNever by hand.\n", kind="fact")
    path = repo.root / e.path
    # a person's save the library has not seen (no watcher): the edit starts from it
    path.write_text(path.read_text(encoding="utf-8").replace("Never by hand.", "Never on Fridays."),
                    encoding="utf-8")
    fresh = repo.edit(e.id, lambda body: body.replace("ArgoCD", "Flux"))
    assert fresh.body == "Deploys go through Flux.\nNever on Fridays.\n"
    assert repo.get(e.id).body == fresh.body and fresh.meta["kind"] == "fact"
    assert [h.entry.id for h in repo.search("flux", record=False)] == [e.id]


def test_edit_refuses_a_stale_version_a_body_that_would_not_read_back_and_a_failed_change(repo):
    e = repo.add("ship on Friday\n", kind="fact")
    repo.update(e.id, text="ship on Monday\n")
    before = (repo.root / e.path).read_bytes()
    with pytest.raises(Conflict) as stale:
        repo.edit(e.id, lambda body: body.upper(), expected=e.version)
    assert stale.value.details["what"] == "expected"
    with pytest.raises(InvalidInput, match="would not read back"):
        repo.edit(e.id, lambda body: body + "a\r\nb")
    with pytest.raises(InvalidInput, match="nothing to change"):
        repo.edit(e.id, _refuse)
    assert (repo.root / e.path).read_bytes() == before


def _refuse(body: str) -> str:
    raise InvalidInput("nothing to change")


# --------------------------------------------------------------------------- the commands

def _cli(capsys, *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main([str(a) for a in args])
    return code, capsys.readouterr().out


def test_the_commands_of_the_new_verbs(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("SEDIMENT_ROOT", raising=False)
    root = tmp_path / "mem"
    assert _cli(capsys, "--root", root, "init")[0] == 0
    with Repository(root) as r:
        e = r.add("Deploys go through ArgoCD.", kind="fact", title="deploy")
    code, out = _cli(capsys, "--root", root, "markdown", e.id)
    assert code == 0 and out == (root / e.path).read_text(encoding="utf-8")
    code, out = _cli(capsys, "--root", root, "--json", "locate", root / e.path)  # (a path: from here)
    assert code == 0 and json.loads(out)["id"] == e.id
    code, out = _cli(capsys, "--root", root, "recalled", e.id)
    assert code == 0 and out == f"recalled: {e.id}\n"
    with Repository(root) as r:
        assert r.usage.load()[e.id].recalls == 1
    assert _cli(capsys, "--root", root, "report") == (0, "(no patrol yet)\n")
    _cli(capsys, "--root", root, "patrol", "--now", "2027-01-01T09:00:00+00:00")
    code, out = _cli(capsys, "--root", root, "--json", "report", "patrol")
    assert code == 0 and json.loads(out)["text"].startswith("# Patrol 2027-01-01")


# --------------------------------------------------------------------------- only verbs

PARTS = {"store", "view", "usage", "semantic"}  # the Repository's parts, below its verbs


def _reaches(path: Path) -> list[str]:
    """``repo.store``, ``self.repo.view`` …: a part of a repository reached past its verbs."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in PARTS:
            owner = node.value
            if (isinstance(owner, ast.Name) and owner.id == "repo") or (
                    isinstance(owner, ast.Attribute) and owner.attr in ("repo", "opening")):
                out.append(f"{path.relative_to(PKG)}:{node.lineno}: .{node.attr}")
    return out


def test_the_mcp_server_and_the_memory_tool_call_the_verbs_only():
    files = [*(PKG / "mcp").glob("*.py"), *(PKG / "integrations").glob("*.py"), *(PKG / "web").glob("*.py")]
    assert [r for f in sorted(files) for r in _reaches(f)] == []
    below = {"store.store", "store.moves", "verbs.reads", "verbs.writes", "verbs.health", "disk.usage"}
    for f in files:  # nor the store, the view or the verbs' modules (the root's layout, store.system, is fine)
        imported = {(n.module or "").lstrip(".") for n in ast.walk(ast.parse(f.read_text(encoding="utf-8")))
                    if isinstance(n, ast.ImportFrom)}
        assert not {m for m in imported if m in below or m.startswith("view")}, f
