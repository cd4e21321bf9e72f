"""LoCoMo retrieval: does a question find the dialog turns (and sessions) that answer it?

    python benchmarks/bench_locomo.py                           # all 10 conversations
    python benchmarks/bench_locomo.py --limit-conversations 2   # a quick run
    python benchmarks/bench_locomo.py --data PATH               # another bench-data folder
    python benchmarks/bench_locomo.py --ranked OUT.json         # every question's ranked list, saved
    python benchmarks/bench_locomo.py --ranked OUT.json --no-prune   # ... scored without pruning
    python benchmarks/bench_locomo.py --compare A.json B.json   # which questions' lists differ

``--ranked`` keeps what the figures summarise, so that two versions (or a
run with and one without pruning, ``--no-prune``: every posting scored) are
compared list by list, scores rounded to 9 places, not only by their means.

Data: LoCoMo ``locomo10.json`` from GitHub ``snap-research/locomo``
(``data/locomo10.json``), licence CC BY-NC 4.0 — Maharana et al., "Evaluating
Very Long-Term Conversational Memory of LLM Agents", ACL 2024. It is read from
``<data>/locomo/locomo10.json`` (default ``<data>`` = ``../shared/bench-data``
next to the repository) and never copied into the project.

Protocol (issue 3):

* **Turn level.** For each conversation a fresh root in a temp folder; every
  dialog turn is written through the public API (``Repository.add(text,
  now=...)``: fixed, increasing times, so that ties, broken by recency, fall the
  same way every run) as one memory with text ``[<session date>] <speaker>: <text>``.
  Every QA of categories 1–4 with evidence is a query (``search(question,
  limit=50, record=False)``: recording recalls would make later rankings depend
  on the clock). Evidence ids are normalised (lists in one string split on ``;``
  and spaces, ``D:11:26`` → ``D11:26``, ``D30:05`` → ``D30:5``; ids naming no turn
  are dropped; a question left without evidence is skipped). Recall@k = share of
  the question's evidence turns in the top k, averaged over questions; MRR = 1 /
  rank of the first evidence turn within the top 50 (0 if none), averaged.
* **Session level.** Again a fresh root per conversation, one memory per
  session: the same turn lines joined by newlines, titled with the session's
  date (``add(text, title=date)``). A session is relevant when it holds an
  evidence turn; R@k = share of the relevant sessions in the top k (also shown:
  "any@k", the share of questions with at least one relevant session in the top k).

Baseline, computed in the same run over exactly the same texts: Okapi BM25
(``rank_bm25.BM25Okapi``, k1 = 1.5, b = 0.75) over lower-cased ``\\w+`` tokens;
all documents ranked by score (ties in document order).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)

from sediment import Repository  # noqa: E402

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (1, 5, 10)
MRR_DEPTH = 50
_TOKEN = re.compile(r"\w+")
_ID = re.compile(r"^D:?(\d+):0*(\d+)$")


def normalise_evidence(raw: list, known: set[str]) -> list[str]:
    out = []
    for item in raw:
        for part in re.split(r"[;\s]+", str(item)):
            m = _ID.match(part.strip())
            if not m:
                continue
            did = f"D{int(m.group(1))}:{int(m.group(2))}"
            if did in known and did not in out:
                out.append(did)
    return out


def sessions(conv: dict) -> list[tuple[int, str, list[dict]]]:
    """(number, date, turns) of every session that holds turns, in order."""
    out = []
    for k, v in conv.items():
        m = re.fullmatch(r"session_(\d+)", k)
        if m and isinstance(v, list) and v:
            n = int(m.group(1))
            out.append((n, conv.get(f"session_{n}_date_time", ""), v))
    return sorted(out)


def turn_line(date: str, turn: dict) -> str:
    return f"[{date}] {turn['speaker']}: {turn['text']}"


class BM25Baseline:
    def __init__(self, texts: list[str]) -> None:
        from rank_bm25 import BM25Okapi
        self.bm = BM25Okapi([_TOKEN.findall(t.lower()) for t in texts], k1=1.5, b=0.75)
        self.n = len(texts)

    def rank(self, query: str) -> list[int]:
        scores = self.bm.get_scores(_TOKEN.findall(query.lower()))
        return sorted(range(self.n), key=lambda i: -scores[i])  # stable: ties in doc order


class Scores:
    """Per-question figures, grouped by category."""

    def __init__(self) -> None:
        self.rows: list[tuple[int, dict[str, float]]] = []

    def add(self, cat: int, ranked: list, relevant: set) -> None:
        r: dict[str, float] = {}
        for k in KS:
            top = set(ranked[:k])
            r[f"R@{k}"] = len(relevant & top) / len(relevant)
            r[f"any@{k}"] = 1.0 if relevant & top else 0.0
        rr = 0.0
        for i, key in enumerate(ranked[:MRR_DEPTH], 1):
            if key in relevant:
                rr = 1.0 / i
                break
        r["MRR"] = rr
        self.rows.append((cat, r))

    def mean(self, metric: str, cat: int | None = None) -> float:
        xs = [r[metric] for c, r in self.rows if cat is None or c == cat]
        return sum(xs) / len(xs) if xs else float("nan")

    def count(self, cat: int | None = None) -> int:
        return sum(1 for c, _ in self.rows if cat is None or c == cat)


def run(data: Path, limit: int | None, tmp: Path, levels: set[str], ranked: dict | None = None) -> dict:
    samples = json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    if limit:
        samples = samples[:limit]
    res = {lvl: {"lib": Scores(), "base": Scores()} for lvl in ("turn", "session")}
    timing = defaultdict(float)
    skipped = 0
    for s in samples:
        conv = s["conversation"]
        sess = sessions(conv)
        turns = [(n, date, t) for n, date, ts in sess for t in ts]
        known = {t["dia_id"] for _, _, t in turns}
        qas = []
        for qa in s["qa"]:
            if qa.get("category") not in CATEGORIES:
                continue
            ev = normalise_evidence(qa.get("evidence") or [], known)
            if not ev:
                skipped += 1
                continue
            qas.append((qa["category"], qa["question"], ev))
        sess_of = {t["dia_id"]: n for n, _, t in turns}

        if "turn" in levels:
            root = tmp / f"{s['sample_id']}-turns"
            texts = [turn_line(date, t) for _, date, t in turns]
            t0 = time.perf_counter()
            repo = Repository(root)
            id2dia = {}
            for i, ((_, _, t), text) in enumerate(zip(turns, texts)):
                id2dia[repo.add(text, now=gen.add_time(i)).id] = t["dia_id"]
            t1 = time.perf_counter()
            timing["turn_add"] += t1 - t0
            base = BM25Baseline(texts)
            dias = [t["dia_id"] for _, _, t in turns]
            for cat, q, ev in qas:
                t2 = time.perf_counter()
                hits = repo.search(q, limit=MRR_DEPTH, record=False)
                timing["turn_search"] += time.perf_counter() - t2
                timing["turn_queries"] += 1
                res["turn"]["lib"].add(cat, [id2dia[h.entry.id] for h in hits], set(ev))
                if ranked is not None:
                    ranked.setdefault(f"{s['sample_id']}/turn", []).append(
                        [q, [[id2dia[h.entry.id], round(h.score, 9)] for h in hits]])
                res["turn"]["base"].add(cat, [dias[i] for i in base.rank(q)], set(ev))
            repo.close()
            shutil.rmtree(root)

        if "session" in levels:
            root = tmp / f"{s['sample_id']}-sessions"
            texts = ["\n".join(turn_line(date, t) for t in ts) for _, date, ts in sess]
            repo = Repository(root)
            id2sess = {}
            for i, ((n, date, _), text) in enumerate(zip(sess, texts)):
                id2sess[repo.add(text, title=date or f"session {n}", now=gen.add_time(i)).id] = n
            base = BM25Baseline(texts)
            nums = [n for n, _, _ in sess]
            for cat, q, ev in qas:
                rel = {sess_of[d] for d in ev}
                hits = repo.search(q, limit=MRR_DEPTH, record=False)
                res["session"]["lib"].add(cat, [id2sess[h.entry.id] for h in hits], rel)
                if ranked is not None:
                    ranked.setdefault(f"{s['sample_id']}/session", []).append(
                        [q, [[id2sess[h.entry.id], round(h.score, 9)] for h in hits]])
                res["session"]["base"].add(cat, [nums[i] for i in base.rank(q)], rel)
            repo.close()
            shutil.rmtree(root)
        print(f"  {s['sample_id']}: {len(turns)} turns, {len(sess)} sessions, {len(qas)} questions",
              flush=True)
    return {"res": res, "timing": timing, "skipped": skipped, "conversations": len(samples)}


def report(out: dict, levels: set[str]) -> None:
    res = out["res"]
    print(f"\n{out['conversations']} conversations; {out['skipped']} category 1-4 questions "
          f"skipped for lack of usable evidence")
    if "turn" in levels:
        lib, base = res["turn"]["lib"], res["turn"]["base"]
        print(f"\n== turn level: {lib.count()} questions ==")
        rows = []
        for m in ("R@1", "R@5", "R@10", "MRR"):
            a, b = lib.mean(m), base.mean(m)
            rows.append([m, f"{a:.3f}", f"{b:.3f}", f"{a - b:+.3f}"])
        print(gen.table(rows, ["metric", "sediment", "BM25 \\w+", "diff"]))
        _per_category(lib, base, ("R@5", "R@10", "MRR"))
        t = out["timing"]
        if t["turn_queries"]:
            print(f"(adds: {t['turn_add']:.1f} s in all, durable, through Repository.add; "
                  f"search: {1000 * t['turn_search'] / t['turn_queries']:.2f} ms per query, limit 50)")
        r10, mrr = lib.mean("R@10"), lib.mean("MRR")
        print(f"targets: turn R@10 {r10:.3f} (>= 0.65: {'ok' if r10 >= 0.65 else 'MISSED'}), "
              f"MRR {mrr:.3f} (>= 0.50: {'ok' if mrr >= 0.50 else 'MISSED'})")
    if "session" in levels:
        lib, base = res["session"]["lib"], res["session"]["base"]
        print(f"\n== session level: {lib.count()} questions ==")
        rows = []
        for m in ("R@1", "R@5", "R@10", "any@5", "any@10", "MRR"):
            a, b = lib.mean(m), base.mean(m)
            rows.append([m, f"{a:.3f}", f"{b:.3f}", f"{a - b:+.3f}"])
        print(gen.table(rows, ["metric", "sediment", "BM25 \\w+", "diff"]))
        _per_category(lib, base, ("R@5", "R@10"))
        r10 = lib.mean("R@10")
        print(f"target: session R@10 {r10:.3f} (>= 0.93: {'ok' if r10 >= 0.93 else 'MISSED'})")


def _per_category(lib: Scores, base: Scores, metrics: tuple[str, ...]) -> None:
    rows = []
    for cat, name in CATEGORIES.items():
        row = [f"{cat} {name}", str(lib.count(cat))]
        for m in metrics:
            row.append(f"{lib.mean(m, cat):.3f} / {base.mean(m, cat):.3f}")
        rows.append(row)
    print("per category (sediment / BM25):")
    print(gen.table(rows, ["category", "n", *metrics]))


def compare(a: Path, b: Path) -> int:
    """Print how many questions' ranked lists (ids and scores) differ between two ``--ranked`` files."""
    ra, rb = (json.loads(p.read_text(encoding="utf-8")) for p in (a, b))
    total = differ = 0
    for key in sorted(set(ra) | set(rb)):
        la, lb = ra.get(key, []), rb.get(key, [])
        for i in range(max(len(la), len(lb))):
            total += 1
            qa, qb = (la[i] if i < len(la) else None), (lb[i] if i < len(lb) else None)
            if qa != qb:
                differ += 1
                if differ <= 5:
                    print(f"  {key} #{i}: {(qa or qb)[0]!r}\n    A {qa and qa[1][:5]}\n    B {qb and qb[1][:5]}")
    print(f"{total} questions' ranked lists compared: {differ} differ")
    return 1 if differ else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=gen.default_data_dir(),
                    help="the bench-data folder (default: ../shared/bench-data from the repository)")
    ap.add_argument("--limit-conversations", type=int, default=None, metavar="N",
                    help="only the first N conversations (quick run)")
    ap.add_argument("--level", choices=["turn", "session", "both"], default="both")
    ap.add_argument("--tmp", help="where to make the temp folder (default: the system temp dir)")
    ap.add_argument("--ranked", type=Path, metavar="OUT", help="save every question's ranked list (JSON)")
    ap.add_argument("--no-prune", action="store_true", help="score every posting (the index's prune=False)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"),
                    help="compare two --ranked files, question by question, and exit (1 if any differs)")
    a = ap.parse_args(argv)
    if a.compare:
        return compare(*a.compare)
    if a.no_prune:
        import functools
        from sediment.search.index import Index
        Index.search = functools.partialmethod(Index.search, prune=False)  # type: ignore[method-assign]
    src = a.data / "locomo" / "locomo10.json"
    if not src.exists():
        ap.error(f"{src} not found (use --data)")
    levels = {"turn", "session"} if a.level == "both" else {a.level}
    tmp = Path(tempfile.mkdtemp(prefix="sediment-bench-locomo-", dir=a.tmp))
    print(f"sediment bench_locomo  ({gen.source_fingerprint()})")
    try:
        t0 = time.perf_counter()
        ranked: dict | None = {} if a.ranked else None
        out = run(a.data, a.limit_conversations, tmp, levels, ranked)
        report(out, levels)
        if a.ranked:
            a.ranked.write_text(json.dumps(ranked, ensure_ascii=False), encoding="utf-8")
        print(f"\n(total {time.perf_counter() - t0:.0f} s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
