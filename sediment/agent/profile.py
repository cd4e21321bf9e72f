"""What the memory holds about one person: ``profile(store, name)``.

The person's own note (kind ``person``) if there is one, then every current
memory that names them (their ``entities`` property, or a known name of
theirs in the text), grouped:

* **decisions**: kind ``rule``, a ``conclusion`` section, or a role of theirs
  that decides (decided, approved, 决定, 拍板, 批准 …);
* **open items**: a ``hesitation`` section, an ``unresolved`` weight of 4 or
  5, or a tag ``todo`` / ``open`` / 待办;
* **impressions**: kind ``mood``, an ``emotional`` weight of 4 or 5, or a tag
  ``impression`` / 印象;
* **facts**: the rest.

Each line names its note (``[[name]]``) and their roles in it; the roles are
counted over all of them ("审查 7, 决定 2"). Read-only: no recall is recorded
(DESIGN, "What counts as a recall"), nothing is written.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Any, Mapping

from ..model.entry import Entry
from ..model.lifecycle import is_current
from ..model.people import PERSON_KIND
from ..model.record import Record
from ..store.store import Store
from ..verbs import people as P

GROUPS = ("decisions", "open", "impressions", "facts")
TITLES = {"decisions": "Decisions", "open": "Open items", "impressions": "Impressions", "facts": "Facts"}
_DECIDING = ("decide", "decided", "decides", "approve", "approved", "owner", "决定", "拍板", "批准", "判断", "定了")
_OPEN_TAGS = {"todo", "open", "待办", "未决"}
_IMPRESSION_TAGS = {"impression", "印象", "感受"}


@dataclass(frozen=True)
class Mentioned(Record):
    """One memory that names the person: which, and their roles in it."""
    id: str
    name: str
    title: str
    kind: str
    roles: tuple[str, ...]
    root: str | None = None  # the shared root it is from (its label: profile_roots); None: the own root

    def __str__(self) -> str:
        return (f"- [[{self.name}]]{' (' + self.root + ')' if self.root else ''} {self.title}"
                + (f" ({', '.join(self.roles)})" if self.roles else ""))


@dataclass(frozen=True)
class Profile(Record):
    """A person as the memory knows them. ``note``: the id of their note of kind
    ``person`` (None without one); ``summary``: its first lines."""
    name: str
    aliases: tuple[str, ...]
    known: bool
    note: str | None
    summary: str
    roles: dict[str, int]
    decisions: tuple[Mentioned, ...]
    open: tuple[Mentioned, ...]
    impressions: tuple[Mentioned, ...]
    facts: tuple[Mentioned, ...]

    def __str__(self) -> str:
        head = f"# {self.name}" + (f" ({', '.join(self.aliases)})" if self.aliases else "")
        lines = [head]
        if self.summary:
            lines += ["", self.summary]
        count = sum(len(getattr(self, g)) for g in GROUPS)
        roles = ", ".join(f"{r} {n}" for r, n in self.roles.items())
        lines += ["", f"Named in {count} memor{'y' if count == 1 else 'ies'}" + (f"; roles: {roles}." if roles
                                                                              else ".")]
        for group in GROUPS:
            items = getattr(self, group)
            if items:
                lines += ["", f"## {TITLES[group]}", *(str(m) for m in items)]
        return "\n".join(lines)


def _weight(e: Entry, key: str) -> float:
    w = e.meta.get("weights")
    v = w.get(key) if isinstance(w, dict) else None
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def group_of(e: Entry, roles: tuple[str, ...]) -> str:
    """Which part of a profile a memory naming the person goes in (the module's docstring)."""
    tags = {t.lower() for t in e.tags}
    if e.kind == "rule" or "conclusion" in e.sections or any(r.lower().startswith(_DECIDING) for r in roles):
        return "decisions"
    if "hesitation" in e.sections or _weight(e, "unresolved") >= 4 or tags & _OPEN_TAGS:
        return "open"
    if e.kind == "mood" or _weight(e, "emotional") >= 4 or tags & _IMPRESSION_TAGS:
        return "impressions"
    return "facts"


def _first_lines(e: Entry, n: int = 3) -> str:
    lines = [ln.strip() for ln in e.text.splitlines() if ln.strip() and not ln.startswith("#")]
    return "\n".join(lines[:n])


def profile(store: Store, name: str) -> Profile:
    """The profile of the person ``name`` stands for (any of their names).
    Raises ``InvalidInput`` for no name."""
    with store.view.reading() as view:
        entries = [e for e in view.entries.values() if is_current(e)]
        known = P.known(store.policy, entries)
        everyone = P.cast(known, entries)
        who = everyone.canonical(P.person(known, name))
        named = P.entity_filter(everyone, who)
        person = known.people.get(who)
        notes = [e for e in entries if person and e.id in person.notes]
        groups: dict[str, list[Mentioned]] = {g: [] for g in GROUPS}
        roles: Counter[str] = Counter()
        for e in sorted(entries, key=_newest_first):
            if (e.kind == PERSON_KIND and e in notes) or not named(e):
                continue
            theirs = P.named(e, everyone).get(who, ())
            roles.update(theirs)
            groups[group_of(e, theirs)].append(Mentioned(e.id, e.name, e.title, e.kind, theirs))
    note = notes[0] if notes else None
    return Profile(who, person.aliases if person else (), person is not None, note.id if note else None,
                   _first_lines(note) if note else "", dict(sorted(roles.items(), key=lambda r: (-r[1], r[0]))),
                   *(tuple(groups[g]) for g in GROUPS))


def _newest_first(e: Entry) -> tuple[Any, ...]:
    return (-(e.created_ts or 0.0), e.id)


def profile_roots(store: Store, shared: Mapping[str, Store], name: str) -> Profile:
    """``profile`` of the own root (``store``) and of each shared root (label →
    store; ``Repository(shared=...)``), put together: the person as the first
    root that knows them has them (their note ``label:id`` in a shared root),
    the memories that name them newest first across the roots, each of a
    shared root naming it (``Mentioned.root``), their roles counted over all."""
    if not shared:
        return profile(store, name)
    answers = [(label, s, profile(s, name)) for label, s in [(None, store), *shared.items()]]
    first = next((p for _, _, p in answers if p.known), answers[0][2])
    noted = next(((label, p) for label, _, p in answers if p.note is not None), None)
    roles: Counter[str] = Counter()
    groups: dict[str, list[tuple[tuple[float, int, str], Mentioned]]] = {g: [] for g in GROUPS}
    for order, (label, s, p) in enumerate(answers):
        roles.update(p.roles)
        with s.view.reading() as view:
            for g in GROUPS:
                for m in getattr(p, g):
                    e = view.entries.get(m.id)
                    key = (-(e.created_ts or 0.0) if e is not None else 0.0, order, m.id)
                    groups[g].append((key, m if label is None else dataclasses.replace(m, root=label)))
    note = None if noted is None else noted[1].note if noted[0] is None else f"{noted[0]}:{noted[1].note}"
    return Profile(first.name, first.aliases, first.known, note, noted[1].summary if noted else "",
                   dict(roles.most_common()), *(tuple(m for _, m in sorted(groups[g])) for g in GROUPS))
