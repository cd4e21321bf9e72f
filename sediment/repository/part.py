"""What every group of the front door's verbs reaches: the parts ``Repository``
wires in its ``__init__`` (the groups are its bases, one module each)."""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..disk.usage import UsageLog
    from ..model.policy import Policy
    from ..semantic.lane import Semantic
    from ..store.store import Store
    from ..view.view import View
    from ..verbs.shared import Roots
    from ..view.watch import Watching


class Part:
    """The wired parts, as the verb groups see them (set by ``Repository``)."""

    root: Path
    policy: Policy
    view: View
    store: Store
    usage: UsageLog
    _watching: Watching
    roots: Roots  # the own root's store and the shared roots' (read only)

    @property
    def semantic(self) -> Semantic | None:
        """The semantic lane, or None (``Repository`` sets it)."""
        raise NotImplementedError


class Later:
    """A module a verb group hands its calls to, imported when a verb first
    calls into it rather than when ``sediment`` is imported: a process that
    only searches never loads the agent's, git's or the semantic lane's code
    (a fresh ``sediment search`` pays for what it runs). Each use is one
    ``importlib.import_module`` (a look-up in ``sys.modules`` once imported).
    The group names the same module in an import under ``TYPE_CHECKING``
    beside it, for the type checker and for the structure test's order."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)
