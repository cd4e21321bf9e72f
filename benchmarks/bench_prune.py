"""Search latency with and without pruning, with and without the feedback lane.

    python benchmarks/bench_prune.py                    # 10,000 and 100,000 memories
    python benchmarks/bench_prune.py --sizes 10000      # one size
    python benchmarks/bench_prune.py --quick            # 2,000 memories, one pass
    python benchmarks/bench_prune.py --sizes 100000 --keep DIR   # build once, reuse after

Data: generated (``benchmarks/gen.py``, the same memories and query set as
``bench_scale.py``: seeded, ~300 characters, one third each Chinese, English
and mixed). The index is built in this process directly from the memories
(parsed and tokenized as an open does, without the files), so the figures are
the index's own: ``Index.search`` for the query's terms (tokenizing the query
is the same work in every mode and is left out), ``limit=10``, every query
``--repeat`` times per mode, modes interleaved query by query so that load
from other processes falls on all of them alike. Times are the process's CPU
time per search (``time.process_time``): on a shared machine wall time adds
whatever the scheduler gave to others, which swamped the tail (a 1 ms search
measured 16 ms); ``--wall`` for wall time.

``--keep DIR`` saves each size's built index (its snapshot bytes) and query
terms in DIR and reuses them on the next run with the same tokenizer,
snapshot format, generator, parser and term making (``BUILT_BY``), so that a
change to scoring is measured without the minutes a 100k build takes. A
reused index is the warm-open form (arrays read back from the snapshot), as a
repository's search meets it.

Modes: the three lexical lanes exhaustive ("no pruning", the baseline) and
pruned; then with the feedback lane on (the default), exhaustive and pruned.
Each pruned result list is checked to equal its exhaustive one (keys and
scores); a difference is reported and fails the run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)

from sediment.model import entry as E  # noqa: E402
from sediment.search import query as S  # noqa: E402
from sediment.search.feedback import Feedback  # noqa: E402
from sediment.search.index import Index  # noqa: E402
from sediment.search.snapshot import SNAPSHOT_FORMAT  # noqa: E402
from sediment.model.policy import DEFAULTS  # noqa: E402
from sediment.search.tokenize import Tokenizer  # noqa: E402

# the files whose change makes a kept index stale (``--keep``)
BUILT_BY = [gen.BENCH_DIR / "gen.py"] + [gen.REPO_DIR / "sediment" / f"{m}.py" for m in
                                         ("model/entry", "model/fields", "search/textnorm", "search/tokenize",
                                          "search/query", "search/index")]
MODES = [("lexical, no pruning", False, False), ("lexical, pruned", True, False),
         ("+ feedback, no pruning", False, True), ("+ feedback, pruned", True, True)]


def build(n: int, tok: Tokenizer) -> tuple[Index, list]:
    idx = Index()
    mems = []
    for m in gen.memories(n, seed=1):
        e = E.parse(m.data.decode("utf-8"), path=m.rel)
        idx.put(e.id, S.doc_terms(tok, e), S.flags(e))
        mems.append(m)
        if len(idx) % 20_000 == 0:
            idx.fold()
    idx.fold()
    return idx, mems


def prepare(n: int, a: argparse.Namespace, tok: Tokenizer) -> tuple[Index, list]:
    """The index of ``n`` generated memories and the query terms: built, or
    read back from ``--keep`` when it holds them for this tokenizer."""
    h = hashlib.sha256(f"{tok.fingerprint()}|{SNAPSHOT_FORMAT}|{n}|{a.queries}".encode())
    for f in BUILT_BY:  # (what decides the memories and their terms; not the scoring)
        h.update(f.read_bytes())
    key = h.hexdigest()[:12]
    kept = Path(a.keep) / f"prune-{n}-{key}" if a.keep else None
    if kept is not None and (kept / "index").is_file():
        with open(kept / "index", "rb") as fh:
            idx, _ = Index.restore(fh)
        qs = [tuple(q) for q in json.loads((kept / "queries.json").read_text(encoding="utf-8"))]
        print(f"  {n:,} memories: index read back from {kept}", flush=True)
        return idx, qs
    t0 = time.perf_counter()
    idx, mems = build(n, tok)
    print(f"  {n:,} memories indexed in {time.perf_counter() - t0:.1f} s", flush=True)
    qs = [S.query_terms(tok, q["q"]) for q in gen.queries(mems, a.queries, seed=99)]
    if kept is not None:
        kept.mkdir(parents=True, exist_ok=True)
        with open(kept / "index", "wb") as fh:
            for chunk in idx.snapshot():
                fh.write(chunk)
        (kept / "queries.json").write_text(json.dumps(qs, ensure_ascii=False), encoding="utf-8")
    return idx, qs


def bench(n: int, a: argparse.Namespace, tok: Tokenizer) -> list[list]:
    idx, qs = prepare(n, a, tok)
    fb = S.feedback(DEFAULTS) or Feedback()
    exclude = S.PURGED | S.IN_ARCHIVE | S.SUPERSEDED
    times: dict[str, list[float]] = {m[0]: [] for m in MODES}
    clock = time.perf_counter if a.wall else time.process_time
    differ = 0
    for words, bigrams in qs:
        if not words and not bigrams:
            continue
        got = {}
        for _ in range(a.repeat):
            for name, prune, feedback in MODES:
                t = clock()
                hits = idx.search(words, bigrams, exclude=exclude, limit=10, prune=prune,
                                  feedback=fb if feedback else None)
                times[name].append(clock() - t)
                got[name] = [(h.key, h.score) for h in hits]
        differ += got[MODES[0][0]] != got[MODES[1][0]]
        differ += got[MODES[2][0]] != got[MODES[3][0]]
    base = times[MODES[0][0]]
    rows = []
    for name, _, _ in MODES:
        xs = times[name]
        rows.append([f"{n:,}", name, f"{gen.percentile(xs, 50) * 1000:.2f}", f"{gen.percentile(xs, 99) * 1000:.1f}",
                     gen.ratio(gen.percentile(xs, 50), gen.percentile(base, 50)),
                     gen.ratio(gen.percentile(xs, 99), gen.percentile(base, 99))])
    print(f"  {len(base):,} searches per mode; pruned results differing from exhaustive: {differ}", flush=True)
    if differ:
        raise SystemExit("pruning changed a result")
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="10000,100000")
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--wall", action="store_true", help="wall time instead of CPU time")
    p.add_argument("--keep", metavar="DIR", help="keep the built indexes in DIR and reuse them")
    a = p.parse_args()
    if a.quick:
        a.sizes, a.repeat = "2000", 1
    print(f"sediment bench_prune  (sediment source {gen.source_fingerprint()})")
    tok = Tokenizer()
    rows = []
    for n in (int(x) for x in a.sizes.split(",")):
        rows += bench(n, a, tok)
    print(gen.table(rows, ["memories", "mode", "p50 ms", "p99 ms", "p50 vs no pruning", "p99 vs no pruning"]))


if __name__ == "__main__":
    main()
