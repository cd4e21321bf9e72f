"""Core speed: durable adds per second, and the time to open a root.

    python benchmarks/bench_core.py            # full: 5 runs of 200 adds; roots of 1k and 10k
    python benchmarks/bench_core.py --quick    # 3 runs of 100 adds; root of 1k only

Data: generated, not public (``benchmarks/gen.py``: seeded, ~300-character
memories, one third each Chinese, English and mixed; Chinese words from jieba's
bundled dictionary, MIT licence). Nothing is read from ``bench-data``.

What is measured, each next to a baseline measured in the same run:

* **Durable adds per second with 1,000 memories present.** For each run a fresh
  copy of a generated 1,000-memory root is opened (not timed; jieba is warmed
  with one search, as in a running agent), then ``--adds`` memories are added
  through ``Repository.add`` (each one fsync'd, journaled and indexed before it
  returns). Baseline: the same bytes the library wrote, published the cheapest
  correct way (temp file in the same folder, write, fsync, ``os.replace``,
  fsync of the folder) into another fresh copy of the root. Median over runs.
* **Open time** of generated roots of 1,000 and 10,000 memories, each open in a
  fresh interpreter (``_probe.py``; the ``Repository(root)`` call alone is
  timed, the import apart):
  cold = the root's derived caches deleted (``_system/cache/``: every note is
  parsed and tokenized; jieba's dictionary cache, kept per user, is present);
  coldest = the same and an empty per-user cache folder too (jieba builds its
  dictionary cache: the very first open on a machine; one run); warm = the
  cache written by the previous open is present. Baseline: walk + read +
  YAML-parse every file (PyYAML C loader) without indexing. Medians over
  ``--open-runs``. The files are in the OS page cache in every case (the disk
  is not cold).

Temporary roots live in a fresh temp folder (``--tmp`` to choose where), removed
at the end unless ``--keep``. ``XDG_CACHE_HOME`` is pointed into that folder
for the benchmark and its child processes, so the real user's cache is neither
used nor touched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)

from sediment import Repository  # noqa: E402


def atomic_publish(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.bench.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


def bench_adds(tmp: Path, present: int, adds: int, runs: int) -> dict:
    template = tmp / f"template-{present}"
    gen.write_root(template, present, seed=1)
    Repository(template).close()  # build the segment cache, so each run's open is warm
    new = list(gen.memories(adds, seed=2))
    lib_rates, base_rates, lib_cpu, base_cpu = [], [], [], []
    for r in range(runs):
        run_root = tmp / f"adds-run{r}"
        shutil.copytree(template, run_root, symlinks=True)
        repo = Repository(run_root)
        repo.search("测试 warm-up")  # jieba start-up, once per process, not per add
        t0, c0 = time.perf_counter(), time.process_time()
        written = []
        for m in new:
            e = repo.add(m.text, title=m.title, tags=m.tags, kind=m.kind, room=m.room or None,
                         layer=m.layer)
            written.append(e.path)
        t1, c1 = time.perf_counter(), time.process_time()
        repo.close()
        assert len(repo) == present + adds, len(repo)
        lib_rates.append(adds / (t1 - t0))
        lib_cpu.append((c1 - c0) / adds)
        blobs = [(p, (run_root / p).read_bytes()) for p in written]

        base_root = tmp / f"adds-base{r}"
        shutil.copytree(template, base_root, symlinks=True)
        for p, _ in blobs:
            (base_root / p).parent.mkdir(parents=True, exist_ok=True)
        t0, c0 = time.perf_counter(), time.process_time()
        for p, data in blobs:
            atomic_publish(base_root / p, data)
        t1, c1 = time.perf_counter(), time.process_time()
        base_rates.append(adds / (t1 - t0))
        base_cpu.append((c1 - c0) / adds)
        shutil.rmtree(run_root)
        shutil.rmtree(base_root)
        print(f"  run {r + 1}/{runs}: sediment {lib_rates[-1]:.0f} adds/s, "
              f"baseline {base_rates[-1]:.0f} writes/s", flush=True)
    return {"lib": gen.median(lib_rates), "base": gen.median(base_rates),
            "lib_cpu": gen.median(lib_cpu), "base_cpu": gen.median(base_cpu),
            "lib_all": lib_rates, "base_all": base_rates}


def bench_open(tmp: Path, n: int, runs: int) -> dict:
    root = tmp / f"open-{n}"
    t0 = time.perf_counter()
    gen.write_root(root, n, seed=1)
    gen_s = time.perf_counter() - t0
    print(f"  generated {n:,} memories in {gen_s:.1f} s", flush=True)
    res: dict[str, list[dict]] = {"coldest": [], "cold": [], "warm": [], "parse": []}
    gen.drop_cache(root)
    res["coldest"].append(gen.probe("open", root, cache_home=tmp / f"xdg-empty-{n}"))
    for kind in ("cold", "warm", "parse"):
        for _ in range(runs):
            if kind == "cold":
                gen.drop_cache(root)
            p = gen.probe("parse" if kind == "parse" else "open", root)
            assert p["memories"] == n, p
            res[kind].append(p)
    shutil.rmtree(root)
    out: dict = {}
    for k, ps in res.items():
        out[k] = gen.median([p["open_s"] for p in ps])
        out[k + "_cpu"] = gen.median([p["open_cpu_s"] for p in ps])
    out["import"] = [p["import_s"] for p in res["warm"]]
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--present", type=int, default=1000, help="memories already in the root (1000)")
    ap.add_argument("--adds", type=int, default=200, help="adds per run (200)")
    ap.add_argument("--runs", type=int, default=5, help="runs of adds (5)")
    ap.add_argument("--open-sizes", default="1000,10000", help="root sizes to open (1000,10000)")
    ap.add_argument("--open-runs", type=int, default=5, help="opens per kind and size (5)")
    ap.add_argument("--quick", action="store_true", help="3 runs of 100 adds; open 1k only, 3 runs")
    ap.add_argument("--tmp", help="where to make the temp folder (default: the system temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    a = ap.parse_args(argv)
    if a.quick:
        a.adds, a.runs, a.open_sizes, a.open_runs = 100, 3, "1000", 3
    sizes = [int(x) for x in a.open_sizes.split(",") if x]
    tmp = Path(tempfile.mkdtemp(prefix="sediment-bench-core-", dir=a.tmp))
    try:
        gen.private_cache_home(tmp)
        print(f"sediment bench_core  ({gen.source_fingerprint()})")
        print(f"\n[adds] {a.runs} runs x {a.adds} durable adds, {a.present:,} memories present")
        ad = bench_adds(tmp, a.present, a.adds, a.runs)
        opens = {}
        for n in sizes:
            print(f"\n[open] root of {n:,} memories, {a.open_runs} opens per kind (fresh process each)")
            opens[n] = bench_open(tmp, n, a.open_runs)

        print("\n== results (medians) ==")
        rows = [["durable adds/s", f"{ad['lib']:.0f}/s ({1000 / ad['lib']:.2f} ms each, "
                                   f"cpu {1000 * ad['lib_cpu']:.2f} ms)",
                 f"{ad['base']:.0f}/s ({1000 / ad['base']:.2f} ms each, cpu {1000 * ad['base_cpu']:.2f} ms)",
                 gen.ratio(ad["base"], ad["lib"]) + " slower"]]
        for n, o in opens.items():
            for kind, label in (("warm", "warm (cache present)"), ("cold", "cold (_system/cache deleted)"),
                                ("coldest", "coldest (+ no jieba dict cache, 1 run)")):
                rows.append([f"open {n:,}: {label}", gen.wc(o[kind], o[kind + "_cpu"]),
                             gen.wc(o["parse"], o["parse_cpu"]), gen.ratio(o[kind], o["parse"])])
        print(gen.table(rows, ["measure", "sediment", "baseline", "sediment/baseline"]))
        print("baselines: adds = temp+write+fsync+rename+dir fsync of the same bytes; "
              "open = read + YAML-parse every file, no index")
        print("(wall-clock times; 'cpu' = the measuring process's CPU time, steadier on a busy machine)")
        if opens:
            imp = gen.median([x for o in opens.values() for x in o["import"]])
            print(f"(not in the open times: `import sediment` takes {gen.fmt_s(imp)} in a fresh process)")
        if 10000 in opens:
            o = opens[10000]
            print("\ntargets (issue 3, 10k memories): "
                  f"warm open {gen.fmt_s(o['warm'])} (<= 0.5 s: {'ok' if o['warm'] <= 0.5 else 'MISSED'}), "
                  f"cold open {gen.fmt_s(o['cold'])} (<= 4 s: {'ok' if o['cold'] <= 4 else 'MISSED'})")
    finally:
        if a.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
