"""Durable adds as one whole process, for timing two checkouts against each
other (run it under each, alternately, and compare the medians):

    PYTHONPATH=<checkout> python benchmarks/adds.py

200 adds to a fresh root, then 300 timed adds (each fsync'd, journaled and
indexed before it returns). Prints the CPU time per timed add. Generated data
only; nothing from bench-data.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time

from sediment import Repository


def main() -> int:
    root = tempfile.mkdtemp(prefix="sediment-adds-")
    try:
        repo = Repository(root)
        for i in range(200):
            repo.add(f"seed note {i} about deploys and 部署 流程 {i}", title=f"seed {i}", kind="fact")
        t = time.process_time()
        for i in range(300):
            repo.add(f"timed note {i} on caches, 缓存 and redis {i * 7}", title=f"timed {i}", kind="fact",
                     tags=["t"])
        print(f"cpu per add {1000 * (time.process_time() - t) / 300:.3f} ms", file=sys.stderr)
        repo.close()
    finally:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
