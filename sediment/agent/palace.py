"""The palace map and the graph.

``map()`` writes ``MAP.md`` at the root (the name is policy ``map_file``): the
rooms with their counts and topics, each topic linking its memories as
``[[name|title]]`` wikilinks, so the map is a page to browse in Obsidian;
a room of at most ``LIST_MAX`` memories lists every one of them.
Topics are Chinese nouns (jieba's part-of-speech tags: n, nr, ns, nt, nz…)
and English words, kept by document frequency over the current memories: a
term in more than 20% of them says nothing about a room, one in fewer than 3
is not a topic yet. The file depends only on the memories: the same root
gives the same bytes. A ``MAP.md`` that ``map()`` did not write (a person's
own note of that name) is never replaced.

``graph(format)`` exports links, supersessions, evidence and events as a
Mermaid diagram or JSON; ``graph(format, kind="entities")`` who appears with
whom (``cast``). Neither reads usage nor records a recall. The map ends with
the people the memories name (``cast.section``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import json
import re
import shlex
from collections import Counter
from dataclasses import dataclass, field

from ..model import obsidian as O
from ..search import tokenize as T
from ..model.lexicon import EN_STOP, GENERIC_EN, GENERIC_ZH
from . import cast as C
from .conflicts import created_key
from .conflicts import active as current  # in the map: what search finds by default
from ..model.entry import Entry
from ..model.markup import display_text
from ..model.record import Record
from ..errors import Conflict, InvalidInput, NotFound, ParseError
from ..disk.files import atomic_write, read_nofollow
from ..model.fields import unwrap_link
from ..model.names import LAYERS

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..store.store import Store
    from ..view.view import View

MARKER = "<!-- sediment map: written by map(); it is replaced the next time map() runs -->"
MAX_DF_SHARE = 0.20  # a topic is in at most this share of the memories ...
MIN_DF = 3  # ... and in at least this many
TOPICS_PER_ROOM = 12
LINKS_PER_TOPIC = 20
# a room with at most this many memories lists them all, so the map reaches
# every memory of a small root (where no word is in 3 memories and 20% of them,
# there is no topic at all); a larger room is reached through its topics
LIST_MAX = 20
_NOUN = re.compile(r"^n[rstz]?[a-z]*$|^ng$")  # n, nr, nrt, nrfg, ns, nt, nz, ng — not 'vn'
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9+#-]*[A-Za-z0-9+#]|[A-Za-z]{2}")
FORMATS = ("mermaid", "json")
KINDS = ("memories", "entities")


@dataclass
class Palace(Record):
    """What ``map`` wrote: ``path`` (relative to the root), rooms → memory
    counts, rooms → their topics (term → memory names), rooms small enough
    to list → the names of all their memories."""
    path: str
    rooms: dict[str, int] = field(default_factory=dict)
    topics: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    listed: dict[str, list[str]] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)  # why terms were not topics: counts

    def __str__(self) -> str:
        n = sum(len(t) for t in self.topics.values())
        return f"wrote {self.path}: {len(self.rooms)} room(s), {sum(self.rooms.values())} memories, {n} topic(s)"


class _Terms:
    """Topic terms of one memory: key (how terms are counted) → shown form."""

    def __init__(self, tok: T.Tokenizer) -> None:
        self.tok = tok
        self.stems: dict[str, str | None] = {}
        self.generic = GENERIC_EN | GENERIC_ZH | EN_STOP

    def of(self, e: Entry) -> dict[str, str]:
        # the main text and what the sections say, not their headings (every
        # memory with reasoning would have the topic 'evidence')
        text = display_text("\n".join([e.text, *e.sections.values()]))
        if e.title and not text.lstrip(" #\t\n").startswith(e.title):
            text = e.title + "\n" + text
        out: dict[str, str] = {}
        for word, flag in self.tok.tag(text):
            if len(word) >= 2 and _NOUN.match(flag) and word not in self.generic:
                out.setdefault(word, word)
        for m in _LATIN.finditer(text):
            w = m.group(0).lower()
            if w in self.generic or w.isdigit():
                continue
            stem = self.stems.get(w, "")
            if stem == "":
                got = self.tok.terms(w)[0]
                stem = self.stems[w] = got[0] if len(got) == 1 and got[0] not in self.generic else None
            if stem:  # the stem counts ('deploys', 'deploy'); the shortest form written shows
                if stem not in out or len(w) < len(out[stem]) or (len(w) == len(out[stem]) and w < out[stem]):
                    out[stem] = w
        return out


def _label(e: Entry) -> str:
    """``[[name|title]]``: the title, made safe inside a wikilink."""
    title = re.sub(r"[\[\]|#^]+", " ", " ".join(e.title.split())).strip()
    return f"[[{e.name}|{title}]]" if title and title != e.name else f"[[{e.name}]]"


def build(view: View, cast: C.Cast | None = None) -> tuple[Palace, str]:
    """The map of the view (held by the caller): the result and the text;
    with ``cast``, the "People" section after the rooms."""
    mems = sorted((e for e in view.entries.values() if current(e)), key=lambda e: e.path)
    terms = _Terms(view.tokenizer)
    per: dict[str, dict[str, str]] = {e.id: terms.of(e) for e in mems}
    df: Counter[str] = Counter()
    for found in per.values():
        df.update(found.keys())
    n = len(mems)
    top = MAX_DF_SHARE * n
    keep = {t for t, c in df.items() if MIN_DF <= c <= top}
    palace = Palace("", dropped={"common": sum(1 for c in df.values() if c > top),
                                 "rare": sum(1 for c in df.values() if c < MIN_DF)})
    rooms: dict[str, list[Entry]] = {}
    for e in mems:
        rooms.setdefault(e.room, []).append(e)
    lines = [MARKER, "", "# Memory palace", "",
             f"{n} memories in {len(rooms)} room(s). A topic is a word in at least {MIN_DF} and at most "
             f"{MAX_DF_SHARE:.0%} of them; under each, the memories of the room that have it. A room of at "
             f"most {LIST_MAX} memories lists them all.", ""]
    for room in sorted(rooms):
        members = rooms[room]
        layers = Counter(e.layer for e in members)
        palace.rooms[room] = len(members)
        lines += [f"## {room or '(no room)'} ({len(members)})", "",
                  ", ".join(f"{layer} {layers[layer]}" for layer in LAYERS if layers[layer]), ""]
        having: dict[str, list[Entry]] = {}
        shown: dict[str, Counter[str]] = {}
        for e in members:
            for t, form in per[e.id].items():
                if t in keep:
                    having.setdefault(t, []).append(e)
                    shown.setdefault(t, Counter())[form] += 1
        chosen = sorted(having, key=lambda t: (-len(having[t]), t))[:TOPICS_PER_ROOM]
        palace.topics[room] = {}
        for t in sorted(chosen, key=lambda t: (-len(having[t]), t)):
            form = sorted(shown[t].items(), key=lambda x: (-x[1], x[0]))[0][0]
            es = sorted(having[t], key=lambda e: e.name)
            palace.topics[room][form] = [e.name for e in es]
            links = ", ".join(_label(e) for e in es[:LINKS_PER_TOPIC])
            more = f" and {len(es) - LINKS_PER_TOPIC} more" if len(es) > LINKS_PER_TOPIC else ""
            lines.append(f"- **{form}** ({len(es)}): {links}{more}")
        if len(members) <= LIST_MAX:
            listed = sorted(members, key=lambda e: e.name)
            palace.listed[room] = [e.name for e in listed]
            lines += [*([""] if chosen else []), "Memories:", "", *(f"- {_label(e)}" for e in listed)]
        else:
            reached = {e.id for t in chosen for e in sorted(having[t], key=lambda e: e.name)[:LINKS_PER_TOPIC]}
            if len(members) > len(reached):
                where = f" --room {shlex.quote(room)}" if room else ""
                lines.append(f"- {len(members) - len(reached)} {'more ' if chosen else ''}memories under no "
                             f"topic shown here (`sediment list{where}`)")
        lines.append("")
    if cast is not None:
        lines += C.section(cast, _label)
    return palace, "\n".join(lines).rstrip("\n") + "\n"


def write_map(store: Store) -> Palace:
    rel = store.policy.map_file
    with store.view.reading() as view:
        palace, text = build(view, C.gather(store.policy, view.entries.values()))
    palace.path = rel
    target = store.root / rel
    with store.writing():
        try:
            old = read_nofollow(target)
        except FileNotFoundError:
            old = None
        except OSError as exc:  # a symlink, a folder: not ours to replace
            raise Conflict(f"{rel} cannot be replaced ({exc}); set map_file in policy.yaml", path=rel) from exc
        if old is not None and not old.startswith(MARKER.encode()):
            raise Conflict(f"{rel} exists and map() did not write it (a note of yours?): it is kept; "
                           "set map_file in policy.yaml to another name", path=rel)
        if old != text.encode("utf-8"):
            atomic_write(target, text.encode("utf-8"))
    return palace


# --------------------------------------------------------------------------- graph

def _resolve(view: View, name: str) -> Entry | None:
    try:
        return view.resolve(name)
    except (NotFound, ParseError):
        return None


def edges(view: View) -> tuple[list[Entry], list[tuple[str, str, str]]]:
    """The nodes (every memory but purged ones, by path) and the edges
    (source id, target id, type): link, evidence, supersedes, event."""
    nodes = sorted((e for e in view.entries.values() if e.status != "purged"), key=lambda e: e.path)
    ids = {e.id for e in nodes}
    out: set[tuple[str, str, str]] = set()
    for e in nodes:
        # (parsed as Entry.links parses them, so that the names compare)
        evidence = {O.link_key(x.target) for x in O.wikilinks(O.outside_code(e.sections.get("evidence", "")))}
        for name in e.links:
            t = _resolve(view, name)
            if t is not None and t.id in ids and t.id != e.id:
                out.add((e.id, t.id, "evidence" if name in evidence else "link"))
        for x in O.items(e.meta.get("supersedes")):
            t = _resolve(view, unwrap_link(x))
            if t is not None and t.id in ids:
                out.add((e.id, t.id, "supersedes"))
        for x in O.items(e.meta.get("superseded_by")):
            t = _resolve(view, unwrap_link(x))
            if t is not None and t.id in ids:
                out.add((t.id, e.id, "supersedes"))
    chains: dict[str, list[Entry]] = {}
    for e in nodes:
        if isinstance(e.event, str) and e.event:
            chains.setdefault(e.event, []).append(e)
    for chain in chains.values():
        chain.sort(key=created_key)
        out.update((a.id, b.id, "event") for a, b in zip(chain, chain[1:]))
    return nodes, sorted(out, key=lambda x: (x[2], x[0], x[1]))


_ARROW = {"link": "-->", "evidence": "-.->|evidence|", "supersedes": "==>|supersedes|", "event": "---|event|"}


def _mermaid_text(s: str) -> str:
    s = " ".join(s.split()) or "(untitled)"
    return s.replace("&", "&amp;").replace('"', "#quot;").replace("<", "&lt;").replace(">", "&gt;")


def graph(store: Store, format: str = "mermaid", kind: str = "memories") -> str:
    if format not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}, not {format!r}", what="format")
    if kind not in KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(KINDS)}, not {kind!r}", what="kind")
    with store.view.reading() as view:
        if kind == "entities":
            return C.graph(C.gather(store.policy, view.entries.values()), format)
        nodes, found = edges(view)
    if format == "json":
        return json.dumps({
            "nodes": [{"id": e.id, "name": e.name, "title": e.title, "layer": e.layer, "room": e.room,
                       "kind": e.kind, "status": e.status, "event": e.event} for e in nodes],
            "edges": [{"source": a, "target": b, "type": t} for a, b, t in found],
        }, ensure_ascii=False, indent=2) + "\n"
    node_id = {e.id: f"n{i}" for i, e in enumerate(nodes)}
    lines = ["graph LR"]
    lines += [f'  {node_id[e.id]}["{_mermaid_text(e.title or e.name)}"]' for e in nodes]
    lines += [f"  {node_id[a]} {_ARROW[t]} {node_id[b]}" for a, b, t in found]
    events = sorted({e.event for e in nodes if isinstance(e.event, str) and e.event})
    for i, ev in enumerate(events):
        lines.append(f'  subgraph ev{i}["event: {_mermaid_text(ev)}"]')
        lines += [f"    {node_id[e.id]}" for e in nodes if e.event == ev]
        lines.append("  end")
    return "\n".join(lines) + "\n"
