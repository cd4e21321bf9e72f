"""Export and import: how long ``export`` and an applied ``import_`` take with
10,000 notes, beside copying the same files.

    python benchmarks/bench_exchange.py               # 10,000 notes, 3 runs
    python benchmarks/bench_exchange.py --quick       # 1,000 notes, 1 run

No public data: the notes are generated (``gen.py``, seeded), with usage
(recalls of one note in seven). Timed, each a median of ``--runs``:

* **export**: ``export(FILE)`` of the open root (JSON Lines: every file read,
  its fields and usage), beside the baseline of reading every note's bytes
  and writing them to one file;
* **import**: ``import_(FILE, dry_run=False)`` into a fresh empty root (open
  not timed), beside the baseline of copying the notes' files into a fresh
  folder (``shutil.copy2`` each, then one fsync each: what the import's
  atomic, durable writes cost at the least);
* **dry run**: ``import_(FILE)`` into a fresh empty root (nothing written).

Then the round trip is checked: the imported root's files are the exported
root's, byte for byte.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import gen  # noqa: E402  (also puts the repository on sys.path)

from sediment import Repository  # noqa: E402


def notes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))
            if not p.relative_to(root).as_posix().startswith("_system/")}


def copy_notes(src: Path, dst: Path, rels: list[str]) -> None:
    for rel in rels:
        (dst / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / rel, dst / rel)
        fd = os.open(dst / rel, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_all(src: Path, rels: list[str], out: Path) -> None:
    with open(out, "wb") as fh:
        for rel in rels:
            fh.write((src / rel).read_bytes())
        fh.flush()
        os.fsync(fh.fileno())


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def one_run(repo: Repository, tmp: Path, rels: list[str]) -> dict[str, float]:
    """One run's times, into folders of its own under ``tmp``."""
    tmp.mkdir()
    out = {"export": timed(lambda: repo.export(tmp / "e.jsonl")),
           "read+write": timed(lambda: read_all(repo.root, rels, tmp / "raw"))}
    with Repository(tmp / "dst") as dst, Repository(tmp / "dry") as dry:
        out["import"] = timed(lambda: dst.import_(tmp / "e.jsonl", dry_run=False))
        out["dry run"] = timed(lambda: dry.import_(tmp / "e.jsonl"))
        out["copy"] = timed(lambda: copy_notes(repo.root, tmp / "copy", rels))
        assert notes(dst.root) == notes(repo.root), "the round trip changed a file"
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="1,000 notes, 1 run")
    a = ap.parse_args()
    n, runs = (1000, 1) if a.quick else (a.notes, a.runs)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        gen.write_root(tmp / "src", n)
        repo = Repository(tmp / "src")
        repo.usage.record(sorted(repo.view.entries)[::7], "recall", now=1790000000.0)
        rels = sorted(notes(repo.root))
        rows = [one_run(repo, tmp / f"run{i}", rels) for i in range(runs)]
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(f"{n} notes, median of {runs} run(s), load {os.getloadavg()[0]:.1f}")
        ratio = med["export"] / med["read+write"]
        print(f"export   {med['export']:7.2f} s  {n / med['export']:7.0f} notes/s  x{ratio:.1f}"
              f" of reading every note into one file ({med['read+write']:.2f} s)")
        ratio = med["import"] / med["copy"]
        print(f"import   {med['import']:7.2f} s  {n / med['import']:7.0f} notes/s  x{ratio:.1f}"
              f" of copying the files, fsync'd ({med['copy']:.2f} s)")
        print(f"dry run  {med['dry run']:7.2f} s  {n / med['dry run']:7.0f} notes/s")
        print("round trip: the same files, byte for byte")


if __name__ == "__main__":
    main()
