"""Meta-memory: what do I know about X, and how sure am I.

``about(store, topic)`` finds the memories on a topic — current, superseded
and archived alike (what was believed and dropped is part of the answer;
purged ones never) — and tells for each how often it was recalled,
confirmed and refuted, its layer and lifecycle state, what replaced it, and
its pieces of evidence; with a one-paragraph summary of the counts. A topic
that names a known person (by any of their names) also brings the first
lines of their profile (``profile``): who they are, how many memories name
them and in which roles.

Read-only: it is no recall (DESIGN, "What counts as a recall"), and it writes
nothing anywhere, not even the usage log.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ..model import entry as E
from ..search import query as S
from ..search.merged import Weigher, merge, weigher
from ..search.tokenize import Tokenizer
from ..model import obsidian as O
from ..model import validate as V
from .profile import Profile, profile
from ..search.evidence import covering
from .relevance import HITS, StableTiebreak, created_date, escape
from ..model.lifecycle import strength
from ..model.record import Record
from ..model.usage import Usage
from ..model.fields import unwrap_link
from ..verbs import people as P

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..store.store import Store


@dataclass(frozen=True)
class Known(Record):
    """One memory on the topic and what its history says."""
    id: str
    name: str
    title: str
    layer: str
    kind: str
    status: str
    created: str
    superseded_by: tuple[str, ...]
    supersedes: tuple[str, ...]
    recalls: int
    recall_days: int
    confirms: int
    refutes: int
    strength: float
    evidence: tuple[str, ...]
    relevance: float
    root: str | None = None  # the shared root it is from (its label: about_roots); None: the own root


PEOPLE_SHOWN = 3  # known people a topic names whose profile's first lines about gives
PERSON_CHARS = 400  # the most of one person's lines


@dataclass(frozen=True)
class About(Record):
    """``people``: for each known person the topic names, their profile's
    first lines (``person_lines``), before the memories."""
    topic: str
    memories: tuple[Known, ...]
    summary: str
    people: tuple[str, ...] = ()
    _keys = ("topic", "summary", "people", "memories")

    def __str__(self) -> str:
        lines = [self.summary, *self.people]
        for k in self.memories:
            state = k.status + (f" by [[{', '.join(k.superseded_by)}]]" if k.superseded_by else "")
            root = f" ({k.root})" if k.root else ""  # a shared root's memory names it
            lines.append(f"- [[{k.name}]]{root} {k.title!r}: {k.layer}, {k.kind}, {state}; created {k.created}; "
                         f"recalled {k.recalls}×, confirmed {k.confirms}×, refuted {k.refutes}×; "
                         f"strength {k.strength:.2f}; {len(k.evidence)} piece(s) of evidence")
        return "\n".join(lines)


def _evidence(e: E.Entry) -> tuple[str, ...]:
    text = e.sections.get("evidence", "")
    items = [line.strip().lstrip("-*+ ").strip() for line in text.splitlines()]
    return tuple(x for x in items if x)


def about(store: Store, topic: str, *, now: Any = None) -> About:
    V.query(topic)
    when = V.now(now, store.policy.tz)
    tz = store.policy.tz
    usage = store.usage.load()
    with store.view.reading() as view:
        asked = S.ask(view.tokenizer, topic, view.lanes)  # (with the semantic lane, when on)
        hits = S.run(view.index, view.entries, asked, limit=HITS, pred=None,
                     include_archive=True, include_superseded=True,
                     tiebreak=StableTiebreak(view.entries, dict, store.policy.kinds))
        found = []
        cover = covering(view.index, asked.words, asked.bigrams)
        for h in hits:
            rel = cover(h.index_terms)
            if rel < store.policy.context_floor and not S.by_meaning(h.lanes, asked.lanes,
                                                                     view.index.slot_of[h.entry.id]):
                continue
            e = h.entry
            u = usage.get(e.id) or Usage()
            created = created_date(e, tz)
            found.append(Known(
                e.id, e.name, e.title, e.layer, e.kind, "archived" if e.layer == "archive" and e.status == "active"
                else e.status, created,
                tuple(unwrap_link(x) for x in O.items(e.meta.get("superseded_by"))),
                tuple(unwrap_link(x) for x in O.items(e.meta.get("supersedes"))),
                u.recalls, len(u.days), u.confirms, u.refutes,
                round(strength(e, u, store.policy.kinds, when.timestamp()).strength, 4), _evidence(e),
                round(rel, 3)))
        whom = P.named_known(store.policy, view, topic)[:PEOPLE_SHOWN]
    # (each profile holds the view itself, after this hold: a read of its own)
    return About(topic, tuple(found), _summary(topic, found),
                 tuple(person_lines(profile(store, who)) for who in whom))


def person_lines(p: Profile) -> str:
    """A profile's first lines, in one line: the person and their other
    names, the first lines of their note, how many memories name them and
    their roles, and where the rest is (at most ``PERSON_CHARS``)."""
    head = p.name + (f" ({', '.join(p.aliases)})" if p.aliases else "")
    count = sum(len(g) for g in (p.decisions, p.open, p.impressions, p.facts))
    roles = ", ".join(f"{r} {n}" for r, n in p.roles.items())
    named = f"named in {count} memor{'y' if count == 1 else 'ies'}" + (f"; roles: {roles}" if roles else "")
    tail = f"; profile({p.name!r}) has the rest"
    said = " ".join(p.summary.split())

    def line(said: str) -> str:
        return f"Person: {head}" + (f": {said}" if said else "") + f"; {named}{tail}"
    over = len(line(said)) - PERSON_CHARS
    if over > 0:  # the note's lines give way first
        said = said[:len(said) - over - 1].rstrip() + "…" if over + 1 < len(said) else ""
    text = line(said)
    return text if len(text) <= PERSON_CHARS else text[:PERSON_CHARS - 1] + "…"


def _summary(topic: str, found: list[Known]) -> str:
    shown = escape(topic)
    if not found:
        return f"Nothing remembered about {shown!r}."
    states = Counter(k.status for k in found)
    layers = Counter(k.layer for k in found)
    current = [k for k in found if k.status == "active"]
    parts = [f"About {shown!r}: {len(found)} memor{'y' if len(found) == 1 else 'ies'} "
             f"({', '.join(f'{n} {s}' for s, n in sorted(states.items()))}; "
             f"{', '.join(f'{n} in {layer}' for layer, n in sorted(layers.items()))})",
             f"recalled {sum(k.recalls for k in found)} times on {sum(k.recall_days for k in found)} day(s), "
             f"confirmed {sum(k.confirms for k in found)}, refuted {sum(k.refutes for k in found)}",
             f"{sum(len(k.evidence) for k in found)} piece(s) of evidence"]
    text = "; ".join(parts) + "."
    if current:
        best = max(current, key=lambda k: (k.strength, k.id))
        text += f" Strongest current: [[{best.name}]] ({best.strength:.2f})."
    elif found:
        text += " None of it is current."
    return text


def about_roots(store: Store, shared: Mapping[str, Store], topic: str, *, now: Any = None) -> About:
    """``about`` of the own root (``store``) and of each shared root (label →
    store; ``Repository(shared=...)``), the memories ranked together as search
    ranks several roots (``search.merged``: each root's order kept), a shared
    root's naming it (``Known.root``). Reads only, as ``about``."""
    if not shared:
        return about(store, topic, now=now)
    roots: list[tuple[str | None, Store]] = [(None, store), *shared.items()]
    weigh = weigher(topic, [s.view for _, s in roots])
    lists: list[list[Known]] = []
    weights: list[list[float]] = []
    people: tuple[str, ...] = ()
    for label, s in roots:
        got = about(s, topic, now=now)
        found = got.memories
        if label is None:  # (the people a topic names: those this root knows, as its profile reads)
            people = got.people
        lists.append([k if label is None else dataclasses.replace(k, root=label) for k in found])
        with s.view.reading() as view:
            weights.append([_weight(view.entries.get(k.id), view.tokenizer, weigh) for k in found])
    merged = merge(lists, weights)
    return About(topic, tuple(merged), _summary(topic, merged), people)


def _weight(e: E.Entry | None, tok: Tokenizer, weigh: Weigher) -> float:
    """The weight (``search.merged``) of the terms memory ``e`` is indexed with."""
    if e is None:  # (gone since its root answered)
        return 0.0
    terms = S.doc_terms(tok, e)
    return weigh([*terms.words, *terms.bigrams])
