"""What takes the memory of a warm root: RSS after each step, the index's
arrays, the entries and the view's maps, and (``--trace``) live allocations
by the module that made them.

    python benchmarks/memory.py --generate 100000          # a generated root (temp folder), warm
    python benchmarks/memory.py --generate 100000 --keep DIR  # generated once into DIR, then reused
    python benchmarks/memory.py --root DIR [--trace]       # an existing root

Steps, in one process: import; a warm open (with ``--generate`` the root is
opened once first, in another process, to write its cache); a first Chinese
question (rjieba taught only its words: ``search/segdict.py``); 200 searches
(the fixed query set of ``gen.queries``); rjieba's whole dictionary. RSS is
``VmRSS``/``VmHWM`` (Linux). Sizes of Python objects are ``sys.getsizeof``
summed over what each structure holds (an object shared by two is counted in
the first). ``--trace`` runs under tracemalloc (slower, and its own
bookkeeping doubles the RSS); rjieba's dictionary is native memory, seen in
the RSS step only. Generated data only.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)


def rss() -> str:
    try:
        with open("/proc/self/status") as fh:
            got = {ln.split(":")[0]: int(ln.split()[1]) for ln in fh if ln.startswith(("VmRSS", "VmHWM"))}
        return f"RSS {got['VmRSS'] / 1024:.0f} MB (peak {got['VmHWM'] / 1024:.0f} MB)"
    except (OSError, KeyError):
        return "RSS: not on this system"


def deep(o: Any, seen: set[int]) -> int:
    if id(o) in seen:
        return 0
    seen.add(id(o))
    n = sys.getsizeof(o)
    if isinstance(o, dict):
        n += sum(deep(k, seen) + deep(v, seen) for k, v in o.items())
    elif isinstance(o, (list, tuple, set, frozenset)):
        n += sum(deep(x, seen) for x in o)
    elif hasattr(o, "__slots__"):
        n += sum(deep(getattr(o, s), seen) for s in o.__slots__ if hasattr(o, s))
    return n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", help="an existing root")
    ap.add_argument("--generate", type=int, help="generate a root of this many memories")
    ap.add_argument("--keep", help="with --generate: generate into this folder once and reuse it "
                    "(its cache is written by the first run: later runs are warm)")
    ap.add_argument("--trace", action="store_true", help="live allocations by module (tracemalloc)")
    a = ap.parse_args(argv)
    tmp = None
    if a.generate and a.keep and (Path(a.keep) / "queries.json").exists():
        root = Path(a.keep) / "root"
        queries = json.loads((Path(a.keep) / "queries.json").read_text())
        subprocess.run([sys.executable, "-c", f"import sediment; sediment.Repository({str(root)!r}).close()"],
                       check=True)
    elif a.generate:
        tmp = Path(tempfile.mkdtemp(prefix="sediment-memory-")) if not a.keep else None
        where = Path(a.keep) if a.keep else tmp
        assert where is not None
        root = where / "root"
        mems = gen.write_root(root, a.generate, seed=1)
        queries = [q["q"] for q in gen.queries(mems, 200, seed=99)]
        del mems
        subprocess.run([sys.executable, "-c", f"import sediment; sediment.Repository({str(root)!r}).close()"],
                       check=True)
        if a.keep:
            (where / "queries.json").write_text(json.dumps(queries, ensure_ascii=False))
    elif a.root:
        root = Path(a.root)
        queries = ["部署", "deploy", "缓存 redis", "移动端 登录", "用户 数据", "system design", "测试 环境"] * 29
    else:
        ap.error("--root or --generate")
    try:
        if a.trace:
            tracemalloc.start(1)
        import sediment
        from sediment.search import tokenize as T
        print(f"after import: {rss()}")
        repo = sediment.Repository(root)
        print(f"after a warm open of {len(repo):,}: {rss()}")
        T.shared().terms("测试一下")
        print(f"after a first Chinese question (rjieba's words for it only): {rss()}")
        for q in queries[:200]:
            repo.search(q, record=False)
        print(f"after 200 searches: {rss()}")
        T.shared().load()  # (what a process that cuts more text than segdict's budget loads)
        print(f"after rjieba's whole dictionary: {rss()}")
        view, idx = repo.view, repo.view.index
        for name in ("words", "bigrams"):
            lane = getattr(idx, name)
            post = sum(len(x) * x.itemsize for x in (lane.base_slots, lane.base_tfs, lane.base_offsets))
            voc = sys.getsizeof(lane.base_index.blob) + len(lane.base_index.starts or ()) * 4
            print(f"index {name}: {len(lane.base_index):,} terms, {len(lane.base_slots):,} postings: "
                  f"postings {post / 2**20:.1f} MB, vocabulary {voc / 2**20:.1f} MB")
            vec = lane.vec_terms
            if len(vec):
                where = "left in the snapshot file" if type(vec).__name__ == "Stored" else "in memory"
                print(f"  its term vectors: {len(vec):,} ids, {len(vec) * 4 / 2**20:.1f} MB, {where}")
        seen: set[int] = set()
        keys = deep(idx.slot_of, seen) + deep(idx.key_of, seen)
        print(f"index slot_of + key_of: {keys / 2**20:.1f} MB")
        # each of an entry's fields, summed over the entries (what two share: counted once)
        entries = sys.getsizeof(view.entries)
        seen.add(id(view.entries))  # (the lazily built maps hold it too: counted here once)
        fields: dict[str, int] = {}
        for e in view.entries.values():
            seen.add(id(e))
            entries += sys.getsizeof(e)
            for s in dict.fromkeys(x for c in reversed(type(e).__mro__) for x in getattr(c, "__slots__", ())):
                if hasattr(e, s):
                    fields[s] = fields.get(s, 0) + deep(getattr(e, s), seen)
        entries += sum(fields.values())
        print(f"entries: {entries / 2**20:.1f} MB: the Entry objects and the dict "
              f"{(entries - sum(fields.values())) / 2**20:.1f}, "
              + ", ".join(f"{k} {v / 2**20:.1f}" for k, v in sorted(fields.items(), key=lambda x: -x[1])))
        store = root / "_system" / "cache" / "bodies.bin"
        held = sum(1 for e in view.entries.values() if getattr(e, "in_memory", True))
        print(f"bodies in memory: {held:,} of {len(view)}; the body store on disk: "
              f"{store.stat().st_size / 2**20 if store.exists() else 0:.1f} MB")
        for name in ("by_path", "by_name", "file_stats", "problems", "pool"):
            print(f"view.{name}: {deep(getattr(view, name, None), seen) / 2**20:.1f} MB beyond the above")
        if a.trace:
            by: dict[str, int] = {}
            for st in tracemalloc.take_snapshot().statistics("filename"):
                f = st.traceback[0].filename
                key = f.split("site-packages/")[-1] if "site-packages" in f else Path(f).name
                by[key] = by.get(key, 0) + st.size
            print("live allocations by the module that made them (tracemalloc, MB):")
            for k, n in sorted(by.items(), key=lambda x: -x[1])[:12]:
                print(f"  {n / 2**20:7.1f}  {k}")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
