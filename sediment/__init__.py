"""sediment: long-term memory for AI agents, made of plain markdown files.

>>> import tempfile, sediment
>>> repo = sediment.Repository(tempfile.mkdtemp())
>>> note = repo.add("用户喜欢简短的回答", tags=["偏好"], kind="fact")
>>> repo.search("回答")[0].entry.title
'用户喜欢简短的回答'

Every type a verb of ``Repository`` returns is importable from here.
"""

import importlib as _importlib
import typing as _typing

from .model.entry import Entry, parse, render
from .model.names import LAYERS
from .errors import (Ambiguous, Conflict, InvalidInput, LockTimeout, NotFound, ParseError, PolicyError,
                     PolicyFileError, SedimentError, StorageError, TooLarge, UnsafePath)
from .repository import Repository
from .search.query import SearchHit
from .model.problem import Problem
from .model.lifecycle import Strength
from ._version import __version__

if _typing.TYPE_CHECKING:
    from .verbs.metabolism import Plan
    from .agent.about import About
    from .agent.profile import Profile
    from .agent.proposed import Proposed
    from .agent.attention import Attention
    from .agent.history import History
    from .agent.outlook import Forecast
    from .agent.conflicts import ConflictPair
    from .agent.context import Context
    from .agent.palace import Palace
    from .agent.patrol import Report
    from .agent.sources import Consolidation, Source, Turn
    from .agent.workstate import Mood, Observed, Working
    from .sync.sync import SyncResult

# What the agent's, metabolism's and git's verbs return, imported on first use
# (PEP 562): a process that only searches never loads their code.
_LATER = {
    "Plan": "verbs.metabolism", "About": "agent.about", "Profile": "agent.profile", "Proposed": "agent.proposed",
    "Attention": "agent.attention", "History": "agent.history", "Forecast": "agent.outlook",
    "ConflictPair": "agent.conflicts", "Context": "agent.context", "Palace": "agent.palace",
    "Report": "agent.patrol", "Consolidation": "agent.sources", "Source": "agent.sources",
    "Turn": "agent.sources", "Mood": "agent.workstate", "Observed": "agent.workstate",
    "Working": "agent.workstate", "SyncResult": "sync.sync",
}


def __getattr__(name: str) -> _typing.Any:
    where = _LATER.get(name)
    if where is None:
        raise AttributeError(f"module 'sediment' has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"{__name__}.{where}"), name)
    globals()[name] = value  # (asked once)
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LATER))


__all__ = [
    "Repository",
    "Entry",
    "SearchHit",
    "Problem",
    "parse",
    "render",
    "LAYERS",
    # what the verbs return
    "Strength",
    "Plan",
    "Context",
    "Observed",
    "Working",
    "Mood",
    "About",
    "Profile",
    "Proposed",
    "ConflictPair",
    "Report",
    "Palace",
    "Source",
    "Turn",
    "Consolidation",
    "SyncResult",
    "Forecast",
    "History",
    "Attention",
    # errors
    "SedimentError",
    "NotFound",
    "Ambiguous",
    "Conflict",
    "InvalidInput",
    "UnsafePath",
    "TooLarge",
    "PolicyError",
    "PolicyFileError",
    "ParseError",
    "LockTimeout",
    "StorageError",
    "__version__",
]
