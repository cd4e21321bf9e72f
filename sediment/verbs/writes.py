"""The verbs that write: add, update, edit, move, archive, purge, restore,
supersede, touch and consolidate. Each checks its input (``validate``) before
taking the lock, then re-reads what it changes (a person may have edited it)
and writes through the store. ``Repository`` documents them; this module
does them.
"""

from __future__ import annotations

import datetime as _dt
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..model import entry as E
from ..store import moves
from ..model import names as N
from ..model import obsidian as O
from ..model import validate as V
from ..model.entry import Entry
from ..errors import Conflict, InvalidInput, PolicyError, SedimentError
from ..disk.files import append_line, atomic_write
from ..model.lifecycle import bigram_similarity, is_current, overturns
from ..store.store import Store, add_link
from ..model.fields import SECTIONS, build_meta, compose_body, new_id, now_iso, split_sections, unwrap_link, wikilink

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..view.view import View

log = logging.getLogger("sediment")

COVERS = 0.55  # bigram similarity at which consolidate's text covers another inbox fragment
FLAG_REPEATS = 3  # written unclassified this many times: flagged for a person to classify


def add(store: Store, text: str, *, title: str | None = None, room: str | None = None,
        tags: Iterable[str] = (), kind: str | None = None, value: float | None = None,
        source: str | None = None, links: Iterable[str] = (), layer: str = "shallow",
        now: _dt.datetime | str | None = None, entities: Any = None, **fields: Any) -> Entry:
    policy = store.policy
    if entities is not None:
        fields["entities"] = entities
    V.body(text, policy.max_body_bytes)
    layer = V.layer(layer)
    if layer == "archive":  # an active note there is one nothing finds or decays: retiring is archive()'s job
        raise InvalidInput("add writes an active memory: choose shallow, sediment or bedrock; archive/ holds "
                           "retired ones (add it, then archive(id, reason=...))", what="layer")
    room = V.room(room)
    sections = {k: V.section(k, fields.pop(k)) for k in list(fields) if k in SECTIONS}
    extra = V.fields(fields)
    tag_list = V.tags(tags)
    explicit_title = title is not None
    if title is None:
        first = next((ln.strip(" #\t") for ln in text.splitlines() if ln.strip()), "")
        title = first[:80] or "note"
    title = V.title(title, required=True)
    V.value(value)
    if kind is None:  # no kind given: filed for a person to classify (the library never guesses one)
        extra["unclassified"] = True
        kind = "inbox"
    else:  # a kind given but unknown is a mistake (a typo would decay as inbox): refused, as update does
        kind = V.kind(kind, policy.kinds)
    if "weights" in extra:
        V.weights(extra["weights"])
    link_names = V.links(links)
    body = compose_body(text, sections)
    V.body(body, policy.max_body_bytes)
    when = None if now is None else V.time(now, key="now", tz=policy.tz)  # importing an older memory
    created = now_iso(when)
    event = extra.get("event")
    with store.writing() as view:
        siblings = [e for e in view.entries.values() if e.event == event and not e.reference] \
            if event is not None else []
        for e in siblings:  # a retry of the same payload creates nothing new
            if e.title == title and e.body == body and e.status != "purged":
                return e
        if event is None:
            twin = next((e for e in view.same_text(text) if is_current(e) and not e.reference and e.event is None),
                        None)
            if twin is not None:  # an agent retrying a write, most often: one memory, not two
                return _merge_duplicate(store, twin, tags=tag_list, links=link_names, extra=extra,
                                        given={"title": title if explicit_title else None, "kind": kind,
                                               "value": value, "source": source, "room": room,
                                               "layer": layer if layer != "shallow" else None},
                                        sections=sections)
        if kind == "core":
            _check_core_cap(store)
        eid = new_id(None if when is None else int(when.timestamp() * 1000))
        targets, warnings = _link_targets(store, link_names)
        meta = build_meta(id=eid, title=title, created=created, kind=kind, tags=tag_list,
                            value=value, source=source, links=targets, extra=extra)
        meta = V.meta(meta)
        name = store.unique_name(N.slugify(title), eid)
        rel = N.join_path(layer, room, name)
        draft = Entry(meta=meta, body=body)
        try:
            fresh = store.publish(rel, draft, exclusive=True)
        except FileExistsError:  # someone took the name between our check and the rename
            rel = N.join_path(layer, room, f"{name}-{eid[-16:-10].lower()}")
            fresh = store.publish(rel, draft, exclusive=True)
        view.load_known(fresh)
        fresh = fresh.warn(*store.note_done(rel))
        if siblings:
            _auto_supersede(store, fresh, siblings)
    return fresh.warn(*warnings)


