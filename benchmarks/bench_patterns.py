"""Issue 31's ranking patterns: where search loses to a plain reader, measured
on the frozen sets in ``benchmarks/patterns/`` beside the plain readers.

    python benchmarks/bench_patterns.py                  # lexical
    python benchmarks/bench_patterns.py --semantic       # also with the semantic lane on
    python benchmarks/bench_patterns.py --only p4 --show # one set, every question's ranks

Data: ``benchmarks/patterns/pN_*.json`` (written by hand, frozen; see its
README for what each pattern means). Protocol: for each pattern a fresh root
in a temp folder; every note added through the public API
(``Repository.add(text, now=...)`` at fixed, increasing times in the order of
the file, as ``bench_zhmem.py`` does); every question asked with
``search(q, limit=50, record=False)``. With ``--semantic`` the same root is
opened again as ``Repository(root, semantic=True)``, ``embed()`` once, and
every question asked again: the row "sediment+semantic".

Figures, per pattern and language: R@k = share of the question's gold notes in
the top k, averaged; MRR = 1 / rank of the first gold note within the top 50
(0 if none); "empty" = share of questions whose list is empty; "hits" = the
average length of the list (at most 50). Per pattern: p1 R@10 and MRR by kind
(latin / name / en); p2 R@10 of each part's gold, and of each half asked
alone (R@5 too); p3 the unanswerable questions' average hits and share with any hit;
p5 the share whose linking fact (and answer) is in the top 10.

Plain readers in the same run over the same texts (``baselines.py``):
RRF(jieba words BM25, character-bigram BM25) with K = 60, and BM25 over
bigrams. A reader returns only the notes that share a token with the question.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)
from baselines import Readers  # noqa: E402

from sediment import Repository  # noqa: E402

DATA = Path(__file__).resolve().parent / "patterns"
FILES = ("p1_unseen_term", "p2_two_questions", "p3_common_word", "p4_category", "p5_linking_fact")
DEPTH = 50
KS = (1, 5, 10)
METRICS = ("R@1", "R@5", "R@10", "MRR", "empty", "hits")


def score(ranked: list[str], gold: list[str]) -> dict[str, float]:
    """R@k, MRR, empty and hits of one ranked list of note ids."""
    out = {"hits": float(len(ranked)), "empty": float(not ranked)}
    if gold:
        for k in KS:
            out[f"R@{k}"] = sum(1 for g in gold if g in ranked[:k]) / len(gold)
        first = next((i for i, x in enumerate(ranked[:DEPTH], 1) if x in gold), None)
        out["MRR"] = 1 / first if first else 0.0
    return out


def recall(ranked: list[str], gold: list[str], k: int = 10) -> float:
    return sum(1 for g in gold if g in ranked[:k]) / len(gold)


def mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def queries(data: dict) -> list[str]:
    """Every text asked of the memory: the questions, then p2's halves alone."""
    out = [q["q"] for q in data["questions"]]
    out += [h for q in data["questions"] for h in q.get("halves", ())]
    return list(dict.fromkeys(out))


def sediment_runs(data: dict, root: Path, semantic: bool, timing: dict[str, list[float]]) -> dict[str, dict]:
    """{system: {query: ranked note ids}} for sediment, lexical (and with the lane on)."""
    asked = queries(data)
    id_of: dict[str, str] = {}

    def ask(name: str, repo: Repository) -> dict[str, list[str]]:
        ranked = {}
        for q in asked:
            t = time.perf_counter()
            hits = repo.search(q, limit=DEPTH, record=False)
            timing[name].append(time.perf_counter() - t)
            ranked[q] = [id_of[h.entry.id] for h in hits]
        return ranked

    out = {}
    with Repository(root) as repo:
        for i, note in enumerate(data["notes"]):
            id_of[repo.add(note["text"], now=gen.add_time(i)).id] = note["id"]
        out["sediment"] = ask("sediment", repo)
    if semantic:
        with Repository(root, semantic=True) as repo:
            repo.embed()
            out["sediment+semantic"] = ask("sediment+semantic", repo)
    return out


