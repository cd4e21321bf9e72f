"""``sediment serve``: how soon a client can use it.

For each root size: the time from spawning the server to the answer of
``tools/list`` (through the MCP SDK's own client, initialize handshake
first), beside a one-tool ``MCPServer`` spawned the same way in the same run
(the baseline: importing the SDK alone takes most of it); and the time from
spawning to the first successful ``recall``, cold (no index snapshot: the
index is built) and warm (the snapshot of the previous open), beside the
library alone in a fresh process (import, open, one search). Also the size of
the tool descriptions and of the whole ``tools/list`` answer, in characters.

    python benchmarks/bench_serve.py --sizes 10000,100000 --repeat 5

Medians of ``--repeat`` runs (cold: one run per size, it rebuilds the
snapshot). Timings on a shared machine are noisy: read the ratios.

With ``--http``: ``sediment serve --http`` under load instead (``serve_load``):
``--clients`` concurrent clients doing mixed recall/remember for ``--seconds``
on a 10,000-memory root, beside one client in the same run (throughput ratio,
p50/p99 per tool, errors by code), then every acknowledged remember checked.

    python benchmarks/bench_serve.py --http --clients 8 --seconds 60
    python benchmarks/bench_serve.py --http --quick
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import gen  # noqa: F401 - puts the repository on sys.path

import anyio
from mcp import Client, StdioServerParameters

from sediment import Repository

ONE_TOOL = """
from mcp.server.mcpserver import MCPServer
app = MCPServer("baseline")

@app.tool()
def echo(text: str) -> str:
    "Echo the text."
    return text

app.run("stdio")
"""


def params(args: list[str], env: dict[str, str] | None = None) -> StdioServerParameters:
    path = os.pathsep.join(p for p in (str(gen.REPO_DIR), os.environ.get("PYTHONPATH", "")) if p)
    return StdioServerParameters(command=sys.executable, args=args, env={"PYTHONPATH": path, **(env or {})})


async def to_list(p: StdioServerParameters) -> tuple[float, int, int]:
    t0 = time.perf_counter()
    async with Client(p, mode="legacy") as c:
        tools = (await c.list_tools()).tools
        dt = time.perf_counter() - t0
    desc = sum(len(t.description or "") for t in tools)
    listing = len(json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]))
    return dt, desc, listing


async def to_recall(p: StdioServerParameters, query: str) -> tuple[float, float]:
    t0 = time.perf_counter()
    async with Client(p, mode="legacy") as c:
        await c.list_tools()
        listed = time.perf_counter() - t0
        r = await c.call_tool("recall", {"query": query})
        assert not r.is_error, r.content[0].text
        return listed, time.perf_counter() - t0


LIBRARY = """
import sys, time
t0 = float(sys.argv[3])
from sediment import Repository
repo = Repository(sys.argv[1])
repo.search(sys.argv[2], record=False)
print(time.time() - t0)
"""


def library_first_search(root: Path, query: str) -> float:
    """The library alone, in a fresh process: spawn, import, open, one search."""
    import subprocess
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(gen.REPO_DIR),
                                                                   os.environ.get("PYTHONPATH", "")) if p)}
    out = subprocess.run([sys.executable, "-c", LIBRARY, str(root), query, repr(time.time())], env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def median(xs: list[float]) -> float:
    return gen.median(xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="10000", help="comma-separated root sizes (default 10000)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", help="a folder to keep the generated roots in (reused when present)")
    ap.add_argument("--http", action="store_true", help="serve --http under load instead (serve_load)")
    ap.add_argument("--clients", type=int, default=8, help="--http: concurrent clients (default 8)")
    ap.add_argument("--seconds", type=float, default=60.0, help="--http: seconds a phase (default 60)")
    ap.add_argument("--size", type=int, default=10_000, help="--http: memories in the root (default 10000)")
    ap.add_argument("--writes", type=float, default=0.3, help="--http: the share of remember calls (default 0.3)")
    ap.add_argument("--quick", action="store_true", help="--http: 2,000 memories, at most 4 clients, 10 s a phase")
    ns = ap.parse_args()
    if ns.http:
        import serve_load
        work = Path(tempfile.mkdtemp(prefix="bench-serve-http-"))
        try:
            serve_load.run(ns, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    work = Path(ns.keep) if ns.keep else Path(tempfile.mkdtemp(prefix="bench-serve-"))
    work.mkdir(parents=True, exist_ok=True)
    baseline = work / "one_tool.py"
    baseline.write_text(ONE_TOOL, encoding="utf-8")
    rows = []
    try:
        for n in (int(x) for x in ns.sizes.split(",")):
            root = work / f"root-{n}"
            if not (root / "_system").is_dir():
                t = time.perf_counter()
                mems = gen.write_root(root, n)
                print(f"generated {n} memories in {time.perf_counter() - t:.1f}s", file=sys.stderr)
            else:
                mems = list(gen.memories(min(n, 200)))
            query = gen.queries(mems[:200], n=1)[0]["q"]
            serve = params(["-m", "sediment", "serve", "--wait", "600"], {"SEDIMENT_ROOT": str(root)})
            one = params([str(baseline)])
            shutil.rmtree(root / "_system" / "cache", ignore_errors=True)
            lib_cold = library_first_search(root, query)
            shutil.rmtree(root / "_system" / "cache", ignore_errors=True)
            cold_list, cold_recall = anyio.run(to_recall, serve, query)  # builds the snapshot again
            base, ours, desc, listing = [], [], 0, 0
            for _ in range(ns.repeat):  # alternately, so load drifts hit both
                base.append(anyio.run(to_list, one)[0])
                dt, desc, listing = anyio.run(to_list, serve)
                ours.append(dt)
            warm, lib_warm = [], []
            for _ in range(ns.repeat):
                warm.append(anyio.run(to_recall, serve, query)[1])
                lib_warm.append(library_first_search(root, query))
            with Repository(root) as repo:
                count = len(repo)
            rows.append((n, count, median(base), median(ours), cold_list, cold_recall, lib_cold, median(warm),
                         median(lib_warm), desc, listing))
    finally:
        if not ns.keep:
            shutil.rmtree(work, ignore_errors=True)
    print("Time from spawning the process. tools/list: the one-tool MCPServer, sediment serve (ratio), and "
          "sediment serve on a cold root (the index being built meanwhile). First recall through the server, "
          "beside the library alone in a fresh process (import, open, one search).")
    print("| memories | one-tool: tools/list | serve: tools/list | ratio | cold: tools/list | "
          "cold: first recall | cold: library | warm: first recall | warm: library | descriptions | "
          "tools/list (chars) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for _n, count, b, o, cl, cr, lc, w, lw, desc, listing in rows:
        print(f"| {count:,} | {b:.2f} s | {o:.2f} s | {o / b:.2f}× | {cl:.2f} s ({cl / b:.2f}×) | {cr:.1f} s | "
              f"{lc:.1f} s | {w:.2f} s | {lw:.2f} s | {desc:,} | {listing:,} |")


if __name__ == "__main__":
    main()
