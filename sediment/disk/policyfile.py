"""Reading ``_system/policy.yaml``: the one piece of I/O of the settings.

Written from the template (every default, with a comment) on first open;
afterwards read, never rewritten. A key left out takes its default; anything
a person can type that is not a valid setting is a ``PolicyFileError`` naming
the key (or the file, when it is not YAML or not text at all).

Where the file may not be read (it is a symlink: ``path`` None) or is missing
and cannot be written (a read-only root), the defaults are used; ``check``
says so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import logging

import yaml

from ..errors import PolicyFileError
from .files import atomic_write
from ..model.policy import Policy, from_mapping, template

log = logging.getLogger("sediment")

# libyaml's parser where PyYAML has it, as notes are read (``entry``): the
# pure-Python one takes ~5 ms for the template, a tenth of a fresh process's open
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(path: Path | None, overrides: Mapping[str, Any] | None = None, *, create: bool = True) -> Policy:
    """Read (or, with ``create``, first write) the policy file, then apply
    ``overrides`` from code (tests shrink timeouts this way). No ``path``:
    the defaults (with the overrides)."""
    if path is None:
        return from_mapping(dict(overrides or {}))
    if create and not path.exists():
        try:
            atomic_write(path, template().encode("utf-8"))
        except OSError as exc:  # the defaults serve as well; the next writable open writes it
            log.debug("cannot write %s: %s", path, exc)
    try:
        raw = yaml.load(path.read_bytes().decode("utf-8"), Loader=_Loader) or {}
    except FileNotFoundError:
        raw = {}
    except UnicodeDecodeError as exc:
        raise PolicyFileError(f"policy.yaml is not UTF-8 text: {exc}", key=None) from exc
    except yaml.YAMLError as exc:
        raise PolicyFileError(f"policy.yaml is not valid YAML: {exc}", key=None) from exc
    except Exception as exc:  # (any: PyYAML's constructors raise plain errors, for deep nesting, 2024-02-30)
        raise PolicyFileError(f"policy.yaml cannot be read: {type(exc).__name__}: {exc}"[:300], key=None) from exc
    if not isinstance(raw, dict):
        raise PolicyFileError("policy.yaml must be a mapping of keys to values", key=None)
    raw.update(overrides or {})
    return from_mapping(raw)
