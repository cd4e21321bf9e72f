"""What ``check()`` finds in the files, each finder a list of ``Problem``
from the view (and the folders it walks): names used twice, file shapes,
what is no regular file, links that name no note, symlinked layer folders,
temp files. Reports only: nothing here writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import os
from pathlib import Path

from ..model import names as N
from ..model import obsidian as O
from ..disk.files import is_temp, read_nofollow
from ..progress import Ticker
from ..store.system import SYSTEM
from ..model.problem import Problem
from ..model.fields import unwrap_link
from ..model.names import LAYERS

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..view.view import View


def duplicate_names(view: View) -> list[Problem]:
    names: dict[str, list[str]] = {}
    for e in view.entries.values():
        if not e.reference:  # a person's notes may share names: [[links]] resolve as Obsidian does
            names.setdefault(e.name, []).append(e.path)
    out = []
    for name, paths in names.items():
        if len(paths) > 1:
            for p in sorted(paths)[1:]:
                out.append(Problem(p, f"name {name!r} is also used by {sorted(paths)[0]}; "
                                      f"[[{name}]] links are ambiguous",
                                   severity="warning", code="duplicate_name"))
    return out


def file_shapes(view: View) -> list[Problem]:
    """Reads the head of every note: the long part of a check ('check' progress)."""
    out = []
    files = list(view.walk())
    tick = Ticker(view.progress, "check", len(files))
    for rel, _ in files:
        tick()
        if rel not in view.by_path or not N.in_layer(rel):  # (a person's file is theirs as it is)
            continue
        try:
            raw = read_nofollow(view.root / rel)[:4096]
        except OSError:  # gone or replaced since the scan: the next check sees it
            continue
        if raw.startswith(b"\xef\xbb\xbf"):
            out.append(Problem(rel, "starts with a byte-order mark", severity="warning", code="bom"))
        if b"\r\n" in raw:
            out.append(Problem(rel, "has Windows (CRLF) line ends", severity="warning", code="crlf"))
    return out


def not_regular(view: View) -> list[Problem]:
    """What the walk passes over in layer folders: symlinks (to a file or a
    folder: never followed, they may point anywhere), FIFOs, sockets and
    devices named like notes, and folders named like notes."""
    out = []
    stack = [(view.root / layer, layer) for layer in LAYERS if not (view.root / layer).is_symlink()]
    while stack:
        folder, rel = stack.pop()
        try:
            it = os.scandir(folder)
        except OSError:
            continue
        with it:
            for d in it:
                r = f"{rel}/{d.name}"
                if d.is_symlink():
                    if d.name.endswith(".md") or d.is_dir():
                        out.append(Problem(r, "is a symlink; sediment does not follow it", code="not_a_file"))
                elif d.is_dir(follow_symlinks=False):
                    if d.name.endswith(".md"):
                        out.append(Problem(r + "/", "a folder named like a note; its notes are read as a room",
                                           severity="warning", code="folder_md"))
                    if not d.name.startswith("."):
                        stack.append((Path(d.path), r))
                elif d.name.endswith(".md") and not d.is_file(follow_symlinks=False):
                    out.append(Problem(r, "not a regular file (a FIFO, socket or device); not read",
                                       code="not_a_file"))
    return out


def unresolved_links(view: View) -> list[Problem]:
    """Every wikilink (frontmatter links, supersedes, superseded_by; the body;
    a person's note's properties) that names no note, resolved as Obsidian
    resolves it, with the line it is on. A link to a file that is no note
    (``[[photo.png]]``, ``![[paper.pdf]]``) is not checked; a damaged note,
    or a note Obsidian's settings leave out (a template), still counts as
    there: its links are not the problem."""
    known = {rel.rsplit("/", 1)[-1][:-3].casefold() for rel in view.problems if rel.endswith(".md")}
    left_out: set[str] | None = None
    out = []
    for e in view.entries.values():
        names = [*e.links, *(unwrap_link(x) for k in ("supersedes", "superseded_by")
                              for x in O.items(e.meta.get(k)))]
        missing = [n for n in dict.fromkeys(names) if n and n not in view.entries and view.link(n) is None
                   and not O.ATTACHMENT.search(n) and n.rsplit("/", 1)[-1].casefold() not in known]
        if missing and left_out is None:
            left_out = _left_out_names(view)
        missing = [n for n in missing if n.rsplit("/", 1)[-1].casefold() not in (left_out or ())]
        if not missing:
            continue
        try:
            lines = read_nofollow(view.root / e.path).decode("utf-8", "replace").splitlines()
        except OSError:
            lines = []
        for name in missing:
            line = next((i for i, text in enumerate(lines, 1) if f"[[{name}" in text), None)
            out.append(Problem(e.path, f"[[{name}]] names no note", line=line, severity="warning",
                               code="unresolved_link"))
    return out


def _left_out_names(view: View) -> set[str]:
    """Names (case-folded) of the .md files a walk leaves out on purpose:
    templates, Obsidian's excluded files. Links to them are Obsidian's links."""
    out: set[str] = set()
    for dirpath, dirs, files in os.walk(view.root):  # (os.walk does not follow links)
        rel = Path(dirpath).relative_to(view.root).as_posix()
        dirs[:] = [d for d in dirs if not d.startswith(".") and not (rel == "." and d == SYSTEM)]
        out.update(f[:-3].casefold() for f in files if f.endswith(".md")
                   and not view.rules.indexed(f if rel == "." else f"{rel}/{f}"))
    return out


def layer_links(root: Path) -> list[Problem]:
    """A layer folder that is a symlink (a symlinked ``_system/`` is one of
    the store's faults)."""
    return [Problem(top + "/", "is a symlink; sediment does not follow it", code="symlink")
            for top in LAYERS if (root / top).is_symlink()]


def temps(root: Path) -> list[Problem]:
    out = []
    for top in (*LAYERS, SYSTEM):  # where sediment writes, and recover sweeps
        if (root / top).is_symlink():
            continue
        for dirpath, _, filenames in os.walk(root / top):  # (os.walk does not follow links)
            for f in filenames:
                if is_temp(f):
                    rel = Path(dirpath, f).relative_to(root).as_posix()
                    out.append(Problem(rel, "temp file of an interrupted write (run recover)",
                                       severity="warning", code="temp"))
    return out
