"""Child process for the benchmarks: one measurement in a fresh interpreter.

    python _probe.py open   ROOT [--profile]
    python _probe.py search ROOT --queries FILE [--repeat N] [--profile]
    python _probe.py scan   ROOT --queries FILE [--repeat N]
    python _probe.py parse  ROOT

Prints one JSON line on stdout (the last line); with ``--profile`` the cProfile
tables go to stderr. Peak RSS is the high-water mark of this process
(``VmHWM`` on Linux), so it covers the interpreter, the imports, the open and the searches.

Times are wall clock (``perf_counter``) and, next to them, this process's CPU
time (``process_time``), which moves less when other work shares the machine;
``open`` adds the CPU time of the worker processes a cold open forked.

* ``open``   — ``Repository(root)`` (timed alone; the import is timed apart).
* ``search`` — open, one warm-up search, Chinese (timed apart: it pays the segmenter's start-up
  when the open did not need it), then every query ``--repeat`` times.
* ``scan``   — the baseline: read every note's text (layers except archive,
  which sediment does not search by default), then for each query count, per
  note, how many of the query's terms occur as substrings; top 10 by that count.
* ``parse``  — the baseline for open: walk the layers, read every file, split
  the frontmatter and load it with PyYAML's C loader (what any markdown-notes
  tool must do at least), without building an index.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import resource
import sys
import time
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
if str(REPO_DIR) not in sys.path:
    sys.path.insert(0, str(REPO_DIR))

LAYERS = ("shallow", "sediment", "bedrock", "archive")


def maxrss_kb() -> int:
    """Peak resident set size of this process, in kB.

    On Linux ``VmHWM`` from ``/proc/self/status``: ``ru_maxrss`` is not used
    there because Linux carries the parent's high-water mark across fork+exec
    into the child's ``ru_maxrss``, which would count the benchmark driver's own
    memory. Elsewhere ``ru_maxrss`` (bytes on macOS, kB otherwise)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r // 1024 if sys.platform == "darwin" else r


def _profile_report(prof: cProfile.Profile, title: str, n: int = 18) -> None:
    for key in ("tottime", "cumulative"):
        s = io.StringIO()
        st = pstats.Stats(prof, stream=s)
        st.strip_dirs().sort_stats(key).print_stats(n)
        text = s.getvalue()
        # keep the table, drop pstats' preamble lines about the file
        start = text.find("   ncalls")
        print(f"\n===== {title}: top {n} by {key} =====", file=sys.stderr)
        print(text[start:] if start >= 0 else text, file=sys.stderr)


def _walk(root: Path, layers=LAYERS):
    for layer in layers:
        for dirpath, dirnames, filenames in os.walk(root / layer):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for f in filenames:
                if f.endswith(".md") and not f.startswith("."):
                    yield os.path.join(dirpath, f)


def cmd_open(a) -> dict:
    t0 = time.perf_counter()
    import sediment
    t1 = time.perf_counter()
    rss_import = maxrss_kb()
    prof = cProfile.Profile() if a.profile else None
    if prof:
        prof.enable()
    t2, c2 = time.perf_counter(), time.process_time()
    repo = sediment.Repository(a.root)
    t3, c3 = time.perf_counter(), time.process_time()
    if prof:
        prof.disable()
        _profile_report(prof, "open")
    n = len(repo)
    repo.close()
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)  # (a cold open's worker processes, reaped)
    return {"import_s": t1 - t0, "open_s": t3 - t2, "open_cpu_s": c3 - c2, "memories": n,
            "children_cpu_s": kids.ru_utime + kids.ru_stime,
            "rss_after_import_kb": rss_import,
            "maxrss_kb": maxrss_kb()}


