"""Several machines, at the edges: a clone on another branch than the remote's
default, a note left to a person, a person's own ``.gitattributes``, a layer
folder git removed. Real git, bare remotes in a temp folder, the ``sediment``
command as a subprocess where the exit code or the words are the point.
(Locks a killed sync left: ``test_sync_locks.py``.)"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sediment.cli.main import main as cli_main
from sediment.integrations.anthropic import MemoryTool

from _machines import GIT, apply_env, git, git_env, network, notes, open_root

pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.timezone.utc)


def sediment(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """The command line, as a person or a cron job runs it."""
    return subprocess.run([sys.executable, "-m", "sediment", "--root", str(root), *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})})


def synced(root: Path, code: int = 0) -> subprocess.CompletedProcess:
    proc = sediment(root, "sync")
    assert proc.returncode == code, f"sync of {root.name}: exit {proc.returncode}\n{proc.stdout}{proc.stderr}"
    assert "Traceback" not in proc.stderr and "b'" not in proc.stderr
    return proc


def ids(root: Path) -> set[str]:
    with open_root(root) as repo:
        return {e.id for e in repo}


# a person whose git makes `master` (their init.defaultBranch; older git without one did too)
ON_MASTER = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "init.defaultBranch", "GIT_CONFIG_VALUE_0": "master"}


# --------------------------------------------------------------------------- 10: branches


def test_a_clone_on_master_and_a_remote_on_main_converge(tmp_path, monkeypatch):
    """The remote's HEAD is main; `init --git` made master (the person's git
    says so); `sediment clone` on the other machine: both see each other's notes."""
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    a, b = tmp_path / "a", tmp_path / "b"
    assert sediment(a, "init", "--git", env=ON_MASTER).returncode == 0
    assert git(a, "symbolic-ref", "--short", "HEAD").stdout.strip() == "master"
    git(a, "remote", "add", "origin", str(remote))
    synced(a)
    assert sediment(b, "clone", str(remote)).returncode == 0
    # the remote's HEAD names a branch nobody pushed: the clone is on the one that holds the memory
    assert git(b, "rev-parse", "HEAD").stdout == git(a, "rev-parse", "HEAD").stdout
    with open_root(a) as repo:
        x = repo.add("the vpn endpoint is vpn-2", kind="fact", now=T0)
    with open_root(b) as repo:
        y = repo.add("the wiki lives at docs.example", kind="fact", now=T0)
    for root in (a, b, a):
        synced(root)
    assert {x.id, y.id} <= ids(a) == ids(b)
    assert notes(a) == notes(b)
    assert git(a, "rev-parse", "HEAD").stdout == git(b, "rev-parse", "HEAD").stdout


def test_two_clones_already_on_two_branches_are_brought_together_on_the_remotes_default(tmp_path, monkeypatch):
    """What earlier syncs left: A pushed master, B pushed main (the remote's
    HEAD); each synced "up to date" forever. The next syncs follow main."""
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    a, b = tmp_path / "a", tmp_path / "b"
    for root, branch, text in ((a, "master", "the printer is on floor 2"), (b, "main", "lunch is at noon")):
        assert sediment(root, "init", "--git").returncode == 0
        git(root, "branch", "-m", branch)
        git(root, "remote", "add", "origin", str(remote))
        with open_root(root) as repo:
            repo.add(text, kind="fact", now=T0)
        git(root, "add", "-A")
        git(root, "commit", "-qm", "notes")
        git(root, "push", "-q", "-u", "origin", branch)
    before = ids(a) | ids(b)
    said = synced(a).stdout
    assert "main" in said and "master" in said, said  # it says which branch it follows now
    synced(b)
    synced(a)
    assert ids(a) == ids(b) == before
    assert notes(a) == notes(b)
    assert git(a, "symbolic-ref", "--short", "HEAD").stdout.strip() == "main"
    assert git(a, "rev-parse", "--abbrev-ref", "@{u}").stdout.strip() == "origin/main"
    assert git(remote, "rev-parse", "main").stdout == git(a, "rev-parse", "HEAD").stdout


