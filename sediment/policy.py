"""Settings that a person may edit: ``_system/policy.yaml``.

Written with the documented defaults (and a comment on each) on first open;
afterwards read, never rewritten. A key left out takes its default; a key with
a wrong type or value raises ``PolicyFileError`` naming it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import yaml

from .errors import PolicyFileError

# Per kind: [grace days, half-life days, archive days]; null = never decays.
DEFAULT_KINDS: dict[str, list[float] | None] = {
    "core": None,
    "fact": [15, 365, 1095],
    "rule": [120, 730, 3650],
    "skill": [15, 60, 365],
    "event": [15, 120, 730],
    "daily-core": [20, 60, 180],
    "daily": [5, 20, 45],
    "mood": [0.125, 1, 3],
    "inbox": [0, 1, 14],
}

DEFAULT_POLICY: dict[str, Any] = {
    "confirm_destructive": True,
    "destructive_per_hour": 30,
    "max_body_bytes": 1_000_000,
    "lock_timeout_seconds": 10.0,
    "core_max": 32,
    "kinds": DEFAULT_KINDS,
    "metabolism": {},
}

TEMPLATE = """\
# sediment policy. Edit by hand; a key you delete takes its default again.
# Documented in the README, section "Policy".

# purge needs confirm=True (CLI: --confirm); without it nothing changes.
confirm_destructive: true

# At most this many purges in any rolling hour. A refused or failed call does not count.
destructive_per_hour: 30

# Largest memory body accepted, in bytes of UTF-8.
max_body_bytes: 1000000

# How long a writer waits for another process's lock before giving up.
lock_timeout_seconds: 10.0

# At most this many memories of kind core (they never decay and always go into context).
core_max: 32

# Per kind: [grace days, half-life days, archive days]; null = never decays.
# Add a kind by listing it; a default kind left out keeps its default clocks.
# A memory with no kind, or a kind not known, goes to inbox.
kinds:
  core: null
  fact: [15, 365, 1095]
  rule: [120, 730, 3650]
  skill: [15, 60, 365]
  event: [15, 120, 730]
  daily-core: [20, 60, 180]
  daily: [5, 20, 45]
  mood: [0.125, 1, 3]
  inbox: [0, 1, 14]

# Thresholds of the metabolism rules (README, "Lifecycle"). Uncomment to change.
metabolism:
  # promote_min_age_days: 1      # shallow -> sediment not before this age
  # promote_value: 0.7           # ... when value is at least this,
  # promote_recalls: 2           # ... or recalled this often, or confirmed once
  # archive_strength: 0.05       # shallow/sediment -> archive below this strength
  # crystallize_confirms: 2      # sediment -> bedrock when confirmed this often,
  # crystallize_recall_days: 3   # ... or recalled on this many distinct days,
  # crystallize_min_age_days: 7  # ... and at least this old
"""


def _number(key: str, v: Any, *, minimum: float, integer: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v < minimum or (integer and v != int(v)):
        kind = "a whole number" if integer else "a number"
        raise PolicyFileError(f"policy.yaml: {key} must be {kind} >= {minimum}, not {v!r}", key=key)
    return int(v) if integer else float(v)


def validate(raw: Mapping[str, Any]) -> dict[str, Any]:
    pol = dict(DEFAULT_POLICY)
    for key, v in raw.items():
        if key not in DEFAULT_POLICY:
            raise PolicyFileError(f"policy.yaml: unknown key {key!r} (known: {', '.join(DEFAULT_POLICY)})",
                                  key=key)
        if key == "confirm_destructive":
            if not isinstance(v, bool):
                raise PolicyFileError(f"policy.yaml: {key} must be true or false, not {v!r}", key=key)
            pol[key] = v
        elif key in ("destructive_per_hour", "core_max", "max_body_bytes"):
            pol[key] = _number(key, v, minimum=0 if key != "max_body_bytes" else 1, integer=True)
        elif key == "lock_timeout_seconds":
            pol[key] = _number(key, v, minimum=0)
        elif key == "kinds":
            if not isinstance(v, dict) or not v:
                raise PolicyFileError("policy.yaml: kinds must map kind names to [grace, half-life, archive]",
                                      key=key)
            # the file's kinds change or add to the defaults; a kind it does not
            # list keeps its default clocks (it would otherwise decay as inbox)
            kinds: dict[str, list[float] | None] = dict(DEFAULT_KINDS)
            for name, clocks in v.items():
                k = f"kinds.{name}"
                if clocks is None:
                    kinds[str(name)] = None
                    continue
                if not isinstance(clocks, list) or len(clocks) != 3:
                    raise PolicyFileError(f"policy.yaml: {k} must be [grace, half-life, archive] days or null",
                                          key=k)
                g, h, a = (_number(k, x, minimum=0) for x in clocks)
                if h <= 0:
                    raise PolicyFileError(f"policy.yaml: {k}: half-life must be > 0", key=k)
                kinds[str(name)] = [g, h, a]
            pol[key] = kinds
        elif key == "metabolism":
            from .lifecycle import DEFAULT_RULES
            if v is None:
                v = {}
            if not isinstance(v, dict):
                raise PolicyFileError("policy.yaml: metabolism must map rule names to numbers", key=key)
            for name, x in v.items():
                if name not in DEFAULT_RULES:
                    raise PolicyFileError(f"policy.yaml: unknown rule metabolism.{name} "
                                          f"(known: {', '.join(DEFAULT_RULES)})", key=f"metabolism.{name}")
                _number(f"metabolism.{name}", x, minimum=0)
            pol[key] = dict(v)
    return pol


def load(path: Path, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Read (or first write) the policy file, then apply ``overrides`` from code."""
    if not path.exists():
        from .files import atomic_write
        atomic_write(path, TEMPLATE.encode("utf-8"))
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise PolicyFileError(f"policy.yaml is not valid YAML: {exc}", key=None) from exc
    if not isinstance(raw, dict):
        raise PolicyFileError("policy.yaml must be a mapping of keys to values", key=None)
    raw.update(overrides or {})
    return validate(raw)
