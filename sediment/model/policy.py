"""The settings a person may edit in ``_system/policy.yaml``, as typed, frozen
data. Pure: no I/O (``policyfile.load`` reads the file).

Every default lives here once, on the field that holds it, with the comment
that the ``policy.yaml`` template shows for it. Adding a setting is one field
(and the line that uses it); the template, validation and README table follow.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import zoneinfo
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from ..errors import PolicyFileError
from .names import MAX_NAME_BYTES, refused_chars

# [grace days, half-life days, archive days]; None = never decays.
Clock = tuple[float, float, float]
CLOCKS = ("grace", "half-life", "archive")  # a Clock's days, in order

DEFAULT_KINDS: Mapping[str, Clock | None] = MappingProxyType({
    "core": None,
    "fact": (15, 365, 1095),
    "rule": (120, 730, 3650),
    "skill": (15, 60, 365),
    "event": (15, 120, 730),
    "daily-core": (20, 60, 180),
    "daily": (5, 20, 45),
    "mood": (0.125, 1, 3),
    "inbox": (0, 1, 14),
    "person": (120, 730, 3650),  # one note a person: title the name, aliases the other names
})


def setting(default: Any, doc: str, *, minimum: float | None = None, maximum: float | None = None) -> Any:
    """A field of a settings class: its default, the comment the template shows
    above it, and for numbers the range accepted."""
    return field(default=default, metadata={"doc": doc, "minimum": minimum, "maximum": maximum})


@dataclass(frozen=True)
class Rules:
    """Thresholds of the metabolism rules (README, "Lifecycle")."""
    promote_min_age_days: float = setting(1, "shallow -> sediment not before this age", minimum=0)
    promote_value: float = setting(0.7, "... when value is at least this,", minimum=0)
    promote_recalls: float = setting(2, "... or recalled this often (once a day counts), or confirmed once", minimum=0)
    archive_strength: float = setting(0.05, "shallow/sediment -> archive below this strength", minimum=0)
    crystallize_confirms: float = setting(2, "sediment -> bedrock when confirmed this often,", minimum=0)
    crystallize_recall_days: float = setting(3, "... or recalled on this many distinct days,", minimum=0)
    crystallize_min_age_days: float = setting(7, "... and at least this old", minimum=0)


@dataclass(frozen=True)
class Policy:
    """A root's settings. Read with attribute access: ``policy.core_max``."""
    confirm_destructive: bool = setting(
        True, "purge needs confirm=True (CLI: --confirm); without it nothing changes.")
    destructive_per_hour: int = setting(
        30, "At most this many purges in any rolling hour. A refused or failed call does not count.",
        minimum=0)
    max_body_bytes: int = setting(1_000_000, "Largest memory body accepted, in bytes of UTF-8.", minimum=1)
    lock_timeout_seconds: float = setting(
        10.0, "How long a writer waits for another process's lock before giving up.", minimum=0,
        maximum=3600)
    core_max: int = setting(
        32, "At most this many memories of kind core (they never decay and always go into context).",
        minimum=0)
    timezone: str = setting(
        "UTC", "Days (recall days, reports) are counted in this timezone, and a date written without a\n"
        "time (2024-01-01, as Obsidian writes a date property) is midnight here. UTC or an IANA name.")
    max_meta_size: int = setting(
        100_000, "Largest frontmatter accepted, in characters and values once YAML aliases are expanded.",
        minimum=100)
    feedback_docs: int = setting(
        3, "Search's feedback lane reads the words of the first this many results (0 turns it off)...",
        minimum=0, maximum=50)
    feedback_terms: int = setting(
        10, "... and searches again with the query plus this many of them (found in 2+ memories),",
        minimum=1, maximum=100)
    feedback_terms_latin: int = setting(
        20, "... or this many for a query with no Chinese or Japanese text in it,",
        minimum=1, maximum=100)
    feedback_weight: float = setting(
        0.5, "... the best of them weighing this much beside a word of the query.", minimum=0, maximum=10)
    context_core_share: float = setting(
        0.4, "context(): the share of the budget 'who I am' (core and bedrock) may take; the rest is\n"
        "for unfinished business, what the query reminds of, and the strongest of the rest.",
        minimum=0, maximum=1)
    context_floor: float = setting(
        0.3, "context(): a search hit is in 'what this reminds me of' only when it covers at least this\n"
        "share of the query (IDF-weighted terms); below it the query reminds of nothing.",
        minimum=0, maximum=1)
    working_items: int = setting(
        3, "Working memory: at most this many open todos and promises (a new one replaces the oldest).",
        minimum=1, maximum=100)
    working_days: float = setting(
        3, "Working memory: an item not mentioned for this many days (in the root's timezone) is gone.",
        minimum=0)
    mood_hours: float = setting(6, "mood(): how long a mood holds unless set again.", minimum=0)
    open_processes: int = setting(
        0, "A cold open of a large root (no valid index cache: a fresh clone) parses and tokenizes in\n"
        "this many processes: 0 = one per core (where forking is safe), 1 = in the opening process only.",
        minimum=0, maximum=64)
    patrol_stale_days: float = setting(
        90, "patrol lists an active memory not recalled or confirmed for this many days.", minimum=0)
    map_file: str = setting(
        "MAP.md", "The palace map map() writes at the root (a file name; pick another if your vault has one).")
    sources_folder: str = setting(
        "sources", "The folder at the root where raw conversations are stored (one file per session).")
    semantic: bool = setting(
        False, "The semantic lane (the [semantic] extra): search also by meaning, with a bundled\n"
        "offline model; vectors are computed in the background and kept in _system/cache/.")
    semantic_floor: float = setting(
        0.25, "The semantic lane's floor: the least centred similarity a memory found by meaning\n"
        "alone needs, from 50 memories up (below, similarities are not centred and a fixed 0.20\n"
        "holds). Higher: fewer unrelated notes for a question about nothing, and fewer\n"
        "paraphrases found; benchmarks/README.md has the trade-off.", minimum=0, maximum=1)
    people: Any = setting(None, (
        "Known people: the name you file each under -> their other names. A name in a note resolves to\n"
        "a person only when it is one of these exactly (so 张三 is never 张三丰); notes of kind person\n"
        "(title the name, aliases the other names) add to the list. What cannot be read is left out\n"
        "and check() names it."))
    kinds: Mapping[str, Clock | None] = field(default_factory=lambda: DEFAULT_KINDS, metadata={"doc": (
        "Per kind: [grace days, half-life days, archive days]; null = never decays.\n"
        "Add a kind by listing it; a default kind left out keeps its default clocks.\n"
        "A memory written with no kind goes to inbox; a kind not listed here is refused\n"
        "(a note a person wrote with one decays as inbox until it is classified).")})
    metabolism: Rules = field(default_factory=Rules, metadata={"doc": (
        'Thresholds of the metabolism rules (README, "Lifecycle"). Uncomment to change.')})

    def replace(self, **changes: Any) -> "Policy":
        return dataclasses.replace(self, **changes)

    @property
    def tz(self) -> _dt.tzinfo:
        return _zone(self.timezone)


