"""``Repository``: the one front door. It wires the parts together and gives
each verb its signature and documentation; the work is done elsewhere:

* ``view`` — the memories in memory (by id, path, name), the index, problems;
* ``store`` — the writer lock, the journal, atomic and journaled writes;
* ``reads``, ``writes``, ``metabolism``, ``health`` — the verbs themselves;
* ``watch`` — keeping the view current while people edit the folder.

Writers take the lock; readers never do. Reading never writes a memory file.
"""

from __future__ import annotations

import builtins
import contextlib
import datetime as _dt
import os
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from .agent import about as _about
from .agent import profile as _profile
from .agent import conflicts
from .agent import context as _context
from .verbs import health
from .verbs import metabolism
from .agent import palace
from .agent import patrol
from .verbs import reads
from .agent import sources
from .sync import sync as _sync
from .sync.sync import SyncResult
from .agent import working
from .verbs import writes
from .search import tokenize as T
from .model.entry import Entry
from .errors import InvalidInput
from .disk.files import WriterLock
from .disk.journal import Feed, Journal
from .agent.about import About
from .agent.profile import Profile
from .agent.context import Context
from .model.lifecycle import Strength
from .agent.conflicts import ConflictPair
from .verbs.metabolism import Plan
from .agent.palace import Palace
from .agent.patrol import Report
from .disk.policyfile import load as load_policy
from .search.query import SearchHit
from .agent.sources import LLM, Consolidation, Source, Turn
from .disk.shared import SharedUsage
from .semantic.embedding import Choice
from .semantic.lane import Semantic, semantic_lane
from .store.store import Store
from .store.system import SYSTEM, open_system
from .disk.usage import UsageLog
from .progress import Progress
from .model.problem import Problem
from .view.view import View
from .view.watch import Callback, Watching
from .agent.workstate import Mood, Observed, Working


