"""Lifecycle: decay, strength, metabolism, touch, supersede, consolidate.

Every time-dependent test passes an explicit, timezone-aware ``now`` (creation
time through ``add(now=...)``, confirmations through ``touch(now=...)``,
recalls at a chosen time through the usage log's ``record(..., now=<unix
time>)``), so nothing here depends on the clock of the machine running it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import multiprocessing
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

import sediment.disk.usage
from sediment import LAYERS, InvalidInput, PolicyError, Repository
from sediment.model import entry as E
from sediment.model import names as N
from sediment.cli.main import main
from sediment.model.lifecycle import OVERTURN_WORDS, bigram_similarity, overturns
from sediment.model.names import split_path

UTC = dt.timezone.utc
T0 = dt.datetime(2024, 3, 1, 12, 0, 0, tzinfo=UTC)
DAY = 86400.0


def at(days: float) -> dt.datetime:
    """T0 plus some days (fractions allowed)."""
    return T0 + dt.timedelta(days=days)


def recall(repo: Repository, eid: str, days: float, n: int = 1) -> None:
    """n recalls of one memory, the last at T0 + days and one a day before it
    (a memory counts one recall a day; search records at the real clock)."""
    for k in range(n):
        repo.usage.record([eid], "recall", now=at(days - k).timestamp())


def snapshot(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """sha256 of every file under the root (notes, _system, everything)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            rel = p.relative_to(root).as_posix()
            if rel.startswith(".git/") or any(rel.startswith(s) for s in skip):
                continue
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def note_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for layer in LAYERS for p in sorted((root / layer).rglob("*.md"))}


def ids_on_disk(root: Path) -> Counter:
    c: Counter = Counter()
    for rel, data in note_bytes(root).items():
        c[E.parse(data, rel).id] += 1
    return c


def on_disk(repo: Repository, eid: str) -> E.Entry:
    """The memory as its file says now (found by id, wherever it is)."""
    for rel, data in note_bytes(repo.root).items():
        e = E.parse(data, rel)
        if e.id == eid:
            return e
    raise AssertionError(f"{eid} is not on disk")


def plan_dict(p) -> list[dict]:
    return [m.to_dict() for m in p.moves]


def move_of(p, eid: str):
    ms = [m for m in p.moves if m.id == eid]
    assert len(ms) <= 1
    return ms[0] if ms else None


@pytest.fixture
def repo(tmp_path):
    r = Repository(tmp_path / "root")
    yield r
    r.close()


TEXT = ("The nightly build on the release branch runs the full integration suite "
        "and publishes the artefacts to the internal mirror. ")


def add(repo: Repository, title: str, *, days: float = 0, kind: str | None = "fact",
        value: float | None = 0.3, **kw) -> E.Entry:
    return repo.add(kw.pop("text", f"{title}. {TEXT}"), title=title, kind=kind, value=value,
                    now=at(days), **kw)


# ===========================================================================
# kinds and policy


ISSUE_KINDS = {
    "core": None,
    "fact": [15, 365, 1095],
    "rule": [120, 730, 3650],
    "skill": [15, 60, 365],
    "daily-core": [20, 60, 180],
    "daily": [5, 20, 45],
    "mood": [0.125, 1, 3],
    "inbox": [0, 1, 14],
}


def test_default_kinds_table_is_the_documented_one_and_written_to_policy_yaml(repo):
    kinds = repo.policy.kinds
    for k, clocks in ISSUE_KINDS.items():
        assert k in kinds
        if clocks is None:
            assert kinds[k] is None
        else:
            assert [float(x) for x in kinds[k]] == [float(x) for x in clocks], k
    text = (repo.root / "_system" / "policy.yaml").read_text(encoding="utf-8")
    assert "fact: [15, 365, 1095]" in text and "core: null" in text and "core_max: 32" in text


def test_kinds_table_in_policy_yaml_is_editable(tmp_path):
    root = tmp_path / "root"
    Repository(root).close()
    pol = root / "_system" / "policy.yaml"
    pol.write_text(pol.read_text(encoding="utf-8").replace("fact: [15, 365, 1095]", "fact: [1, 10, 100]"),
                   encoding="utf-8")
    with Repository(root) as r:
        e = add(r, "edited clocks", value=0.8)
        assert r.strength(e.id, now=at(1)).decay == 1.0
        assert r.strength(e.id, now=at(11)).decay == pytest.approx(0.5)
        assert r.strength(e.id, now=at(11)).half_life == pytest.approx(10)


def test_the_33rd_core_memory_is_refused_with_a_message_that_says_so(repo):
    ids = [add(repo, f"core rule {i}", kind="core", value=0.9).id for i in range(32)]
    before = note_bytes(repo.root)
    with pytest.raises(PolicyError) as exc:
        add(repo, "one core too many", kind="core")
    msg = str(exc.value)
    assert "32" in msg and "core" in msg
    assert note_bytes(repo.root) == before  # nothing written
    # an archived core memory no longer counts
    repo.archive(ids[0], reason="retired")
    assert add(repo, "now there is room", kind="core").kind == "core"


@pytest.mark.parametrize("kind", ["no-such-kind", "Fact"])
def test_an_unknown_kind_is_refused(repo, kind):
    with pytest.raises(InvalidInput, match="is not one of core, fact"):
        repo.add("feeling a bit tired after the long meeting today", kind=kind, now=T0)


def test_a_missing_kind_goes_to_inbox_marked_unclassified(repo):
    e = repo.add("feeling a bit tired after the long meeting today", now=T0)
    assert e.kind == "inbox"
    assert e.meta.get("unclassified")  # True, or the kind that was given
    disk = on_disk(repo, e.id)
    assert disk.meta["kind"] == "inbox" and disk.meta.get("unclassified")
    known = repo.add("the CI runs on Linux", kind="fact", now=T0)
    assert known.kind == "fact" and "unclassified" not in known.meta


# ===========================================================================
# strength


