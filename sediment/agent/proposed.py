"""Names a memory's text holds that its ``entities`` property does not:
proposed (``propose``), written into the property only when asked (``apply``).

DESIGN ("People"): entities found in a note's text are proposals, never
written into a note unless asked. ``propose`` reads (no recall, nothing
written); ``apply`` is the asking: it adds the names chosen (all proposed, by
default) to the property, without a role, through ``writes.update`` (under
the writer lock, journaled, refused as ``Conflict`` when the note changed
since the proposal was made). A person's own note (outside the layer
folders) is never written: its proposals are for the person to copy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from .recognise import recognise
from ..errors import InvalidInput
from ..model import names as N
from ..model import validate as V
from ..model.entry import Entry
from ..model.people import ENTITIES, PERSON_KIND, entities_of, fold
from ..model.record import Record
from ..verbs import people as P
from ..verbs import writes as W

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..store.store import Store
    from ..view.view import View


@dataclass(frozen=True)
class Proposed(Record):
    """A name a memory's text holds and its ``entities`` property does not:
    ``name`` as it would be written there (a known person's canonical name,
    else as the text first writes it), its ``type`` (person, org or place),
    the ``mentions`` as written, and whether it is a ``known`` person."""
    name: str
    type: str
    mentions: tuple[str, ...]
    known: bool

    def __str__(self) -> str:
        said = [m for m in self.mentions if m != self.name]
        return f"{self.name} ({self.type}{', known' if self.known else ''})" + (
            f": written {', '.join(said)}" if said else "")


def _proposals(store: Store, view: View, e: Entry) -> list[Proposed]:
    people, everyone = P.of_view(store.policy, view)
    has = {everyone.canonical(n) for n in entities_of(e.meta.get(ENTITIES))}
    if e.kind == PERSON_KIND:  # a person's note names them on every line
        has.add(everyone.canonical(e.title))
    text = e.body if e.title in e.body else f"{e.title}\n{e.body}"
    found: dict[str, tuple[str, list[str], bool]] = {}
    for m in recognise(text, people):
        name = m.entity or everyone.canonical(m.text)
        if name in has:
            continue
        kind, mentions, known = found.setdefault(name, (m.type, [], m.entity is not None))
        if m.text not in mentions:
            mentions.append(m.text)
    return [Proposed(name, kind, tuple(mentions), known) for name, (kind, mentions, known) in found.items()]


def propose(store: Store, id: str) -> list[Proposed]:
    """The names the memory ``id`` (an id, path or name) holds in its title
    and text that its ``entities`` property does not, in the order the text
    first names them. Reads only."""
    with store.view.reading() as view:
        return _proposals(store, view, view.resolve(id))


def _chosen(proposed: list[Proposed], names: Iterable[str] | None) -> list[Proposed]:
    if names is None:
        return proposed
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise InvalidInput("names: a list of names, not one string", what="names")
    by = {fold(x): p for p in proposed for x in (p.name, *p.mentions)}
    out: list[Proposed] = []
    for n in names:
        p = by.get(fold(n))
        if p is None:
            offered = ", ".join(p.name for p in proposed) or "none"
            raise InvalidInput(f"names: {n!r} is not proposed for this memory (proposed: {offered}); "
                               "update(id, entities=…) writes any name", what="names")
        if p not in out:
            out.append(p)
    return out


def apply(store: Store, id: str, names: Iterable[str] | None = None, *, expected: str | None = None) -> Entry:
    """Add the proposed names (all, or those of ``names``: a proposal's name
    or a mention of it) to the memory's ``entities`` property, without a
    role; the memory as it is then (unchanged when nothing was chosen).
    Raises ``InvalidInput`` for a person's own note, a name not proposed or a
    property that cannot be read as it is (fix it first); ``Conflict`` when
    the note changed since ``expected`` (default: the version the proposals
    were made from)."""
    with store.view.reading() as view:
        e = view.resolve(id)
        N.refuse_persons(e.path)
        chosen = _chosen(_proposals(store, view, e), names)
    if not chosen:
        return e
    value: dict[str, Any] = dict(V.entities(e.meta.get(ENTITIES)) or {})
    for p in chosen:
        value.setdefault(p.name, None)
    return W.update(store, e.id, expected=e.version if expected is None else expected, entities=value)
