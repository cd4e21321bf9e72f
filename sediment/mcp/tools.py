"""The MCP tools, one per verb (``server.TOOL_VERBS``): their parameters
(the JSON schema the SDK derives from each signature, every parameter
described, every choice an enum), and what each answers; the resources; and
``build``/``serve``, which make the server of a root.

Every tool checks its input limits, then hands ``Tools.answer`` the work to
run on the root in a worker thread; the answer is text packed into
``budget`` with the same items as structured content. Arguments that do not
fit the schema are refused before any of that, as the ``invalid`` tool error
(``Checked``), never as the SDK's validation text. Tools and resources call
the verbs of the front door only (``server.Memory``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated, Any, Callable, Literal, TextIO

from .server import (DEFAULT_WAIT, DESCRIPTIONS, INSTRUCTIONS, Memory, Opener,  # first: it checks the SDK
                     Tools, bad_arguments, unreadable)

from pydantic import Field, ValidationError

from . import answers as A
from .retries import request_key
from ..errors import NotFound, SedimentError
from ..agent.workstate import Working
from ..model.fields import wikilink

import anyio  # (server.py has checked the SDK is installed)
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult

log = logging.getLogger("sediment")

# The parameters, described (their text is schema, not description). A choice
# whose values are fixed is a Literal (an enum the SDK's validation enforces);
# ``kind`` is the policy's list, an enum added to the schema at build time.
Budget = Annotated[int, Field(description="max chars, 200-50000")]
RequestId = Annotated[str | None, Field(description="retry with it: first answer")]
Id = Annotated[str, Field(description="a memory's id or name")]
Text = Annotated[str, Field(description="markdown: one point")]
NewText = Annotated[str | None, Field(description="new text (sections stay)")]
Title = Annotated[str | None, Field(description="default: the first line")]
Kind = Annotated[str | None, Field(description="its pool of decay")]
Tags = Annotated[list[str] | None, Field(description="all must match")]
NewTags = Annotated[list[str] | None, Field(description="topic words")]
Room = Annotated[str | None, Field(description="topic folder, a/b")]
Links = Annotated[list[str] | None, Field(description="names of related memories")]
Value = Annotated[float | None, Field(description="0-1, how much it matters")]
Source = Annotated[str | None, Field(description="origin (session id)")]
Event = Annotated[str | None, Field(description="an event: a newer note of it retires the older")]
Evidence = Annotated[list[str] | None, Field(description="why it is true")]
Since = Annotated[str | None, Field(description="a date or time (root's zone), 7d, yesterday")]
Layer = Annotated[Literal["shallow", "sediment", "bedrock", "archive"] | None, Field(description="a layer folder")]
Live = Annotated[Literal["shallow", "sediment", "bedrock"], Field(description="where it goes")]
Status = Annotated[Literal["active", "superseded", "archived", "purged"] | None,
                   Field(description="only these; purged ones only so")]
Limit = Annotated[int, Field(description="at most this many")]
Query = Annotated[str, Field(description="words, any language")]
Reason = Annotated[str, Field(description="why, in a line")]
Confirm = Annotated[bool, Field(description="yes, I mean it")]
Entity = Annotated[str | None, Field(description="naming this person")]
Entities = Annotated[dict[str, Any] | None, Field(description="person -> role(s)")]

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
    ``additionalProperties: true`` (what JSON schema assumes anyway), and the
    ``anyOf [X, null]`` of an optional parameter (it may be left out; the SDK
    still validates against the full model)."""
    if isinstance(schema, list):
        return [concise(x) for x in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: ({n: concise(p) for n, p in v.items()} if k in ("properties", "$defs") and isinstance(v, dict)
               else concise(v)) for k, v in schema.items()
           if k != "title" and not (k == "additionalProperties" and v is True)}
    alts = out.get("anyOf")
    if isinstance(alts, list) and len(alts) == 2 and {"type": "null"} in alts and out.get("default", 0) is None:
        (kept,) = [a for a in alts if a != {"type": "null"}]
        del out["anyOf"], out["default"]
        out = {**kept, **out}
    return out