@pytest.mark.parametrize("kind", [k for k, c in ISSUE_KINDS.items() if c is not None])
def test_decay_is_one_within_grace_then_halves_every_half_life(repo, kind):
    grace, half, _ = ISSUE_KINDS[kind]
    e = add(repo, f"a {kind} memory", kind=kind, value=0.8)
    s = repo.strength(e.id, now=at(0))
    assert s.decay == 1.0 and s.strength == pytest.approx(0.8)
    assert repo.strength(e.id, now=at(grace * 0.99)).decay == 1.0
    assert repo.strength(e.id, now=at(grace)).decay == 1.0
    for n in (0.5, 1, 2, 3):
        s = repo.strength(e.id, now=at(grace + n * half))
        assert s.decay == pytest.approx(0.5 ** n, rel=1e-6), (kind, n)
        assert s.strength == pytest.approx(0.8 * 0.5 ** n, rel=1e-6)
        assert s.half_life == pytest.approx(half)


@pytest.mark.parametrize("recalls", [1, 3, 7, 20, 1000])
def test_recalls_stretch_the_half_life_at_most_four_times(repo, recalls):
    e = add(repo, "recalled fact", value=0.6)
    recall(repo, e.id, 0, n=recalls)  # at creation time: last use stays T0
    factor = min(4.0, 1 + 0.6 * math.log2(1 + recalls))
    s = repo.strength(e.id, now=at(15 + 365 * factor))
    assert s.recalls == recalls
    assert s.half_life == pytest.approx(365 * factor)
    assert s.decay == pytest.approx(0.5, rel=1e-6)
    if recalls >= 1000:
        assert s.half_life == pytest.approx(4 * 365)


def test_a_recall_or_confirmation_is_a_use_that_restarts_the_clock(repo):
    a = add(repo, "recalled late", value=0.6)
    b = add(repo, "confirmed late", value=0.6)
    c = add(repo, "never used", value=0.6)
    recall(repo, a.id, 400)
    repo.touch(b.id, "confirm", now=at(400))
    assert repo.strength(a.id, now=at(410)).decay == 1.0
    assert repo.strength(b.id, now=at(410)).decay == 1.0
    assert repo.strength(c.id, now=at(410)).decay < 0.5
    assert repo.strength(b.id, now=at(410)).confirms == 1


def test_core_and_bedrock_never_decay(repo):
    core = add(repo, "always answer in the user's language", kind="core", value=0.9)
    deep = add(repo, "bedrock fact", kind="mood", value=0.7, layer="bedrock")
    century = at(36500)
    for e in (core, deep):
        s = repo.strength(e.id, now=century)
        assert s.decay == 1.0 and s.strength == pytest.approx(e.value)
        assert "never decays" in s.explain()
    p = repo.metabolize(now=century)
    assert move_of(p, deep.id) is None
    m = move_of(p, core.id)
    assert m is not None and m.target == "bedrock"  # kind core goes down, never to archive
    repo.metabolize(now=century, dry_run=False)
    assert repo.get(core.id).layer == "bedrock"
    for later in (century, at(100000)):
        assert move_of(repo.metabolize(now=later), core.id) is None
        assert repo.strength(core.id, now=later).decay == 1.0


@pytest.mark.parametrize("weights,expected", [
    ({"importance": 1, "emotional": 1, "recurrence": 1, "unresolved": 1}, 0.0),
    ({"importance": 5, "emotional": 5, "recurrence": 5, "unresolved": 5}, 1.0),
    ({"importance": 5, "emotional": 1, "recurrence": 1, "unresolved": 1}, 0.35),
    ({"importance": 1, "emotional": 5, "recurrence": 1, "unresolved": 1}, 0.25),
    ({"importance": 1, "emotional": 1, "recurrence": 5, "unresolved": 1}, 0.25),
    ({"importance": 1, "emotional": 1, "recurrence": 1, "unresolved": 5}, 0.15),
    ({"importance": 5, "emotional": 1, "recurrence": 3, "unresolved": 5}, 0.625),
    ({"importance": 3, "emotional": 3, "recurrence": 3, "unresolved": 3}, 0.5),
])
def test_value_from_four_weights(repo, weights, expected):
    e = repo.add("weighted memory", kind="fact", weights=weights, now=T0)
    assert e.value == pytest.approx(expected, abs=1e-4)
    assert repo.strength(e.id, now=at(1)).strength == pytest.approx(expected, abs=1e-4)
    assert on_disk(repo, e.id).value == pytest.approx(expected, abs=1e-4)


def test_strength_explains_itself(repo):
    e = add(repo, "explained", value=0.8)
    recall(repo, e.id, 0, n=3)
    text = repo.strength(e.id, now=at(100)).explain()
    assert "0.80" in text and "3 recall(s)" in text and "grace" in text


# ===========================================================================
# usage lives outside the notes


def test_reading_and_touching_leave_every_note_byte_identical(repo):
    a = add(repo, "pkce on mobile", text="Use PKCE on mobile clients, no client secret.")
    b = add(repo, "登录", text="移动端登录用 PKCE，不再下发 client secret", kind="rule")
    add(repo, "unrelated", text="The office plants need water on Mondays.")
    before = note_bytes(repo.root)
    for q in ("PKCE", "mobile", "登录", "secret", "plants", "nothing-matches-this"):
        repo.search(q)
    repo.get(a.id), repo.list(), repo.strength(b.id, now=at(3))
    repo.touch(a.id, "confirm", now=at(1))
    repo.touch(b.id, "refute", now=at(2))
    repo.metabolize(now=at(30))
    assert note_bytes(repo.root) == before
    assert repo.strength(a.id).recalls == 1  # ... and yet the reads were counted, once a day
    assert list((repo.root / "_system" / "usage").iterdir())


def test_usage_survives_reopening_and_compaction(tmp_path):
    root = tmp_path / "root"
    with Repository(root) as r:
        e = add(r, "kubernetes", text="Kubernetes upgrades happen in the maintenance window.")
        for _ in range(3):  # today: one recall
            assert [h.entry.id for h in r.search("kubernetes")] == [e.id]
        r.touch(e.id, "confirm", now=at(1))
        r.touch(e.id, "refute", now=at(0.5))
        recall(r, e.id, 2)
        plan1 = plan_dict(r.metabolize(now=at(40)))
    with Repository(root) as r:
        s = r.strength(e.id, now=at(40))
        assert (s.recalls, s.confirms) == (2, 1)
        assert r.usage.load()[e.id].refutes == 1
        assert plan_dict(r.metabolize(now=at(40))) == plan1
        r.usage.compact()
        r.search("kubernetes")  # today again: compaction kept the day, so it counts nothing
        recall(r, e.id, 3)
    with Repository(root) as r:
        s = r.strength(e.id, now=at(40))
        assert (s.recalls, s.confirms) == (3, 1)
        assert {at(2).date().isoformat(), at(3).date().isoformat()} <= r.usage.load()[e.id].days


