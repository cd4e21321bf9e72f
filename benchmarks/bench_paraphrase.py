"""The bilingual paraphrase set: is a memory found when it is asked for in
other words, or in the other language?

    python benchmarks/bench_paraphrase.py              # lexical, dense alone, fused
    python benchmarks/bench_paraphrase.py --distractors 500

Data: ``benchmarks/paraphrase/`` — 64 memories an agent would keep (Chinese,
English, mixed), each asked twice: reworded in its own language, and in the
other language (128 queries); plus 2,000 templated distractor turns of the
same genre. Written for sediment and frozen before the semantic lane was
tuned (benchmarks/README.md). Needs the ``sediment[semantic]`` extra.

Protocol: one root in a temp folder, memories and distractors added through
the public API at fixed times; every query is ``search(q, limit=10,
record=False)``. Three systems in the same run, on the same vectors: lexical
(the library without the lane), dense alone (cosine over the cached vectors,
no floor), and fused (the library with the lane). R@1/R@5/R@10 and MRR (within
the top 10), overall and per query kind (reworded / cross) — and, for fused,
how often an unrelated query (a distractor's words) brings a memory of the set
into the top 5: the floor's false alarms; and the same for 40 off-topic
questions (``OFF_TOPIC``), lexical and fused.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "paraphrase"))
import gen  # noqa: E402,F401  (puts the repository on sys.path)
import distractors  # noqa: E402

from sediment import Repository  # noqa: E402

LIMIT = 10

# Questions about none of the set's memories (general knowledge, nonsense),
# for a second false-alarm line: how often such a question brings a memory of
# the set into the top 5. Written later than the frozen set, during the
# tuning of centred similarities (benchmarks/README.md), so not held out.
OFF_TOPIC = [
    "How do I bake sourdough bread at home?", "What is the capital of Australia?",
    "Explain quantum entanglement simply.", "Best way to learn to juggle three balls?",
    "How tall is Mount Kilimanjaro?", "Who wrote the novel Moby Dick?",
    "What is the boiling point of water on Mars?", "How do octopuses change colour?",
    "Recommend a good chess book for beginners.", "When did the Roman Empire fall?",
    "How many moons does Jupiter have?", "What is a xylophone made of?", "Why is the sky blue?",
    "How do I fix a flat bicycle tyre?", "What are the rules of cricket?", "Translate hello into Swahili.",
    "What does a blockchain miner do?", "How long do tortoises live?",
    "Which planet has the strongest winds?", "What is the plot of Hamlet?",
    "量子纠缠是什么意思？", "怎么在家做酸面包？", "澳大利亚的首都是哪里？", "乞力马扎罗山有多高？",
    "罗马帝国是什么时候灭亡的？", "木星有多少颗卫星？", "为什么天空是蓝色的？", "自行车轮胎漏气怎么补？",
    "章鱼是怎么变色的？", "板球的规则是什么？", "乌龟能活多少年？", "哈姆雷特讲的是什么故事？",
    "区块链矿工是做什么的？", "火星上水的沸点是多少？", "怎么学会抛三个球？",
    "xylophone quartet", "purple elephant dance", "蓝色大象跳舞", "random words banana satellite", "香蕉 卫星 随便",
]
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def load() -> list[dict]:
    return yaml.safe_load((HERE / "paraphrase" / "memories.yaml").read_text(encoding="utf-8"))


def build(root: Path, mems: list[dict], noise: list[str], semantic: object,
          policy: dict | None = None) -> tuple[Repository, dict[str, str]]:
    repo = Repository(root, semantic=semantic, policy=policy)
    ids = {}
    for i, m in enumerate(mems):
        ids[repo.add(m["text"], now=(T0 + dt.timedelta(minutes=i)).isoformat()).id] = m["id"]
    for j, t in enumerate(noise):
        repo.add(t, now=(T0 + dt.timedelta(days=1, seconds=j)).isoformat())
    return repo, ids


class Scores:
    def __init__(self) -> None:
        self.rows: dict[str, list[tuple[int | None]]] = {}

    def add(self, kind: str, rank: int | None) -> None:
        self.rows.setdefault(kind, []).append((rank,))
        if "/" not in kind:
            self.rows.setdefault("all", []).append((rank,))

    def line(self, kind: str) -> str:
        ranks = [r for (r,) in self.rows.get(kind, [])]
        n = len(ranks) or 1
        at = lambda k: sum(1 for r in ranks if r is not None and r <= k) / n  # noqa: E731
        mrr = sum(1 / r for r in ranks if r is not None) / n
        return f"R@1 {at(1):.3f}  R@5 {at(5):.3f}  R@10 {at(10):.3f}  MRR {mrr:.3f}  (n={len(ranks)})"


def rank_of(ranked: list[str], target: str) -> int | None:
    return ranked.index(target) + 1 if target in ranked else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--distractors", type=int, default=distractors.COUNT)
    ap.add_argument("--tmp", help="where to make the temp folder")
    ap.add_argument("--floor", type=float, help="the policy's semantic_floor (default: the policy's own)")
    ap.add_argument("--embedder", metavar="MODULE:NAME",
                    help="a callable that makes the embedder to measure (default: the bundled model)")
    args = ap.parse_args(argv)
    semantic: object = True
    if args.embedder:
        import importlib
        mod, _, name = args.embedder.partition(":")
        semantic = getattr(importlib.import_module(mod), name)()
    mems = load()
    noise = distractors.turns(args.distractors)
    tmp = Path(tempfile.mkdtemp(prefix="sediment-para-", dir=args.tmp))
    try:
        t = time.perf_counter()
        repo, ids = build(tmp / "root", mems, noise, semantic,
                          None if args.floor is None else {"semantic_floor": args.floor})
        built = time.perf_counter() - t
        t = time.perf_counter()
        emb = repo.embed()
        print(f"{len(mems)} memories + {len(noise)} distractors; added in {built:.1f} s, "
              f"embedded {emb['embedded']} in {time.perf_counter() - t:.1f} s "
              f"({emb['embedded'] / max(time.perf_counter() - t, 1e-9):.0f}/s)")
        by_mem = {v: k for k, v in ids.items()}
        sem = repo.semantic
        assert sem is not None
        lexical, dense, fused = Scores(), Scores(), Scores()
        q_ms: list[float] = []
        for m in mems:
            target = by_mem[m["id"]]
            for kind in ("reworded", "cross"):
                q = m[kind]
                repo.semantic = None  # the same root, lexical only
                lex = [h.entry.id for h in repo.search(q, limit=LIMIT, record=False)]
                repo.semantic = sem
                t = time.perf_counter()
                fus = [h.entry.id for h in repo.search(q, limit=LIMIT, record=False)]
                q_ms.append((time.perf_counter() - t) * 1000)
                den = sem.nearest(q, LIMIT)
                for scores, ranked in ((lexical, lex), (dense, den), (fused, fus)):
                    scores.add(kind, rank_of(ranked, target))
                    scores.add(f"{kind}/{m['lang']}", rank_of(ranked, target))
        alarms = 0
        probes = noise[:: max(1, len(noise) // 100)][:100]
        for q in probes:
            top = [h.entry.id for h in repo.search(q, limit=5, record=False)]
            alarms += any(eid in ids for eid in top)
        off = {"lexical": 0, "fused": 0}
        off_hits = {"lexical": 0, "fused": 0}  # how many set memories they bring, in all
        for q in OFF_TOPIC:
            for name, lane in (("lexical", None), ("fused", sem)):
                repo.semantic = lane
                found = sum(h.entry.id in ids for h in repo.search(q, limit=5, record=False))
                off[name] += found > 0
                off_hits[name] += found
        repo.semantic = sem
        print(f"fused search: median {statistics.median(q_ms):.1f} ms a query "
              f"(includes embedding the query)")
        for kind in ("all", "reworded", "cross", "reworded/zh", "reworded/en", "reworded/mixed",
                     "cross/zh", "cross/en", "cross/mixed"):
            print(f"\n{kind}")
            for name, s in (("lexical", lexical), ("dense alone", dense), ("fused", fused)):
                print(f"  {name:<12} {s.line(kind)}")
        print(f"\nfalse alarms: {alarms} of {len(probes)} distractor queries bring a memory of the set "
              f"into the fused top 5")
        print(f"off-topic questions: {off['lexical']} (lexical) and {off['fused']} (fused) of {len(OFF_TOPIC)} "
              f"bring a memory of the set into the top 5 ({off_hits['lexical']} and {off_hits['fused']} "
              f"such memories in all, of {5 * len(OFF_TOPIC)} places)")
        repo.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
