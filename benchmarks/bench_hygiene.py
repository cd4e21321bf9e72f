"""Hygiene speed: patrol, conflicts, map and graph over a generated root.

    python benchmarks/bench_hygiene.py                 # 10,000 memories, 3 runs
    python benchmarks/bench_hygiene.py --quick         # 2,000 memories, 2 runs
    python benchmarks/bench_hygiene.py --sizes 2000,10000

No public data: the memories are generated (``gen.py``, seeded), and on top of
them, seeded and written as files like the rest, a few hundred of what patrol
is for: near-duplicates, pairs that disagree on a number, same-event chains,
links to no note, inbox fragments, and usage (recalls) for a tenth of the
memories. The root is opened once (not timed); then each run times, on the
warm root:

* **patrol**: ``patrol(now=…)``, which writes ``_system/patrol/<date>.md``;
* **conflicts**: ``conflicts()`` alone (patrol includes it);
* **map**: ``map()``, which writes ``MAP.md``;
* **graph**: ``graph(format="json")``.

Baseline measured in the same run: ``metabolize(dry_run=True)``, the plan over
every memory with its usage, the least a pass over the whole root costs. Also
printed: how many candidate pairs the rare-term postings generated, against
the n(n-1)/2 of comparing all pairs. Wall times are noisy on a shared machine;
CPU time is printed next to them.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)

from sediment import Repository  # noqa: E402
from sediment.agent import conflicts as C  # noqa: E402
from sediment.model import entry as E  # noqa: E402
from sediment.model.fields import build_meta, now_iso

UTC = _dt.timezone.utc
NOW = _dt.datetime(2026, 6, 1, tzinfo=UTC)


def _note(root: Path, rel: str, eid: str, title: str, body: str, created: _dt.datetime, **extra) -> None:
    meta = build_meta(id=eid, title=title, created=now_iso(created), kind=extra.pop("kind", "fact"),
                        tags=(), value=0.5, source=None, links=extra.pop("links", ()), extra=extra)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(E.render(E.Entry(meta=meta, body=body)), encoding="utf-8")


def build(root: Path, n: int, seed: int) -> None:
    """``n`` generated memories, plus about 3% of hygiene cases."""
    mems = gen.write_root(root, n, seed=seed)
    rng = random.Random(seed)
    t0 = gen.BASE_TIME
    k = max(10, n // 100)
    for i in range(k):
        src = mems[rng.randrange(len(mems))]
        eid = f"01HYG{i:05d}DUP{seed:02d}".ljust(26, "0")[:26]
        _note(root, f"shallow/dup-{i}.md", eid, f"copy {i}", src.text + " (again)\n", t0 + _dt.timedelta(days=i))
    for i in range(k):
        place = f"Büro{i} Lager{i}"
        for j, floor in enumerate((3 + i % 4, 7 + i % 5)):
            eid = f"01HYG{i:05d}CON{j}{seed:02d}".ljust(26, "0")[:26]
            _note(root, f"sediment/con-{i}-{j}.md", eid, f"{place} {j}",
                  f"The {place} office is on floor {floor}.\n", t0 + _dt.timedelta(days=j))
    for i in range(k // 2):
        for j in range(3):
            eid = f"01HYG{i:05d}EVT{j}{seed:02d}".ljust(26, "0")[:26]
            _note(root, f"shallow/evt-{i}-{j}.md", eid, f"decision {i} step {j}",
                  f"Decision {i}: option {j}.\n", t0 + _dt.timedelta(days=j), event=f"decision-{i}")
    for i in range(k // 2):
        eid = f"01HYG{i:05d}LNK{seed:02d}".ljust(26, "0")[:26]
        _note(root, f"shallow/lnk-{i}.md", eid, f"plan {i}", f"See [[missing-plan-{i}]].\n", t0,
              links=[f"[[missing-plan-{i}]]"])
    with Repository(root) as repo:
        ids = [e.id for e in repo.list()]
        rng.shuffle(ids)
        repo.usage.record(ids[: n // 10], "recall", now=NOW.timestamp() - 86400 * 30)


def _timed(fn) -> tuple[float, float]:
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def run(n: int, runs: int, seed: int, tmp: str | None) -> dict[str, float]:
    base = Path(tempfile.mkdtemp(prefix="sediment-hygiene-", dir=tmp))
    try:
        build(base / "root", n, seed)
        repo = Repository(base / "root")
        out: dict[str, list[float]] = {}
        counts = {}
        for _ in range(runs):
            for name, fn in (("patrol", lambda: counts.update(repo.patrol(now=NOW).counts)),
                             ("conflicts", repo.conflicts), ("map", repo.map),
                             ("graph", lambda: repo.graph(format="json")),
                             ("plan", lambda: repo.metabolize(dry_run=True, now=NOW))):
                w, c = _timed(fn)
                out.setdefault(name, []).append(w)
                out.setdefault(name + "_cpu", []).append(c)
        with repo.view.reading() as view:
            pairs = C.candidate_pairs(view, generic=C.Generic(view.tokenizer))
            memories = len(view)
        repo.close()
        med = {k: gen.median(v) for k, v in out.items()}
        med.update(memories=memories, comparisons=pairs.comparisons, **{f"n_{k}": v for k, v in counts.items()})
        return med
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000", help="comma-separated numbers of generated memories")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="2,000 memories, 2 runs")
    ap.add_argument("--tmp", help="where to make the temp folders")
    a = ap.parse_args(argv)
    sizes = [2000] if a.quick else [int(x) for x in a.sizes.split(",")]
    runs = 2 if a.quick else a.runs
    for n in sizes:
        m = run(n, runs, a.seed, a.tmp)
        allpairs = m["memories"] * (m["memories"] - 1) // 2
        print(f"{int(m['memories'])} memories ({n} generated + hygiene cases), {runs} runs (median)")
        rows = [[what, gen.fmt_s(m[what]), gen.fmt_s(m[what + "_cpu"]), gen.fmt_s(m["plan"]),
                 gen.ratio(m[what], m["plan"]), target]
                for what, target in (("patrol", "< 10 s at 10,000"), ("conflicts", ""), ("map", ""),
                                     ("graph", ""))]
        print(gen.table(rows, ["what", "wall", "cpu", "baseline: metabolize plan", "ratio", "target"]))
        print(f"candidate pairs from rare-term postings: {int(m['comparisons']):,} "
              f"({m['comparisons'] / allpairs:.2%} of all {allpairs:,} pairs)")
        print("patrol found: " + ", ".join(f"{k[2:]} {int(v)}" for k, v in m.items() if k.startswith("n_")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