def test_recalls_are_counted_only_for_what_search_returned(repo):
    a = add(repo, "apple banana", text="apple banana smoothie recipe")
    b = add(repo, "apple cherry", text="apple cherry pie recipe")
    c = add(repo, "durian", text="durian is banned on the train")
    hits = repo.search("apple", limit=1)
    assert len(hits) == 1
    got = hits[0].entry.id
    other = b.id if got == a.id else a.id
    assert repo.strength(got).recalls == 1
    assert repo.strength(other).recalls == 0
    assert repo.strength(c.id).recalls == 0
    assert [h.entry.id for h in repo.search("durian", record=False)] == [c.id]
    assert repo.strength(c.id).recalls == 0
    assert repo.search("zeppelin") == []
    assert {h.entry.id for h in repo.search("apple")} == {a.id, b.id}
    # the second search today counts only what the first did not return
    assert repo.strength(got).recalls == 1 and repo.strength(other).recalls == 1
    assert repo.strength(c.id).recalls == 0


def _recall_worker(root: str, query: str, n: int, compact_bytes: int | None, first_day: int) -> int:
    if compact_bytes:
        sediment.disk.usage.COMPACT_BYTES = compact_bytes  # compaction races with the appends
    got = 0
    for start in range(0, n, 20):  # reopen now and then, as separate CLI calls would
        r = Repository(root, create=False)
        for k in range(start, min(n, start + 20)):
            # each record on a day of its own, since a memory counts one recall a day
            ids = [h.entry.id for h in r.search(query, record=False)]
            r.usage.record(ids, "recall", now=at(first_day + k).timestamp())
            got += len(ids)
        r.close()
    return got


@pytest.mark.slow
@pytest.mark.parametrize("compact_bytes", [None, 4096], ids=["append-only", "with-compaction"])
def test_concurrent_processes_recording_usage_lose_no_record(tmp_path, compact_bytes):
    root = tmp_path / "root"
    with Repository(root) as r:
        e = add(r, "zebra crossing", text="The zebra crossing outside the office has a button.")
        add(r, "other", text="Something else entirely.")
    before = note_bytes(root)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        counts = pool.starmap(_recall_worker, [(str(root), "zebra", 200, compact_bytes, 200 * w)
                                               for w in range(4)])
    assert counts == [200] * 4
    with Repository(root) as r:
        u = r.usage.load()[e.id]
        assert (u.recalls, len(u.days)) == (800, 800)
    assert note_bytes(root) == before


# ===========================================================================
# metabolize


def varied_root(repo: Repository) -> dict[str, E.Entry]:
    """One of each situation metabolism knows about."""
    m = {
        "high": add(repo, "high value", value=0.9),
        "low": add(repo, "low value", value=0.2),
        "recalled": add(repo, "recalled twice", value=0.3),
        "confirmed": add(repo, "confirmed twice", value=0.3),
        "refuted": add(repo, "refuted", value=0.6),
        "old": add(repo, "old unused", value=0.5, kind="daily"),
        "core": add(repo, "core", kind="core", value=0.9),
        "fragment": add(repo, "fragment", kind=None, value=0.9),
        "superseded": add(repo, "superseded", value=0.5),
        "newer": add(repo, "newer", value=0.5, days=1),
    }
    recall(repo, m["recalled"].id, 1, n=2)
    repo.touch(m["confirmed"].id, "confirm", now=at(1))
    repo.touch(m["confirmed"].id, "confirm", now=at(2))
    repo.touch(m["refuted"].id, "refute", now=at(1))
    repo.supersede(m["superseded"].id, m["newer"].id, reason="newer measurement")
    return m


def test_dry_run_writes_nothing(repo):
    varied_root(repo)
    before = snapshot(repo.root)
    for days in (0, 2, 10, 100, 1000):
        p = repo.metabolize(now=at(days))
        assert not p.applied and p.report is None
    assert repo.metabolize(now=at(10)).moves  # a plan with work in it, not an empty one
    assert snapshot(repo.root) == before


def test_same_root_and_same_now_give_the_same_plan(tmp_path):
    root = tmp_path / "root"
    with Repository(root) as r:
        varied_root(r)
        first = plan_dict(r.metabolize(now=at(10)))
        assert first
        assert plan_dict(r.metabolize(now=at(10))) == first
        with Repository(root) as other:  # a second instance on the same root
            assert plan_dict(other.metabolize(now=at(10))) == first
    with Repository(root) as r:
        assert plan_dict(r.metabolize(now=at(10))) == first
        assert r.metabolize(now=at(10)).to_dict()["counts"] == Counter(
            f"{m['from']}→{m['to']}" for m in first)


def test_applying_then_planning_again_with_the_same_now_is_empty(repo):
    varied_root(repo)
    p = repo.metabolize(now=at(10), dry_run=False, confirm=True)
    assert p.applied and p.moves
    assert repo.metabolize(now=at(10)).moves == []
    before = snapshot(repo.root)
    again = repo.metabolize(now=at(10), dry_run=False, confirm=True)
    assert again.moves == [] and again.report is None
    assert snapshot(repo.root) == before


