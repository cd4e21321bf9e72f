"""``sediment serve --http``: the server over MCP's streamable HTTP
transport (the SDK's), one process and one open root for many clients.

Every request carries ``Authorization: Bearer <token>`` or is answered 401
(``Bearer``, an ASGI layer over the SDK's app: the SDK's own auth is OAuth
with an authorization server, more than one shared secret needs). The token
is compared in constant time. It is made on the first start and kept in
``_system/cache/http-token`` (``cache/`` is machine-local and never versioned
in any root: a token in ``policy.yaml``'s folder would be committed by
``sync``), created with mode 0600 and printed that once; ``--token-file``
names a file to read it from instead (made there, 0600, when missing).
Nothing is written outside the root but that file.

The address is 127.0.0.1 unless ``--host`` says otherwise (warned about:
anyone who reaches it with the token reads and writes every memory); on the
loopback the SDK also checks the ``Host`` header (DNS rebinding). SIGINT and
SIGTERM stop it cleanly: uvicorn stops taking requests, the writes already
started finish, then the root is closed by the caller (``tools.serve_http``).
uvicorn would raise the signal again once stopped (killing the process on
SIGTERM before the root is closed), which ``Server`` does not.

Like ``stdio``, this module sits below the server: it is handed the app.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import re
import secrets
import signal
import socket
import stat
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TextIO

import pydantic_core
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..disk.files import NOFOLLOW, fsync_dir, move_new, read_nofollow, symlink_in, temp_name
from ..errors import InvalidInput, StorageError
from ..store.system import SYSTEM

DEFAULT_PORT = 8378  # (8377 is the page's, sediment view)
PATH = "/mcp"
TOKEN = "cache/http-token"  # under _system/
MIN_TOKEN_CHARS = 16
LOOPBACK = ("127.0.0.1", "localhost", "::1")
STOP_SECONDS = 3  # how long open streams may take to end once stopping
Answer = Callable[[str], dict[str, Any] | None]  # a request the SDK could not read → the JSON-RPC answer, or None


@dataclass
class Token:
    """The bearer token: its value, the file it is kept in, and whether this
    start made it (then it is printed, once)."""
    value: str
    path: Path
    made: bool


def token(root: Path, file: str | os.PathLike[str] | None = None) -> Token:
    """The token of ``root``'s server: read from ``file`` (made there when
    missing), else from ``_system/cache/http-token`` (made on first start).
    Raises ``StorageError`` for a symlink in the way or a file that cannot be
    read or written, ``InvalidInput`` for a token file that holds no usable
    token (fewer than 16 characters, or spaces or control characters in it)."""
    if file is not None:  # a file the person names: a link is followed (a secrets mount is one)
        path = Path(file).absolute()
        value = _read(path.resolve())
        if value is None:
            return Token(_make(path), path, True)
        _check(value, path)
        return Token(value, path, False)
    rel = f"{SYSTEM}/{TOKEN}"
    link = symlink_in(root, rel)
    if link is not None:
        raise StorageError(f"{link} is a symlink; sediment does not follow it: the token is not kept there",
                           path=str(root / link))
    path = root / rel
    value = _read(path)
    if value is not None:
        try:
            _check(value, path)
            return Token(value, path, False)
        except InvalidInput:  # our own file, spoilt (a start killed while making it): made again
            path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    return Token(_make(path), path, True)


def _read(path: Path) -> str | None:
    try:
        data = read_nofollow(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read the token file {path}: {exc}", path=str(path)) from exc
    return data.decode("utf-8", "replace").strip()


def _check(value: str, path: Path) -> None:
    if len(value) < MIN_TOKEN_CHARS or not value.isascii() or not all(c.isprintable() and c != " " for c in value):
        raise InvalidInput(f"{path} holds no usable token: one line of at least {MIN_TOKEN_CHARS} ASCII "
                           "characters, no spaces", what="token_file")


def _make(path: Path) -> str:
    """A new token, written to ``path`` readable by its owner only from the
    first byte (the temp file is made 0600, then linked into place; a file
    made there meanwhile, by another server starting, wins and is read)."""
    value = secrets.token_urlsafe(32)
    tmp = temp_name(path)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o600)
        try:
            os.write(fd, (value + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            move_new(tmp, path)
        except FileExistsError:
            other = _read(path)
            if other is None:
                raise
            _check(other, path)
            return other
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        fsync_dir(path.parent)
    except OSError as exc:
        raise StorageError(f"cannot write the token file {path}: {exc}", path=str(path)) from exc
    return value


def loose(path: Path) -> bool:
    """Whether others than the owner may read the token file."""
    try:
        return bool(os.stat(path).st_mode & (stat.S_IRWXG | stat.S_IRWXO))
    except OSError:
        return False


SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")  # a surrogate's escape in JSON: \ud800-\udfff


class Readable:
    """A request the SDK's parser refuses but JSON reads (a lone surrogate,
    ``\\ud800``, which JSON can escape and no text can hold) answered as
    over stdio (``answer``: ``server.unreadable``): the ``invalid`` tool
    error naming the argument, not the SDK's parse error. Any other body is
    passed on as it came; one over ``limit`` bytes is not read ahead (the
    SDK refuses it)."""

    def __init__(self, app: ASGIApp, answer: Answer, limit: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self.app = app
        self.answer = answer
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        seen: list[Message] = []
        size, more = 0, True
        while more and size <= self.limit:
            msg = await receive()
            seen.append(msg)
            if msg["type"] != "http.request":
                break
            size += len(msg.get("body", b""))
            more = bool(msg.get("more_body", False))
        body = b"".join(m.get("body", b"") for m in seen if m["type"] == "http.request")
        if not more and SURROGATE.search(body):
            answer = self._refused(body)
            if answer is not None:
                data = json.dumps(answer).encode()
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"content-length", str(len(data)).encode())]})
                await send({"type": "http.response.body", "body": data})
                return

        async def replay() -> Message:
            return seen.pop(0) if seen else await receive()
        await self.app(scope, replay, send)

    def _refused(self, body: bytes) -> dict[str, Any] | None:
        try:
            pydantic_core.from_json(body)
            return None  # the SDK reads it (a surrogate pair: one character)
        except ValueError:
            return self.answer(body.decode("utf-8", "replace"))


class Bearer:
    """401 for any HTTP request without ``Authorization: Bearer <token>``
    (compared in constant time), the error in the documented shape; the
    lifespan passes through."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        given = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), b"")
        scheme, _, value = given.partition(b" ")
        if scope["type"] == "http" and scheme.lower() == b"bearer" \
                and hmac.compare_digest(value.strip(), self.expected):
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # a websocket: nothing is served on one
            await send({"type": "websocket.close", "code": 1008})
            return
        message = ("this server needs the header 'Authorization: Bearer <token>' with the token sediment serve "
                   "--http printed on its first start (kept in the root's _system/cache/http-token, or the "
                   "--token-file it was given)"
                   if not given else "the bearer token is not this server's")
        body = json.dumps({"error": {"code": "unauthorized", "message": message}}).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"www-authenticate", b'Bearer realm="sediment"'), (b"cache-control", b"no-store")]})
        await send({"type": "http.response.body", "body": body})


