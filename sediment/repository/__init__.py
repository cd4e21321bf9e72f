"""``Repository``: the one front door. It wires the parts together and gives
each verb its signature and documentation; the work is done elsewhere:

* ``view`` — the memories in memory (by id, path, name), the index, problems;
* ``store`` — the writer lock, the journal, atomic and journaled writes;
* ``verbs``, ``agent``, ``sync`` — the verbs themselves;
* ``watch`` — keeping the view current while people edit the folder.

This module opens and wires; the verbs are the class's groups, one module each
(``reading``, ``writing``, ``lifecycle``, ``agent``, ``health``, ``hygiene``,
``exchange``),
every verb its documentation and one statement handing the call on.

Writers take the lock; readers never do. Reading never writes a memory file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..disk.files import WriterLock
from ..disk.journal import Feed, Journal
from ..disk.policyfile import load as load_policy
from ..disk.shared import SharedUsage
from ..disk.usage import UsageLog
from ..progress import Progress
from ..search import tokenize as T
from ..store.store import Store
from ..store.system import SYSTEM, open_system
from ..verbs.health import recover_at_open, sweep_at_open
from ..verbs.shared import Roots, labelled
from ..view.view import View
from ..view.watch import Watching
from .agent import ForAgent
from .exchange import Exchange
from .health import Health
from .hygiene import Hygiene
from .lifecycle import Lifecycle
from .reading import Reading
from .writing import Writing
from .part import Later

if TYPE_CHECKING:  # (the semantic lane's code is imported only when a root asks for the lane)
    from ..semantic import lane as _lane
    from ..semantic.embedding import Choice
    from ..semantic.lane import Semantic
else:
    _lane = Later("sediment.semantic.lane")


class Repository(Reading, Writing, Lifecycle, ForAgent, Health, Hygiene, Exchange):
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
    the ``[semantic]`` extra; or any embedder callable ``texts ->
    array``; default: the policy's ``semantic`` key); see ``embed``.
    ``read_only=True`` opens the root for reading only, whatever its
    permissions: nothing in it is written (no layout, recovery, cache or
    recall), every write raises ``StorageError``.
    ``shared``: other roots read through this one (paths, or a mapping label
    → path; a path's label is its folder's name): search, context, about and
    profile read them all, ranked together, each hit naming its root
    (``hit.root``, and ``hit.ref``, ``label:id``, for ``get``); they are
    opened read-only (``self.shared``, label → ``Repository``), and writes,
    recalls, metabolism, check and sync are this root's alone.

    Raises ``PolicyFileError`` for an invalid policy file, ``LockTimeout`` when
    another writer holds the lock during recovery for too long, ``NotFound``
    for a missing root with ``create=False`` (or a missing shared root),
    ``StorageError`` when the root cannot be made, ``InvalidInput`` for a
    shared root's label that is not a plain name, is given twice, or a shared
    root that is this one.

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
                 progress: Progress | None = None, semantic: Choice = None, read_only: bool = False,
                 shared: Iterable[str | os.PathLike[str]] | Mapping[str, str | os.PathLike[str]] | None = None
                 ) -> None:
        self.root = Path(root).absolute()
        others = labelled(self.root, shared)  # (checked before anything is opened)
        # what of _system/ may be used
        parts = open_system(self.root, create=create and not read_only, read_only=read_only)
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
        sweep_owed = recover_at_open(self.store)
        self.view.load_all()
        self.view.ready = True
        if sweep_owed:
            sweep_at_open(self.store)
        chosen = self.policy.semantic if semantic is None else semantic
        self.semantic = (None if chosen is None or chosen is False
                         else _lane.semantic_lane(self.view, self.policy, semantic,
                                                  cache if parts.writable("cache") else None))
        if watch:
            self._watching.start()
        # each root its own lock, journal, usage and metabolism; these are read, never written
        self.shared: dict[str, Repository] = {}
        try:
            for label, path in others.items():
                self.shared[label] = Repository(path, create=False, policy=policy, watch=watch, progress=progress,
                                                semantic=semantic, read_only=True)
        except BaseException:
            self.close()
            raise
        self.roots = Roots(self.store, {label: r.store for label, r in self.shared.items()})

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
        for other in getattr(self, "shared", {}).values():  # (a failed open closes what it opened)
            other.close()
        self._watching.stop()
        if self.semantic is not None:
            self.semantic.close()
        if not self._closed:
            self.store.save_view()
            self._closed = True