def test_a_remote_whose_head_names_none_of_its_branches_is_refused_with_the_reason(tmp_path, monkeypatch):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    a = tmp_path / "a"
    assert sediment(a, "init", "--git").returncode == 0
    git(a, "remote", "add", "origin", str(remote))
    git(a, "push", "-q", "origin", "main:one", "main:two")
    refs = git(remote, "show-ref").stdout
    with open_root(a) as repo:
        repo.add("a note that must not go to a guessed branch", kind="fact", now=T0)
    proc = sediment(a, "sync")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "one" in proc.stderr and "two" in proc.stderr and "default branch" in proc.stderr, proc.stderr
    assert git(remote, "show-ref").stdout == refs, "nothing was pushed"


def test_init_git_names_its_branch_main_unless_the_person_chose_a_name(tmp_path, monkeypatch):
    cfg = tmp_path / "plain-gitconfig"
    cfg.write_text("[core]\n\tautocrlf = false\n")  # no init.defaultBranch: git itself would say master
    apply_env({**git_env(tmp_path), "GIT_CONFIG_GLOBAL": str(cfg)}, monkeypatch.setenv)
    assert sediment(tmp_path / "a", "init", "--git").returncode == 0
    assert git(tmp_path / "a", "symbolic-ref", "--short", "HEAD").stdout.strip() == "main"
    chosen = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "init.defaultBranch", "GIT_CONFIG_VALUE_0": "trunk"}
    assert sediment(tmp_path / "b", "init", "--git", env=chosen).returncode == 0
    assert git(tmp_path / "b", "symbolic-ref", "--short", "HEAD").stdout.strip() == "trunk"


# --------------------------------------------------------------------------- 11: git's words and paths as text
# (the locks a killed sync left: test_sync_locks.py)


def test_a_file_a_person_named_in_another_encoding_syncs_to_the_other_machine(tmp_path, monkeypatch):
    """git lists the path as the bytes it is; the machine that pulls it
    neither fails on them nor stops telling its other processes what changed."""
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    a, b = network(tmp_path, 2)
    for root in (a, b):
        synced(root)
    name = b"caf\xe9.md"  # Latin-1, as an older editor saves it
    with open(os.path.join(os.fsencode(a / "shallow"), name), "wb") as fh:
        fh.write(b"# the cafe\nopens at 8\n")
    synced(a)
    said = synced(b).stdout
    assert "1 note(s) changed here" in said, said
    assert os.path.exists(os.path.join(os.fsencode(b / "shallow"), name))
    with open_root(b) as repo:  # (no frontmatter, outside a vault: a check() problem, as any such note)
        assert [p.path for p in repo.check()] == [os.fsdecode(b"shallow/" + name)]
    synced(b)
    synced(a)


# --------------------------------------------------------------------------- 12: a note left to a person


def test_a_note_left_to_a_person_is_reported_by_every_sync_on_every_machine(tmp_path, monkeypatch):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    a, b = network(tmp_path, 2)
    with open_root(a) as repo:
        x = repo.add("the printer is on floor 2", kind="fact", now=T0)
    synced(a)
    synced(b)
    with open_root(a) as repo:
        repo.update(x.id, text="the printer is on floor 3")
    with open_root(b) as repo:
        repo.update(x.id, text="the printer is on floor 4")
    synced(a)
    assert x.path in synced(b, 3).stdout
    said = synced(a, 3).stdout  # pulls the note with the markers in it: it says so too
    assert x.path in said and "person" in said, said
    assert x.path in synced(b, 3).stdout, "still awaiting: every sync says so"
    for root in (a, b):
        with open_root(root) as repo:
            assert [p.path for p in repo.check()] == [x.path]
            assert repo.search("printer floor") == []  # two candidate texts: which is the memory is a person's call
    # the person resolves it on A; both machines are quiet again
    path = a / x.path
    text = path.read_text()
    head, rest = text.split("<<<<<<<", 1)
    path.write_text(head + "the printer is on floor 4\n" + rest.split(">>>>>>>", 1)[1].split("\n", 1)[1])
    assert "CONFLICT" not in synced(a).stdout
    synced(b)
    with open_root(b) as repo:
        assert repo.check() == [] and repo.get(x.id).text.strip() == "the printer is on floor 4"


# --------------------------------------------------------------------------- 13: a person's .gitattributes


PERSONS_ATTRIBUTES = b"# my vault\n*.pdf binary\n*.md text eol=lf\n"


