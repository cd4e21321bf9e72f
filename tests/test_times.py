"""Times as people and programs give them (issue 26 item 13): a date, or a
time without an offset, is in the root's timezone (policy.yaml ``timezone``;
DESIGN, "Time") in the library, the CLI and MCP alike; a person may type a
relative time (``7d``, ``yesterday``) where they filter by time."""

from __future__ import annotations

import datetime as dt
import json
import zoneinfo
from pathlib import Path
from typing import Any

import pytest

from sediment import InvalidInput, Repository

from _cli import cli

from _mcp import mcp_calls

SHANGHAI = zoneinfo.ZoneInfo("Asia/Shanghai")



@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A root in Shanghai's timezone: one memory written at 2026-10-31 20:00
    there (12:00 UTC), one at 2026-11-01 01:00 there (17:00 UTC the day before)."""
    r = tmp_path / "mem"
    Repository(r).close()
    policy = r / "_system" / "policy.yaml"
    policy.write_text(policy.read_text(encoding="utf-8") + "\ntimezone: Asia/Shanghai\n", encoding="utf-8")
    repo = Repository(r)
    repo.add("the October note", title="october", kind="fact", now=dt.datetime(2026, 10, 31, 20, tzinfo=SHANGHAI))
    repo.add("the November note", title="november", kind="fact", now=dt.datetime(2026, 11, 1, 1, tzinfo=SHANGHAI))
    return r


def titles(entries: Any) -> list[str]:
    return sorted(e.title for e in entries)


def test_a_date_or_a_naive_time_is_in_the_roots_timezone_in_the_library(root):
    repo = Repository(root)
    # midnight of 1 November in Shanghai: only the November note (UTC midnight would take neither)
    assert titles(repo.list(since="2026-11-01")) == ["november"]
    assert titles(repo.list(since=dt.date(2026, 11, 1))) == ["november"]
    assert titles(repo.list(since=dt.datetime(2026, 11, 1))) == ["november"]
    assert titles(repo.list(since="2026-11-01T00:30")) == ["november"]
    assert titles(repo.list(until=dt.date(2026, 11, 1))) == ["october"]
    assert titles(h.entry for h in repo.search("note", since="2026-11-01", record=False)) == ["november"]
    e = repo.add("imported", kind="fact", now="2026-09-01T09:00")  # now: a naive time too
    assert e.created == dt.datetime(2026, 9, 1, 9, tzinfo=SHANGHAI)
    with pytest.raises(InvalidInput):
        repo.list(since="first of November")


def test_relative_times_where_a_person_filters(root):
    repo = Repository(root)
    fresh = repo.add("written just now", title="fresh", kind="fact")
    assert [e.id for e in repo.list(since="7d")] == [fresh.id]
    assert [e.id for e in repo.list(since="yesterday")] == [fresh.id]
    assert [e.id for e in repo.list(since="today")] == [fresh.id]
    assert titles(repo.list(until="2 weeks ago")) == ["november", "october"]
    with pytest.raises(InvalidInput):
        repo.add("x", kind="fact", now="7d")  # a moment to write down is a time, not a distance


def test_the_cli_takes_a_date_and_a_relative_time(root, capsys):
    code, out, err = cli(capsys, "--root", root, "--json", "list", "--since", "2026-11-01")
    assert code == 0, err
    assert [e["title"] for e in json.loads(out)] == ["november"]
    code, out, err = cli(capsys, "--root", root, "--json", "search", "note", "--since", "2026-11-01")
    assert code == 0, err
    assert [h["title"] for h in json.loads(out)] == ["november"]
    code, out, err = cli(capsys, "--root", root, "--json", "list", "--since", "7d")
    assert code == 0 and json.loads(out) == []


def test_mcp_reads_a_date_in_the_roots_timezone(root):
    (err, text, data), (err2, text2, data2) = mcp_calls(root, [
        ("recent", {"since": "2026-11-01"}), ("recall", {"query": "note", "since": "2026-11-01"})])
    assert not err and not err2, (text, text2)
    assert [m["title"] for m in data["memories"]] == ["november"]
    assert [h["title"] for h in data2["hits"]] == ["november"]