def reader_runs(data: dict) -> dict[str, dict]:
    ids = [n["id"] for n in data["notes"]]
    readers = Readers([n["text"] for n in data["notes"]], DEPTH)
    out: dict[str, dict] = {name: {} for name in Readers.names}
    for q in queries(data):
        for name, ranked in readers.rank(q).items():
            out[name][q] = [ids[i] for i in ranked]
    return out


def table_rows(runs: dict[str, dict], questions: list[dict]) -> list[list]:
    rows = []
    for system, ranked in runs.items():
        for lang in ("zh", "en", "all"):
            qs = [q for q in questions if lang in ("all", q["lang"])]
            if not qs:
                continue
            scores = [score(ranked[q["q"]], q["gold"]) for q in qs]
            rows.append([system, lang, len(qs)] + [f"{mean(s[m] for s in scores):.3f}" if m != "hits" else
                                                    f"{mean(s[m] for s in scores):.1f}" for m in METRICS])
    return rows


def by_lang(runs: dict[str, dict], questions: list[dict], cells) -> list[list]:
    """One row per system and language: ``cells(ranked, qs)`` → the row's figures."""
    rows = []
    for system, ranked in runs.items():
        for lang in ("zh", "en", "all"):
            qs = [q for q in questions if lang in ("all", q["lang"])]
            if qs:
                rows.append([system, lang, len(qs)] + cells(ranked, qs))
    return rows


def report(name: str, data: dict, runs: dict[str, dict], show: bool) -> dict[str, dict[str, float]]:
    qs = data["questions"]
    answerable = [q for q in qs if q["gold"]]
    print(f"\n== {name}: {len(data['notes'])} notes, {len(qs)} questions ==")
    print(gen.table(table_rows(runs, answerable), ["system", "lang", "n", *METRICS]))
    summary = {}
    for system, ranked in runs.items():
        ss = [score(ranked[q["q"]], q["gold"]) for q in answerable]
        summary[system] = {m: mean(s[m] for s in ss) for m in METRICS}

    if name.startswith("p1"):
        kinds = sorted({q["kind"] for q in qs})
        rows = []
        for system, ranked in runs.items():
            row = [system]
            for kind in kinds:
                ks = [score(ranked[q["q"]], q["gold"]) for q in qs if q["kind"] == kind]
                row.append(f"{mean(s['R@10'] for s in ks):.3f} / {mean(s['MRR'] for s in ks):.3f}")
            rows.append(row)
        print("by kind, R@10 / MRR (" + ", ".join(f"{k} {sum(q['kind'] == k for q in qs)}" for k in kinds) + "):")
        print(gen.table(rows, ["system", *kinds]))
    if name.startswith("p2"):
        def parts(ranked, group):
            def part(q, n):
                return [g for g, p in q["part"].items() if p == n]

            def cell(text_of, n):
                return " / ".join(f"{mean(recall(ranked[text_of(q)], part(q, n), k) for q in group):.3f}"
                                  for k in (5, 10))
            return [cell(lambda q: q["q"], n) for n in (1, 2)] + \
                   [cell(lambda q, n=n: q["halves"][n - 1], n) for n in (1, 2)]
        print("R@5 / R@10 of each part's gold: asked together, and each half asked alone:")
        print(gen.table(by_lang(runs, qs, parts),
                        ["system", "lang", "n", "part 1", "part 2", "half 1 alone", "half 2 alone"]))
    if name.startswith("p3"):
        none = [q for q in qs if not q["gold"]]

        def unanswerable(ranked, group):
            return [f"{mean(len(ranked[q['q']]) for q in group):.1f}",
                    f"{mean(bool(ranked[q['q']]) for q in group):.3f}",
                    f"{mean(min(len(ranked[q['q']]), 10) for q in group):.1f}"]
        print(f"unanswerable questions ({len(none)}): average hits (limit 50), share with any hit, hits in the top 10:")
        print(gen.table(by_lang(runs, none, unanswerable), ["system", "lang", "n", "hits", "any hit", "hits@10"]))
        for system, ranked in runs.items():
            summary[system]["unanswerable hits"] = mean(len(ranked[q["q"]]) for q in none)
    if name.startswith("p5"):
        def links(ranked, group):
            answer = [[g for g in q["gold"] if g not in q["link"]] for q in group]
            return [f"{mean(any(g in ranked[q['q']][:10] for g in q['link']) for q in group):.3f}",
                    f"{mean(recall(ranked[q['q']], a) == 1 for q, a in zip(group, answer)):.3f}",
                    f"{mean(recall(ranked[q['q']], q['gold']) == 1 for q in group):.3f}"]
        print("share of questions with, in the top 10:")
        print(gen.table(by_lang(runs, qs, links), ["system", "lang", "n", "link", "answer", "both"]))
        for system, ranked in runs.items():
            summary[system]["link@10"] = mean(any(g in ranked[q["q"]][:10] for g in q["link"]) for q in qs)
    if show:
        _show(data, runs)
    return summary


