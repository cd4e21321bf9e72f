"""The MCP server's core: ``sediment serve`` (extra ``[mcp]``), over
stdio (``stdio``) or streamable HTTP (``http``: one process, one root, many
clients). The tools are ``tools``'; this module is what they share: the root
opening in the background, the input limits, the one place errors become
tool errors, the remembered answers of write tools.

A compact tool set, each tool one verb (``TOOL_VERBS``); answers are compact
text that carries ids, packed into a ``budget`` (``answers``), with the same
items as structured content. The server knows the front door only as
``Memory``, the verbs it calls: ``sediment serve`` hands it ``Repository``.

It starts at once: the index of a large root takes seconds to load, and
clients give up on a server that does not answer ``initialize``. So nothing
is loaded before the first request has been answered; then a background
thread opens the root (not the SDK's lifespan hook, which the handshake waits
for); over HTTP, a long-lived server, it opens at once; both are watched. A tool that
needs the root meanwhile waits a short bound (``--wait``) and then answers
the error ``loading`` with how far the load is ("index loading, N of M
notes"), which an agent can retry. Library calls run in worker
threads, never on the event loop. The SDK's stdio transport points fd 1 at
stderr while it serves, so nothing but protocol reaches stdout.

Errors: every tool answer goes through ``Tools.answer``, the one boundary where
a library error becomes a tool error carrying its stable code and message
(the SDK would hide the message of any exception but its own ``ToolError``).
Input limits (query length, body size, budget) are checked there before any
work. What comes before it is refused in the same shape, whatever the
transport: arguments that do not fit a tool's schema (``bad_arguments``, code
``invalid``), and a request the SDK's parser cannot read (``unreadable``: a
lone surrogate, a line that is not JSON), which the SDK would drop unanswered.
Write tools take an optional ``request_id``: a retry with the same one
returns the first call's answer (``retries``); where that answer was lost (the
server died between the write and keeping it), the write runs again and still
applies once (``tools``: a request key recorded with the change, or a change
found made). A write, once started, is not cancelled when the client goes
away: it finishes, and is remembered.
"""

from __future__ import annotations

import builtins
import datetime as _dt
import json
import logging
import os
import threading
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Protocol

from . import answers as A
from ..model.entry import Entry
from ..errors import Loading, NotInstalled, SedimentError, StorageError, TooLarge, install_hint
from ..model.policy import DEFAULTS, Policy
from ..disk.policyfile import load as load_policy
from ..search.query import SearchHit
from .retries import Replies, check_id
from ..store.system import SYSTEM
from ..agent.about import About
from ..agent.context import Context
from ..agent.patrol import Report
from ..agent.profile import Profile
from ..agent.workstate import Observed, Working
from ..verbs.metabolism import Plan
from ..progress import Progress

try:
    import anyio
    from mcp.types import CallToolResult, TextContent, ToolAnnotations
except ImportError as exc:  # pragma: no cover - the extra is installed in the test environment
    raise NotInstalled(f"sediment serve needs the MCP SDK (mcp 2.x): {install_hint('mcp')}") from exc

log = logging.getLogger("sediment")

MAX_QUERY_CHARS = 2_000
DEFAULT_WAIT = 2.0  # seconds a tool waits for the index before answering "loading"

# tool → the Repository verb it is (the structure test checks both ways)
TOOL_VERBS = {
    "remember": "add", "recall": "search", "context": "context", "read": "get", "update": "update",
    "forget": "archive", "restore": "restore", "touch": "touch", "supersede": "supersede", "about": "about",
    "profile": "profile", "recent": "list", "working": "working", "observe": "observe", "patrol": "patrol",
    "metabolize": "metabolize",
}

INSTRUCTIONS = """\
Long-term memory in markdown notes that persist across sessions.
- At the start of a task call context with the task as query.
- Before answering from memory, recall; read gives a note's whole text and version.
- When something proved true or was decided, remember it: one point per note, with a kind.
- When a memory proved right or wrong, touch it (confirm/refute); update passes the version
  you read; supersede when a newer memory replaces an older one.
- Pass each user message to observe: it keeps the open todos and promises (working).
Answers carry ids; a cut answer ends with "N more — narrow with …"."""

# (destructive and idempotent hints mean something only for a tool that writes: the spec's
# "meaningful only when readOnlyHint == false"; left out, they leave the listing shorter)
RO = ToolAnnotations(read_only_hint=True, open_world_hint=False)


def _writes(*, destructive: bool = False, idempotent: bool = False) -> ToolAnnotations:
    return ToolAnnotations(read_only_hint=False, destructive_hint=destructive, idempotent_hint=idempotent,
                           open_world_hint=False)


