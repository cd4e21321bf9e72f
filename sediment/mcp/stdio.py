"""``sediment serve`` over stdio: the SDK's stdio transport, with every
line it cannot read answered.

The SDK's transport parses each line of stdin; a line it cannot parse (not
JSON, or a request holding a lone surrogate such as ``\\ud800``, which JSON
can escape but its parser refuses) becomes an exception item on the read
stream, which the SDK's dispatcher logs and drops: the client then waits for
its answer forever. ``Answering`` wraps the read stream and answers such a
line (with what ``answer`` says: ``server.unreadable``, whatever the
transport) on the write stream instead. The answer is passed in rather than
imported, so the transport sits below the server, not on top of it (an
import chain no longer than the package allows).

The SDK gives no public way to run an ``MCPServer`` on streams of one's own,
so ``run`` makes the call ``MCPServer.run_stdio_async`` makes, on the
server's low-level ``Server`` (``_lowlevel_server``, mcp 2.x); where that is
missing (another SDK), the server runs as the SDK runs it, without the
answers.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any, Callable

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter
from pydantic import ValidationError

Answer = Callable[[str], dict[str, Any] | None]  # a line the SDK could not read → the JSON-RPC answer, or None


def _line(exc: Exception) -> str | None:
    """The line the transport could not read, from its parse error."""
    if isinstance(exc, ValidationError):
        for err in exc.errors():
            if err.get("type") == "json_invalid" and isinstance(err.get("input"), str):
                return str(err["input"])
    return None


class Answering:
    """A transport's read stream whose unreadable lines are answered on
    ``write`` (when ``answer`` has an answer) rather than passed on."""

    def __init__(self, inner: Any, write: Any, answer: Answer) -> None:
        self.inner = inner
        self.write = write
        self.answer = answer

    @property
    def last_context(self) -> Any:
        """The sender's context of the last item (the SDK's context streams)."""
        return getattr(self.inner, "last_context", None)

    async def receive(self) -> Any:
        while True:
            item = await self.inner.receive()
            if isinstance(item, Exception):
                line = _line(item)
                answer = self.answer(line) if line is not None else None
                if answer is not None:
                    await self.write.send(SessionMessage(jsonrpc_message_adapter.validate_python(answer)))
                    continue
            return item

    def __aiter__(self) -> Answering:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> Answering:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool | None:
        return bool(await self.inner.__aexit__(exc_type, exc, tb))


async def run(app: MCPServer, answer: Answer) -> None:
    """Serve ``app`` over stdin and stdout until the client closes stdin,
    answering each line the SDK cannot read with ``answer(line)``."""
    low = getattr(app, "_lowlevel_server", None)  # (see the module's docstring)
    if low is None or not hasattr(low, "run"):
        await app.run_stdio_async()
        return
    async with stdio_server() as (read_stream, write_stream):
        await low.run(Answering(read_stream, write_stream, answer), write_stream, low.create_initialization_options())
