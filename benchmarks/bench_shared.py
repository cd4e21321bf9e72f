"""Several roots, one view: does a search of a private root with a shared root
read through it (``Repository(mine, shared=[team])``) rank as well as one root
holding every memory?

    python benchmarks/bench_shared.py            # every zhmem person
    python benchmarks/bench_shared.py --quick    # the first two people

Data: ``benchmarks/zhmem/zhmem.json`` (see ``bench_zhmem.py``). For each person
the memories are dealt alternately into two roots, ``mine`` and ``team`` (in
the order of the file, at the times ``bench_zhmem`` adds them), and a third
root holds them all. Every question is asked (``limit=50, record=False``):

* ``one root`` — the root holding every memory (the baseline: nothing to merge);
* ``shared`` — ``mine`` with ``team`` read through it: each root's list merged by
  the summed IDF of the query's terms each hit holds, counted over both roots
  (``search/merged.py``), each root's order kept;
* ``rrf`` — the same two lists fused by reciprocal rank across the roots
  (1 / (60 + rank), ties to ``mine``): the alternative the merge was chosen over.

R@k and MRR as in ``bench_zhmem``; search time per query, median and p99,
``shared`` beside ``one root`` (ratio) in the same run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)
from bench_zhmem import DATA, DEPTH, KS, score  # noqa: E402

from sediment import Repository  # noqa: E402

RRF_K = 60


def rrf(lists: list[list[str]]) -> list[str]:
    fused: dict[str, tuple[float, int]] = {}
    for li, ranked in enumerate(lists):
        for rank, x in enumerate(ranked, 1):
            s, first = fused.get(x, (0.0, li))
            fused[x] = (s + 1 / (RRF_K + rank), min(first, li))
    return [x for x, _ in sorted(fused.items(), key=lambda kv: (-kv[1][0], kv[1][1]))]


def p99(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(0.99 * len(xs)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="the benchmark file (default: zhmem/zhmem.json)")
    ap.add_argument("--quick", action="store_true", help="the first two people only")
    ap.add_argument("--tmp", help="where to make the temp folder (default: the system temp dir)")
    a = ap.parse_args(argv)
    data = json.loads(a.data.read_text(encoding="utf-8"))
    people = data["people"][:2] if a.quick else data["people"]
    print(f"sediment bench_shared  ({gen.source_fingerprint()})")
    print(f"zhmem: {len(people)} people, {sum(len(p['memories']) for p in people)} memories dealt into two roots, "
          f"{sum(len(p['questions']) for p in people)} questions")
    rows: dict[str, list[dict[str, float]]] = defaultdict(list)
    times: dict[str, list[float]] = defaultdict(list)
    tmp = Path(tempfile.mkdtemp(prefix="sediment-bench-shared-", dir=a.tmp))
    i_add = 0
    try:
        for n, person in enumerate(people):
            base = tmp / f"{n}"
            one, mine, team = Repository(base / "one"), Repository(base / "mine"), Repository(base / "team")
            id_of: dict[str, str] = {}
            for j, m in enumerate(person["memories"]):
                now = gen.add_time(i_add)
                i_add += 1
                id_of[one.add(m["text"], now=now).id] = m["id"]
                id_of[(mine if j % 2 == 0 else team).add(m["text"], now=now).id] = m["id"]
            for r in (one, mine, team):
                r.close()
            with Repository(base / "one") as one, Repository(base / "mine", shared=[base / "team"]) as both, \
                    Repository(base / "mine") as alone:
                for q in person["questions"]:
                    s = time.perf_counter()
                    hits = one.search(q["question"], limit=DEPTH, record=False)
                    times["one root"].append(time.perf_counter() - s)
                    rows["one root"].append(score([id_of[h.entry.id] for h in hits], q["evidence"]))
                    s = time.perf_counter()
                    hits = both.search(q["question"], limit=DEPTH, record=False)
                    times["shared"].append(time.perf_counter() - s)
                    rows["shared"].append(score([id_of[h.entry.id] for h in hits], q["evidence"]))
                    lists = [[id_of[h.entry.id] for h in r.search(q["question"], limit=DEPTH, record=False)]
                             for r in (alone, both.shared["team"])]
                    rows["rrf"].append(score(rrf(lists)[:DEPTH], q["evidence"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    metrics = [f"R@{k}" for k in KS] + ["MRR"]
    table = [[name] + [f"{sum(r[m] for r in rs) / len(rs):.3f}" for m in metrics] for name, rs in rows.items()]
    print()
    print(gen.table(table, ["ranking"] + metrics))
    t1, t2 = times["one root"], times["shared"]
    print(f"\nsearch per query: one root {1000 * statistics.median(t1):.2f} ms median, {1000 * p99(t1):.2f} ms p99; "
          f"shared {1000 * statistics.median(t2):.2f} ms median, {1000 * p99(t2):.2f} ms p99 "
          f"(x{statistics.median(t2) / statistics.median(t1):.2f} median)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