def update(store: Store, id: str, *, expected: str | None = None, **changes: Any) -> Entry:
    policy = store.policy
    with store.writing() as view:
        current = store.reread(view.resolve(id))
        N.refuse_persons(current.path)  # (before its fields are checked: a person's note has none of ours)
        _refuse_purged(current, "update")
        if expected is not None and expected != current.version:
            raise Conflict(f"{current.path} changed since version {expected} was read "
                           f"(now {current.version}); read it again and retry",
                           id=current.id, expected=expected, actual=current.version)
        meta = dict(current.meta)
        main, sections = split_sections(current.body)
        text = changes.pop("text", None)
        if text is not None:
            main = V.body(text, policy.max_body_bytes)
        for k in list(changes):
            if k in SECTIONS:
                sections[k] = V.section(k, changes.pop(k))
        warnings = _changed_meta(store, current, meta, changes)
        body = compose_body(main, sections)
        V.body(body, policy.max_body_bytes)
        meta["updated"] = now_iso()
        meta = V.meta({k: v for k, v in meta.items() if v is not None}, path=current.path)
        return store.rewrite(current, meta=meta, body=body).warn(*warnings)


def edit(store: Store, id: str, change: Callable[[str], str], *, expected: str | None = None) -> Entry:
    """The body rewritten by ``change`` from the body the file has now, under
    the writer lock; the frontmatter keeps every field but ``updated``."""
    with store.writing() as view:
        current = store.reread(view.resolve(id))
        if expected is not None and expected != current.version:
            raise Conflict(f"{current.path} changed since version {expected} was read "
                           f"(now {current.version}); read it again and retry",
                           id=current.id, expected=expected, actual=current.version, what="expected")
        body = change(current.body)
        V.body(body, store.policy.max_body_bytes)
        meta = dict(current.meta)
        meta["updated"] = now_iso()
        draft = current.with_(meta=meta, body=body)
        if E.parse(E.render(draft), current.path, tz=view.tz).body != draft.body + (
                "" if draft.body.endswith("\n") else "\n"):
            raise InvalidInput(f"edit refused: {current.path} would not read back as written "
                               "(it would break the note's frontmatter)", id=current.id, what="read_back")
        return store.rewrite(current, meta=meta, body=body)


def _changed_meta(store: Store, current: Entry, meta: dict[str, Any], changes: dict[str, Any]) -> list[str]:
    """``update``'s changes of frontmatter, checked, applied to ``meta``
    (a field given None goes); the warnings of the links."""
    if "title" in changes:
        meta["title"] = V.title(changes.pop("title"), required=True)
    warnings = _changed_tags(current, meta, changes)
    if "links" in changes:
        targets, link_warnings = _link_targets(store, V.links(changes.pop("links")))
        meta["links"] = [wikilink(x) for x in targets] or None
        warnings += link_warnings
    if "kind" in changes:
        k = V.kind(changes.pop("kind"), store.policy.kinds)
        if k == "core" and current.kind != "core":
            _check_core_cap(store)
        meta["kind"] = k
        meta.pop("unclassified", None)
    if "value" in changes:
        meta["value"] = V.value(changes.pop("value"))
    for k in ("layer", "room"):
        if k in changes:
            raise InvalidInput(f"use move() to change {k}")
    if "source" in changes:
        meta["source"] = changes.pop("source")
    V.not_reserved(changes)
    meta.update(V.fields({k: v for k, v in changes.items() if v is not None}))
    for k, v in changes.items():
        if v is None:
            meta.pop(k, None)
    return warnings


def _changed_tags(current: Entry, meta: dict[str, Any], changes: dict[str, Any]) -> list[str]:
    """``tags`` replaces the tags property; ``add_tags`` and ``remove_tags``
    change it (the two ways do not mix). Returns warnings: a tag to remove
    that the note does not have, or has only in its text (``#tag``)."""
    replace, given = "tags" in changes, changes.pop("tags", None)
    add_tags = V.tags(changes.pop("add_tags", None))
    remove_tags = V.tags(changes.pop("remove_tags", None))
    if replace and (add_tags or remove_tags):
        raise InvalidInput("tags replaces the tags; add_tags and remove_tags change them: give one or the other",
                           what="tags")
    both = sorted(set(add_tags) & set(remove_tags))
    if both:
        raise InvalidInput(f"tag {both[0]!r} is both added and removed", what="tags")
    if replace:
        meta["tags"] = V.tags(given) or None
        return []
    if not add_tags and not remove_tags:
        return []
    had = O.property_tags(meta.get("tags"))
    warnings = []
    for t in remove_tags:
        if t not in had:
            inline = t in current.tags
            warnings.append(f"tag {t!r} is written in the text (#{t}); edit the text to remove it" if inline
                            else f"the memory had no tag {t!r}")
    kept = [t for t in had if t not in remove_tags]
    meta["tags"] = [*kept, *(t for t in add_tags if t not in kept)] or None
    return warnings


def _refuse_purged(entry: Entry, verb: str) -> None:
    if entry.status == "purged":
        raise InvalidInput(f"{entry.path} is purged; {verb} does not bring it back "
                           f"(restore(id, confirm=True) does)", id=entry.id)


def move(store: Store, id: str, layer: str, *, room: str | None = None, reason: str | None = None) -> Entry:
    """A move changes the folder, the ``reason`` (the one given, or none) and
    the status the target implies (archive → archived); never ``updated``,
    which is the last change of meaning. Out of archive is ``restore``'s job."""
    layer = V.layer(layer)
    with store.writing() as view:
        entry = store.reread(view.resolve(id))
        _refuse_purged(entry, "move")
        if layer != "archive" and entry.status != "active":
            raise InvalidInput(f"{entry.path} is {entry.status}; use restore() to make it active again",
                               id=entry.id)
        new_room = entry.room if room is None else V.room(room)
        changes: dict[str, Any] = {"reason": E.one_line(reason) if reason else None}
        if layer == "archive" and entry.status == "active":
            changes["status"] = "archived"
        return moves.move(store, entry, layer, new_room, meta_changes=changes, op="move")


def archive(store: Store, id: str, *, reason: str) -> Entry:
    why = V.reason(reason, verb="archive")
    with store.writing() as view:
        entry = store.reread(view.resolve(id))
        _refuse_purged(entry, "archive")
        status = "superseded" if entry.status == "superseded" else "archived"
        return moves.move(store, entry, "archive", entry.room, op="archive",
                          meta_changes={"status": status, "reason": why})


def restore(store: Store, id: str, *, layer: str = "shallow", confirm: bool = False) -> Entry:
    """The only way back to ``active``: for archived and superseded memories
    (purged ones with ``confirm``); status and reason reset, the superseded_by
    link dropped (the successor keeps its ``supersedes`` as history)."""
    layer = V.layer(layer)
    if layer == "archive":
        raise InvalidInput("restore brings a memory out of archive: choose shallow, sediment or bedrock")
    with store.writing() as view:
        entry = store.reread(view.resolve(id))
        if is_current(entry):
            raise InvalidInput(f"{entry.path} is active already; nothing to restore", id=entry.id)
        if entry.meta.get("erased"):
            raise InvalidInput(f"{entry.path} was erased: only its tombstone is left", id=entry.id)
        if entry.status == "purged" and not confirm:
            raise PolicyError(f"{entry.path} is purged; restoring it needs confirm=True", rule="confirm")
        return moves.move(store, entry, layer, entry.room, op="restore",
                          meta_changes={"status": "active", "reason": None, "superseded_by": None})


def purge(store: Store, id: str, *, confirm: bool = False, reason: str = "purged", erase: bool = False) -> Entry:
    if store.policy.confirm_destructive and not confirm:
        raise PolicyError("purge needs confirm=True (policy confirm_destructive)", rule="confirm")
    with store.writing() as view:
        entry = store.reread(view.resolve(id))
        limit = RateLimit(store.usage.writable_folder() / "destructive.log", store.policy.destructive_per_hour)
        limit.check()
        why = E.one_line(reason)
        if erase:  # text, tags and every other field go; what links need stays (and the body store's
            # copy of the text goes as this write ends: Store.writing)
            keep = {k: entry.meta[k] for k in ("id", "created", "updated") if k in entry.meta}
            tomb = {**keep, "status": "purged", "reason": why, "erased": now_iso()}
            entry = store.rewrite(entry, meta=tomb, body="Erased: the text of this memory was removed.\n")
        fresh = moves.move(store, entry, "archive", entry.room, op="purge",
                           meta_changes={"status": "purged", "reason": why})
        limit.record()
        return fresh


