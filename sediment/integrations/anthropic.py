"""A backend for Anthropic's memory tool (``memory_20250818``): the model's
``/memories`` directory is the root's current memories, in their layer
folders (``shallow/``, ``sediment/``, ``bedrock/``).

``MemoryTool(repo)(command)`` takes the tool's input (a dict: ``view``,
``create``, ``str_replace``, ``insert``, ``delete``, ``rename``) and returns the
text for the tool result; a refusal raises a ``SedimentError`` (send its text
back with ``is_error: true``). It needs no ``anthropic`` package.
``sdk_tool(repo)`` wraps it as a subclass of the SDK's
``BetaAbstractMemoryTool`` for ``client.beta.messages.tool_runner``.

What maps, and how:

======================  ==========================================================
model                   sediment
======================  ==========================================================
``/memories``           the current memories (active, not in ``archive/``): ``view``
                        of a folder lists every one of them below it, at any depth,
                        with the real file names (at most ``MAX_LISTED``)
``create`` a new path   ``add``: the text is the body, the title is the file name,
                        the kind ``fact`` (``MemoryTool(repo, kind=…)``);
                        a path outside a layer folder goes to ``shallow/`` (its
                        first folders become the room); the file gets the
                        library's name (``name-ab12.md``), which the answer gives;
                        the path the model gave finds it too (``memory_path``)
``create`` an existing  refused ("already exists"), as in Anthropic's helper
``view`` of a note      the body only, numbered from 1: the frontmatter the model
                        did not write is not shown, so line numbers are the ones
                        it wrote; counts as a recall; at most ``MAX_VIEW_CHARS``
                        (the rest: "narrow with view_range")
``view`` of a folder    of a layer: what is in it; of the model's own folder
of the model's          (``/memories/projects``, created without a layer): that
                        room in every layer
``str_replace``         an ``edit`` of the body; refused when ``old_str`` is missing
                        or not unique, when the note changed since the model last
                        viewed it (stale), or when the result would not read back
                        as written
``insert``              an ``edit`` of the body at a line (same refusals)
``delete``              ``archive`` (the file moves to ``archive/``, where a person
                        can restore it; nothing is erased): for the model the path
                        is gone, and may be created again; a folder is refused
``rename``              ``move`` to the new path's layer and room (a path without
                        a layer keeps the note's layer); the file keeps the
                        library's name (links use it) and the new path, whatever
                        its file name, finds the note (``memory_path``)
======================  ==========================================================

A path the model remembers that no longer exists (a metabolize moved the
note, or it used the path it created before the library named the file) is
resolved by the file's name, then by the path the note was created or renamed
at (kept in its frontmatter as ``memory_path``). Every path is checked as the
library checks its own: inside ``/memories``, no ``..``, no symlink out of the
root. Every argument is checked before any work (text is text, with no lone
surrogate; a line number is a whole number): a bad one is ``InvalidInput``.

>>> import tempfile
>>> from sediment import Repository
>>> tool = MemoryTool(Repository(tempfile.mkdtemp()))
>>> print(tool({"command": "create", "path": "/memories/prefs.md", "file_text": "likes tea\\n"}))
... # doctest: +ELLIPSIS
File created successfully at: /memories/shallow/prefs-....md
>>> print(tool({"command": "view", "path": "/memories/prefs.md"}))  # doctest: +ELLIPSIS +NORMALIZE_WHITESPACE
Here's the content of /memories/shallow/prefs-....md with line numbers:
     1	likes tea
"""

from __future__ import annotations

import inspect
import logging
import os
from typing import Any, Callable, Mapping

from ..model.entry import Entry
from ..model.lifecycle import is_current
from ..errors import Conflict, InvalidInput, NotFound, NotInstalled, SedimentError, UnsafePath, install_hint
from ..disk.files import resolve_inside
from ..repository import Repository
from ..model.names import LAYERS as ALL_LAYERS

log = logging.getLogger("sediment")

PREFIX = "/memories"
LINE_WIDTH = 6  # as Anthropic's helper numbers lines
MAX_LISTED = 300
MAX_VIEW_CHARS = 50_000  # ~12k tokens: what one tool result may cost the model's context
REASON = "deleted with the memory tool"
LAYERS = tuple(x for x in ALL_LAYERS if x != "archive")  # the model's: archive/ is what it deleted

# what each argument of a command must be (view_range: checked by view)
TEXT_ARGS = ("path", "old_path", "new_path", "file_text", "old_str", "new_str", "insert_text")


