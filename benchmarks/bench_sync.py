"""Sync: how long one ``sync`` takes with 10,000 notes, and a bigger simulation.

    python benchmarks/bench_sync.py                       # 10,000 notes, 3 runs; simulation 3 × 30 days
    python benchmarks/bench_sync.py --notes 2000 --runs 1 --machines 3 --days 10   # quick
    python benchmarks/bench_sync.py --notes 0 --machines 5 --days 60               # simulation only

No public data: the notes are generated (``gen.py``, seeded). Two clones of one
bare remote in a temporary folder, both with the repository open (the open is
not timed), git with a throw-away configuration. Timed, each a median of
``--runs``:

* **no-op**: ``sync()`` with nothing changed on either side;
* **merge**: 10 notes added here and 10 on the other machine (pushed): the sync
  commits, fetches, merges (a real merge commit), repairs, pushes;
* **moves**: the other machine applied a metabolize that moved ``--moves`` notes
  and pushed, while this one changed 10 notes' tags: a merge with renames and
  modifications.

Baseline measured in the same run, on the same clone: the plain git a person
would type for the same job (``git add -A && git commit && git pull --no-rebase
&& git push``, with the no-op's ``git status``), for the ratio.

Then the simulation of ``tests/_simulation.py`` (each day each machine adds,
recalls, touches, supersedes, edits, metabolizes, syncs; in a seeded random
order) with its counts: syncs, merges, conflicts left, notes with a changed
layer, duplicates.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
import gen  # noqa: E402  (also puts the repository on sys.path)

from sediment import Repository  # noqa: E402
from sediment.cli.main import main as cli_main  # noqa: E402
from sediment.sync.git import git_init  # noqa: E402

from _machines import apply_env, git, git_env  # noqa: E402
from _simulation import files_by_id, final_layers, simulate  # noqa: E402


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def plain_git(root: Path, msg: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", msg, check=False)
    git(root, "-c", "merge.directoryRenames=false", "pull", "-q", "--no-rebase", "--no-edit")
    git(root, "push", "-q")


def bench_notes(tmp: Path, n: int, runs: int, moves: int) -> None:
    a, b = tmp / "a", tmp / "b"
    remote = tmp / "remote.git"
    git(tmp, "init", "-q", "--bare", str(remote))
    t = time.perf_counter()
    gen.write_root(a, n)
    git_init(a)
    git(a, "remote", "add", "origin", str(remote))
    ra = Repository(a)
    first = timed(ra.sync)
    cli_main(["--root", str(b), "clone", str(remote)])
    rb = Repository(b)
    print(f"{n} notes generated, committed and cloned in {time.perf_counter() - t:.1f} s "
          f"(the first sync, committing and pushing them all: {first:.2f} s)")
    rows: dict[str, list[float]] = {"no-op": [], "merge": [], "moves": []}
    base: dict[str, list[float]] = {"no-op": [], "merge": [], "moves": []}
    try:
        for run in range(runs):
            rows["no-op"].append(timed(ra.sync))
            base["no-op"].append(timed(lambda: (git(a, "status", "--porcelain"), git(a, "fetch", "-q"))))
            for i in range(10):
                rb.add(f"run {run} note {i} from b", kind="fact")
            rb.sync()
            for i in range(10):
                ra.add(f"run {run} note {i} from a", kind="fact")
            rows["merge"].append(timed(ra.sync))
            rb.sync()
            # the same job by plain git, on b: 10 adds here, 10 there
            for i in range(10):
                ra.add(f"run {run} plain {i} from a", kind="fact")
            ra.sync()
            for i in range(10):
                rb.add(f"run {run} plain {i} from b", kind="fact")
            base["merge"].append(timed(lambda: plain_git(b, "plain")))
            rb.refresh()
            ra.sync()
            # the other machine moves `moves` notes; this one retags 10
            shallow = [e for e in rb.list(layer="shallow") if e.status == "active"][: moves]
            for e in shallow:
                rb.move(e.id, "sediment", reason="benchmark")
            rb.sync()
            for e in [e for e in ra.list(layer="bedrock")][:10]:
                ra.update(e.id, tags=[*e.tags, f"run{run}"])
            rows["moves"].append(timed(ra.sync))
            rb.sync()
            shallow = [e for e in ra.list(layer="shallow") if e.status == "active"][: moves]
            for e in shallow:
                ra.move(e.id, "sediment", reason="benchmark")
            ra.sync()
            rb.refresh()
            for e in [e for e in rb.list(layer="bedrock")][:10]:
                rb.update(e.id, tags=[*e.tags, f"plain{run}"])
            base["moves"].append(timed(lambda: plain_git(b, "plain moves")))
            rb.refresh()
            rb.sync()
            ra.sync()
    finally:
        ra.close()
        rb.close()
    print(f"\none sync with {n} notes (median of {runs}; the repository open, not timed)")
    print(gen.table([[k, f"{statistics.median(v):.2f} s", f"{statistics.median(base[k]):.2f} s",
                      gen.ratio(statistics.median(v), statistics.median(base[k]))] for k, v in rows.items()],
                    ["job", "sediment sync", "plain git", "ratio"]))


def bench_simulation(tmp: Path, machines: int, days: int, seed: int) -> None:
    t = time.perf_counter()
    out, roots, repos = simulate(tmp, machines=machines, days=days, seed=seed)
    wall = time.perf_counter() - t
    ids = files_by_id(roots[0])
    marked = [p for p, data in ((p, (roots[0] / p).read_bytes()) for ps in ids.values() for p in ps)
              if b"\n<<<<<<< " in data]
    layers = final_layers(roots[0])
    changed = sum(1 for i, layer in layers.items() if layer != out.first.get(i))
    same = all(files_by_id(r) == ids for r in roots[1:])
    later = _dt.datetime(2030, 1, 1, tzinfo=_dt.timezone.utc)
    plans = [r.metabolize(now=later).to_dict()["moves"] for r in repos]
    for r in repos:
        r.close()
    print(f"\nsimulation: {machines} machines × {days} days, seed {seed}, {wall:.0f} s")
    print(gen.table([
        ["syncs", out.syncs], ["merges", out.merges], ["notes settled by rule", out.settled],
        ["notes moved to two places (made one)", out.moved_twice], ["repairs", out.repairs],
        ["conflicts left (same body edited on two machines)", len(marked)],
        ["notes", len(ids)], ["notes with a changed layer", changed],
        ["duplicates (one id in two files)", sum(len(ps) > 1 for ps in ids.values())],
        ["layers sediment did not decide", sum(1 for i, la in layers.items() if la not in out.decided.get(i, ()))],
        ["machines with the same files", "all" if same else "NO"],
        ["plans identical", "yes" if all(p == plans[0] for p in plans) else "NO"],
        ["adds / recalls / touches / supersedes / moves",
         f"{out.adds} / {out.recalls} / {out.touches} / {out.supersedes} / {out.moves}"],
    ], ["", ""]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=10_000, help="notes in the timed root (0: skip)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--moves", type=int, default=500, help="notes the other machine moves in the 'moves' job")
    ap.add_argument("--machines", type=int, default=3)
    ap.add_argument("--days", type=int, default=30, help="simulated days (0: skip the simulation)")
    ap.add_argument("--seed", type=int, default=16)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="sediment-bench-sync-") as tmp:
        apply_env(git_env(Path(tmp)))
        os.environ["SEDIMENT_ROOT"] = str(Path(tmp) / "unused")
        if args.notes:
            (Path(tmp) / "notes").mkdir()
            bench_notes(Path(tmp) / "notes", args.notes, args.runs, args.moves)
        if args.days:
            (Path(tmp) / "sim").mkdir()
            bench_simulation(Path(tmp) / "sim", args.machines, args.days, args.seed)


if __name__ == "__main__":
    main()
