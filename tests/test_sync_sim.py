"""Three clones, thirty simulated days, one memory (see tests/_simulation.py):
afterwards no conflict is left in any note except where two machines edited
the same body, every memory is in exactly one file, in a layer sediment put it
in, the invariants hold, and all machines hold the same files and compute the
same metabolize plan."""

from __future__ import annotations

import datetime as dt

import pytest

from _machines import GIT, apply_env, git, git_env, notes
from _simulation import T0, files_by_id, final_layers, simulate

pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")


@pytest.mark.slow
def test_three_machines_thirty_days_converge(tmp_path, monkeypatch):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    out, roots, repos = simulate(tmp_path, machines=3, days=30, seed=16)
    try:
        assert out.adds > 100 and out.moves > 20 and out.merges > 10
        same = notes(roots[0])
        for root in roots[1:]:
            assert notes(root) == same, "every machine holds the same notes"
            assert git(root, "rev-parse", "HEAD").stdout == git(roots[0], "rev-parse", "HEAD").stdout
        # no conflict left, except where two machines edited the same body
        marked = {p for p, data in same.items() if b"\n<<<<<<< " in data}
        ids = files_by_id(roots[0])
        for path in marked:
            eid = next(i for i, ps in ids.items() if path in ps)
            assert len(out.edits.get(eid, ())) >= 2, f"{path}: a conflict nobody made by hand"
        # every memory exactly once, in a layer sediment decided
        assert set(ids) == set(out.decided)
        assert {i: ps for i, ps in ids.items() if len(ps) > 1} == {}
        layers = final_layers(roots[0])
        assert {i: (layer, out.decided[i]) for i, layer in layers.items() if layer not in out.decided[i]} == {}
        # the invariants: check() names only the conflicts; no exact duplicate among active memories
        for repo in repos:
            repo.refresh()
            assert {p.path for p in repo.check()} == marked
            texts = [" ".join(e.text.split()) for e in repo if e.status == "active" and e.layer != "archive"]
            assert len(texts) == len(set(texts))
        # the same plan everywhere, for the same now
        later = T0 + dt.timedelta(days=45)
        plans = [repo.metabolize(now=later).to_dict()["moves"] for repo in repos]
        assert plans[0] and plans[1] == plans[0] and plans[2] == plans[0]
        changed = sum(1 for i, layer in layers.items() if layer != out.first[i])
        print(f"\nsimulation: {out.syncs} syncs, {out.merges} merges, {len(marked)} conflicts left "
              f"({len(out.conflicts)} reported), {changed} notes with a changed layer, "
              f"{sum(len(ps) > 1 for ps in ids.values())} duplicates; {out.moved_twice} moved twice, "
              f"{out.repairs} repairs, {out.settled} settled by rule")
    finally:
        for repo in repos:
            repo.close()
