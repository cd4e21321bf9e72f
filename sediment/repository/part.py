"""What every group of the front door's verbs reaches: the parts ``Repository``
wires in its ``__init__`` (the groups are its bases, one module each)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

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
