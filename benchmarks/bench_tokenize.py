"""Tokenizer throughput: index terms of generated memories, per second.

    python benchmarks/bench_tokenize.py                # 3,000 generated memories + the zhmem texts
    python benchmarks/bench_tokenize.py --n 10000 --runs 7

What a cold open pays per memory besides reading and parsing it. Texts: the
seeded memories of ``gen.py`` (one third each Chinese, English, mixed) and the
memories of ``zhmem/zhmem.json``. Baseline, same run, same texts: NFKC +
lower-casing + a ``\\w+`` split (the least any tokenizer does). The segmenter is
loaded and warmed before timing. Medians over the runs; compare two checkouts
by the ratio column. CPU time of this process (time.process_time), not wall time: on a
shared machine the wall clock measures the neighbours.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)

from sediment.search import tokenize as T  # noqa: E402


def _floor(text: str) -> int:
    return len(re.findall(r"\w+", unicodedata.normalize("NFKC", text).lower()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=3000, help="generated memories (default 3000)")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args(argv)
    zh = json.loads((Path(__file__).resolve().parent / "zhmem" / "zhmem.json").read_text(encoding="utf-8"))
    sets = {"generated": [m.text for m in gen.memories(a.n)],
            "zhmem": [m["text"] for p in zh["people"] for m in p["memories"]]}
    tok = T.Tokenizer()
    tok.terms("预热 warm up 记忆")
    print(f"sediment bench_tokenize  ({gen.source_fingerprint()}; segmenter {tok.segmenter})")
    rows = []
    for name, texts in sets.items():
        chars = sum(len(t) for t in texts)
        lib, base = [], []
        for _ in range(a.runs):
            t0 = time.process_time()
            for t in texts:
                tok.terms(t)
            lib.append(time.process_time() - t0)
            t0 = time.process_time()
            for t in texts:
                _floor(t)
            base.append(time.process_time() - t0)
        ml, mb = gen.median(lib), gen.median(base)
        rows.append([name, len(texts), f"{1e6 * ml / len(texts):.1f}", f"{chars / ml / 1e6:.2f}",
                     f"{1e6 * mb / len(texts):.1f}", gen.ratio(ml, mb)])
    print(gen.table(rows, ["texts", "n", "µs/text", "Mchar/s", "floor µs/text", "ratio"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
