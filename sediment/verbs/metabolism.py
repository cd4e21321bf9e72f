"""The lifecycle verbs: strength and metabolize. The rules themselves are
pure functions in ``lifecycle``; this module applies them through the store
and writes the report. (``touch`` and ``consolidate`` write through the
verbs of ``writes``, and live there.)
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import re
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..model import entry as E
from ..model import validate as V
from ..store import moves
from ..model.entry import Entry
from ..model.record import Record
from ..errors import PolicyError, SedimentError, StorageError
from ..disk.files import atomic_write
from ..model.lifecycle import Move, Strength, plan, strength as _strength
from ..progress import Ticker

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..store.store import Store
    from ..view.view import View

log = logging.getLogger("sediment")


@dataclass
class Plan(Record):
    """What ``metabolize`` would do (``applied`` False) or did."""
    now: str
    moves: list[Move]
    applied: bool = False
    report: str | None = None  # path of the markdown report, relative to the root
    counts: dict[str, int] = field(default_factory=dict)
    skipped: list[tuple[Move, str]] = field(default_factory=list)  # (move, why) not applied
    _keys = ("now", "applied", "report", "counts", "moves")

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "skipped": [{**m.to_dict(), "why": why} for m, why in self.skipped]}

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


def _plan(store: Store, view: View, when: _dt.datetime) -> Plan:
    moves = plan(list(view.entries.values()), store.usage.totals(), store.policy, when.timestamp())
    return Plan(when.isoformat(timespec="seconds"), moves, counts=_counts(moves))


def strength(store: Store, id: str, *, now: _dt.datetime | str | None = None) -> Strength:
    when = V.now(now, store.policy.tz)
    with store.view.reading() as view:
        e = view.resolve(id)
    return _strength(e, store.usage.totals().get(e.id), store.policy.kinds, when.timestamp())


def metabolize(store: Store, *, dry_run: bool = True, now: _dt.datetime | str | None = None,
               confirm: bool = False) -> Plan:
    when = V.now(now, store.policy.tz)
    if not dry_run:
        store.check_writable()  # applying is a write, even of an empty plan
    if dry_run:
        with store.view.reading() as view:  # a watcher thread may be changing the view
            return _plan(store, view, when)
    with store.writing() as view:
        # Plan again under the lock: another writer may have changed things
        # since; the confirmation is checked against what will be applied.
        result = _plan(store, view, when)
        if not result.moves:
            return result
        if (store.policy.confirm_destructive and not confirm
                and any(m.target == "archive" for m in result.moves)):
            raise PolicyError("this plan archives memories; apply it with confirm=True "
                              "(policy confirm_destructive)", rule="confirm")
        applied, refused = _apply(store, view, result)
        result.moves, result.applied = applied, True
        result.counts = _counts(applied)
        try:  # best effort: the moves are what matters, the report only tells of them
            result.report = _write_report(store, view, result)
        except OSError as exc:
            log.warning("sediment: metabolize report not written: %s", exc)
    if refused is not None:
        raise StorageError(f"metabolize stopped after {len(result.moves)} of "
                           f"{len(result.moves) + len(result.skipped)} moves: {refused}",
                           plan=result) from refused
    return result


BATCH = 100  # moves journaled with one fsync: a crash leaves at most this many intents to sort out


def _apply(store: Store, view: View, result: Plan) -> tuple[list[Move], StorageError | None]:
    """Apply the plan's moves, in batches whose intents are journaled with one
    fsync (a move's intent must be durable before its files change; an intent
    whose move never started is harmless). The moves applied, and the storage
    refusal that stopped them, if any."""
    applied: list[Move] = []
    tick = Ticker(view.progress, "metabolize", len(result.moves))
    todo = result.moves
    for start in range(0, len(todo), BATCH):
        batch: list[tuple[Move, Entry, dict[str, Any], Any]] = []
        for m in todo[start:start + BATCH]:
            e = view.entries.get(m.id)
            if e is None:
                tick()
                continue
            try:
                e = store.reread(e)
                changes: dict[str, Any] = {"reason": E.one_line(m.reason)}
                if m.status:
                    changes["status"] = m.status
                batch.append((m, e, changes, moves.plan(e, m.target, e.room, changes)))
            except SedimentError as exc:  # a note a person just broke, moved or deleted
                tick()
                result.skipped.append((m, str(exc)))
        journaled = [i for i, (_, e, _, p) in enumerate(batch) if p[0] != e.path]
        seqs: dict[int, str] = {}
        try:
            if journaled:
                seqs = dict(zip(journaled, store.journal.begin_many(
                    "metabolize", [moves.intent(batch[i][1], batch[i][3]) for i in journaled])))
        except StorageError as exc:
            if batch:
                result.skipped.append((batch[0][0], str(exc)))
            return applied, _refused(result, exc, [m for m, *_ in batch[1:]] + todo[start + BATCH:])
        outcomes = moves.move_batch(store, [(e, planned, seqs.get(i)) for i, (_, e, _, planned) in enumerate(batch)],
                              op="metabolize")
        refusal: StorageError | None = None
        for i, ((m, *_), got) in enumerate(zip(batch, outcomes)):
            tick()
            if isinstance(got, Entry):
                applied.append(m)
            elif got is None:
                # not started: the file system refused an earlier move (a full
                # disk) and every later one would fail the same way; its intent
                # is closed (not needed for safety: recovery would find no copy)
                if i in seqs:
                    with contextlib.suppress(StorageError):
                        store.journal.done(seq=seqs[i], op="metabolize")
                result.skipped.append((m, "not attempted: the storage refused an earlier move"))
            else:  # a note a person just broke, moved or saved; or the storage refused
                result.skipped.append((m, str(got)))
                if isinstance(got, StorageError) and refusal is None:
                    refusal = got
        if refusal is not None:  # stop here and say what was not done
            return applied, _refused(result, refusal, todo[start + BATCH:])
        store.compact_journal()
    return applied, None


def _refused(result: Plan, exc: StorageError, rest: list[Move]) -> StorageError:
    result.skipped += [(x, "not attempted: the storage refused an earlier move") for x in rest]
    return exc


def _write_report(store: Store, view: View, result: Plan) -> str | None:
    # Names, titles and paths are code spans, never [[wikilinks]]: a report
    # must not become a hub in Obsidian's graph, linked to every note it moved.
    if not store.parts.writable("reports"):
        return None  # _system/reports is a symlink: check() says so
    stamp = result.now.replace(":", "").replace("-", "")[:15]
    rel = f"_system/reports/metabolize-{stamp}-{secrets.token_hex(3)}.md"
    lines = [f"# Metabolism {result.now}", "",
             f"{len(result.moves)} move(s): " + ", ".join(f"{k} {v}" for k, v in result.counts.items()),
             "", "| memory | from | to | reason |", "| --- | --- | --- | --- |"]
    for m in result.moves:
        name = view.entries[m.id].name if m.id in view.entries else m.id
        lines.append(f"| {_code(name)} | {m.source} | {m.target} | {_unlink(m.reason)} |")
    for m, why in result.skipped:
        lines.append(f"| {_code(m.title)} | {m.source} | (skipped) | {_unlink(why)} |")
    atomic_write(store.root / rel, ("\n".join(lines) + "\n").encode("utf-8"))
    return rel


def _code(text: str) -> str:
    """``text`` as a code span for a table cell: nothing in it links, and a
    ``|`` does not end the cell."""
    text = " ".join(text.split()).replace("|", "\\|")
    run = max((len(r) for r in re.findall(r"`+", text)), default=0)
    fence = "`" * (run + 1)
    pad = " " if run else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _unlink(text: str) -> str:
    """Plain text for a table cell, its ``[[name]]`` links turned into code spans."""
    text = " ".join(text.split())
    parts = re.split(r"(\[\[[^\[\]]*\]\])", text)
    return "".join(_code(p[2:-2]) if i % 2 else p.replace("|", "/").replace("](", "] (")
                   for i, p in enumerate(parts))
