"""The patrol report: what a person may want to tidy, written to
``_system/patrol/YYYY-MM-DD.md`` (machine-local, not versioned). It never
changes a memory and records no recall; each item names the memories (ids and
``[[wikilinks]]``) and suggests a command line to run.

Sections: long unrecalled, likely duplicates, shared rare terms without a
link, conflict candidates, same-event chains to reconcile, inbox to
consolidate, unclassified, unresolved links, people named under two
spellings (resolution candidates: ``cast.spellings``).

Every pairwise section draws its pairs from the index's postings of rare
terms (``conflicts.candidate_pairs``), never from all pairs. The text depends
only on the files, the usage records, the policy and ``now``: the same root
and ``now`` give the same bytes.
"""

from __future__ import annotations

import datetime as _dt
import re
import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Mapping

from . import cast as P
from . import conflicts as C
from ..search import tokenize as T
from ..model.lexicon import CJK_RUN
from ..model import validate as V
from .catalog import created_ts
from ..model.entry import Entry
from ..model.policy import Clock
from ..model.record import Record
from ..disk.files import atomic_write
from ..verbs.checks import unresolved_links
from ..model.lifecycle import DAY, _date
from ..model.usage import Usage
from ..store.store import SYSTEM, Store
from ..model.fields import unwrap_link

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..view.view import View


_WORD = re.compile(r"[^\W_]+")

DUPLICATE_SIMILARITY = 0.6  # bigram Dice of the main texts (consolidate retires fragments at 0.55)
DUPLICATE_SHARE = 0.5  # ... compared only for pairs sharing this share of the rarer one's rare terms
INBOX_SIMILARITY = 0.3  # inbox fragments this alike are proposed as one consolidation
RARE_LINK_DF = 3  # "shared rare terms": terms in at most this many memories ...
RARE_LINK_MIN = 2  # ... at least this many of them, and no link either way
MAX_ITEMS = 100  # per section in the file; the counts are always whole

SECTIONS = ("unrecalled", "duplicates", "unlinked", "conflicts", "events", "inbox", "unclassified",
            "unresolved", "spellings")
HEADINGS = {
    "unrecalled": "Long unrecalled",
    "duplicates": "Likely duplicates",
    "unlinked": "Shared rare terms, no link",
    "conflicts": "Conflict candidates",
    "events": "Same-event chains to reconcile",
    "inbox": "Inbox to consolidate",
    "unclassified": "Unclassified",
    "unresolved": "Unresolved links",
    "spellings": "People under two spellings",
}


@dataclass
class Item(Record):
    ids: tuple[str, ...]
    names: tuple[str, ...]
    what: str
    action: str


@dataclass
class Report(Record):
    """What ``patrol`` found; ``path`` is where the report was written
    (relative to the root), None where it could not be."""
    date: str
    now: str
    sections: dict[str, list[Item]] = field(default_factory=dict)
    path: str | None = None
    text: str = ""
    comparisons: int = 0  # candidate pairs drawn from the postings (not all pairs)
    _keys = ("date", "now", "path", "counts", "comparisons", "sections")  # the text is the file's

    @property
    def counts(self) -> dict[str, int]:
        return {k: len(v) for k, v in self.sections.items()}

    def __str__(self) -> str:
        head = f"patrol {self.date}: " + ", ".join(f"{HEADINGS[k].lower()} {n}" for k, n in self.counts.items())
        return head + (f"\nwritten to {self.path}" if self.path else "\n(not written: writes are off here)")


def _q(s: str) -> str:
    return shlex.quote(s)


def _link(e: Entry) -> str:
    return f"[[{e.name}]]"


