"""The HTTP side of the page: starlette routes behind one guard.

starlette and uvicorn rather than the standard library's ``http.server``: the
``mcp`` extra already brings both, they are well kept, and server-sent events
(one long-lived stream per open page) want an async server; by hand that is a
thread per page and our own routing, headers and disconnect handling.

The guard: every request carries the token given at start (``?token=``) or
gets 403; only GET and HEAD are answered (nothing here writes anything); each
response forbids framing, sniffing, caching, referrers (the token is in the
URL) and any script but the page's own files (CSP). The routes answer from the
nebula or from public verbs of the repository (``shape``), never recording a
recall.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from typing import TYPE_CHECKING, Any, AsyncIterator, Callable

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import InvalidInput, NotFound, SedimentError
from . import shape
from .live import Hub
from .nebula import LIMIT, Nebula

if TYPE_CHECKING:
    from ..repository import Repository

PING_SECONDS = 15.0  # a comment on the event stream, so a dead page is noticed
HEADERS = {
    "Content-Security-Policy": ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
                                "frame-ancestors 'none'"),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class Guard:
    """403 without the token, 405 for anything but GET/HEAD, safe headers on
    every answer (an ASGI middleware, so it guards the static files too)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        given = request.query_params.get("token", "")
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            await self._answer(PlainTextResponse("403: this page needs the token printed by sediment view",
                                                 status_code=403), scope, receive, send)
            return
        if scope["method"] not in ("GET", "HEAD"):
            await self._answer(PlainTextResponse("405: the page is read-only", status_code=405,
                                                 headers={"Allow": "GET, HEAD"}), scope, receive, send)
            return

        async def send_safe(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + [
                    (k.lower().encode(), v.encode()) for k, v in HEADERS.items()]
            await send(message)

        await self.app(scope, receive, send_safe)

    async def _answer(self, response: Response, scope: Scope, receive: Receive, send: Send) -> None:
        response.headers.update(HEADERS)
        await response(scope, receive, send)


def _limit(request: Request) -> int:
    raw = request.query_params.get("limit", "")
    try:
        return max(1, int(raw)) if raw else LIMIT
    except ValueError:
        raise InvalidInput(f"limit must be a whole number, not {raw!r}", what="limit") from None


def _dumps(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8")


def _json(data: Any) -> Response:
    return Response(_dumps(data), media_type="application/json")


class Pictures:
    """The nebula's payload as bytes, made once per version (and limit): every
    page opened, or opened again, between two changes gets the same bytes
    (10,000 memories are 2 MB of JSON, a third of a second to write)."""

    def __init__(self, nebula: Nebula, extra: dict[str, Any]) -> None:
        self.nebula = nebula
        self.extra = extra
        self._last: tuple[tuple[int, int], bytes] = ((-1, -1), b"")

    def get(self, limit: int) -> bytes:
        key, body = self._last
        if key == (self.nebula.version, limit):
            return body
        payload = self.nebula.payload(limit)
        body = _dumps({**payload, **self.extra})
        self._last = ((payload["version"], limit), body)
        return body


def app(repo: "Repository", nebula: Nebula, hub: Hub, token: str,
        on_picture: Callable[[], None] | None = None) -> Starlette:
    """The page's application for one repository; ``on_picture()`` is called
    each time a page was given the nebula."""
    index = shape.page(f"?token={token}")
    pictures = Pictures(nebula, {"root": repo.root.name, "exported": False})
    pictures.get(LIMIT)  # ready before the first page asks

    def home(request: Request) -> Response:
        return HTMLResponse(index)

    def api_nebula(request: Request) -> Response:
        body = pictures.get(_limit(request))
        if on_picture is not None:
            on_picture()
        return Response(body, media_type="application/json")

    def api_room(request: Request) -> Response:
        return _json(nebula.room(request.query_params.get("key", ""), _limit(request)))

    def api_memory(request: Request) -> Response:
        return _json(shape.card(repo, request.path_params["id"]))

    def api_search(request: Request) -> Response:
        return _json(shape.search(repo, request.query_params.get("q", "")))

    def api_panel(request: Request) -> Response:
        what = shape.PANELS.get(request.path_params["name"])
        if what is None:
            raise NotFound(f"no panel {request.path_params['name']!r}")
        return _json(what(repo))

    async def api_events(request: Request) -> Response:
        client = hub.subscribe()

        async def stream() -> AsyncIterator[str]:
            try:
                yield "retry: 1000\n\n"
                yield f"event: hello\ndata: {json.dumps({'version': nebula.version})}\n\n"
                while True:
                    try:
                        data = await asyncio.wait_for(client[1].get(), PING_SECONDS)
                    except asyncio.TimeoutError:
                        yield ": ping\n\n"
                        continue
                    yield f"data: {data}\n\n"
            finally:
                hub.unsubscribe(client)

        return StreamingResponse(stream(), media_type="text/event-stream", headers={"X-Accel-Buffering": "no"})

    def error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, SedimentError)
        status = 404 if isinstance(exc, NotFound) else 400 if isinstance(exc, ValueError) else 500
        return JSONResponse({"error": exc.message, "code": exc.code}, status_code=status)

    routes = [
        Route("/", home), Route("/api/nebula", api_nebula), Route("/api/room", api_room),
        Route("/api/memory/{id:path}", api_memory), Route("/api/search", api_search),
        Route("/api/panel/{name}", api_panel), Route("/api/events", api_events),
        Mount("/static", StaticFiles(directory=shape.STATIC), name="static"),
    ]
    application = Starlette(routes=routes, exception_handlers={SedimentError: error})
    application.add_middleware(Guard, token=token)
    return application
