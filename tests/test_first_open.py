"""A new root's first open killed half-way (issue 25, item 16): the kill lands
while the root's ``.gitignore`` is being written, so a temp file of it is left
at the top and the file itself is missing. The next open, whichever it is,
sweeps the temp file and writes the ``.gitignore``: the root is sediment's own
folder, not a person's vault.

The kill lands at a fixed point, not after a guessed delay: the child process
has an audit hook (Python's own ``sys.addaudithook``) that says when the temp
file is about to be renamed into place and waits there to be killed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from sediment import Repository
from sediment.store.system import GITIGNORE

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")

CHILD = textwrap.dedent("""\
    import sys, time
    root, here = sys.argv[1], sys.argv[2]

    def hold(event, args):
        # os.replace raises "os.rename": the temp file is written and fsync'd
        if event == "os.rename" and ".gitignore." in str(args[0]):
            open(here, "w").close()
            time.sleep(600)

    sys.addaudithook(hold)
    from sediment import Repository
    Repository(root)
""")


def killed_first_open(tmp_path: Path) -> Path:
    root, here = tmp_path / "mem", tmp_path / "in-hook"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(root), str(here)])
    while not here.exists():
        assert proc.poll() is None, f"exited {proc.returncode} before reaching the point"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not (root / ".gitignore").exists()
    assert [p.name for p in root.iterdir() if p.name.endswith(".tmp")], "the kill left the temp file"
    return root


def sediment(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "sediment", "--root", str(root), *args], capture_output=True,
                          text=True)


def opened_by_the_library(root: Path) -> None:
    with Repository(root) as repo:
        repo.add("the printer is on floor 2", kind="fact")


def opened_by_the_command_line(root: Path) -> None:
    proc = sediment(root, "add", "--kind", "fact", "the printer is on floor 2")
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("reopen", [opened_by_the_library, opened_by_the_command_line])
def test_the_next_open_after_a_killed_first_open_sweeps_the_temp_and_writes_the_gitignore(tmp_path, reopen):
    root = killed_first_open(tmp_path)
    reopen(root)
    assert sorted(p.name for p in root.iterdir() if p.name.startswith(".")) == [".gitignore"]
    assert (root / ".gitignore").read_text() == GITIGNORE
    assert not (root / "_system" / ".gitignore").exists(), "sediment's own folder, not a person's vault"
    with Repository(root) as repo:
        assert repo.check() == []
        assert [h.entry.text.strip() for h in repo.search("printer floor")] == ["the printer is on floor 2"]
