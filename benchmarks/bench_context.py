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

``--calibrate --data DIR`` measures the relevance floor on LoCoMo instead
(see ``calibrate``).

Printed per size: block size (characters, estimated tokens) median and max,
build time p50 / p99, and the ratio of the context p50 to the search p50.
Times are wall clock (and, for the context call, CPU time of the process,
which a busy machine disturbs less) on a shared machine: noisy, compare the
ratios.
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
from sediment.model.fields import build_meta, new_id, now_iso

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)
TARGET_100K = 0.050  # seconds: issue 14


def run(root: Path, n: int, queries: list[str], repeat: int, profile: bool) -> list:
    t0 = time.perf_counter()
    repo = Repository(root)
    opened = time.perf_counter() - t0
    for q in ("warm-up", "预热"):  # the segmenter loads on the first CJK text; the catalog is built
        repo.context(q, now=NOW)
    sizes, tokens, times, cpu, bare, base = [], [], [], [], [], []
    prof = None
    if profile:
        import cProfile
        prof = cProfile.Profile()
        prof.enable()
    for _ in range(repeat):
        for q in queries:
            t, c = time.perf_counter(), time.process_time()
            ctx = repo.context(q, now=NOW)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
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
            f"{gen.median(tokens):,.0f}", f"{p50 * 1000:.1f} ms", f"{gen.median(cpu) * 1000:.1f} ms",
            f"{gen.percentile(times, 99) * 1000:.1f} ms",
            f"{gen.median(bare) * 1000:.1f} ms", f"{gen.median(base) * 1000:.1f} ms",
            gen.ratio(p50, gen.median(base))]


def calibrate(data: Path, conversations: int, tmp: Path) -> None:
    """The relevance floor on LoCoMo: each conversation's turns are a root
    (one memory a turn); its own questions should be reminded of their
    evidence, the next conversation's questions (other people, other lives)
    of nothing. For each floor: the share of own questions with an evidence
    turn among the injected hits, the share of injected hits that are
    evidence, and the share of foreign questions that inject nothing."""
    import json
    import re as _re
    from sediment.model import entry as E
    from sediment.search import query as S
    from sediment.agent.relevance import HITS, StableTiebreak
    from sediment.search.evidence import covering
    samples = json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    floors = [0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5]
    own: list[list[tuple[float, bool]]] = []
    foreign: list[list[float]] = []
    for k in range(conversations):
        s, other = samples[k], samples[(k + 1) % len(samples)]
        root = tmp / f"locomo-{k}"
        Repository(root).close()
        dia_of = {}
        for key, turns in s["conversation"].items():
            if not (_re.fullmatch(r"session_\d+", key) and isinstance(turns, list)):
                continue
            for t in turns:
                eid = new_id(1_600_000_000_000 + len(dia_of))
                meta = build_meta(id=eid, title=f"{t['speaker']} {t['dia_id']}", created=now_iso(NOW),
                                    kind="fact", tags=(), value=0.5, source=key, links=(), extra={})
                body = f"{t['speaker']}: {t['text']}\n"
                (root / "shallow" / f"t-{eid[-6:].lower()}.md").write_text(
                    E.render(E.Entry(meta=meta, body=body)), encoding="utf-8")
                dia_of[eid] = t["dia_id"]
        with Repository(root) as repo, repo.view.reading() as view:
            def scored(q: str) -> list[tuple[float, str]]:
                asked = S.ask(view.tokenizer, q)
                hits = S.run(view.index, view.entries, asked, limit=HITS, pred=None,
                             include_archive=False, include_superseded=False,
                             tiebreak=StableTiebreak(view.entries, dict, repo.policy.kinds))
                cover = covering(view.index, asked.words, asked.bigrams)  # (context()'s measure of a hit)
                return [(cover(h.index_terms), h.entry.id) for h in hits]
            for qa in s["qa"]:
                ev = {str(x) for x in qa.get("evidence") or ()}
                if qa.get("category") in (1, 2, 3, 4) and ev:
                    own.append([(r, dia_of[i] in ev) for r, i in scored(qa["question"])])
            for qa in other["qa"]:
                if qa.get("category") in (1, 2, 3, 4):
                    foreign.append([r for r, _ in scored(qa["question"])])
    rows = []
    for f in floors:
        found = sum(1 for hs in own if any(ok for r, ok in hs if r >= f)) / len(own)
        kept = [ok for hs in own for r, ok in hs if r >= f]
        clean = sum(1 for hs in foreign if not any(r >= f for r in hs)) / len(foreign)
        rows.append([f"{f:.2f}", f"{found:.1%}", f"{sum(kept) / len(kept):.1%}" if kept else "n/a",
                     f"{len(kept) / len(own):.1f}", f"{clean:.1%}"])
    print(f"LoCoMo, {conversations} conversation(s): {len(own)} own questions, {len(foreign)} foreign")
    print(gen.table(rows, ["floor", "own: evidence injected", "injected that is evidence",
                           "injected per question", "foreign: nothing injected"]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="100,10000,100000", help="root sizes, comma separated")
    ap.add_argument("--queries", type=int, default=60, help="size of the query set (60)")
    ap.add_argument("--repeat", type=int, default=2, help="passes over the query set (2)")
    ap.add_argument("--roots", help="folder of roots to reuse (DIR/r<size>); made when missing, kept")
    ap.add_argument("--profile", action="store_true", help="print a cProfile table of the context calls")
    ap.add_argument("--calibrate", action="store_true",
                    help="instead: the relevance floor on LoCoMo (needs --data)")
    ap.add_argument("--conversations", type=int, default=3, help="LoCoMo conversations for --calibrate (3)")
    ap.add_argument("--data", type=Path, default=gen.default_data_dir(), help="public data folder")
    args = ap.parse_args(argv)
    if args.calibrate:
        with tempfile.TemporaryDirectory(prefix="sediment-calibrate-") as t:
            calibrate(args.data, args.conversations, Path(t))
        return 0
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
                           "context p50", "p50 CPU", "context p99", "no query p50", "search p50 (baseline)",
                           "context / search"]))
    print(f"target: context p50 ≤ {TARGET_100K * 1000:.0f} ms at 100,000 memories")
    return 0


if __name__ == "__main__":
    sys.exit(main())
