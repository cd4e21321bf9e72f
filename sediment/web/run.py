"""What ``sediment view`` does: serve the page for one root until stopped, or
write it as files (``--export``).

The server binds 127.0.0.1 unless told otherwise (another host is warned
about: anyone who reaches it with the token reads every memory), makes a
random token for this run, prints the URL that carries it (as Jupyter does),
opens it in the person's browser, and keeps the page current through
``Repository.watch``. The repository is opened as any reader opens it; the
page itself never writes.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import sys
import threading
import webbrowser
from pathlib import Path
from typing import Any, TextIO

from ..errors import InvalidInput, NotInstalled, install_hint
from ..progress import Progress
from .nebula import LIMIT

log = logging.getLogger("sediment")

INSTALL = install_hint("view")
DEFAULT_PORT = 8377
LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _bind(host: str, port: int | None) -> socket.socket:
    """A listening socket: ``port``, or the default port and any free one
    when it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, DEFAULT_PORT if port is None else port), family=family)
    except OSError as exc:
        if port is None:
            return socket.create_server((host, 0), family=family)
        raise InvalidInput(f"cannot listen on {host} port {port} ({exc.strerror or exc}): give another --port, "
                           "or 0 for any free one", what="port") from None


def _can_open() -> bool:
    """A browser can be shown here: a desktop (on a server over ssh, Python's
    ``webbrowser`` would start a text browser in the terminal the server
    prints to)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def serve(root: str | Path, *, host: str = "127.0.0.1", port: int | None = None, open_browser: bool = True,
          out: TextIO | None = None, err: TextIO | None = None, progress: Progress | None = None) -> None:
    """Serve the page of ``root`` until interrupted (Ctrl-C, SIGTERM).
    ``progress`` is told how a long open goes. Raises ``NotInstalled``
    without the ``view`` extra, ``NotFound`` for a missing root,
    ``InvalidInput`` for a port that cannot be had."""
    try:
        import uvicorn

        from .server import app
    except ImportError as exc:
        raise NotInstalled(f"sediment view needs starlette and uvicorn: {INSTALL}") from exc
    from ..repository import Repository
    from .live import Hub, Live
    from .nebula import Nebula

    sock = _bind(host, port)
    hub = Hub()
    repo = Repository(root, create=False, progress=progress)
    try:
        nebula = Nebula(repo, on_diff=hub.publish)
        live = Live(nebula)
        # watching before the nodes are read: a change in between is seen (twice at worst, which changes nothing)
        with repo.watch(live.on_change):
            nebula.load_nodes()  # the edges follow from the live thread's first refresh
            live.start()
            try:
                token = secrets.token_urlsafe(24)
                where = f"[{host}]" if ":" in host else host
                url = f"http://{where}:{sock.getsockname()[1]}/?token={token}"
                server = uvicorn.Server(uvicorn.Config(app(repo, nebula, hub, token, live.asked), log_level="warning",
                                                       lifespan="off", access_log=False, timeout_graceful_shutdown=1))
                opening = open_browser and _can_open()
                _say(url, root=repo.root, memories=len(nebula.nodes), host=host, opening=opening,
                     asked_to_open=open_browser, out=out or sys.stdout, err=err or sys.stderr)
                if opening:
                    threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
                server.run(sockets=[sock])
            finally:
                live.stop()
    finally:
        sock.close()
        repo.close()


def _say(url: str, *, root: Path, memories: int, host: str, opening: bool, asked_to_open: bool,
         out: TextIO, err: TextIO) -> None:
    """The URL with its token (and a warning for another host than this machine)."""
    if host not in LOOPBACK:
        print(f"warning: serving on {host}, not only this machine: anyone who can reach it and has the "
              "URL below reads every memory", file=err, flush=True)
    print(f"sediment view of {root} ({memories} memories), read-only:\n  {url}\n"
          + ("" if opening or not asked_to_open else "(no display here: open the URL in a browser)\n")
          + "Ctrl-C stops it.", file=out, flush=True)


def export(root: str | Path, folder: str | Path, *, limit: int = LIMIT,
           progress: Progress | None = None) -> dict[str, Any]:
    """Write the page of ``root`` into ``folder`` (needs no extra: no server)."""
    from ..repository import Repository
    from .export import export as write

    with Repository(root, create=False) as repo:
        return write(repo, folder, limit=limit, progress=progress)
