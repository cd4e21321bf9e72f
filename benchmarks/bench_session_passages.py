"""Would the semantic lane lift LoCoMo's session level if it read a long memory
passage by passage? An experiment, not the library's lane: issue 12's session
target (R@10 >= 0.93) is missed by the lexical lanes, and the lane as built
embeds only a memory's first ``embedding.EMBED_CHARS`` characters, while a
session is several times longer.

    python benchmarks/bench_session_passages.py --data PATH

Data and protocol as in ``bench_locomo.py``'s session level (where the public
data comes from, and its licence, are in its docstring): one root per
conversation, one memory per session, every question searched lexically
(``record=False``) for its ranking of all sessions. Beside it, a dense score
per session from the bundled encoder (``sediment[semantic]``): every turn line
embedded on its own, centred on the conversation's mean turn (as the lane
centres), and a session scored by its best turn ("max") or the mean of its
best three ("top3"). The two rankings are fused by reciprocal rank,
1/(60 + lexical rank) + w/(60 + dense rank), for several weights w (0: lexical
alone). Prints session R@10 overall and for multi-hop questions.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402
from bench_locomo import CATEGORIES, normalise_evidence, sessions, turn_line  # noqa: E402

from sediment import Repository  # noqa: E402
from sediment.semantic.lane import make_embedder  # noqa: E402

WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)
Row = tuple[int, list[int], dict[str, dict[int, float]], set[int], list[int]]


def rows(data: Path, tmp: Path) -> list[Row]:
    """Per question: category, lexical ranking, dense scores per way, relevant sessions, all sessions."""
    import numpy as np
    embed = make_embedder(True)
    assert embed is not None
    samples = json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    out: list[Row] = []
    for s in samples:
        sess = sessions(s["conversation"])
        turns = [(n, date, t) for n, date, ts in sess for t in ts]
        known = {t["dia_id"] for _, _, t in turns}
        sess_of = {t["dia_id"]: n for n, _, t in turns}
        qas = []
        for qa in s["qa"]:
            ev = normalise_evidence(qa.get("evidence") or [], known) if qa.get("category") in CATEGORIES else []
            if ev:
                qas.append((qa["category"], qa["question"], {sess_of[d] for d in ev}))
        repo = Repository(tmp / s["sample_id"])
        label = {}
        for i, (n, date, ts) in enumerate(sess):
            text = "\n".join(turn_line(date, t) for t in ts)
            label[repo.add(text, title=date or f"session {n}", now=gen.add_time(i)).id] = n
        vecs = np.asarray(embed([turn_line(date, t) for _, date, t in turns]), dtype=np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        vecs -= vecs.mean(axis=0)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        owner = np.array([n for n, _, _ in turns])
        nums = [n for n, _, _ in sess]
        queries = np.asarray(embed([q for _, q, _ in qas]), dtype=np.float32)
        for (cat, q, rel), v in zip(qas, queries):
            lexical = [label[h.entry.id] for h in repo.search(q, limit=50, record=False)]
            sims = vecs @ (v / np.linalg.norm(v))
            ways: dict[str, dict[int, float]] = {"max": {}, "top3": {}}
            for n in nums:
                best = np.sort(sims[owner == n])[::-1]
                ways["max"][n], ways["top3"][n] = float(best[0]), float(best[:3].mean())
            out.append((cat, lexical, ways, rel, nums))
        repo.close()
        print(f"  {s['sample_id']}: {len(sess)} sessions, {len(qas)} questions", flush=True)
    return out


def fused_r10(data: list[Row], way: str, w: float) -> tuple[float, float]:
    """Session R@10 overall and for multi-hop questions."""
    every, multi = [], []
    for cat, lexical, ways, rel, nums in data:
        dense = {n: i for i, n in enumerate(sorted(nums, key=lambda n: -ways[way][n]), 1)}
        lex = {n: i for i, n in enumerate(lexical, 1)}
        score = {n: (1 / (60 + lex[n]) if n in lex else 0.0) + w / (60 + dense[n]) for n in nums if n in lex or w}
        top = sorted(score, key=lambda n: -score[n])[:10]
        r = len(set(top) & rel) / len(rel)
        every.append(r)
        if cat == 1:
            multi.append(r)
    return sum(every) / len(every), sum(multi) / len(multi)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=gen.default_data_dir(),
                    help="the folder holding locomo/locomo10.json (bench_locomo.py says where it comes from)")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="sediment-passages-"))
    try:
        data = rows(args.data, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"\n{len(data)} questions; session R@10 (multi-hop R@10)")
    print("way   " + "".join(f"  w={w:<13}" for w in WEIGHTS))
    for way in ("max", "top3"):
        cells = [fused_r10(data, way, w) for w in WEIGHTS]
        print(f"{way:<6}" + "".join(f"  {a:.4f} ({b:.4f})" for a, b in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