def test_plan_of_the_varied_root_and_its_reasons(repo):
    m = varied_root(repo)
    p = repo.metabolize(now=at(10))
    by = {k: move_of(p, e.id) for k, e in m.items()}
    assert (by["high"].source, by["high"].target) == ("shallow", "sediment")
    assert "value 0.90" in by["high"].reason
    assert by["low"] is None
    assert by["recalled"].target == "sediment" and "recalled 2 times" in by["recalled"].reason
    assert by["confirmed"].target == "bedrock" and "confirmed 2 times" in by["confirmed"].reason
    assert by["refuted"].target == "archive" and "refuted" in by["refuted"].reason
    assert by["refuted"].status == "archived"
    assert by["old"] is None  # daily: 10 days, still above the line
    assert by["core"].target == "bedrock" and "core" in by["core"].reason
    assert by["fragment"].target == "archive"  # inbox: never promoted, decays fast
    assert by["superseded"].target == "archive"
    assert f"[[{m['newer'].name}]]" in by["superseded"].reason
    assert by["newer"] is None
    for mv in p.moves:
        assert mv.reason and "\n" not in mv.reason and any(ch.isalpha() for ch in mv.reason)
    p = repo.metabolize(now=at(80))
    assert move_of(p, m["old"].id).target == "archive"
    assert "strength" in move_of(p, m["old"].id).reason or "unused" in move_of(p, m["old"].id).reason


@pytest.mark.parametrize("signal,why", [
    ("value", "value 0.85"), ("recalls", "recalled 2 times"), ("confirm", "confirmed 1 time"),
])
def test_promotion_to_sediment_on_a_signal_after_the_minimum_age(repo, signal, why):
    e = add(repo, "candidate", value=0.85 if signal == "value" else 0.3)
    if signal == "recalls":
        recall(repo, e.id, 0.1, n=2)
    elif signal == "confirm":
        repo.touch(e.id, "confirm", now=at(0.1))
    assert move_of(repo.metabolize(now=at(0.5)), e.id) is None  # too young
    m = move_of(repo.metabolize(now=at(1)), e.id)
    assert m is not None and (m.source, m.target) == ("shallow", "sediment")
    assert why in m.reason
    repo.metabolize(now=at(1), dry_run=False)
    moved = repo.get(e.id)
    assert moved.layer == "sediment" and moved.meta["reason"] == m.reason
    assert moved.status == "active"


def test_a_memory_asked_for_in_a_loop_counts_one_recall_a_day(repo):
    """DESIGN.md: any call more than once a day is one recall per memory per
    day, so an agent that searches in a loop cannot promote what it asks for."""
    looped = add(repo, "asked for in a loop", value=0.3)
    for _ in range(50):
        repo.usage.record([looped.id], "recall", now=at(0.2).timestamp())
    assert repo.strength(looped.id, now=at(1)).recalls == 1
    assert move_of(repo.metabolize(now=at(1)), looped.id) is None
    repo.usage.record([looped.id], "recall", now=at(1.2).timestamp())  # the next day
    assert repo.strength(looped.id, now=at(2)).recalls == 2
    repo.usage.compact()  # the day is kept through compaction: still one a day
    repo.usage.record([looped.id], "recall", now=at(1.3).timestamp())
    assert repo.strength(looped.id, now=at(2)).recalls == 2
    assert move_of(repo.metabolize(now=at(2)), looped.id).target == "sediment"


def test_two_machines_recalling_on_one_day_count_one_recall():
    from sediment.model.usage import Usage
    from sediment.disk.shared import combine

    mine = {"m": Usage(2, 0, 0, {"2026-03-01", "2026-03-02"}, 10.0)}
    combine(mine, {"m": Usage(2, 1, 0, {"2026-03-02", "2026-03-03"}, 20.0)})
    u = mine["m"]
    assert (u.recalls, sorted(u.days), u.confirms, u.last_use) == (
        3, ["2026-03-01", "2026-03-02", "2026-03-03"], 1, 20.0)


def test_one_recall_or_low_value_is_not_enough_to_promote(repo):
    once = add(repo, "recalled once", value=0.3)
    low = add(repo, "low value", value=0.69)
    recall(repo, once.id, 0.5)
    for days in (1, 2, 5, 14):
        p = repo.metabolize(now=at(days))
        assert move_of(p, once.id) is None and move_of(p, low.id) is None


def test_inbox_fragments_are_never_promoted(repo):
    f = repo.add("call the plumber about the leak", value=1.0, now=T0)  # no kind
    repo.touch(f.id, "confirm", now=at(1))
    repo.touch(f.id, "confirm", now=at(2))
    recall(repo, f.id, 2, n=5)
    m = move_of(repo.metabolize(now=at(2.5)), f.id)
    assert m is None or m.target == "archive"


def test_time_passing_or_many_runs_never_promote_an_unused_memory(repo):
    low = add(repo, "low value unused", value=0.3)
    mid = add(repo, "mid value rule", value=0.5, kind="rule")
    high = add(repo, "high value unused", value=0.9)
    layers = {low.id: [], mid.id: [], high.id: []}
    for _ in range(20):  # many runs at the same now …
        repo.metabolize(now=at(0.5), dry_run=False, confirm=True)
    for i in range(20):  # … and at increasing now
        repo.metabolize(now=at(1 + 100 * i), dry_run=False, confirm=True)
        for eid in layers:
            layers[eid].append(repo.get(eid).layer)
    assert "sediment" not in layers[low.id] and "bedrock" not in layers[low.id]
    assert "sediment" not in layers[mid.id]
    assert all("bedrock" not in seen for seen in layers.values())
    assert layers[high.id][0] == "sediment"  # promoted on value, never crystallized
    assert layers[low.id][-1] == "archive"  # and what nobody used decays away
    assert "decayed" in repo.get(low.id).meta["reason"] or "unused" in repo.get(low.id).meta["reason"]


def test_sediment_to_bedrock_on_two_confirmations_when_old_enough(repo):
    e = add(repo, "confirmed twice", value=0.3)
    repo.touch(e.id, "confirm", now=at(1))
    repo.touch(e.id, "confirm", now=at(2))
    p = repo.metabolize(now=at(3), dry_run=False)
    assert move_of(p, e.id).target == "sediment"  # too young to crystallize
    assert repo.get(e.id).layer == "sediment"
    assert move_of(repo.metabolize(now=at(6.9)), e.id) is None
    m = move_of(repo.metabolize(now=at(7)), e.id)
    assert (m.source, m.target) == ("sediment", "bedrock") and "confirmed 2 times" in m.reason
    repo.metabolize(now=at(7), dry_run=False)
    assert repo.get(e.id).layer == "bedrock"


