"""What ``check`` reports: one problem found in a file or a part of the
root. A value, made by the view (a note that cannot be read), the open of
``_system/`` (a symlink, a read-only root) and the health verbs. Pure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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
