"""The root's own layout and which parts of ``_system/`` this process may use.

Decided once, at open (``open_system``): a part that is a symlink (or sits
under one) is not followed, and a root that cannot be written (read-only
media) is opened for reading. What is off is kept as ``Problem``s
(``Parts.faults``) that ``check`` reports; the store's ``writing()`` then
refuses at once, with the reason.
"""

from __future__ import annotations

import contextlib
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import NotFound, StorageError
from ..disk.files import atomic_write, is_temp, symlink_in
from ..model.problem import Problem
from ..model.names import LAYERS

log = logging.getLogger("sediment")

SYSTEM = "_system"
CACHE = "cache"  # (in _system/)
# the semantic lane's vector files' lock, in the cache folder: their writes
# (an append, a compaction's staged file) happen under it, not the root's lock
VECTORS_LOCK = "vectors.lock"
GITIGNORE = """\
# sediment: derived and machine-local files. Notes, policy.yaml and the
# per-machine usage summaries in _system/shared/ are versioned.
_system/lock
_system/journal.log
_system/cache/
_system/usage/
_system/reports/
_system/working/
_system/patrol/
.*.tmp
.obsidian/workspace*.json
"""


# In a folder that holds a person's files (an Obsidian vault), the root is
# theirs: what git should leave out of _system/ is said inside _system/.
SYSTEM_GITIGNORE = """\
# sediment: derived and machine-local files. policy.yaml and shared/ are versioned.
lock
journal.log
cache/
usage/
reports/
working/
patrol/
"""
_OURS = {*LAYERS, SYSTEM, ".gitignore", ".gitattributes", ".git"}  # .gitattributes: earlier versions wrote one


def holds_persons(root: Path) -> bool:
    """Whether the root holds anything but sediment's own folders (a person's
    notes, ``.obsidian/``): an existing vault, opened in place."""
    try:
        with os.scandir(root) as it:
            return any(d.name not in _OURS and not _own_temp(d.name) for d in it)
    except OSError:
        return False


def _own_temp(name: str) -> bool:
    """The temp file of one of sediment's own files at the top of a root
    (``..gitignore.<hex>.tmp``: ``files.temp_name``)."""
    return is_temp(name) and name[1:-len(".12345678.tmp")] in _OURS


def own_temps(root: Path) -> list[Path]:
    """The temp files a write of sediment's own files at the top of the root
    left when it was killed (a new root's first open writing ``.gitignore``);
    nothing of a person's, nothing in a folder."""
    try:
        with os.scandir(root) as it:
            return [root / d.name for d in it if _own_temp(d.name) and d.is_file(follow_symlinks=False)]
    except OSError:
        return []


def init_layout(root: Path) -> None:
    """The folders of a root (the four layer folders and ``_system/``), and a
    ``.gitignore`` of what is not versioned: the root's own in a folder of
    sediment's alone; ``_system/.gitignore`` in a folder that holds a
    person's files (their vault's root is not sediment's to write). Whatever
    is in the way (a file, a link) stays; on a root that cannot be written,
    nothing is made (``open_system`` says what that turns off)."""
    try:
        persons = holds_persons(root)
        make_layers(root)
        gi = root / SYSTEM / ".gitignore" if persons else root / ".gitignore"
        if not os.path.lexists(gi) and not (persons and (root / SYSTEM).is_symlink()):
            atomic_write(gi, (SYSTEM_GITIGNORE if persons else GITIGNORE).encode())
    except OSError as exc:
        log.debug("cannot lay out %s: %s", root, exc)


def make_layers(root: Path) -> None:
    """The layer folders and ``_system/`` a root lacks, made: git removes a
    folder a merge emptied, and a person may delete an empty one, so nothing
    may depend on them being there. Whatever is in the way (a file, a link)
    stays; a folder that cannot be made is left to the write that needs it."""
    for d in (*LAYERS, SYSTEM):
        with contextlib.suppress(OSError):  # (FileExistsError: there already)
            (root / d).mkdir()


