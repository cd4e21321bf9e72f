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


def test_forecast_follows_the_decay_rule_and_a_recall_now_restarts_and_stretches_it(repo):
    e = repo.add("a daily note", kind="daily", value=0.8, now=at(0))
    grace, half, _ = repo.policy.kinds["daily"]
    f = repo.forecast(e.id, days=120, now=at(0))
    assert f.days == tuple(range(121))
    for d in (0, 30, 60, 120):
        assert f.as_is[d] == pytest.approx(repo.strength(e.id, now=at(d)).strength, abs=1e-4)
    assert f.as_is[0] == f.recalled[0] == 0.8
    # one more recall now: the clock restarts now and the half-life stretches
    later = int(grace + half)
    assert f.as_is[later] == pytest.approx(0.4, abs=1e-3)
    assert f.recalled[later] > f.as_is[later]
    assert list(f.as_is) == sorted(f.as_is, reverse=True)
    assert repo.strength(e.id, now=at(0)).recalls == 0  # the forecast recorded nothing


def test_forecast_when_recalled_today_already_shows_the_same_curve(repo):
    e = repo.add("recalled today", kind="fact", value=0.7, now=at(0))
    repo.usage.record([e.id], "recall", now=at(5).timestamp())
    f = repo.forecast(e.id, days=400, now=at(5))
    assert f.recalled == f.as_is


def test_forecast_refuses_a_silly_span(repo):
    e = repo.add("x", kind="fact")
    for bad in (0, -1, 4000, 2.5, True):
        with pytest.raises(ValueError, match="days"):
            repo.forecast(e.id, days=bad)


def test_history_dates_each_recall_day_confirmation_and_refutation(repo):
    e = repo.add("the office is on floor 3", kind="fact", now=at(0))
    for d in (1, 1.2, 3):  # two recalls on day 1 count once
        repo.usage.record([e.id], "recall", now=at(d).timestamp())
    repo.touch(e.id, "confirm", now=at(2))
    repo.touch(e.id, "refute", now=at(4))
    before = files(repo.root)
    h = repo.history(e.id)
    assert (h.recalls, h.confirms, h.refutes) == (2, 1, 1)
    assert [(u.event, u.day) for u in h.uses] == [
        ("recall", "2024-03-02"), ("confirm", "2024-03-03"), ("recall", "2024-03-04"), ("refute", "2024-03-05")]
    assert h.uses[0].time == at(1).isoformat(timespec="seconds")
    assert h.undated == {"confirm": 0, "refute": 0}
    assert files(repo.root) == before


def test_history_after_compaction_keeps_the_days_and_the_last_times_and_counts_the_rest(repo):
    e = repo.add("deploys go through Flux", kind="fact", now=at(0))
    for d in (1, 2, 3):
        repo.touch(e.id, "confirm", now=at(d))
    repo.usage.record([e.id], "recall", now=at(5).timestamp())
    repo.usage.compact()
    h = repo.history(e.id)
    assert [(u.event, u.day) for u in h.uses] == [("confirm", "2024-03-04"), ("recall", "2024-03-06")]
    assert h.uses[1].time is None  # the recall's day is kept, its time was in the log
    assert h.undated == {"confirm": 2, "refute": 0} and h.confirms == 3


def test_history_of_a_note_renamed_by_hand_brings_its_records(repo):
    (repo.root / "notes").mkdir()
    (repo.root / "notes" / "mine.md").write_text("a note of mine\n", encoding="utf-8")
    repo.refresh()
    old = repo.get("notes/mine.md")
    repo.usage.record([old.id], "recall", now=at(1).timestamp())
    (repo.root / "notes" / "mine.md").rename(repo.root / "notes" / "renamed.md")
    repo.refresh()
    new = repo.get("notes/renamed.md")
    assert new.id != old.id
    assert [(u.day, u.time) for u in repo.history(new.id).uses] == [("2024-03-02", at(1).isoformat(timespec="seconds"))]


def test_attention_counts_recall_days_per_room_per_week_and_names_the_deserts(repo):
    now = dt.datetime(2024, 6, 5, 12, tzinfo=UTC)  # a Wednesday
    infra = repo.add("deploys go through Flux", kind="fact", room="infra", now=at(0))
    auth = repo.add("use PKCE on mobile", kind="rule", room="auth", now=at(0))
    old = repo.add("the old office", kind="fact", room="office", now=at(0))
    repo.archive(old.id, reason="moved")
    loose = repo.add("likes tea", kind="fact", now=at(0))
    days = {infra.id: ["2024-06-03", "2024-06-04", "2024-05-28", "2024-03-20"],
            auth.id: ["2024-02-01"], loose.id: ["2024-06-05"]}
    for eid, ds in days.items():
        for d in ds:
            repo.usage.record([eid], "recall", now=dt.datetime.fromisoformat(d + "T10:00:00+00:00").timestamp())
    repo.usage.record([loose.id], "recall", now=dt.datetime(2024, 6, 5, 18, tzinfo=UTC).timestamp())  # same day
    before = files(repo.root)
    a = repo.attention(weeks=3, desert_days=90, now=now)
    assert a.weeks == ("2024-05-20", "2024-05-27", "2024-06-03")
    assert a.rooms == {"": (0, 0, 1), "auth": (0, 0, 0), "infra": (0, 1, 2), "office": (0, 0, 0)}
    assert a.last_recall == {"": "2024-06-05", "auth": "2024-02-01", "infra": "2024-06-04", "office": None}
    assert a.deserts == ("auth",)  # office holds only an archived memory: no desert, a closed room
    assert files(repo.root) == before


def test_attention_refuses_a_silly_span(repo):
    for kw in ({"weeks": 0}, {"weeks": 521}, {"desert_days": 0}, {"weeks": 1.5}):
        with pytest.raises(ValueError):
            repo.attention(**kw)

