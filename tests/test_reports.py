"""Metabolize reports stay out of Obsidian's link graph.

A report in ``_system/reports/`` names every memory it moved. As
``[[wikilinks]]`` those names made each report a hub in the graph view, linked
to every note it ever moved; they are plain text (code spans) instead, and so
is anything else in a report that Obsidian would read as a link.
"""

from __future__ import annotations

import re

from sediment import Repository

LINK = re.compile(r"\[\[|\]\(")  # a wikilink, or a markdown link [text](target)


def test_report_names_memories_in_code_spans_not_wikilinks(tmp_path):
    repo = Repository(tmp_path / "mem")
    wrong = repo.add("the cache is never the cause", title="cache [[not]] the cause", room="infra")
    old = repo.add("deploy on fridays", title="deploy days", kind="rule", event="deploys")
    new = repo.add("never deploy on fridays", title="deploy days, revised", kind="rule")
    repo.supersede(old.id, new.id)  # its plan reason reads "superseded by [[name]]"
    repo.touch(wrong.id, "refute")
    plan = repo.metabolize(dry_run=False, confirm=True)
    assert {m.id for m in plan.moves} >= {wrong.id, old.id} and plan.report
    text = (repo.root / plan.report).read_text(encoding="utf-8")
    repo.close()

    assert not LINK.search(text), f"the report links notes:\n{text}"
    for e in (wrong, old):
        assert f"`{e.name}`" in text, f"{e.name} is not named in a code span:\n{text}"
    assert f"superseded by `{new.name}`" in text, text


def test_report_text_that_looks_like_a_link_is_a_code_span(tmp_path):
    """Whatever a table cell holds (a title with brackets, pipes or
    backticks) is written so that it neither links nor breaks the table."""
    from sediment.verbs.metabolism import _code

    assert _code("plain") == "`plain`"
    assert _code("a [[b]] c") == "`a [[b]] c`"
    assert _code("x | y") == r"`x \| y`"
    assert _code("uses `code`") == "`` uses `code` ``"
    assert _code("`") == "`` ` ``"