def _unrecalled(view: View, usage: dict[str, Usage], stale_days: float, now: float,
                tz: _dt.tzinfo) -> list[Item]:
    found = []
    for e in view.entries.values():
        if not C.active(e) or e.kind in ("core", "inbox") or e.layer == "bedrock":
            continue  # core and bedrock never decay; inbox has its own section
        u = usage.get(e.id)
        last = max(created_ts(e), u.last_use if u else 0.0)  # (an unreadable time: 0, as old)
        days = (now - last) / DAY
        if days >= stale_days:
            found.append((last, e))
    found.sort(key=lambda x: (x[0], x[1].id))
    return [Item((e.id,), (e.name,), f"{_link(e)} (`{e.id}`, {e.layer}, {e.kind}): not recalled or confirmed "
                                     f"for {int((now - last) // DAY)} days, since {_date(last, tz)}",
                 f"sediment touch {e.id} confirm  # or: sediment archive {e.id} --reason "
                 + _q(f"not recalled since {_date(last, tz)}"))
            for last, e in found]


class Similarity:
    """How alike two memories' main texts are: the Dice coefficient of their
    bigrams — of characters in CJK runs, of words in Latin text. (Letter
    bigrams, which ``consolidate`` uses for short fragments, make any two
    English paragraphs about 65% alike.) Each memory's bigrams are made once
    per report."""

    def __init__(self) -> None:
        self._grams: dict[str, frozenset[str]] = {}

    def grams(self, e: Entry) -> frozenset[str]:
        got = self._grams.get(e.id)
        if got is None:
            out: set[str] = set()
            for run in CJK_RUN.findall(T.normalize(e.text)):
                out.update(run[i:i + 2] for i in range(len(run) - 1))
                if len(run) == 1:
                    out.add(run)
            words = _WORD.findall(T.normalize(" ".join(CJK_RUN.split(e.text))))
            out.update(f"{a} {b}" for a, b in zip(words, words[1:]))
            if len(words) == 1:
                out.add(words[0])
            got = self._grams[e.id] = frozenset(out)
        return got

    def __call__(self, a: Entry, b: Entry) -> float:
        ga, gb = self.grams(a), self.grams(b)
        return 2 * len(ga & gb) / (len(ga) + len(gb)) if ga and gb else 0.0


def _pair_item(a: Entry, b: Entry, what: str, action: str) -> Item:
    return Item((a.id, b.id), (a.name, b.name), f"{_link(a)} (`{a.id}`) and {_link(b)} (`{b.id}`): {what}", action)


def _linked(a: Entry, b: Entry) -> bool:
    return bool({b.name, b.id} & set(a.links) or {a.name, a.id} & set(b.links))


def _link_action(a: Entry, b: Entry) -> str:
    # `update --link` replaces the frontmatter links: the command lists them all
    links = [*dict.fromkeys(unwrap_link(x) for x in a.meta.get("links") or ()), b.name]
    return f"sediment update {a.id} " + " ".join(f"--link {_q(n)}" for n in links)