# The parts of _system/ and the paths each uses: a symlink in any of them
# turns the part off (the lock and the journal: every write).
PARTS: dict[str, tuple[str, ...]] = {
    "policy": ("policy.yaml",),
    "lock": ("lock",),
    "journal": ("journal.log",),
    "cache": ("cache", "cache/index.bin", "cache/bodies.bin"),
    "usage": ("usage", "usage/events.log", "usage/summary.json", "usage/lock", "usage/destructive.log"),
    "reports": ("reports",),
    "working": ("working", "working/state.json", "working/lock"),
    "patrol": ("patrol",),
}
OFF = {
    "policy": "policy.yaml is not read (the default settings are used)",
    "lock": "every write is refused",
    "journal": "every write is refused",
    "cache": "the index snapshot is neither read nor written",
    "usage": "usage records (recalls, confirmations) are neither read nor written",
    "reports": "metabolize reports are not written",
    "working": "working memory (observe, mood) is neither read nor written",
    "patrol": "patrol reports are not written",
}


# why a root opened read-only (a shared root) refuses every write
READ_ONLY = "the root is open for reading only here (a shared root: write to it by opening it as your own)"


@dataclass
class Parts:
    """Which parts of ``_system/`` this process uses, decided at open."""
    links: dict[str, str] = field(default_factory=dict)  # part → the symlink that turns it off
    writes_off: str | None = None  # why every write is refused, or None
    faults: list[Problem] = field(default_factory=list)  # for check()

    def usable(self, part: str) -> bool:
        """May be read (it is no symlink)."""
        return part not in self.links

    def link_reason(self, part: str) -> str | None:
        link = self.links.get(part)
        return f"{link} is a symlink; sediment does not follow it" if link else None

    def refusal(self, part: str) -> str | None:
        """Why this part may not be written, or None."""
        return self.link_reason(part) or self.writes_off

    def writable(self, part: str) -> bool:
        return self.refusal(part) is None


def open_system(root: Path, *, create: bool, read_only: bool = False) -> Parts:
    """Make the root's folders (with ``create``; of an existing root, the
    layer folders it lacks) and decide which parts of ``_system/`` may be
    used: a few ``lstat`` calls and one ``access``. ``read_only``: the root
    is read through this process and never written, whatever its permissions
    (a shared root): nothing is made, every write is refused, and it is no
    problem of the root's (``check`` of that root says nothing of it); the
    caller does not ask to ``create`` it."""
    try:
        if not root.exists():
            if not create:
                raise NotFound(f"no memory root at {root}", path=str(root))
            root.mkdir(parents=True)
    except OSError as exc:
        raise StorageError(f"cannot make a memory root at {root}: {exc}", path=str(root)) from exc
    if create:
        init_layout(root)
    parts = Parts()
    for part, rels in PARTS.items():
        for rel in rels:
            link = symlink_in(root, f"{SYSTEM}/{rel}")
            if link is not None:
                parts.links[part] = link
                break
    for link in sorted(set(parts.links.values())):
        off = sorted({OFF[p] for p, li in parts.links.items() if li == link})
        parts.faults.append(Problem(link, "is a symlink, which sediment does not follow; until a person "
                                          f"replaces it with a real one, {'; '.join(off)}", code="symlink"))
    linked = parts.link_reason("lock") or parts.link_reason("journal")
    system = root / SYSTEM
    if linked:
        parts.writes_off = f"{linked}, so every write is refused until a person replaces it"
    elif read_only:
        parts.writes_off = READ_ONLY
    elif not os.access(system if system.exists() else root, os.W_OK):
        parts.writes_off = (f"the root is read-only ({SYSTEM}/ cannot be written); it is open for "
                            "reading only")
        parts.faults.append(Problem(SYSTEM, "the root is read-only: writes are refused, searches are "
                                            "not recorded, recovery does not run", severity="warning",
                                    code="read_only"))
    if not create and parts.writes_off is None and system.is_dir():
        make_layers(root)  # an existing root: the layer folders git or a person removed come back, quietly
        if own_temps(root):  # a first open killed while it wrote the .gitignore: what it did not finish
            init_layout(root)  # (the temp file itself goes with the open's sweep, under the lock)
    policy = f"{SYSTEM}/policy.yaml"
    if parts.writes_off and parts.usable("policy") and not os.path.lexists(root / policy):
        parts.faults.append(Problem(policy, "missing, and it cannot be written here: the default "
                                            "settings are used", severity="warning", code="policy_missing"))
    return parts
