"""Sources: raw conversations kept beside the memories, under ``sources/`` (the
folder is policy ``sources_folder``), one markdown file per session. Each turn
is a block with an Obsidian block id, so a memory's ``source_links`` can point
at the turn it came from: ``[[session-x#^t12]]``.

A session file, as ``add_source`` writes it::

    ---
    session: session-x
    created: '2026-11-20T14:30:00+08:00'
    ---
    # session-x

    **user** · 2026-11-20T14:30:00+08:00

    > 我们的移动端登录改用 PKCE 吧

    ^t1

Each turn is a quote (so a turn of several paragraphs is one block) followed
by its id on a line of its own, as Obsidian wants for a block that is not a
plain paragraph. A session grows by appending: the bytes already in the file
(a person's edits included) are never rewritten.

Sources are not memories: they are not indexed, searched or decayed, and
``check()`` does not report them as notes outside a layer. ``unlinked_sources``
lists the turns no memory points to yet; ``consolidate_with(llm)`` hands them
to a callable that proposes memories, which are written only through ``add``.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from ..model import names as N
from ..model import validate as V
from ..model.entry import Entry
from ..model.record import Record
from ..errors import InvalidInput, SedimentError
from ..disk.files import atomic_write, read_nofollow
from ..model.fields import SECTIONS, unwrap_link

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..store.store import Store

_HEADER = re.compile(r"^\*\*(?P<role>[^*\n]+)\*\*(?: · (?P<time>\S+))?\s*$")
_BLOCK_ID = re.compile(r"^\^(t\d+)\s*$")
_ROLE = re.compile(r"[\w][\w .-]{0,39}")
_SESSION_REFUSED = set("#^[]|")


@dataclass(frozen=True)
class Turn(Record):
    """One turn of a stored session; ``link`` is the wikilink a memory's
    ``source_links`` uses for it."""
    session: str
    id: str  # t1, t2, …
    role: str
    text: str
    time: str | None = None
    _keys = ("session", "id", "role", "text", "time", "link")

    @property
    def link(self) -> str:
        return f"[[{self.session}#^{self.id}]]"


@dataclass
class Source(Record):
    """A stored session: where it is (relative to the root), every turn in
    it, and how many this call added."""
    session: str
    path: str
    turns: tuple[Turn, ...]
    added: int = 0
    _keys = ("session", "path", "added", "turns")


@dataclass
class Consolidation(Record):
    """What ``consolidate_with`` wrote (``added``) and what it refused, with why."""
    added: list[Entry] = field(default_factory=list)
    skipped: list[tuple[Any, str]] = field(default_factory=list)


def parse(text: str, session: str) -> list[Turn]:
    """The turns of a session file. Lenient: what does not read as a turn
    (a person's notes between turns) is passed over, never an error."""
    lines = text.splitlines()
    turns = []
    i = 0
    while i < len(lines):
        m = _HEADER.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        quote = []
        while j < len(lines) and lines[j].startswith(">"):
            quote.append(lines[j][2:] if lines[j].startswith("> ") else lines[j][1:])
            j += 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        b = _BLOCK_ID.match(lines[j]) if j < len(lines) and quote else None
        if b:
            turns.append(Turn(session, b.group(1), m.group("role").strip(), "\n".join(quote), m.group("time")))
            i = j + 1
        else:
            i += 1
    return turns


def _turn_text(turn: Turn) -> str:
    head = f"**{turn.role}**" + (f" · {turn.time}" if turn.time else "")
    quote = "\n".join("> " + ln if ln.strip() else ">" for ln in turn.text.split("\n"))
    return f"{head}\n\n{quote}\n\n^{turn.id}\n"


def _session(session: Any) -> str:
    if not isinstance(session, str):
        raise InvalidInput("session must be a string", what="session")
    N.check_segment(session, what="session")
    if session.endswith(".md") or _SESSION_REFUSED & set(session) or session != session.strip():
        raise InvalidInput(f"session: {session!r} cannot be a link target (no #, ^, [, ], |, no .md)",
                           what="session")
    return session


def _given(turns: Iterable[Any], when: _dt.datetime, tz: _dt.tzinfo) -> list[tuple[str, str, str]]:
    """(role, text, time) of each turn given: a string (a user's turn), a
    (role, text) pair, or a mapping with text and optional role and time."""
    if isinstance(turns, (str, bytes)) or not isinstance(turns, Iterable):
        raise InvalidInput("turns must be a list of turns", what="turns")
    out = []
    for t in turns:
        text: Any
        role: Any = "user"
        time = when
        if isinstance(t, str):
            text = t
        elif isinstance(t, (tuple, list)) and len(t) == 2:
            role, text = t
        elif isinstance(t, Mapping):
            text, role = t.get("text"), t.get("role", "user")
            if t.get("time") is not None:
                time = V.time(t["time"], key="time", tz=tz)  # (without an offset: the root's timezone)
        else:
            raise InvalidInput(f"a turn is a string, a (role, text) pair or a mapping, not {t!r}", what="turns")
        if not isinstance(text, str) or not text.strip() or "\x00" in text:
            raise InvalidInput("a turn needs text", what="turns")
        if not isinstance(role, str) or not _ROLE.fullmatch(role):
            raise InvalidInput(f"role: {role!r} is not a short name (letters, digits, space, . -)", what="role")
        text = "\n".join(ln.rstrip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").strip("\n").split("\n"))
        out.append((role, text, time.isoformat(timespec="seconds")))
    return out


def _folder(store: Store) -> str:
    return store.policy.sources_folder


def add_source(store: Store, session: str, turns: Iterable[Any], *,
               now: _dt.datetime | str | None = None) -> Source:
    session = _session(session)
    when = V.now(now, store.policy.tz)
    given = _given(turns, when, store.policy.tz)
    rel = f"{_folder(store)}/{session}.md"
    target = store.root / rel
    with store.writing():
        try:
            raw: bytes | None = read_nofollow(target)
        except FileNotFoundError:
            raw = None
        have = parse(raw.decode("utf-8", "replace"), session) if raw is not None else []
        # a retry (or a call repeating the turns already stored) adds nothing:
        # the longest run of given turns that the file already ends with is skipped
        same = [(t.role, t.text) for t in have]
        new = [(r, t) for r, t, _ in given]
        overlap = next((k for k in range(min(len(same), len(new)), 0, -1) if same[-k:] == new[:k]), 0)
        start = max((int(t.id[1:]) for t in have), default=0) + 1
        fresh = [Turn(session, f"t{start + i}", r, t, tm) for i, (r, t, tm) in enumerate(given[overlap:])]
        if fresh:
            if raw is None:
                head = (f"---\nsession: {session}\ncreated: '{when.isoformat(timespec='seconds')}'\n---\n"
                        f"# {session}\n").encode("utf-8")
            else:  # the bytes there stay as they are, whatever a person made of them
                head = raw if raw.endswith(b"\n") else raw + b"\n"
            atomic_write(target, head + "".join("\n" + _turn_text(t) for t in fresh).encode("utf-8"))
    return Source(session, rel, tuple(have + fresh), len(fresh))


def session_files(store: Store) -> list[tuple[str, str]]:
    """(session, path relative to the root) of every session file, by path.
    Links are not followed; hidden names are passed over."""
    base = store.root / _folder(store)
    if base.is_symlink() or not base.is_dir():
        return []
    out = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for f in filenames:
            p = os.path.join(dirpath, f)
            if f.endswith(".md") and not f.startswith(".") and not os.path.islink(p):
                out.append((f[:-3], os.path.relpath(p, store.root).replace(os.sep, "/")))
    return sorted(out, key=lambda x: x[1])


def _pointed_at(store: Store) -> tuple[set[tuple[str, str]], set[str]]:
    """(session, turn id) pairs and whole sessions the memories' source links name."""
    turns, whole = set(), set()
    with store.view.reading() as view:
        links = [x for e in view.entries.values() if e.status != "purged" for x in e.source_links]
    for x in links:
        name, _, part = unwrap_link(x).split("|")[0].partition("#")
        part = part.strip().lstrip("^")
        if part:
            turns.add((name.strip(), part))
        else:
            whole.add(name.strip())
    return turns, whole


def unlinked_sources(store: Store, *, since: Any = None) -> list[Turn]:
    after = V.optional_time(since, key="since", tz=store.policy.tz)
    turns, whole = _pointed_at(store)
    out = []
    for session, rel in session_files(store):
        if session in whole:
            continue
        try:
            text = read_nofollow(store.root / rel).decode("utf-8", "replace")
        except OSError:
            continue  # gone, or unreadable: nothing to list from it
        for t in parse(text, session):
            if (session, t.id) in turns:
                continue
            if after is not None and t.time is not None:
                try:
                    if V.time(t.time, key="time", tz=store.policy.tz) < after:
                        continue
                except InvalidInput:
                    pass  # a time a person mangled: listed rather than lost
            out.append(t)
    return out


# the keyword arguments of add a proposal may carry
PROPOSAL_KEYS = frozenset({"text", "title", "room", "tags", "kind", "value", "links", "event", "turns",
                           *SECTIONS})

LLM = Callable[[list[dict[str, Any]]], Iterable[Mapping[str, Any]]]


def consolidate_with(store: Store, add: Callable[..., Entry], llm: LLM | None = None, *,
                     since: Any = None) -> Consolidation:
    """``add`` is the front door's (``Repository.add``): what this writes goes through it."""
    result = Consolidation()
    by_session: dict[str, list[Turn]] = {}
    for t in unlinked_sources(store, since=since):
        by_session.setdefault(t.session, []).append(t)
    for session in sorted(by_session):
        turns = by_session[session]
        known = {t.id: t for t in turns}
        if llm is None:  # deterministic: each turn becomes an inbox fragment
            proposals: list[Any] = [{"text": t.text, "turns": [t.id]} for t in turns]
        else:
            proposals = list(llm([t.to_dict() for t in turns]) or ())
        for p in proposals:
            if not isinstance(p, Mapping) or not isinstance(p.get("text"), str):
                result.skipped.append((p, "a proposal is a mapping with text"))
                continue
            unknown = sorted(set(p) - PROPOSAL_KEYS)
            if unknown:
                result.skipped.append((p, f"unknown keys: {', '.join(map(str, unknown))}"))
                continue
            ids = p.get("turns") or list(known)
            if isinstance(ids, str) or not all(isinstance(i, str) and i in known for i in ids):
                result.skipped.append((p, f"turns must name turns of {session} given to it"))
                continue
            kwargs = {k: v for k, v in p.items() if k not in ("text", "turns")}
            try:
                e = add(p["text"], source=session,
                        source_links=[known[i].link for i in dict.fromkeys(ids)], **kwargs)
            except SedimentError as exc:
                result.skipped.append((p, str(exc)))
                continue
            result.added.append(e)
    return result
