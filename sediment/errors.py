"""The exception tree. Every error carries a stable ``code`` that the CLI prints
and that callers may match on; the message is for people and may change.

    SedimentError                      base, code "error"
    ├── NotFound(KeyError)             "not_found"     no memory with that id/name
    ├── Ambiguous(LookupError)         "ambiguous"     a name several notes have (lists them)
    ├── Conflict                       "conflict"      stale read, or a person saved during a write (kept)
    ├── InvalidInput(ValueError)       "invalid"       bad argument from the caller
    │   ├── UnsafePath                 "unsafe_path"   would leave the root
    │   └── TooLarge                   "too_large"     body over the policy limit
    ├── PolicyError                    "policy"        refused by policy (confirm, rate, core cap)
    │   └── PolicyFileError(ValueError) "policy_file"  policy.yaml is invalid (names the key)
    ├── ParseError(ValueError)         "parse"         a memory file cannot be read
    ├── LockTimeout(TimeoutError)      "lock_timeout"  another writer held the lock too long
    ├── StorageError(OSError)          "storage"       the file system refused
    ├── Loading                        "loading"       a server is still loading the index (call again)
    └── NotInstalled(ImportError)      "not_installed" an optional extra is missing (the message says which)

Each mixes in the builtin that means the same, so ``except KeyError`` keeps
working for callers who know nothing of sediment. All survive pickling (they
travel between processes in tests and in multiprocessing users).
"""

from __future__ import annotations

from typing import Any

__all__ = [
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
    "Loading",
    "NotInstalled",
    "DISTRIBUTION",
    "install_hint",
]


class SedimentError(Exception):
    code = "error"

    def __init__(self, message: str = "", **details: object) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __reduce__(self) -> tuple[Any, ...]:  # keep details across pickling
        return (_rebuild, (type(self), self.message, self.details))

    def __str__(self) -> str:
        return self.message


def _rebuild(cls: type[SedimentError], message: str, details: dict[str, Any]) -> SedimentError:
    return cls(message, **details)


class NotFound(SedimentError, KeyError):
    code = "not_found"

    def __str__(self) -> str:  # KeyError would repr() the message
        return self.message


class Ambiguous(SedimentError, LookupError):
    """A name (``get(name)``) that several notes in different folders have;
    ``details['candidates']`` lists their paths, shortest first. Name one by
    its id or as ``folder/name``."""
    code = "ambiguous"


class Conflict(SedimentError):
    code = "conflict"


class InvalidInput(SedimentError, ValueError):
    code = "invalid"


class UnsafePath(InvalidInput):
    code = "unsafe_path"


class TooLarge(InvalidInput):
    code = "too_large"


class PolicyError(SedimentError):
    code = "policy"


class PolicyFileError(PolicyError, ValueError):
    code = "policy_file"


class ParseError(SedimentError, ValueError):
    code = "parse"


class LockTimeout(SedimentError, TimeoutError):
    code = "lock_timeout"


class StorageError(SedimentError, OSError):
    code = "storage"


class Loading(SedimentError):
    code = "loading"


class NotInstalled(SedimentError, ImportError):
    code = "not_installed"


#: This project's name on the package index. The import name stays ``sediment``,
#: but ``sediment`` and ``sediment-*`` on PyPI are other people's projects: an
#: install line that names them installs something else (with its own
#: ``sediment`` command).
DISTRIBUTION = "agent-sediment"


def install_hint(extra: str) -> str:
    """The install line for one optional extra, as every message prints it.

    A checkout installs itself, editable; the index name is given for a
    release, and is the one name there that is this project.

    >>> install_hint("mcp")
    "pip install -e '.[mcp]' in a checkout, or pip install 'agent-sediment[mcp]'"
    """
    return f"pip install -e '.[{extra}]' in a checkout, or pip install '{DISTRIBUTION}[{extra}]'"