def _check_args(name: str, handler: Callable[..., str], args: Mapping[str, Any]) -> None:
    """Refuse a missing, unknown or mistyped argument, and text that holds a
    lone surrogate (no file can store it), before any work."""
    params = inspect.signature(handler).parameters
    unknown = sorted(k for k in args if k not in params)
    if unknown:
        raise InvalidInput(f"{name}: {', '.join(unknown)} is not a parameter of {name}")
    missing = [k for k, p in params.items() if p.default is p.empty and k not in args]
    if missing:
        raise InvalidInput(f"{name}: {', '.join(missing)} must be given")
    for k, v in args.items():
        if k in TEXT_ARGS and not isinstance(v, str):
            raise InvalidInput(f"{name}: {k} must be text, not {type(v).__name__}")
        if k == "insert_line" and (isinstance(v, bool) or not isinstance(v, int)):
            raise InvalidInput(f"{name}: insert_line must be a whole number, not {v!r}")
        if isinstance(v, str):
            bad = next((c for c in v if "\ud800" <= c <= "\udfff"), None)
            if bad is not None:
                raise InvalidInput(f"{name}: {k} holds a lone surrogate (\\u{ord(bad):04x}), which is not "
                                   "text: send it as UTF-8")


class MemoryTool:
    """The memory tool's commands on ``repo``. One instance per conversation:
    it remembers which version of each note the model last saw."""

    def __init__(self, repo: Repository, *, kind: str = "fact") -> None:
        self.repo = repo
        self.kind = kind  # of the notes it creates: files the model keeps should not decay as inbox fragments
        self._seen: dict[str, str] = {}  # id → the version the model last saw

    def __call__(self, command: Mapping[str, Any]) -> str:
        name = command.get("command")
        handlers: dict[str, Callable[..., str]] = {
            "view": self.view, "create": self.create, "str_replace": self.str_replace, "insert": self.insert,
            "delete": self.delete, "rename": self.rename}
        handler = handlers.get(str(name))
        if handler is None:
            raise InvalidInput(f"unknown memory tool command {name!r}")
        args = {k: v for k, v in command.items() if k != "command"}
        _check_args(str(name), handler, args)
        return handler(**args)

    # ------------------------------------------------------------------ paths

    def _rel(self, path: str) -> str:
        """The path relative to the root, checked like the library's own."""
        if not (path == PREFIX or path.startswith(PREFIX + "/")):
            raise UnsafePath(f"Path must start with /memories, got: {path!r}")
        rel = path[len(PREFIX):].strip("/")
        if rel:
            resolve_inside(self.repo.root, rel)  # UnsafePath for '..', absolute, symlinks out
            if rel.split("/")[0].startswith((".", "_")):
                raise UnsafePath(f"{path} is not a memory folder")
        return rel

    @staticmethod
    def shown(e: Entry) -> str:
        return f"{PREFIX}/{e.path}"

    def _find(self, path: str) -> Entry:
        """The current note at ``path``, or where it went (by file name, then
        by the path the model created or renamed it at). A note the model
        deleted (archived) or that was retired is not there for it."""
        try:
            e = self.repo.locate(self._rel(path), memory_path=path)
        except NotFound:
            e = None
        if e is None or not is_current(e):
            raise NotFound(f"The path {path} does not exist. Please provide a valid path.", path=path)
        return e

    def _listed(self, rel: str) -> list[Entry] | None:
        """The current notes below the folder ``rel`` ('' is /memories): a
        layer folder, or the model's own folder (a room, in every layer).
        None when ``rel`` is no such folder."""
        current = [e for e in self.repo.list(layer=list(LAYERS)) if is_current(e)]
        if not rel:
            return current
        parts = rel.split("/")
        if parts[0] in LAYERS:
            below = [e for e in current if e.path.startswith(rel + "/")]
            return below if below or (self.repo.root / rel).is_dir() else None
        below = [e for e in current if e.room and (e.room == rel or e.room.startswith(rel + "/"))]
        return below or None

    # ------------------------------------------------------------------ commands

    def view(self, path: str, view_range: list[int] | None = None) -> str:
        rel = self._rel(path)
        if not rel.endswith(".md"):
            notes = self._listed(rel)
            if notes is not None:
                return self._listing(path, rel, notes)
        e = self._find(path)
        lines = e.body.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        start = 1
        if view_range:
            if not (isinstance(view_range, list) and len(view_range) == 2
                    and all(isinstance(x, int) and not isinstance(x, bool) for x in view_range)):
                raise InvalidInput(f"view_range must be [first line, last line] (-1: to the end), not {view_range!r}")
            first = max(1, view_range[0])
            last = len(lines) if view_range[1] == -1 else view_range[1]
            lines, start = lines[first - 1:last], first
        self._seen[e.id] = e.version
        self.repo.recalled([e.id])  # a view of a note is a recall (DESIGN: what counts as a recall)
        return _numbered(f"Here's the content of {self.shown(e)} with line numbers:", lines, start)

    def _listing(self, path: str, rel: str, notes: list[Entry]) -> str:
        """Every folder and note below ``path`` (``rel``), at any depth, with
        the real paths: what is listed opens."""
        def inside(folder: str) -> bool:  # a folder (relative to the root) below the one asked for
            if not rel or rel.split("/")[0] in LAYERS:
                return folder.startswith(rel + "/") if rel else True
            room = folder.split("/", 1)[1] if "/" in folder else ""
            return room == rel or room.startswith(rel + "/")

        items: dict[str, str] = {}
        for e in notes:
            folders = e.path.split("/")[:-1]
            for i in range(1, len(folders) + 1):
                folder = "/".join(folders[:i])
                if inside(folder):
                    items.setdefault(f"{PREFIX}/{folder}/", "-")
            try:
                items[self.shown(e)] = _size(os.stat(self.repo.root / e.path).st_size)
            except OSError:
                items[self.shown(e)] = "?"
        rows = [f"{size}\t{p}" for p, size in sorted(items.items())]
        head = f"Here're the files and directories in {path} (every level), excluding hidden items:"
        more = len(rows) - MAX_LISTED
        tail = [f"… {more} more: view a folder to see them"] if more > 0 else []
        return "\n".join([head, f"-\t{path}", *rows[:MAX_LISTED], *tail])

    def create(self, path: str, file_text: str) -> str:
        rel = self._rel(path)
        if not rel.endswith(".md"):
            raise InvalidInput(f"{path}: memory files are markdown; name it …/name.md")
        try:
            self._find(path)
        except NotFound:
            pass
        else:
            raise InvalidInput(f"File {path} already exists")
        parts = rel.split("/")
        layer, folders = (parts[0], parts[1:-1]) if parts[0] in ALL_LAYERS else ("shallow", parts[:-1])
        if layer == "archive":
            raise InvalidInput("archive/ is for retired memories: create the note elsewhere")
        title = parts[-1][:-3].strip() or "note"
        e = self.repo.add(file_text, title=title, kind=self.kind, layer=layer, room="/".join(folders) or None,
                          memory_path=path)
        self._seen[e.id] = e.version
        said = "" if not e.warnings else " (" + "; ".join(e.warnings) + ")"
        return f"File created successfully at: {self.shown(e)}{said}"

    def _edit(self, path: str, change: Callable[[str], str]) -> Entry:
        """Rewrite the body of the note at ``path`` with ``change(body)``,
        refusing a stale edit or one that would not read back as written."""
        found = self._find(path)
        seen = self._seen.get(found.id)
        try:
            fresh = self.repo.edit(found.id, change, expected=seen)
        except Conflict as exc:
            if exc.details.get("what") != "expected":
                raise  # a person's save met during the write: the library's words
            raise Conflict(f"{self.shown(found)} changed since you last viewed it (someone edited it): "
                           "view it again, then edit", id=found.id) from None
        except InvalidInput as exc:
            if exc.details.get("what") != "read_back":
                raise
            raise InvalidInput(f"edit refused: {self.shown(found)} would not read back as written "
                               "(it would break the note's frontmatter)") from None
        self._seen[fresh.id] = fresh.version
        return fresh

    def str_replace(self, path: str, old_str: str, new_str: str = "") -> str:
        def change(body: str) -> str:
            n = body.count(old_str) if old_str else 0
            if n == 0:
                raise InvalidInput(f"No replacement was performed, old_str `{old_str}` did not appear verbatim "
                                   f"in {path}.")
            if n > 1:
                at = [body[:i].count("\n") + 1 for i in _find_all(body, old_str)]
                raise InvalidInput(f"No replacement was performed. Multiple occurrences of old_str `{old_str}` "
                                   f"in lines: {', '.join(map(str, at))}. Please ensure it is unique")
            return body.replace(old_str, new_str)

        e = self._edit(path, change)
        return f"The memory file {self.shown(e)} has been edited."

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        def change(body: str) -> str:
            lines = body.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            if not 0 <= insert_line <= len(lines):
                raise InvalidInput(f"Invalid `insert_line` parameter: {insert_line}. It should be within the "
                                   f"range [0, {len(lines)}].")
            lines.insert(insert_line, insert_text.rstrip("\n"))
            return "\n".join(lines) + "\n"

        e = self._edit(path, change)
        return f"The file {self.shown(e)} has been edited."

    def delete(self, path: str) -> str:
        rel = self._rel(path)
        if not rel:
            raise InvalidInput("Cannot delete the /memories directory itself")
        if not rel.endswith(".md") and self._listed(rel) is not None:
            raise InvalidInput(f"{path} is a folder: delete its notes one by one (each is archived, not erased)")
        self.repo.archive(self._find(path).id, reason=REASON)
        return f"Successfully deleted {path} (archived, not erased: a person can restore it)"

    def rename(self, old_path: str, new_path: str) -> str:
        e = self._find(old_path)
        rel = self._rel(new_path)
        parts = rel.split("/")
        if not rel.endswith(".md"):
            raise InvalidInput(f"{new_path}: memory files are markdown; name it …/name.md")
        if parts[0] == "archive":
            raise InvalidInput("archive/ is for retired memories: delete the file instead (it is archived, "
                               "not erased)")
        try:
            there = self._find(new_path)
        except NotFound:
            pass
        else:
            if there.id != e.id:
                raise InvalidInput(f"The destination {new_path} already exists")
        layer, folders = (parts[0], parts[1:-1]) if parts[0] in LAYERS else (e.layer, parts[:-1])
        room = "/".join(folders)
        moved = e if (layer, room) == (e.layer, e.room or "") else self.repo.move(e.id, layer, room=room)
        # the file keeps the library's name (links use it); the model's name for it finds it
        wanted = None if new_path == self.shown(moved) else new_path
        if moved.meta.get("memory_path") != wanted:
            moved = self.repo.update(moved.id, memory_path=wanted)
            self._seen[moved.id] = moved.version
        stored = "" if wanted is None else f" (stored as {self.shown(moved)})"
        return f"Successfully renamed {old_path} to {new_path}{stored}"


