"""Health of a root: finishing what a crash interrupted (``recover``) and
reporting what is wrong without repairing it (``check``). Mixed into
``Repository``; the rules of what may be touched are here in one place:
files a person wrote are reported, never rewritten, moved or deleted.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import entry as E
from .errors import InvalidInput, ParseError, SedimentError
from .files import fsync_dir, is_temp, resolve_inside
from .lifecycle_verbs import recover_supersede

if TYPE_CHECKING:  # pragma: no cover
    from .repository import Repository

log = logging.getLogger("sediment")
SYSTEM = "_system"


@dataclass(frozen=True)
class Problem:
    """Something ``check`` found. ``severity`` is 'error' (the file is left out of
    the index) or 'warning' (it is indexed; a person may want to look)."""
    path: str
    reason: str
    line: int | None = None
    severity: str = "error"
    code: str = "parse"

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{self.severity}: {where}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "reason": self.reason,
                "severity": self.severity, "code": self.code}



class HealthVerbs:
    """Mixed into ``Repository``."""

    def recover(self: "Repository") -> dict[str, int]:
        """Finish or undo operations a crash interrupted, and sweep temp files.

        For an interrupted move: if the new file is there, the old one is removed
        (roll forward: the new file was complete before the old was touched);
        otherwise the old one stays where it was (roll back). Either way every
        memory exists exactly once. Returns counts.
        """
        report = {"rolled_forward": 0, "rolled_back": 0, "temp_removed": 0}
        with self._write_lock():
            self._journal.ensure()
            pending = self._journal.pending(self._journal.read().records)
            for key, n in Counter(self._finish_ops(pending)).items():
                report[key] += n
            report["temp_removed"] = self._sweep_temps()
            self._journal.maybe_compact()
            if self._view_ready:
                self._journal_pos = self._journal_head()
        return report

    def _finish_ops(self: "Repository", pending: list[dict[str, Any]]) -> list[str]:
        """Finish or undo operations whose writer died (the caller holds the lock,
        and a live writer never leaves a begin without its done across a lock
        hold, so every pending record here is a dead writer's)."""
        outcomes = []
        for rec in pending:
            self._open_ops.pop(rec.get("seq"), None)
            done: dict[str, Any] = {"seq": rec.get("seq"), "phase": "done", "op": "recover", "paths": []}
            try:
                outcome, done["paths"] = self._finish_op(rec)
                outcomes.append(outcome)
            except (SedimentError, OSError) as exc:
                # One damaged record or hand-broken file must not stop the root
                # from opening: give up on this operation, say so, carry on.
                # Nothing is lost: both files (if any) are still there.
                done["failed"] = f"{type(exc).__name__}: {exc}"
                log.warning("sediment: could not finish an interrupted %s: %s", rec.get("op"), exc)
            self._journal._append(done)
            if self._view_ready:
                self._apply_paths(done["paths"])
        return outcomes

    def _finish_op(self: "Repository", rec: dict[str, Any]) -> tuple[str, list[str]]:
        if rec.get("op") == "supersede":
            return "rolled_forward", recover_supersede(self, rec)
        src, dst = rec.get("src"), rec.get("dst")
        if not (isinstance(src, str) and isinstance(dst, str)):
            raise InvalidInput(f"journal record without src/dst: {rec}")
        s, d = resolve_inside(self.root, src), resolve_inside(self.root, dst)
        if d.exists() and s.exists() and _same_id(d, rec.get("id")):
            s.unlink()  # the new file was complete before the old one was touched
            fsync_dir(s.parent)
            return "rolled_forward", [src, dst]
        return ("rolled_forward" if d.exists() else "rolled_back"), [src, dst]

    def _sweep_temps(self: "Repository") -> int:
        """Remove temp files of interrupted writes. Everything under the root is
        written under the writer lock we hold (notes, journal, policy, the index
        snapshot), except usage records, which have their own lock: we take it too."""
        n = 0
        with self._usage.lock():
            for top in (*E.LAYERS, SYSTEM):
                if not (self.root / top).is_symlink():  # never delete through a link
                    n += self._sweep_folder(self.root / top)
        if n:
            log.info("removed %d temp file(s) left by an interrupted write", n)
        return n

    @staticmethod
    def _sweep_folder(folder: Path) -> int:
        n = 0
        for dirpath, _, filenames in os.walk(folder):
            for f in filenames:
                if is_temp(f):
                    try:
                        os.unlink(os.path.join(dirpath, f))
                        n += 1
                    except FileNotFoundError:
                        pass
        return n

    def check(self: "Repository", fix: bool = False) -> list[Problem]:
        """Problems in the root, each with path, line where known and reason.

        Reported, never repaired: malformed files, duplicate ids and names,
        ``.md`` files outside a layer folder, unfinished journal operations and
        damaged journal lines, temp files. With ``fix=True`` only ``recover()``
        runs first (finishing interrupted operations, sweeping temp files); a
        file a person wrote is never rewritten, moved or deleted.
        """
        if fix:
            self.recover()
        with self._view_lock:  # a watcher thread may be changing the view
            return self._check()

    def _check(self: "Repository") -> list[Problem]:
        self.refresh()
        problems = list(self._problems.values())
        names: dict[str, list[str]] = {}
        for e in self._entries.values():
            names.setdefault(e.name, []).append(e.path)
        for name, paths in names.items():
            if len(paths) > 1:
                for p in sorted(paths)[1:]:
                    problems.append(Problem(p, f"name {name!r} is also used by {sorted(paths)[0]}; "
                                               f"[[{name}]] links are ambiguous",
                                            severity="warning", code="duplicate_name"))
        for rel, _ in self._walk():
            raw = (self.root / rel).read_bytes()[:4096] if rel in self._by_path else b""
            if raw.startswith(b"\xef\xbb\xbf"):
                problems.append(Problem(rel, "starts with a byte-order mark", severity="warning",
                                        code="bom"))
            if b"\r\n" in raw:
                problems.append(Problem(rel, "has Windows (CRLF) line ends", severity="warning",
                                        code="crlf"))
        for top in (*E.LAYERS, SYSTEM):
            if (self.root / top).is_symlink():
                problems.append(Problem(top + "/", "is a symlink; sediment does not follow it",
                                        code="symlink"))
        for p in sorted(self.root.iterdir()):
            if p.is_symlink():
                continue
            if p.is_file() and p.suffix == ".md":
                problems.append(Problem(p.name, "a .md file outside any layer folder; not indexed",
                                        severity="warning", code="outside_layer"))
            elif p.is_dir() and p.name not in (*E.LAYERS, SYSTEM) and not p.name.startswith("."):
                if any(p.rglob("*.md")):
                    problems.append(Problem(p.name + "/", "a folder with .md files outside any layer; "
                                            "not indexed", severity="warning", code="outside_layer"))
        jr = self._journal.read()
        for line, why in jr.damaged:
            problems.append(Problem(f"{SYSTEM}/journal.log", why, line=line, code="journal"))
        for rec in self._journal.pending(jr.records):
            problems.append(Problem(f"{SYSTEM}/journal.log", f"unfinished {rec.get('op')} of "
                                    f"{rec.get('src')} (run recover)", code="journal_pending"))
        for rec in jr.records:
            if rec.get("failed"):
                problems.append(Problem(f"{SYSTEM}/journal.log", "an interrupted operation could not "
                                        f"be finished and was left as it was: {rec['failed']}",
                                        severity="warning", code="journal_failed"))
        for dirpath, _, filenames in os.walk(self.root):  # (os.walk does not follow links below the root)
            for f in filenames:
                if is_temp(f):
                    rel = Path(dirpath, f).relative_to(self.root).as_posix()
                    problems.append(Problem(rel, "temp file of an interrupted write (run recover)",
                                            severity="warning", code="temp"))
        return sorted(problems, key=lambda p: (p.path, p.line or 0, p.code))

def _read_nofollow(path: Path) -> bytes:
    """Read a note without following a symlink put in its place (O_NOFOLLOW
    where the OS has it): a link could point anywhere outside the root."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def _same_id(path: Path, eid: str | None) -> bool:
    if eid is None:
        return True
    try:
        return E.parse(path.read_bytes()).id == eid
    except (ParseError, OSError):
        return False


