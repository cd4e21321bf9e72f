"""Where a memory lives: layer folders, room paths and file names. Pure.

``<layer>/<room>/<name>.md``: the layer is the folder, the room an optional
sub-folder path, the name a readable slug of the title. Every segment is
checked so that nothing a caller passes can leave the root or be refused by
some file system (Windows included: a root travels between machines by git).
"""

from __future__ import annotations

import re
import unicodedata

from ..errors import InvalidInput, ParseError, UnsafePath
from .lexicon import CJK

LAYERS = ("shallow", "sediment", "bedrock", "archive")
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(1, 10)} | {
    f"lpt{i}" for i in range(1, 10)}
MAX_NAME_BYTES = 120  # well under the 255-byte limit of most file systems, with room for "-x1y2.md"
MAX_PATH_BYTES = 1000  # far below PATH_MAX (4096) with room for any root folder



_SLUG_DROP = re.compile(rf"[^\w{CJK}]+", re.UNICODE)
# what no file system should get in a name: ASCII control characters, and what Windows refuses
_REFUSED = re.compile(r'[\x00-\x1f<>:"|?*]')


def refused_chars(name: str) -> bool:
    """Whether ``name`` has a character some file system refuses.

    >>> refused_chars("notes: 2024"), refused_chars("notes 2024")
    (True, False)
    """
    return _REFUSED.search(name) is not None


def slugify(title: str, *, max_bytes: int = 80) -> str:
    """A readable file name from a title: letters (any script) and digits, runs of
    anything else become one '-'. Chinese stays Chinese. Never empty, never a
    Windows-reserved name, never longer than ``max_bytes`` in UTF-8."""
    s = unicodedata.normalize("NFC", title).strip().lower()
    s = _SLUG_DROP.sub("-", s).strip("-_")
    out = []
    size = 0
    for ch in s:  # cut on a character boundary, not a byte boundary
        size += len(ch.encode("utf-8"))
        if size > max_bytes:
            break
        out.append(ch)
    s = "".join(out).strip("-_") or "note"
    if s in _WINDOWS_RESERVED:
        s += "-note"
    return s


def check_segment(segment: str, *, what: str) -> str:
    """Refuse a single path segment (room part or name) that could escape the root
    or that some file system cannot hold. Returns it unchanged when fine."""
    if not isinstance(segment, str) or not segment:
        raise UnsafePath(f"{what}: empty", what=what)
    if "\x00" in segment:
        raise UnsafePath(f"{what}: contains a NUL byte", what=what)
    if "/" in segment or "\\" in segment:
        raise UnsafePath(f"{what}: {segment!r} contains a path separator", what=what)
    if segment in (".", "..") or segment.startswith("."):
        raise UnsafePath(f"{what}: {segment!r} is a relative or hidden name", what=what)
    if refused_chars(segment):
        raise UnsafePath(f"{what}: {segment!r} has characters file systems refuse", what=what)
    if segment.split(".")[0].lower() in _WINDOWS_RESERVED:
        raise UnsafePath(f"{what}: {segment!r} is a reserved name on Windows", what=what)
    if segment.endswith((" ", ".")):
        raise UnsafePath(f"{what}: {segment!r} ends with a space or dot", what=what)
    if len(segment.encode("utf-8")) > MAX_NAME_BYTES:
        raise UnsafePath(f"{what}: longer than {MAX_NAME_BYTES} bytes", what=what)
    return segment


def check_room(room: str | None) -> str:
    """'' for no room; else a relative folder path of safe segments ('a/b')."""
    if room is None or room == "":
        return ""
    if not isinstance(room, str):
        raise UnsafePath("room: must be a string", what="room")
    if room.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", room):
        raise UnsafePath(f"room: {room!r} is an absolute path", what="room")
    parts = room.replace("\\", "/").split("/")
    for p in parts:
        check_segment(p, what="room")
    room = "/".join(parts)
    if len(room.encode("utf-8")) > MAX_PATH_BYTES // 2:
        raise UnsafePath(f"room: longer than {MAX_PATH_BYTES // 2} bytes", what="room")
    return room


def check_layer(layer: str) -> str:
    if layer not in LAYERS:
        raise InvalidInput(f"layer: {layer!r} is not one of {', '.join(LAYERS)}", what="layer")
    return layer


def split_path(rel: str) -> tuple[str, str, str]:
    """'sediment/auth/x.md' → ('sediment', 'auth', 'x'). A person's note
    (outside the layer folders) has no layer; its folder is its room:
    'Projects/Alpha/x.md' → ('', 'Projects/Alpha', 'x')."""
    parts = rel.split("/")
    if not parts[-1].endswith(".md"):
        raise ParseError(f"{rel}: not a note (.md)", path=rel)
    if parts[0] in LAYERS and len(parts) > 1:  # (a file in a layer folder, not one named like it)
        return parts[0], "/".join(parts[1:-1]), parts[-1][:-3]
    return "", "/".join(parts[:-1]), parts[-1][:-3]


# a folder's place: (outside the layers: a person's, its layer, its room)
Place = tuple[bool, str, str]


def place(rel: str, strings: dict[str, str], places: dict[str, Place]) -> Place:
    """(a person's note, layer, room) of the note at ``rel``, its strings
    shared through ``strings``; ``places`` keeps each folder's (a root has
    few folders and many notes)."""
    folder, _, file = rel.rpartition("/")
    got = places.get(folder) if file.endswith(".md") else None
    if got is None:
        layer, room, _ = split_path(rel)
        got = places[folder] = (not in_layer(rel), strings.setdefault(layer, layer), strings.setdefault(room, room))
    return got


def in_layer(rel: str) -> bool:
    """Whether ``rel`` is inside a layer folder: the agent's, not a person's."""
    return rel.split("/", 1)[0] in LAYERS and "/" in rel


def join_path(layer: str, room: str, name: str) -> str:
    rel = "/".join(p for p in (layer, room, name + ".md") if p)
    if len(rel.encode("utf-8")) > MAX_PATH_BYTES:
        raise UnsafePath(f"path {rel[:60]}… is longer than {MAX_PATH_BYTES} bytes", what="room")
    return rel


def refuse_persons(rel: str) -> None:
    """Sediment writes inside the layer folders only: a person's note (any
    other folder) is never moved or rewritten."""
    if not in_layer(rel):
        raise InvalidInput(f"{rel} is a person's note (outside the layer folders: "
                           f"{', '.join(LAYERS)}); sediment reads it and never changes it. To hand it to "
                           "the agent's memory, move it into a layer folder and adopt it", path=rel)
