"""Metabolism speed: planning over 10,000 memories, applying 1,000 moves.

    python benchmarks/bench_lifecycle.py              # 10,000 memories, 1,000 moves, 3 runs
    python benchmarks/bench_lifecycle.py --quick      # 2,000 memories, 200 moves

No public data: the memories are generated (``gen.py``, seeded). Each run builds a
fresh root, records usage for a seeded tenth of the memories (recalls and
confirmations, through the usage log), then times:

* **plan**: ``metabolize(dry_run=True, now=…)`` — the pure plan over every memory,
  including reading the usage records. Baseline measured in the same run: one
  pass computing ``strength()`` for every memory (the least any plan must do).
* **apply**: ``metabolize(dry_run=False, confirm=True, now=…)`` with ``now`` chosen
  so that about ``--moves`` memories qualify. Each move is journaled and durable
  (intent fsync'd, new file fsync'd, old removed, folders fsync'd). Baseline:
  the same number of plain ``os.rename`` calls with an fsync of the folder.

Prints medians (and each run) with ratios to the baselines.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)

from sediment import Repository  # noqa: E402
from sediment.model import entry as E  # noqa: E402
from sediment.model.lifecycle import strength  # noqa: E402
from sediment.disk.files import fsync_dir  # noqa: E402

UTC = _dt.timezone.utc


def build(root: Path, n: int, moves: int, seed: int) -> tuple[Repository, _dt.datetime]:
    """A root of ``n`` fact memories of which ``moves`` shallow ones are strong
    enough to be promoted at the returned ``now`` (value 0.9), the rest stay
    (value 0.3; what the plan archives on top is applied too and counted)."""
    gen.write_root(root, n, seed=seed)
    rng = random.Random(seed)
    repo = Repository(root)
    # make the plan non-trivial: usage for a tenth of the memories
    ids = [e.id for e in repo.list()]
    rng.shuffle(ids)
    shallow = [e.id for e in repo.list(layer="shallow")]
    rng.shuffle(shallow)
    t0 = time.time()
    repo.usage.record(ids[: n // 10], "recall", now=t0)
    repo.usage.record(ids[: n // 50], "confirm", now=t0)
    chosen = set(shallow[:moves])  # promotable: shallow, valuable, old enough
    # promotion candidates: value 0.9 on `moves` memories, 0.3 on the rest (kind fact).
    # Written straight to the files (a fixture, not the thing measured).
    for e in repo.list():
        meta = {**e.meta, "kind": "fact", "value": 0.9 if e.id in chosen else 0.3}
        (root / e.path).write_text(E.render(e.with_(meta=meta)), encoding="utf-8")
    repo.close()
    return Repository(root), _dt.datetime.now(UTC) + _dt.timedelta(days=2)


def run(n: int, moves: int, seed: int, tmp: str | None) -> dict[str, float]:
    base = Path(tempfile.mkdtemp(prefix="sediment-lifecycle-", dir=tmp))
    try:
        repo, now = build(base / "root", n, moves, seed)
        t = time.perf_counter()
        usage = repo.usage.load()
        kinds = repo.policy.kinds
        for e in repo.list():
            strength(e, usage.get(e.id), kinds, now.timestamp())
        strength_pass = time.perf_counter() - t

        t = time.perf_counter()
        plan = repo.metabolize(dry_run=True, now=now)
        plan_s = time.perf_counter() - t
        planned = len(plan.moves)

        t = time.perf_counter()
        done = repo.metabolize(dry_run=False, confirm=True, now=now)
        apply_s = time.perf_counter() - t
        assert done.applied and len(done.moves) == planned, (len(done.moves), planned)
        assert not repo.metabolize(dry_run=True, now=now).moves  # idempotent

        # baseline: the same number of durable renames
        folder = base / "renames"
        (folder / "a").mkdir(parents=True)
        (folder / "b").mkdir()
        for i in range(planned):
            (folder / "a" / f"{i}.md").write_bytes(b"x" * 300)
        t = time.perf_counter()
        for i in range(planned):
            os.rename(folder / "a" / f"{i}.md", folder / "b" / f"{i}.md")
            fsync_dir(folder / "b")
            fsync_dir(folder / "a")
        rename_s = time.perf_counter() - t
        return {"plan": plan_s, "strength_pass": strength_pass, "apply": apply_s, "renames": rename_s,
                "moves": planned}
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--moves", type=int, default=1_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="2,000 memories, 200 moves, 2 runs")
    ap.add_argument("--tmp", help="where to make the temp folders")
    a = ap.parse_args(argv)
    if a.quick:
        a.memories, a.moves, a.runs = 2_000, 200, 2
    results = [run(a.memories, a.moves, seed, a.tmp) for seed in range(1, a.runs + 1)]
    med = {k: gen.median([r[k] for r in results]) for k in results[0]}
    print(f"{a.memories} memories, {int(med['moves'])} moves planned and applied, {a.runs} runs (median)")
    rows = [
        ["plan (dry run)", gen.fmt_s(med["plan"]), "strength() for all", gen.fmt_s(med["strength_pass"]),
         gen.ratio(med["plan"], med["strength_pass"]), "< 1 s"],
        ["apply", gen.fmt_s(med["apply"]), "durable os.rename", gen.fmt_s(med["renames"]),
         gen.ratio(med["apply"], med["renames"]), "< 5 s"],
    ]
    print(gen.table(rows, ["what", "sediment", "baseline", "baseline time", "ratio", "target"]))
    for i, r in enumerate(results, 1):
        print(f"run {i}: plan {r['plan']:.3f} s, apply {r['apply']:.3f} s for {r['moves']} moves")
    return 0


if __name__ == "__main__":
    sys.exit(main())
