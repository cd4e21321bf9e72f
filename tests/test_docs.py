"""The documentation says what the code does.

* No document promises an MCP server while the package has none.
* The example root (``memory_root/``) follows the documented file naming,
  ``<slug of title>-<last 4 characters of the id, lower-case>.md`` (10 when
  those 4 are taken; README, "On disk"), and every ``[[wikilink]]`` in it resolves to a note's name.

The example is read file by file with ``sediment.parse``; it is never opened
as a ``Repository``, which would write caches and usage into the committed
example.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import sediment
from sediment import LAYERS, parse
from sediment.model.names import slugify
from sediment.model.fields import WIKILINK

REPO_DIR = Path(__file__).resolve().parents[1]
EXAMPLE = REPO_DIR / "memory_root"
PKG = Path(sediment.__file__).parent


def _docs() -> list[Path]:
    docs = [REPO_DIR / "README.md", *sorted((REPO_DIR / "docs").rglob("*.md")),
            *sorted((REPO_DIR / "benchmarks").rglob("*.md"))]
    return [p for p in docs if p.is_file()]


def _has_mcp_server() -> bool:
    return any("mcp" in p.stem.lower() or "from mcp.server" in p.read_text(encoding="utf-8")
               for p in PKG.rglob("*.py"))


@pytest.mark.skipif(_has_mcp_server(), reason="there is an MCP server: the docs may describe it")
def test_no_document_mentions_an_mcp_server_before_there_is_one():
    mentions = [f"{p.relative_to(REPO_DIR)}:{n}: {line.strip()}"
                for p in _docs()
                for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
                if re.search(r"\bMCP\b", line, re.IGNORECASE)]
    assert mentions == [], "\n".join(mentions)


def _example_notes() -> list[Path]:
    return sorted(p for layer in LAYERS for p in (EXAMPLE / layer).rglob("*.md"))


def test_example_notes_follow_the_documented_naming():
    notes = _example_notes()
    assert len(notes) >= 10, "the example root has notes"
    wrong = []
    for p in notes:
        e = parse(p.read_bytes(), p.relative_to(EXAMPLE).as_posix())
        expected = f"{slugify(e.title)}-{e.id[-4:].lower()}"
        if p.stem not in (expected, f"{slugify(e.title)}-{e.id[-10:].lower()}"):  # 10: 4 were taken
            wrong.append(f"{p.relative_to(EXAMPLE)}: expected {expected}.md")
    assert wrong == [], "\n".join(wrong)


def test_every_wikilink_in_the_example_resolves():
    notes = _example_notes()
    names = [p.stem for p in notes]
    assert len(names) == len(set(names)), "names are unique across the root"
    broken = []
    for p in notes:
        e = parse(p.read_bytes(), p.relative_to(EXAMPLE).as_posix())
        # frontmatter link lists and body links alike
        text = p.read_text(encoding="utf-8")
        targets = WIKILINK.findall(text)
        for key in ("links", "supersedes", "superseded_by"):
            for x in e.meta.get(key) or []:
                assert WIKILINK.fullmatch(x), f"{p.name}: {key} item {x!r} is not a [[wikilink]]"
        for t in targets:
            name = t.split("|")[0].split("#")[0].strip()
            if name not in names:
                broken.append(f"{p.relative_to(EXAMPLE)}: [[{t}]]")
    assert broken == [], "\n".join(broken)
