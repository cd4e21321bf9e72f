"""Open time of an Obsidian vault used as a memory root, next to a root of the
library's own memories of the same size and texts (the baseline, same run).

    python benchmarks/bench_vault.py                  # 5,000 notes, 3 runs each
    python benchmarks/bench_vault.py --notes 2000 --runs 1

The vault (``write_vault``, seeded) is written as a person writes one: notes
in nested folders (``Projects/…/``, ``Areas/…``, ``Daily/2024/01``), file
names as titles (one in twenty a name another folder has too), no ids,
Obsidian properties (``aliases``, ``tags`` as a list or as text, ``date``,
``created``, ``description``, ``cssclasses``, ``publish``, ``rating``, now
and then a ``{{date}}`` placeholder), ``[[links]]``, inline ``#tags`` and
Dataview ``key:: value`` lines in the text, a ``.obsidian/`` folder with
``templates.json`` and ``app.json`` (``userIgnoreFilters``), a templates
folder and an excluded folder (neither is indexed). Texts and titles are
``gen.memory``'s, so the baseline root (``gen.write_root``) holds the same
words in the library's own format.

Each open runs in a fresh interpreter (``_probe.py open``): cold (the root's
``_system/cache/`` removed first) and warm (the snapshot of the previous open
present); medians over ``--runs``. Also printed: notes usable / notes present.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen  # noqa: E402  (also puts the repository on sys.path)

FOLDERS = ["Projects/Alpha", "Projects/Beta/Research", "Projects/Gamma/Notes/2024", "Areas/Health",
           "Areas/Cooking", "Areas/Finance/Taxes", "Resources/Books", "Resources/Papers/ML", "Resources",
           "Daily/2024/01", "Daily/2024/02", "People", "Inbox", "Archive/Old projects"]
_UNSAFE = re.compile(r'[\\/:*?"<>|#^\[\]]+')


def _file_name(title: str) -> str:
    return _UNSAFE.sub(" ", title).strip()[:80].strip() or "Untitled"


def write_vault(root: Path, n: int, seed: int = 1) -> int:
    """A vault of ``n`` notes (plus templates and excluded notes, which are
    not indexed); returns how many notes a person's Obsidian shows as notes
    of the vault (``n``)."""
    rng = random.Random(seed)
    (root / ".obsidian").mkdir(parents=True)
    (root / ".obsidian" / "templates.json").write_text(json.dumps({"folder": "Templates"}))
    (root / ".obsidian" / "app.json").write_text(json.dumps({"userIgnoreFilters": ["Private/"]}))
    for d, text in (("Templates", "---\ndate: {{date}}\ntags: [daily]\n---\n# {{title}}\n"),
                    ("Private", "---\ntags: [private]\n---\nNot for the memory.\n")):
        (root / d).mkdir()
        for i in range(5):
            (root / d / f"Page {i}.md").write_text(text)
    titles: list[str] = []
    used: set[str] = set()
    for i in range(n):
        m = gen.memory(i, seed)
        folder = rng.choice(FOLDERS)
        name = _file_name(m.title)
        if titles and rng.random() < 0.05:  # the same name in another folder
            name = rng.choice(titles)
        while f"{folder}/{name}" in used:
            name += f" {i}"
        used.add(f"{folder}/{name}")
        titles.append(name)
        props: list[str] = []
        if rng.random() < 0.3:
            props += ["aliases:", f"  - {json.dumps(m.title[:20], ensure_ascii=False)}"]
        tags = [t.replace(" ", "-") for t in m.tags] + (["area/" + folder.split("/")[0].lower()]
                                                        if rng.random() < 0.5 else [])
        if tags and rng.random() < 0.5:
            props += ["tags:", *(f"  - {json.dumps(t, ensure_ascii=False)}" for t in tags)]
        elif tags:
            props.append("tags: " + ", ".join(tags))
        day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        props.append(f"date: {day}" if rng.random() < 0.6 else f"created: {day}T{rng.randint(0, 23):02d}:15")
        if rng.random() < 0.4:
            props.append(f"description: {json.dumps(m.text[:60], ensure_ascii=False)}")
        if rng.random() < 0.2:
            props += ["cssclasses:", "  - wide"]
        if rng.random() < 0.3:
            props.append(f"publish: {rng.choice(['true', 'false'])}")
        if rng.random() < 0.2:
            props.append(f"rating: {rng.randint(1, 5)}")
        if rng.random() < 0.02:
            props.append("reviewed: {{date}}")
        body = m.text
        if titles[:-1] and rng.random() < 0.6:
            body += f"\n\nSee [[{rng.choice(titles[:-1])}]]"
        if rng.random() < 0.3:
            body += f" #{rng.choice(['idea', 'todo', 'project/alpha', 'read-later'])}"
        if rng.random() < 0.2:
            body += f"\n\nstatus:: {rng.choice(['open', 'done'])}"
        text = ("---\n" + "\n".join(props) + "\n---\n" if props else "") + body + "\n"
        p = root / folder / f"{name}.md"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tmp", help="where the temporary roots go")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="sediment-vault-", dir=a.tmp))
    try:
        cache_home = gen.private_cache_home(tmp)
        vault, base = tmp / "vault", tmp / "memories"
        present = write_vault(vault, a.notes)
        gen.write_root(base, a.notes)
        print(f"# bench_vault: {a.notes} notes, {a.runs} run(s); code {gen.source_fingerprint()}")
        rows, cold_of = [], {}
        for label, root in (("vault (a person's notes)", vault), ("baseline: library memories", base)):
            cold, warm, cold_cpu, warm_cpu, usable = [], [], [], [], 0
            for _ in range(a.runs):
                gen.drop_cache(root)
                r = gen.probe("open", root, cache_home=cache_home)
                cold.append(r["open_s"])
                cold_cpu.append(r["open_cpu_s"])
                r = gen.probe("open", root, cache_home=cache_home)
                warm.append(r["open_s"])
                warm_cpu.append(r["open_cpu_s"])
                usable = r["memories"]
            cold_of[label] = gen.median(cold)
            rows.append([label, f"{usable} / {present}", gen.wc(gen.median(cold), gen.median(cold_cpu)),
                         gen.wc(gen.median(warm), gen.median(warm_cpu))])
        print(gen.table(rows, ["root", "usable / present", "open cold", "open warm"]))
        labels = list(cold_of)
        print(f"cold open, vault / baseline: {gen.ratio(cold_of[labels[0]], cold_of[labels[1]])}")
    finally:
        if a.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
