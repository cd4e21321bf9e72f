"""Speed and size on large generated roots: open time, search latency, peak memory.

    python benchmarks/bench_scale.py                       # roots of 10,000 and 100,000 memories
    python benchmarks/bench_scale.py --sizes 10000         # one size
    python benchmarks/bench_scale.py --quick               # 2,000 memories, 1 run each, 1 pass of queries
    python benchmarks/bench_scale.py --sizes 10000 --profile   # cProfile tables of open and search

Data: generated, not public (``benchmarks/gen.py``: seeded, ~300-character
memories, one third each Chinese, English and mixed; Chinese words from jieba's
bundled dictionary, MIT licence). Files are written directly with
``sediment.model.entry.render`` and a plain write (no fsync, no ``add``), which is fast
enough for 100,000 files.

For each size, every measurement runs in a fresh interpreter (``_probe.py``):

* open, cold: the root's derived caches (``_system/cache/``) deleted before
  each open (every note is parsed and tokenized; jieba's per-user dictionary
  cache is present); coldest: the same with an empty per-user cache folder too
  (jieba builds its dictionary cache: the first open on a machine; one run);
  warm: the cache written by the previous open is present. ``Repository(root)``
  alone is timed; medians over ``--runs``.
* search: in a process that opened the root (warm), one warm-up search (its
  time is shown apart: it pays jieba's start-up), then a fixed seeded set of
  ``--queries`` queries (one third Chinese, English, mixed; most taken from one
  memory's words, one in ten from the vocabulary at large) run ``--repeat``
  times; latency p50 / p99 over all of those searches (``limit=10``).
* the tail: the same queries, each with one of the corpus's 20 commonest
  words of its language added (``gen.common_queries``), in a process of
  their own; their p99 beside the scan's p50 over the same queries, and
  beside the index's own p50 (CPU times: steadier).
* fresh process: ``python -c`` importing sediment, opening the (warm) root
  and searching once (a Chinese query: it pays rjieba's start), wall time of
  the whole process, beside ``python -c "import yaml"`` run alternately
  (``--runs`` of each, medians).
* peak RSS: the high-water mark (``VmHWM``) of that search process
  (interpreter + imports + warm open + all searches); the RSS after the
  imports alone and after the open are shown too, and the peak of a process
  that only opens the root (cold, and warm).

Baseline, same run: a plain substring scan (what a grep-style memory does): the
notes' texts are read into memory once, and each query counts, for every note,
how many of its terms occur in the text; top 10 by that count. Same queries,
same repeats; its load time and peak RSS are shown as well.

Temporary roots live in a fresh temp folder (``--tmp`` to choose where), removed
at the end unless ``--keep``. ``XDG_CACHE_HOME`` is pointed into that folder
for the benchmark and its child processes, so the real user's cache is neither
used nor touched.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)

TARGETS = {  # the speed issues', for 10k and 100k memories (the opens and the peak: issue 28's)
    10_000: {"cold_x_parse": 3.0, "first": 0.5, "p50": 0.003, "tail_x_scan": 0.25, "tail_x_p50": 3.0},
    100_000: {"cold": 60.0, "cold_rss_mb": 1024, "warm": 2.0, "p50": 0.005, "p99": 0.025, "rss_mb": 300},
}


def mb(kb: float) -> str:
    return f"{kb / 1024:.0f} MB"


def bench_size(tmp: Path, n: int, a) -> dict:
    root = tmp / f"root-{n}"
    t0 = time.perf_counter()
    mems = gen.write_root(root, n, seed=1)
    gen_s = time.perf_counter() - t0
    qfile = tmp / f"queries-{n}.json"
    qs = gen.queries(mems, a.queries, seed=99)
    first_q = next(q["q"] for q in qs if q["lang"] == "zh")
    qfile.write_text(json.dumps(qs, ensure_ascii=False), encoding="utf-8")
    cfile = tmp / f"queries-common-{n}.json"  # the same queries, each with one of the commonest words
    cfile.write_text(json.dumps(gen.common_queries(mems, qs), ensure_ascii=False), encoding="utf-8")
    del mems
    print(f"  generated {n:,} memories in {gen_s:.1f} s; {len(qs)} queries", flush=True)
    timeout = a.timeout
    r: dict = {"gen_s": gen_s, "n": n}

    gen.drop_cache(root)
    p = gen.probe("open", root, timeout=timeout, cache_home=tmp / f"xdg-empty-{n}")
    r["coldest"], r["coldest_cpu"], r["coldest_rss"] = p["open_s"], p["open_cpu_s"], p["maxrss_kb"]
    print(f"  coldest open: {gen.wc(p['open_s'], p['open_cpu_s'])}", flush=True)
    runs: dict[str, list[dict]] = {"cold": [], "warm": [], "parse": []}
    for kind in ("cold", "warm", "parse"):
        for i in range(a.runs):
            if kind == "cold":
                gen.drop_cache(root)
            p = gen.probe("parse" if kind == "parse" else "open", root, timeout=timeout)
            runs[kind].append(p)
            if kind != "parse":
                print(f"  {kind} open {i + 1}: {gen.wc(p['open_s'], p['open_cpu_s'])}", flush=True)
        r[kind] = gen.median([p["open_s"] for p in runs[kind]])
        r[kind + "_cpu"] = gen.median([p["open_cpu_s"] for p in runs[kind]])
        r[kind + "_rss"] = max(p["maxrss_kb"] for p in runs[kind])

    s = gen.probe("search", root, queries_file=qfile, repeat=a.repeat, timeout=timeout)
    lat, cpu = s["latencies"], s["cpu_latencies"]
    r.update(p50=gen.percentile(lat, 50), p99=gen.percentile(lat, 99), mean=sum(lat) / len(lat),
             p50_cpu=gen.percentile(cpu, 50), p99_cpu=gen.percentile(cpu, 99),
             first=s["first_search_s"], rss=s["maxrss_kb"], rss_import=s["rss_after_import_kb"],
             rss_open=s["rss_after_open_kb"], hits=s["with_hits"], found=s["source_in_top10"],
             searches=len(lat))
    print(f"  search: p50 {gen.fmt_s(r['p50'])}, p99 {gen.fmt_s(r['p99'])}, peak RSS {mb(r['rss'])}",
          flush=True)
    c = gen.probe("search", root, queries_file=cfile, repeat=a.repeat, timeout=timeout)
    r.update(c_p50=gen.percentile(c["latencies"], 50), c_p99=gen.percentile(c["latencies"], 99),
             c_p50_cpu=gen.percentile(c["cpu_latencies"], 50), c_p99_cpu=gen.percentile(c["cpu_latencies"], 99))
    print(f"  search, queries with a common word: p50 {gen.fmt_s(r['c_p50'])}, p99 {gen.fmt_s(r['c_p99'])}",
          flush=True)
    ft, ff = gen.fresh_process(gen.first_search_code(root, first_q), runs=a.runs, timeout=timeout)
    r.update(fresh=gen.median(ft), fresh_floor=gen.median(ff))
    print(f"  fresh process, warm open + first search: {gen.fmt_s(r['fresh'])} "
          f"(import yaml {gen.fmt_s(r['fresh_floor'])})", flush=True)
    b = gen.probe("scan", root, queries_file=qfile, repeat=a.repeat, timeout=timeout)
    bl, bc = b["latencies"], b["cpu_latencies"]
    bcm = gen.probe("scan", root, queries_file=cfile, repeat=a.repeat, timeout=timeout)
    r.update(bc_p50=gen.percentile(bcm["latencies"], 50), bc_p50_cpu=gen.percentile(bcm["cpu_latencies"], 50))
    r.update(b_p50=gen.percentile(bl, 50), b_p99=gen.percentile(bl, 99), b_load=b["open_s"],
             b_p50_cpu=gen.percentile(bc, 50), b_p99_cpu=gen.percentile(bc, 99),
             b_rss=b["maxrss_kb"], b_hits=b["with_hits"], b_found=b["source_in_top10"])
    print(f"  scan baseline: p50 {gen.fmt_s(r['b_p50'])}, p99 {gen.fmt_s(r['b_p99'])}", flush=True)

    if a.profile:
        gen.drop_cache(root)
        po = gen.probe("open", root, profile=True, timeout=timeout)
        print(f"\n----- cProfile: cold open of {n:,} (under the profiler: {gen.fmt_s(po['open_s'])}) -----")
        print(po["profile_text"])
        po = gen.probe("open", root, profile=True, timeout=timeout)
        print(f"\n----- cProfile: warm open of {n:,} (under the profiler: {gen.fmt_s(po['open_s'])}) -----")
        print(po["profile_text"])
        ps = gen.probe("search", root, queries_file=qfile, repeat=1, profile=True, timeout=timeout)
        print(f"\n----- cProfile: {len(qs)} searches on {n:,} -----")
        print(ps["profile_text"])
    if not a.keep:
        shutil.rmtree(root)
    return r


def report(results: list[dict]) -> None:
    print("\n== results ==")
    rows = []
    for r in results:
        n = f"{r['n']:,}"
        rows += [
            [n, "open warm (median)", gen.wc(r["warm"], r["warm_cpu"]),
             gen.wc(r["parse"], r["parse_cpu"]) + " read+YAML", gen.ratio(r["warm"], r["parse"])],
            [n, "open cold (median)", gen.wc(r["cold"], r["cold_cpu"]),
             gen.wc(r["parse"], r["parse_cpu"]) + " read+YAML", gen.ratio(r["cold"], r["parse"])],
            [n, "open coldest (+ no jieba dict cache, 1 run)", gen.wc(r["coldest"], r["coldest_cpu"]), "", ""],
            [n, "search p50", gen.wc(r["p50"], r["p50_cpu"]), gen.wc(r["b_p50"], r["b_p50_cpu"]) + " scan",
             gen.ratio(r["p50"], r["b_p50"])],
            [n, "search p99", gen.wc(r["p99"], r["p99_cpu"]), gen.wc(r["b_p99"], r["b_p99_cpu"]) + " scan",
             gen.ratio(r["p99"], r["b_p99"])],
            [n, "search p99, queries with a common word", gen.wc(r["c_p99"], r["c_p99_cpu"]),
             gen.wc(r["bc_p50"], r["bc_p50_cpu"]) + " scan p50", gen.ratio(r["c_p99"], r["bc_p50"])],
            [n, "  the same p99 / the index's own p50", gen.wc(r["c_p99"], r["c_p99_cpu"]),
             gen.wc(r["p50"], r["p50_cpu"]) + " p50", gen.ratio(r["c_p99_cpu"], r["p50_cpu"]) + " cpu"],
            [n, "first search (a Chinese one)", gen.fmt_s(r["first"]), gen.fmt_s(r["b_load"]) + " scan load", ""],
            [n, "fresh process: import + warm open + first search", gen.fmt_s(r["fresh"]),
             gen.fmt_s(r["fresh_floor"]) + " import yaml", gen.ratio(r["fresh"], r["fresh_floor"])],
            [n, "peak RSS (warm open + searches)", mb(r["rss"]), mb(r["b_rss"]) + " scan",
             gen.ratio(r["rss"], r["b_rss"])],
            [n, "peak RSS of an open: cold / warm", f"{mb(r['cold_rss'])} / {mb(r['warm_rss'])}",
             mb(r["parse_rss"]) + " read+YAML", ""],
            [n, "RSS after import / open", f"{mb(r['rss_import'])} / {mb(r['rss_open'])}", "", ""],
            [n, "queries with hits / source in top 10",
             f"{r['hits']:.2f} / {r['found']:.2f}", f"{r['b_hits']:.2f} / {r['b_found']:.2f} scan", ""],
        ]
    print(gen.table(rows, ["memories", "measure", "sediment", "baseline", "ratio"]))
    print("(wall-clock times; 'cpu' = the measuring process's CPU time, steadier on a busy machine)")
    print(f"(latency over {results[0]['searches']} searches per size; generation time: "
          + ", ".join(f"{r['n']:,} in {r['gen_s']:.0f} s" for r in results) + ")")
    for r in results:
        t = TARGETS.get(r["n"])
        if not t:
            continue

        def mark(ok: bool) -> str:
            return "ok" if ok else "MISSED"
        parts = []
        if "cold_x_parse" in t:
            parts.append(f"cold open {gen.ratio(r['cold'], r['parse'])} read+YAML (<= {t['cold_x_parse']:g}x: "
                         f"{mark(r['cold'] <= t['cold_x_parse'] * r['parse'])})")
        if "cold" in t:
            parts.append(f"cold open {gen.fmt_s(r['cold'])} (<= {t['cold']:g} s: {mark(r['cold'] <= t['cold'])})")
        if "cold_rss_mb" in t:
            parts.append(f"peak RSS, cold open {mb(r['cold_rss'])} (<= {t['cold_rss_mb']} MB: "
                         f"{mark(r['cold_rss'] / 1024 <= t['cold_rss_mb'])})")
        if "first" in t:
            parts.append(f"fresh process to first search {gen.fmt_s(r['fresh'])} (<= {t['first']:g} s: "
                         f"{mark(r['fresh'] <= t['first'])})")
        if "warm" in t:
            parts.append(f"warm open {gen.fmt_s(r['warm'])} (<= {t['warm']:g} s: {mark(r['warm'] <= t['warm'])})")
        if "p50" in t:
            parts.append(f"p50 {gen.fmt_s(r['p50'])} (<= {gen.fmt_s(t['p50'])}: {mark(r['p50'] <= t['p50'])})")
        if "tail_x_scan" in t:
            parts.append(f"p99 with a common word {gen.ratio(r['c_p99'], r['bc_p50'])} the scan's p50 "
                         f"(<= {t['tail_x_scan']:g}x: {mark(r['c_p99'] <= t['tail_x_scan'] * r['bc_p50'])}) and "
                         f"{gen.ratio(r['c_p99_cpu'], r['p50_cpu'])} its own p50, cpu (<= {t['tail_x_p50']:g}x: "
                         f"{mark(r['c_p99_cpu'] <= t['tail_x_p50'] * r['p50_cpu'])})")
        if "p99" in t:
            parts.append(f"p99 {gen.fmt_s(r['p99'])} (<= {gen.fmt_s(t['p99'])}: {mark(r['p99'] <= t['p99'])})")
        if "rss_mb" in t:
            parts.append(f"peak RSS, warm open + searches {mb(r['rss'])} (<= {t['rss_mb']} MB: "
                         f"{mark(r['rss'] / 1024 <= t['rss_mb'])})")
        print(f"targets {r['n']:,}: " + "; ".join(parts))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000,100000", help="root sizes, comma separated (10000,100000)")
    ap.add_argument("--runs", type=int, default=3, help="opens per kind and size (3)")
    ap.add_argument("--queries", type=int, default=200, help="size of the query set (200)")
    ap.add_argument("--repeat", type=int, default=3, help="passes over the query set (3)")
    ap.add_argument("--quick", action="store_true", help="2,000 memories, 1 run, 1 pass")
    ap.add_argument("--profile", action="store_true", help="print cProfile tables of open and search")
    ap.add_argument("--timeout", type=float, default=3600, help="per child process, seconds (3600)")
    ap.add_argument("--tmp", help="where to make the temp folder (default: the system temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    a = ap.parse_args(argv)
    if a.quick:
        a.sizes, a.runs, a.repeat = "2000", 1, 1
    sizes = [int(x) for x in a.sizes.split(",") if x]
    tmp = Path(tempfile.mkdtemp(prefix="sediment-bench-scale-", dir=a.tmp))
    print(f"sediment bench_scale  ({gen.source_fingerprint()})")
    results = []
    try:
        gen.private_cache_home(tmp)
        for n in sizes:
            print(f"\n[{n:,} memories]", flush=True)
            results.append(bench_size(tmp, n, a))
        report(results)
    finally:
        if a.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
