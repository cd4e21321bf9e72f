"""A write retried with its ``request_id`` applies once, whenever the server
died (issue 25, item 5): real ``sediment serve`` processes, SIGKILLed at many
points of a ``touch``, then every request retried through the MCP SDK's own
client; and every write tool retried when its first answer could not be kept."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from _mcp import HELLO, call, connect, run, server  # noqa: E402

from sediment import Repository  # noqa: E402


@pytest.fixture
def root(tmp_path: Path) -> Path:
    Repository(tmp_path / "root").close()
    return tmp_path / "root"


def _touch_line(note: str, request_id: str) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "touch", "arguments": {"id": note, "outcome": "confirm", "request_id": request_id}}}) + "\n"


def _killed_touch(root: Path, note: str, request_id: str, kill: str | float) -> str:
    """One server process is sent a touch and SIGKILLed: ``kill`` seconds
    after the call was sent, or ("landed") as soon as the touch's event is
    in the usage log. Returns what was seen before the kill: 'answered',
    'landed' or 'nothing'."""
    events = root / "_system" / "usage" / "events.log"
    p = server(root)
    proc = subprocess.Popen([p.command, *p.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env={**os.environ, **(p.env or {})})
    assert proc.stdin is not None and proc.stdout is not None
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(ln) for ln in proc.stdout or ()], daemon=True).start()
    try:
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in HELLO))
        proc.stdin.flush()
        assert json.loads(lines.get(timeout=120))["id"] == 1  # the server is up
        before = events.stat().st_size if events.exists() else 0
        proc.stdin.write(_touch_line(note, request_id))
        proc.stdin.flush()
        if kill == "landed":
            deadline = time.monotonic() + 60  # (a guard against a hang, not a measure)
            while lines.empty() and time.monotonic() < deadline:
                if events.exists() and events.stat().st_size > before:
                    break
                time.sleep(0.0002)
        else:
            assert isinstance(kill, float)
            time.sleep(kill)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    if not lines.empty():
        return "answered"
    return "landed" if events.exists() and events.stat().st_size > before else "nothing"


def _kills_then_retries(root: Path, kills: list[str | float]) -> dict[str, int]:
    with Repository(root) as repo:
        note = repo.add("Deploys go through ArgoCD.", kind="fact").id
    seen: dict[str, int] = {}
    ids = [f"touch-{i}" for i in range(len(kills))]
    for request_id, kill in zip(ids, kills):
        what = _killed_touch(root, note, request_id, kill)
        seen[what] = seen.get(what, 0) + 1

    async def retry() -> None:
        async with connect(root) as c:
            for request_id in ids + ids:  # every request retried, twice
                text, _ = await call(c, "touch", id=note, outcome="confirm", request_id=request_id)
                assert text.startswith(f"confirmed {note}")
    run(retry)
    with Repository(root) as repo:
        assert repo.strength(note).confirms == len(ids), seen
    return seen


@pytest.mark.slow
def test_a_touch_retried_after_the_server_was_killed_applies_once(root):
    seen = _kills_then_retries(root, ["landed"] * 3 + [0.0, 0.1, 0.5])
    assert sum(seen.values()) == 6


@pytest.mark.slow
def test_a_touch_retried_after_the_server_was_killed_at_many_points_applies_once(root):
    kills: list[str | float] = ["landed"] * 8 + [i * 0.04 for i in range(16)]
    seen = _kills_then_retries(root, kills)
    assert seen.get("landed", 0) > 0  # (some kills fell between the write and its answer)


def test_every_write_tool_retried_when_its_first_answer_was_not_kept_applies_once(root):
    """The folder of kept answers is unusable (a file stands in its place): every
    retry runs the write again, as after a crash between the write and its
    answer, and the write must still apply once."""
    folder = root / "_system" / "cache" / "requests"
    folder.parent.mkdir(parents=True, exist_ok=True)
    folder.write_text("not a folder\n", encoding="utf-8")

    async def twice(c: Any, tool: str, **args: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        _, first = await call(c, tool, request_id=f"{tool}-1", **args)
        _, again = await call(c, tool, request_id=f"{tool}-1", **args)
        return first, again

    async def main() -> None:
        async with connect(root) as c:
            a, a2 = await twice(c, "remember", text="Deploys go through ArgoCD.", kind="fact")
            b, _ = await twice(c, "remember", text="Deploys go through Flux since March.", kind="fact")
            assert a2["id"] == a["id"]
            await twice(c, "touch", id=a["id"], outcome="confirm")
            await twice(c, "observe", text="Remember to rotate the API keys on Friday.")
            await twice(c, "observe", text="Remember to send the invoice to Ada.")
            _, closed = await twice(c, "observe", text="Done: rotated the API keys.")
            assert closed["closed"] == []  # the retry closed nothing more
            await twice(c, "supersede", old_id=a["id"], new_id=b["id"])
            await twice(c, "restore", id=a["id"])
            await twice(c, "forget", id=a["id"], reason="moved to Flux")
            await twice(c, "forget", id=b["id"], reason="a secret", purge=True, confirm=True)
            await twice(c, "restore", id=b["id"], confirm=True)
        with Repository(root) as repo:
            assert len(repo.list()) == 2 and repo.strength(a["id"]).confirms == 1
            assert [i.text for i in repo.working().items] == ["Remember to send the invoice to Ada."]
            assert (repo.get(a["id"]).status, repo.get(b["id"]).status) == ("archived", "active")
            # one purge counted against the hourly limit, not two
            limit = (root / "_system" / "usage" / "destructive.log").read_text(encoding="utf-8")
            assert len(limit.splitlines()) == 1
    run(main)