DEFAULTS = Policy()


def _yaml_scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer() and abs(v) >= 1:
        return f"{v:.1f}"
    return f"{v:g}" if isinstance(v, float) else str(v)


def _comment(doc: str) -> list[str]:
    return [f"# {line}" for line in doc.split("\n")]


def template() -> str:
    """The ``policy.yaml`` written on first open: every default with its comment."""
    lines = ["# sediment policy. Edit by hand; a key you delete takes its default again.",
             '# Documented in the README, section "Policy".']
    for f in dataclasses.fields(Policy):
        lines += ["", *_comment(f.metadata["doc"])]
        value = getattr(DEFAULTS, f.name)
        if f.name == "people":
            lines += ["# people:", "#   张三: [老张, Zhang San]", "#   Alice Chen: [Alice]"]
        elif f.name == "kinds":
            lines.append("kinds:")
            lines += [f"  {k}: " + ("null" if c is None else "[" + ", ".join(_yaml_scalar(x) for x in c) + "]")
                      for k, c in value.items()]
        elif f.name == "metabolism":
            lines.append("metabolism:")
            for r in dataclasses.fields(Rules):
                lines.append(f"  # {r.name + ': ' + _yaml_scalar(getattr(value, r.name)):<31}"
                             f"# {r.metadata['doc']}")
        else:
            lines.append(f"{f.name}: {_yaml_scalar(value)}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# validation of what a file (or a caller's overrides) gives

def _bad(key: str, why: str) -> PolicyFileError:
    return PolicyFileError(f"policy.yaml: {key} {why}", key=key)


def _number(key: str, v: Any, *, minimum: float | None, maximum: float | None = None,
            integer: bool = False) -> float:
    # (a bound above for every number: a whole number of 10**30 would pass as
    # "finite" and then overflow whatever it is handed to)
    top = maximum if maximum is not None else 1e15
    ok = (not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v)
          and (minimum is None or v >= minimum) and v <= top and (not integer or v == int(v)))
    if not ok:
        kind = "a whole number" if integer else "a number"
        low = f"{minimum:g}" if minimum is not None else "-∞"
        raise _bad(key, f"must be {kind} from {low} to {top:g}, not {v!r}")
    return int(v) if integer else float(v)