# name → (description, annotations). Together under ~3,000 characters (a test measures).
DESCRIPTIONS: dict[str, tuple[str, ToolAnnotations]] = {
    "remember": ("Store one fact, decision, rule or lesson that proved true, with a kind and tags. "
                 "Returns its id.", _writes()),
    "recall": ("Search memory by words, any language: ids, titles and snippets, best first; a hit "
               "it answers counts as recalled.", RO),
    "context": ("A memory block to start a task: core memories, what query recalls, then the strongest "
                "rest, in budget characters.", RO),
    "read": ("One memory by id or name: its fields, version and body from character start (a long note "
             "comes in parts).", RO),
    "update": ("Change a memory in place. expected is the version you read: changed since, the edit "
               "is refused (conflict), nothing written.", _writes()),
    "forget": ("Archive a wrong or obsolete memory, with a reason. purge=true retires it for good, "
               "erase=true drops its text too; both need confirm=true.",
               _writes(destructive=True, idempotent=True)),
    "restore": ("Undo a forget: an archived, superseded or purged (confirm=true) memory becomes active "
                "again in layer.", _writes(idempotent=True)),
    "touch": ("Record that a memory proved right (confirm: stronger) or wrong (refute: archived at the "
              "next metabolize).", _writes()),
    "supersede": ("Retire old_id in favour of new_id, a newer memory of the same thing; both stay "
                  "readable, linked.", _writes(idempotent=True)),
    "about": ("What memory holds on a topic: how many notes, where, how strong, how recent.", RO),
    "profile": ("A person by any of their names: their note, then the memories naming them by group, "
                "roles counted.", RO),
    "recent": ("Memories by last change, newest first; since, kind, room, layer, status narrow it.", RO),
    "working": ("Working memory: the open todos and promises of this conversation, and the mood.", RO),
    "observe": ("Pass each message: a todo or promise in it (remember to…, 别忘了…) opens an item of "
                "working memory, a 'done' closes its match.", _writes()),
    "patrol": ("Memory hygiene: long unrecalled notes, duplicates, conflicts, unsorted inbox, each with ids "
               "and what to do; writes a report.", _writes(idempotent=True)),
    "metabolize": ("Plan promotions and decay; dry_run=false applies the plan (archiving needs "
                   "confirm=true).", _writes(destructive=True, idempotent=True)),
}



class Memory(Protocol):
    """The verbs of ``Repository`` the server calls."""

    def close(self) -> None: ...

    def add(self, text: str, *, title: str | None = ..., room: str | None = ..., tags: Iterable[str] = ...,
            kind: str | None = ..., value: float | None = ..., source: str | None = ...,
            links: Iterable[str] = ..., entities: Mapping[str, Any] | None = ..., **fields: Any) -> Entry: ...

    def search(self, query: str, *, limit: int = ..., layer: str | None = ..., room: str | None = ...,
               tags: list[str] | None = ..., kind: str | None = ..., since: _dt.datetime | str | None = ...,
               include_archive: bool = ..., record: bool = ..., entity: str | None = ...
               ) -> builtins.list[SearchHit]: ...

    def recalled(self, ids: Iterable[str]) -> None: ...

    def context(self, query: str | None = ..., *, budget: int = ...) -> Context: ...

    def get(self, id: str) -> Entry: ...

    def markdown(self, id: str) -> str: ...

    def report(self, kind: str = ...) -> str | None: ...

    def update(self, id: str, *, expected: str | None = ..., **changes: Any) -> Entry: ...

    def archive(self, id: str, *, reason: str) -> Entry: ...

    def purge(self, id: str, *, confirm: bool = ..., reason: str = ..., erase: bool = ...) -> Entry: ...

    def restore(self, id: str, *, layer: str = ..., confirm: bool = ...) -> Entry: ...

    def touch(self, id: str, outcome: str, *, request: str | None = ...) -> Entry: ...

    def supersede(self, old_id: str, new_id: str, reason: str = ...) -> Entry: ...

    def about(self, topic: str) -> About: ...

    def profile(self, name: str) -> Profile: ...

    def list(self, *, layer: str | None = ..., room: str | None = ..., kind: str | None = ...,
             status: str | None = ..., since: _dt.datetime | str | None = ..., sort: str = ...,
             limit: int | None = ...) -> builtins.list[Entry]: ...

    def working(self) -> Working: ...

    def observe(self, text: str, *, request: str | None = ...) -> Observed: ...

    def patrol(self) -> Report: ...

    def metabolize(self, *, dry_run: bool = ..., confirm: bool = ...) -> Plan: ...


