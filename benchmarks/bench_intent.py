"""Working memory's intent recognition on the frozen intent set (issue 26
items 4 and 5): which sentences open a todo or say something is done, and
which "done" closes which open item.

    python benchmarks/bench_intent.py                  # figures per language and overall
    python benchmarks/bench_intent.py --misses         # and every wrong sentence and pair
    python benchmarks/bench_intent.py --set DIR        # another labelled.jsonl + pairs.jsonl

Data: ``benchmarks/intent/`` (its README gives the label rules; frozen).

Sentences: each text is given whole to ``intent.is_todo`` and
``intent.is_done``; a text predicted both is wrong for both (it counts as a
false todo and a false done, and as a miss of its own label). Recall and
precision of todo and done, and the confusion counts (label × prediction).
The same again for ``intent.recognise`` over the text as a message (todo if
it finds a todo in it, done if a done).

Pairs: each in a fresh root through the public API: ``observe(todo)``, an
hour later ``observe(done)``; the pair "closes" when the item the todo opened
is among what the second call closed and is gone from ``working()``. A todo
that opens nothing closes nothing: "todo opened" and "done recognised" say
how many pairs reached the matching at all.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from sediment import Repository  # noqa: E402
from sediment.agent import intent  # noqa: E402

LABELS = ("todo", "done", "neither")
PREDICTIONS = ("todo", "done", "both", "neither")
T0 = dt.datetime(2026, 3, 2, 9, 0, tzinfo=dt.timezone.utc)


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def predict(todo: bool, done: bool) -> str:
    return "both" if todo and done else "todo" if todo else "done" if done else "neither"


def by_functions(text: str) -> str:
    return predict(intent.is_todo(text), intent.is_done(text))


def by_recognise(text: str) -> str:
    found = {what for what, _ in intent.recognise(text)}
    return predict("todo" in found, "done" in found)


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f} ({a}/{b})" if b else "-"


def report_sentences(rows: list[dict], predicted: list[str], title: str) -> None:
    print(f"\n## {title}")
    for lang in ("zh", "en", None):
        pairs = [(r["label"], p) for r, p in zip(rows, predicted) if lang is None or r["lang"] == lang]
        counts = Counter(pairs)
        print(f"\n{lang or 'all'} ({len(pairs)} sentences)")
        for what in ("todo", "done"):
            hit = counts[(what, what)]
            labelled = sum(n for (label, _), n in counts.items() if label == what)
            claimed = sum(n for (_, p), n in counts.items() if p in (what, "both"))
            print(f"  {what:5} recall {ratio(hit, labelled):18} precision {ratio(hit, claimed)}")
        print("  label \\ predicted " + " ".join(f"{p:>8}" for p in PREDICTIONS))
        for label in LABELS:
            print(f"  {label:18}" + " ".join(f"{counts[(label, p)]:8d}" for p in PREDICTIONS))


def closes(todo: str, done: str) -> tuple[bool, bool]:
    """(did the todo open an item, did the done close it), in a fresh root."""
    with tempfile.TemporaryDirectory() as root:
        repo = Repository(root)
        opened = repo.observe(todo, now=T0).opened
        if not opened:
            return False, False
        after = repo.observe(done, now=T0 + dt.timedelta(hours=1))
        left = {i.text for i in repo.working(now=T0 + dt.timedelta(hours=1)).items}
        item = opened[0].text
        return True, any(i.text == item for i in after.closed) and item not in left


def report_pairs(pairs: list[dict], misses: bool) -> None:
    print("\n## pairs: does the done close the todo's item (Repository.observe / working)")
    results = [(p, *closes(p["todo"], p["done"])) for p in pairs]
    for lang in ("zh", "en", None):
        mine = [(p, o, c) for p, o, c in results if lang is None or p["lang"] == lang]
        tp = sum(c and p["closes"] for p, _, c in mine)
        fp = sum(c and not p["closes"] for p, _, c in mine)
        right = sum(c == p["closes"] for p, _, c in mine)
        said = sum(intent.is_done(p["done"]) for p, _, _ in mine)
        print(f"\n{lang or 'all'} ({len(mine)} pairs; todo opened {sum(o for _, o, _ in mine)}/{len(mine)},"
              f" done recognised by is_done {said}/{len(mine)})")
        print(f"  accuracy {ratio(right, len(mine))}  precision {ratio(tp, tp + fp)}"
              f"  recall {ratio(tp, sum(p['closes'] for p, _, _ in mine))}")
    if misses:
        print("\nwrong pairs (expected, got; todo opened?):")
        for p, o, c in results:
            if c != p["closes"]:
                print(f"  {p['id']} closes={p['closes']} got={c} opened={o}: {p['todo']!r} -> {p['done']!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", type=Path, default=HERE / "intent", help="folder with labelled.jsonl and pairs.jsonl")
    ap.add_argument("--misses", action="store_true", help="print every wrong sentence and pair")
    args = ap.parse_args()
    rows = read(args.set / "labelled.jsonl")
    predicted = [by_functions(r["text"]) for r in rows]
    report_sentences(rows, predicted, "sentences: is_todo / is_done on each text")
    report_sentences(rows, [by_recognise(r["text"]) for r in rows], "sentences: recognise on each text")
    if args.misses:
        print("\nwrong sentences (is_todo / is_done): id label -> predicted [note] text")
        for r, p in zip(rows, predicted):
            if p != r["label"]:
                print(f"  {r['id']} {r['label']} -> {p} [{r.get('note', '')}] {r['text']}")
    report_pairs(read(args.set / "pairs.jsonl"), args.misses)


if __name__ == "__main__":
    main()
