"""Disk inspection shared by the crash and concurrency tests: what is really
in the folders, read without the library's view."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import sediment
from sediment import LAYERS, Repository


def scan(root: Path) -> dict[str, list[sediment.Entry]]:
    """Every memory file under the layer folders, by id (a torn file raises)."""
    found: dict[str, list[sediment.Entry]] = defaultdict(list)
    for layer in LAYERS:
        for p in sorted((root / layer).rglob("*.md")):
            rel = p.relative_to(root).as_posix()
            e = sediment.parse(p.read_bytes(), rel)
            found[e.id].append(e)
    return found


def temp_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob(".*.tmp"))


def errors(repo: Repository) -> list[str]:
    return [str(p) for p in repo.check() if p.severity == "error"]