def test_sediment_to_bedrock_on_recalls_on_three_distinct_days(repo):
    three = add(repo, "recalled on three days", value=0.3)
    two = add(repo, "recalled a lot on two days", value=0.3)
    for d in (1, 2, 3):
        recall(repo, three.id, d)
    for d in (1, 2):  # ten calls a day count one recall a day
        repo.usage.record([two.id] * 10, "recall", now=at(d).timestamp())
    one_confirm = add(repo, "confirmed once", value=0.9)
    repo.touch(one_confirm.id, "confirm", now=at(1))
    p = repo.metabolize(now=at(30))
    m = move_of(p, three.id)
    assert m.target == "bedrock" and "3 distinct days" in m.reason
    assert move_of(p, two.id).target == "sediment"
    assert move_of(p, one_confirm.id).target == "sediment"


def test_a_confirmation_day_is_not_a_recall_day(repo):
    """Recalled on two days and confirmed once on a third: neither 'confirmed at
    least twice' nor 'recalled on three distinct days' holds, so it must not
    crystallize (and no reason may say 'recalled on 3 distinct days')."""
    e = add(repo, "two recall days and one confirmation", value=0.3)
    recall(repo, e.id, 1)
    recall(repo, e.id, 2)
    repo.touch(e.id, "confirm", now=at(3))
    m = move_of(repo.metabolize(now=at(30)), e.id)
    assert m is not None and m.target == "sediment", m


def test_applying_is_journaled_and_changes_only_status_and_reason(repo):
    varied_root(repo)
    planned = repo.metabolize(now=at(10))
    before = {e.id: (e.path, (repo.root / e.path).read_bytes()) for e in repo.list()}
    p = repo.metabolize(now=at(10), dry_run=False, confirm=True)
    assert plan_dict(p) == plan_dict(planned)
    moved = {mv.id for mv in p.moves}
    for mv in p.moves:
        old_path, old_bytes = before[mv.id]
        assert not (repo.root / old_path).exists()
        new = on_disk(repo, mv.id)
        assert new.layer == mv.target and new.room == split_path(old_path)[1]
        assert new.name == split_path(old_path)[2]
        old = E.parse(old_bytes, old_path)
        assert new.body == old.body
        assert new.meta["reason"] == mv.reason
        assert new.meta.get("status") == (mv.status or old.meta.get("status"))
        def rest(meta): return {k: v for k, v in meta.items() if k not in ("status", "reason")}
        assert rest(new.meta) == rest(old.meta)
        # byte level: only the status and reason lines differ
        new_lines = (repo.root / new.path).read_bytes().decode().splitlines()
        old_lines = old_bytes.decode().splitlines()
        changed = set(new_lines) ^ set(old_lines)
        assert all(ln.startswith(("status:", "reason:")) for ln in changed), changed
    for e in repo.list():  # untouched memories are byte-identical where they were
        if e.id not in moved:
            assert before[e.id][0] == e.path
            assert (repo.root / e.path).read_bytes() == before[e.id][1]
    # journaled: a begin and a done for each move
    recs = [json.loads(ln) for ln in (repo.root / "_system" / "journal.log").read_text().splitlines()[1:]]
    begins = {r["seq"]: r for r in recs if r.get("phase") == "begin" and r.get("op") == "metabolize"}
    dones = {r["seq"] for r in recs if r.get("phase") == "done" and r.get("op") == "metabolize"}
    assert {r["id"] for r in begins.values()} == moved
    assert set(begins) <= dones
    # the report
    assert p.report and p.report.startswith("_system/reports/") and p.report.endswith(".md")
    report = (repo.root / p.report).read_text(encoding="utf-8")
    for mv in p.moves:
        assert f"`{on_disk(repo, mv.id).name}`" in report  # named, not linked (test_reports.py)
        # the reason, its [[links]] written as code spans
        assert re.sub(r"\[\[([^\]]*)\]\]", r"`\1`", mv.reason).replace("|", "/") in report
    assert not repo.check()


def test_applying_a_plan_that_archives_needs_confirm(repo):
    m = varied_root(repo)
    before = snapshot(repo.root, skip=("_system/cache/",))
    with pytest.raises(PolicyError) as exc:
        repo.metabolize(now=at(10), dry_run=False)
    assert "confirm" in str(exc.value)
    assert snapshot(repo.root, skip=("_system/cache/",)) == before  # nothing moved, not even promotions
    assert repo.get(m["high"].id).layer == "shallow"
    p = repo.metabolize(now=at(10), dry_run=False, confirm=True)
    assert p.applied and repo.get(m["refuted"].id).layer == "archive"


# ===========================================================================
# touch


def test_refute_archives_at_the_next_metabolize(repo):
    e = add(repo, "wrong belief", text="The API rate limit is 10 requests per second.", value=0.8)
    before = note_bytes(repo.root)
    repo.touch(e.id, "refute", now=at(1))
    assert note_bytes(repo.root) == before  # the file does not change until then
    m = move_of(repo.metabolize(now=at(1)), e.id)
    assert m.target == "archive" and m.status == "archived" and "refuted" in m.reason
    repo.metabolize(now=at(1), dry_run=False, confirm=True)
    got = repo.get(e.id)
    assert got.layer == "archive" and got.status == "archived" and "refuted" in got.meta["reason"]
    assert repo.search("rate limit") == []
    assert [h.entry.id for h in repo.search("rate limit", include_archive=True)] == [e.id]


def test_refute_with_confirm_archives_at_once(repo):
    e = add(repo, "wrong at once", value=0.8)
    got = repo.touch(e.id, "refute", confirm=True, now=at(1))
    assert got.layer == "archive" and got.status == "archived" and "refuted" in got.meta["reason"]
    assert on_disk(repo, e.id).layer == "archive"
    assert ids_on_disk(repo.root)[e.id] == 1


def test_a_later_confirmation_outweighs_a_refutation(repo):
    e = add(repo, "disputed", value=0.3)
    repo.touch(e.id, "refute", now=at(1))
    repo.touch(e.id, "confirm", now=at(2))
    m = move_of(repo.metabolize(now=at(3)), e.id)
    assert m is not None and m.target == "sediment"


