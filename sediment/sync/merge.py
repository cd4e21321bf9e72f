"""Finishing a merge git left unfinished, by rule, for the notes in it.

What git leaves conflicted, and what sync does with it:

* the same note changed on both sides (a content conflict, or add/add of one
  note): merged again by ``notemerge`` from the two sides' own versions; only a
  concurrent edit of the same body lines stays, with git's markers;
* one note moved to two places (rename/rename): one file, at the place the
  rule picks — archive over any other layer, then the later move (the later
  commit that put it there), then the further layer — with both sides' edits;
* changed on one side, deleted on the other: the changed note stays (a memory
  is not lost to a deletion git could not pair with a move; if the other side
  moved it, the copy with the same id is merged after the merge);
* two different notes at one path (add/add of two ids): both stay, the newer
  id under its name with more of its id.

Anything else (``policy.yaml``, a person's own files) is left to a person,
and the merge stays unfinished until then.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..model import names as N
from ..disk.files import atomic_write
from ..errors import StorageError
from .git import _run
from .notemerge import merge_note
from ..model.names import LAYERS

LAYER_RANK = {"inbox": 0, "shallow": 1, "sediment": 2, "bedrock": 3, "archive": 9}
_ID = re.compile(rb"^id:\s*['\"]?([^'\"\s]+)", re.MULTILINE)


def note_id(data: bytes | None) -> str | None:
    if not data or not data.startswith(b"---"):
        return None
    end = data.find(b"\n---", 3)
    m = _ID.search(data, 0, end if end > 0 else len(data))
    return m.group(1).decode("utf-8", "replace") if m else None


def is_note(path: str) -> bool:
    return path.split("/")[0] in LAYERS and path.endswith(".md")


@dataclass
class Resolution:
    resolved: list[str] = field(default_factory=list)  # paths settled by rule
    conflicts: list[str] = field(default_factory=list)  # notes with a body conflict left in them
    left: list[str] = field(default_factory=list)  # other files left to a person
    moves: list[str] = field(default_factory=list)  # rename/rename decisions, as text


class Git:
    """git calls in the root (paths relative to it)."""

    def __init__(self, git: str, root: Path) -> None:
        self.git, self.root = git, root
        self._blobs: dict[str, bytes] = {}
        self.cache: dict[str, dict[str, str]] = {}
        where = self.run("rev-parse", "--show-toplevel", "--absolute-git-dir", "--git-common-dir",
                         ok=(0, 128)).stdout.splitlines()
        self.top = Path(where[0]).resolve() if len(where) == 3 else None  # None: not in a repository
        self.gitdir = Path(where[1]) if len(where) == 3 else None
        self.common = (root / where[2]).resolve() if len(where) == 3 else None  # (a worktree's refs are there)

    def merging(self) -> bool:
        """A merge is under way (MERGE_HEAD)."""
        return self.gitdir is not None and (self.gitdir / "MERGE_HEAD").exists()

    def run(self, *args: str, ok: tuple[int, ...] = (0,)) -> subprocess.CompletedProcess[str]:
        return _run(self.git, self.root, *args, ok=ok)

    def show(self, rev: str, path: str) -> bytes | None:
        proc = subprocess.run([self.git, "show", f"{rev}:./{path}"], cwd=self.root, capture_output=True)
        return proc.stdout if proc.returncode == 0 else None

    def blob(self, sha: str) -> bytes:
        if sha not in self._blobs:
            self.prefetch([sha])
        return self._blobs[sha]

    def prefetch(self, shas: list[str]) -> None:
        """Read many blobs with one git process."""
        want = sorted(set(shas) - set(self._blobs))
        if not want:
            return
        proc = subprocess.run([self.git, "cat-file", "--batch"], cwd=self.root,
                              input="\n".join(want).encode() + b"\n", capture_output=True)
        if proc.returncode != 0:  # (git's words as text, never a bytes repr)
            raise StorageError(f"git cat-file failed: {proc.stderr.decode('utf-8', 'replace').strip()}",
                               path=str(self.root))
        out = proc.stdout
        pos = 0
        for sha in want:
            nl = out.index(b"\n", pos)
            head = out[pos:nl].split()
            size = int(head[2])
            self._blobs[sha] = out[nl + 1:nl + 1 + size]
            pos = nl + 1 + size + 1

    def time_of(self, rev: str, path: str) -> int:
        out = self.run("log", "-1", "--format=%ct", rev, "--", path, ok=(0, 128)).stdout.strip()
        return int(out) if out.isdigit() else 0


def unmerged(g: Git) -> dict[str, dict[int, str]]:
    """path (relative to the root) → {stage: blob}."""
    out: dict[str, dict[int, str]] = {}
    for rec in g.run("ls-files", "-u", "-z", "--", ".").stdout.split("\0"):
        if not rec:
            continue
        info, path = rec.split("\t", 1)
        _mode, sha, stage = info.split()
        out.setdefault(path, {})[int(stage)] = sha
    return out


def _moved_to(g: Git, base_rev: str, rev: str) -> dict[str, str]:
    """The notes ``rev`` added since ``base_rev``, by id (cached per merge)."""
    key = f"added:{rev}"
    if key not in g.cache:
        out = g.run("diff", "--raw", "--relative", "--no-renames", "--diff-filter=A", "-z", base_rev, rev,
                    "--", ".").stdout if base_rev else ""
        fields = out.split("\0")
        added = [(fields[i].split()[3], fields[i + 1]) for i in range(0, len(fields) - 1, 2)
                 if fields[i].startswith(":") and is_note(fields[i + 1])]
        g.prefetch([sha for sha, _ in added])
        found: dict[str, str] = {}
        for sha, p in added:
            nid = note_id(g.blob(sha))
            if nid:
                found[nid] = p
        g.cache[key] = found
    return g.cache[key]


def pick_path(g: Git, ours: str, theirs: str) -> str:
    """Where a note moved to two places goes: archive first, then the later
    move, then the further layer, then the path (so every machine picks the same)."""
    lo, lt = ours.split("/")[0], theirs.split("/")[0]
    if (lo == "archive") != (lt == "archive"):
        return ours if lo == "archive" else theirs
    to, tt = g.time_of("HEAD", ours), g.time_of("MERGE_HEAD", theirs)
    if to != tt:
        return ours if to > tt else theirs
    return max((ours, theirs), key=lambda p: (LAYER_RANK.get(p.split("/")[0], 0), p))


def _write(g: Git, path: str, data: bytes) -> None:
    target = g.root / path
    target.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(target, data)


def _settle(g: Git, res: "Resolution", path: str, data: bytes, clean: bool, *, move: str | None = None) -> None:
    """Write a merged note, stage it, and say so (and how it moved)."""
    _write(g, path, data)
    g.run("add", "--", path)
    if move:
        res.moves.append(move)
    (res.resolved if clean else res.conflicts).append(path)


def _remove(g: Git, path: str) -> None:
    try:
        os.unlink(g.root / path)
    except FileNotFoundError:
        pass
    g.run("rm", "-q", "--cached", "--ignore-unmatch", "--", path)


def resolve(g: Git) -> Resolution:
    """Settle what sediment can of an unfinished merge (see the module)."""
    res = Resolution()
    paths = unmerged(g)
    g.prefetch([sha for stages in paths.values() for sha in stages.values()])
    base_rev = g.run("merge-base", "HEAD", "MERGE_HEAD", ok=(0, 1)).stdout.strip()
    one_side: dict[str, dict[str, list[str]]] = {}  # id → side → paths
    for path, stages in sorted(paths.items()):
        if not is_note(path):
            res.left.append(path)
            continue
        if 2 in stages and 3 in stages:
            b = g.blob(stages[1]) if 1 in stages else b""
            o, t = g.blob(stages[2]), g.blob(stages[3])
            io, it = note_id(o), note_id(t)
            if io and it and io != it:  # two notes, one path: both stay
                _write(g, path, o if io < it else t)
                other = t if io < it else o
                layer, room, name = N.split_path(path)
                newer = max(io, it)
                alt = N.join_path(layer, room, f"{name}-{newer[-10:].lower()}")
                _write(g, alt, other)
                g.run("add", "--", path, alt)
                res.resolved += [path, alt]
                continue
            _settle(g, res, path, *merge_note(b, o, t, path))
            continue
        side = "ours" if 2 in stages else "theirs" if 3 in stages else "base"
        sha = stages.get(2) or stages.get(3) or stages[1]
        nid = note_id(g.blob(sha)) or f"path:{path}"
        one_side.setdefault(nid, {}).setdefault(side, []).append(path)
    for nid, sides in sorted(one_side.items()):
        ours, theirs, base = sides.get("ours", []), sides.get("theirs", []), sides.get("base", [])
        if ours and theirs:  # rename/rename: one file, where the rule says
            po, pt = ours[0], theirs[0]
            b = (g.show(base_rev, base[0]) if base and base_rev else None) or b""
            o, t = g.show("HEAD", po) or b"", g.show("MERGE_HEAD", pt) or b""
            data, clean = merge_note(b, o, t, po)
            keep = pick_path(g, po, pt)
            for p in {*ours, *theirs, *base} - {keep}:
                _remove(g, p)
            _settle(g, res, keep, data, clean, move=f"{nid}: moved to {po} here and to {pt} there; kept {keep}")
            continue
        for p in base:  # deleted (or moved away) on both sides
            _remove(g, p)
            res.resolved.append(p)
        for p in ours + theirs:  # changed on one side, deleted on the other
            stages = paths[p]
            mine = 2 in stages
            data = g.blob(stages[2] if mine else stages[3])
            moved = _moved_to(g, base_rev, "MERGE_HEAD" if mine else "HEAD").get(nid) if 1 in stages else None
            if moved is not None and moved != p:
                # the other side moved it (and changed it too much for git to
                # pair the two): the move stands, with this side's edits
                other = g.show("MERGE_HEAD" if mine else "HEAD", moved) or b""
                o, t = (data, other) if mine else (other, data)
                merged, clean = merge_note(g.blob(stages[1]), o, t, moved)
                _remove(g, p)
                _settle(g, res, moved, merged, clean,
                        move=f"{nid}: changed at {p}, moved to {moved} on the other side; kept {moved}")
                continue
            _write(g, p, data)  # a memory is not lost to a deletion
            g.run("add", "--", p)
            res.resolved.append(p)
    return res
