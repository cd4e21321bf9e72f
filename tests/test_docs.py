"""The documentation says what the code does.

* No document promises an MCP server while the package has none.
* The example root (``memory_root/``) follows the documented file naming,
  ``<slug of title>-<last 4 characters of the id, lower-case>.md`` (README,
  "On disk"), and every ``[[wikilink]]`` in it resolves to a note's name.

The example is read file by file with ``sediment.parse``; it is never opened
as a ``Repository``, which would write caches and usage into the committed
example.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import sediment

REPO_DIR = Path(__file__).resolve().parents[1]
EXAMPLE = REPO_DIR / "memory_root"
PKG = Path(sediment.__file__).parent


def _docs() -> list[Path]:
    docs = [REPO_DIR / "README.md", *sorted((REPO_DIR / "docs").rglob("*.md")),
            *sorted((REPO_DIR / "benchmarks").rglob("*.md"))]
    return [p for p in docs if p.is_file()]


def _has_mcp_server() -> bool:
    return any("mcp" in p.stem.lower() for p in PKG.rglob("*.py"))


@pytest.mark.skipif(_has_mcp_server(), reason="there is an MCP server: the docs may describe it")
def test_no_document_mentions_an_mcp_server_before_there_is_one():
    mentions = [f"{p.relative_to(REPO_DIR)}:{n}: {line.strip()}"
                for p in _docs()
                for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                if re.search(r"\bMCP\b", line, re.IGNORECASE)]
    assert mentions == [], "\n".join(mentions)