class Repository:
    """A memory root on disk.

    >>> import tempfile
    >>> with Repository(tempfile.mkdtemp()) as repo:
    ...     e = repo.add("移动端登录用 PKCE，不再下发 client secret", tags=["auth", "移动端"])
    ...     [h.entry.id == e.id for h in repo.search("移动")]
    [True]

    Parameters (keyword-only after ``root``): ``create`` (default True) makes the
    folders and policy file of a new root; ``policy`` overrides keys of
    ``policy.yaml`` for this process (tests shrink timeouts this way);
    ``watch=True`` starts a watcher at once (see ``watch``); ``progress(stage,
    done, total)`` is told how long work goes (a cold open of a large root:
    'open'; applying a plan: 'metabolize'; reading every note in ``check``:
    'check'), about a hundred times a job.
    ``semantic`` switches the semantic lane on (``True``: the bundled model of
    the ``sediment[semantic]`` extra; or any embedder callable ``texts ->
    array``; default: the policy's ``semantic`` key); see ``embed``.

    Raises ``PolicyFileError`` for an invalid policy file, ``LockTimeout`` when
    another writer holds the lock during recovery for too long, ``NotFound``
    for a missing root with ``create=False``, ``StorageError`` when the root
    cannot be made.

    A root on read-only media opens for reading: every write raises
    ``StorageError``, searches record no recalls, and ``check()`` says what
    could not run. A symlink inside ``_system/`` is not followed: ``check()``
    names it and what needed it is off until a person fixes it.

    The parts are public for feature code and tests: ``view`` (read-only: the
    entries, the index), ``store`` (journaled writes), ``usage`` (recall and
    confirmation records), ``policy`` (the settings, frozen), ``semantic``
    (the semantic lane, or None).
    """

    def __init__(self, root: str | os.PathLike[str], *, create: bool = True,
                 policy: Mapping[str, Any] | None = None, watch: bool = False,
                 progress: Progress | None = None, semantic: Choice = None) -> None:
        self.root = Path(root).absolute()
        parts = open_system(self.root, create=create)  # what of _system/ may be used
        system = self.root / SYSTEM
        self.policy = load_policy(system / "policy.yaml" if parts.usable("policy") else None, policy,
                                  create=parts.writes_off is None)
        lock = WriterLock.for_path(system / "lock")
        journal = Journal(system / "journal.log", off=parts.link_reason("journal"))
        self.usage = UsageLog(system / "usage", self.policy.lock_timeout_seconds,
                              readable=parts.usable("usage"), refused=parts.refusal("usage"), tz=self.policy.tz)
        if parts.usable("usage"):  # decisions count the other machines' synced usage too
            self.usage.others = SharedUsage(self.root, system / "usage").others
        cache = system / "cache" if parts.usable("cache") else None
        self.view = View(self.root, tokenizer=T.shared(cache if parts.writable("cache") else None),
                         feed=Feed(journal), snapshot_path=cache / "index.bin" if cache else None,
                         writer_lock=lock, policy=self.policy, save_snapshots=parts.writable("cache"))
        self.view.progress = progress
        self.store = Store(self.root, self.policy, self.view, lock=lock, journal=journal, usage=self.usage,
                           parts=parts)
        self._closed = False
        self._watching = Watching(self.view)
        sweep_owed = health.recover_at_open(self.store)
        self.view.load_all()
        self.view.ready = True
        if sweep_owed:
            health.sweep_at_open(self.store)
        self.semantic = semantic_lane(self.view, self.policy, semantic, cache if parts.writable("cache") else None)
        if watch:
            self._watching.start()

    @property
    def semantic(self) -> Semantic | None:
        """The semantic lane (None: off). Set, it is wired into the view,
        whose searches (search, context, about) then fuse it; None takes it
        out (the same root, lexical only)."""
        return self._semantic

    @semantic.setter
    def semantic(self, lane: Semantic | None) -> None:
        self._semantic = lane
        self.view.lanes = [lane.lanes] if lane is not None else []

    def __enter__(self) -> "Repository":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Repository({str(self.root)!r}, memories={len(self.view)})"

    def close(self) -> None:
        """Stop watching and save the derived cache. The repository stays readable.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> repo.close(); len(repo)
        0
        """
        self._watching.stop()
        if self.semantic is not None:
            self.semantic.close()
        if not self._closed:
            self.store.save_view()
            self._closed = True

    # ------------------------------------------------------------------ watching

    def watch(self, on_change: Callback | None = None) -> contextlib.AbstractContextManager[Repository]:
        """Keep the index current while files change behind the library's back
        (an editor, Obsidian, ``git pull``), until the block ends.

        ``on_change(what, path)`` is called from the watcher thread for each
        change applied; ``what`` is 'changed', 'removed', 'invalid' or 'rescan'.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> with repo.watch():
        ...     pass
        """
        return self._watching.during(self, on_change)

    def refresh(self) -> dict[str, int]:
        """Rescan the root for changes made behind the library's back (an editor,
        git, a file manager): stat every file, re-read only what changed.
        Returns counts of added, changed and removed files.

        >>> import tempfile, pathlib
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", title="note")
        >>> (repo.root / e.path).unlink()
        >>> repo.refresh()
        {'added': 0, 'changed': 0, 'removed': 1}
        """
        return self.view.refresh()

    # ------------------------------------------------------------------ reading

    def get(self, id: str) -> Entry:
        """The memory with this id (or name). Raises ``NotFound`` (a ``KeyError``).

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("用户喜欢简短的回答", title="偏好")
        >>> repo.get(e.id).title, repo.get(e.name).id == e.id
        ('偏好', True)
        """
        return reads.get(self.store, id)

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
        ``until`` bound the updated time. ``entity``: the memories that name
        that person, by any of their names (their ``entities`` property, or a
        known person's name in their text). An unknown layer, kind or status is
        ``InvalidInput`` naming the allowed values.

        >>> import tempfile
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
        the updated time (aware datetimes or ISO 8601 with an offset). Each
        memory returned counts as recalled (``record=False`` to not count; the
        CLI records only with ``--record``). ``explain=True`` gives each hit
        an ``explain`` dict (also in ``to_dict()``): its rank in each lane, the
        query terms it matched, the query's expansion terms and those it matched.
        ``entity`` keeps the memories that name that person (``list`` has it too).

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("Deploys go through ArgoCD.", title="Deploy tool", kind="fact")
        >>> [(h.entry.title, h.terms) for h in repo.search("deploy", record=False)]
        [('Deploy tool', ('deploy',))]
        """
        return reads.search(self.store, query, limit=limit, layer=layer, room=room, tags=tags, kind=kind,
                            since=since, until=until, include_archive=include_archive,
                            include_superseded=include_superseded, record=record, explain=explain,
                            entity=entity)

    def links_to(self, id: str) -> builtins.list[Entry]:
        """Backlinks: the memories whose links (frontmatter or body) name this one.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> a = repo.add("Mobile apps cannot keep a secret.", title="no secrets on mobile")
        >>> b = repo.add("Use PKCE on mobile.", title="PKCE", links=[a.name])
        >>> [e.title for e in repo.links_to(a.id)]
        ['PKCE']
        """
        return reads.links_to(self.store, id)

    def stats(self) -> dict[str, Any]:
        """Counts by layer, kind and room; problems; index size.

        >>> import tempfile
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
        longer) known is skipped. A read-only root records nothing.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("Deploys go through ArgoCD.", kind="fact")
        >>> repo.recalled([e.id]); repo.strength(e.id).recalls
        1
        """
        return reads.recalled(self.store, ids)

    def locate(self, path: str, *, memory_path: str | None = None) -> Entry:
        """The memory at ``path`` (relative to the root), or where it went:
        else the memory whose file name is the path's (moved by metabolize or
        a person), else the one whose ``memory_path`` field is
        ``memory_path`` (the memory tool's path of a note it created).
        Raises ``NotFound``, ``Ambiguous`` for a file name several notes have.

        >>> import tempfile
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

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("likes green tea", title="tea")
        >>> repo.markdown(e.id).splitlines()[0], repo.markdown(e.id).endswith("likes green tea\\n")
        ('---', True)
        """
        return reads.markdown(self.store, id)

    def report(self, kind: str = "patrol") -> str | None:
        """The latest report as text: ``'patrol'`` (the newest file of
        ``_system/patrol/``) or ``'map'`` (``MAP.md``, policy ``map_file``,
        whoever wrote it); None while there is none. Writes nothing.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> repo.report() is None
        True
        >>> _ = repo.patrol(now="2027-01-01T09:00:00+00:00"); repo.report().splitlines()[0]
        '# Patrol 2027-01-01'
        """
        return reads.report(self.store, kind)

    # ------------------------------------------------------------------ writing

    def add(self, text: str, *, title: str | None = None, room: str | None = None,
            tags: Iterable[str] = (), kind: str | None = None, value: float | None = None,
            source: str | None = None, links: Iterable[str] = (), layer: str = "shallow",
            now: _dt.datetime | str | None = None, entities: Mapping[str, Any] | None = None,
            **fields: Any) -> Entry:
        """Write a new memory and return it.

        ``text`` is the markdown body. ``title`` defaults to the first line of the
        text. ``kind`` is one of the policy's kinds; missing or unknown → ``inbox``,
        marked ``unclassified``. ``value`` 0–1, or ``weights={'importance': 1–5, …}``.
        ``links`` are names (or ``[[name]]``) of other memories. Structured
        reasoning goes in ``evidence``, ``hesitation``, ``conclusion``; narrative in
        ``context``, ``gesture``, ``direction`` (strings or lists): they are written
        as markdown sections. Other keyword fields (``event``, ``source_links``, …)
        are stored in the frontmatter as given. ``now`` sets the creation time
        (timezone-aware; for importing older memories). ``entities`` names the
        people (organisations, places) the memory is about, each with its role(s):
        ``{"张三": "审查", "Alice": ["decided", "deployed"]}``.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("Use PKCE on mobile.", title="PKCE", kind="rule", tags=["auth"],
        ...              evidence=["mobile apps cannot keep a secret"], entities={"Alice": "decided"})
        >>> e.path == f"shallow/pkce-{e.id[-4:].lower()}.md", e.kind, e.sections["evidence"], e.meta["entities"]
        (True, 'rule', '- mobile apps cannot keep a secret', {'Alice': 'decided'})

        Raises ``InvalidInput``/``UnsafePath`` for bad arguments, ``TooLarge`` over
        the body limit, ``PolicyError`` beyond the core cap; nothing is written then.
        """
        return writes.add(self.store, text, title=title, room=room, tags=tags, kind=kind, value=value,
                          source=source, links=links, layer=layer, now=now, entities=entities, **fields)

    def update(self, id: str, *, expected: str | None = None, **changes: Any) -> Entry:
        """Change a memory in place (its file name and folder stay).

        ``changes`` may set ``text`` (the main text; sections are kept unless
        given), ``title``, ``tags``, ``kind``, ``value``, ``links``, ``source``,
        section names, and other frontmatter fields (``None`` removes one).
        ``expected`` is the ``version`` the caller read: if the file changed since
        (another process, or a person in an editor), ``Conflict`` is raised and
        nothing is written.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("draft", title="t")
        >>> e2 = repo.update(e.id, expected=e.version, text="final")
        >>> repo.update(e.id, expected=e.version, text="lost update")
        Traceback (most recent call last):
        ...
        sediment.errors.Conflict: ...
        """
        return writes.update(self.store, id, expected=expected, **changes)

    def edit(self, id: str, change: Callable[[str], str], *, expected: str | None = None) -> Entry:
        """Rewrite a memory's body, sections and all, with ``change(body)``:
        ``body`` is what the file holds now, and the writer lock is held from
        reading it to writing the result, so no one's edit falls in between.
        The frontmatter keeps every field but ``updated``. With ``expected``
        (a version read), a memory changed since is ``Conflict``; a body
        that would not read back as written (it would break the note's
        frontmatter) is ``InvalidInput``; what ``change`` raises is raised.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("Deploys go through ArgoCD.", kind="fact")
        >>> repo.edit(e.id, lambda body: body.replace("ArgoCD", "Flux"), expected=e.version).body
        'Deploys go through Flux.\\n'
        """
        return writes.edit(self.store, id, change, expected=expected)

    def move(self, id: str, layer: str, *, room: str | None = None, reason: str | None = None) -> Entry:
        """Move a memory to another layer (and/or room; the room is kept unless
        given). The file name stays, so ``[[name]]`` links keep working. A move
        sets ``reason`` (the one given, or none) and the status its target
        implies (archive → archived), nothing else; an archived, superseded or
        purged memory comes back only through ``restore``.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", title="note", room="auth")
        >>> repo.move(e.id, "sediment").path == f"sediment/auth/{e.name}.md"
        True
        """
        return writes.move(self.store, id, layer, room=room, reason=reason)

    def archive(self, id: str, *, reason: str) -> Entry:
        """Move a memory to ``archive/`` with status ``archived`` and the reason.
        Archived memories are searched only when asked (``include_archive``).

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("old phone number", kind="fact")
        >>> a = repo.archive(e.id, reason="changed")
        >>> a.layer, a.status, repo.search("phone", record=False)
        ('archive', 'archived', [])
        """
        return writes.archive(self.store, id, reason=reason)

    def purge(self, id: str, *, confirm: bool = False, reason: str = "purged", erase: bool = False) -> Entry:
        """Retire a memory for good: it moves to ``archive/`` marked ``purged`` and
        is no longer found by any search. Nothing is deleted (a person can still
        read, restore or delete the file). With ``erase=True`` (a secret written
        by mistake) only a tombstone stays: id, name, reason and dates, no text,
        tags or other fields, so links do not dangle (git history still has the
        text: README, "Erasing a memory").

        Needs ``confirm=True`` (policy ``confirm_destructive``) and counts against
        ``destructive_per_hour``; a refused or failed call changes nothing and
        uses up nothing. Raises ``PolicyError``.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("wrong fact", kind="fact")
        >>> repo.purge(e.id, confirm=True).status
        'purged'
        """
        return writes.purge(self.store, id, confirm=confirm, reason=reason, erase=erase)

    def restore(self, id: str, *, layer: str = "shallow", confirm: bool = False) -> Entry:
        """Bring an archived or superseded memory back to an active status in
        ``layer``; status and reason are reset. The only way back to active.
        A purged memory needs ``confirm=True`` (``list(status="purged")`` finds
        them); an erased one cannot come back.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("the office is on floor 3", kind="fact")
        >>> _ = repo.archive(e.id, reason="moved offices")
        >>> r = repo.restore(e.id)
        >>> r.layer, r.status, "reason" in r.meta
        ('shallow', 'active', False)
        """
        return writes.restore(self.store, id, layer=layer, confirm=confirm)

    # ------------------------------------------------------------------ lifecycle

    def strength(self, id: str, *, now: _dt.datetime | str | None = None) -> Strength:
        """How strong a memory is now, with the parts of the number
        (``.explain()`` says it in a sentence).

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", kind="fact", value=0.8)
        >>> repo.strength(e.id).strength
        0.8
        """
        return metabolism.strength(self.store, id, now=now)

    def touch(self, id: str, outcome: str, *, confirm: bool = False,
              now: _dt.datetime | str | None = None) -> Entry:
        """Record a confirmation (the memory proved right: stronger, counts as use)
        or a refutation (it proved wrong: archived at the next metabolize, or at
        once with ``confirm=True``). The note's file does not change until then.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", kind="fact")
        >>> _ = repo.touch(e.id, "confirm"); repo.strength(e.id).confirms
        1
        """
        return writes.touch(self.store, id, outcome, confirm=confirm, now=now)

    def supersede(self, old_id: str, new_id: str, reason: str = "superseded") -> Entry:
        """Retire ``old_id`` in favour of ``new_id``: the old memory gets status
        ``superseded`` and a ``superseded_by`` link, the new one a ``supersedes``
        link. Both texts stay as written; the old one goes to archive at the next
        metabolize. Journaled: a crash between the two files is finished on open.
        Returns the old memory as it is now.

        >>> import tempfile
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

        >>> import tempfile
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

        >>> import tempfile, datetime as dt
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", kind="fact", value=0.9)
        >>> later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2)
        >>> [(m.source, m.target) for m in repo.metabolize(now=later).moves]
        [('shallow', 'sediment')]
        """
        return metabolism.metabolize(self.store, dry_run=dry_run, now=now, confirm=confirm)

    # ------------------------------------------------------------------ for the agent

    def context(self, query: str | None = None, *, budget: int = 6000,
                now: _dt.datetime | str | None = None) -> Context:
        """One markdown block for a system prompt, at most ``budget`` Unicode
        characters: who I am (core and bedrock, within policy
        ``context_core_share`` of the budget), unfinished business (working
        memory), what ``query`` reminds me of (hits over the relevance floor,
        one hop along their links, newer memories of their events), and the
        strongest of the rest. An item that does not fit is skipped and the
        next tried; each header says how many were left out. Only the injected
        "reminds me of" items count as recalled (once per memory a day); the
        same root, query and ``now`` give the same block, call after call.
        ``ctx.items``, ``ctx.omitted``, ``ctx.size`` and ``ctx.tokens`` are for
        programs.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = repo.add("Answer in short sentences.", title="How I answer", kind="core")
        >>> _ = repo.add("Deploys go through ArgoCD.", title="Deploy tool", kind="fact")
        >>> ctx = repo.context("how do we deploy", budget=2000)
        >>> [(i.section, i.snippet) for i in ctx.items]
        [('core', 'How I answer: Answer in short sentences.'), ('reminds', 'Deploy tool: Deploys go through ArgoCD.')]
        >>> ctx.size <= 2000, str(ctx).splitlines()[0]
        (True, '<memories>')
        """
        return _context.build(self.store, query, budget=budget, now=now)

    def observe(self, text: str, *, now: _dt.datetime | str | None = None) -> Observed:
        """Read a message for todos and promises (zh and en plain patterns:
        记得, 别忘了, 答应过, remember to, I'll … tomorrow, TODO: …) and
        for "done" (做完了, 已经发了, done, sent, fixed …), which closes the
        open item it shares most words with. At most policy ``working_items``
        (3) are open, a new one replacing the oldest; one not mentioned for
        ``working_days`` (3) days is gone. Kept in ``_system/working/``, not as
        memories.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> [i.text for i in repo.observe("好的。别忘了明天给老王发报价单！").opened]
        ['别忘了明天给老王发报价单！']
        >>> [i.text for i in repo.observe("报价单已经发给老王了").closed]
        ['别忘了明天给老王发报价单！']
        """
        return working.observe(self.store, text, now=now)

    def working(self, *, now: _dt.datetime | str | None = None) -> Working:
        """The open todos and promises (oldest first) and the mood, as they are
        at ``now``. Reads only.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = repo.observe("Remember to rotate the API keys on Friday.")
        >>> [i.text for i in repo.working().items]
        ['Remember to rotate the API keys on Friday.']
        """
        return working.working(self.store, now=now)

    def mood(self, text: str, *, now: _dt.datetime | str | None = None) -> Mood | None:
        """Set the mood (one state, overwritten by the next) for policy
        ``mood_hours`` (6); ``mood("")`` clears it. Shown in the context block.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> repo.mood("有点累，回答简短些").text, repo.working().mood.text
        ('有点累，回答简短些', '有点累，回答简短些')
        """
        return working.set_mood(self.store, text, now=now)

    def about(self, topic: str, *, now: _dt.datetime | str | None = None) -> About:
        """What do I know about ``topic``: the memories on it (current,
        superseded and archived), each with recalls, confirmations and
        refutations, layer, lifecycle state, what replaced it and its
        evidence; ``summary`` says the counts in one paragraph. Not a recall;
        writes nothing.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> a = repo.add("Deploys go through ArgoCD.", title="Deploy tool", kind="fact")
        >>> b = repo.add("Deploys go through Flux now.", title="Deploy tool, new", kind="fact")
        >>> _ = repo.supersede(a.id, b.id)
        >>> [(k.title, k.status) for k in repo.about("deploys").memories]
        [('Deploy tool', 'superseded'), ('Deploy tool, new', 'active')]
        >>> repo.about("deploys").summary.split(";")[0]
        "About 'deploys': 2 memories (1 active, 1 superseded"
        """
        return _about.about(self.store, topic, now=now)

    def profile(self, name: str) -> Profile:
        """What the memory holds about one person, by any of their names: their
        note of kind ``person`` (its first lines), then the current memories that
        name them, grouped as decisions, open items, impressions and facts, with
        their roles counted. Not a recall; writes nothing. ``InvalidInput`` for
        no name.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = repo.add("管支付系统。", title="张三", kind="person", aliases=["老张"])
        >>> _ = repo.add("老张审查了回调重试", kind="event", entities={"张三": "审查"})
        >>> _ = repo.add("张三拍板：回调最多重试三次", kind="rule", entities={"张三": "拍板"})
        >>> p = repo.profile("老张")
        >>> p.name, p.summary, p.roles, [m.title for m in p.decisions], [m.title for m in p.facts]
        ('张三', '管支付系统。', {'审查': 1, '拍板': 1}, ['张三拍板：回调最多重试三次'], ['老张审查了回调重试'])
        """
        return _profile.profile(self.store, name)

    # ------------------------------------------------------------------ health

    def recover(self) -> dict[str, int]:
        """Finish or undo operations a crash interrupted, and sweep temp files.

        For an interrupted move: if the new file is there, the old one is removed
        (roll forward: the new file was complete before the old was touched);
        otherwise the old one stays where it was (roll back). Either way every
        memory exists exactly once. Returns counts.

        >>> import tempfile
        >>> Repository(tempfile.mkdtemp()).recover()
        {'rolled_forward': 0, 'rolled_back': 0, 'temp_removed': 0}
        """
        return health.recover(self.store)

    def adopt(self, path: str) -> Entry:
        r"""Make a note a person wrote (no frontmatter, or no id) a memory: its
        id, times and (when missing) a title from its file name are inserted
        as lines; every other byte of the file stays as it was. ``path`` is
        relative to the root, inside a layer folder.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = (repo.root / "shallow" / "我的想法.md").write_text("周五前发版\n", encoding="utf-8")
        >>> e = repo.adopt("shallow/我的想法.md")
        >>> e.title, e.body, (repo.root / e.path).read_text(encoding="utf-8").endswith("---\n周五前发版\n")
        ('我的想法', '周五前发版\n', True)
        """
        return health.adopt(self.store, path)

    def embed(self) -> dict[str, Any]:
        """Compute the semantic lane's missing vectors now (with progress as
        'embed'), rather than in the background; returns counts and seconds.
        Raises ``InvalidInput`` when the lane is off.

        >>> import tempfile
        >>> def letters(texts):  # any callable texts -> vectors will do
        ...     return [[t.count(c) + 0.01 for c in "aeiou"] for t in texts]
        >>> repo = Repository(tempfile.mkdtemp(), semantic=letters)
        >>> _ = repo.add("a memory"); repo.embed()["embedded"]
        1
        """
        if self.semantic is None:
            raise InvalidInput("the semantic lane is off: Repository(root, semantic=True) or "
                               "'semantic: true' in policy.yaml")
        return self.semantic.embed(self.view.progress)

    def check(self, fix: bool = False) -> builtins.list[Problem]:
        """Problems in the root, each with path, line where known and reason.

        Reported, never repaired: malformed files, duplicate ids and names,
        ``.md`` files outside a layer folder, unfinished journal operations and
        damaged journal lines, temp files; found at open: symlinks in
        ``_system/`` (and what each turns off), a read-only root, recovery that
        could not run. With ``fix=True``, ``recover()`` runs first (finishing
        interrupted operations, sweeping temp files; ``StorageError`` where
        writes are off) and notes in layer folders that only lack an id or
        times are adopted (see ``adopt``); no other file a person wrote is
        rewritten, moved or deleted.

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = (repo.root / "shallow" / "bad.md").write_text("no frontmatter")
        >>> [(p.path, p.severity) for p in repo.check()]
        [('shallow/bad.md', 'error')]
        """
        return health.check(self.store, fix=fix)

    # ------------------------------------------------------------------ hygiene (README, "Hygiene"; no recall)

    def conflicts(self, ids: Iterable[str] | None = None) -> builtins.list[ConflictPair]:
        """Pairs of active memories sharing rare anchors that may disagree (numbers,
        overturn, negation), strongest clue first; only pairs with ``ids`` if given.

        >>> import tempfile
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

        >>> import tempfile
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

        >>> import tempfile
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

        >>> import tempfile
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

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> s = repo.add_source("session-1", [("user", "记得周五发版"), ("assistant", "好的")])
        >>> s.path, [t.link for t in s.turns]
        ('sources/session-1.md', ['[[session-1#^t1]]', '[[session-1#^t2]]'])
        """
        return sources.add_source(self.store, session, turns, now=now)

    def unlinked_sources(self, *, since: Any = None) -> builtins.list[Turn]:
        """Turns of stored sessions no memory's ``source_links`` points to.

        >>> import tempfile
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

        >>> import tempfile
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = repo.add_source("s1", ["部署改用 Flux", "好的"])
        >>> r = repo.consolidate_with(lambda turns: [{"text": "部署用 Flux", "kind": "fact", "turns": ["t1"]}])
        >>> [(e.kind, e.source_links) for e in r.added], [t.id for t in repo.unlinked_sources()]
        ([('fact', ('[[s1#^t1]]',))], ['t2'])
        """
        return sources.consolidate_with(self.store, self.add, llm, since=since)

    # ------------------------------------------------------------------ machines

    def sync(self, *, remote: str | None = None, push: bool = True) -> SyncResult:
        """Share this memory with its other machines through git: commit the
        root's pending changes, pull (merging notes by rule, never letting git
        guess a layer), repair what the merge broke, push. See README,
        "Several machines". Raises ``StorageError`` outside a git repository,
        ``Conflict`` when a file other than a note needs a person.

        >>> import tempfile
        >>> from sediment.sync.git import git_init
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = git_init(repo.root)
        >>> _ = repo.add("周五前发版", kind="fact")
        >>> r = repo.sync(); r.committed, r.remote, r.conflicts
        (1, None, [])
        """
        return _sync.sync(self.store, remote=remote, push=push)
