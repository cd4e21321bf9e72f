"""A simulated team of machines sharing one memory: each simulated day each
machine adds, recalls, touches, supersedes, edits and metabolizes (with
``now=`` that day), then syncs, in a random (seeded) order. Used by
tests/test_sync_sim.py (a small run) and benchmarks/bench_sync.py (a bigger one).
"""

from __future__ import annotations

import datetime as dt
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from sediment import SedimentError

from _machines import network, notes, open_root
from sediment.model.names import LAYERS

T0 = dt.datetime(2026, 1, 5, 8, 0, tzinfo=dt.timezone.utc)
WORDS = ("deploy", "printer", "database", "kitchen", "invoice", "backup", "release", "laptop", "vpn",
         "badge", "meeting", "budget", "parking", "office", "router", "coffee")
KINDS = ("fact", "fact", "event", "daily", "skill", "inbox")
ROOMS = ("infra", "office", "people", None)
_ID = re.compile(rb"^id:\s*['\"]?([0-9A-Z]{26})", re.MULTILINE)


@dataclass
class Outcome:
    syncs: int = 0
    merges: int = 0
    settled: int = 0  # paths sync settled by rule
    moved_twice: int = 0  # notes moved to two places, made one
    repairs: int = 0
    conflicts: list[str] = field(default_factory=list)  # paths sync left to a person
    adds: int = 0
    recalls: int = 0
    touches: int = 0
    supersedes: int = 0
    edits: dict[str, set[int]] = field(default_factory=dict)  # id → machines that edited its body
    decided: dict[str, set[str]] = field(default_factory=dict)  # id → the layers sediment put it in
    first: dict[str, str] = field(default_factory=dict)  # id → the layer it was written to
    moves: int = 0


def _decide(out: Outcome, eid: str, layer: str) -> None:
    out.decided.setdefault(eid, set()).add(layer)


def simulate(folder: Path, *, machines: int = 3, days: int = 30, seed: int = 16, edits: float = 0.15) -> tuple[
        Outcome, list[Path], list]:
    """Run the simulation; returns the outcome, the roots and the open repositories."""
    rng = random.Random(seed)
    roots = network(folder, machines)
    repos = [open_root(r) for r in roots]
    out = Outcome()
    for day in range(days):
        order = list(range(machines))
        rng.shuffle(order)
        for m in order:
            repo = repos[m]
            now = T0 + dt.timedelta(days=day, hours=m)
            active = [e for e in repo if e.status == "active" and e.layer != "archive"]
            for _ in range(rng.randint(1, 3)):
                w = rng.sample(WORDS, 3)
                if rng.random() < 0.15:  # the same fact written on two machines
                    text = f"shared fact {rng.randint(0, 9)}: the team list is in the wiki"
                elif rng.random() < 0.1 and active:  # overturns an earlier judgement of an event
                    text = f"actually the {w[0]} moved to the {w[1]} on day {day}"
                else:
                    text = f"day {day} machine {m}: the {w[0]} is next to the {w[1]} and the {w[2]}"
                event = f"event-{w[0]}" if "actually" in text or rng.random() < 0.2 else None
                try:
                    e = repo.add(text, kind=rng.choice(KINDS), value=round(rng.uniform(0.1, 0.95), 2),
                                 room=rng.choice(ROOMS), tags=[w[0]], now=now,
                                 **({"event": event} if event else {}))
                except SedimentError:
                    continue
                out.adds += 1
                out.first.setdefault(e.id, e.layer)
                _decide(out, e.id, e.layer)
            for _ in range(rng.randint(1, 4)):
                out.recalls += len(repo.search(rng.choice(WORDS), limit=3))
            active = [e for e in repo if e.status == "active" and e.layer != "archive"]
            if active:
                for e in rng.sample(active, min(2, len(active))):
                    try:
                        repo.touch(e.id, "confirm" if rng.random() < 0.8 else "refute", now=now)
                        out.touches += 1
                    except SedimentError:
                        pass
            if len(active) >= 2 and rng.random() < 0.5:
                old, new = rng.sample(active, 2)
                try:
                    repo.supersede(old.id, new.id, reason=f"day {day}")
                    out.supersedes += 1
                except SedimentError:
                    pass
            edit = []
            if active and rng.random() < edits:  # a body edit here and there
                edit.append(rng.choice(active))
            if active and day % 10 == 5:  # every machine edits the same note the same day: conflicts
                edit.append(min(active, key=lambda e: e.id))
            for e in edit:
                try:
                    repo.update(e.id, text=f"{e.text.strip()} (checked on day {day} by machine {m})")
                    out.edits.setdefault(e.id, set()).add(m)
                except SedimentError:
                    pass
            try:
                plan = repo.metabolize(dry_run=False, now=now, confirm=True)
                for mv in plan.moves:
                    _decide(out, mv.id, mv.target)
                out.moves += len(plan.moves)
            except SedimentError:
                pass
            _sync(repo, out)
    for _round in range(2):  # a full sync: everyone's last changes, then everyone fetches them
        for repo in repos:
            _sync(repo, out)
    return out, roots, repos


def _sync(repo, out: Outcome) -> None:
    r = repo.sync()
    out.syncs += 1
    out.merges += r.merged
    out.settled += len(r.resolved)
    out.moved_twice += len(r.moves)
    out.repairs += len(r.repairs)
    out.conflicts += r.conflicts


def files_by_id(root: Path) -> dict[str, list[str]]:
    """Every id in the layer folders and the files that carry it (markers or not)."""
    found: dict[str, list[str]] = {}
    for path, data in notes(root).items():
        m = _ID.search(data)
        if m:
            found.setdefault(m.group(1).decode(), []).append(path)
    return found


def final_layers(root: Path) -> dict[str, str]:
    return {i: paths[0].split("/")[0] for i, paths in files_by_id(root).items() if paths[0].split("/")[0] in LAYERS}
