"""``sediment init --git`` inside a repository that already exists.

A memory root may live inside a person's project repository. ``init --git``
then commits only the root's own files (a pathspec limited to the root; the
person's other staged changes stay staged and uncommitted), as the person's
own git identity; a sediment identity fills in only what git has none for.

git runs with a throw-away configuration (``GIT_CONFIG_GLOBAL`` in
``tmp_path``, no system file), never the user's own.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from sediment.cli.main import main as cli_main

GIT = shutil.which("git")
pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")

IDENTITY_ENV = ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
                "EMAIL", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")


def _config(tmp_path: Path, monkeypatch, identity: bool) -> None:
    cfg = tmp_path / "gitconfig"
    text = "[init]\n\tdefaultBranch = main\n[core]\n\tautocrlf = false\n"
    if identity:
        text += "[user]\n\tname = Pat Person\n\temail = pat@example.invalid\n"
    else:  # git must not guess one from the machine either
        text += "[user]\n\tuseConfigOnly = true\n"
    cfg.write_text(text)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in IDENTITY_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def person(tmp_path, monkeypatch):
    """git configured with the person's name and email."""
    _config(tmp_path, monkeypatch, identity=True)


@pytest.fixture
def nobody(tmp_path, monkeypatch):
    """git with no identity at all."""
    _config(tmp_path, monkeypatch, identity=False)


def git(cwd: Path, *args: str) -> str:
    proc = subprocess.run([GIT, *args], cwd=cwd, capture_output=True, text=True)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stdout}{proc.stderr}"
    return proc.stdout


def _project(tmp_path: Path, *, commit_first: bool) -> Path:
    """A person's project repository with work staged but not committed."""
    proj = tmp_path / "project"
    proj.mkdir()
    git(proj, "init", "-q")
    (proj / "README.txt").write_text("the project\n")
    if commit_first:
        git(proj, "add", "README.txt")
        git(proj, "-c", "user.name=Earlier", "-c", "user.email=earlier@example.invalid",
            "commit", "-q", "-m", "project start")
    (proj / "src.py").write_text("print('work in progress')\n")
    (proj / "README.txt").write_text("the project, edited\n")
    git(proj, "add", "src.py", "README.txt")
    return proj


def _staged(proj: Path) -> set[str]:
    return set(git(proj, "diff", "--cached", "--name-only").splitlines())


@pytest.mark.parametrize("commit_first", [True, False], ids=["with-history", "unborn-branch"])
def test_init_inside_a_repository_commits_only_the_root(tmp_path, person, commit_first):
    proj = _project(tmp_path, commit_first=commit_first)
    before = _staged(proj)
    assert before == {"src.py", "README.txt"}
    root = proj / "notes" / "memory"
    assert cli_main(["--root", str(root), "init", "--git"]) == 0

    assert not (root / ".git").exists(), "the root is inside a repository: no nested one"
    committed = set(git(proj, "show", "--name-only", "--format=", "HEAD").splitlines())
    assert committed, "the root's files were committed"
    assert all(p.startswith("notes/memory/") for p in committed), committed
    assert "notes/memory/_system/policy.yaml" in committed
    assert _staged(proj) == before, "the person's staged work stays staged, uncommitted"
    assert git(proj, "show", "-s", "--format=%s", "HEAD").strip() == "sediment: initial memory"


def test_init_commits_as_the_person(tmp_path, person):
    proj = _project(tmp_path, commit_first=True)
    root = proj / "memory"
    assert cli_main(["--root", str(root), "init", "--git"]) == 0
    who = git(proj, "show", "-s", "--format=%an <%ae>|%cn <%ce>", "HEAD").strip()
    assert who == "Pat Person <pat@example.invalid>|Pat Person <pat@example.invalid>"


def test_init_new_repository_as_the_person(tmp_path, person):
    root = tmp_path / "mem"
    assert cli_main(["--root", str(root), "init", "--git"]) == 0
    assert (root / ".git").is_dir()
    assert git(root, "show", "-s", "--format=%an <%ae>", "HEAD").strip() == \
        "Pat Person <pat@example.invalid>"


def test_init_falls_back_to_a_sediment_identity_only_when_git_has_none(tmp_path, nobody):
    root = tmp_path / "mem"
    assert cli_main(["--root", str(root), "init", "--git"]) == 0
    assert git(root, "show", "-s", "--format=%an <%ae>", "HEAD").strip() == "sediment <sediment@localhost>"
    # only for that one command: no identity was written to any git configuration
    # (the root's own repository gets the notes' merge driver, nothing else of sediment's)
    local = (root / ".git" / "config").read_text()
    assert "[user]" not in local and "sediment@localhost" not in local
    assert "sediment" not in (tmp_path / "gitconfig").read_text()


def test_init_fills_in_only_the_missing_half_of_an_identity(tmp_path, nobody, monkeypatch):
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Env Author")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Env Committer")
    root = tmp_path / "mem"
    assert cli_main(["--root", str(root), "init", "--git"]) == 0
    who = git(root, "show", "-s", "--format=%an <%ae>|%cn <%ce>", "HEAD").strip()
    assert who == "Env Author <sediment@localhost>|Env Committer <sediment@localhost>"


def test_init_leaves_a_persons_other_files_in_the_root_alone(tmp_path, person):
    """Files in the root that are not sediment's (a person's own notes, an
    Obsidian folder) are neither staged nor committed by init."""
    root = tmp_path / "mem"
    root.mkdir()
    (root / "my own note.md").write_text("mine\n")
    (root / ".obsidian").mkdir()
    (root / ".obsidian" / "app.json").write_text("{}\n")
    assert cli_main(["--root", str(root), "init", "--git"]) == 0
    tracked = set(git(root, "ls-files").splitlines())
    # the root is the person's vault: what git leaves out of _system/ is said in _system/
    assert "_system/.gitignore" in tracked and "_system/policy.yaml" in tracked
    assert ".gitignore" not in tracked and not (root / ".gitignore").exists()
    assert "my own note.md" not in tracked and ".obsidian/app.json" not in tracked
    assert git(root, "diff", "--cached", "--name-only") == ""
    assert cli_main(["--root", str(root), "search", "mine"]) == 0  # the lock, journal, caches: ignored
    assert git(root, "status", "--porcelain", "--", "_system", "shallow") == ""


def test_git_failure_is_a_clean_error(tmp_path, person, capsys):
    """A root the enclosing repository ignores: git refuses to add it; the
    CLI says so (exit 1, git's reason), no traceback."""
    proj = tmp_path / "project"
    proj.mkdir()
    git(proj, "init", "-q")
    (proj / ".gitignore").write_text("memory/\n")
    code = cli_main(["--root", str(proj / "memory"), "init", "--git"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.startswith("error: storage: ") and "ignored" in err, err
