"""The front door's verbs: what a memory root holds, read without writing a note: get, list, search, links, the

``Repository`` (``sediment/repository/__init__.py``) is made of these groups; each
method hands its arguments to the module that does the work, in one statement.
"""

from __future__ import annotations

import builtins
import contextlib
from typing import Any, Iterable, Iterator, Self

from ..model.entry import Entry
from ..search.query import SearchHit
from ..verbs import reads, shared
from ..view.watch import Callback
from .part import Part


class Reading(Part):
    """What a memory root holds, read without writing a note: get, list, search, links, the
    file as it is, the reports; and keeping the view current (watch, refresh)."""

    # ------------------------------------------------------------------ watching

    def watch(self, on_change: Callback | None = None) -> contextlib.AbstractContextManager[Self]:
        """Keep the index current while files change behind the library's back
        (an editor, Obsidian, ``git pull``), until the block ends.

        ``on_change(what, path)`` is called from the watcher thread for each
        change applied; ``what`` is 'changed', 'removed', 'invalid' or 'rescan'.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> with repo.watch():
        ...     pass
        """
        return self._watching.during(self, on_change)

    def refresh(self) -> dict[str, int]:
        """Rescan the root for changes made behind the library's back (an editor,
        git, a file manager): stat every file, re-read only what changed.
        Returns counts of added, changed and removed files.

        >>> import tempfile, pathlib; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", title="note")
        >>> (repo.root / e.path).unlink()
        >>> repo.refresh()
        {'added': 0, 'changed': 0, 'removed': 1}
        """
        return self.view.refresh()

    # ------------------------------------------------------------------ reading

    def get(self, id: str) -> Entry:
        """The memory with this id, path, name or exact title (a title or name
        several notes have is ``Ambiguous``). With shared roots, ``label:id``
        (a hit's ``ref``) is that root's memory; a bare id is this root's,
        else the one shared root's that holds it. Raises ``NotFound`` (a ``KeyError``).

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("用户喜欢简短的回答", title="偏好")
        >>> repo.get(e.id).title, repo.get(e.name).id == e.id
        ('偏好', True)
        """
        return shared.get(self.roots, id)

    def __contains__(self, id: object) -> bool:
        return reads.knows(self.store, id)

    def __len__(self) -> int:
        return reads.count(self.store)

    def __iter__(self) -> Iterator[Entry]:
        return iter(self.list())

    def list(self, *, layer: str | Iterable[str] | None = None, room: str | None = None,
             tags: str | Iterable[str] | None = None, kind: str | Iterable[str] | None = None,
             status: str | None = None, since: Any = None, until: Any = None, sort: str = "path",
             limit: int | None = None, tag: str | Iterable[str] | None = None,
             entity: str | None = None) -> builtins.list[Entry]:
        """Memories that match every filter given (``tags``: one tag or a list,
        all required; ``tag`` is the same), ordered by ``sort``: 'path', or
        'updated' / 'created' newest first; at most ``limit``. ``since`` and
        ``until`` bound the updated time (as in ``search``). ``entity``: the
        memories that name that person, by any of their names (their
        ``entities`` property, or a known person's name in their text). Purged (and erased)
        memories are listed only when asked for: ``status="purged"``. An
        unknown layer, kind or status is ``InvalidInput`` naming the allowed values.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = repo.add("a", kind="fact", room="work"); _ = repo.add("b", kind="rule")
        >>> [e.kind for e in repo.list(room="work")]
        ['fact']
        """
        return reads.list_entries(self.store, layer=layer, room=room, tags=tags, kind=kind, status=status,
                                  since=since, until=until, sort=sort, limit=limit, tag=tag, entity=entity)

    def search(self, query: str, *, limit: int = 10, layer: str | Iterable[str] | None = None,
               room: str | None = None, tags: Iterable[str] | None = None,
               kind: str | Iterable[str] | None = None, since: Any = None, until: Any = None,
               include_archive: bool = False, include_superseded: bool = False,
               record: bool = True, explain: bool = False,
               entity: str | None = None) -> builtins.list[SearchHit]:
        """Memories that share words with ``query`` (or with the memories that
        answer it), best first.

        Three rankings — words (jieba + Latin words, BM25), rare terms (the
        summed IDF of the query words a memory has) and CJK character bigrams
        (BM25) — fused by reciprocal rank, and a fourth, pseudo-relevance
        feedback: the query plus the telling words of the first results, ranked
        by the word lane (the policy's ``feedback_*`` settings). A memory with
        no term of the query or of that expansion is never returned, and the
        feedback lane never takes every place from the direct matches; strength
        and recency only break ties. Only what is
        current is found: ``archive/`` (and archived memories) only with
        ``include_archive=True`` (or ``layer='archive'``), superseded memories
        only with ``include_superseded=True`` (a hit then names its successor in
        ``hit.superseded_by``), purged memories never. ``since``/``until`` bound
        the updated time (datetimes, dates or ISO 8601; without an offset, in the
        root's timezone; or ``7d``, ``12h``, ``today``, ``yesterday``). Each
        memory returned with direct evidence for the query (``hit.direct``: a
        term of the query's own, or the semantic lane's similarity) counts as
        recalled; one brought only by the expansion is shown, never counted
        (``record=False`` to count none; the CLI records only with
        ``--record``). ``explain=True`` gives each hit
        an ``explain`` dict (also in ``to_dict()``): its rank in each lane, the
        query terms it matched, the query's expansion terms and those it matched.
        ``entity`` keeps the memories that name that person (``list`` has it too).
        With shared roots (``Repository(shared=...)``) every root is searched
        and the hits ranked together (by the summed rarity of the query's
        terms each holds, counted over all the roots; each root's own order
        kept); a shared root's hit names it (``hit.root``, ``hit.ref``) and
        is never recorded.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("Deploys go through ArgoCD.", title="Deploy tool", kind="fact")
        >>> [(h.entry.title, h.terms) for h in repo.search("deploy", record=False)]
        [('Deploy tool', ('Deploy',))]
        """
        return shared.search(self.roots, query, limit=limit, layer=layer, room=room, tags=tags, kind=kind,
                             since=since, until=until, include_archive=include_archive,
                             include_superseded=include_superseded, record=record, explain=explain,
                             entity=entity)

    def links_to(self, id: str) -> builtins.list[Entry]:
        """Backlinks: the memories whose links (frontmatter or body) name this one.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> a = repo.add("Mobile apps cannot keep a secret.", title="no secrets on mobile")
        >>> b = repo.add("Use PKCE on mobile.", title="PKCE", links=[a.name])
        >>> [e.title for e in repo.links_to(a.id)]
        ['PKCE']
        """
        return reads.links_to(self.store, id)

    def stats(self) -> dict[str, Any]:
        """Counts by layer, kind and room; problems; index size.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = repo.add("x", kind="fact")
        >>> repo.stats()["kinds"]
        {'fact': 1}
        """
        return reads.stats(self.store)

    def recalled(self, ids: Iterable[str]) -> None:
        """Count these memories (ids or names) as recalled: what an agent was
        shown of its own accord (MCP ``recall`` counts the hits it shows, the
        memory tool a ``view`` of a note; DESIGN, "What counts as a recall").
        One recall per memory a day, as for a search; a memory not (or no
        longer) known is skipped. A read-only root records nothing, nor does
        a shared root's memory (``label:id``, a hit's ``ref``).

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("Deploys go through ArgoCD.", kind="fact")
        >>> repo.recalled([e.id]); repo.strength(e.id).recalls
        1
        """
        return shared.recalled(self.roots, ids)

    def locate(self, path: str, *, memory_path: str | None = None) -> Entry:
        """The memory at ``path`` (relative to the root), or where it went:
        else the memory whose file name is the path's (moved by metabolize or
        a person), else the one whose ``memory_path`` field is
        ``memory_path`` (the memory tool's path of a note it created; a
        current memory first, then the newest).
        Raises ``NotFound``, ``Ambiguous`` for a file name several notes have.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("Use PKCE on mobile.", title="pkce", kind="rule")
        >>> _ = repo.move(e.id, "sediment")
        >>> repo.locate(f"shallow/{e.name}.md").path == f"sediment/{e.name}.md"
        True
        """
        return reads.locate(self.store, path, memory_path=memory_path)

    def markdown(self, id: str) -> str:
        """The memory's file as it is on disk, frontmatter and all (every
        byte a person typed; what is not UTF-8 shows as U+FFFD). Not a recall.
        ``label:id`` reads a shared root's memory (as ``get``).

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("likes green tea", title="tea")
        >>> repo.markdown(e.id).splitlines()[0], repo.markdown(e.id).endswith("likes green tea\\n")
        ('---', True)
        """
        return shared.markdown(self.roots, id)

    def report(self, kind: str = "patrol") -> str | None:
        """The latest report as text: ``'patrol'`` (the newest file of
        ``_system/patrol/``) or ``'map'`` (``MAP.md``, policy ``map_file``,
        whoever wrote it); None while there is none. Writes nothing.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> repo.report() is None
        True
        >>> _ = repo.patrol(now="2027-01-01T09:00:00+00:00"); repo.report().splitlines()[0]
        '# Patrol 2027-01-01'
        """
        return reads.report(self.store, kind)
