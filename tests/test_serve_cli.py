"""``sediment serve`` at the command line, with or without the extra."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import sediment
from sediment import Repository

PROJECT = Path(sediment.__file__).resolve().parent.parent

# the command line with the MCP SDK made unimportable, as on an install without sediment[mcp]
WITHOUT_MCP = "import sys; sys.modules['mcp'] = None; from sediment.cli.main import main; sys.exit(main(sys.argv[1:]))"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(PROJECT), os.environ.get("PYTHONPATH"))
                                                       if p)}
    return subprocess.run([sys.executable, "-c", WITHOUT_MCP, *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_without_the_extra_serve_says_what_to_install(tmp_path):
    Repository(tmp_path / "root").close()
    out = _run("--root", str(tmp_path / "root"), "serve")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.strip() == ("error: not_installed: sediment serve needs the MCP SDK (mcp 2.x): "
                                  "pip install -e '.[mcp]' in a checkout, or pip install 'agent-sediment[mcp]'")


def test_serve_refuses_a_folder_that_is_not_a_root(tmp_path):
    out = _run("--root", str(tmp_path / "nothing"), "serve")
    assert out.returncode == 1 and "is not a memory root" in out.stderr
    assert not (tmp_path / "nothing").exists()
