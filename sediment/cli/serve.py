"""``sediment serve``: the MCP server over stdio (extra ``sediment[mcp]``)."""

from __future__ import annotations

import argparse
from typing import Any

from .kit import arg, command, require_root


@command("serve", "serve the memory to an MCP client (Claude Code, Cursor, …) over stdio; needs sediment[mcp]",
         arg("--wait", type=float, default=2.0, metavar="SECONDS",
             help="how long a tool waits for the index while it loads before answering 'loading' (default 2)"))
def cmd_serve(ns: argparse.Namespace) -> tuple[Any, str]:
    require_root(ns)  # a mistyped root is an error, not a new root
    from ..mcp.tools import serve  # raises NotInstalled (exit 1, with what to install) without the extra
    serve(ns.root, wait=ns.wait)
    # The protocol owned stdout; the CLI must not print a result after it.
    raise SystemExit(0)
