"""Who appears with whom: the people (organisations, places) the current
memories name, in which roles, how often, and with whom (Tideline's entity
co-occurrence graph). Read-only.

* ``gather(policy, entries)``: per person (by the name they are filed
  under), the memories naming them and their roles counted; per pair, the
  memories naming both and each one's roles there.
* ``graph(cast, format)``: ``graph(kind="entities")``, as Mermaid or JSON.
* ``section(cast, labels)``: the "People" section of ``MAP.md``.
* ``spellings(cast)``: names of people that may be one person written two
  ways (``patrol`` lists them as resolution candidates).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from typing import Callable, Iterable

from ..model.entry import Entry
from ..model.lifecycle import is_current
from ..model.people import Known, fold
from ..model.policy import Policy
from ..verbs import people as P

PEOPLE_IN_MAP = 50  # people listed in MAP.md, most named first
LINKS_PER_PERSON = 10


@dataclass
class Person:
    name: str
    known: bool
    memories: list[Entry] = field(default_factory=list)
    roles: Counter[str] = field(default_factory=Counter)


@dataclass
class Pair:
    memories: int = 0
    roles: dict[str, Counter[str]] = field(default_factory=dict)


@dataclass
class Cast:
    people: dict[str, Person]
    pairs: dict[tuple[str, str], Pair]
    known: Known


def gather(policy: Policy, entries: Iterable[Entry]) -> Cast:
    """Everyone the current memories among ``entries`` name (see the module's docstring)."""
    current = sorted((e for e in entries if is_current(e)), key=lambda e: e.path)
    known = P.known(policy, current)
    everyone = P.cast(known, current)
    people: dict[str, Person] = {}
    pairs: dict[tuple[str, str], Pair] = {}
    for e in current:
        if e.kind == "person":
            continue  # a person's own note is who they are, not a memory naming them
        named = P.named(e, everyone)
        for who, roles in named.items():
            p = people.setdefault(who, Person(who, known.resolve(who) is not None))
            p.memories.append(e)
            p.roles.update(roles)
        for a, b in combinations(sorted(named), 2):
            pair = pairs.setdefault((a, b), Pair())
            pair.memories += 1
            pair.roles.setdefault(a, Counter()).update(named[a])
            pair.roles.setdefault(b, Counter()).update(named[b])
    return Cast(people, pairs, known)


def _ranked(cast: Cast) -> list[Person]:
    return sorted(cast.people.values(), key=lambda p: (-len(p.memories), p.name))


def _roles_text(roles: Counter[str]) -> str:
    return ", ".join(f"{r} {n}" for r, n in sorted(roles.items(), key=lambda x: (-x[1], x[0])))


def _mermaid_text(s: str) -> str:
    s = " ".join(s.split()) or "(unnamed)"
    return s.replace("&", "&amp;").replace('"', "#quot;").replace("<", "&lt;").replace(">", "&gt;")


def graph(cast: Cast, format: str) -> str:
    """Mermaid (``graph LR``: a node a person, with their roles; an edge a pair,
    labelled with how many memories name both) or JSON (nodes and edges, roles in full)."""
    people = _ranked(cast)
    if format == "json":
        return json.dumps({
            "nodes": [{"name": p.name, "known": p.known, "memories": len(p.memories),
                       "roles": dict(sorted(p.roles.items(), key=lambda x: (-x[1], x[0]))),
                       "ids": [e.id for e in p.memories]} for p in people],
            "edges": [{"source": a, "target": b, "memories": pair.memories,
                       "roles": {who: dict(c) for who, c in pair.roles.items()}}
                      for (a, b), pair in sorted(cast.pairs.items())],
        }, ensure_ascii=False, indent=2) + "\n"
    node = {p.name: f"p{i}" for i, p in enumerate(people)}
    lines = ["graph LR"]
    for p in people:
        roles = _roles_text(p.roles)
        label = f"{p.name} · {len(p.memories)}" + (f" · {roles}" if roles else "")
        lines.append(f'  {node[p.name]}["{_mermaid_text(label)}"]')
    lines += [f"  {node[a]} ---|{pair.memories}| {node[b]}" for (a, b), pair in sorted(cast.pairs.items())]
    return "\n".join(lines) + "\n"


def section(cast: Cast, label: Callable[[Entry], str]) -> list[str]:
    """The lines of ``MAP.md``'s "People" section (none when no memory names anyone)."""
    people = _ranked(cast)
    if not people:
        return []
    lines = ["## People", "",
             f"{len(people)} named in the memories (their `entities`, or a known name in the text); "
             "the most named first, with their roles and who they appear with.", ""]
    for p in people[:PEOPLE_IN_MAP]:
        with_ = Counter({(b if a == p.name else a): pair.memories for (a, b), pair in cast.pairs.items()
                         if p.name in (a, b)})
        roles = _roles_text(p.roles)
        others = ", ".join(f"{w} {n}" for w, n in sorted(with_.items(), key=lambda x: (-x[1], x[0]))[:5])
        es = sorted(p.memories, key=lambda e: e.name)
        links = ", ".join(label(e) for e in es[:LINKS_PER_PERSON])
        more = f" and {len(es) - LINKS_PER_PERSON} more" if len(es) > LINKS_PER_PERSON else ""
        lines.append(f"- **{p.name}** ({len(es)})" + (f"; roles: {roles}" if roles else "")
                     + (f"; with {others}" if others else "") + f": {links}{more}")
    if len(people) > PEOPLE_IN_MAP:
        lines.append(f"- and {len(people) - PEOPLE_IN_MAP} more")
    return [*lines, ""]


def spellings(cast: Cast) -> list[tuple[str, str]]:
    """Pairs of names, each in some memory, that may be one person written two
    ways: the same name but for case, spaces or a middle dot (Zhang San,
    zhangsan, 张 三), or one name a known person's and the other not yet theirs
    but equal to it without spaces. Never two known people (张三 and 张三丰 are
    two people by the list)."""
    def key(name: str) -> str:
        return "".join(ch for ch in fold(name) if ch not in " ·.-_")

    by: dict[str, list[str]] = {}
    for name in sorted(cast.people):
        by.setdefault(key(name), []).append(name)
    out = []
    for names in by.values():
        for a, b in combinations(names, 2):
            if not (cast.known.resolve(a) and cast.known.resolve(b)):
                out.append((a, b))
    return out
