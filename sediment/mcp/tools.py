"""The MCP tools, one per verb (``server.TOOL_VERBS``): their parameters
(the JSON schema the SDK derives from each signature), and what each answers;
the resources; and ``build``/``serve``, which make the server of a root.

Every tool checks its input limits, then hands ``Tools.answer`` the work to
run on the root in a worker thread; the answer is text packed into
``budget`` with the same items as structured content. Tools and resources
call the verbs of the front door only (``server.Memory``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated, Any, Callable, Literal

from .server import (DEFAULT_WAIT, DESCRIPTIONS, INSTRUCTIONS, Memory, Opener,  # first: it checks the SDK
                     Tools)

from pydantic import Field

from . import answers as A
from ..errors import SedimentError
from ..agent.workstate import Working

import anyio  # (server.py has checked the SDK is installed)
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult

log = logging.getLogger("sediment")

# The parameters every tool shares (their text is schema, not description).
Budget = Annotated[int, Field(description="characters of the answer (200-50000)")]
RequestId = Annotated[str | None, Field(description="a retry with the same id returns the first answer")]
Tags = Annotated[list[str] | None, Field(description="all must match")]
Since = Annotated[str | None, Field(description="ISO date or time with offset")]
Entity = Annotated[str | None, Field(description="only memories naming this person (any of their names)")]
Entities = Annotated[dict[str, str | list[str]] | None,
                     Field(description="people, organisations, places named -> their role(s)")]

WRITE_BUDGET = 2_000
READ_BUDGET = 4_000


def _working_text(state: Working) -> str:
    """Working memory as lines: the open items, oldest first, and the mood."""
    lines = [f"open: {i.text} (since {i.created[:10]})" for i in state.items] or ["no open todos or promises"]
    if state.mood is not None:
        lines.append(f"mood: {state.mood.text} (until {state.mood.until[:16]})")
    return "\n".join(lines)


def concise(schema: Any) -> Any:
    """A JSON schema without what only costs the agent's context: titles,
    and the ``anyOf [X, null]`` of an optional parameter (it may be left out;
    the SDK still validates against the full model)."""
    if isinstance(schema, list):
        return [concise(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: ({n: concise(p) for n, p in v.items()} if k in ("properties", "$defs") and isinstance(v, dict)
               else concise(v)) for k, v in schema.items() if k != "title"}
    alts = out.get("anyOf")
    if isinstance(alts, list) and len(alts) == 2 and {"type": "null"} in alts and out.get("default", 0) is None:
        (kept,) = [a for a in alts if a != {"type": "null"}]
        del out["anyOf"], out["default"]
        out = {**kept, **out}
    return out


Register = Callable[[Callable[..., Any]], Callable[..., Any]]


def tools(t: Tools) -> list[Tool]:
    """Every tool on ``t``'s root, in the order ``tools/list`` gives them."""
    made: list[Tool] = []

    def tool(fn: Callable[..., Any]) -> Callable[..., Any]:
        desc, annotations = DESCRIPTIONS[fn.__name__]
        made.append(Tool.from_function(fn, name=fn.__name__, description=desc, annotations=annotations))
        made[-1].parameters = concise(made[-1].parameters)
        return fn

    _memory_tools(t, tool)
    _agent_tools(t, tool)
    return made


