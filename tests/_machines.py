"""Machines sharing one memory through a bare git remote, for the sync tests
and the sync benchmark: real git, real clones, in a folder of the caller's.

git runs with a throw-away configuration (``GIT_CONFIG_GLOBAL`` in that
folder, no system file, identity from the environment), never the user's own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from sediment import Repository
from sediment.cli.main import main as cli_main

GIT = shutil.which("git")


def git_env(folder: Path) -> dict[str, str]:
    """The environment variables of a private git configuration."""
    cfg = folder / "gitconfig"
    cfg.write_text("[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
                   "[core]\n\tautocrlf = false\n")
    env = {"GIT_CONFIG_GLOBAL": str(cfg), "GIT_CONFIG_NOSYSTEM": "1"}
    for who in ("AUTHOR", "COMMITTER"):
        env[f"GIT_{who}_NAME"] = "Sediment Test"
        env[f"GIT_{who}_EMAIL"] = "test@sediment.invalid"
    return env


def apply_env(env: dict[str, str], setenv=None) -> None:
    for k, v in env.items():
        (setenv or os.environ.__setitem__)(k, v)
    for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        os.environ.pop(k, None)


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    assert GIT is not None
    proc = subprocess.run([GIT, *args], cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc


def network(folder: Path, n: int) -> list[Path]:
    """A bare remote and ``n`` memory roots that share it: the first made with
    ``init --git`` and synced, the others with ``sediment clone``."""
    remote = folder / "remote.git"
    git(folder, "init", "-q", "--bare", str(remote))
    first = folder / "m0"
    assert cli_main(["--root", str(first), "init", "--git"]) == 0
    git(first, "remote", "add", "origin", str(remote))
    assert cli_main(["--root", str(first), "sync"]) == 0
    roots = [first]
    for i in range(1, n):
        root = folder / f"m{i}"
        assert cli_main(["--root", str(root), "clone", str(remote)]) == 0
        roots.append(root)
    return roots


def open_root(root: Path) -> Repository:
    return Repository(root, policy={"confirm_destructive": False, "destructive_per_hour": 10_000})


def notes(root: Path) -> dict[str, bytes]:
    """Every note file in the layer folders, by path."""
    from sediment.model.names import LAYERS
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for layer in LAYERS if (root / layer).is_dir() for p in sorted((root / layer).rglob("*.md"))}
