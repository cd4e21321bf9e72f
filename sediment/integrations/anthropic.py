"""A backend for Anthropic's memory tool (``memory_20250818``): the model's
``/memories`` directory is the root's layer folders.

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
``/memories``           the layer folders (``shallow/``, ``sediment/``, …); ``view``
                        lists them with the real file names
``create`` a new path   ``add``: the text is the body, the title is the file name,
                        the kind ``fact`` (``MemoryTool(repo, kind=…)``);
                        a path outside a layer folder goes to ``shallow/`` (its
                        first folders become the room); the file gets the
                        library's name (``name-ab12.md``), which the answer gives
``create`` an existing  refused ("already exists"), as in Anthropic's helper
``view`` of a note      the body only, numbered from 1: the frontmatter the model
                        did not write is not shown, so line numbers are the ones
                        it wrote; counts as a recall
``str_replace``         an ``edit`` of the body; refused when ``old_str`` is missing
                        or not unique, when the note changed since the model last
                        viewed it (stale), or when the result would not read back
                        as written
``insert``              an ``edit`` of the body at a line (same refusals)
``delete``              ``archive`` (the file moves to ``archive/``; nothing is
                        deleted); a folder is refused
``rename``              ``move`` between layer and room folders; the file name
                        stays (links use it), so a new name is refused
======================  ==========================================================

A path the model remembers that no longer exists (a metabolize moved the
note, or it used the path it created before the library named the file) is
resolved by the file's name, then by the path the note was created at (kept
in its frontmatter as ``memory_path``). Every path is checked as the library
checks its own: inside ``/memories``, no ``..``, no symlink out of the root.

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
import os
from pathlib import Path
from typing import Any, Callable, Mapping

from ..model.entry import Entry
from ..errors import Conflict, InvalidInput, NotFound, NotInstalled, SedimentError, UnsafePath, install_hint
from ..disk.files import resolve_inside
from ..repository import Repository
from ..model.names import LAYERS

PREFIX = "/memories"
LINE_WIDTH = 6  # as Anthropic's helper numbers lines
MAX_LISTED = 300
REASON = "deleted with the memory tool"


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
        try:
            inspect.signature(handler).bind(**args)
        except TypeError as exc:  # a missing or unexpected argument
            raise InvalidInput(f"{name}: {exc}") from exc
        return handler(**args)

    # ------------------------------------------------------------------ paths

    def _rel(self, path: Any) -> str:
        """The path relative to the root, checked like the library's own."""
        if not isinstance(path, str) or not (path == PREFIX or path.startswith(PREFIX + "/")):
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
        """The note at ``path``, or where it went (by file name, then by the
        path it was created at)."""
        try:
            return self.repo.locate(self._rel(path), memory_path=path)
        except NotFound:
            raise NotFound(f"The path {path} does not exist. Please provide a valid path.", path=path) from None

    def _folder(self, rel: str) -> Path | None:
        """The folder at ``rel`` ('' is /memories itself), or None."""
        if not rel:
            return self.repo.root
        full = self.repo.root / rel
        return full if rel.split("/")[0] in LAYERS and full.is_dir() and not full.is_symlink() else None

    # ------------------------------------------------------------------ commands

    def view(self, path: str, view_range: list[int] | None = None) -> str:
        rel = self._rel(path)
        folder = self._folder(rel)
        if folder is not None and not rel.endswith(".md"):
            return self._listing(path, rel, folder)
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
        numbered = "\n".join(f"{str(i + start).rjust(LINE_WIDTH)}\t{ln}" for i, ln in enumerate(lines))
        return f"Here's the content of {self.shown(e)} with line numbers:\n{numbered}"

    def _listing(self, path: str, rel: str, folder: Path) -> str:
        items: list[str] = []

        def walk(d: Path, shown: str, depth: int) -> None:
            try:
                children = sorted(os.scandir(d), key=lambda x: x.name)
            except OSError:
                return
            for c in children:
                if c.name.startswith((".", "_")) or c.is_symlink():
                    continue
                if not rel and depth == 1 and c.name not in LAYERS:
                    continue  # at the top, only the layer folders are memory
                sub = f"{shown}/{c.name}"
                if c.is_dir():
                    items.append(f"-\t{sub}/")
                    if depth < 2:
                        walk(Path(c.path), sub, depth + 1)
                elif c.name.endswith(".md"):
                    items.append(f"{_size(c.stat().st_size)}\t{sub}")

        walk(folder, path.rstrip("/"), 1)
        head = f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
        more = len(items) - MAX_LISTED
        tail = [f"… {more} more: view a folder to see them"] if more > 0 else []
        return "\n".join([head, f"-\t{path}", *items[:MAX_LISTED], *tail])

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
        layer, folders = (parts[0], parts[1:-1]) if parts[0] in LAYERS else ("shallow", parts[:-1])
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
            if not isinstance(insert_line, int) or not 0 <= insert_line <= len(lines):
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
        if self._folder(rel) is not None and not rel.endswith(".md"):
            raise InvalidInput(f"{path} is a folder: delete its notes one by one (each is archived, not erased)")
        e = self.repo.archive(self._find(path).id, reason=REASON)
        return f"Successfully deleted {path} (archived at {self.shown(e)})"

    def rename(self, old_path: str, new_path: str) -> str:
        e = self._find(old_path)
        rel = self._rel(new_path)
        parts = rel.split("/")
        if not rel.endswith(".md") or parts[0] not in LAYERS:
            raise InvalidInput(f"{new_path}: a note moves to a layer folder ({', '.join(LAYERS)}), "
                               "as /memories/<layer>/[room/]<name>.md")
        if parts[-1][:-3] != e.name:
            raise InvalidInput(f"rename keeps a note's file name ({e.name}.md; links use it): "
                               f"move it to /memories/{parts[0]}/…/{e.name}.md, or edit its text")
        try:
            there = self._find(new_path)
        except NotFound:
            pass
        else:
            if there.id != e.id:
                raise InvalidInput(f"The destination {new_path} already exists")
        layer, room = parts[0], "/".join(parts[1:-1])
        moved = (self.repo.archive(e.id, reason=REASON) if layer == "archive" and e.layer != "archive"
                 else self.repo.move(e.id, layer, room=room))
        return f"Successfully renamed {old_path} to {self.shown(moved)}"


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
    refusal becomes the SDK's ``ToolError`` (an ``is_error`` tool result)."""
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
