"""Who a note names, and who they are. Pure.

* The ``entities`` property: the people (organisations, places) a note
  names, each with the role(s) they played in it::

      entities:
        张三: 审查
        Alice: [decided, deployed]
        Acme Corp:            # named, no role

  A list of names (``entities: [张三, Alice]``, as Obsidian's list property
  writes it) is read as names without roles. ``check_entities`` says what is
  wrong with a value (a ``check`` warning; the note stays a memory);
  ``entities_of`` reads what it can of any value.
* The known people (``Known``): ``policy.yaml``'s ``people:`` (canonical
  name → other names) and the notes of kind ``person`` (title the name,
  ``aliases`` the other names). A mention resolves to a person only when it
  is the name or one of the other names exactly (Latin letters in any case):
  张三 is never 张三丰, and 张总 is nobody in particular.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

ENTITIES = "entities"
PERSON_KIND = "person"
MAX_NAME_CHARS = 100  # a name longer than this is a sentence, not a name
# what separates several roles written in one text (Tideline's 判断+执行)
_ROLE_SPLIT = re.compile(r"\s*[+,，、;；/]\s*")
_LATIN = re.compile(r"[A-Za-z0-9]")

Entities = dict[str, tuple[str, ...]]


def _name_problem(name: Any) -> str | None:
    if isinstance(name, bool) or not isinstance(name, (str, int, float)):
        return f"a name must be text, not {name!r}"
    s = str(name)
    if not s.strip() or len(s) > MAX_NAME_CHARS or any(c in s for c in "\n\r\x00[]"):
        return f"{s[:40]!r} is not a name (one line, 1-{MAX_NAME_CHARS} characters, no [ ])"
    return None


def _roles(value: Any) -> tuple[str, ...] | None:
    """The roles of one name (None: not roles)."""
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for x in items:
        if isinstance(x, bool) or not isinstance(x, (str, int, float)) or "\x00" in str(x) or "\n" in str(x):
            return None
        out += [r for r in _ROLE_SPLIT.split(str(x).strip()) if r]
    return tuple(dict.fromkeys(out))


def _pairs(value: Any) -> Iterable[tuple[Any, Any]] | None:
    if isinstance(value, Mapping):
        return value.items()
    if isinstance(value, list):
        pairs: list[tuple[Any, Any]] = []
        for x in value:
            if isinstance(x, Mapping) and len(x) == 1:
                pairs += list(x.items())
            else:
                pairs.append((x, None))
        return pairs
    return None


def check_entities(value: Any) -> str | None:
    """Why ``value`` is not an ``entities`` property, or None when it is one."""
    pairs = _pairs(value)
    if pairs is None:
        return "must map names to roles (张三: 审查, Alice: [decided, deployed]) or list names"
    for name, roles in pairs:
        why = _name_problem(name)
        if why:
            return why
        if _roles(roles) is None:
            return f"the roles of {name!r} must be text or a list of text, not {roles!r}"
    return None


def entities_of(value: Any) -> Entities:
    """Name → roles of an ``entities`` property, what can be read of it
    (a name that is not one, or roles that are not text, are left out)."""
    out: Entities = {}
    for name, roles in _pairs(value) or ():
        got = _roles(roles)
        if _name_problem(name) is None and got is not None:
            key = str(name).strip()
            out[key] = tuple(dict.fromkeys(out.get(key, ()) + got))
    return out


# ---------------------------------------------------------------------------
# the known people

def fold(name: str) -> str:
    """A name as it is compared: Latin letters in any case, spaces collapsed."""
    return " ".join(name.split()).casefold()


@dataclass(frozen=True)
class Person:
    """One known person: the name they are filed under, their other names,
    and the ids of their notes of kind ``person``."""
    name: str
    aliases: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass
class Known:
    """The known people, and what could not be read of the lists (``faults``:
    (where, why) for ``check``; where is ``policy.yaml`` or a note's path).
    Build with ``known_people``."""
    people: dict[str, Person] = field(default_factory=dict)
    faults: list[tuple[str, str]] = field(default_factory=list)
    _owner: dict[str, str] = field(default_factory=dict)
    _pattern: re.Pattern[str] | None = None

    def copy(self) -> "Known":
        """Another list of the same people, to add to without changing this one."""
        return Known(dict(self.people), list(self.faults), dict(self._owner))

    def resolve(self, mention: str) -> str | None:
        """The canonical name of the known person ``mention`` names exactly, or None."""
        return self._owner.get(fold(mention)) if isinstance(mention, str) else None

    def canonical(self, mention: str) -> str:
        """``resolve``, else the mention itself (someone not known, by the name written)."""
        return self.resolve(mention) or " ".join(mention.split())

    def names(self, canonical: str) -> tuple[str, ...]:
        """Every name of a known person (canonical first), or just ``canonical``."""
        p = self.people.get(canonical)
        return (canonical, *p.aliases) if p else (canonical,)

    def find(self, text: str) -> list[tuple[int, int, str]]:
        """Known names in ``text``: (start, end, canonical), left to right,
        the longest name winning where names overlap (张三丰, not 张三); a
        Latin name only as a whole word (Tom is not in Tomorrow)."""
        if not self._owner:
            return []
        if self._pattern is None:
            alts = sorted(self._owner, key=len, reverse=True)
            self._pattern = re.compile("|".join(re.escape(a) for a in alts), re.IGNORECASE)
        out: list[tuple[int, int, str]] = []
        pos = 0
        while (m := self._pattern.search(text, pos)) is not None:
            start, end = m.span()
            if _bounded(text, start, end) and not _name_goes_on(text, end):
                out.append((start, end, self._owner[fold(m.group())]))
                pos = end
            else:
                pos = start + 1
        return out

    def add(self, name: str, aliases: Iterable[str], note: str | None = None, where: str = "") -> None:
        """Add a person (merged with one of the same name), or say in ``faults`` why not."""
        name = " ".join(name.split())
        prior = self.people.get(name)
        keep = list(prior.aliases) if prior else []
        for alias in [name, *aliases]:
            alias = " ".join(str(alias).split())
            owner = self._owner.setdefault(fold(alias), name)
            if owner != name:
                self.faults.append((where, f"{alias!r} is a name of both {owner!r} and {name!r}; "
                                           f"it stays {owner!r}'s"))
            elif alias != name and alias not in keep:
                keep.append(alias)
        notes = (prior.notes if prior else ()) + ((note,) if note else ())
        self.people[name] = Person(name, tuple(keep), notes)
        self._pattern = None


# capitalised words that follow a name without being part of it
_NOT_SURNAMES = frozenset("""I Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May
June July August September October November December Today Tomorrow Yesterday And Or But""".split())
_NEXT_WORD = re.compile(r" ([A-Z][a-z]+)\b")


def _name_goes_on(text: str, end: int) -> bool:
    """A Latin name followed by a capitalised word is part of a longer name:
    "Alice" in "Alice Wong" is not the known Alice Chen."""
    if not _LATIN.match(text[end - 1]):
        return False
    m = _NEXT_WORD.match(text, end)
    return m is not None and m.group(1) not in _NOT_SURNAMES


def _bounded(text: str, start: int, end: int) -> bool:
    # Latin names have word edges; Chinese characters abut their neighbours
    if _LATIN.match(text[start]) and start > 0 and _LATIN.match(text[start - 1]):
        return False
    return not (_LATIN.match(text[end - 1]) and end < len(text) and _LATIN.match(text[end]))


POLICY = "policy.yaml"


def known_people(listed: Any, notes: Iterable[tuple[str, str, str, Iterable[str]]] = ()) -> Known:
    """The known people of ``policy.yaml``'s ``people:`` (``listed``: canonical
    name → other names, as the file has it) and of ``notes`` ((id, path,
    title, aliases) of each note of kind ``person``). What cannot be read is
    left out and named in ``Known.faults``; nothing here raises."""
    known = Known()
    if listed is not None and not isinstance(listed, Mapping):
        known.faults.append((POLICY, "people must map names to their other names (张三: [老张, Zhang San])"))
        listed = {}
    for name, aliases in (listed or {}).items():
        why = _name_problem(name)
        if why:
            known.faults.append((POLICY, f"people: {why}"))
            continue
        items = [] if aliases is None else aliases if isinstance(aliases, list) else [aliases]
        good = [str(a) for a in items if _name_problem(a) is None]
        if len(good) < len(items):
            known.faults.append((POLICY, f"people.{name}: other names must be text (张三: [老张, Zhang San]); "
                                         f"left out: {[a for a in items if _name_problem(a)]!r}"[:300]))
        known.add(str(name), good, None, POLICY)
    for nid, path, title, aliases in notes:
        if _name_problem(title) is None:
            known.add(title, [a for a in aliases if _name_problem(a) is None], nid, path)
    return known