def _zone(name: str) -> _dt.tzinfo:
    if name.upper() in ("UTC", "Z"):
        return _dt.timezone.utc
    return zoneinfo.ZoneInfo(name)


# what a file or folder at the root may not be called: sediment's own
# folders, or anything that leaves the root or hides from a listing
_TAKEN = ("shallow", "sediment", "bedrock", "archive", "_system")


def _root_name(key: str, v: str) -> None:
    bad = (v != v.strip() or "/" in v or "\\" in v or v.startswith(".") or v.lower() in _TAKEN
           or refused_chars(v) or len(v.encode("utf-8")) > MAX_NAME_BYTES)
    if bad:
        raise _bad(key, f"must be one file or folder name at the root, not a layer or _system, not {v!r}")
    if key == "map_file" and not v.endswith(".md"):
        raise _bad(key, f"must end in .md, not {v!r}")


def _typed(key: str, f: dataclasses.Field[Any], v: Any) -> Any:
    if f.type in ("bool", bool):
        if not isinstance(v, bool):
            raise _bad(key, f"must be true or false, not {v!r}")
        return v
    if f.type in ("str", str):
        if not isinstance(v, str) or not v.strip():
            raise _bad(key, f"must be text, not {v!r}")
        if key in ("map_file", "sources_folder"):
            _root_name(key, v)
        if key == "timezone":
            try:
                _zone(v)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
                raise _bad(key, f"is not a timezone this machine knows: {v!r} ({exc})") from None
        return v
    return _number(key, v, minimum=f.metadata.get("minimum"), maximum=f.metadata.get("maximum"),
                   integer=f.type in ("int", int))


def _kinds(v: Any) -> Mapping[str, Clock | None]:
    if not isinstance(v, dict) or not v:
        raise _bad("kinds", "must map kind names to [grace, half-life, archive]")
    # the file's kinds change or add to the defaults; a kind it does not
    # list keeps its default clocks (it would otherwise decay as inbox)
    kinds: dict[str, Clock | None] = dict(DEFAULT_KINDS)
    for name, clocks in v.items():
        k = f"kinds.{name}"
        if clocks is None:
            kinds[str(name)] = None
            continue
        if not isinstance(clocks, list) or len(clocks) != len(CLOCKS):
            raise _bad(k, "must be [grace, half-life, archive] days or null")
        g, h, a = (_number(k, x, minimum=0) for x in clocks)
        if h <= 0:
            raise _bad(k, "half-life must be > 0")
        kinds[str(name)] = (g, h, a)
    return MappingProxyType(kinds)


def _rules(v: Any) -> Rules:
    if v is None:
        return Rules()
    if isinstance(v, Rules):
        return v
    if not isinstance(v, dict):
        raise _bad("metabolism", "must map rule names to numbers")
    fields = {f.name: f for f in dataclasses.fields(Rules)}
    out = {}
    for name, x in v.items():
        if name not in fields:
            raise PolicyFileError(f"policy.yaml: unknown rule metabolism.{name} (known: {', '.join(fields)})",
                                  key=f"metabolism.{name}")
        out[name] = _typed(f"metabolism.{name}", fields[name], x)
    return Rules(**out)


def from_mapping(raw: Mapping[str, Any]) -> Policy:
    """A ``Policy`` from the file's mapping; raises ``PolicyFileError`` naming the key."""
    fields = {f.name: f for f in dataclasses.fields(Policy)}
    values: dict[str, Any] = {}
    for key, v in raw.items():
        if key not in fields:
            raise PolicyFileError(f"policy.yaml: unknown key {key!r} (known: {', '.join(fields)})",
                                  key=str(key))
        if key == "kinds":
            values[key] = v if isinstance(v, MappingProxyType) else _kinds(v)
        elif key == "metabolism":
            values[key] = _rules(v)
        elif key == "people":  # read leniently (model.people): a wrong name is a check() problem
            values[key] = v
        else:
            values[key] = _typed(key, fields[key], v)
    return Policy(**values)