class Opener(Protocol):
    """How the server opens its root: ``Repository`` itself."""

    def __call__(self, root: Path, *, create: bool, progress: Progress, watch: bool = ...) -> Memory: ...


Work = Callable[[Memory], tuple[str, dict[str, Any]]]


class Opening:
    """The root, opened (by ``open``) in a background thread (``start``);
    ``get`` waits for it a short bound. ``watch``: keep the index current
    while people edit the folder (a long-lived server: ``--http``)."""

    def __init__(self, root: Path, open: Opener, *, watch: bool = False) -> None:
        self.root = root
        self.open = open
        self.watch = watch
        self.done = threading.Event()
        self.repo: Memory | None = None
        self.error: SedimentError | None = None
        self.seen = (0, 0)  # notes loaded, notes found
        self._started = False
        self._mutex = threading.Lock()
        self.after_open: Callable[[], object] | None = None  # housekeeping once the root is open

    def start(self) -> None:
        with self._mutex:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._open, name="sediment-open", daemon=True).start()

    def _progress(self, stage: str, done: int, total: int) -> None:
        if stage == "open":
            self.seen = (done, total)

    def _open(self) -> None:
        # (Not niced: a thread's nice value ranks it below every other process on
        # the machine, which delays the first recall, while what it shares with the
        # event loop is the GIL, handed back every switch interval anyway.)
        try:
            self.repo = self.open(self.root, create=False, progress=self._progress, watch=self.watch)
            if self.after_open is not None:
                self.after_open()
        except SedimentError as exc:
            self.error = exc
        except OSError as exc:
            self.error = StorageError(f"cannot open {self.root}: {exc}", path=str(self.root))
        except Exception as exc:  # noqa: BLE001 - reported to every tool call instead of a silent hang
            log.exception("sediment: opening %s failed", self.root)
            self.error = SedimentError(f"cannot open {self.root}: {type(exc).__name__}: {exc}")
        finally:
            self.done.set()

    async def get(self, wait: float) -> Memory:
        self.start()
        if not self.done.is_set() and wait > 0:
            # waited in a worker thread, which holds no GIL while it waits: polling
            # from the event loop would take the GIL from the loading thread 50 times a second
            await anyio.to_thread.run_sync(self.done.wait, wait, abandon_on_cancel=True)
        if self.error is not None:
            raise self.error
        if self.repo is None:
            n, m = self.seen
            raise Loading(f"index loading, {n} of {m} notes; call again in a few seconds" if m else
                          "index loading (finding the notes); call again in a few seconds", done=n, total=m)
        return self.repo

    def close(self) -> None:
        if self.repo is not None:
            self.repo.close()


def ok(text: str, data: dict[str, Any]) -> CallToolResult:
    """A tool's answer: ``text``, and ``data`` as structured content."""
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=data)


def failed(code: str, message: str) -> CallToolResult:
    """A tool error of the documented shape: ``error CODE: MESSAGE`` as text,
    ``{"error": {"code", "message"}}`` as structured content."""
    return CallToolResult(content=[TextContent(type="text", text=f"error {code}: {message}")],
                          structured_content={"error": {"code": code, "message": message}}, is_error=True)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:79] + "…"


def bad_arguments(tool: str, errors: Iterable[Mapping[str, Any]]) -> CallToolResult:
    """The ``invalid`` tool error for arguments that do not fit a tool's
    schema, in words: which argument, what it should be, what it was
    (``errors``: pydantic's error list, or the same shape). Whatever the
    transport, every refusal of a call's arguments is this."""
    said: list[str] = []
    for err in errors:
        where = ".".join(str(x) for x in err.get("loc", ())) or "arguments"
        if err.get("type") == "missing":
            said.append(f"{where} is required")
            continue
        msg = str(err.get("msg", "is not valid"))
        said.append(f"{where}: {msg[:1].lower()}{msg[1:]}, not {_shown(err.get('input'))}")
    return failed("invalid", f"{tool}: " + "; ".join(dict.fromkeys(said)))


PARSE_ERROR, INVALID_PARAMS = -32700, -32602  # JSON-RPC's codes


def _surrogate(value: Any, where: str) -> tuple[str, str] | None:
    """Where in ``value`` a string holds a lone surrogate, and which one."""
    if isinstance(value, str):
        bad = next((c for c in value if "\ud800" <= c <= "\udfff"), None)
        return None if bad is None else (where, f"\\u{ord(bad):04x}")
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for k, v in items:
        found = _surrogate(k, where) or _surrogate(v, f"{where}.{k}")
        if found:
            return found
    return None


