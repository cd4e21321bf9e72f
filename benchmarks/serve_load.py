"""``sediment serve --http`` under load: the part of ``bench_serve.py --http``.

One server process on a generated root (``gen.write_root``: 10,000 memories,
2,000 with ``--quick``); clients, each its own process with the MCP SDK's own
client over streamable HTTP (as separate agents are), run a mixed workload for
``--seconds``: ``recall`` of a fixed seeded query set (``gen.queries``) and,
with probability ``--writes``, ``remember`` of a new generated memory carrying
a unique marker word (so no two are the same text). Two phases in the same
run on the same server: 1 client (the baseline), then ``--clients`` at once.

Printed per phase: calls per second (throughput; the ratio against the one
client), p50 / p99 latency per tool, every error by tool and code (a
``conflict`` or ``lock_timeout`` here is what one client alone would not
have had: the baseline phase shows what one client gets). After the server
has stopped: every ``remember`` a client had acknowledged is read back from
the root (by id, its marker in the text), and the count of the root is the
generated memories plus the acknowledged ones.

    python benchmarks/bench_serve.py --http --clients 8 --seconds 60
    python benchmarks/bench_serve.py --http --quick        # 2,000 memories, 2 and 4 clients' worth: 10 s
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import gen  # noqa: F401 - puts the repository on sys.path

HERE = Path(__file__).resolve()


# --------------------------------------------------------------------------- one client (its own process)

async def _client(a: argparse.Namespace) -> dict[str, Any]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    qs = [q["q"] for q in json.loads(Path(a.queries).read_text(encoding="utf-8"))]
    gen.vocab()  # (loads jieba's dictionary: seconds, not to be timed)
    rng = random.Random(a.seed)
    lat: dict[str, list[float]] = {"recall": [], "remember": []}
    errors: dict[str, Counter[str]] = {"recall": Counter(), "remember": Counter()}
    acked: list[list[str]] = []
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {a.token}"}, timeout=120) as hc:
        async with Client(streamable_http_client(a.url, http_client=hc), mode="legacy") as c:
            await c.list_tools()
            while (await c.call_tool("recall", {"query": qs[0]})).is_error:  # the root still loading
                time.sleep(1)
            print("ready", flush=True)
            start = float(sys.stdin.readline())  # every client is connected: the phase starts for all at once
            while time.time() < start:
                time.sleep(min(0.01, max(0.0, start - time.time())))
            n = 0
            while time.time() < start + a.seconds:
                if rng.random() < a.writes:
                    tool = "remember"
                    m = gen.memory(100_000 + n, seed=a.seed)
                    marker = f"mk{a.seed}x{n}"
                    args: dict[str, Any] = {"text": f"{m.text} {marker}", "title": f"{m.title} {marker}",
                                            "tags": m.tags, "request_id": marker}
                else:
                    tool, marker = "recall", ""
                    args = {"query": rng.choice(qs)}
                n += 1
                t0 = time.perf_counter()
                r = await c.call_tool(tool, args)
                lat[tool].append(time.perf_counter() - t0)
                if r.is_error:
                    errors[tool][str((r.structured_content or {}).get("error", {}).get("code", "?"))] += 1
                elif tool == "remember":
                    acked.append([str((r.structured_content or {})["id"]), marker])
            end = time.time()
    return {"lat": lat, "errors": {k: dict(v) for k, v in errors.items()}, "acked": acked, "end": end}


# --------------------------------------------------------------------------- the run

def _start_server(root: Path) -> tuple[subprocess.Popen[str], str, str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(gen.REPO_DIR),
                                                                   os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.Popen([sys.executable, "-m", "sediment", "--root", str(root), "serve", "--http", "--port", "0",
                             "--wait", "600"], stdout=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    said = []
    for line in proc.stdout:
        said.append(line)
        if line.startswith("Ctrl-C"):
            break
    url = next(ln.strip() for ln in said if ln.strip().startswith("http://"))
    token = (root / "_system" / "cache" / "http-token").read_text().strip()
    return proc, url, token


def _phase(url: str, token: str, clients: int, seconds: float, writes: float, queries: Path,
           seed0: int) -> list[dict[str, Any]]:
    procs = [subprocess.Popen([sys.executable, str(HERE), "--client", "--url", url, "--token", token,
                               "--seconds", str(seconds), "--writes", str(writes),
                               "--queries", str(queries), "--seed", str(seed0 + k)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for k in range(clients)]
    for p in procs:
        assert p.stdout is not None
        if p.stdout.readline().strip() != "ready":
            raise SystemExit(f"a client could not connect ({p.wait()})")
    start = time.time() + 0.5
    for p in procs:
        assert p.stdin is not None
        p.stdin.write(f"{start!r}\n")
        p.stdin.flush()
    out = []
    for p in procs:
        text, _ = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"a client failed ({p.returncode})")
        res = json.loads(text.strip().splitlines()[-1])
        res["start"] = start
        out.append(res)
    return out


def _summary(name: str, results: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    lat: dict[str, list[float]] = {"recall": [], "remember": []}
    errors: dict[str, Counter[str]] = {"recall": Counter(), "remember": Counter()}
    for r in results:
        for tool in lat:
            lat[tool] += r["lat"][tool]
            errors[tool].update(r["errors"][tool])
    wall = max(r["end"] for r in results) - results[0]["start"]
    calls = sum(len(v) for v in lat.values())
    return {"name": name, "clients": len(results), "calls": calls, "per_s": calls / max(wall, seconds),
            "lat": lat, "errors": errors, "acked": [x for r in results for x in r["acked"]]}


def _ms(xs: list[float], p: float) -> str:
    return f"{gen.percentile(xs, p) * 1000:.0f} ms" if xs else "-"


def run(a: argparse.Namespace, work: Path) -> None:
    """Both phases on one generated root, then the check of what was acknowledged."""
    from sediment import Repository

    n = 2_000 if a.quick else a.size
    clients = min(a.clients, 4) if a.quick else a.clients
    seconds = 10.0 if a.quick else a.seconds
    root = work / f"root-{n}"
    t = time.perf_counter()
    mems = gen.write_root(root, n)
    qfile = work / "queries.json"
    qfile.write_text(json.dumps(gen.queries(mems, 200), ensure_ascii=False), encoding="utf-8")
    print(f"generated {n:,} memories in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
    del mems
    proc, url, token = _start_server(root)
    try:
        one = _summary("1 client", _phase(url, token, 1, seconds, a.writes, qfile, 1), seconds)
        many = _summary(f"{clients} clients", _phase(url, token, clients, seconds, a.writes, qfile, 101), seconds)
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(300)
    acked = one["acked"] + many["acked"]
    with Repository(root) as repo:
        missing = [i for i, marker in acked if i not in repo or marker not in repo.get(i).text]
        total = len(repo)
    load = os.getloadavg()
    print(f"\nsediment serve --http, {n:,} memories, {seconds:g} s a phase, {a.writes:.0%} remember / "
          f"{1 - a.writes:.0%} recall; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} "
          f"on {os.cpu_count()} cores; server exit {code}")
    print("| phase | calls | calls/s | ratio | recall p50 | recall p99 | remember p50 | remember p99 | errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for s in (one, many):
        errs = ", ".join(f"{tool} {code}: {k}" for tool, c in s["errors"].items() for code, k in c.items()) or "none"
        print(f"| {s['name']} | {s['calls']:,} | {s['per_s']:.1f} | {gen.ratio(s['per_s'], one['per_s'])} | "
              f"{_ms(s['lat']['recall'], 50)} | {_ms(s['lat']['recall'], 99)} | {_ms(s['lat']['remember'], 50)} | "
              f"{_ms(s['lat']['remember'], 99)} | {errs} |")
    print(f"acknowledged remembers: {len(acked):,}; missing afterwards: {len(missing)}; "
          f"root: {total:,} memories (expected {n + len(acked):,})")
    if missing or total != n + len(acked):
        raise SystemExit("LOST WRITES")


if __name__ == "__main__":
    import anyio

    ap = argparse.ArgumentParser()
    ap.add_argument("--client", action="store_true")
    ap.add_argument("--url")
    ap.add_argument("--token")
    ap.add_argument("--seconds", type=float)
    ap.add_argument("--writes", type=float)
    ap.add_argument("--queries")
    ap.add_argument("--seed", type=int)
    ns = ap.parse_args()
    print(json.dumps(anyio.run(_client, ns)))
