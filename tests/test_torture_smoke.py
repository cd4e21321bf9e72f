"""A short run of each torture script (``benchmarks/torture/``), as CI runs them.

Each script is run in its ``--smoke`` mode as a subprocess and must exit 0:
exit status 1 means a promise of the library was broken (the script's output,
shown on failure, names which). The full-size runs are on demand; see
``benchmarks/torture/README.md``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TORTURE = Path(__file__).resolve().parents[1] / "benchmarks" / "torture"

SCRIPTS = ["kill.py", "concurrency.py", "badfiles.py", "escapes.py", "disk.py"]


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS)
def test_torture_smoke_run_keeps_every_promise(script, tmp_path):
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONDONTWRITEBYTECODE": "1"}
    proc = subprocess.run([sys.executable, str(TORTURE / script), "--smoke", "--seed", "1"],
                          capture_output=True, text=True, cwd=tmp_path, env=env,
                          timeout=600)  # a guard against a hang, not a speed limit
    out = proc.stdout + ("\n--- stderr ---\n" + proc.stderr[-3000:] if proc.stderr.strip() else "")
    assert proc.returncode == 0, f"{script} --smoke exited {proc.returncode}:\n{out[-6000:]}"
    assert "RESULT: all promises held" in proc.stdout or proc.stdout.startswith("skipped"), out[-3000:]