def build(store: Store, view: View, when: _dt.datetime) -> Report:
    """The report over the view (held by the caller); nothing is written."""
    tz = store.policy.tz
    now = when.timestamp()
    usage = store.usage.load()
    entries = view.entries
    report = Report(when.astimezone(tz).date().isoformat(), when.isoformat(timespec="seconds"))
    sec = report.sections
    sec["unrecalled"] = _unrecalled(view, usage, store.policy.patrol_stale_days, now, tz)

    # one pass over the postings of rare words serves every pairwise section
    # (the bigram lane would double the work and find the same near-duplicates:
    # two texts that share most of their bigrams share most of their words)
    generic = C.Generic(view.tokenizer)
    words = C.candidate_pairs(view, generic=generic)
    report.comparisons = words.comparisons

    scanned = C.scan(view, pairs=words, generic=generic)
    conflict_keys = {tuple(sorted((c.a, c.b))) for c in scanned.conflicts}
    sec["conflicts"] = [_pair_item(entries[c.a], entries[c.b], f"{c.kind}: {c.clue}",
                                   f"sediment supersede {c.a} {c.b} --reason {c.kind}-conflict"
                                   f"  # or: sediment touch {c.a} refute")
                        for c in scanned.conflicts]

    dups: list[tuple[float, Entry, Entry]] = []
    seen_dup = set()
    similarity = Similarity()
    for key, shared in words.shared.items():  # (the items found are sorted below)
        # near-duplicates share most of their rare terms: a pair that shares
        # few of them is not worth comparing text for
        n = len(shared)
        if n < 2 or n < DUPLICATE_SHARE * min(words.rare[key[0]], words.rare[key[1]]):
            continue
        a, b = (entries[k] for k in key)
        if key in conflict_keys or a.kind == b.kind == "inbox":
            continue  # (a disagreement, or fragments: their own sections say more)
        sim = similarity(a, b)
        if sim >= DUPLICATE_SIMILARITY:
            old, new = C.order(a, b)
            dups.append((sim, old, new))
            seen_dup.add(key)
    dups.sort(key=lambda x: (-round(x[0], 9), x[1].id, x[2].id))
    sec["duplicates"] = [_pair_item(old, new, f"{sim:.0%} alike",
                                    f"sediment supersede {old.id} {new.id} --reason duplicate")
                         for sim, old, new in dups]

    unlinked = []
    df = words.df
    for key, terms in words.shared.items():
        if len(terms) < RARE_LINK_MIN or sum(1 for t in terms if df[t] <= RARE_LINK_DF) < RARE_LINK_MIN:
            continue
        rare = C.distinct(t for t in terms if df[t] <= RARE_LINK_DF)
        if len(rare) < RARE_LINK_MIN or key in seen_dup or key in conflict_keys:
            continue
        a, b = (entries[k] for k in key)
        if (a.event is not None and a.event == b.event) or a.kind == b.kind == "inbox":
            continue  # (listed as an event chain, or as fragments to consolidate)
        if not _linked(a, b):
            old, new = C.order(a, b)
            unlinked.append((-len(rare), old.id, new.id, old, new, rare))
    unlinked.sort(key=lambda x: x[:3])
    sec["unlinked"] = []
    for _, _, _, old, new, rare in unlinked:
        shown = dict.fromkeys(C.as_written(rare[:6], new, old).values())  # as the notes write them
        sec["unlinked"].append(_pair_item(old, new, "share " + ", ".join(shown), _link_action(new, old)))

    sec["events"] = _events(view)
    sec["inbox"] = _inbox(view, words, similarity)
    sec["unclassified"] = _unclassified(view, store.policy.kinds)
    sec["unresolved"] = _unresolved(view)
    sec["spellings"] = _spellings(store, view)
    report.sections = {k: sec[k] for k in SECTIONS}
    report.text = render(report, len(entries))
    return report


def _events(view: View) -> list[Item]:
    chains: dict[str, list[Entry]] = {}
    for e in view.entries.values():
        if C.active(e) and isinstance(e.event, str) and e.event:
            chains.setdefault(e.event, []).append(e)
    out = []
    for event in sorted(chains):
        chain = sorted(chains[event], key=C.created_key)
        if len(chain) < 2:
            continue
        newest = chain[-1]
        links = ", ".join(f"{_link(e)} (`{e.id}`)" for e in chain)
        action = "; ".join(f"sediment supersede {e.id} {newest.id} --reason " + _q(f"same event {event}")
                           for e in chain[:-1])
        out.append(Item(tuple(e.id for e in chain), tuple(e.name for e in chain),
                        f"event `{event}`: {len(chain)} active memories, oldest first: {links}", action))
    return out


