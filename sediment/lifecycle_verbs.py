"""The lifecycle verbs of ``Repository``: touch, strength, supersede, consolidate,
metabolize. Kept apart from the storage verbs so each file stays readable; the
rules themselves are pure functions in ``lifecycle``.
"""

from __future__ import annotations

import datetime as _dt
import logging
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from . import entry as E
from .entry import Entry
from .errors import InvalidInput, PolicyError, SedimentError

log = logging.getLogger("sediment")
from .files import atomic_write
from .lifecycle import Move, Strength, bigram_similarity, overturns, plan, strength

if TYPE_CHECKING:  # pragma: no cover
    from .repository import Repository


@dataclass
class Plan:
    """What ``metabolize`` would do (``applied`` False) or did."""
    now: str
    moves: list[Move]
    applied: bool = False
    report: str | None = None  # path of the markdown report, relative to the root
    counts: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[Move, str]] = field(default_factory=list)  # (move, why) not applied

    def to_dict(self) -> dict[str, Any]:
        return {"now": self.now, "applied": self.applied, "report": self.report,
                "counts": self.counts, "moves": [m.to_dict() for m in self.moves],
                "skipped": [{**m.to_dict(), "why": why} for m, why in self.skipped]}

    def __str__(self) -> str:
        if not self.moves:
            return "nothing to do"
        verb = "moved" if self.applied else "would move"
        lines = [f"{verb} {len(self.moves)}: " + ", ".join(f"{k} {v}" for k, v in self.counts.items())]
        lines += [f"  {m.source} → {m.target}  {m.title}  ({m.reason})" for m in self.moves]
        lines += [f"  skipped {m.title}: {why}" for m, why in self.skipped]
        return "\n".join(lines)


