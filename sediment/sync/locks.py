"""git's lock files that a killed git process left behind, recovered.

git takes a lock by creating ``<file>.lock`` and removes it when it is done;
a git process killed in between (a sync killed mid-merge, a laptop that went
to sleep under a cron job's timeout) leaves it, and every later git command
that needs that file refuses ("index.lock: File exists"), so the clone stops
converging for good. Before its first git step, sync removes the lock files
of its repository that no live process can be holding:

* on Linux (``/proc``): no live git process works in the repository (its
  folder, or its ``GIT_DIR``, is in it), and no live process at all has a file
  of the repository's git folder open (a tool built on libgit2 keeps its
  lock files open);
* elsewhere: no git process runs on the machine at all (``ps``);
* where neither can be told: nothing is removed, and the error says which
  file to delete once no git command is running.

A lock a live process may hold is never removed: sync stops with the
process named. Not by age (an age says nothing about who holds a lock). The
caller holds sediment's writer lock, so no other sync of this root is in its
local steps meanwhile; a git command starting meanwhile cannot take a lock
that still exists, and a file is removed only while it is the one found.

Hand-rolled: psutil would answer "which processes use this folder" on every
platform, but it is not among the runtime dependencies, and ``/proc`` and
``ps`` answer it where git runs.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from ..errors import StorageError

PROC = Path("/proc")


def left_locks(gitdir: Path, common: Path) -> list[Path]:
    """The lock files in a repository's git folder: its own files' (``index``,
    ``HEAD``, ``ORIG_HEAD``, ``config``, ``packed-refs``, the temporary
    ``next-index-*``) and every ref's."""
    found: set[Path] = set()
    for folder in {gitdir, common}:
        try:
            found.update(p for p in folder.glob("*.lock") if p.is_file())
        except OSError:
            continue
    refs = common / "refs"
    if refs.is_dir():
        for dirpath, _dirs, files in os.walk(refs):
            found.update(Path(dirpath, f) for f in files if f.endswith(".lock"))
    return sorted(found)


def holders(top: Path, gitdir: Path, common: Path) -> list[str] | None:
    """The live processes that may hold a lock of this repository, each as
    ``pid N (command)``; None when this system cannot tell."""
    places = [p.resolve() for p in {top, gitdir, common}]
    if PROC.is_dir() and (PROC / "self" / "fd").is_dir():
        return _linux(places, [p.resolve() for p in {gitdir, common}])
    ps = shutil.which("ps")
    if ps is None:
        return None
    try:
        out = subprocess.run([ps, "-A", "-o", "pid=,comm="], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    found = []
    for line in out.splitlines():
        pid, _, comm = line.strip().partition(" ")
        if os.path.basename(comm.strip()).startswith("git") and pid != str(os.getpid()):
            found.append(f"pid {pid} ({comm.strip()})")
    return found


def _inside(path: str, places: list[Path]) -> bool:
    p = Path(path)
    return any(p == place or place in p.parents for place in places)


def _linux(places: list[Path], gitdirs: list[Path]) -> list[str]:
    found = []
    me = os.getpid()
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            comm = (entry / "comm").read_text(encoding="utf-8", errors="replace").strip()
            if comm.startswith("git") and _works_in(entry, places):
                found.append(_describe(entry, comm))
            elif _has_open(entry, gitdirs):
                found.append(_describe(entry, comm))
        except OSError:  # gone meanwhile, or not ours to look at
            continue
    return found


def _works_in(proc: Path, places: list[Path]) -> bool:
    try:
        if _inside(os.readlink(proc / "cwd"), places):
            return True
    except OSError:
        pass
    try:
        env = (proc / "environ").read_bytes().split(b"\0")
    except OSError:
        return False
    for var in env:
        if var.startswith(b"GIT_DIR="):
            value = os.fsdecode(var[len(b"GIT_DIR="):])
            return _inside(os.path.realpath(value), places)
    return False


def _has_open(proc: Path, gitdirs: list[Path]) -> bool:
    try:
        fds = os.listdir(proc / "fd")
    except OSError:
        return False
    for fd in fds:
        try:
            if _inside(os.readlink(proc / "fd" / fd), gitdirs):
                return True
        except OSError:
            continue
    return False


def _describe(proc: Path, comm: str) -> str:
    try:
        cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        cmd = ""
    return f"pid {proc.name} ({(cmd or comm)[:80]})"


def recover(root: Path, top: Path, gitdir: Path, common: Path) -> list[str]:
    """Remove the lock files no live process can hold (see the module).
    Returns them, relative to ``root``. Raises ``StorageError`` naming the
    files and the processes when a live one may hold them, or when this
    system cannot tell."""
    found = left_locks(gitdir, common)
    if not found:
        return []
    seen = {p: _identity(p) for p in found}
    shown = ", ".join(os.path.relpath(p, root) for p in found)
    alive = holders(top, gitdir, common)
    if alive is None:
        raise StorageError(f"git's lock file(s) {shown} exist, and this system cannot tell whether a git process "
                           "still holds them: if no git command is running in this repository, delete them, "
                           "then sync again", path=str(root))
    if alive:
        raise StorageError(f"git's lock file(s) {shown} exist and a git process that may hold them is running "
                           f"({'; '.join(alive[:3])}): let it finish (or end it), then sync again", path=str(root))
    removed = []
    for p, ident in seen.items():
        if ident is not None and _identity(p) == ident:  # still the file found dead, not a new one's
            try:
                os.unlink(p)
            except FileNotFoundError:
                continue
            removed.append(os.path.relpath(p, root))
    return removed


def _identity(p: Path) -> tuple[int, int, int] | None:
    try:
        st = p.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns
