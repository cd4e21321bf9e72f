"""The entity recogniser on the frozen people set (issue 29): precision and
recall of people, organisations and places found in a text, and how often a
found person resolves to the right known person.

    python benchmarks/bench_people.py                 # figures per language and type
    python benchmarks/bench_people.py --misses        # and every wrong sentence
    python benchmarks/bench_people.py --set DIR       # another labelled.jsonl + known.yaml
    python benchmarks/bench_people.py --latency 10000 # search with and without entity= at 10k
    python benchmarks/bench_people.py --data PATH     # LoCoMo: is the evidence's speaker the person asked about?

Data: ``benchmarks/people/`` (its README gives the label rules and the
scoring; frozen). Scoring as the README fixes it: each text alone through
``agent.recognise.recognise`` with the set's known people
(``known.yaml``'s ``people:``, read as ``policy.yaml``'s is); per sentence,
the predicted (mention, type) pairs against the labelled ones as multisets;
true positives, predictions and labels summed (micro-averaged), overall, per
language and per type. Resolution: of the person mentions found, the share
whose entity (or none) equals the label's. Type-blind figures (the mention
alone) are printed after, as a diagnosis.

``--data PATH`` (the bench-data folder; LoCoMo's ``locomo/locomo10.json``,
read where it is, as ``bench_locomo.py`` reads it): per question (categories
1–4, evidence normalised as ``bench_locomo`` does), the speakers it names (the
two speakers of its conversation as the known people, found as a search
finds them: ``Known.find``); for a question naming one, whether each evidence
turn's speaker is that person, and whether an entity filter would keep the
turn (its speaker, or their name in the turn's text: the turn as
``bench_locomo`` writes it, ``[date] speaker: text``). Printed: the shares
and the counts, per turn and per question (all its evidence kept), overall
and per category.

``--latency N``: a generated root of N memories (``gen.py``), 1 in 20 of
them also naming one of 20 people in ``entities`` and in the text; the median
time of the same 200 queries through ``search`` without and with
``entity=`` (one of the people, in turn), in the same run, and the ratio;
and the median of each person's first search with ``entity=`` (which finds
the memories naming them, kept after that while the root is unchanged).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from sediment.agent.recognise import TYPES, recognise  # noqa: E402
from sediment.model.people import known_people  # noqa: E402


def score(rows: list[dict], predicted: list[list[tuple[str, str, str | None]]]) -> dict[str, Counter[str]]:
    """Per group ("all", "zh", "en", each type, "zh/person" …): tp, predicted, labelled."""
    out: dict[str, Counter[str]] = {}
    for row, pred in zip(rows, predicted):
        gold = Counter((e["mention"], e["type"]) for e in row["entities"])
        got = Counter((m, t) for m, t, _ in pred)
        hit = gold & got
        for pairs, key in ((gold, "labelled"), (got, "predicted"), (hit, "tp")):
            for (_, kind), n in pairs.items():
                for group in ("all", row["lang"], kind, f"{row['lang']}/{kind}"):
                    out.setdefault(group, Counter())[key] += n
        blind_gold = Counter(e["mention"] for e in row["entities"])
        blind_got = Counter(m for m, _, _ in pred)
        c = out.setdefault("type-blind", Counter())
        c["labelled"] += sum(blind_gold.values())
        c["predicted"] += sum(blind_got.values())
        c["tp"] += sum((blind_gold & blind_got).values())
        # resolution: person mentions found, each label matched once, in order
        wanted = [(e["mention"], e.get("entity")) for e in row["entities"] if e["type"] == "person"]
        for m, t, entity in pred:
            if t != "person":
                continue
            match = next((w for w in wanted if w[0] == m), None)
            if match is not None:
                wanted.remove(match)
                r = out.setdefault("resolution", Counter())
                r["found"] += 1
                r["right"] += entity == match[1]
    return out


def figures(c: Counter[str]) -> str:
    p = c["tp"] / c["predicted"] if c["predicted"] else 0.0
    r = c["tp"] / c["labelled"] if c["labelled"] else 0.0
    return f"P {p:.3f}  R {r:.3f}  (tp {c['tp']}, predicted {c['predicted']}, labelled {c['labelled']})"


def latency(n: int) -> None:
    import tempfile
    import time

    import gen
    from sediment import Repository
    from sediment.model import entry as E
    from sediment.model.fields import build_meta, now_iso

    people = [f"{s}{g}" for s in "张王李赵陈" for g in ("明", "磊", "静", "洋")]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "root"
        mems = gen.write_root(root, n)
        for i in range(n // 20):
            who = people[i % len(people)]
            other = people[(i * 7 + 3) % len(people)]
            meta = build_meta(id=f"P{i:08d}", title=f"{who}审查了第{i}号改动", created=now_iso(), kind="event",
                              tags=(), value=None, source=None, links=(),
                              extra={"entities": {who: "审查", other: "执行"}})
            body = f"{who}审查了第{i}号改动，{other}负责上线。" + mems[i].text[:200] + "\n"
            (root / "shallow" / f"people-{i:06d}.md").write_bytes(E.render(E.Entry(meta=meta, body=body)).encode())
        qs = [q["q"] for q in gen.queries(mems)]
        with Repository(root) as repo:
            for q in qs[:20]:
                repo.search(q, record=False)  # warm
            plain, named = [], []
            for i, q in enumerate(qs):
                t = time.perf_counter()
                repo.search(q, record=False)
                plain.append(time.perf_counter() - t)
                t = time.perf_counter()
                repo.search(q, record=False, entity=people[i % len(people)])
                named.append(time.perf_counter() - t)
    a, b = gen.median(plain), gen.median(named)
    first = gen.median(named[:len(people)])  # each person's first search: their memories are found then kept
    print(f"{n + n // 20} memories, {len(qs)} queries: search median {a * 1000:.2f} ms, "
          f"with entity= {b * 1000:.2f} ms ({gen.ratio(b, a)}); a person's first search with entity= "
          f"{first * 1000:.2f} ms ({gen.ratio(first, a)})")


def share(n: int, of: int) -> str:
    return f"{n / of:.3f} ({n} of {of})" if of else "- (0 of 0)"


def locomo_speakers(data: Path) -> None:
    """The speaker check on LoCoMo (see the module's docstring)."""
    import bench_locomo as L  # (its loading and its evidence rules, the same as the retrieval benchmark's)

    samples = json.loads((data / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    asked: Counter[str] = Counter()
    by_cat: dict[str, Counter[str]] = {}
    for s in samples:
        conv = s["conversation"]
        speakers = known_people({conv["speaker_a"]: [], conv["speaker_b"]: []})
        turns = {t["dia_id"]: (date, t) for _, date, ts in L.sessions(conv) for t in ts}
        for qa in s["qa"]:
            cat = qa.get("category")
            ev = L.normalise_evidence(qa.get("evidence") or [], set(turns)) if cat in L.CATEGORIES else []
            if not ev:
                continue
            named = {who for _, _, who in speakers.find(qa["question"])}
            asked["questions"] += 1
            asked[("none", "one", "both")[len(named)]] += 1
            if len(named) != 1:
                continue
            (who,) = named
            spoken = [turns[d][1]["speaker"] == who for d in ev]
            kept = [sp or who in {w for _, _, w in speakers.find(L.turn_line(*turns[d]))} for d, sp in zip(ev, spoken)]
            for c in (asked, by_cat.setdefault(L.CATEGORIES[cat], Counter())):
                c["one/questions"] += 1
                c["turns"] += len(ev)
                c["turns spoken"] += sum(spoken)
                c["turns kept"] += sum(kept)
                c["questions all spoken"] += all(spoken)
                c["questions all kept"] += all(kept)
                c["questions any kept"] += any(kept)
    n = asked["questions"]
    print(f"LoCoMo: {n} questions with evidence (categories 1-4, {len(samples)} conversations); naming one "
          f"speaker {share(asked['one'], n)}, both {asked['both']}, neither {asked['none']}")
    for label, c in (("all", asked), *sorted(by_cat.items())):
        q = c["one/questions"]
        print(f"  {label:<11} evidence turns spoken by the person named: {share(c['turns spoken'], c['turns'])}; "
              f"kept by entity=: {share(c['turns kept'], c['turns'])}; questions with all evidence kept: "
              f"{share(c['questions all kept'], q)} (all spoken by them {share(c['questions all spoken'], q)}, "
              f"some kept {share(c['questions any kept'], q)})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=HERE / "people", help="folder of labelled.jsonl + known.yaml")
    parser.add_argument("--misses", action="store_true", help="print every sentence with a wrong or missed name")
    parser.add_argument("--latency", type=int, metavar="N", help="time search with and without entity= at N")
    parser.add_argument("--data", type=Path, metavar="PATH",
                        help="the bench-data folder: the LoCoMo speaker check (locomo/locomo10.json)")
    args = parser.parse_args()
    if args.latency:
        latency(args.latency)
        return 0
    if args.data:
        locomo_speakers(args.data)
        return 0
    known = known_people(yaml.safe_load((args.set / "known.yaml").read_text(encoding="utf-8"))["people"])
    rows = [json.loads(line) for line in (args.set / "labelled.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip()]
    predicted = [[(m.text, m.type, m.entity) for m in recognise(row["text"], known)] for row in rows]
    out = score(rows, predicted)
    print(f"{len(rows)} sentences, {len(known.people)} known people")
    for group in ("all", "zh", "en", *TYPES, *(f"{lang}/{t}" for lang in ("zh", "en") for t in TYPES),
                  "type-blind"):
        print(f"{group:<11} {figures(out.get(group, Counter()))}")
    res = out.get("resolution", Counter())
    print(f"resolution  {res['right']}/{res['found']} = {res['right'] / max(res['found'], 1):.3f}")
    if args.misses:
        for row, pred in zip(rows, predicted):
            gold = Counter((e["mention"], e["type"]) for e in row["entities"])
            got = Counter((m, t) for m, t, _ in pred)
            if gold != got:
                print(f"{row['id']} {row['text']}\n    missed {sorted((gold - got).elements())}"
                      f"\n    wrong  {sorted((got - gold).elements())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
