"""The read-only verbs the page (``sediment view``) is built on: every
memory's strength at once, one memory's forecast, its history of use, the
attention per room, the last patrol. None records a recall or writes a file."""

from __future__ import annotations

import datetime as dt
import hashlib
from pathlib import Path

import pytest

from sediment import Repository

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 3, 1, 12, 0, 0, tzinfo=UTC)


def at(days: float) -> dt.datetime:
    return T0 + dt.timedelta(days=days)


def files(root: Path) -> dict[str, str]:
    """sha256 of every file under the root, _system/ included."""
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "root") as r:
        yield r


def test_strengths_are_each_memorys_strength_and_leave_purged_ones_out(repo):
    a = repo.add("fresh fact", kind="fact", value=0.8, now=at(0))
    b = repo.add("old daily note", kind="daily", value=0.6, now=at(0))
    gone = repo.add("a secret", kind="fact", now=at(0))
    repo.purge(gone.id, confirm=True)
    repo.usage.record([b.id], "recall", now=at(20).timestamp())
    before = files(repo.root)
    got = repo.strengths(now=at(60))
    assert set(got) == {a.id, b.id}
    for eid in (a.id, b.id):
        assert got[eid] == repo.strength(eid, now=at(60))
    assert got[b.id].recalls == 1 and got[b.id].strength < got[a.id].strength
    assert files(repo.root) == before