def supersede(store: Store, old_id: str, new_id: str, reason: str = "superseded") -> Entry:
    with store.writing() as view:
        old, new = store.reread(view.resolve(old_id)), store.reread(view.resolve(new_id))
        if old.id == new.id:
            raise InvalidInput("a memory cannot supersede itself")
        _refuse_purged(old, "supersede")
        if new.status != "active":
            raise InvalidInput(f"{new.path} is {new.status}: only an active memory can supersede another",
                               id=new.id)
        if _supersedes(view, new, old):
            raise InvalidInput(f"{new.path} already descends from {old.path}: superseding it would "
                               f"form a cycle", id=new.id)
        return store.supersede(old, new, reason)


def touch(store: Store, id: str, outcome: str, *, confirm: bool = False,
          now: _dt.datetime | str | None = None, request: str | None = None) -> Entry:
    if outcome not in ("confirm", "refute"):
        raise InvalidInput("outcome must be 'confirm' or 'refute'")
    key = V.request(request)
    when = V.now(now, store.policy.tz)
    with store.view.reading() as view:
        e = view.resolve(id)
    store.usage.record([e.id], outcome, now=when.timestamp(), request=key)
    if outcome == "refute" and confirm:
        return archive(store, e.id, reason=f"refuted on {when.date().isoformat()}")
    return e


def consolidate(store: Store, fragment_ids: Iterable[str], text: str, *, kind: str, **fields: Any) -> Entry:
    kinds = store.policy.kinds
    if kind not in kinds or kind == "inbox":
        raise InvalidInput(f"consolidate needs a real kind (one of "
                           f"{', '.join(k for k in kinds if k != 'inbox')})")
    with store.writing() as view:
        # A retry (after a crash, or of the same call) finds the memory it
        # wrote and finishes retiring what is left, instead of writing twice.
        main = " ".join(text.split())
        existing = [e.id for e in view.same_text(text)
                    if e.kind == kind and is_current(e) and not e.reference]
        done_link = wikilink(view.entries[existing[0]].name) if existing else None
        given, retired = [], []
        for e in (view.resolve(i) for i in fragment_ids):
            if done_link and done_link in O.items(e.meta.get("superseded_by")):
                retired.append(e)  # retired into this memory already
                continue
            if e.kind != "inbox" or not is_current(e) or e.reference:
                raise InvalidInput(f"{e.path} is not an active inbox fragment; consolidate "
                                   f"retires fragments only")
            given.append(e)
        new = view.entries[existing[0]] if existing else add(store, text, kind=kind, **fields)
        covered = {e.id: e for e in given}
        for e in view.entries.values():
            if e.kind == "inbox" and is_current(e) and not e.reference and e.id != new.id:
                frag = " ".join(e.text.split())
                if frag and (frag in main or bigram_similarity(frag, text) >= COVERS):
                    covered[e.id] = e
        # links first, then the moves: a crash in between leaves the new
        # memory naming fragments still to retire, which a retry finishes
        meta = dict(view.entries[new.id].meta)
        for e in sorted([*covered.values(), *retired], key=lambda x: x.id):
            add_link(meta, "supersedes", e.name)
        if meta != dict(view.entries[new.id].meta):
            store.rewrite(view.entries[new.id], meta=meta)
        for e in sorted(covered.values(), key=lambda x: x.id):
            cur = store.reread(e)
            moves.move(store, cur, "archive", cur.room, op="consolidate", meta_changes={
                "status": "superseded", "reason": f"consolidated into [[{new.name}]]",
                "superseded_by": [wikilink(new.name)]})
        return view.entries[new.id]


def _supersedes(view: View, start: Entry, target: Entry) -> bool:
    """Whether ``target`` is reached from ``start`` along superseded_by links
    (start is then, in effect, older than target)."""
    seen, todo = set(), [start]
    while todo:
        e = todo.pop()
        if e.id == target.id:
            return True
        if e.id in seen:
            continue
        seen.add(e.id)
        for name in O.items(e.meta.get("superseded_by")):
            ids = view.by_name.get(unwrap_link(name), [])
            todo += [view.entries[i] for i in ids if i in view.entries]
    return False


def _auto_supersede(store: Store, new: Entry, siblings: list[Entry]) -> None:
    """A new judgement in an event that starts with an overturn word retires
    at most the two most recent older non-core memories of that event."""
    if not overturns(new.text):
        return
    older = [e for e in siblings if e.kind != "core" and is_current(e)]
    older.sort(key=lambda e: e.id, reverse=True)  # ULIDs sort by creation time
    for e in older[:2]:
        try:
            supersede(store, e.id, new.id, reason=f"overturned by a later judgement in event {new.event}")
        except SedimentError as exc:
            # the new memory is written already: its add succeeded; a sibling a
            # person broke or removed meanwhile is left as it is
            log.warning("sediment: could not supersede %s: %s", e.path, exc)