def unreadable(line: str) -> dict[str, Any] | None:
    """The answer to a line of JSON-RPC the SDK could not read (it drops such
    a line, and the client waits for an answer forever), as a JSON-RPC
    message: a parse error (id null) for what is not JSON; for a request
    whose text holds a lone surrogate (JSON can escape one, no Unicode text
    can hold it) or that does not fit the protocol, the ``invalid`` tool
    error (``tools/call``) or an invalid-params error (any other method).
    None where there is nothing to answer (a notification, a response)."""
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "parse error: not JSON"}}
    if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
        return None
    rid = msg.get("id")
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        return None
    method, params = msg["method"], msg.get("params")
    found = _surrogate(params, "params")
    if method == "tools/call" and isinstance(params, dict):
        method = str(params.get("name", method)).encode("utf-8", "backslashreplace").decode()
        found = _surrogate(params.get("arguments"), "arguments") or found
    message = (f"{method}: {found[0]} holds a lone surrogate ({found[1]}), which is not text: send it as UTF-8"
               if found else f"{method}: the request does not fit the protocol")
    if msg["method"] == "tools/call":
        result = failed("invalid", message).model_dump(by_alias=True, exclude_unset=True, mode="json")
        return {"jsonrpc": "2.0", "id": rid, "result": result}
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": INVALID_PARAMS, "message": message}}


class Tools:
    """The state the tools share: the opening root (opened by ``open``:
    ``Repository``), the policy's input limits, the remembered answers, the
    writes in flight."""

    def __init__(self, root: Path, *, open: Opener, wait: float = DEFAULT_WAIT, watch: bool = False) -> None:
        self.root = root
        self.wait = wait
        self.opening = Opening(root, open, watch=watch)
        self.policy = self._policy()
        cache = root / SYSTEM / "cache" / "requests"
        self.replies = Replies(cache if os.access(root / SYSTEM, os.W_OK) else None)
        self._inflight: dict[tuple[str, str], anyio.Lock] = {}
        self.opening.after_open = self.replies.prune

    def _policy(self) -> Policy:
        try:  # for the input limits, before the root is open; an invalid file is reported by every tool
            return load_policy(self.root / SYSTEM / "policy.yaml", None, create=False)
        except SedimentError:
            return DEFAULTS

    def check_query(self, q: Any) -> None:
        if isinstance(q, str) and len(q) > MAX_QUERY_CHARS:
            raise TooLarge(f"query is {len(q)} characters; at most {MAX_QUERY_CHARS}", size=len(q))

    def check_body(self, text: Any) -> None:
        if isinstance(text, str) and len(text) > self.policy.max_body_bytes:  # (chars ≤ bytes: a cheap bound)
            raise TooLarge(f"text is {len(text)} characters; policy max_body_bytes is "
                           f"{self.policy.max_body_bytes}", size=len(text))

    async def answer(self, tool: str, work: Work, *, args: dict[str, Any], budget: int,
                     request_id: str | None = None, write: bool = False, query: str | None = None,
                     body: str | None = None) -> CallToolResult:
        """Run ``work`` on the root in a worker thread and make its answer,
        once the input limits (``query``, ``body``, ``budget``) are checked.
        The one place where errors become tool errors."""
        try:
            self.check_query(query)
            self.check_body(body)
            A.budget(budget)
            if request_id is not None:
                check_id(request_id)
            repo = await self.opening.get(self.wait)
            if not write:
                text, data = await anyio.to_thread.run_sync(work, repo)
                return ok(text, data)
            return await self._write(tool, work, repo, args, request_id)
        except SedimentError as exc:
            return failed(exc.code, exc.message)
        except OSError as exc:  # the file system said no (permissions, disk full, …)
            return failed("storage", str(exc))

    async def _write(self, tool: str, work: Work, repo: Memory, args: dict[str, Any],
                     request_id: str | None) -> CallToolResult:
        if request_id is None:
            with anyio.CancelScope(shield=True):  # once started, a write finishes
                text, data = await anyio.to_thread.run_sync(work, repo)
            return ok(text, data)
        key = (tool, request_id)
        lock = self._inflight.setdefault(key, anyio.Lock())
        try:
            async with lock:  # the same request twice at once: the second waits and gets the first's answer
                earlier = await anyio.to_thread.run_sync(self.replies.get, tool, request_id, args)
                if earlier is not None:
                    return ok(str(earlier.get("text", "")), dict(earlier.get("data") or {}))

                def run_and_remember(repo: Memory) -> tuple[str, dict[str, Any]]:
                    text, data = work(repo)
                    self.replies.put(tool, request_id, args, {"text": text, "data": data})
                    return text, data

                with anyio.CancelScope(shield=True):
                    text, data = await anyio.to_thread.run_sync(run_and_remember, repo)
                return ok(text, data)
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._inflight.pop(key, None)