def test_a_persons_gitattributes_is_never_changed_and_every_clone_gets_the_driver(tmp_path, monkeypatch):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    vault = tmp_path / "vault"  # a person's vault, versioned by the person
    (vault / "Recipes").mkdir(parents=True)
    (vault / "Recipes" / "bread.md").write_text("# bread\nflour, water, salt\n")
    (vault / ".gitattributes").write_bytes(PERSONS_ATTRIBUTES)
    git(vault, "init", "-q")
    git(vault, "add", "-A")
    git(vault, "commit", "-qm", "my vault")
    git(vault, "remote", "add", "origin", str(remote))
    assert sediment(vault, "init").returncode == 0
    with open_root(vault) as repo:
        x = repo.add("the oven runs hot", kind="fact", tags=["kitchen"], now=T0)
    synced(vault)
    assert (vault / ".gitattributes").read_bytes() == PERSONS_ATTRIBUTES
    assert git(vault, "status", "--porcelain").stdout == ""
    assert git(remote, "show", "main:.gitattributes").stdout.encode() == PERSONS_ATTRIBUTES

    def driver_of(root: Path) -> str:
        return git(root, "check-attr", "merge", "--", x.path).stdout.strip().rsplit(" ", 1)[-1]

    assert driver_of(vault) == "sediment"
    cloned = tmp_path / "cloned"
    assert sediment(cloned, "clone", str(remote)).returncode == 0
    plain = tmp_path / "plain"
    git(tmp_path, "clone", "-q", str(remote), str(plain))
    synced(plain)  # the first sync of a plain clone registers the driver
    for root in (cloned, plain):
        assert driver_of(root) == "sediment"
        assert (root / ".gitattributes").read_bytes() == PERSONS_ATTRIBUTES
        assert git(root, "status", "--porcelain").stdout == ""
    # the driver is what a plain `git pull` uses: two tag edits merge without a person
    with open_root(vault) as repo:
        repo.update(x.id, tags=["kitchen", "oven"])
    synced(vault)
    with open_root(cloned) as repo:
        repo.update(x.id, tags=["kitchen", "baking"])
    git(cloned, "commit", "-qam", "by hand")
    git(cloned, "pull", "-q", "--no-rebase", "--no-edit")
    with open_root(cloned) as repo:
        assert set(repo.get(x.id).tags) == {"kitchen", "oven", "baking"} and repo.check() == []


# --------------------------------------------------------------------------- 14: a layer folder git removed


def test_a_layer_folder_a_merge_emptied_comes_back_quietly(tmp_path, monkeypatch):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    a, b, c = network(tmp_path, 3)
    with open_root(a) as repo:
        x = repo.add("the deploy key rotates monthly", kind="rule", now=T0)
        repo.move(x.id, "bedrock")
    synced(a)
    synced(b)
    git(c, "pull", "-q")
    with open_root(a) as repo:  # the only note of bedrock/ leaves it
        repo.move(x.id, "sediment")
    synced(a)
    with open_root(b) as repo:  # a long-lived process (an agent's), open while its sync pulls that
        tool = MemoryTool(repo)
        assert "/memories/bedrock/" in tool({"command": "view", "path": "/memories"})
        r = repo.sync()
        assert r.changed
        assert (b / "bedrock").is_dir(), "the layout is whole after the sync"
        # the memory tool lists what the model can open: the moved note, where it went
        # (an empty layer folder holds nothing to open, so it is not listed)
        listing = tool({"command": "view", "path": "/memories"})
        assert "/memories/sediment/" in listing and "/memories/bedrock/" not in listing
        assert [h.entry.id for h in repo.search("deploy key rotates")] == [x.id]
    git(c, "pull", "-q")  # a plain git pull removes the folder as well
    assert not (c / "bedrock").exists()
    for args in (("search", "deploy key"), ("check",), ("metabolize", "--apply"),
                 ("add", "--layer", "bedrock", "--kind", "rule", "never force-push main")):
        proc = sediment(c, *args)
        assert proc.returncode == 0 and proc.stderr == "", (args, proc.stdout, proc.stderr)
        assert (c / "bedrock").is_dir(), args
    with open_root(c) as repo:
        assert [e.layer for e in repo.list() if "force-push" in e.text] == ["bedrock"]
        assert repo.check() == []
    assert cli_main(["--root", str(c), "sync"]) == 0
