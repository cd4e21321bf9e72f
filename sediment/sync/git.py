"""Optional git plumbing for ``sediment init --git``, ``clone`` and ``sync``.
git is not a dependency: without it on PATH the command says so.

Settings are passed as ``git -c`` for sediment's own calls, and written into a
repository's config only where the root is that repository's top level (its
own repository, never a person's larger one, never the global config).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from ..errors import StorageError
from ..model.names import LAYERS

# What init commits: the files sediment itself keeps in a root. Anything else
# in the folder (a person's own notes, .obsidian/) is the person's to add.
OWN = (".gitignore", "_system", *LAYERS)
FALLBACK = {"user.name": "sediment", "user.email": "sediment@localhost"}
# environment variables that give git each half of an identity (they beat config)
_ENV = {"user.name": (("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"),),
        "user.email": (("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"), ("EMAIL",))}


DRIVER = "sediment"
# Notes in layer folders merge through sediment's driver; the per-machine
# usage summaries (one file per machine) merge as a union.
ATTRIBUTES = [f"{layer}/**/*.md merge={DRIVER}" for layer in LAYERS] + ["_system/shared/** merge=union"]


def driver_command() -> str:
    """The merge driver's command line, with this interpreter (git runs it through a shell)."""
    return f"{shlex.quote(sys.executable)} -m sediment merge-driver %O %A %B %P"


# What a merge of memories needs: no directory-rename guesses (the folder is
# the layer), renames found however many notes moved, and the notes' driver.
# ``sync`` itself lets git merge notes as text and settles the notes git
# leaves conflicted with the same rules in its own process (``syncmerge``): the
# result is the driver's, without a Python start for every note both sides changed.
def merge_options(*, driver: bool = False) -> list[str]:
    run = driver_command() if driver else "git merge-file --marker-size=%L %A %O %B"
    return ["-c", "merge.directoryRenames=false", "-c", "merge.renames=true", "-c", "diff.renames=true",
            "-c", "merge.renameLimit=1000000", "-c", "diff.renameLimit=1000000",
            "-c", f"merge.{DRIVER}.name=sediment notes (frontmatter by rule, body three-way)",
            "-c", f"merge.{DRIVER}.driver={run}"]


def git_exe() -> str:
    git = shutil.which("git")
    if git is None:
        raise StorageError("git is not installed; install it or run 'git init' yourself")
    return git


def toplevel(git: str, root: Path) -> Path | None:
    """The top level of the repository the root is in, or None."""
    proc = _run(git, root, "rev-parse", "--show-toplevel", ok=(0, 128))
    return Path(proc.stdout.strip()).resolve() if proc.returncode == 0 and proc.stdout.strip() else None


def append_missing(path: Path, lines: list[str], head: str = "") -> bool:
    """Add to a text file (``.gitignore``, ``info/attributes``) the ``lines`` it
    lacks, after what a person wrote there; ``head`` starts a file that did
    not exist. Whether anything was added."""
    try:
        have = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        have = ""
    present = set(have.splitlines())
    missing = [ln for ln in lines if ln not in present]
    if missing:
        start = head if not have else "" if have.endswith("\n") else "\n"
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(start + "\n".join(missing) + "\n")
    return bool(missing)


def install_driver(git: str, root: Path, top: Path | None | bool = False) -> list[str]:
    """Register the merge driver where it is missing, in the root's own
    repository only (the root is its top level): the attribute lines in the
    ``info/attributes`` of its git folder (this clone's, never versioned: a
    ``.gitattributes`` in the root is a person's, and never written) and the
    driver in its config. In a larger repository nothing is written (sync's
    own merges settle the notes by rule either way; a plain ``git pull``
    there merges them as text). Returns what was done; raises
    ``StorageError`` when the git folder cannot be written."""
    if top is False:
        top = toplevel(git, root)
    if not (isinstance(top, Path) and top == root.resolve()):
        return []
    done = []
    rel = _run(git, root, "rev-parse", "--git-path", "info/attributes").stdout.strip()
    attributes = root / rel
    try:
        attributes.parent.mkdir(parents=True, exist_ok=True)
        if append_missing(attributes, ATTRIBUTES,
                          "# sediment: how git merges memories (see README, Several machines)\n"):
            done.append(rel)
    except OSError as exc:
        raise StorageError(f"cannot write {rel}: {exc}", path=str(root)) from exc
    current = _run(git, root, "config", "--local", "--get", f"merge.{DRIVER}.driver", ok=(0, 1)).stdout.strip()
    if current != driver_command():
        _run(git, root, "config", "--local", f"merge.{DRIVER}.name", "sediment notes")
        _run(git, root, "config", "--local", f"merge.{DRIVER}.driver", driver_command())
        done.append(f"merge.{DRIVER}.driver")
    return done


def clone(url: str, dest: Path) -> None:
    """``git clone`` of a memory (an empty remote too)."""
    git = git_exe()
    dest.parent.mkdir(parents=True, exist_ok=True)
    _run(git, dest.parent, "clone", "-q", url, str(dest))


def _run(git: str, root: Path, *args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
    raw = subprocess.run([git, *args], cwd=root, capture_output=True)
    # paths a person named in another encoding survive as os.fsdecode would
    # have them; git's words are text, whatever bytes are in them
    proc = subprocess.CompletedProcess(raw.args, raw.returncode, raw.stdout.decode("utf-8", "surrogateescape"),
                                       raw.stderr.decode("utf-8", "replace"))
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
    found = _run(git, root, "config", "--get-regexp", r"^user\.(name|email)$", ok=(0, 1)).stdout.splitlines()
    have = {line.split(" ", 1)[0].lower() for line in found if " " in line and line.split(" ", 1)[1].strip()}
    for key, default in FALLBACK.items():
        configured = key in have
        from_env = any(all(os.environ.get(v) for v in group) for group in _ENV[key])
        if not configured and not from_env:
            out += ["-c", f"{key}={default}"]
    return out


# The branch ``init --git`` makes when the person's git names none: git's own
# default (``master``) is not the one the hosts a memory is pushed to start
# with (``main``), and sync follows the remote's anyway (``branch``).
BRANCH = "main"


def branch_option(git: str, root: Path) -> list[str]:
    """``git init``'s option for the first branch's name: the person's
    ``init.defaultBranch`` when set (then none), else ``main``."""
    chosen = _run(git, root, "config", "--get", "init.defaultBranch", ok=(0, 1)).stdout.strip()
    return [] if chosen else [f"--initial-branch={BRANCH}"]


def git_init(root: Path) -> bool:
    """Make ``root`` a git repository (if it is not inside one) with a commit of
    sediment's own files in it (``.gitignore``, ``_system/``, the layer folders;
    the ``.gitignore`` keeps the lock, journal, caches, usage and reports out).

    Inside an existing repository only those paths are staged and committed;
    whatever else the person has staged stays staged. The commit is the
    person's (their configured git identity); sediment's identity fills in only
    what git has none for, and only for this one command. Nothing new to commit
    (init run twice): no commit. The first branch is the person's
    ``init.defaultBranch``, else ``main``."""
    git = git_exe()
    inside = _run(git, root, "rev-parse", "--is-inside-work-tree", ok=(0, 128))
    if inside.returncode != 0 or inside.stdout.strip() != "true":
        try:
            _run(git, root, "init", "-q", *branch_option(git, root))
        except StorageError:  # a git older than --initial-branch (2.28)
            _run(git, root, "init", "-q")
    install_driver(git, root)
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