def bind(host: str, port: int | None) -> socket.socket:
    """A listening socket on ``host``: ``port`` (0: any free one), default
    8378. A client is configured with the port, so a taken one is an error,
    never another port. Raises ``InvalidInput``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    port = DEFAULT_PORT if port is None else port
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        raise InvalidInput(f"cannot listen on {host} port {port} ({exc.strerror or exc}): give another --port, "
                           "or 0 for any free one", what="port") from None


def url(host: str, sock: socket.socket) -> str:
    where = f"[{host}]" if ":" in host else host
    return f"http://{where}:{sock.getsockname()[1]}{PATH}"


def say(root: Path, address: str, tok: Token, *, host: str, out: TextIO, err: TextIO) -> None:
    """Where the server listens, and the token: whole when this start made
    it, else where it is kept (and a warning for another host than this
    machine, or a token file others may read)."""
    if host not in LOOPBACK:
        print(f"warning: serving on {host}, not only this machine: anyone who can reach it and has the token "
              "reads and writes every memory", file=err, flush=True)
    if loose(tok.path):
        print(f"warning: {tok.path} may be read by other users: chmod 600 it", file=err, flush=True)
    if tok.made:
        told = (f"token (shown this once; kept in {tok.path}, readable by you only):\n  {tok.value}\n"
                "clients send it as the header  Authorization: Bearer <token>")
    else:
        told = f"token: in {tok.path} (clients send it as the header  Authorization: Bearer <token>)"
    print(f"sediment serve of {root} over MCP's streamable HTTP:\n  {address}\n{told}\nCtrl-C stops it.",
          file=out, flush=True)


def run(app: MCPServer, tok: Token, sock: socket.socket, *, host: str, answer: Answer,
        ready: Callable[[], object]) -> None:
    """Serve ``app`` on ``sock`` behind the token until SIGINT or SIGTERM;
    returns once stopped (the writes in flight finished). ``answer``: what
    a request the SDK cannot read gets (``Readable``). ``ready`` is called
    once it takes requests and a signal stops it cleanly."""
    import uvicorn

    class Server(uvicorn.Server):
        """uvicorn's server, which on a signal stops and returns (uvicorn
        raises the signal again once stopped), and says when it is ready."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            ready()

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            before = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for sig, handler in before.items():
                    signal.signal(sig, handler)

    starlette: Any = app.streamable_http_app(streamable_http_path=PATH, host=host)
    config = uvicorn.Config(Bearer(Readable(starlette, answer), tok.value), log_level="warning", lifespan="on",
                            access_log=False, timeout_graceful_shutdown=STOP_SECONDS)
    Server(config).run(sockets=[sock])
