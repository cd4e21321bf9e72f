"""Write the ranking-pattern sets (``p1_*.json`` … ``p5_*.json``, ``off_topic.json``)
from their hand-written sources in ``source/``.

    python benchmarks/patterns/build.py            # rewrites the JSON files
    python benchmarks/patterns/build.py --check    # rebuilds in memory, compares with the files

The sources are what was written by hand: ``base.yaml`` (everyday notes of one
person, the bulk of every memory), one ``pN.yaml`` per pattern (each case: the
question, the notes that answer it, and the pattern's own distractors) and
``off_topic.yaml``. This script only puts each memory together (base notes,
answering notes, distractors), shuffles it with a fixed seed so that the notes
that answer are spread over the memory's eight weeks (add order breaks ties by
recency), numbers the notes, and checks each pattern's promise:

* p1: the term is in every gold note and in no other note; a "latin" case's
  gold note shares no CJK character pair with its question;
* p2: each half has its gold notes;
* p4: no note holds the category word (English: any of its forms, as a word),
  no gold note holds a character pair of it, and no note but the gold holds a
  member of the category;
* p5: each case has a linking fact and an answer;
* every set: ≥ 30 questions, in Chinese and English; unique note texts and ids.

Nothing here looks at what sediment returns: the sets are frozen from the
commit that adds them (see README.md).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "source"
SEED = 20260531
DAYS = 56
PATTERNS = ("p1_unseen_term", "p2_two_questions", "p3_common_word", "p4_category", "p5_linking_fact")
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]+")


def cjk_pairs(text: str) -> set[str]:
    return {run[i:i + 2] for run in _CJK.findall(text) for i in range(len(run) - 1)}


def has_word(text: str, word: str) -> bool:
    """``word`` in ``text``: as a substring for CJK, as a whole word otherwise."""
    if _CJK.search(word):
        return word in text
    return re.search(r"(?<![\w-])" + re.escape(word.lower()) + r"(?![\w-])", text.lower()) is not None


def load(name: str):
    return yaml.safe_load((SOURCE / name).read_text(encoding="utf-8"))


def build_pattern(index: int, name: str, base: dict) -> dict:
    src = load(f"p{index + 1}.yaml")
    assert src["pattern"] == name, (src["pattern"], name)
    notes: dict[str, str] = {}

    def note(key: str, text: str) -> str:
        if key in notes:
            raise ValueError(f"{name}: note id {key} twice")
        notes[key] = text.strip()
        return key

    for lang in ("zh", "en"):
        for i, text in enumerate(base[lang], 1):
            note(f"b-{lang}-{i:03d}", text)
    questions = []
    for case in src["cases"]:
        q = {"id": case["id"], "lang": case["lang"], "q": case["q"].strip()}
        if "gold1" in case:  # p2: a part per half
            part = {}
            for n in (1, 2):
                for key, text in case[f"gold{n}"].items():
                    part[note(key, text)] = n
            q["gold"] = list(part)
            q["part"] = part
            q["halves"] = [h.strip() for h in case["halves"]]
        elif "link" in case:  # p5: the linking fact, then the answer
            link = [note(k, t) for k, t in case["link"].items()]
            q["gold"] = link + [note(k, t) for k, t in case["answer"].items()]
            q["link"] = link
        else:
            q["gold"] = [note(k, t) for k, t in (case.get("gold") or {}).items()]
        for extra in ("kind", "term", "category", "forms", "members"):
            if extra in case:
                q[extra] = case[extra]
        questions.append(q)
    for lang in ("zh", "en"):
        for i, text in enumerate(src["distractors"][lang], 1):
            note(f"d-{lang}-{i:03d}", text)

    order = list(notes)
    random.Random(SEED + index).shuffle(order)
    out_notes = [{"id": k, "text": notes[k], "day": i * DAYS // len(order)} for i, k in enumerate(order)]
    data = {"pattern": name, "about": " ".join(src["about"].split()), "seed": SEED + index,
            "notes": out_notes, "questions": questions}
    check(data)
    return data


def check(data: dict) -> None:
    name = data["pattern"]
    texts = {n["id"]: n["text"] for n in data["notes"]}
    problems = []
    if len(set(texts.values())) != len(texts):
        problems.append("two notes with the same text")
    qids = [q["id"] for q in data["questions"]]
    if len(set(qids)) != len(qids):
        problems.append("two questions with the same id")
    if len(qids) < 30 or {q["lang"] for q in data["questions"]} != {"zh", "en"}:
        problems.append("fewer than 30 questions, or not both languages")
    for q in data["questions"]:
        gold = set(q["gold"])
        others = [t for k, t in texts.items() if k not in gold]
        if not gold and not name.startswith("p3"):
            problems.append(f"{q['id']}: no gold")
        if "term" in q:
            if not all(has_word(texts[g], q["term"]) for g in gold):
                problems.append(f"{q['id']}: term not in the gold note")
            if any(has_word(t, q["term"]) for t in others):
                problems.append(f"{q['id']}: term also in another note")
            if q.get("kind") == "latin" and any(cjk_pairs(q["q"]) & cjk_pairs(texts[g]) for g in gold):
                problems.append(f"{q['id']}: the gold note shares a CJK pair with the question")
        if "category" in q:
            forms = q.get("forms") or [q["category"]]
            if any(has_word(t, f) for t in texts.values() for f in forms):
                problems.append(f"{q['id']}: a note uses the category word")
            if any(cjk_pairs(q["category"]) & cjk_pairs(texts[g]) for g in gold):
                problems.append(f"{q['id']}: the gold note shares a pair with the category word")
            if not all(any(has_word(texts[g], m) for m in q["members"]) for g in gold):
                problems.append(f"{q['id']}: no member in the gold note")
            for m in q["members"]:
                if any(has_word(t, m) for t in others):
                    problems.append(f"{q['id']}: member {m!r} also in another note")
        if "part" in q and (sorted(set(q["part"].values())) != [1, 2] or len(q["halves"]) != 2):
            problems.append(f"{q['id']}: not two halves, each with its gold")
        if "link" in q and not (q["link"] and set(q["link"]) < gold):
            problems.append(f"{q['id']}: no link, or no answer beside it")
    if problems:
        raise SystemExit(f"{name}:\n  " + "\n  ".join(problems))


def build_off_topic() -> dict:
    src = load("off_topic.yaml")
    qs = [{"id": f"ot-{lang}-{i:03d}", "lang": lang, "q": q.strip()}
          for lang in ("en", "zh") for i, q in enumerate(src[lang], 1)]
    if len({q["q"] for q in qs}) != len(qs) or len(qs) < 100:
        raise SystemExit("off_topic: fewer than 100 questions, or one twice")
    return {"about": "General-knowledge questions no personal conversation answers.", "questions": qs}


def dumps(data: dict) -> str:
    """JSON with one note or question per line (reviewable diffs)."""
    lines = ["{"]
    keys = list(data)
    for i, k in enumerate(keys):
        end = "," if i < len(keys) - 1 else ""
        v = data[k]
        if isinstance(v, list):
            lines.append(f"  {json.dumps(k)}: [")
            lines += [f"    {json.dumps(x, ensure_ascii=False)}" + ("," if j < len(v) - 1 else "")
                      for j, x in enumerate(v)]
            lines.append(f"  ]{end}")
        else:
            lines.append(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}{end}")
    return "\n".join(lines) + "\n}\n"


def outputs() -> dict[Path, str]:
    base = load("base.yaml")
    out = {HERE / f"{name}.json": dumps(build_pattern(i, name, base)) for i, name in enumerate(PATTERNS)}
    out[HERE / "off_topic.json"] = dumps(build_off_topic())
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="compare the files with a rebuild; write nothing")
    a = ap.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        if a.check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
        else:
            path.write_text(text, encoding="utf-8")
    for path in sorted(HERE.glob("*.json")):
        d = json.loads(path.read_text(encoding="utf-8"))
        n_q = len(d["questions"])
        langs = {lang: sum(q["lang"] == lang for q in d["questions"]) for lang in ("zh", "en")}
        print(f"{path.name}: {len(d.get('notes', []))} notes, {n_q} questions ({langs['zh']} zh, {langs['en']} en)")
    if stale:
        print("differs from a rebuild: " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
