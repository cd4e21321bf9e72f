"""A team's shared root in git beside each agent's own, through ``sediment sync``
and the command line's ``--shared``: real git, real clones, the CLI in process.

Two agents, each with a private root (its own remote) and a clone of the
team's root. Each contributes to the team by opening its clone as its own
root; each reads both through ``--shared``; ``sync --shared`` syncs each root
as its own repository. At the end the team's clones are identical, and each
private root holds its own agent's notes only, untouched by the other.
"""

from __future__ import annotations

import json

import pytest

from _cli import cli
from _machines import GIT, apply_env, git, git_env, network, notes

pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")


@pytest.fixture
def agents(tmp_path, monkeypatch):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    monkeypatch.delenv("SEDIMENT_SHARED", raising=False)
    out = {}
    for name in ("team", "a", "b"):
        (tmp_path / name).mkdir()
    team_a, team_b = network(tmp_path / "team", 2)
    [mine_a] = network(tmp_path / "a", 1)
    [mine_b] = network(tmp_path / "b", 1)
    out["a"] = (mine_a, team_a)
    out["b"] = (mine_b, team_b)
    return out


def _json(capsys, *args):
    code, out, err = cli(capsys, "--json", *args)
    assert code == 0, err
    return json.loads(out)


def _head(root):
    return git(root, "rev-parse", "HEAD").stdout.strip()


def _tree(root):
    """Every file of a root but .git/, by path, with its bytes."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".git" not in p.relative_to(root).parts}


def test_two_agents_with_private_roots_and_one_shared_root_through_sync(agents, capsys):
    (mine_a, team_a), (mine_b, team_b) = agents["a"], agents["b"]
    team_note = {}
    for who, (mine, team) in agents.items():
        # to the team: the team's root opened as this agent's own
        team_note[who] = _json(capsys, "--root", team, "add", f"Team rule from {who}: deploys need two reviews "
                                                               f"({who}-review-policy).", "--kind", "rule")["id"]
        # to itself: its private root, with the team's read through it; the write goes to the private root
        _json(capsys, "--root", mine, "--shared", f"team={team}", "add",
              f"Private note of {who}: my deploy checklist ({who}-private-checklist).", "--kind", "fact")

    def sync(mine, team):
        assert cli(capsys, "--root", mine, "--shared", f"team={team}", "sync")[0] == 0

    sync(mine_a, team_a)
    sync(mine_b, team_b)  # b pulls a's team note
    sync(mine_a, team_a)  # a pulls b's
    # each agent's syncs leave the other's private root as it was, byte for byte
    before = _tree(mine_a)
    sync(mine_b, team_b)
    assert _tree(mine_a) == before
    before = _tree(mine_b)
    sync(mine_a, team_a)
    assert _tree(mine_b) == before

    # the team's root: the same on both agents, every note of the team, clean
    assert notes(team_a) == notes(team_b)
    assert _head(team_a) == _head(team_b)
    assert git(team_a, "status", "--porcelain").stdout == git(team_b, "status", "--porcelain").stdout == ""
    team_text = b"".join(notes(team_a).values())
    assert b"a-review-policy" in team_text and b"b-review-policy" in team_text
    assert b"private-checklist" not in team_text
    # each private root: its own agent's notes only, and b's syncs left a's alone
    for who, other in (("a", "b"), ("b", "a")):
        text = b"".join(notes(agents[who][0]).values())
        assert f"{who}-private-checklist".encode() in text
        assert f"{other}-private-checklist".encode() not in text and b"review-policy" not in text

    # b reads a's team rule through its own root, named by the team's label, and reads it by label:id
    hits = _json(capsys, "--root", mine_b, "--shared", f"team={team_b}", "search", "review policy deploys")
    found = {(h.get("root"), h["id"]) for h in hits}
    assert ("team", team_note["a"]) in found and ("team", team_note["b"]) in found
    got = _json(capsys, "--root", mine_b, "--shared", f"team={team_b}", "get", f"team:{team_note['a']}")
    assert "a-review-policy" in got["body"]
    code, out, _ = cli(capsys, "--root", mine_b, "--shared", f"team={team_b}", "search", "private checklist")
    assert code == 0 and "b-private-checklist" in out and "a-private-checklist" not in out


def test_the_command_line_names_a_shared_roots_hits_and_refuses_a_folder_that_is_no_root(tmp_path, capsys,
                                                                                      monkeypatch):
    monkeypatch.delenv("SEDIMENT_SHARED", raising=False)
    mine, team = tmp_path / "mine", tmp_path / "team"
    for root in (mine, team):
        assert cli(capsys, "--root", root, "init")[0] == 0
    added = _json(capsys, "--root", team, "add", "The staging cluster is called kestrel.", "--kind", "fact")
    code, out, _ = cli(capsys, "--root", mine, "search", "kestrel", "--shared", team)  # after the command too
    assert code == 0 and f"team:{added['path']}" in out
    assert _json(capsys, "--root", mine, "--shared", team, "get", f"team:{added['path']}")["id"] == added["id"]
    monkeypatch.setenv("SEDIMENT_SHARED", str(team))  # or from the environment
    assert _json(capsys, "--root", mine, "search", "kestrel")[0]["root"] == "team"
    code, _, err = cli(capsys, "--root", mine, "--shared", tmp_path / "nowhere", "search", "kestrel")
    assert code == 1 and "not a memory root" in err
    assert not (tmp_path / "nowhere").exists()