class Checked(Tool):
    """A tool whose arguments, when they do not fit its schema (a missing
    one, an unknown one, a value of the wrong type or outside its enum), are
    refused as the ``invalid`` tool error of the documented shape, naming
    the argument and what it should be, instead of the SDK's validation
    text."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        unknown = sorted(set(arguments) - set(self.parameters.get("properties", {})))
        if unknown:
            return bad_arguments(self.name, [{"loc": (k,), "msg": f"is not a parameter of {self.name}",
                                              "input": arguments[k]} for k in unknown])
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                return bad_arguments(self.name, exc.__cause__.errors(include_url=False))
            raise


Register = Callable[[Callable[..., Any]], Callable[..., Any]]


def tools(t: Tools) -> list[Tool]:
    """Every tool on ``t``'s root, in the order ``tools/list`` gives them."""
    made: list[Tool] = []
    kinds = list(t.policy.kinds)

    def tool(fn: Callable[..., Any]) -> Callable[..., Any]:
        desc, annotations = DESCRIPTIONS[fn.__name__]
        made.append(Checked.from_function(fn, name=fn.__name__, description=desc, annotations=annotations))
        made[-1].parameters = concise(made[-1].parameters)
        kind = made[-1].parameters["properties"].get("kind")
        if kind is not None:
            kind["enum"] = kinds
        return fn

    _memory_tools(t, tool)
    _agent_tools(t, tool)
    return made


def _already(verb: str, e: Any) -> tuple[str, dict[str, Any]]:
    """The answer of a write found done already (a retry of it, most often)."""
    text, data = A.wrote(verb, e)
    return text + "\n(it was so already: nothing changed)", data


