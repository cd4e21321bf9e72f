"""The verbs that read: get, list, search, links_to, stats, locate, markdown,
report, and ``recalled``, which counts what an agent was shown. Each holds the
view for the whole call (``View.reading``) and never writes a memory file; a
search records its recalls outside the notes, in the usage log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from ..search import query as S
from ..model import validate as V
from ..model.entry import Entry
from ..model.lifecycle import is_current
from ..errors import Ambiguous, InvalidInput, NotFound, ParseError, StorageError
from ..disk.files import read_nofollow, resolve_inside, symlink_in
from ..search.index import LANE_DEPTH
from ..search.query import SearchHit
from ..store.system import SYSTEM
from . import people as P

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..store.store import Store
    from ..view.view import View

SORTS = ("path", "updated", "created")


def get(store: Store, id: str) -> Entry:
    with store.view.reading() as view:
        return view.resolve(id)


def knows(store: Store, id: object) -> bool:
    """Whether ``id`` (an id, path or name) names a memory (``id in repo``)."""
    with store.view.reading() as view:
        return view.knows(id)


def count(store: Store) -> int:
    """How many memories there are (``len(repo)``): as many as iterating
    gives, so purged (and erased) memories, listed only when asked for by
    status, are not counted."""
    with store.view.reading() as view:
        # (the index's flags: a count read every note's status, and a warm
        # open of 100k had parsed none of their frontmatter)
        return view.index.count(S.PURGED)


def _filter(store: Store, *, layer: Any, room: Any, tags: Any, kind: Any, status: Any = None,
            since: Any = None, until: Any = None) -> S.Predicate | None:
    """The predicate of the filters given (each checked), or None for none."""
    if all(x is None or x in ((), []) for x in (layer, room, tags, kind, status, since, until)):
        return None
    return S.make_filter(layers=V.layers(layer), room=V.room_filter(room), tags=V.tags(tags) or None,
                         kinds=V.kinds(kind, store.policy.kinds), status=V.status(status),
                         since=V.optional_time(since, key="since", tz=store.policy.tz),
                         until=V.optional_time(until, key="until", tz=store.policy.tz))


def _with_entity(store: Store, view: View, pred: S.Predicate | None, entity: str | None) -> S.Predicate | None:
    """``pred``, and naming the person ``entity`` stands for (``people.entity_filter``)."""
    if entity is None:
        return pred
    ids = P.naming(store.policy, view, entity)
    return (lambda e: e.id in ids) if pred is None else (lambda e: e.id in ids and pred(e))


def list_entries(store: Store, *, layer: str | Iterable[str] | None = None, room: str | None = None,
                 tags: str | Iterable[str] | None = None, kind: str | Iterable[str] | None = None,
                 status: str | None = None, since: Any = None, until: Any = None, sort: str = "path",
                 limit: int | None = None, tag: str | Iterable[str] | None = None,
                 entity: str | None = None) -> list[Entry]:
    """``tag`` is ``tags`` by another name (given, it wins)."""
    tags = tags if tag is None else tag
    if sort not in SORTS:
        raise InvalidInput(f"sort: {sort!r} is not one of {', '.join(SORTS)}", what="sort")
    if limit is not None:
        V.limit(limit)
    pred = _filter(store, layer=layer, room=room, tags=tags, kind=kind, status=status, since=since, until=until)
    # what was purged (or erased) is listed only when asked for by its status: it is gone for every
    # other purpose, and its title may be what a person wanted gone
    hide = "purged" if status is None else None
    with store.view.reading() as view:
        pred = _with_entity(store, view, pred, entity)
        found = [e for e in view.entries.values() if (pred is None or pred(e)) and e.status != hide]
    if sort == "path":
        found.sort(key=lambda e: e.path)
    else:  # newest first; an unreadable time sorts last
        found.sort(key=lambda e: (-_timestamp(e, sort), e.path))
    return found if limit is None else found[:limit]


def _timestamp(e: Entry, which: str) -> float:
    try:
        return (e.updated if which == "updated" else e.created).timestamp()
    except (ParseError, OverflowError, ValueError):
        return float("-inf")


def search(store: Store, query: str, *, limit: int = 10, layer: str | Iterable[str] | None = None,
           room: str | None = None, tags: Iterable[str] | str | None = None,
           kind: str | Iterable[str] | None = None, since: Any = None, until: Any = None,
           include_archive: bool = False, include_superseded: bool = False,
           record: bool = True, explain: bool = False, entity: str | None = None) -> list[SearchHit]:
    V.query(query)
    V.limit(limit)
    pred = _filter(store, layer=layer, room=room, tags=tags, kind=kind, since=since, until=until)
    layers = V.layers(layer)
    # archive is searched only when asked (by flag or by naming the layer); purged never
    asked = include_archive or (layers is not None and "archive" in layers)
    with store.view.reading() as view:
        pred = _with_entity(store, view, pred, entity)
        tiebreak = S.Tiebreak(view.entries, store.usage.totals, store.policy.kinds)
        naming = P.asked_about(store.policy, view, query)
        # (a wider cut when the query names a known person: an equal match just past the limit may move up)
        wide = limit if naming is None else max(limit, min(2 * limit, LANE_DEPTH))
        hits = S.run(view.index, view.entries, S.ask(view.tokenizer, query, view.lanes), limit=wide, pred=pred,
                     include_archive=asked, include_superseded=include_superseded, tiebreak=tiebreak,
                     fb=S.feedback(store.policy), explain=explain)
        if naming is not None:
            hits = _named_first(hits, naming, limit)
    if record:  # only what answered the question itself (SearchHit.direct)
        store.usage.record_recalls([h.entry.id for h in hits if h.direct])
    return hits


# Hits whose fused scores are within this share of the first of their run
# are equal matches for a question that names a known person, who is then
# ranked first among them (one place apart in every lane near the top of a
# reciprocal-rank fusion is ~1.6%).
EQUAL_BAND = 0.02


def _named_first(hits: list[SearchHit], naming: P.Predicate, limit: int) -> list[SearchHit]:
    """The first ``limit`` of ``hits``, each run of equal matches (``EQUAL_BAND``)
    with the memories ``naming`` holds first, in their order; the candidate
    rule (``index._keep_direct``: some direct match among the first, when
    there is one) kept."""
    out: list[SearchHit] = []
    i = 0
    while i < len(hits):
        floor, j = hits[i].score * (1 - EQUAL_BAND), i + 1
        while j < len(hits) and hits[j].score >= floor:
            j += 1
        run = [(h, naming(h.entry)) for h in hits[i:j]]
        out += [h for h, theirs in run if theirs] + [h for h, theirs in run if not theirs]
        i = j
    top = out[:limit]
    if top and not any(h.direct for h in top):
        first = next((h for h in out[limit:] if h.direct), None)
        if first is not None:
            top[-1] = first
    return top


def recalled(store: Store, ids: Iterable[str]) -> None:
    """Count the memories ``ids`` (ids or names) name as recalled; one not
    (or no longer) known is skipped."""
    if isinstance(ids, str):
        raise InvalidInput("ids: a list of ids, not one string", what="ids")
    found: list[str] = []
    with store.view.reading() as view:
        for key in ids:
            try:
                found.append(view.resolve(key).id)
            except (NotFound, Ambiguous, ParseError):
                continue
    store.usage.record_recalls(dict.fromkeys(found))


def locate(store: Store, path: str, *, memory_path: str | None = None) -> Entry:
    """The memory at ``path``; else the one whose file name is the path's
    (moved since); else the one whose ``memory_path`` field is ``memory_path``
    (a current one first: a path the memory tool deleted may be created again)."""
    if not isinstance(path, str):
        raise InvalidInput(f"path must be a string, not {type(path).__name__}", what="path")
    stem = path.rsplit("/", 1)[-1]
    stem = stem[:-3] if stem.endswith(".md") else stem
    with store.view.reading() as view:
        eid = view.by_path.get(path)
        if eid is not None:
            return view.entries[eid]
        if view.by_name.get(stem):
            return view.resolve(stem)
        if memory_path is not None:
            found = [e for e in view.entries.values() if e.meta.get("memory_path") == memory_path]
            if found:
                return max(found, key=lambda e: (is_current(e), e.id))
    raise NotFound(f"no memory at {path}", path=path)


def markdown(store: Store, id: str) -> str:
    """The memory's file as text, every byte as it is on disk (what is no
    UTF-8 shown as U+FFFD)."""
    with store.view.reading() as view:
        e = view.resolve(id)
    try:
        return read_nofollow(store.root / e.path).decode("utf-8", "replace")
    except FileNotFoundError:  # removed since the view saw it
        raise NotFound(f"no memory with id or name {id!r}", id=id) from None
    except OSError as exc:
        raise StorageError(f"cannot read {e.path}: {exc}", path=e.path) from exc


REPORTS = ("patrol", "map")


def report(store: Store, kind: str = "patrol") -> str | None:
    """The latest report of ``kind`` as text, or None when there is none yet."""
    if kind not in REPORTS:
        raise InvalidInput(f"kind: {kind!r} is not one of {', '.join(REPORTS)}", what="kind")
    if kind == "map":
        path = resolve_inside(store.root, store.policy.map_file)
    else:
        folder = store.root / SYSTEM / "patrol"
        linked = symlink_in(store.root, f"{SYSTEM}/patrol")  # not followed out of the root
        found = sorted(folder.glob("*.md")) if folder.is_dir() and not linked else []
        if not found:
            return None
        path = found[-1]  # named by their date
    try:
        return read_nofollow(path).decode("utf-8", "replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(f"cannot read {path.relative_to(store.root)}: {exc}", path=str(path)) from exc


def links_to(store: Store, id: str) -> list[Entry]:
    """Memories whose links (frontmatter or body) name this one, by path: by
    its id, or by a name, ``folder/name`` or alias Obsidian resolves to it."""
    with store.view.reading() as view:
        target = view.resolve(id)
        return sorted((e for e in view.entries.values() if e.id != target.id
                       and any(x == target.id or view.link(x) is target for x in e.links)),
                      key=lambda e: e.path)


def stats(store: Store) -> dict[str, Any]:
    with store.view.reading() as view:
        return view.counts()
