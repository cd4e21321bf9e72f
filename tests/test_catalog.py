"""The catalog the context block draws from: its order is exactly that of
strength computed for every memory (the threshold walk only saves work),
and re-filing changed entries gives what a rebuild gives."""

from __future__ import annotations

import datetime as dt

from hypothesis import given, settings
from hypothesis import strategies as st

from sediment.agent import catalog as C
from sediment.model import entry as E
from sediment.model.lifecycle import strength
from sediment.model.usage import Usage
from sediment.model.policy import DEFAULT_KINDS
from sediment.model.fields import now_iso

NOW = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc).timestamp()
KINDS = ["core", "fact", "daily", "mood", "event", "inbox", "skill"]

note = st.tuples(st.sampled_from(KINDS), st.sampled_from(["shallow", "sediment", "bedrock", "archive"]),
                 st.sampled_from([0.5, 0.5, 0.2, 0.9]) | st.floats(0, 1), st.integers(0, 400),
                 st.sampled_from(["active", "active", "superseded"]))


def make(i: int, kind: str, layer: str, value: float, days: int, status: str) -> E.Entry:
    created = now_iso(dt.datetime.fromtimestamp(NOW - days * 86400 - i, dt.timezone.utc))
    meta = {"id": f"ID{i:04d}", "title": f"n{i}", "created": created, "kind": kind, "value": round(value, 3),
            "status": status}
    if i % 3 == 0:
        meta["event"] = f"ev{i % 2}"
    return E.Entry(meta=meta, body="x\n", path=f"{layer}/n{i}.md")


def brute(entries: list[E.Entry], usage: dict[str, Usage], skip: set[str]) -> list[str]:
    pools: dict[str, list] = {}
    for e in entries:
        if C.eligible(e) and not C.is_core(e) and e.id not in skip:
            st_ = strength(e, usage.get(e.id), DEFAULT_KINDS, NOW).strength
            pools.setdefault(e.kind, []).append((-round(st_, 9), -C.created_ts(e), e.id))
    lists = sorted((sorted(xs) for xs in pools.values()), key=lambda xs: xs[0])
    out = []
    for rank in range(max((len(x) for x in lists), default=0)):
        out += [xs[rank][2] for xs in lists if rank < len(xs)]
    return out


@settings(max_examples=150, deadline=None)
@given(notes=st.lists(note, max_size=40), used=st.sets(st.integers(0, 39)), skipped=st.sets(st.integers(0, 39)),
       data=st.data())
def test_the_threshold_walk_gives_the_order_of_strength_for_all(notes, used, skipped, data):
    entries = [make(i, *n) for i, n in enumerate(notes)]
    usage = {}
    for i in used:
        u = Usage()
        for _ in range(data.draw(st.integers(1, 4))):
            u.add("recall", NOW - data.draw(st.integers(0, 300)) * 86400, "d")
        usage[f"ID{i:04d}"] = u
    skip = {f"ID{i:04d}" for i in skipped}
    cat = C.Catalog()
    cat.update({e.id: e for e in entries})
    assert [e.id for e in cat.strongest(usage, DEFAULT_KINDS, NOW, skip)] == brute(entries, usage, skip)
    core = [k[3] for k in sorted((0 if e.kind == "core" else 1, -e.value, C.created_ts(e), e.id)
                                 for e in entries if C.eligible(e) and C.is_core(e))]
    assert [e.id for e in cat.core_entries()] == core


@settings(max_examples=80, deadline=None)
@given(before=st.lists(note, min_size=1, max_size=30), after=st.lists(note, max_size=30),
       keep=st.integers(0, 30))
def test_refiling_changes_gives_what_a_rebuild_gives(before, after, keep):
    old = {e.id: e for e in (make(i, *n) for i, n in enumerate(before))}
    new = dict(list(old.items())[:keep])  # some stay as they are, the rest change or go
    new.update({e.id: e for e in (make(i + keep // 2, *n) for i, n in enumerate(after))})
    inc = C.Catalog(refile_max=10**6)  # every change re-filed one by one
    inc.update(old)
    inc.update(new)
    fresh = C.Catalog()
    fresh.update(new)
    assert inc.known == fresh.known and inc.core == fresh.core and inc.kind_of == fresh.kind_of
    assert {k: (p.by_value, p.by_age) for k, p in inc.pools.items() if p.by_value} == \
        {k: (p.by_value, p.by_age) for k, p in fresh.pools.items()}
    assert {k: v for k, v in inc.events.items() if v} == {k: v for k, v in fresh.events.items() if v}