def _memory_tools(t: Tools, tool: Register) -> None:  # noqa: C901 - one small closure per tool
    """remember, recall, context, read, update, forget, restore, touch, supersede."""
    @tool
    async def remember(text: Text, title: Title = None, kind: Kind = None, tags: NewTags = None, room: Room = None,
                       links: Links = None, value: Value = None, source: Source = None, event: Event = None,
                       evidence: Evidence = None, entities: Entities = None, request_id: RequestId = None,
                       budget: Budget = WRITE_BUDGET) -> CallToolResult:
        fields = {k: v for k, v in dict(event=event, evidence=evidence).items() if v is not None}
        args = dict(text=text, title=title, kind=kind, tags=tags, room=room, links=links, value=value,
                    source=source, entities=entities, **fields)

        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            e = repo.add(text, title=title, kind=kind, tags=tags or (), room=room, links=links or (),
                         value=value, source=source, entities=entities, **fields)
            return A.wrote("remembered", e)
        return await t.answer("remember", work, args=args, budget=budget, request_id=request_id, write=True,
                              body=text)

    @tool
    async def recall(query: Query, limit: Limit = 10, kind: Kind = None, tags: Tags = None, room: Room = None,
                     layer: Layer = None, since: Since = None,
                     include_archive: Annotated[bool, Field(description="also archived ones")] = False,
                     entity: Entity = None,
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
            # only what the agent was shown, and had direct evidence for the query (a shared
            # root's hit by its label:id, which recalled skips: that root is never written)
            repo.recalled([h.ref for h in hits[:shown] if h.direct])
            return text, {"hits": [A.hit_data(h) for h in hits[:shown]], "more": more}
        return await t.answer("recall", work, args={}, budget=budget, query=query)

    @tool
    async def context(query: Annotated[str | None, Field(description="the task")] = None,
                      budget: Budget = 6_000) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            ctx = repo.context(query, budget=budget)
            data = ctx.to_dict()
            del data["text"]  # it is the text content; the data is what is in it
            return str(ctx), data
        return await t.answer("context", work, args={}, budget=budget, query=query)

    @tool
    async def read(id: Id, start: Annotated[int, Field(description="first character of the body")] = 0,
                   budget: Budget = 8_000) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            e = repo.get(id)
            return A.retired(e) if e.status == "purged" else A.body_range(e, start, budget)
        return await t.answer("read", work, args={}, budget=budget)

    @tool
    async def update(id: Id, expected: Annotated[str, Field(description="the version read gave")],
                     text: NewText = None, title: Title = None,
                     tags: Annotated[list[str] | None, Field(description="replaces the tags")] = None,
                     add_tags: Annotated[list[str] | None, Field(description="added")] = None,
                     remove_tags: Annotated[list[str] | None, Field(description="removed")] = None,
                     kind: Kind = None, value: Value = None, links: Links = None, source: Source = None,
                     request_id: RequestId = None,
                     budget: Budget = WRITE_BUDGET) -> CallToolResult:
        changes = {k: v for k, v in dict(text=text, title=title, tags=tags, add_tags=add_tags,
                                         remove_tags=remove_tags, kind=kind, value=value, links=links,
                                         source=source).items() if v is not None}

        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            return A.wrote("updated", repo.update(id, expected=expected, **changes))
        return await t.answer("update", work, args={"id": id, "expected": expected, **changes}, budget=budget,
                              request_id=request_id, write=True, body=text)

    @tool
    async def forget(id: Id, reason: Reason, purge: Annotated[bool, Field(description="retire for good")] = False,
                     erase: Annotated[bool, Field(description="purge and drop the text")] = False,
                     confirm: Confirm = False, request_id: RequestId = None,
                     budget: Budget = WRITE_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            e = repo.get(id)
            if purge or erase:
                verb = "erased" if erase else "purged"
                if confirm and e.status == "purged" and (e.meta.get("erased") or not erase):
                    return _already(verb, e)
                return A.wrote(verb, repo.purge(id, confirm=confirm, reason=reason, erase=erase))
            if e.layer == "archive" and e.status in ("archived", "superseded"):
                return _already("archived", e)
            return A.wrote("archived", repo.archive(id, reason=reason))
        return await t.answer("forget", work, args=dict(id=id, reason=reason, purge=purge, erase=erase,
                                                        confirm=confirm),
                              budget=budget, request_id=request_id, write=True)

    @tool
    async def restore(id: Id, layer: Live = "shallow", confirm: Confirm = False, request_id: RequestId = None,
                      budget: Budget = WRITE_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            e = repo.get(id)
            if e.status == "active" and e.layer == layer:
                return _already("restored", e)
            return A.wrote("restored", repo.restore(id, layer=layer, confirm=confirm))
        return await t.answer("restore", work, args=dict(id=id, layer=layer, confirm=confirm), budget=budget,
                              request_id=request_id, write=True)

    @tool
    async def touch(id: Id, outcome: Annotated[Literal["confirm", "refute"], Field(description="right or wrong")],
                    request_id: RequestId = None, budget: Budget = WRITE_BUDGET) -> CallToolResult:
        args = dict(id=id, outcome=outcome)

        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            # the request's key goes with the event itself: a retry of it is not counted again
            key = None if request_id is None else request_key("touch", request_id, args)
            return A.wrote("confirmed" if outcome == "confirm" else "refuted", repo.touch(id, outcome, request=key))
        return await t.answer("touch", work, args=args, budget=budget, request_id=request_id, write=True)

    @tool
    async def supersede(old_id: Annotated[str, Field(description="the memory it replaces")],
                        new_id: Annotated[str, Field(description="the newer memory")],
                        reason: Annotated[str, Field(description="why, in a line")] = "superseded",
                        request_id: RequestId = None, budget: Budget = WRITE_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            old, new = repo.get(old_id), repo.get(new_id)
            if old.status == "superseded" and wikilink(new.name) in (old.meta.get("superseded_by") or ()):
                text, data = _already("superseded", old)
            else:
                text, data = A.wrote("superseded", repo.supersede(old_id, new_id, reason=reason))
            first, _, rest = text.partition("\n")
            return "\n".join(x for x in (first + f" by {new_id}", rest) if x), data
        return await t.answer("supersede", work, args=dict(old_id=old_id, new_id=new_id, reason=reason),
                              budget=budget, request_id=request_id, write=True)


def _agent_tools(t: Tools, tool: Register) -> None:
    """about, profile, recent, working, observe, patrol, metabolize."""
    @tool
    async def about(topic: Annotated[str, Field(description="words, any language")],
                    budget: Budget = READ_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            known = repo.about(topic)
            # a line a person the topic names (their profile's first lines), then a line a memory
            lines = str(known).split("\n")[known.summary.count("\n") + 1:]
            text, shown, more = A.pack(known.summary, lines, budget=budget, narrow="a narrower topic")
            people = len(known.people)
            return text, {"topic": topic, "summary": known.summary, "people": list(known.people[:shown]),
                          "memories": [k.to_dict() for k in known.memories[:max(shown - people, 0)]],
                          "more": more}
        return await t.answer("about", work, args={}, budget=budget, query=topic)

    @tool
    async def profile(name: Annotated[str, Field(description="any of their names")],
                      budget: Budget = READ_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            return A.profile(repo.profile(name), budget)
        return await t.answer("profile", work, args={}, budget=budget, query=name)

    @tool
    async def recent(since: Since = None, limit: Limit = 20, kind: Kind = None, room: Room = None,
                     layer: Layer = None, status: Status = None, budget: Budget = READ_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            found = repo.list(since=A.since(since), limit=limit, kind=kind, room=room, layer=layer, status=status,
                              sort="updated")
            text, shown, more = A.pack(f"{len(found)} changed most recently" if found else "no memories",
                                       [A.entry_line(e) for e in found], budget=budget,
                                       narrow="since, kind, room, layer or status")
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
    async def observe(text: Annotated[str, Field(description="a message, as said")], request_id: RequestId = None,
                      budget: Budget = WRITE_BUDGET) -> CallToolResult:
        def work(repo: Memory) -> tuple[str, dict[str, Any]]:
            # the request's key is kept with the state it changed: a retry changes nothing again
            key = None if request_id is None else request_key("observe", request_id, {"text": text})
            seen = repo.observe(text, request=key)
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
    async def metabolize(dry_run: Annotated[bool, Field(description="false: apply the plan")] = True,
                         confirm: Annotated[bool, Field(description="allow archiving")] = False,
                         request_id: RequestId = None, budget: Budget = READ_BUDGET) -> CallToolResult:
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
        return await read(lambda repo: _markdown(repo, id))


def _markdown(repo: Memory, id: str) -> str:
    """A memory's file; a purged one's is not shown (it is gone but for a restore)."""
    e = repo.get(id)
    if e.status == "purged":
        raise NotFound(f"{e.id} is purged: restore(confirm=true) brings it back", id=e.id)
    return repo.markdown(id)


def build(root: str | os.PathLike[str], *, open: Opener, wait: float = DEFAULT_WAIT,
          watch: bool = False) -> tuple[MCPServer, Tools]:
    """The server for ``root`` (not started), which ``open`` opens
    (``Repository``) after the first request is answered, or at the first
    tool call; ``watch``: keeping the index current while people edit."""
    from .._version import __version__
    state = Tools(Path(root).absolute(), open=open, wait=wait, watch=watch)

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
    the client closes the connection, watched: an agent's session lasts
    hours, and the person edits the same folder meanwhile (the journal tells
    only other processes' writes)."""
    from . import stdio
    app, state = build(root, open=open, wait=wait, watch=True)
    try:
        anyio.run(stdio.run, app, unreadable)
    finally:
        state.opening.close()


def serve_http(root: str | os.PathLike[str], *, open: Opener, wait: float = DEFAULT_WAIT, host: str = "127.0.0.1",
               port: int | None = None, token_file: str | os.PathLike[str] | None = None,
               out: TextIO | None = None, err: TextIO | None = None) -> None:
    """Serve ``root`` over MCP's streamable HTTP at ``http://host:port/mcp``
    to every client with the bearer token (``http``) until SIGINT or
    SIGTERM. One root for every client, opened at once and watched (people
    edit it while the server runs for days). Says where on ``out``, warns on
    ``err``. Raises ``InvalidInput`` for a port that cannot be had or a token
    file without a token, ``StorageError`` for a token file that cannot be
    read or made."""
    import sys

    from . import http
    app, state = build(root, open=open, wait=wait, watch=True)
    tok = http.token(state.root, token_file)
    sock = http.bind(host, port)
    try:
        state.opening.start()
        http.run(app, tok, sock, host=host, answer=unreadable,
                 ready=lambda: http.say(state.root, http.url(host, sock), tok, host=host, out=out or sys.stdout,
                                        err=err or sys.stderr))
    finally:
        sock.close()
        state.opening.close()
