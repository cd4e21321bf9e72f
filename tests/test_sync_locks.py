"""A sync killed half-way (a laptop lid, a cron job's timeout, a SIGKILL)
leaves git's lock files behind: the next sync recovers the ones no live git
process of the repository holds, and converges; a lock a live git process
holds is left alone, and the refusal is text a person reads.

The kill lands at a fixed point, not after a guessed delay: a person's
``reference-transaction`` hook (git runs it with the ref locks taken, even
under ``--no-verify``) says it is there and waits to be killed."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from _machines import GIT, apply_env, git, git_env, network, notes, open_root

pytestmark = [pytest.mark.skipif(GIT is None, reason="git is not installed"),
              pytest.mark.skipif(sys.platform == "win32", reason="process groups and sh hooks")]

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.timezone.utc)


def sediment(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sediment", "--root", str(root), *args], capture_output=True,
                          text=True)


def locks(root: Path) -> list[str]:
    gitdir = root / ".git"
    return sorted(p.relative_to(gitdir).as_posix() for p in gitdir.rglob("*.lock"))


def wait_for(path: Path, proc: subprocess.Popen) -> None:
    """Until ``path`` exists (the hook is in place); the process must still run."""
    while not path.exists():
        assert proc.poll() is None, f"exited {proc.returncode} before reaching the point"
        time.sleep(0.02)


def two_machines_that_must_merge(tmp_path: Path) -> tuple[Path, Path, str]:
    """A and B, each with a change of one note's frontmatter the other lacks:
    B's next sync merges (and settles the note by rule)."""
    a, b = network(tmp_path, 2)
    with open_root(a) as repo:
        x = repo.add("the printer is on floor 2", kind="fact", tags=["office"], now=T0)
    for root in (a, b):
        assert sediment(root, "sync").returncode == 0
    with open_root(a) as repo:
        repo.update(x.id, tags=["office", "printing"])
        repo.add("the kitchen closes at 6", kind="fact", now=T0)
    assert sediment(a, "sync").returncode == 0
    with open_root(b) as repo:
        repo.update(x.id, tags=["office", "hardware"])
    return a, b, x.id


def test_a_sync_killed_while_it_commits_a_merge_is_recovered_by_the_next(tmp_path, monkeypatch):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    a, b, eid = two_machines_that_must_merge(tmp_path)
    here = tmp_path / "in-hook"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    hook = hooks / "reference-transaction"
    # in the merge's own commit: MERGE_HEAD is there, HEAD (and the branch) are locked
    hook.write_text(f'#!/bin/sh\n[ "$1" = prepared ] && [ -e "$(git rev-parse --git-dir)/MERGE_HEAD" ] && '
                    f'{{ touch "{here}"; exec sleep 600; }}\nexit 0\n')
    hook.chmod(0o755)
    git(b, "config", "core.hooksPath", str(hooks))
    proc = subprocess.Popen([sys.executable, "-m", "sediment", "--root", str(b), "sync"], start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(here, proc)
    os.killpg(proc.pid, signal.SIGKILL)  # the sync, its git and the hook: nothing of it lives on
    proc.wait()
    git(b, "config", "--unset", "core.hooksPath")
    assert "HEAD.lock" in locks(b) and (b / ".git" / "MERGE_HEAD").exists()
    after = sediment(b, "sync")
    assert after.returncode == 0, after.stdout + after.stderr
    assert "HEAD.lock" in after.stdout  # it says what it removed
    assert sediment(a, "sync").returncode == 0
    assert locks(b) == [] and notes(a) == notes(b)
    assert git(b, "status", "--porcelain").stdout == ""
    with open_root(b) as repo:
        assert set(repo.get(eid).tags) == {"office", "printing", "hardware"} and repo.check() == []


def test_lock_files_a_killed_git_left_do_not_stop_the_next_sync(tmp_path, monkeypatch):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    a, b, _ = two_machines_that_must_merge(tmp_path)
    left = [".git/index.lock", ".git/HEAD.lock", ".git/refs/heads/main.lock", ".git/refs/remotes/origin/main.lock"]
    for rel in left:
        (b / rel).write_bytes(b"")
    proc = sediment(b, "sync")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert locks(b) == []
    assert sediment(a, "sync").returncode == 0
    assert notes(a) == notes(b)


def test_a_lock_a_live_git_process_holds_is_left_alone_and_the_refusal_reads_as_text(tmp_path, monkeypatch):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    a, b, _ = two_machines_that_must_merge(tmp_path)
    here = tmp_path / "in-hook"
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    hook = hooks / "reference-transaction"  # a person's `git commit`, held up in their hook
    hook.write_text(f'#!/bin/sh\n[ "$1" = prepared ] && {{ touch "{here}"; exec sleep 600; }}\nexit 0\n')
    hook.chmod(0o755)
    person = subprocess.Popen([GIT, "-c", f"core.hooksPath={hooks}", "commit", "-q", "--allow-empty", "-m", "mine"],
                              cwd=b, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(here, person)
        assert "HEAD.lock" in locks(b)
        proc = sediment(b, "sync")
        assert proc.returncode == 1
        err = proc.stderr
        assert "HEAD.lock" in err and "running" in err, err
        assert "b'" not in err and "b\"" not in err and "\\n" not in err and "Traceback" not in err, err
        assert "HEAD.lock" in locks(b), "a live git process's lock is never removed"
    finally:
        os.killpg(person.pid, signal.SIGKILL)
        person.wait()
    proc = sediment(b, "sync")  # that git process is gone now: its lock is recovered
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sediment(a, "sync").returncode == 0
    assert notes(a) == notes(b)