def test_touch_rejects_an_unknown_outcome(repo):
    e = add(repo, "x")
    with pytest.raises(InvalidInput):
        repo.touch(e.id, "maybe")
    assert repo.strength(e.id).confirms == 0


# ===========================================================================
# supersede


def test_supersede_links_both_ways_and_keeps_the_texts(repo):
    old = add(repo, "latency 200ms", text="p99 latency of the search API is 200 ms.")
    new = add(repo, "latency 120ms", text="p99 latency of the search API is 120 ms after caching.", days=1)
    old_body, new_body = on_disk(repo, old.id).body, on_disk(repo, new.id).body
    got = repo.supersede(old.id, new.id, reason="measured again after the cache landed")
    assert got.status == "superseded"
    o, n = on_disk(repo, old.id), on_disk(repo, new.id)
    assert o.status == "superseded" and o.meta["superseded_by"] == [f"[[{new.name}]]"]
    assert "measured again" in o.meta["reason"]
    assert f"[[{old.name}]]" in n.meta["supersedes"]
    assert n.status == "active"
    assert (o.body, n.body) == (old_body, new_body)
    m = move_of(repo.metabolize(now=at(2)), old.id)
    assert m.target == "archive" and f"[[{new.name}]]" in m.reason
    repo.metabolize(now=at(2), dry_run=False, confirm=True)
    o = repo.get(old.id)
    assert o.layer == "archive" and o.status != "active" and o.body == old_body
    with pytest.raises(InvalidInput):
        repo.supersede(new.id, new.id)


@pytest.mark.parametrize("overturn", [
    "Actually, the build needs Node 20.",
    "actually the build needs Node 20",
    "No longer true: the build needs Node 20 now.",
    "Scratch that, the build needs Node 20.",
    "其实构建需要 Node 20。",
    "不对，构建需要 Node 20。",
])
def test_an_overturning_judgement_supersedes_at_most_two_older_memories_of_its_event(repo, overturn):
    ev = "build-2024-03"
    first = add(repo, "node 16", text="The build needs Node 16.", event=ev, days=0)
    second = add(repo, "node 18", text="The build needs Node 18.", event=ev, days=0.1)
    third = add(repo, "node lts", text="The build uses the LTS Node.", event=ev, days=0.2)
    core = add(repo, "core of event", text="Builds must be reproducible.", kind="core", event=ev, days=0.3)
    elsewhere = add(repo, "other event", text="The build needs Node 14.", event="other", days=0.3)
    new = repo.add(overturn, title="overturn", kind="fact", event=ev, now=at(0.5))
    states = {e.id: on_disk(repo, e.id) for e in (first, second, third, core, elsewhere, new)}
    assert states[second.id].status == "superseded" and states[third.id].status == "superseded"
    assert states[first.id].status == "active"  # at most two, the most recent ones
    assert states[core.id].status == "active"  # never a core memory
    assert states[elsewhere.id].status == "active"  # another event
    for e in (second, third):
        assert states[e.id].meta["superseded_by"] == [f"[[{new.name}]]"]
        assert f"[[{e.name}]]" in states[new.id].meta["supersedes"]
        assert states[e.id].body == e.body  # history text is never rewritten
    assert states[new.id].body.strip() == overturn


@pytest.mark.parametrize("text,event", [
    ("We actually moved the build to Node 20.", "ev"),  # overturn word not at the start
    ("The build needs Node 20.", "ev"),
    ("Actually, the build needs Node 20.", "another-event"),
    ("Actually, the build needs Node 20.", None),
])
def test_no_overturn_no_supersede(repo, text, event):
    old = add(repo, "node 16", text="The build needs Node 16.", event="ev")
    repo.add(text, title="new", kind="fact", now=at(1), **({"event": event} if event else {}))
    assert on_disk(repo, old.id).status == "active"


def test_overturn_words_are_documented_in_both_languages():
    words = set(OVERTURN_WORDS)
    assert {"不对", "其实", "改为", "actually", "no longer"} <= words
    for text in ("改为使用 Node 20 构建。", "更正：构建需要 Node 20。", "  No longer: Node 20",
                 "「其实」是 Node 20", "ACTUALLY it is Node 20", "update: Node 20"):
        assert overturns(text), text
    for text in ("我们其实用 Node 20", "We actually use Node 20", "Node 20 is no longer needed", ""):
        assert not overturns(text), text


def test_a_retry_with_the_same_payload_creates_nothing_new(repo):
    ev = "incident-42"
    a = add(repo, "root cause", text="The root cause was an expired certificate.", event=ev)
    again = add(repo, "root cause", text="The root cause was an expired certificate.", event=ev, days=1)
    assert again.id == a.id
    b = add(repo, "blast radius", text="Only the EU region was affected.", event=ev, days=0.1)
    over = add(repo, "correction", text="Actually, the root cause was a DNS change.", event=ev, days=2)
    files = note_bytes(repo.root)
    over2 = add(repo, "correction", text="Actually, the root cause was a DNS change.", event=ev, days=3)
    assert over2.id == over.id
    assert note_bytes(repo.root) == files
    assert len(repo.list()) == 3
    assert {e.id for e in repo.list(status="superseded")} == {a.id, b.id}


# ===========================================================================
# consolidate


CONSOLIDATED = "The staging database password rotates on the first Monday of every month"


