"""Every install line we print installs this project (issue: the README's
``pip install 'sediment[mcp]'`` fetched an unrelated package from the index).

The lines are read where a person meets them: the README, the docs, the
benchmarks' and examples' text, CI, and every message in the package. Each
requirement must be this checkout (``-e .``, ``-e '.[mcp]'``) or this project's
name on the index, with extras that exist.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from sediment.errors import DISTRIBUTION, NotInstalled, install_hint

PROJECT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((PROJECT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])

# a command ends at the end of the line, at a shell operator, or where the quoting
# around it (markdown code, a Python string) closes
_END = re.compile(r'[`"\n|;)]|&&')
_OURS = re.compile(r"^(?:\.|" + re.escape(DISTRIBUTION) + r")(?:\[([a-z0-9_,-]+)\])?$")


def requirements(command: str) -> list[str]:
    """The requirements one ``pip install`` line names, options left out.

    >>> requirements("-q -e '.[test]'")
    ['.[test]']
    >>> requirements("'agent-sediment[mcp]' in a checkout")
    ['agent-sediment[mcp]']
    >>> requirements("anthropic")
    ['anthropic']
    """
    found: list[str] = []
    for token in command.split():
        quoted = token[:1] in "'\""
        token = token.strip("'\"").rstrip(",:")
        if len(token) > 1:
            token = token.removesuffix(".")
        if token.startswith("-"):
            continue
        # after the first requirement, plain prose ("in a checkout") ends the command
        if found and not quoted and not re.search(r"[\[./=<>]", token):
            break
        found.append(token or ".")
    return found


def install_lines() -> list[tuple[str, str]]:
    """(where, command) for every ``pip install`` in the files a person reads."""
    files = [PROJECT / "README.md", PROJECT / ".ci" / "run"]
    for folder, pattern in (("docs", "*.md"), ("benchmarks", "*.md"), ("examples", "*"), ("sediment", "*.py"),
                            ("tools", "*.py")):
        files += sorted(p for p in (PROJECT / folder).rglob(pattern) if p.is_file() and "__pycache__" not in p.parts)
    lines = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        # the one formatted line: the placeholders as install_hint fills them
        text = text.replace("{DISTRIBUTION}", DISTRIBUTION).replace("[{extra}]", "[mcp]")
        for match in re.finditer(r"pip install\b", text):
            rest = text[match.end():]
            end = _END.search(rest)
            line = text.count("\n", 0, match.start()) + 1
            lines.append((f"{path.relative_to(PROJECT)}:{line}", rest[:end.start() if end else len(rest)]))
    return lines


def test_every_install_line_installs_this_project():
    lines = install_lines()
    assert len(lines) >= 6, lines  # README, CI, the messages: a scanner that finds nothing proves nothing
    wrong = []
    for where, command in lines:
        reqs = requirements(command)
        if not reqs:
            wrong.append((where, command, "names nothing"))
        for req in reqs:
            ours = _OURS.match(req)
            if not ours:
                wrong.append((where, command, f"{req!r} is not this project"))
            elif ours.group(1) and not set(ours.group(1).split(",")) <= EXTRAS:
                wrong.append((where, command, f"{req!r} names an extra pyproject.toml does not have"))
    assert not wrong, "\n".join(map(str, wrong))


def test_the_distribution_is_named_as_the_messages_say():
    assert PYPROJECT["project"]["name"] == DISTRIBUTION
    # the import name stays, and so does the command
    assert PYPROJECT["project"]["scripts"]["sediment"].startswith("sediment.")


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_the_hint_of_each_extra_installs_the_checkout_or_this_project(extra):
    hint = install_hint(extra)
    assert f"pip install -e '.[{extra}]'" in hint and f"pip install '{DISTRIBUTION}[{extra}]'" in hint


def test_a_missing_extra_names_its_install_line():
    # the anthropic integration's message, as the class a caller catches
    assert issubclass(NotInstalled, ImportError)
    source = (PROJECT / "sediment" / "integrations" / "anthropic.py").read_text(encoding="utf-8")
    assert "install_hint('anthropic')" in source and "anthropic" in EXTRAS
