"""The people of a root: who is known (``policy.yaml``'s ``people:`` and the
notes of kind ``person``), whom a memory names (its ``entities`` property
and the known names in its text), the entity filter of ``search`` and
``list``, and what ``check`` says about the lists. Reads only.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Protocol

from ..model.entry import Entry
from ..model.lifecycle import is_current
from ..model.people import fold
from ..model.people import ENTITIES, PERSON_KIND, Known, POLICY, check_entities, entities_of, known_people
from ..model.policy import Policy
from ..model.problem import Problem
from ..errors import InvalidInput
from ..store.system import SYSTEM

Predicate = Callable[[Entry], bool]  # (search.query's, spelled here: this module stays near the model)


def known(policy: Policy, entries: Iterable[Entry]) -> Known:
    """The known people of a root: its policy's list, then its current notes
    of kind ``person`` (a note's title is a name, its ``aliases`` the others)."""
    # (may_hold: a note's frontmatter not yet read is not read for this)
    notes = [(e.id, e.path, e.title, e.aliases) for e in entries
             if e.may_hold(PERSON_KIND) and e.kind == PERSON_KIND and is_current(e)]
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
    spelled = [fold(n) for n in everyone.names(who)]

    def pred(e: Entry) -> bool:
        value = e.meta.get(ENTITIES)
        if value is not None and any(everyone.canonical(n) == who for n in entities_of(value)):
            return True
        # a cheap look for any of their names first: most memories name no one
        text = e.title + "\n" + e.body
        folded = text.casefold()
        if not any(n in folded for n in spelled):
            return False
        return any(w == who for _, _, w in everyone.find(text))
    return pred


# The known people and the cast of each view, kept while its entries are
# unchanged (the view counts their changes): a search does not walk every
# memory to learn that (~1 ms at 100k, a sixth of a search), nor does a
# search with entity= walk them twice. The cast is found when first asked:
# a search asks it only where someone is known (reading every memory's
# ``entities`` was half of a first search's 230 ms at 100k).
@dataclass
class _Kept:
    changes: int
    listed: Any
    known: Known
    everyone: Known | None
    naming: dict[str, frozenset[str]]  # name asked → ids of the memories naming that person


_PEOPLE: "weakref.WeakKeyDictionary[Any, _Kept]" = weakref.WeakKeyDictionary()
NAMES_KEPT = 64  # people whose memories a view keeps (the first asked go first)


class Viewed(Protocol):
    """What this module reads of a view: its entries (a ``view.View``, held by the caller)."""

    @property
    def entries(self) -> Mapping[str, Entry]: ...
    @property
    def changes(self) -> int:
        """How many times ``entries`` changed (an entry added, replaced or removed)."""
        ...


def _kept(policy: Policy, view: Viewed) -> _Kept:
    kept = _PEOPLE.get(view)
    if kept is None or kept.listed != policy.people or kept.changes != view.changes:
        kept = _PEOPLE[view] = _Kept(view.changes, policy.people, known(policy, view.entries.values()), None, {})
    return kept


def _cast(kept: _Kept, view: Viewed) -> Known:
    """The kept cast of a view (its entries unchanged since ``_kept``), found
    the first time. (Two threads may both find it: the same list.)"""
    everyone = kept.everyone
    if everyone is None:
        everyone = kept.everyone = cast(kept.known, view.entries.values())
    return everyone


def known_of(policy: Policy, view: Viewed) -> Known:
    """The known people of a view held by the caller (``of_view`` without the cast)."""
    return _kept(policy, view).known


def of_view(policy: Policy, view: Viewed) -> tuple[Known, Known]:
    """(the known people, the cast) of a view held by the caller."""
    kept = _kept(policy, view)
    return kept.known, _cast(kept, view)


def naming(policy: Policy, view: Viewed, name: str) -> frozenset[str]:
    """The ids of the memories of a view (held by the caller) that name the
    person ``name`` stands for: found once, then kept while the view is unchanged."""
    kept = _kept(policy, view)
    ids = kept.naming.get(name)
    if ids is None:
        pred = entity_filter(_cast(kept, view), name)
        ids = frozenset(i for i, e in view.entries.items() if pred(e))
        if len(kept.naming) >= NAMES_KEPT:
            kept.naming.pop(next(iter(kept.naming)))
        kept.naming[name] = ids
    return ids


def named_known(policy: Policy, view: Viewed, text: str) -> list[str]:
    """The known people ``text`` names, by the names they are filed under, in
    its order: read against everyone the memories name, so that 张三丰
    (known or not) is not 张三."""
    kept = _kept(policy, view)
    if not kept.known.people:  # (no one known: no one to find, and no cast to read)
        return []
    people, everyone = kept.known, _cast(kept, view)
    return list(dict.fromkeys(who for _, _, who in everyone.find(text) if people.resolve(who) == who))


def asked_about(policy: Policy, view: Viewed, query: str) -> Predicate | None:
    """Whether a memory names one of the known people ``query`` names (by
    any of their names), or None when it names no known person: a search
    ranks their memories first among equal matches (``reads.search``)."""
    whom = named_known(policy, view, query)
    if not whom:
        return None
    everyone = of_view(policy, view)[1]
    preds = [entity_filter(everyone, who) for who in whom]
    return lambda e: any(p(e) for p in preds)


def problems(people: Known, entries: Mapping[str, Entry]) -> list[Problem]:
    """What cannot be read of the lists of people: ``policy.yaml``'s
    ``people:``, and a note's ``entities`` property (the note stays a
    memory, its property read as far as it can be: a typo in it does not
    take the note out of search)."""
    said: dict[str, list[str]] = {}
    for where, why in people.faults:  # (one problem a file: check keeps one per path and code)
        said.setdefault(f"{SYSTEM}/{where}" if where == POLICY else where, []).append(why)
    out = [Problem(where, "; ".join(whys), severity="warning", code="people") for where, whys in said.items()]
    for e in entries.values():
        value = e.meta.get(ENTITIES)
        if value is not None and (wrong := check_entities(value)):
            out.append(Problem(e.path, f"entities: {wrong}; read as far as it can be", severity="warning",
                               code="people"))
    return out
