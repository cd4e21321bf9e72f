"""The front door's verbs: conflicts, patrol, the map and graph, sources and their consolidation, sync.

``Repository`` (``sediment/repository/__init__.py``) is made of these groups; each
method hands its arguments to the module that does the work, in one statement.
"""

from __future__ import annotations

import builtins
import datetime as _dt
import functools
from typing import Any, Iterable, TYPE_CHECKING

from ..verbs import writes
from .part import Later, Part

if TYPE_CHECKING:  # (the modules below are imported when a verb first calls them: part.Later)
    from ..agent import conflicts, palace, patrol, sources
    from ..sync import sync as _sync
    from ..agent.conflicts import ConflictPair
    from ..agent.palace import Palace
    from ..agent.patrol import Report
    from ..agent.sources import LLM, Consolidation, Source, Turn
    from ..sync.sync import SyncResult
else:
    conflicts, palace = Later("sediment.agent.conflicts"), Later("sediment.agent.palace")
    patrol, sources = Later("sediment.agent.patrol"), Later("sediment.agent.sources")
    _sync = Later("sediment.sync.sync")


class Hygiene(Part):
    """Conflicts, patrol, the map and graph, sources and their consolidation, sync."""

    # ------------------------------------------------------------------ hygiene (README, "Hygiene"; no recall)

    def conflicts(self, ids: Iterable[str] | None = None) -> builtins.list[ConflictPair]:
        """Pairs of active memories sharing rare anchors that may disagree (numbers,
        overturn, negation), strongest clue first; only pairs with ``ids`` if given.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = repo.add("The Berlin office is on floor 3.", kind="fact")
        >>> _ = repo.add("The Berlin office is on floor 5.", kind="fact")
        >>> [(c.kind, c.clue) for c in repo.conflicts()]
        [('numbers', 'floor: 3 vs 5')]
        """
        return conflicts.conflicts(self.view, ids)

    def patrol(self, *, now: _dt.datetime | str | None = None) -> Report:
        """Write ``_system/patrol/YYYY-MM-DD.md``: what to tidy, each item with a
        command to run. Changes no memory; the same root and ``now``, the same bytes.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = repo.add("likes green tea")
        >>> r = repo.patrol(now="2027-01-01T09:00:00+00:00")
        >>> r.path, r.counts["inbox"]
        ('_system/patrol/2027-01-01.md', 1)
        """
        return patrol.patrol(self.store, now=now)

    def map(self) -> Palace:
        """Write ``MAP.md`` (policy ``map_file``): rooms, counts, and topics in 3
        to 20% of the memories, each linking its memories. Keeps a person's own.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> for i in range(15): _ = repo.add(f"note {i}", kind="fact", room="auth" if i < 3 else None)
        >>> for i in range(3): _ = repo.add(f"OAuth 令牌 {i}", kind="fact", room="auth")
        >>> m = repo.map()
        >>> m.path, m.rooms, list(m.topics["auth"])
        ('MAP.md', {'': 12, 'auth': 6}, ['oauth', '令牌'])
        """
        return palace.write_map(self.store)

    def graph(self, format: str = "mermaid", *, kind: str = "memories") -> str:
        """Links, supersessions, evidence and events as Mermaid, or JSON (``"json"``);
        ``kind="entities"``: who appears with whom, in which roles, how often.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> a = repo.add("Mobile apps cannot keep a secret.", title="no secrets")
        >>> b = repo.add("Use PKCE.", title="PKCE", links=[a.name]); print(repo.graph(), end="")
        graph LR
          n0["no secrets"]
          n1["PKCE"]
          n1 --> n0
        >>> _ = repo.add("张三审查，Alice 部署", entities={"张三": "审查", "Alice": "deploy"})
        >>> print(repo.graph(kind="entities"), end="")
        graph LR
          p0["Alice · 1 · deploy 1"]
          p1["张三 · 1 · 审查 1"]
          p0 ---|1| p1
        """
        return palace.graph(self.store, format, kind)

    def add_source(self, session: str, turns: Iterable[Any], *,
                   now: _dt.datetime | str | None = None) -> Source:
        """Store a conversation as ``sources/<session>.md``, appending; each turn (a
        string, a (role, text) pair or a mapping) a block ``^tN`` (``turn.link``).

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> s = repo.add_source("session-1", [("user", "记得周五发版"), ("assistant", "好的")])
        >>> s.path, [t.link for t in s.turns]
        ('sources/session-1.md', ['[[session-1#^t1]]', '[[session-1#^t2]]'])
        """
        return sources.add_source(self.store, session, turns, now=now)

    def unlinked_sources(self, *, since: Any = None) -> builtins.list[Turn]:
        """Turns of stored sessions no memory's ``source_links`` points to.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> s = repo.add_source("s1", ["PKCE on mobile", "deploy with Flux"])
        >>> _ = repo.add("Use PKCE on mobile.", kind="rule", source_links=[s.turns[0].link])
        >>> [t.text for t in repo.unlinked_sources()]
        ['deploy with Flux']
        """
        return sources.unlinked_sources(self.store, since=since)

    def consolidate_with(self, llm: LLM | None = None, *, since: Any = None) -> Consolidation:
        """Unlinked turns → memories, written only through ``add``: ``llm(turns)``
        proposes (``{"text", "kind", …, "turns"}``); without one, inbox fragments.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = repo.add_source("s1", ["部署改用 Flux", "好的"])
        >>> r = repo.consolidate_with(lambda turns: [{"text": "部署用 Flux", "kind": "fact", "turns": ["t1"]}])
        >>> [(e.kind, e.source_links) for e in r.added], [t.id for t in repo.unlinked_sources()]
        ([('fact', ('[[s1#^t1]]',))], ['t2'])
        """
        return sources.consolidate_with(self.store, functools.partial(writes.add, self.store), llm, since=since)

    # ------------------------------------------------------------------ machines

    def sync(self, *, remote: str | None = None, push: bool = True) -> SyncResult:
        """Share this memory with its other machines through git: commit the
        root's pending changes, pull (merging notes by rule, never letting git
        guess a layer), repair what the merge broke, push. See README,
        "Several machines". Raises ``StorageError`` outside a git repository,
        ``Conflict`` when a file other than a note needs a person.

        >>> import tempfile; from sediment import Repository
        >>> from sediment.sync.git import git_init
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = git_init(repo.root)
        >>> _ = repo.add("周五前发版", kind="fact")
        >>> r = repo.sync(); r.committed, r.remote, r.conflicts
        (1, None, [])
        """
        return _sync.sync(self.store, remote=remote, push=push)
