"""Helpers of the MCP tests: ``sediment serve`` as a real stdio subprocess
(``SEDIMENT_ROOT`` in its environment), reached through the MCP SDK's own
client or by raw JSON-RPC lines; ``sediment serve --http`` as a real
process, reached by the SDK's client over streamable HTTP."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, AsyncIterator, Iterator

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

import sediment
from sediment.disk.files import WriterLock

PROJECT = Path(sediment.__file__).resolve().parent.parent


def server(root: Path, *, wait: float = 10.0) -> StdioServerParameters:
    path = os.pathsep.join(p for p in (str(PROJECT), os.environ.get("PYTHONPATH", "")) if p)
    return StdioServerParameters(command=sys.executable, args=["-m", "sediment", "serve", "--wait", str(wait)],
                                 env={"SEDIMENT_ROOT": str(root), "PYTHONPATH": path})


def connect(root: Path, **kw: Any) -> Client:
    # "legacy": the initialize handshake, as Claude Code, Cursor and Codex speak it
    return Client(server(root, **kw), mode="legacy")


def run(fn: Any) -> Any:
    return anyio.run(fn)


async def call(c: Client, tool: str, **args: Any) -> tuple[str, dict[str, Any]]:
    r = await c.call_tool(tool, args)
    assert not r.is_error, r.content[0].text
    return r.content[0].text, r.structured_content or {}


def take_the_lock(root: Path, *, hold: float) -> threading.Event:
    """Take ``root``'s writer lock in a thread, as another writer would, and
    return once it is held; the lock is let go when the returned event is
    set (or after ``hold`` seconds)."""
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with WriterLock.for_path(root / "_system" / "lock").hold(hold):
            held.set()
            release.wait(hold)
    threading.Thread(target=holder, daemon=True).start()
    held.wait(hold)
    return release


async def a_hand_edit_is_found(c: Client, root: Path) -> None:
    """Through client ``c`` of a server of ``root``: a memory remembered, then
    its text edited by a person in their editor, is found by its new words
    while the server runs."""
    _, e = await call(c, "remember", text="The test fixtures live on the shared drive.", title="Fixtures")
    _, found = await call(c, "recall", query="pelicanfeather")
    assert found["hits"] == []
    note = next(root.glob("shallow/**/*.md"))
    note.write_text(note.read_text(encoding="utf-8").replace("shared drive", "pelicanfeather share"),
                    encoding="utf-8")
    deadline = time.monotonic() + 30  # a guard against a hang, not a timing
    while True:
        _, found = await call(c, "recall", query="pelicanfeather")
        if found["hits"] or time.monotonic() > deadline:
            break
        await anyio.sleep(0.05)
    assert [h["id"] for h in found["hits"]] == [e["id"]]


async def refusal(c: Client, tool: str, **args: Any) -> tuple[str, str]:
    """The code and message of a tool error, checked to be of the documented shape."""
    r = await c.call_tool(tool, args)
    assert r.is_error, r.content[0].text
    err = (r.structured_content or {})["error"]
    assert set(err) == {"code", "message"}
    assert r.content[0].text == f"error {err['code']}: {err['message']}"
    return err["code"], err["message"]


async def error(c: Client, tool: str, **args: Any) -> str:
    return (await refusal(c, tool, **args))[0]


HELLO = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}},
         {"jsonrpc": "2.0", "method": "notifications/initialized"}]


def raw(root: Path, lines: list[str], *, answers: set[object]) -> dict[object, dict[str, Any]]:
    """The answers the server writes, by id, to these lines of stdin (sent
    after the handshake); stdin is closed once the answers with the ids
    ``answers`` came (or, as a guard against a hang, after two minutes)."""
    p = server(root)
    proc = subprocess.Popen([p.command, *p.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, env={**os.environ, **(p.env or {})})
    assert proc.stdin is not None and proc.stdout is not None
    got: dict[object, dict[str, Any]] = {}
    done = threading.Event()

    def reader() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            msg = json.loads(line)
            got[msg.get("id")] = msg
            if answers <= set(got):
                done.set()
        done.set()

    threading.Thread(target=reader, daemon=True).start()
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in HELLO) + "".join(ln + "\n" for ln in lines))
    proc.stdin.flush()
    done.wait(120)
    proc.stdin.close()
    assert proc.wait(60) == 0
    return got


def mcp_calls(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str, dict[str, Any]]]:
    """Each call over one real stdio server, in order: (is_error, text, structured content)."""
    out: list[tuple[bool, str, dict[str, Any]]] = []

    async def go() -> None:
        async with connect(root) as c:
            for tool, args in calls:
                r = await c.call_tool(tool, args)
                out.append((bool(r.is_error), r.content[0].text, r.structured_content or {}))
    run(go)
    return out


# --------------------------------------------------------------------------- over streamable HTTP

class Http:
    """A running ``sediment serve --http``: its process, URL, token and what it printed."""

    def __init__(self, proc: subprocess.Popen[str], url: str, token: str, said: str) -> None:
        self.proc, self.url, self.token, self.said = proc, url, token, said

    def stop(self, sig: int = signal.SIGTERM) -> tuple[int, str]:
        """Send ``sig``; the exit code and stderr once it stopped."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            code = self.proc.wait(120)
        except subprocess.TimeoutExpired:  # a guard against a hang, never a timing
            self.proc.kill()
            raise
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read()


def http_start(root: Path, *args: str, token_file: Path | None = None) -> Http:
    """``sediment serve --http --port 0`` on ``root``, once it says where it listens."""
    cmd = [sys.executable, "-m", "sediment", "--root", str(root), "serve", "--http", "--port", "0", *args]
    if token_file is not None:
        cmd += ["--token-file", str(token_file)]
    path = os.pathsep.join(p for p in (str(PROJECT), os.environ.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": path})
    assert proc.stdout is not None
    said = []
    for line in proc.stdout:  # (ends at its exit: a refusal to start)
        said.append(line)
        if line.startswith("Ctrl-C"):
            break
    text = "".join(said)
    if not said or not said[-1].startswith("Ctrl-C"):
        assert proc.stderr is not None
        raise AssertionError(f"serve --http did not start ({proc.wait(60)}): {text}{proc.stderr.read()}")
    url = next(ln.strip() for ln in said if ln.strip().startswith("http://"))
    shown = [said[i + 1].strip() for i, ln in enumerate(said) if ln.startswith("token (shown this once")]
    file = token_file or root / "_system" / "cache" / "http-token"
    token = shown[0] if shown else file.read_text().strip()
    return Http(proc, url, token, text)


@contextlib.contextmanager
def http_serving(root: Path, *args: str, token_file: Path | None = None) -> Iterator[Http]:
    """A server for the block, stopped (SIGTERM) at its end; it must exit 0."""
    s = http_start(root, *args, token_file=token_file)
    try:
        yield s
    finally:
        code, err = s.stop()
    assert code == 0 and "Traceback" not in err, err


@contextlib.asynccontextmanager
async def http_connect(s: Http, *, token: str | None = None, mode: str = "legacy") -> AsyncIterator[Client]:
    """The SDK's own client over streamable HTTP, sending the bearer token
    (``token``: another one) as a configured client does, in a header."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token or s.token}"}) as hc:
        async with Client(streamable_http_client(s.url, http_client=hc), mode=mode) as c:  # type: ignore[arg-type]
            yield c