def _load_queries(path: str) -> list[dict]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def cmd_search(a) -> dict:
    qs = _load_queries(a.queries)
    t0 = time.perf_counter()
    import sediment
    t1 = time.perf_counter()
    rss_import = maxrss_kb()
    c1 = time.process_time()
    repo = sediment.Repository(a.root)
    t2, c2 = time.perf_counter(), time.process_time()
    rss_open = maxrss_kb()
    w0 = time.perf_counter()
    repo.search("测试 warm-up", limit=10)
    w1 = time.perf_counter()
    prof = cProfile.Profile() if a.profile else None
    lat: list[float] = []
    cpu: list[float] = []
    hits_n: list[int] = []
    found = 0
    pc, ct = time.perf_counter, time.process_time
    if prof:
        prof.enable()
    for r in range(a.repeat):
        for q in qs:
            s, c = pc(), ct()
            hits = repo.search(q["q"], limit=10)
            lat.append(pc() - s)
            cpu.append(ct() - c)
            if r == 0:
                hits_n.append(len(hits))
                if any(h.entry.path == q.get("source_rel") for h in hits):
                    found += 1
    if prof:
        prof.disable()
        _profile_report(prof, f"{len(qs) * a.repeat} searches")
    n = len(repo)
    repo.close()
    return {"import_s": t1 - t0, "open_s": t2 - t1, "open_cpu_s": c2 - c1, "first_search_s": w1 - w0,
            "latencies": lat, "cpu_latencies": cpu,
            "memories": n, "mean_hits": sum(hits_n) / max(1, len(hits_n)),
            "with_hits": sum(1 for x in hits_n if x) / max(1, len(hits_n)),
            "source_in_top10": found / max(1, len(qs)),
            "rss_after_import_kb": rss_import, "rss_after_open_kb": rss_open, "maxrss_kb": maxrss_kb()}


def cmd_scan(a) -> dict:
    import heapq
    qs = _load_queries(a.queries)
    rss_start = maxrss_kb()
    t0 = time.perf_counter()
    paths: list[str] = []
    texts: list[str] = []
    root = Path(a.root)
    for p in _walk(root, LAYERS[:3]):
        with open(p, encoding="utf-8") as fh:
            texts.append(fh.read().lower())
        paths.append(os.path.relpath(p, root).replace(os.sep, "/"))
    t1 = time.perf_counter()
    lat: list[float] = []
    hits_n: list[int] = []
    found = 0
    pc, ct = time.perf_counter, time.process_time
    cpu: list[float] = []
    for r in range(a.repeat):
        for q in qs:
            s, c = pc(), ct()
            terms = [t.lower() for t in q["terms"]] or [q["q"].lower()]
            scored = []
            for i, text in enumerate(texts):
                n_in = 0
                for t in terms:
                    if t in text:
                        n_in += 1
                if n_in:
                    scored.append((n_in, -i))
            top = heapq.nlargest(10, scored)
            lat.append(pc() - s)
            cpu.append(ct() - c)
            if r == 0:
                hits_n.append(len(top))
                if any(paths[-i] == q.get("source_rel") for _, i in top):
                    found += 1
    return {"open_s": t1 - t0, "latencies": lat, "cpu_latencies": cpu, "memories": len(texts),
            "mean_hits": sum(hits_n) / max(1, len(hits_n)),
            "with_hits": sum(1 for x in hits_n if x) / max(1, len(hits_n)),
            "source_in_top10": found / max(1, len(qs)),
            "rss_start_kb": rss_start, "maxrss_kb": maxrss_kb()}


def cmd_parse(a) -> dict:
    import yaml
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    t0, c0 = time.perf_counter(), time.process_time()
    n = 0
    for p in _walk(Path(a.root)):
        with open(p, "rb") as fh:
            s = fh.read().decode("utf-8")
        end = s.find("\n---\n", 3)
        meta = yaml.load(s[4:end + 1], Loader=loader)
        body = s[end + 5:]
        n += bool(meta) and body is not None
    t1, c1 = time.perf_counter(), time.process_time()
    return {"open_s": t1 - t0, "open_cpu_s": c1 - c0, "memories": n, "maxrss_kb": maxrss_kb()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["open", "search", "scan", "parse"])
    ap.add_argument("root")
    ap.add_argument("--queries")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    out = {"open": cmd_open, "search": cmd_search, "scan": cmd_scan, "parse": cmd_parse}[a.mode](a)
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    main()
