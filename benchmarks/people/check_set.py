"""Check the frozen people set: every label stands on its text, every entity is known.

    python benchmarks/people/check_set.py            # errors, then counts
    python benchmarks/people/check_set.py --review   # also the known names left unlabelled

Reads ``labelled.jsonl`` and ``known.yaml`` beside this file. Errors (the exit
status is 1 when there are any): a line that is not one JSON object of the
documented shape; a name or alias given to two known people; a duplicate or
misnumbered id; a type other than person, org or place; an ``entity`` on a
non-person or naming nobody in ``known.yaml``; a mention that cannot be placed
in its text. Mentions are placed in the order
listed, each after the one before it, so the list must follow the text and a
name written twice is labelled twice; an English mention must not start or end
inside a word (``Tom`` is not found in ``Tomorrow``).

``--review`` lists every place a known name or alias occurs in a text without a
label covering it, and every labelled mention that is exactly a known alias but
resolves to nobody or to someone else. Both are expected for the traps (静静地,
老李明天, "Mark the ticket", the other David); the list is for a person to read,
not an error.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
TYPES = ("person", "org", "place")
KEYS = {"id", "lang", "text", "entities"}
ENTITY_KEYS = {"mention", "type", "entity"}
_WORD = re.compile(r"[A-Za-z0-9]")


def load_known(path: Path) -> dict[str, list[str]]:
    """The ``people:`` mapping of ``known.yaml``: canonical name -> aliases."""
    people = yaml.safe_load(path.read_text(encoding="utf-8"))["people"]
    return {str(name): [str(a) for a in (aliases or [])] for name, aliases in people.items()}


def _bounded(text: str, start: int, end: int) -> bool:
    # Only Latin mentions have word edges; Chinese characters abut their neighbours.
    if _WORD.match(text[start]) and start > 0 and _WORD.match(text[start - 1]):
        return False
    return not (_WORD.match(text[end - 1]) and end < len(text) and _WORD.match(text[end]))


def place(text: str, mention: str, after: int) -> int:
    """Where ``mention`` starts in ``text`` at or after ``after``, word edges kept; -1 if nowhere."""
    start = text.find(mention, after)
    while start >= 0 and not _bounded(text, start, start + len(mention)):
        start = text.find(mention, start + 1)
    return start


def check(rows: list[tuple[int, str]], known: dict[str, list[str]]) -> tuple[list[dict], list[str]]:
    """Parse and check every line; return the records and the errors found."""
    errors: list[str] = []
    records: list[dict] = []
    seen: set[str] = set()
    numbers: Counter[str] = Counter()
    for lineno, line in rows:
        where = f"line {lineno}"
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            errors.append(f"{where}: not JSON ({exc})")
            continue
        if not isinstance(rec, dict) or set(rec) != KEYS:
            errors.append(f"{where}: keys must be exactly {sorted(KEYS)}")
            continue
        rid, lang, text = rec["id"], rec["lang"], rec["text"]
        where = f"line {lineno} ({rid})"
        if lang not in ("zh", "en"):
            errors.append(f"{where}: lang {lang!r}")
            continue
        numbers[lang] += 1
        if rid != f"{lang}-{numbers[lang]:03d}" or rid in seen:
            errors.append(f"{where}: id should be {lang}-{numbers[lang]:03d}")
        seen.add(rid)
        if not isinstance(text, str) or not text.strip() or not isinstance(rec["entities"], list):
            errors.append(f"{where}: text must be a non-empty string and entities a list")
            continue
        after = 0
        spans = []
        for ent in rec["entities"]:
            if not isinstance(ent, dict) or not {"mention", "type"} <= set(ent) <= ENTITY_KEYS:
                errors.append(f"{where}: entity {ent!r} must have mention, type and perhaps entity")
                continue
            mention, kind = ent["mention"], ent["type"]
            if kind not in TYPES:
                errors.append(f"{where}: {mention!r} has type {kind!r}")
            if "entity" in ent and (kind != "person" or ent["entity"] not in known):
                errors.append(f"{where}: {mention!r} resolves to {ent['entity']!r}, not a known person")
            start = place(text, mention, after) if mention and mention == mention.strip() else -1
            if start < 0:
                errors.append(f"{where}: {mention!r} is not in the text after the mention before it")
                continue
            after = start + len(mention)
            spans.append((start, after, ent))
        rec["spans"] = spans
        records.append(rec)
    return records, errors


def review(records: list[dict], known: dict[str, list[str]]) -> list[str]:
    """Known names occurring without a label, and alias mentions not resolved to their owner."""
    owner = {}
    for name, aliases in known.items():
        for alias in [name, *aliases]:
            owner[alias.casefold()] = name
    notes = []
    for rec in records:
        text, spans = rec["text"], rec["spans"]
        folded = text.casefold()
        for alias in sorted(owner, key=len, reverse=True):
            start = place(folded, alias, 0)
            while start >= 0:
                end = start + len(alias)
                if not any(s <= start and end <= e for s, e, _ in spans):
                    notes.append(f"{rec['id']}: {text[start:end]!r} ({owner[alias]}) unlabelled in {text!r}")
                start = place(folded, alias, start + 1)
        for _, _, ent in spans:
            name = owner.get(ent["mention"].casefold())
            if name is not None and ent.get("entity") != name:
                notes.append(f"{rec['id']}: {ent['mention']!r} resolves to {ent.get('entity')!r}, "
                             f"not its alias owner {name!r}, in {text!r}")
    return notes


def main() -> int:
    """Print the errors and the counts; with ``--review``, the notes for a person to read."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--review", action="store_true", help="list unlabelled known names and alias traps")
    args = parser.parse_args()
    known = load_known(HERE / "known.yaml")
    lines = (HERE / "labelled.jsonl").read_text(encoding="utf-8").splitlines()
    records, errors = check([(i, line) for i, line in enumerate(lines, 1) if line.strip()], known)
    owners: dict[str, str] = {}
    for name, aliases in known.items():
        for alias in [name, *aliases]:
            other = owners.setdefault(alias.casefold(), name)
            if other != name:
                errors.append(f"known.yaml: {alias!r} names both {other!r} and {name!r}")
    for error in errors:
        print("error:", error)
    aliases = sum(len(a) for a in known.values())
    print(f"known people: {len(known)} ({aliases} aliases)")
    print(f"{'lang':<6}{'sentences':>10}{'no entity':>11}{'person':>8}{'org':>6}{'place':>7}{'resolved':>10}")
    for lang in ("zh", "en", "all"):
        picked = [r for r in records if lang in ("all", r["lang"])]
        kinds = Counter(e["type"] for r in picked for e in r["entities"])
        empty = sum(1 for r in picked if not r["entities"])
        resolved = sum(1 for r in picked for e in r["entities"] if "entity" in e)
        print(f"{lang:<6}{len(picked):>10}{empty:>11}" + "".join(
            f"{kinds[kind]:>{width}}" for kind, width in zip(TYPES, (8, 6, 7))) + f"{resolved:>10}")
    if records:
        print(f"sentences with no entity: {sum(1 for r in records if not r['entities']) / len(records):.0%}")
    used = {e["entity"] for r in records for e in r["entities"] if "entity" in e}
    unused = sorted(set(known) - used)
    if unused:
        print("known people never mentioned:", ", ".join(unused))
    if args.review:
        for note in review(records, known):
            print("review:", note)
    print("errors:", len(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
