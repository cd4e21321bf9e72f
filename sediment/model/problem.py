"""What ``check`` reports: one problem found in a file or a part of the
root. A value, made by the view (a note that cannot be read), the open of
``_system/`` (a symlink, a read-only root) and the health verbs. Pure."""

from __future__ import annotations

from dataclasses import dataclass

from .record import Record


@dataclass(frozen=True)
class Problem(Record):
    """Something ``check`` found. ``severity`` is 'error' (the file is left out of
    the index) or 'warning' (it is indexed; a person may want to look)."""
    path: str
    reason: str
    line: int | None = None
    severity: str = "error"
    code: str = "parse"
    _keys = ("path", "line", "reason", "severity", "code")

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{self.severity}: {where}: {self.reason}"
