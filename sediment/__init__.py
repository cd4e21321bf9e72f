"""sediment: long-term memory for AI agents, made of plain markdown files.

>>> import tempfile, sediment
>>> repo = sediment.Repository(tempfile.mkdtemp())
>>> note = repo.add("用户喜欢简短的回答", tags=["偏好"], kind="fact")
>>> repo.search("回答")[0].entry.title
'用户喜欢简短的回答'

Every type a verb of ``Repository`` returns is importable from here.
"""

from .model.entry import Entry, parse, render
from .model.names import LAYERS
from .errors import (Ambiguous, Conflict, InvalidInput, LockTimeout, NotFound, ParseError, PolicyError,
                     PolicyFileError, SedimentError, StorageError, TooLarge, UnsafePath)
from .repository import Repository
from .search.query import SearchHit
from .model.problem import Problem
from .model.lifecycle import Strength
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

from ._version import __version__

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
