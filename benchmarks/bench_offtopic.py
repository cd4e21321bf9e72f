"""Off-topic questions asked of a LoCoMo conversation: does a search about
nothing in the memory return few or no hits? (issue 31)

    python benchmarks/bench_offtopic.py --data PATH               # the first conversation
    python benchmarks/bench_offtopic.py --data PATH --conv conv-30 --semantic
    python benchmarks/bench_offtopic.py --data PATH --conv all    # every conversation
    python benchmarks/bench_offtopic.py --data PATH --show 10     # what the first 10 questions return

Data: ``benchmarks/patterns/off_topic.json`` (120 general-knowledge questions,
60 English and 60 Chinese, frozen; see ``patterns/README.md``) and LoCoMo
``locomo10.json`` read from ``<data>/locomo/`` (as ``bench_locomo.py`` reads
it; where it comes from and its licence are in that script's docstring; never
copied into the project).

Protocol: a fresh root in a temp folder holding one conversation's dialog
turns (``--conv``: which one, or ``all``: a root each, figures pooled), one
memory per turn, added as ``bench_locomo.py``'s turn level adds them
(``[<session date>] <speaker>: <text>``, ``Repository.add(text, now=...)`` at
fixed, increasing times). Every off-topic question is asked with
``search(q, limit=10, record=False)``. Printed, per language: the average
number of hits and the share of searches with any hit. Beside them, in the
same run on the same root, the conversation's own questions (LoCoMo
categories 1-4 with evidence), so that a change which quiets the off-topic
searches shows what it does to the on-topic ones: their average hits, share
with any hit and turn R@10. With ``--semantic`` the same root is opened again
as ``Repository(root, semantic=True)``, ``embed()`` once, and everything asked
again. Plain reference, same texts: BM25 over lower-cased ``\\w+`` tokens (as
``bench_locomo.py``'s baseline), counting the turns that share a token with the
question (at most 10).
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
from baselines import Lane  # noqa: E402
from bench_locomo import CATEGORIES, normalise_evidence, sessions, turn_line  # noqa: E402

from sediment import Repository  # noqa: E402

QUESTIONS = Path(__file__).resolve().parent / "patterns" / "off_topic.json"
LIMIT = 10
_TOKEN = re.compile(r"\w+")


def conversations(data: Path, which: str | None) -> list[dict]:
    samples = json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    if which is None:
        return samples[:1]
    if which == "all":
        return samples
    for i, s in enumerate(samples):
        if which in (s["sample_id"], str(i)):
            return [s]
    raise SystemExit(f"no conversation {which!r}: " + ", ".join(s["sample_id"] for s in samples))


def mean(xs) -> float:
    xs = list(xs)
    return sum(xs) / len(xs) if xs else float("nan")


def run(conv: dict, off: list[dict], root: Path, semantic: bool, timing: dict[str, list[float]]) -> dict:
    """One conversation's root: {system: {question: hit turn ids}}, the on-topic
    questions with their evidence, and the turn texts by id."""
    turns = [(date, t) for _, date, ts in sessions(conv["conversation"]) for t in ts]
    texts = [turn_line(date, t) for date, t in turns]
    dias = [t["dia_id"] for _, t in turns]
    on_topic = [(qa["question"], ev) for qa in conv["qa"] if qa.get("category") in CATEGORIES
                for ev in [normalise_evidence(qa.get("evidence") or [], set(dias))] if ev]
    asked = list(dict.fromkeys([q["q"] for q in off] + [q for q, _ in on_topic]))
    runs: dict[str, dict[str, list[str]]] = {}
    dia_of: dict[str, str] = {}

    def ask(name: str, repo: Repository) -> None:
        runs[name] = {}
        for q in asked:
            t = time.perf_counter()
            hits = repo.search(q, limit=LIMIT, record=False)
            timing[name].append(time.perf_counter() - t)
            runs[name][q] = [dia_of[h.entry.id] for h in hits]

    with Repository(root) as repo:
        for i, (text, dia) in enumerate(zip(texts, dias)):
            dia_of[repo.add(text, now=gen.add_time(i)).id] = dia
        ask("sediment", repo)
    if semantic:
        with Repository(root, semantic=True) as repo:
            repo.embed()
            ask("sediment+semantic", repo)
    lane = Lane(texts, lambda t: _TOKEN.findall(t.lower()))
    runs["BM25 \\w+"] = {q: [dias[i] for i in lane.ranked(q)[:LIMIT]] for q in asked}
    return {"runs": runs, "on_topic": on_topic, "line": dict(zip(dias, texts)), "turns": len(texts)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=gen.default_data_dir(),
                    help="the bench-data folder (default: ../shared/bench-data from the repository)")
    ap.add_argument("--conv", help="the conversation: a sample id (conv-26), an index from 0, or 'all' "
                                   "(default: the first)")
    ap.add_argument("--questions", type=Path, default=QUESTIONS, help="the off-topic questions (default: patterns/)")
    ap.add_argument("--semantic", action="store_true", help="also with the semantic lane on")
    ap.add_argument("--show", type=int, default=0, metavar="N",
                    help="print what the first N questions of each language return (the first conversation)")
    ap.add_argument("--tmp", help="where to make the temp folder (default: the system temp dir)")
    a = ap.parse_args(argv)
    src = a.data / "locomo" / "locomo10.json"
    if not src.exists():
        ap.error(f"{src} not found (use --data)")
    convs = conversations(a.data, a.conv)
    off = json.loads(a.questions.read_text(encoding="utf-8"))["questions"]
    print(f"sediment bench_offtopic  ({gen.source_fingerprint()})")
    print(f"{len(off)} off-topic questions ({sum(q['lang'] == 'en' for q in off)} en, "
          f"{sum(q['lang'] == 'zh' for q in off)} zh), each asked of every conversation; limit {LIMIT}")
    timing: dict[str, list[float]] = defaultdict(list)
    done = []
    tmp = Path(tempfile.mkdtemp(prefix="sediment-bench-offtopic-", dir=a.tmp))
    t0 = time.perf_counter()
    try:
        for conv in convs:
            done.append(run(conv, off, tmp / conv["sample_id"], a.semantic, timing))
            print(f"  LoCoMo {conv['sample_id']}: {done[-1]['turns']} turns, "
                  f"{len(done[-1]['on_topic'])} on-topic questions", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    rows = []
    for system in done[0]["runs"]:
        for lang in ("en", "zh", "all"):
            qs = [q["q"] for q in off if lang in ("all", q["lang"])]
            hits = [len(d["runs"][system][q]) for d in done for q in qs]
            rows.append([system, f"off-topic {lang}", len(hits), f"{mean(hits):.2f}",
                         f"{mean(h > 0 for h in hits):.3f}", ""])
        pairs = [(d["runs"][system][q], ev) for d in done for q, ev in d["on_topic"]]
        rows.append([system, "on-topic", len(pairs), f"{mean(len(r) for r, _ in pairs):.2f}",
                     f"{mean(bool(r) for r, _ in pairs):.3f}",
                     f"{mean(sum(e in r for e in ev) / len(ev) for r, ev in pairs):.3f}"])
    print()
    print(gen.table(rows, ["system", "questions", "searches", "avg hits", "any hit", "turn R@10"]))
    print("target (issue 31): off-topic questions average <= 2 hits, lexical and with the semantic lane")
    for system, ts in timing.items():
        print(f"({system}: {1000 * mean(ts):.2f} ms per query)")
    print(f"(total {time.perf_counter() - t0:.0f} s)")
    if a.show:
        runs, line = done[0]["runs"], done[0]["line"]
        for lang in ("en", "zh"):
            for q in [q for q in off if q["lang"] == lang][:a.show]:
                print(f"\n{q['id']} {q['q']}")
                for system in (s for s in runs if s.startswith("sediment")):
                    print(f"   {system}: {len(runs[system][q['q']])} hits")
                    for d in runs[system][q["q"]][:3]:
                        print(f"      {d} {line[d][:100]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
