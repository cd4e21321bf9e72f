"""The context block on large generated roots: its size and the time to build it.

    python benchmarks/bench_context.py                        # 100, 10,000 and 100,000 memories
    python benchmarks/bench_context.py --sizes 100,10000      # some sizes
    python benchmarks/bench_context.py --roots DIR            # reuse (or make) DIR/r<size> roots
    python benchmarks/bench_context.py --sizes 10000 --profile

Data: generated (``gen.py``: seeded, ~300-character memories, one third each
Chinese, English and mixed; 10% of them in bedrock, so "who I am" has many
candidates). Each root is opened once (warm: the index snapshot of a previous
open is used when present); then, in that process:

* ``context(query)`` over a fixed seeded query set (``gen.queries``), each
  query ``--repeat`` times, with the default budget of 6,000 characters and a
  fixed ``now``; ``context()`` without a query likewise;
* baseline, same process, same queries: ``search(query, limit=10,
  record=False)``, the lookup the block's "reminds me of" section is built on.

Printed per size: block size (characters, estimated tokens) median and max,
build time p50 / p99, and the ratio of the context p50 to the search p50.
Times are wall clock on a shared machine: noisy, compare the ratios.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)

from sediment import Repository  # noqa: E402

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)
TARGET_100K = 0.050  # seconds: issue 14


def run(root: Path, n: int, queries: list[str], repeat: int, profile: bool) -> list:
    t0 = time.perf_counter()
    repo = Repository(root)
    opened = time.perf_counter() - t0
    repo.context(queries[0], now=NOW)  # warm-up (jieba, caches)
    sizes, tokens, times, bare, base = [], [], [], [], []
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    for _ in range(repeat):
        for q in queries:
            t = time.perf_counter()
            ctx = repo.context(q, now=NOW)
            times.append(time.perf_counter() - t)
            sizes.append(ctx.size)
            tokens.append(ctx.tokens)
        t = time.perf_counter()
        repo.context(None, now=NOW)
        bare.append(time.perf_counter() - t)
        for q in queries:
            t = time.perf_counter()
            repo.search(q, limit=10, record=False)
            base.append(time.perf_counter() - t)
    if prof is not None:
        import pstats
        prof.disable()
        pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    repo.close()
    p50 = gen.median(times)
    return [f"{n:,}", f"{opened:.1f} s", f"{gen.median(sizes):,.0f} / {max(sizes):,}",
            f"{gen.median(tokens):,.0f}", f"{p50 * 1000:.1f} ms", f"{gen.percentile(times, 99) * 1000:.1f} ms",
            f"{gen.median(bare) * 1000:.1f} ms", f"{gen.median(base) * 1000:.1f} ms",
            gen.ratio(p50, gen.median(base))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,10000,100000", help="root sizes, comma separated")
    ap.add_argument("--queries", type=int, default=60, help="size of the query set (60)")
    ap.add_argument("--repeat", type=int, default=2, help="passes over the query set (2)")
    ap.add_argument("--roots", help="folder of roots to reuse (DIR/r<size>); made when missing, kept")
    ap.add_argument("--profile", action="store_true", help="print a cProfile table of the context calls")
    args = ap.parse_args(argv)
    tmp = None
    if args.roots:
        where = Path(args.roots)
    else:
        where = tmp = Path(tempfile.mkdtemp(prefix="sediment-bench-context-"))
    rows = []
    try:
        for n in (int(x) for x in args.sizes.split(",")):
            root = where / f"r{n}"
            if not root.exists():
                print(f"generating {n:,} memories …", file=sys.stderr)
                gen.write_root(root, n)
            mems = list(gen.memories(min(n, 2000)))
            queries = [q["q"] for q in gen.queries(mems, args.queries)]
            rows.append(run(root, n, queries, args.repeat, args.profile))
            print(rows[-1], file=sys.stderr)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    print(gen.table(rows, ["memories", "open", "block chars (median / max)", "tokens (median)",
                           "context p50", "context p99", "no query p50", "search p50 (baseline)",
                           "context / search"]))
    print(f"target: context p50 ≤ {TARGET_100K * 1000:.0f} ms at 100,000 memories")
    return 0


if __name__ == "__main__":
    sys.exit(main())