def test_consolidate_retires_listed_contained_and_similar_fragments(repo):
    def frag(text, d=0): return repo.add(text, now=at(d))  # no kind: inbox fragments
    listed = frag("pw rotation?? ask ops")
    contained = frag("rotates on the first Monday")
    similar = frag("staging database password rotates first Monday every month!")
    unrelated = frag("Buy oat milk for the office kitchen")
    near_miss = frag("password manager for the staging team")
    fact = add(repo, "a real fact", text="rotations happen on the first Monday", kind="fact")
    assert contained.text.strip() in CONSOLIDATED
    assert bigram_similarity(similar.text, CONSOLIDATED) >= 0.55
    assert similar.text.strip() not in CONSOLIDATED
    assert bigram_similarity(unrelated.text, CONSOLIDATED) < 0.55
    assert bigram_similarity(near_miss.text, CONSOLIDATED) < 0.55
    new = repo.consolidate([listed.id], CONSOLIDATED, kind="fact", title="password rotation")
    assert new.kind == "fact" and new.layer == "shallow" and new.body.strip() == CONSOLIDATED
    assert sum(1 for e in repo.list() if e.body.strip() == CONSOLIDATED) == 1  # one memory
    retired = {listed.id, contained.id, similar.id}
    for eid in retired:
        e = on_disk(repo, eid)
        assert e.layer == "archive" and e.status == "superseded"
        assert e.meta["superseded_by"] == [f"[[{new.name}]]"]
        assert f"[[{e.name}]]" in on_disk(repo, new.id).meta["supersedes"]
    for eid in (unrelated.id, near_miss.id, fact.id):
        e = on_disk(repo, eid)
        assert e.layer == "shallow" and e.status == "active"
    assert ids_on_disk(repo.root) == Counter({e.id: 1 for e in repo.list()})


def test_consolidate_needs_a_real_kind_and_writes_nothing_otherwise(repo):
    f = repo.add("loose fragment", now=T0)
    before = note_bytes(repo.root)
    for kind in ("inbox", "nope"):
        with pytest.raises(InvalidInput):
            repo.consolidate([f.id], "loose fragment, now a fact", kind=kind)
    assert note_bytes(repo.root) == before


def test_a_fragment_written_unclassified_three_times_is_flagged(repo):
    text = "remember to check the flaky login test"
    first, second, third = (repo.add(text, now=at(i)) for i in range(3))
    assert "flag" not in first.meta and "flag" not in second.meta
    assert third.meta.get("flag") and "classif" in third.meta["flag"]
    assert on_disk(repo, third.id).meta.get("flag")
    other = repo.add("a different fragment", now=at(4))
    assert "flag" not in other.meta


# ===========================================================================
# Hypothesis: any sequence of operations


WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
KINDS = [None, "fact", "rule", "skill", "daily", "mood", "core"]  # (an unknown kind is refused)


