"""Calling tools of a real ``sediment serve`` process through the MCP SDK's own client."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest


def mcp_calls(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[tuple[bool, str, dict[str, Any]]]:
    """Each call over a real stdio server: (is_error, text, structured content)."""
    pytest.importorskip("mcp")
    import anyio
    from mcp import Client, StdioServerParameters

    project = Path(__file__).resolve().parents[1]
    path = os.pathsep.join(p for p in (str(project), os.environ.get("PYTHONPATH", "")) if p)
    params = StdioServerParameters(command=sys.executable, args=["-m", "sediment", "serve"],
                                   env={"SEDIMENT_ROOT": str(root), "PYTHONPATH": path})
    out: list[tuple[bool, str, dict[str, Any]]] = []

    async def go() -> None:
        async with Client(params, mode="legacy") as c:
            for tool, args in calls:
                r = await c.call_tool(tool, args)
                out.append((bool(r.is_error), r.content[0].text, r.structured_content or {}))
    anyio.run(go)
    return out