def _numbered(head: str, lines: list[str], start: int) -> str:
    """``lines`` numbered from ``start`` after ``head``, at most
    ``MAX_VIEW_CHARS`` in all: a view cut short ends with the lines left out
    and how to see them."""
    out, used = [head], len(head)
    room = MAX_VIEW_CHARS - 200  # (the last line, saying what was left out)
    for i, ln in enumerate(lines):
        row = f"{str(i + start).rjust(LINE_WIDTH)}\t{ln}"
        if used + 1 + len(row) <= room:
            out.append(row)
            used += 1 + len(row)
            continue
        n, last = i + start, start + len(lines) - 1
        if i == 0:  # the first line alone is over the cap: its beginning
            out.append(row[:room - used - 1])
            rest = f"; lines {n + 1}–{last} not shown" if last > n else ""
            out.append(f"… line {n} is cut ({len(ln):,} characters){rest}: narrow with view_range, "
                       f"or edit it with str_replace")
        else:
            out.append(f"… lines {n}–{last} not shown (a view shows at most {MAX_VIEW_CHARS:,} characters): "
                       f"narrow with view_range, e.g. [{n}, {min(last, n + i - 1)}]")
        break
    return "\n".join(out)


def _find_all(text: str, sub: str) -> list[int]:
    out, i = [], text.find(sub)
    while i >= 0:
        out.append(i)
        i = text.find(sub, i + 1)
    return out


