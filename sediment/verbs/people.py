"""The people of a root: who is known (``policy.yaml``'s ``people:`` and the
notes of kind ``person``), whom a memory names (its ``entities`` property
and the known names in its text), the entity filter of ``search`` and
``list``, and what ``check`` says about the lists. Reads only.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..model.entry import Entry
from ..model.lifecycle import is_current
from ..model.people import ENTITIES, PERSON_KIND, Known, POLICY, check_entities, entities_of, known_people
from ..model.policy import Policy
from ..model.problem import Problem
from ..errors import InvalidInput
from ..search.query import Predicate
from ..store.system import SYSTEM


def known(policy: Policy, entries: Iterable[Entry]) -> Known:
    """The known people of a root: its policy's list, then its current notes
    of kind ``person`` (a note's title is a name, its ``aliases`` the others)."""
    notes = [(e.id, e.path, e.title, e.aliases) for e in entries if e.kind == PERSON_KIND and is_current(e)]
    notes.sort(key=lambda n: n[0])  # (the first to claim a name keeps it, the same on every machine)
    return known_people(policy.people, notes)


def named(e: Entry, people: Known) -> dict[str, tuple[str, ...]]:
    """Whom a memory names, by canonical name → the roles its ``entities``
    property gives them: the property's names first, then the known people
    its title and text name (without a role)."""
    out: dict[str, tuple[str, ...]] = {}
    for name, roles in entities_of(e.meta.get(ENTITIES)).items():
        who = people.canonical(name)
        out[who] = tuple(dict.fromkeys(out.get(who, ()) + roles))
    for text in (e.title, e.body):
        for _, _, who in people.find(text):
            out.setdefault(who, ())
    return out


def person(people: Known, name: str) -> str:
    """The canonical name ``name`` stands for; ``InvalidInput`` for no name."""
    if not isinstance(name, str) or not name.strip() or "\n" in name:
        raise InvalidInput(f"entity: a name, not {name!r}", what="entity")
    return people.canonical(name)


def cast(people: Known, entries: Iterable[Entry]) -> Known:
    """The known people, and everyone else some memory's ``entities`` names
    (by the name written): what a text is read against, so that a name
    inside a longer name is not that name (张三 is not in 张三丰, known or not)."""
    out = Known()
    for p in people.people.values():
        out.add(p.name, p.aliases)
    for e in entries:
        for other in entities_of(e.meta.get(ENTITIES)):
            if out.resolve(other) is None:
                out.add(other, ())
    return out


def entity_filter(everyone: Known, name: str) -> Predicate:
    """Memories that name the person ``name`` stands for (an alias finds the
    person's notes); ``everyone`` is the ``cast`` of the memories asked about."""
    who = person(everyone, name)
    if everyone.resolve(who) is None:  # someone named nowhere else: found by the name as written
        everyone = everyone.copy()
        everyone.add(who, ())
    who = everyone.canonical(who)  # (bob is the Bob some note names)
    return lambda e: who in named(e, everyone)


def problems(people: Known, entries: Mapping[str, Entry]) -> list[Problem]:
    """What cannot be read of the lists of people: ``policy.yaml``'s
    ``people:``, and a person's own note's ``entities`` property (a memory's
    is a problem of the note itself, found when it is read)."""
    said: dict[str, list[str]] = {}
    for where, why in people.faults:  # (one problem a file: check keeps one per path and code)
        said.setdefault(f"{SYSTEM}/{where}" if where == POLICY else where, []).append(why)
    out = [Problem(where, "; ".join(whys), severity="warning", code="people") for where, whys in said.items()]
    for e in entries.values():
        value = e.meta.get(ENTITIES)
        if e.reference and value is not None and (wrong := check_entities(value)):
            out.append(Problem(e.path, f"entities: {wrong}; read as far as it can be", severity="warning",
                               code="people"))
    return out
