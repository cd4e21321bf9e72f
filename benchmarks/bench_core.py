"""Core speed: durable adds per second, the time to open a root, a fresh
process's first search, and applying 1,000 metabolize moves.

    python benchmarks/bench_core.py            # full: 5 runs of 200 adds with 10k present; roots of 1k and 10k
    python benchmarks/bench_core.py --quick    # 3 runs of 100 adds with 1k present; root of 1k; 200 moves

Data: generated, not public (``benchmarks/gen.py``: seeded, ~300-character
memories, one third each Chinese, English and mixed; Chinese words from jieba's
bundled dictionary, MIT licence). Nothing is read from ``bench-data``.

What is measured, each next to a baseline measured in the same run:

* **Durable adds per second with 10,000 memories present** (``--present``). For each run a fresh
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
* **A fresh process's first search** (warm cache): ``sediment search`` (the
  CLI) on the 1,000-memory root, and ``python -c`` importing sediment, opening
  the root and searching once (time to first search) on each open size; wall
  time of the whole process. The CLI runs a Chinese question (it loads
  rjieba's dictionary) and an English one (no CJK segmenter). Baseline: ``python -c "import yaml"`` (the
  interpreter and a YAML import are the floor), run alternately with it.
* **Metabolize apply, ~1,000 journaled moves** in a root of 10,000
  (``bench_lifecycle.py``'s fixture; 200 moves in 2,000 with ``--quick``).
  Baseline: as many plain ``os.rename`` calls with an fsync of both folders.

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
                         layer=m.layer if m.layer != "archive" else "shallow")  # (add writes active memories)
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


def bench_fresh(tmp: Path, sizes: list[int], runs: int) -> dict:
    """Fresh-process wall times on warm roots, each beside ``import yaml``."""
    out: dict = {}
    for n in sorted(set(sizes) | {1000}):  # the CLI row is the issue's: a 1,000-note root
        root = tmp / f"fresh-{n}"
        mems = gen.write_root(root, n, seed=1)
        query = next(q["q"] for q in gen.queries(mems, 3, seed=99) if q["lang"] == "zh")  # pays rjieba's start
        Repository(root).close()  # the cache, so every timed open is warm
        if n == 1000:
            out["cli"] = gen.fresh_process(args=["-m", "sediment", "--root", str(root), "search", query],
                                           runs=runs)
            out["cli_n"] = n
            # an English question needs no CJK segmenter: rjieba's dictionary is never loaded
            en = next(q["q"] for q in gen.queries(mems, 3, seed=99) if q["lang"] == "en")
            out["cli_en"] = gen.fresh_process(args=["-m", "sediment", "--root", str(root), "search", en],
                                              runs=runs)
            # what a CJK question pays before any of sediment's work: rjieba builds its dictionary on import
            out["rjieba"] = gen.fresh_process("import rjieba", runs=runs)
        out[n] = gen.fresh_process(gen.first_search_code(root, query), runs=runs)
        shutil.rmtree(root)
    return out


def bench_apply(tmp: Path, n: int, moves: int, runs: int) -> dict:
    import bench_lifecycle
    res = [bench_lifecycle.run(n, moves, seed=1 + i, tmp=str(tmp)) for i in range(runs)]
    return {"apply": gen.median([r["apply"] for r in res]), "renames": gen.median([r["renames"] for r in res]),
            "moves": int(gen.median([r["moves"] for r in res])), "n": n}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--present", type=int, default=10000, help="memories already in the root (10000)")
    ap.add_argument("--adds", type=int, default=200, help="adds per run (200)")
    ap.add_argument("--runs", type=int, default=5, help="runs of adds (5)")
    ap.add_argument("--open-sizes", default="1000,10000", help="root sizes to open (1000,10000)")
    ap.add_argument("--open-runs", type=int, default=5, help="opens per kind and size (5)")
    ap.add_argument("--fresh-runs", type=int, default=7, help="fresh processes per measure (7)")
    ap.add_argument("--moves", type=int, default=1000, help="metabolize moves to apply (1000)")
    ap.add_argument("--apply-runs", type=int, default=3, help="runs of the apply (3)")
    ap.add_argument("--quick", action="store_true",
                    help="3 runs of 100 adds with 1k present; open 1k only, 3 runs; 200 moves in 2k, 1 run")
    ap.add_argument("--tmp", help="where to make the temp folder (default: the system temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the temp folder")
    a = ap.parse_args(argv)
    if a.quick:
        a.adds, a.runs, a.open_sizes, a.open_runs, a.present = 100, 3, "1000", 3, 1000
        a.fresh_runs, a.moves, a.apply_runs = 3, 200, 1
    sizes = [int(x) for x in a.open_sizes.split(",") if x]
    tmp = Path(tempfile.mkdtemp(prefix="sediment-bench-core-", dir=a.tmp))
    # the fresh processes run as an installed package does, its bytecode cached
    # (with PYTHONDONTWRITEBYTECODE set, every run would compile sediment anew)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        gen.private_cache_home(tmp)
        print(f"sediment bench_core  ({gen.source_fingerprint()})")
        print(f"\n[adds] {a.runs} runs x {a.adds} durable adds, {a.present:,} memories present")
        ad = bench_adds(tmp, a.present, a.adds, a.runs)
        opens = {}
        for n in sizes:
            print(f"\n[open] root of {n:,} memories, {a.open_runs} opens per kind (fresh process each)")
            opens[n] = bench_open(tmp, n, a.open_runs)
        print(f"\n[fresh process] {a.fresh_runs} runs each, beside `python -c \"import yaml\"`", flush=True)
        fresh = bench_fresh(tmp, sizes or [1000], a.fresh_runs)
        apply_n = 10 * a.moves
        print(f"\n[metabolize apply] ~{a.moves:,} moves in {apply_n:,} memories, {a.apply_runs} run(s)", flush=True)
        ap_ = bench_apply(tmp, apply_n, a.moves, a.apply_runs)

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
        cli, cli_floor = fresh["cli"]
        rows.append([f"`sediment search`, {fresh['cli_n']:,} notes, warm, fresh process",
                     gen.fmt_s(gen.median(cli)), gen.fmt_s(gen.median(cli_floor)) + " import yaml",
                     gen.ratio(gen.median(cli), gen.median(cli_floor))])
        en, en_floor = fresh["cli_en"]
        rows.append([f"`sediment search`, English question, {fresh['cli_n']:,} notes, warm, fresh process",
                     gen.fmt_s(gen.median(en)), gen.fmt_s(gen.median(en_floor)) + " import yaml",
                     gen.ratio(gen.median(en), gen.median(en_floor))])
        rj, rj_floor = fresh["rjieba"]
        rows.append(["`python -c \"import rjieba\"` (its whole dictionary, which a CJK question no longer builds)",
                     gen.fmt_s(gen.median(rj)), gen.fmt_s(gen.median(rj_floor)) + " import yaml",
                     gen.ratio(gen.median(rj), gen.median(rj_floor))])
        for n in opens or [1000]:
            t, f = fresh[n]
            rows.append([f"time to first search, {n:,} notes, warm, fresh process", gen.fmt_s(gen.median(t)),
                         gen.fmt_s(gen.median(f)) + " import yaml", gen.ratio(gen.median(t), gen.median(f))])
        rows.append([f"metabolize apply, {ap_['moves']:,} journaled moves ({ap_['n']:,} memories)",
                     gen.fmt_s(ap_["apply"]), gen.fmt_s(ap_["renames"]) + " durable renames",
                     gen.ratio(ap_["apply"], ap_["renames"])])
        print(gen.table(rows, ["measure", "sediment", "baseline", "sediment/baseline"]))
        print("baselines: adds = temp+write+fsync+rename+dir fsync of the same bytes; "
              "open = read + YAML-parse every file, no index; fresh process = python -c \"import yaml\"; "
              "apply = os.rename + fsync of both folders per move")
        print("(wall-clock times; 'cpu' = the measuring process's CPU time, steadier on a busy machine)")
        if opens:
            imp = gen.median([x for o in opens.values() for x in o["import"]])
            print(f"(not in the open times: `import sediment` takes {gen.fmt_s(imp)} in a fresh process)")
        # the targets of the speed issue (medians; read the ratios on a busy machine)
        t = [f"durable adds/s with {a.present:,} present {ad['lib']:.0f} (>= 500: "
             f"{'ok' if ad['lib'] >= 500 else 'MISSED'})",
             f"`sediment search` fresh, an English question {gen.ratio(gen.median(en), gen.median(en_floor))} "
             f"import yaml (<= 5x: {'ok' if gen.median(en) <= 5 * gen.median(en_floor) else 'MISSED'}); "
             f"a Chinese one {gen.ratio(gen.median(cli), gen.median(cli_floor))} (<= 5x: "
             f"{'ok' if gen.median(cli) <= 5 * gen.median(cli_floor) else 'MISSED'}; importing rjieba, which "
             f"builds its whole dictionary, is {gen.ratio(gen.median(rj), gen.median(rj_floor))})",
             f"apply {ap_['moves']:,} moves {gen.fmt_s(ap_['apply'])} (<= {ap_['moves'] / 1000:g} s: "
             f"{'ok' if ap_['apply'] <= ap_['moves'] / 1000 else 'MISSED'})"]
        if 10000 in opens:
            o = opens[10000]
            ft = gen.median(fresh[10000][0])
            t += [f"cold open 10k {gen.ratio(o['cold'], o['parse'])} read+YAML (<= 3x: "
                  f"{'ok' if o['cold'] <= 3 * o['parse'] else 'MISSED'})",
                  f"warm open 10k + first search, fresh process {gen.fmt_s(ft)} (<= 0.5 s: "
                  f"{'ok' if ft <= 0.5 else 'MISSED'})"]
        print("\ntargets: " + "; ".join(t))
    finally:
        if a.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