def _size(n: int) -> str:
    """A file size as Anthropic's helper writes it (``820B``, ``1.5K``)."""
    if n < 1024:
        return f"{n}B"
    x = n / 1024
    return f"{x:.1f}K" if x < 1024 else f"{x / 1024:.1f}M"


def sdk_tool(repo: Repository) -> Any:
    """``MemoryTool`` as the ``anthropic`` SDK's ``BetaAbstractMemoryTool``
    (``client.beta.messages.tool_runner(tools=[sdk_tool(repo)], …)``); a
    refusal becomes the SDK's ``ToolError`` (an ``is_error`` tool result),
    and so does any other failure (logged with its traceback): the tool
    runner never meets a raw exception."""
    try:
        from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
    except ImportError as exc:
        raise NotInstalled(f"sdk_tool needs the anthropic package: {install_hint('anthropic')}") from exc
    backend = MemoryTool(repo)

    def run(command: Any) -> str:
        try:
            return backend(command.model_dump(exclude_none=True))
        except SedimentError as exc:
            raise ToolError(exc.message) from exc
        except Exception as exc:  # a defect of ours: the model gets an error, the log the traceback
            log.exception("sediment: the memory tool failed on %s", getattr(command, "command", "?"))
            raise ToolError(f"the memory tool failed: {type(exc).__name__}") from exc

    class SedimentMemoryTool(BetaAbstractMemoryTool):
        """The memory tool over a sediment root."""
        memory = backend

        def view(self, command: Any) -> str:
            return run(command)

        def create(self, command: Any) -> str:
            return run(command)

        def str_replace(self, command: Any) -> str:
            return run(command)

        def insert(self, command: Any) -> str:
            return run(command)

        def delete(self, command: Any) -> str:
            return run(command)

        def rename(self, command: Any) -> str:
            return run(command)

    return SedimentMemoryTool()
