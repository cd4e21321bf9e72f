"""Which files of a root are notes, and what the file system knows of a
person's note's times. The I/O half of ``obsidian``.

Every ``.md`` under the root is a note, except under dot-folders
(``.obsidian/``, ``.trash/``, ``.git/``), ``_system/``, the templates folder
named in ``.obsidian/templates.json`` (or Templater's settings), and what
``userIgnoreFilters`` in ``.obsidian/app.json`` excludes. Notes inside the
layer folders are the agent's; every other note is a person's. Files that are
not ``.md`` (images, PDFs, canvases) are attachments: never indexed.

Those settings are the person's files: read without following a symlink,
never written, and a file that does not parse is as if absent (``Rules.faults``
says so for ``check``).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
from typing import Callable, Iterable, Iterator

from ..model import obsidian as O
from .files import is_temp, read_nofollow, symlink_in
from ..model.names import LAYERS

SYSTEM = "_system"
CONFIG = ".obsidian"
_TEMPLATE_SETTINGS = (("templates.json", "folder"), ("plugins/templater-obsidian/data.json", "templates_folder"))


@dataclass(frozen=True)
class Rules:
    """What a walk leaves out, read from the vault's settings."""
    templates: tuple[str, ...] = ()  # folders, relative to the root
    filters: tuple[str, ...] = ()  # userIgnoreFilters, as written
    faults: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # (path, why) for check()
    own: tuple[str, ...] = ()  # sediment's own at the root (the palace map, the sources folder): no notes

    def skips(self, rel: str, is_dir: bool = False) -> bool:
        """Whether the walk leaves ``rel`` (a file, or a folder) out."""
        if rel.startswith(".") or "/." in rel:
            return True
        top, sep, _ = rel.partition("/")
        if top == SYSTEM or top in self.own:
            return True
        if top in LAYERS and (is_dir or sep):
            return False  # the agent's folders: Obsidian's settings are about the person's notes
        if not self.templates and not self.filters:
            return False
        probe = rel + "/" if is_dir else rel
        if any(probe == t + "/" or probe.startswith(t + "/") for t in self.templates):
            return True
        return O.excluded(probe, self.filters)

    def indexed(self, rel: str) -> bool:
        """Whether ``rel`` is a note a walk yields."""
        return rel.endswith(".md") and not self.skips(rel)


def _json(root: Path, rel: str, faults: list[tuple[str, str]]) -> object:
    if symlink_in(root, rel) is not None:
        faults.append((rel, "is (under) a symlink; not followed, so its settings are not applied"))
        return None
    try:
        return json.loads(read_nofollow(root / rel).decode("utf-8-sig"))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, ValueError) as exc:
        faults.append((rel, f"cannot be read ({type(exc).__name__}); its settings are not applied"))
        return None


def load_rules(root: Path, own: tuple[str, ...] = ()) -> Rules:
    """The vault's settings as they are now (a few small reads; none without
    ``.obsidian/``). ``own``: names at the root that are sediment's, not notes."""
    if not (root / CONFIG).is_dir():
        return Rules(own=own)
    faults: list[tuple[str, str]] = []
    app = _json(root, f"{CONFIG}/app.json", faults)
    folders = [O.templates_folder(_json(root, f"{CONFIG}/{rel}", faults), key) for rel, key in _TEMPLATE_SETTINGS]
    return Rules(tuple(dict.fromkeys(f for f in folders if f)), O.ignore_filters(app), tuple(faults), own)


def walk(root: Path, rules: Rules, on_unreadable: Callable[[str, OSError | None], None],
         on_temp: Callable[[str], None] | None = None) -> Iterator[tuple[str, os.stat_result]]:
    """Every note under the root: (relative posix path, stat). Symlinks are not
    followed (a link may point out of the root). ``on_unreadable(folder/,
    error)`` hears of a folder this process may not read (``None``: it can be
    read again); ``on_temp(path)`` of a temp file an interrupted write of
    sediment's left (``files.is_temp``), so that an open learns of them from
    the walk it makes anyway."""
    for r, d in _found(root, rules, on_unreadable, on_temp):
        try:
            yield r, d.stat(follow_symlinks=False)
        except (FileNotFoundError, NotADirectoryError):  # moved or removed mid-scan, its folder too
            continue


def note_paths(root: Path, rules: Rules, on_unreadable: Callable[[str, OSError | None], None],
               on_temp: Callable[[str], None] | None = None) -> Iterator[str]:
    """``walk``'s notes without their stats, for a caller that stats each
    when it comes to it (an open: 100,000 stats held at once were a fifth
    of a warm open's peak memory)."""
    return (r for r, _ in _found(root, rules, on_unreadable, on_temp))


def stat_notes(root: Path, rels: Iterable[str]) -> dict[str, os.stat_result | None]:
    """``stat_note`` of each of ``rels`` (a walk's notes), in order: a stat,
    or None for one the caller is left to tell why it cannot be stat'ed;
    one gone or no longer a regular file is left out."""
    top = str(root)
    got = ((rel, stat_note(top, rel)) for rel in rels)
    return {rel: None if isinstance(st, OSError) else st for rel, st in got if st is not None}


def stat_note(top: str, rel: str) -> os.stat_result | OSError | None:
    """The stat of the note a walk found at ``rel`` under ``top``, taken
    now; None when it is gone since (its folder too, or made a file) or is
    no longer a regular file: passed over, as the walk would have; the
    error when it cannot be stat'ed."""
    try:
        st = os.stat(os.path.join(top, rel), follow_symlinks=False)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return exc
    return st if S_ISREG(st.st_mode) else None