def _show(data: dict, runs: dict[str, dict]) -> None:
    texts = {n["id"]: n["text"] for n in data["notes"]}
    print()
    for q in data["questions"]:
        cells = []
        for system, ranked in runs.items():
            r = ranked[q["q"]]
            ranks = ",".join(str(r.index(g) + 1) if g in r else "-" for g in q["gold"])
            cells.append(f"{system} [{ranks}] {len(r)} hits")
        print(f"{q['id']} {q['q']}\n   " + "; ".join(cells))
        for g in q["gold"]:
            print(f"   gold {g}: {texts[g]}")
        top = runs["sediment"][q["q"]][:3]
        for t in top:
            print(f"   sediment top: {texts[t]}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="the folder of pattern files (default: patterns/)")
    ap.add_argument("--only", action="append", metavar="pN", help="only this pattern (p1 … p5; repeatable)")
    ap.add_argument("--semantic", action="store_true", help="also run sediment with the semantic lane on")
    ap.add_argument("--show", action="store_true", help="every question: the gold notes' ranks and sediment's top 3")
    ap.add_argument("--tmp", help="where to make the temp folder (default: the system temp dir)")
    a = ap.parse_args(argv)
    files = [f for f in FILES if not a.only or f.split("_")[0] in a.only]
    print(f"sediment bench_patterns  ({gen.source_fingerprint()})")
    timing: dict[str, list[float]] = defaultdict(list)
    summaries = {}
    tmp = Path(tempfile.mkdtemp(prefix="sediment-bench-patterns-", dir=a.tmp))
    t0 = time.perf_counter()
    try:
        for name in files:
            data = json.loads((a.data / f"{name}.json").read_text(encoding="utf-8"))
            runs = sediment_runs(data, tmp / name, a.semantic, timing)
            runs.update(reader_runs(data))
            summaries[name] = report(name, data, runs, a.show)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("\n== summary: all languages; R@10 / MRR / empty (p3: answerable questions; "
          "p3 unanswerable: average hits; p5: link in the top 10) ==")
    systems = list(next(iter(summaries.values())))
    rows = []
    for name, s in summaries.items():
        rows.append([name] + [f"{s[x]['R@10']:.3f} / {s[x]['MRR']:.3f} / {s[x]['empty']:.3f}" for x in systems])
        if name.startswith("p3"):
            rows.append(["  p3 unanswerable hits"] + [f"{s[x]['unanswerable hits']:.1f}" for x in systems])
        if name.startswith("p5"):
            rows.append(["  p5 link@10"] + [f"{s[x]['link@10']:.3f}" for x in systems])
    print(gen.table(rows, ["pattern", *systems]))
    for system, ts in timing.items():
        print(f"({system}: {1000 * mean(ts):.2f} ms per query, {len(ts)} queries, limit {DEPTH})")
    print(f"(total {time.perf_counter() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
