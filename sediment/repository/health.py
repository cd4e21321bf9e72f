"""The front door's verbs: recovery, adoption of a person's notes, the semantic lane's vectors, check.

``Repository`` (``sediment/repository/__init__.py``) is made of these groups; each
method hands its arguments to the module that does the work, in one statement.
"""

from __future__ import annotations

import builtins
from typing import Any, TYPE_CHECKING

from ..model.entry import Entry
from ..model.problem import Problem
from ..verbs import health
from .part import Later, Part

if TYPE_CHECKING:  # (the modules below are imported when a verb first calls them: part.Later)
    from ..semantic import lane as _lane
else:
    _lane = Later("sediment.semantic.lane")


class Health(Part):
    """Recovery, adoption of a person's notes, the semantic lane's vectors, check."""

    # ------------------------------------------------------------------ health

    def recover(self) -> dict[str, int]:
        """Finish or undo operations a crash interrupted, and sweep temp files.

        For an interrupted move: if the new file is there, the old one is removed
        (roll forward: the new file was complete before the old was touched);
        otherwise the old one stays where it was (roll back). Either way every
        memory exists exactly once. Returns counts.

        >>> import tempfile; from sediment import Repository
        >>> Repository(tempfile.mkdtemp()).recover()
        {'rolled_forward': 0, 'rolled_back': 0, 'temp_removed': 0}
        """
        return health.recover(self.store)

    def adopt(self, path: str, *, kind: str | None = None) -> Entry:
        r"""Make a note a person wrote (no frontmatter, or no id) a memory: its
        id, times and (when missing) a title from its file name and a kind are
        inserted as lines; every other byte of the file stays as it was.
        ``path`` is relative to the root, inside a layer folder. The note keeps
        the kind it declares; one that declares none gets ``kind``, by default
        ``fact`` (a note a person hands over is not an inbox fragment to decay
        in days). A ``kind`` other than the one the note declares, or one the
        policy does not list, is ``InvalidInput``.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = (repo.root / "shallow" / "我的想法.md").write_text("周五前发版\n", encoding="utf-8")
        >>> e = repo.adopt("shallow/我的想法.md")
        >>> e.title, e.kind, e.body, (repo.root / e.path).read_text(encoding="utf-8").endswith("---\n周五前发版\n")
        ('我的想法', 'fact', '周五前发版\n', True)
        """
        return health.adopt(self.store, path, kind=kind)

    def embed(self) -> dict[str, Any]:
        """Compute the semantic lane's missing vectors now (with progress as
        'embed'), rather than in the background; returns counts and seconds.
        Raises ``InvalidInput`` when the lane is off.

        >>> import tempfile; from sediment import Repository
        >>> def letters(texts):  # any callable texts -> vectors will do
        ...     return [[t.count(c) + 0.01 for c in "aeiou"] for t in texts]
        >>> repo = Repository(tempfile.mkdtemp(), semantic=letters)
        >>> _ = repo.add("a memory"); repo.embed()["embedded"]
        1
        """
        return _lane.embed_now(self.semantic, self.view.progress)

    def check(self, fix: bool = False) -> builtins.list[Problem]:
        """Problems in the root, each with path, line where known and reason.

        Reported, never repaired: malformed files, duplicate ids and names,
        ``.md`` files outside a layer folder, unfinished journal operations and
        damaged journal lines, temp files; found at open: symlinks in
        ``_system/`` (and what each turns off), a read-only root, recovery that
        could not run; the semantic lane's vector file when it is damaged (the
        next embedding pass writes it anew) or no regular file (left as it is;
        the lane keeps its vectors in memory). With ``fix=True``, ``recover()``
        runs first (finishing
        interrupted operations, sweeping temp files; ``StorageError`` where
        writes are off) and notes in layer folders that only lack an id or
        times are adopted (see ``adopt``); no other file a person wrote is
        rewritten, moved or deleted.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = (repo.root / "shallow" / "bad.md").write_text("no frontmatter")
        >>> [(p.path, p.severity) for p in repo.check()]
        [('shallow/bad.md', 'error')]
        """
        return health.check(self.store, fix=fix, more=_lane.lane_problems(self.semantic, self.root))