def _found(root: Path, rules: Rules, on_unreadable: Callable[[str, OSError | None], None],
           on_temp: Callable[[str], None] | None) -> Iterator[tuple[str, os.DirEntry[str]]]:
    stack: list[tuple[Path, str]] = [(root, "")]
    while stack:
        folder, rel = stack.pop()
        try:
            it = os.scandir(folder)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:  # a folder this process may not read: its notes are not indexed
            on_unreadable(rel + "/", exc)
            continue
        if rel:
            on_unreadable(rel + "/", None)
        # (in a layer folder, which the walk entered, a file is left out only
        # for a name starting with a dot: asked once a folder, not a note)
        layer = rel.partition("/")[0] in LAYERS
        with it:
            for d in it:
                r = f"{rel}/{d.name}" if rel else d.name
                try:
                    if d.is_dir(follow_symlinks=False):
                        if not rules.skips(r, is_dir=True):
                            stack.append((Path(d.path), r))
                    elif (d.name.endswith(".md") and d.is_file(follow_symlinks=False)
                          and not (d.name.startswith(".") if layer else rules.skips(r))):
                        yield r, d
                    elif on_temp is not None and d.name.endswith(".tmp") and is_temp(d.name):
                        on_temp(r)
                except (FileNotFoundError, NotADirectoryError):  # moved or removed mid-scan, its folder too
                    continue


_U64 = (1 << 64) - 1
# How long after a file's last change a stat of it can vouch for its bytes
# later: a file changed again within its timestamp's granularity of the stat
# (ext4 and NTFS: a clock tick; HFS+: 1 s; FAT: 2 s) may keep the very stat
# it had. Git's "racily clean" entries, with the stat's own time standing in
# for the index file's.
RACY_NS = 2_000_000_000
# Where a stat holds a change time. On Windows st_ctime is the creation time
# (an edit does not change it) and a walk's stat has no inode: a stat there is
# mtime and size alone, which a tool can put back, so it never vouches for a
# file's bytes there: every note is read at open. (Git trusts mtime and size
# there; a save that kept both would be hidden.)
CHANGE_TIME = sys.platform != "win32"


def stamp(st: os.stat_result) -> int:
    """What the view remembers of a file's stat to tell a change: ctime,
    mtime, size and inode, exactly, in one int (a third of a tuple's memory).
    The ctime because no tool can set it: a file rewritten with its old size
    and its mtime put back (``touch -r``, ``cp -p`` over it) still shows."""
    return (((st.st_ctime_ns & _U64) << 192) | ((st.st_mtime_ns & _U64) << 128)
            | ((st.st_size & _U64) << 64) | (st.st_ino & _U64))


def stamp_mtime(s: int) -> float:
    """The modification time (seconds) a ``stamp`` holds."""
    ns = (s >> 128) & _U64
    return (ns - (1 << 64) if ns >> 63 else ns) / 1e9


def settled(st: os.stat_result, since_ns: int) -> bool:
    """Whether this stat, taken after ``since_ns`` (``time.time_ns()``), can
    vouch for the file's bytes at a later open: its last change is older than
    the stat by more than any timestamp granularity, so any later change
    shows in the stat. A file changed since then, or with a time in the
    future (another machine's clock), is read again instead."""
    return CHANGE_TIME and max(st.st_mtime_ns, st.st_ctime_ns) < since_ns - RACY_NS


class FileTimes:
    """Times of a person's note that has no time property: its first commit
    when the root is a git repository, else its modification time. Both
    approximate (a clone sets every mtime; a file copied in keeps its own).
    The history is read once, on the first question, by one ``git log``."""

    def __init__(self, root: Path, stats: dict[str, int]) -> None:
        self.root = root
        self.stats = stats  # the view's path → ``stamp``
        self._first: dict[str, float] | None = None
        self._lock = threading.Lock()

    def __call__(self, rel: str, which: str) -> float | None:
        if which == "created":
            with self._lock:
                if self._first is None:
                    self._first = first_commits(self.root)
            t = self._first.get(rel)
            if t is not None:
                return t
        st = self.stats.get(rel)
        if st is not None:
            return stamp_mtime(st)
        try:
            return os.stat(self.root / rel, follow_symlinks=False).st_mtime
        except OSError:
            return None


def first_commits(root: Path) -> dict[str, float]:
    """Path (relative to ``root``) → time of the commit that added it, for
    every file git's history of ``root`` has; {} without git, or when the root
    is not the top of its own repository (nothing outside the root is read,
    a parent's ``.git`` included)."""
    if not (root / ".git").exists() or symlink_in(root, ".git") is not None:
        return {}
    import subprocess  # (here: a root without git never needs it)
    try:
        proc = subprocess.run(
            ["git", "-c", "core.quotepath=off", "log", "--format=%x00%at", "--name-only", "--diff-filter=A",
             "--no-renames", "--relative", "--", "."],
            cwd=root, capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return {}
    if proc.returncode != 0:
        return {}
    out: dict[str, float] = {}
    when = 0.0
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith("\x00"):
            try:
                when = float(line[1:])
            except ValueError:
                when = 0.0
        elif line:
            out[line] = when  # newest first: the last seen is the first add
    return out
