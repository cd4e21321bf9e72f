"""The front door's verbs: how strong a memory is and will be, what use it has had, and metabolism.

``Repository`` (``sediment/repository/__init__.py``) is made of these groups; each
method hands its arguments to the module that does the work, in one statement.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Iterable, TYPE_CHECKING

from ..model.entry import Entry
from ..model.lifecycle import Strength
from ..verbs import metabolism, writes
from ..verbs.metabolism import Plan
from .part import Later, Part

if TYPE_CHECKING:  # (the modules below are imported when a verb first calls them: part.Later)
    from ..agent import attention as _attention
    from ..agent import history as _history
    from ..agent import outlook
    from ..agent.attention import Attention
    from ..agent.history import History
    from ..agent.outlook import Forecast
else:
    _attention = Later("sediment.agent.attention")
    _history = Later("sediment.agent.history")
    outlook = Later("sediment.agent.outlook")


class Lifecycle(Part):
    """How strong a memory is and will be, what use it has had, and metabolism."""

    # ------------------------------------------------------------------ lifecycle

    def strength(self, id: str, *, now: _dt.datetime | str | None = None) -> Strength:
        """How strong a memory is now, with the parts of the number
        (``.explain()`` says it in a sentence).

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", kind="fact", value=0.8)
        >>> repo.strength(e.id).strength
        0.8
        """
        return metabolism.strength(self.store, id, now=now)

    def strengths(self, *, now: _dt.datetime | str | None = None) -> dict[str, Strength]:
        """Every memory's strength at ``now`` by id (purged ones left out), in
        one pass: what ``strength`` gives one id at a time. Not a recall.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", kind="fact", value=0.8)
        >>> repo.strengths()[e.id].strength
        0.8
        """
        return outlook.strengths(self.store, now=now)

    def forecast(self, id: str, *, days: int = 180, now: _dt.datetime | str | None = None) -> Forecast:
        """A memory's strength for each of the next ``days`` days (day 0 is
        ``now``), as it is and as it would be after one more recall now (the
        same when it was recalled today already: one recall a day counts).
        Not a recall. Raises ``NotFound``, ``InvalidInput`` (days 1 to 3650).

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", kind="daily", value=0.8, now="2026-01-01T00:00:00+00:00")
        >>> f = repo.forecast(e.id, days=60, now="2026-01-01T00:00:00+00:00")
        >>> f.as_is[0], f.as_is[60] < f.recalled[60] < 0.8
        (0.8, True)
        """
        return outlook.forecast(self.store, id, days=days, now=now)

    def history(self, id: str) -> History:
        """When a memory was recalled (each day), confirmed and refuted, oldest
        first, with the totals of every machine; a confirmation or refutation
        whose record compaction folded away is counted in ``undated``. Not a
        recall. Raises ``NotFound``.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", kind="fact")
        >>> _ = repo.touch(e.id, "confirm", now="2026-03-02T10:00:00+00:00")
        >>> [(u.event, u.day) for u in repo.history(e.id).uses]
        [('confirm', '2026-03-02')]
        """
        return _history.history(self.store, id)

    def attention(self, *, weeks: int = 12, desert_days: int = 90,
                  now: _dt.datetime | str | None = None) -> Attention:
        """Recalls per room per week over the last ``weeks`` weeks (Monday to
        Sunday in the root's timezone, the last one this week so far; one
        recall per memory per day, every machine's), and the deserts: rooms
        with an active memory and no recall for ``desert_days`` days. Not a
        recall. Raises ``InvalidInput`` (weeks 1 to 520, days 1 to 3650).

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("Deploys go through ArgoCD.", kind="fact", room="infra")
        >>> _ = repo.add("Use PKCE on mobile.", kind="rule", room="auth")
        >>> _ = repo.search("deploys")
        >>> a = repo.attention(weeks=4)
        >>> a.rooms["infra"], a.deserts
        ((0, 0, 0, 1), ('auth',))
        """
        return _attention.attention(self.store, weeks=weeks, desert_days=desert_days, now=now)

    def touch(self, id: str, outcome: str, *, confirm: bool = False,
              now: _dt.datetime | str | None = None, request: str | None = None) -> Entry:
        """Record a confirmation (the memory proved right: stronger, counts as use)
        or a refutation (it proved wrong: archived at the next metabolize, or at
        once with ``confirm=True``). The note's file does not change until then.
        ``request`` is a key of the caller's for this call: a call sent again
        with the same key (a retry that cannot know whether the first one
        landed) counts once; the key is recorded with the event itself.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", kind="fact")
        >>> _ = repo.touch(e.id, "confirm"); repo.strength(e.id).confirms
        1
        >>> _ = repo.touch(e.id, "confirm", request="r1"); _ = repo.touch(e.id, "confirm", request="r1")
        >>> repo.strength(e.id).confirms
        2
        """
        return writes.touch(self.store, id, outcome, confirm=confirm, now=now, request=request)

    def supersede(self, old_id: str, new_id: str, reason: str = "superseded") -> Entry:
        """Retire ``old_id`` in favour of ``new_id``: the old memory gets status
        ``superseded`` and a ``superseded_by`` link, the new one a ``supersedes``
        link. Both texts stay as written; the old one goes to archive at the next
        metabolize. Journaled: a crash between the two files is finished on open.
        Returns the old memory as it is now.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> a, b = repo.add("ArgoCD", kind="fact"), repo.add("Flux", kind="fact")
        >>> old = repo.supersede(a.id, b.id)
        >>> old.status, old.meta["superseded_by"] == [f"[[{b.name}]]"]
        ('superseded', True)
        """
        return writes.supersede(self.store, old_id, new_id, reason=reason)

    def consolidate(self, fragment_ids: Iterable[str], text: str, *, kind: str, **fields: Any) -> Entry:
        """Write one memory from inbox fragments and retire them to archive.

        Retired too: any other active inbox fragment whose text is contained in
        ``text`` or whose bigram similarity with it is at least 0.55. Other
        arguments are those of ``add``. Returns the new memory (its ``supersedes``
        lists what it covers).

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> f = repo.add("likes tea")
        >>> e = repo.consolidate([f.id], "The user likes tea.", kind="fact")
        >>> repo.get(f.id).layer, e.meta["supersedes"] == [f"[[{f.name}]]"]
        ('archive', True)
        """
        return writes.consolidate(self.store, fragment_ids, text, kind=kind, **fields)

    def metabolize(self, *, dry_run: bool = True, now: _dt.datetime | str | None = None,
                   confirm: bool = False) -> Plan:
        """Plan (and with ``dry_run=False``, apply) promotions and decay.

        The plan is a pure function of the files, the usage records, the policy
        and ``now``: the same inputs give the same plan, and applying it twice
        changes nothing the second time. Each move is journaled and atomic; a
        moved note gets its new ``status`` and the ``reason``; nothing else in
        it changes. Applying a plan that archives needs ``confirm=True`` while
        policy ``confirm_destructive`` is on. A markdown report goes to
        ``_system/reports/``.

        >>> import tempfile, datetime as dt; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", kind="fact", value=0.9)
        >>> later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2)
        >>> [(m.source, m.target) for m in repo.metabolize(now=later).moves]
        [('shallow', 'sediment')]
        """
        return metabolism.metabolize(self.store, dry_run=dry_run, now=now, confirm=confirm)
