"""The examples run: each is a script a reader copies from, so it must work
as shipped (on a throwaway copy of memory_root/, with no LLM)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(script: str, *args: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    p = subprocess.run([sys.executable, str(REPO / "examples" / script), *args], capture_output=True,
                       text=True, env=env, timeout=300, cwd=REPO)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_the_agent_context_loop_builds_its_prompt_and_keeps_working_memory():
    out = run("agent_context.py", "--show", "1")
    assert out.count("--- turn ") == 5
    # the block of turn 1, whole, inside the budget, with what it reminds of
    block = out[out.index("<memories>"):out.index("</memories>") + len("</memories>")]
    assert len(block) + 1 <= 3000 and "## Who I am" in block and "## What this reminds me of" in block
    assert "reminded of [[移动端登录用-pkce-fhnz]]" in out
    # promises opened, then closed by the turns that did them; the renewal asked for stays open
    assert "opened: 我明天把 PKCE 的说明整理好发给他。" in out and "closed: 我明天把 PKCE 的说明整理好发给他。" in out
    assert "closed: I'll check the sync status after lunch." in out
    assert out.rstrip().endswith("still open: ['别忘了周五前续费 login.example.com 的证书。'] | "
                                 "mood: 用户今天很累：回答只给结论")


def test_the_search_agent_loop_runs():
    out = run("agent_loop.py")
    assert "remembered →" in out and "revised" in out