def _memory_tools(t: Tools, tool: Register) -> None:  # noqa: C901 - one small closure per tool
    """remember, recall, context, read, update, forget, touch, supersede."""
    @tool
    async def remember(text: str, title: str | None = None, kind: str | None = None, tags: list[str] | None = None,
                       room: str | None = None, links: list[str] | None = None, value: float | None = None,
                       source: str | None = None, entities: Entities = None, request_id: RequestId = None,
                       budget: Budget = WRITE_BUDGET) -> CallToolResult:
        args = dict(text=text, title=title, kind=kind, tags=tags, room=room, links=links, value=value,
                    source=source, entities=entities)

        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            e = repo.add(text, title=title, kind=kind, tags=tags or (), room=room, links=links or (),
                         value=value, source=source, entities=entities)
            return A.wrote("remembered", e)
        return await t.answer("remember", work, args=args, budget=budget, request_id=request_id, write=True,
                              body=text)

    @tool
    async def recall(query: str, limit: int = 10, kind: str | None = None, tags: Tags = None,
                     room: str | None = None, layer: str | None = None, since: Since = None,
                     include_archive: bool = False, entity: Entity = None,
                     budget: Budget = READ_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            hits = repo.search(query, limit=limit, kind=kind, tags=tags, room=room, layer=layer,
                               since=A.since(since), include_archive=include_archive, record=False,
                               entity=entity)
            lines = [A.hit_line(i + 1, h) for i, h in enumerate(hits)]
            q = repr(query) if len(query) <= 80 else repr(query[:80] + "…")
            text, shown, more = A.pack(f"{len(hits)} found for {q}" if hits else f"nothing found for {q}",
                                       lines, budget=budget,
                                       narrow="kind, tags, room or since, or a larger budget")
            repo.recalled([h.entry.id for h in hits[:shown]])  # only what the agent was shown
            return text, {"hits": [A.hit_data(h) for h in hits[:shown]], "more": more}
        return await t.answer("recall", work, args={}, budget=budget, query=query)

    @tool
    async def context(query: str | None = None, budget: Budget = 6_000) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            ctx = repo.context(query, budget=budget)
            data = ctx.to_dict()
            del data["text"]  # it is the text content; the data is what is in it
            return str(ctx), data
        return await t.answer("context", work, args={}, budget=budget, query=query)

    @tool
    async def read(id: str, start: int = 0, budget: Budget = 8_000) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            return A.body_range(repo.get(id), start, budget)
        return await t.answer("read", work, args={}, budget=budget)

    @tool
    async def update(id: str, expected: Annotated[str, Field(description="the version read gave")],
                     text: str | None = None, title: str | None = None, tags: list[str] | None = None,
                     kind: str | None = None, value: float | None = None, links: list[str] | None = None,
                     source: str | None = None, request_id: RequestId = None,
                     budget: Budget = WRITE_BUDGET) -> CallToolResult:
        changes = {k: v for k, v in dict(text=text, title=title, tags=tags, kind=kind, value=value, links=links,
                                         source=source).items() if v is not None}

        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            return A.wrote("updated", repo.update(id, expected=expected, **changes))
        return await t.answer("update", work, args={"id": id, "expected": expected, **changes}, budget=budget,
                              request_id=request_id, write=True, body=text)

    @tool
    async def forget(id: str, reason: str, purge: bool = False, confirm: bool = False,
                     request_id: RequestId = None, budget: Budget = WRITE_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            if purge:
                return A.wrote("purged", repo.purge(id, confirm=confirm, reason=reason))
            return A.wrote("archived", repo.archive(id, reason=reason))
        return await t.answer("forget", work, args=dict(id=id, reason=reason, purge=purge, confirm=confirm),
                              budget=budget, request_id=request_id, write=True)

    @tool
    async def touch(id: str, outcome: Literal["confirm", "refute"], request_id: RequestId = None,
                    budget: Budget = WRITE_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            return A.wrote("confirmed" if outcome == "confirm" else "refuted", repo.touch(id, outcome))
        return await t.answer("touch", work, args=dict(id=id, outcome=outcome), budget=budget,
                              request_id=request_id, write=True)

    @tool
    async def supersede(old_id: str, new_id: str, reason: str = "superseded", request_id: RequestId = None,
                        budget: Budget = WRITE_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            text, data = A.wrote("superseded", repo.supersede(old_id, new_id, reason=reason))
            return text + f" by {new_id}", data
        return await t.answer("supersede", work, args=dict(old_id=old_id, new_id=new_id, reason=reason),
                              budget=budget, request_id=request_id, write=True)


def _agent_tools(t: Tools, tool: Register) -> None:
    """about, recent, working, observe, patrol, metabolize."""
    @tool
    async def about(topic: str, budget: Budget = READ_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            known = repo.about(topic)
            lines = str(known).split("\n")[known.summary.count("\n") + 1:]  # a line a memory, after the summary
            text, shown, more = A.pack(known.summary, lines, budget=budget, narrow="a narrower topic")
            return text, {"topic": topic, "summary": known.summary,
                          "memories": [k.to_dict() for k in known.memories[:shown]], "more": more}
        return await t.answer("about", work, args={}, budget=budget, query=topic)

    @tool
    async def recent(since: Since = None, limit: int = 20, kind: str | None = None, room: str | None = None,
                     layer: str | None = None, budget: Budget = READ_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            found = repo.list(since=A.since(since), limit=limit, kind=kind, room=room, layer=layer,
                              sort="updated")
            text, shown, more = A.pack(f"{len(found)} changed most recently" if found else "no memories",
                                       [A.entry_line(e) for e in found], budget=budget,
                                       narrow="since, kind, room or layer")
            return text, {"memories": [A.entry_data(e) for e in found[:shown]], "more": more}
        return await t.answer("recent", work, args={}, budget=budget)

    @tool
    async def working(budget: Budget = READ_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            state = repo.working()
            text, _ = A.clip(_working_text(state), budget=budget, narrow="recall")
            return text, state.to_dict()
        return await t.answer("working", work, args={}, budget=budget)

    @tool
    async def observe(text: str, request_id: RequestId = None, budget: Budget = WRITE_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            seen = repo.observe(text)
            lines = [f"{what} {i.text!r}" for what, items in (("opened", seen.opened), ("closed", seen.closed),
                                                              ("renewed", seen.renewed), ("dropped", seen.dropped))
                     for i in items]
            said = "\n".join(lines) or "nothing to keep in working memory"
            out, _ = A.clip(said + "\n" + _working_text(seen.working), budget=budget, narrow="working")
            return out, seen.to_dict()
        return await t.answer("observe", work, args={"text": text}, budget=budget, request_id=request_id,
                              write=True, body=text)

    @tool
    async def patrol(budget: Budget = READ_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            report = repo.patrol()
            items = [f"{section}: {i.what} [{', '.join(i.ids)}] → {i.action}"
                     for section, found in report.sections.items() for i in found]
            text, shown, more = A.pack(str(report), items, budget=budget,
                                       narrow="the report (resource sediment://patrol/latest)")
            return text, {**report.to_dict(), "more": more}
        return await t.answer("patrol", work, args={}, budget=budget, write=True)

    @tool
    async def metabolize(dry_run: bool = True, confirm: bool = False, request_id: RequestId = None,
                         budget: Budget = READ_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            plan = repo.metabolize(dry_run=dry_run, confirm=confirm)
            text, more = A.clip(str(plan), budget=budget, narrow="the report in _system/reports/")
            data = plan.to_dict()
            data["moves"] = data["moves"][:50]
            return text, {**data, "more_lines": more}
        return await t.answer("metabolize", work, args=dict(dry_run=dry_run, confirm=confirm), budget=budget,
                              request_id=request_id, write=not dry_run)


def resources(app: MCPServer, t: Tools) -> None:
    """The map, the latest patrol report and each memory's file, read through
    the verbs once the root is open."""
    from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError

    async def read(what: Callable[[Memory], str]) -> str:
        try:
            repo = await t.opening.get(t.wait)
            return await anyio.to_thread.run_sync(what, repo)
        except KeyError as exc:  # NotFound
            raise ResourceNotFoundError(str(exc)) from exc
        except SedimentError as exc:
            raise ResourceError(f"{exc.code}: {exc.message}") from exc

    @app.resource("sediment://map", name="map", description="The palace map (MAP.md): rooms and topics.",
                  mime_type="text/markdown")
    async def palace_map() -> str:
        name = t.policy.map_file
        return await read(lambda repo: repo.report("map")
                          or f"No {name} yet: `sediment map` (the library's map()) writes it.")

    @app.resource("sediment://patrol/latest", name="patrol", description="The latest patrol report.",
                  mime_type="text/markdown")
    async def patrol_report() -> str:
        return await read(lambda repo: repo.report("patrol") or "No patrol report yet: call the patrol tool.")

    @app.resource("sediment://memory/{id}", name="memory", description="A memory's file, by id or name.",
                  mime_type="text/markdown")
    async def memory(id: str) -> str:
        return await read(lambda repo: repo.markdown(id))


def build(root: str | os.PathLike[str], *, open: Opener, wait: float = DEFAULT_WAIT) -> tuple[MCPServer, Tools]:
    """The server for ``root`` (not started), which ``open`` opens
    (``Repository``) after the first request is answered, or at the first
    tool call."""
    from .._version import __version__
    state = Tools(Path(root).absolute(), open=open, wait=wait)

    async def open_after_first_request(ctx: Any, call_next: Any) -> Any:
        try:
            return await call_next(ctx)
        finally:
            state.opening.start()

    app: MCPServer = MCPServer("sediment", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING",
                               tools=tools(state), middleware=[open_after_first_request])
    resources(app, state)
    return app, state


def serve(root: str | os.PathLike[str], *, open: Opener, wait: float = DEFAULT_WAIT) -> None:
    """Serve ``root`` (opened by ``open``: ``Repository``) over stdio until
    the client closes the connection."""
    app, state = build(root, open=open, wait=wait)
    try:
        app.run("stdio")
    finally:
        state.opening.close()

