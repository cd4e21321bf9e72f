"""Helpers of the MCP tests: ``sediment serve`` as a real stdio subprocess
(``SEDIMENT_ROOT`` in its environment), reached through the MCP SDK's own
client or by raw JSON-RPC lines."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, StdioServerParameters

import sediment

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