class LifecycleMachine(RuleBasedStateMachine):
    """Operations in any order with a clock that only moves forward."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="sediment-lc-"))
        self.root = self.dir / "root"
        self.repo = Repository(self.root)
        self.now = T0
        self.ids: set[str] = set()
        self.order: list[str] = []

    def teardown(self) -> None:
        self.repo.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @initialize(kinds=st.lists(st.sampled_from(KINDS), min_size=1, max_size=4),
                value=st.sampled_from([None, 0.1, 0.5, 0.9]))
    def seed(self, kinds, value):
        for n, kind in enumerate(kinds):
            e = self.repo.add(f"{WORDS[n]} seed memory", kind=kind, value=value, now=self.now)
            self.ids.add(e.id)
            self.order.append(e.id)

    def pick(self, i: int) -> str:
        return self.order[i % len(self.order)]

    @rule(word=st.sampled_from(WORDS), kind=st.sampled_from(KINDS),
          value=st.sampled_from([None, 0.1, 0.5, 0.75, 1.0]),
          event=st.sampled_from([None, None, "ev1", "ev2"]), overturn=st.booleans(),
          n=st.integers(0, 2))
    def add(self, word, kind, value, event, overturn, n):
        text = ("Actually, " if overturn else "") + f"{word} note number {n}"
        kw = {"event": event} if event else {}
        try:
            e = self.repo.add(text, kind=kind, value=value, now=self.now, **kw)
        except PolicyError:  # the core cap
            return
        if e.id not in self.ids:
            self.ids.add(e.id)
            self.order.append(e.id)

    @rule(days=st.sampled_from([0.01, 0.5, 1, 3, 8, 8, 30, 120, 400]))
    def advance(self, days):
        self.now += dt.timedelta(days=days)

    @precondition(lambda self: self.order)
    @rule(i=st.integers(0, 100), outcome=st.sampled_from(["confirm", "confirm", "refute"]))
    def touch(self, i, outcome):
        self.repo.touch(self.pick(i), outcome, now=self.now)

    @precondition(lambda self: self.order)
    @rule(i=st.integers(0, 100))
    def confirm_twice(self, i):  # makes crystallization reachable in a short run
        self.repo.touch(self.pick(i), "confirm", now=self.now)
        self.repo.touch(self.pick(i), "confirm", now=self.now)

    @precondition(lambda self: self.order)
    @rule(i=st.integers(0, 100), n=st.integers(1, 3))
    def recall_now(self, i, n):
        self.repo.usage.record([self.pick(i)] * n, "recall", now=self.now.timestamp())

    @rule(word=st.sampled_from(WORDS))
    def search(self, word):
        for h in self.repo.search(word):
            assert h.entry.id in self.ids

    @precondition(lambda self: len(self.order) >= 2)
    @rule(i=st.integers(0, 100), j=st.integers(0, 100))
    def supersede(self, i, j):
        a, b = self.pick(i), self.pick(j)
        if a == b:
            return
        old, new = self.repo.get(a), self.repo.get(b)
        if new.status != "active" or old.status == "purged":
            # only an active memory supersedes; a purged one is never changed again
            with pytest.raises(InvalidInput):
                self.repo.supersede(a, b, reason="property test")
            return
        try:
            self.repo.supersede(a, b, reason="property test")
        except InvalidInput as exc:  # b descends from a: superseding would form a cycle
            assert "cycle" in str(exc)

    @rule()
    def metabolize_dry(self):
        before = snapshot(self.root)
        p1 = plan_dict(self.repo.metabolize(now=self.now))
        p2 = plan_dict(self.repo.metabolize(now=self.now))
        assert p1 == p2
        assert snapshot(self.root) == before

    @rule(days=st.sampled_from([0, 1, 8, 30, 200]))
    def metabolize_apply(self, days):
        self.now += dt.timedelta(days=days)
        planned = plan_dict(self.repo.metabolize(now=self.now))
        p = self.repo.metabolize(now=self.now, dry_run=False, confirm=True)
        assert plan_dict(p) == planned
        assert self.repo.metabolize(now=self.now).moves == []

    @rule()
    def reopen(self):
        self.repo.close()
        self.repo = Repository(self.root)

    @invariant()
    def each_memory_exactly_once_on_disk(self):
        c = ids_on_disk(self.root)
        assert set(c) == self.ids
        assert all(n == 1 for n in c.values()), c
        assert {e.id for e in self.repo.list()} == self.ids

    @invariant()
    def bedrock_only_on_a_positive_signal(self):
        usage = self.repo.usage.load()
        for e in self.repo.list(layer="bedrock"):
            u = usage.get(e.id)
            assert e.kind == "core" or (u is not None and (u.confirms >= 2 or (u.recalls and len(u.days) >= 3))), \
                (e.path, u)


LifecycleMachine.TestCase.settings = settings(
    max_examples=25, stateful_step_count=30, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_lifecycle_machine = LifecycleMachine.TestCase


# ===========================================================================
# CLI


def run(capsys, root: Path, *args: str) -> tuple[int, str, str]:
    code = main(["--root", str(root), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_lifecycle_verbs(tmp_path, capsys):
    root = tmp_path / "root"
    assert run(capsys, root, "init")[0] == 0
    with Repository(root) as r:
        high = add(r, "cli high", value=0.9)
        low = add(r, "cli low", value=0.2)
        old = add(r, "cli old", text="The cache TTL is 60 seconds.")
        new = add(r, "cli new", text="The cache TTL is 300 seconds.")
        frag = r.add("cache ttl 300 seconds?", now=T0)

    code, out, _ = run(capsys, root, "--json", "strength", low.id, "--now", at(15 + 365).isoformat())
    assert code == 0
    s = json.loads(out)
    assert s["decay"] == pytest.approx(0.5) and s["value"] == pytest.approx(0.2)
    code, out, _ = run(capsys, root, "strength", low.id, "--now", at(1).isoformat())
    assert code == 0 and "strength 0.200" in out and "value 0.20" in out and "grace" in out

    before = note_bytes(root)
    code, out, _ = run(capsys, root, "--json", "metabolize", "--now", at(2).isoformat())
    assert code == 0
    dry = json.loads(out)
    assert dry["applied"] is False and [m["id"] for m in dry["moves"]] == [high.id]
    assert dry["moves"][0]["reason"]
    code, out, _ = run(capsys, root, "metabolize", "--now", at(2).isoformat())
    assert code == 0 and "would move 1" in out
    assert note_bytes(root) == before

    code, out, _ = run(capsys, root, "--json", "metabolize", "--apply", "--now", at(2).isoformat())
    assert code == 0
    applied = json.loads(out)
    assert applied["applied"] is True and applied["report"].startswith("_system/reports/")
    with Repository(root) as r:
        assert r.get(high.id).layer == "sediment"

    code, out, _ = run(capsys, root, "touch", low.id, "confirm")
    assert code == 0 and "confirm" in out
    with Repository(root) as r:
        assert r.strength(low.id).confirms == 1

    code, out, _ = run(capsys, root, "supersede", old.id, new.id, "--reason", "raised the TTL")
    assert code == 0
    with Repository(root) as r:
        o = r.get(old.id)
        assert o.status == "superseded" and o.meta["superseded_by"] == [f"[[{new.name}]]"]

    code, out, _ = run(capsys, root, "--json", "consolidate", "The cache TTL is 300 seconds in prod.",
                       "--kind", "fact", "--fragment", frag.id)
    assert code == 0
    made = json.loads(out)
    with Repository(root) as r:
        assert r.get(frag.id).layer == "archive"
        assert r.get(made["id"]).kind == "fact"

    code, out, _ = run(capsys, root, "touch", low.id, "refute", "--confirm")
    assert code == 0
    with Repository(root) as r:
        assert r.get(low.id).layer == "archive"

    code, _, err = run(capsys, root, "strength", "no-such-memory")
    assert code == 1 and "error: not_found" in err


# ===========================================================================
# git


def git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(root.parent), "LC_ALL": "C"}
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, text=True,
                          env=env).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_sees_an_applied_metabolize_as_renames_with_the_reason_inside(tmp_path):
    from sediment.sync.git import git_init
    root = tmp_path / "root"
    with Repository(root) as r:
        promoted = add(r, "deploy freeze", value=0.9,
                       text="No deploys on Friday afternoons; the on-call rotation is thin.")
        crystal = add(r, "review rule", value=0.4, room="process",
                      text="Every migration needs a second reviewer from the data team.")
        refuted = add(r, "wrong limit", value=0.6,
                      text="The upload limit of the public API is 5 MB per file.")
        stays = add(r, "stays put", value=0.3,
                     text="The design review happens every second Tuesday at ten.")
        git_init(root)
        git(root, "config", "user.name", "t")
        git(root, "config", "user.email", "t@example.invalid")
        assert git(root, "status", "--porcelain") == ""
        r.touch(crystal.id, "confirm", now=at(1))
        r.touch(crystal.id, "confirm", now=at(2))
        r.touch(refuted.id, "refute", now=at(3))
        r.search("deploys")
        assert git(root, "status", "--porcelain") == ""  # usage is not in the notes
        p = r.metabolize(now=at(10), dry_run=False, confirm=True)
    moves = {m.id: m for m in p.moves}
    assert set(moves) == {promoted.id, crystal.id, refuted.id}
    git(root, "add", "-A")
    status = git(root, "status", "--porcelain").splitlines()
    assert status and all(ln.startswith("R") for ln in status), status
    renames = {tuple(ln[3:].split(" -> ")) for ln in status}
    expected = {(e.path, N.join_path(moves[e.id].target, e.room, e.name))
                for e in (promoted, crystal, refuted)}
    assert renames == expected
    stat = git(root, "diff", "--cached", "--stat", "-M").splitlines()
    assert len(stat) == 4 and all("=>" in ln for ln in stat[:-1]), stat
    assert stat[-1].strip().startswith("3 files changed")
    names = git(root, "diff", "--cached", "-M", "--name-status").splitlines()
    assert all(ln.startswith("R") for ln in names), names
    for e in (promoted, crystal, refuted):
        moved = (root / N.join_path(moves[e.id].target, e.room, e.name)).read_text(encoding="utf-8")
        assert moves[e.id].reason in moved
    assert stays.path not in "".join(status)
