"""``sediment serve``: the MCP server over stdio (extra ``sediment[mcp]``); ``sediment view``: the page
(extra ``sediment[view]``), whose body is ``web.run``."""

from __future__ import annotations

import argparse
from typing import Any

from .kit import arg, command, require_root
from ..progress import terminal_bar


@command("serve", "serve the memory to an MCP client (Claude Code, Cursor, …) over stdio; needs sediment[mcp]",
         arg("--wait", type=float, default=2.0, metavar="SECONDS",
             help="how long a tool waits for the index while it loads before answering 'loading' (default 2)"))
def cmd_serve(ns: argparse.Namespace) -> tuple[Any, str]:
    require_root(ns)  # a mistyped root is an error, not a new root
    from ..mcp.tools import serve  # raises NotInstalled (exit 1, with what to install) without the extra
    serve(ns.root, wait=ns.wait)
    # The protocol owned stdout; the CLI must not print a result after it.
    raise SystemExit(0)


@command("view", "a read-only page of the memory in your browser (sediment[view]); --export writes it as files",
         arg("--port", type=int, default=None, help="the port (default 8377, else any free one; 0: any free one)"),
         arg("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1, this machine "
                                                 "only; another is warned about)"),
         arg("--no-browser", action="store_true", help="print the URL, do not open a browser"),
         arg("--export", metavar="DIR", help="write the page as static files into DIR (no server, no token, "
                                             "no live updates) and stop"))
def cmd_view(ns: argparse.Namespace) -> tuple[Any, str]:
    require_root(ns)
    from ..web import run  # the server raises NotInstalled (exit 1, with what to install) without the extra
    if ns.export:
        done = run.export(ns.root, ns.export, progress=terminal_bar())
        return done, f"wrote {done['memories']} memories to {done['folder']}/index.html"
    run.serve(ns.root, host=ns.host, port=ns.port, open_browser=not ns.no_browser, progress=terminal_bar())
    raise SystemExit(0)  # stopped: the URL was the output