def _check_core_cap(store: Store) -> None:
    n = sum(1 for e in store.view.entries.values() if e.kind == "core" and e.layer not in ("archive", ""))
    if n >= store.policy.core_max:
        raise PolicyError(f"there are already {n} core memories (policy core_max is "
                          f"{store.policy.core_max}); archive one or use another kind", rule="core_max")


def _link_targets(store: Store, keys: list[str]) -> tuple[list[str], list[str]]:
    """The names links should carry, and a warning for each that names no
    memory. A caller may name a memory by its name, its id or its exact title
    (``View.link``); anything else is kept as written (a link to a note not
    written yet, as in Obsidian: it resolves by title once that memory is
    written) and warned about."""
    view = store.view
    names, warnings = [], []
    for key in keys:
        target = key.split("|")[0].split("#")[0].strip()
        e = view.entries.get(target) or view.link(target)
        if e is not None and view.link(e.name) is not e:
            names.append(target)  # a person's note whose name other notes share: as written (folder/name)
            continue
        if e is None:
            warnings.append(f"link [[{key}]] names no memory (yet)")
        names.append(e.name if e is not None else key)
    return names, warnings


def _merge_duplicate(store: Store, twin: Entry, *, tags: list[str], links: list[str], extra: dict[str, Any],
                     given: dict[str, Any], sections: dict[str, Any]) -> Entry:
    """``add`` of a text an active memory already has: that memory, with the
    call's tags and links added; other fields that differ are left as they
    are, and the entry returned says so."""
    meta = dict(twin.meta)
    targets, warnings = _link_targets(store, links)
    tagged = [str(t) for t in meta.get("tags") or ()]  # (the property: inline #tags stay in the text)
    new_tags = [t for t in tags if t not in tagged]
    if new_tags:
        meta["tags"] = [*tagged, *new_tags]
    for x in targets:
        add_link(meta, "links", x)
    if extra.get("unclassified") and twin.meta.get("unclassified"):
        had = twin.meta.get("repeats")
        repeats = (had if isinstance(had, int) and not isinstance(had, bool) else 1) + 1  # written again
        meta["repeats"] = repeats
        if repeats >= FLAG_REPEATS:
            meta["flag"] = f"classify: written unclassified {repeats} times"
    current = {"title": twin.title, "kind": twin.kind, "value": twin.meta.get("value"),
               "source": twin.source, "room": twin.room, "layer": twin.layer}
    differ = sorted(k for k, v in given.items() if v is not None and v != current[k]
                    and not (k == "kind" and extra.get("unclassified")))
    differ += sorted(k for k, v in extra.items() if k != "unclassified" and twin.meta.get(k) != v)
    differ += sorted(k for k, v in sections.items() if v and twin.sections.get(k) != compose_body("", {k: v})
                     .split("\n", 1)[-1].strip("\n"))
    if differ:
        warnings.append(f"the same text is already memory {twin.id} ({twin.path}); returned it as it is: "
                        f"{', '.join(differ)} of this call not applied")
    else:
        warnings.append(f"the same text is already memory {twin.id}; returned it")
    if meta != dict(twin.meta):
        meta["updated"] = now_iso()
        twin = store.rewrite(twin, meta=V.meta(meta, path=twin.path))
    return twin.warn(*warnings)


class RateLimit:
    """Destructive operations in any rolling hour, one time a line in a file
    under ``_system/usage/``. A damaged line costs that line, never the limit."""

    def __init__(self, path: Path, per_hour: int) -> None:
        self.path, self.per_hour = path, per_hour

    def _times(self) -> tuple[list[float], int]:
        """Times in the last hour, and how many lines the file has."""
        cutoff = time.time() - 3600
        try:
            lines = self.path.read_bytes().decode("utf-8", "replace").split()
        except FileNotFoundError:
            return [], 0
        recent = []
        for x in lines:
            try:
                t = float(x)
            except ValueError:
                continue
            if t > cutoff:
                recent.append(t)
        return recent, len(lines)

    def check(self) -> None:
        recent = len(self._times()[0])
        if recent >= self.per_hour:
            raise PolicyError(f"{recent} destructive operations in the last hour; policy "
                              f"destructive_per_hour is {self.per_hour}", rule="rate_limit")

    def record(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        recent, total = self._times()
        if total > 2 * len(recent) + 100:  # mostly stale: keep only the last hour (we hold the lock)
            atomic_write(self.path, "".join(f"{t:.3f}\n" for t in recent).encode())
        append_line(self.path, f"{time.time():.3f}")