def _counts(moves: list[Move]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for m in moves:
        key = f"{m.source}→{m.target}"
        counts[key] = counts.get(key, 0) + 1
    return counts


def _plan(repo: "Repository", when: _dt.datetime) -> "Plan":
    moves = plan(list(repo._entries.values()), repo._usage.load(), repo.policy, when.timestamp())
    return Plan(when.isoformat(timespec="seconds"), moves, counts=_counts(moves))


def _now(now: _dt.datetime | None) -> _dt.datetime:
    if now is None:
        return _dt.datetime.now().astimezone()
    if now.tzinfo is None:
        raise InvalidInput("now must be timezone-aware")
    return now


def _add_link(meta: dict, key: str, name: str) -> None:
    links = list(meta.get(key) or ())
    if E.wikilink(name) not in links:
        links.append(E.wikilink(name))
    meta[key] = links


class LifecycleVerbs:
    """Mixed into ``Repository``."""

    def strength(self: "Repository", id: str, *, now: _dt.datetime | None = None) -> Strength:
        """How strong a memory is now, with the parts of the number
        (``.explain()`` says it in a sentence)."""
        e = self.get(id)
        return strength(e, self._usage.load().get(e.id), self.policy["kinds"], _now(now).timestamp())

    def touch(self: "Repository", id: str, outcome: str, *, confirm: bool = False,
              now: _dt.datetime | None = None) -> Entry:
        """Record a confirmation (the memory proved right: stronger, counts as use)
        or a refutation (it proved wrong: archived at the next metabolize, or at
        once with ``confirm=True``). The note's file does not change until then."""
        if outcome not in ("confirm", "refute"):
            raise InvalidInput("outcome must be 'confirm' or 'refute'")
        e = self.get(id)
        self._usage.record([e.id], outcome, now=_now(now).timestamp())
        if outcome == "refute" and confirm:
            return self.archive(e.id, reason=f"refuted on {_now(now).date().isoformat()}")
        return e

    def supersede(self: "Repository", old_id: str, new_id: str, reason: str = "superseded") -> Entry:
        """Retire ``old_id`` in favour of ``new_id``: the old memory gets status
        ``superseded`` and a ``superseded_by`` link, the new one a ``supersedes``
        link. Both texts stay as written; the old one goes to archive at the next
        metabolize. Journaled: a crash between the two files is finished on open.
        Returns the old memory as it is now."""
        with self._write_lock():
            old, new = self._reread(self._resolve(old_id)), self._reread(self._resolve(new_id))
            if old.id == new.id:
                raise InvalidInput("a memory cannot supersede itself")
            seq = self._journal.begin("supersede", old=old.path, new=new.path, reason=E.one_line(reason))
            old, _ = self._apply_supersede(old.path, new.path, reason)
            self._note_done(old.path, new.path, seq=seq, op="supersede")
            return old

    def _apply_supersede(self: "Repository", old_path: str, new_path: str,
                         reason: str) -> tuple[Entry, Entry]:
        # Idempotent, so that recovery can simply run it again.
        old = E.parse((self.root / old_path).read_bytes(), old_path)
        new = E.parse((self.root / new_path).read_bytes(), new_path)
        meta = dict(old.meta)
        meta["status"] = "superseded"
        meta["reason"] = E.one_line(reason)
        _add_link(meta, "superseded_by", new.name)
        if meta != dict(old.meta):
            old = self._publish(old_path, old.with_(meta=meta))
        nmeta = dict(new.meta)
        _add_link(nmeta, "supersedes", old.name)
        if nmeta != dict(new.meta):
            new = self._publish(new_path, new.with_(meta=nmeta))
        if self._view_ready:
            self._load_known(old)
            self._load_known(new)
        return old, new

    def _auto_supersede(self: "Repository", new: Entry, siblings: list[Entry]) -> None:
        """A new judgement in an event that starts with an overturn word retires
        at most the two most recent older non-core memories of that event."""
        if not overturns(new.text):
            return
        older = [e for e in siblings if e.kind != "core" and e.status == "active" and e.layer != "archive"]
        older.sort(key=lambda e: e.id, reverse=True)  # ULIDs sort by creation time
        for e in older[:2]:
            try:
                self.supersede(e.id, new.id, reason=f"overturned by a later judgement in event {new.event}")
            except SedimentError as exc:
                # the new memory is written already: its add succeeded; a sibling a
                # person broke or removed meanwhile is left as it is
                log.warning("sediment: could not supersede %s: %s", e.path, exc)

    def consolidate(self: "Repository", fragment_ids: Iterable[str], text: str, *, kind: str,
                    **fields: Any) -> Entry:
        """Write one memory from inbox fragments and retire them to archive.

        Retired too: any other active inbox fragment whose text is contained in
        ``text`` or whose bigram similarity with it is at least 0.55. Other
        arguments are those of ``add``. Returns the new memory (its ``supersedes``
        lists what it covers)."""
        if kind not in self.policy["kinds"] or kind == "inbox":
            raise InvalidInput(f"consolidate needs a real kind (one of "
                               f"{', '.join(k for k in self.policy['kinds'] if k != 'inbox')})")
        with self._write_lock():
            # A retry (after a crash, or of the same call) finds the memory it
            # wrote and finishes retiring what is left, instead of writing twice.
            main = " ".join(text.split())
            existing = sorted(e.id for e in self._entries.values()
                              if e.kind == kind and e.status == "active" and e.layer != "archive"
                              and " ".join(e.text.split()) == main)
            done_link = E.wikilink(self._entries[existing[0]].name) if existing else None
            given, retired = [], []
            for e in (self._resolve(i) for i in fragment_ids):
                if done_link and done_link in (e.meta.get("superseded_by") or ()):
                    retired.append(e)  # retired into this memory already
                    continue
                if e.kind != "inbox" or e.layer == "archive" or e.status != "active":
                    raise InvalidInput(f"{e.path} is not an active inbox fragment; consolidate "
                                       f"retires fragments only")
                given.append(e)
            new = self._entries[existing[0]] if existing else self.add(text, kind=kind, **fields)
            covered = {e.id: e for e in given}
            for e in self._entries.values():
                if e.kind == "inbox" and e.status == "active" and e.layer != "archive" and e.id != new.id:
                    frag = " ".join(e.text.split())
                    if frag and (frag in " ".join(text.split()) or bigram_similarity(frag, text) >= 0.55):
                        covered[e.id] = e
            # links first, then the moves: a crash in between leaves the new
            # memory naming fragments still to retire, which a retry finishes
            meta = dict(self._entries[new.id].meta)
            for e in sorted([*covered.values(), *retired], key=lambda x: x.id):
                _add_link(meta, "supersedes", e.name)
            if meta != dict(self._entries[new.id].meta):
                fresh = self._publish(new.path, self._entries[new.id].with_(meta=meta))
                self._load_known(fresh)
                self._note_done(fresh.path)
            for e in sorted(covered.values(), key=lambda x: x.id):
                cur = self._reread(e)
                self._move(cur, "archive", cur.room, op="consolidate", meta_changes={
                    "status": "superseded", "reason": f"consolidated into [[{new.name}]]",
                    "superseded_by": [E.wikilink(new.name)]})
            return self._entries[new.id]

    def metabolize(self: "Repository", *, dry_run: bool = True, now: _dt.datetime | None = None,
                   confirm: bool = False) -> Plan:
        """Plan (and with ``dry_run=False``, apply) promotions and decay.

        The plan is a pure function of the files, the usage records, the policy
        and ``now``: the same inputs give the same plan, and applying it twice
        changes nothing the second time. Each move is journaled and atomic; a
        moved note gets its new ``status`` and the ``reason``; nothing else in
        it changes. Applying a plan that archives needs ``confirm=True`` while
        policy ``confirm_destructive`` is on. A markdown report goes to
        ``_system/reports/``.
        """
        when = _now(now)
        with self._view_lock:  # a watcher thread may be changing the view
            self._sync()
            result = _plan(self, when)
        if dry_run or not result.moves:
            return result
        with self._write_lock():
            # Plan again under the lock: another writer may have changed things
            # since; the confirmation is checked against what will be applied.
            result = _plan(self, when)
            if (self.policy["confirm_destructive"] and not confirm
                    and any(m.target == "archive" for m in result.moves)):
                raise PolicyError("this plan archives memories; apply it with confirm=True "
                                  "(policy confirm_destructive)", rule="confirm")
            applied = []
            for m in result.moves:
                e = self._entries.get(m.id)
                if e is None:
                    continue
                try:
                    e = self._reread(e)
                    changes: dict[str, Any] = {"reason": E.one_line(m.reason)}
                    if m.status:
                        changes["status"] = m.status
                    self._move(e, m.target, e.room, meta_changes=changes, op="metabolize")
                    applied.append(m)
                except SedimentError as exc:
                    # a note a person just broke, moved or deleted: skip it, say so
                    result.skipped.append((m, str(exc)))
            result.moves, result.applied = applied, True
            result.counts = _counts(applied)
            result.report = self._write_report(result)
        return result

    def _write_report(self: "Repository", result: Plan) -> str:
        stamp = result.now.replace(":", "").replace("-", "")[:15]
        rel = f"_system/reports/metabolize-{stamp}-{secrets.token_hex(3)}.md"
        lines = [f"# Metabolism {result.now}", "",
                 f"{len(result.moves)} move(s): " + ", ".join(f"{k} {v}" for k, v in result.counts.items()),
                 "", "| memory | from | to | reason |", "| --- | --- | --- | --- |"]
        for m in result.moves:
            name = self._entries[m.id].name if m.id in self._entries else m.id
            lines.append(f"| [[{name}]] | {m.source} | {m.target} | {m.reason.replace('|', '/')} |")
        for m, why in result.skipped:
            lines.append(f"| {m.title} | {m.source} | (skipped) | {why.replace('|', '/')} |")
        atomic_write(self.root / rel, ("\n".join(lines) + "\n").encode("utf-8"))
        return rel


def recover_supersede(repo: "Repository", rec: dict) -> list[str]:
    """Finish an interrupted supersede (both files still exist: it moves nothing)."""
    from .files import resolve_inside
    old, new = rec.get("old"), rec.get("new")
    if not isinstance(old, str) or not isinstance(new, str):
        return []
    if not resolve_inside(repo.root, old).exists() or not resolve_inside(repo.root, new).exists():
        return []
    repo._apply_supersede(old, new, rec.get("reason") or "superseded")
    return [old, new]