def _inbox(view: View, words: C.Pairs, similarity: "Similarity") -> list[Item]:
    frags = {i: e for i, e in view.entries.items() if C.active(e) and e.kind == "inbox"}
    parent = {i: i for i in frags}

    def root(i: str) -> str:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in words.shared:  # (any order: a group's root is its least id)
        if a in frags and b in frags and similarity(frags[a], frags[b]) >= INBOX_SIMILARITY:
            ra, rb = root(a), root(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
    groups: dict[str, list[Entry]] = {}
    for i in sorted(frags):
        groups.setdefault(root(i), []).append(frags[i])
    out = []
    for group in sorted(groups.values(), key=lambda g: (-len(g), g[0].id)):
        links = ", ".join(f"{_link(e)} (`{e.id}`)" for e in group)
        what = (f"{len(group)} alike fragments: {links}" if len(group) > 1 else f"{links}: an inbox fragment")
        action = ("sediment consolidate 'TEXT' --kind fact " + " ".join(f"--fragment {e.id}" for e in group))
        out.append(Item(tuple(e.id for e in group), tuple(e.name for e in group), what, action))
    return out


def _unclassified(view: View, kinds: Mapping[str, Clock | None]) -> list[Item]:
    out = []
    for e in sorted(view.entries.values(), key=lambda e: e.path):
        if not C.active(e):
            continue
        mark = e.meta.get("unclassified")
        if e.kind not in kinds:
            what = f"kind `{e.kind}` is not in the policy's kinds (it decays as inbox)"
            action = f"sediment update {e.id} --kind fact  # or add {e.kind} to kinds in {SYSTEM}/policy.yaml"
        elif isinstance(mark, str):  # a kind was given that the policy does not know
            # (a fragment written with no kind at all is in "inbox to consolidate")
            what = f"written with kind `{mark}`, which the policy does not know, so it is in inbox"
            action = f"sediment update {e.id} --kind fact --unset unclassified"
        else:
            continue
        out.append(Item((e.id,), (e.name,), f"{_link(e)} (`{e.id}`): {what}", action))
    return out


def _unresolved(view: View) -> list[Item]:
    out = []
    for p in unresolved_links(view):
        e = view.entries.get(view.by_path.get(p.path, ""))
        if e is None:
            continue
        name = p.reason.split("]]")[0].lstrip("[")
        where = f"{p.path}:{p.line}" if p.line else p.path
        # the missing name as code, not a link: clicking a link to no note
        # in Obsidian creates that note
        out.append(Item((e.id,), (e.name,), f"{_link(e)} (`{e.id}`): `{name}` names no note ({where})",
                        f"sediment add 'TEXT' --title {_q(name)}  # or fix the link in {where}"))
    out.sort(key=lambda i: (i.names[0], i.what))
    return out


def _spellings(store: Store, view: View) -> list[Item]:
    cast = P.gather(store.policy, view.entries.values())
    out = []
    for a, b in P.spellings(cast):
        es = sorted({e.id: e for e in cast.people[a].memories + cast.people[b].memories}.values(),
                    key=lambda e: e.path)
        keep, other = (b, a) if cast.known.resolve(b) and not cast.known.resolve(a) else (a, b)
        what = (f"`{a}` ({len(cast.people[a].memories)}) and `{b}` ({len(cast.people[b].memories)}) may be one "
                f"person: " + ", ".join(f"{_link(e)} (`{e.id}`)" for e in es[:10]))
        action = f"# if so, in {SYSTEM}/policy.yaml: people: {{{keep}: [{other}]}}"
        out.append(Item(tuple(e.id for e in es), tuple(e.name for e in es), what, action))
    return out


def render(report: Report, n: int) -> str:
    lines = [f"# Patrol {report.date}", "",
             f"Over {n} memories at {report.now}. Nothing was changed: each item suggests a command to run.", ""]
    for key, items in report.sections.items():
        lines += [f"## {HEADINGS[key]} ({len(items)})", ""]
        if not items:
            lines += ["Nothing.", ""]
            continue
        for it in items[:MAX_ITEMS]:
            lines += [f"- {it.what}", f"  - `{it.action}`"]
        if len(items) > MAX_ITEMS:
            lines.append(f"- … {len(items) - MAX_ITEMS} more (`sediment --json patrol` lists them all)")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def patrol(store: Store, *, now: _dt.datetime | str | None = None) -> Report:
    when = V.now(now, store.policy.tz)
    with store.view.reading() as view:
        report = build(store, view, when)
    if store.parts.writes_off or not store.parts.writable("patrol"):
        return report  # read-only media, or a symlinked _system/patrol: check() says so
    rel = f"{SYSTEM}/patrol/{report.date}.md"
    with store.writing():  # (temp files under _system/ are swept under this lock)
        atomic_write(store.root / rel, report.text.encode("utf-8"), durable=False)
    report.path = rel
    return report
