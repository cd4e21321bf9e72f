"""Optional git plumbing for ``sediment init --git``. git is not a dependency:
without it on PATH the command says so."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .entry import LAYERS
from .errors import StorageError

# What init commits: the files sediment itself keeps in a root. Anything else
# in the folder (a person's own notes, .obsidian/) is the person's to add.
OWN = (".gitignore", "_system", *LAYERS)
FALLBACK = {"user.name": "sediment", "user.email": "sediment@localhost"}
# environment variables that give git each half of an identity (they beat config)
_ENV = {"user.name": (("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"),),
        "user.email": (("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"), ("EMAIL",))}


def _run(git: str, root: Path, *args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([git, *args], cwd=root, capture_output=True, text=True)
    if proc.returncode not in ok:
        why = " ".join(line for line in proc.stderr.splitlines() if not line.startswith("hint:"))
        raise StorageError(f"git {args[0]} failed: {why.strip() or f'exit {proc.returncode}'}",
                           path=str(root))
    return proc


def identity_options(git: str, root: Path) -> list[str]:
    """``-c`` options for the halves of a commit identity git has none for: the
    person's configured name and email (config or environment) are used as they
    are; only a missing one is filled in with sediment's."""
    out: list[str] = []
    for key, default in FALLBACK.items():
        configured = _run(git, root, "config", "--get", key, ok=(0, 1)).stdout.strip()
        from_env = any(all(os.environ.get(v) for v in group) for group in _ENV[key])
        if not configured and not from_env:
            out += ["-c", f"{key}={default}"]
    return out


def git_init(root: Path) -> bool:
    """Make ``root`` a git repository (if it is not inside one) with a commit of
    sediment's own files in it (``.gitignore``, ``_system/``, the layer folders;
    the ``.gitignore`` keeps the lock, journal, caches, usage and reports out).

    Inside an existing repository only those paths are staged and committed;
    whatever else the person has staged stays staged. The commit is the
    person's (their configured git identity); sediment's identity fills in only
    what git has none for, and only for this one command. Nothing new to commit
    (init run twice): no commit."""
    git = shutil.which("git")
    if git is None:
        raise StorageError("git is not installed; install it or run 'git init' yourself")
    inside = _run(git, root, "rev-parse", "--is-inside-work-tree", ok=(0, 128))
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        _run(git, root, "init", "-q")
    own = [p for p in OWN if (root / p).exists()]
    _run(git, root, "add", "-A", "--", *own)
    # `git commit -- <paths>` commits those paths only; a path git knows
    # nothing of (an empty layer folder) would make it fail, so name only the
    # ones with staged changes
    changed = [p for p in own if _run(git, root, "diff", "--cached", "--quiet", "--", p,
                                       ok=(0, 1)).returncode == 1]
    if changed:
        _run(git, root, *identity_options(git, root), "commit", "-q",
             "-m", "sediment: initial memory", "--", *changed)
    return True
