"""Optional git plumbing for ``sediment init --git``. git is not a dependency:
without it on PATH the command says so."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from .errors import StorageError


def git_init(root: Path) -> bool:
    """Make ``root`` a git repository (if it is not inside one) with a first commit
    of the notes and policy. The ``.gitignore`` the repository wrote keeps the
    lock, journal, caches and usage records out of it."""
    git = shutil.which("git")
    if git is None:
        raise StorageError("git is not installed; install it or run 'git init' yourself")
    inside = subprocess.run([git, "rev-parse", "--is-inside-work-tree"], cwd=root,
                            capture_output=True, text=True)
    if inside.returncode != 0:
        subprocess.run([git, "init", "-q"], cwd=root, check=True)
    subprocess.run([git, "add", "-A", "."], cwd=root, check=True)
    staged = subprocess.run([git, "diff", "--cached", "--quiet"], cwd=root)
    if staged.returncode != 0:
        subprocess.run([git, "-c", "user.name=sediment", "-c", "user.email=sediment@localhost",
                        "commit", "-q", "-m", "sediment: initial memory"], cwd=root, check=True)
    return True
