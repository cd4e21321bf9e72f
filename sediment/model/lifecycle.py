"""Decay, strength and the metabolism plan: pure functions of entries, usage,
policy and an explicit ``now``. No I/O, no randomness, no LLM: the same inputs
give the same plan, and each move carries the reason a person would want.

strength = value × decay. decay is 1 within the kind's grace period after the
last use (creation, recall or confirmation), then halves every effective
half-life: half-life × min(4, 1 + 0.6·log2(1 + recalls)). Core memories and
anything in bedrock never decay.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from . import obsidian as O
from .policy import Clock, Policy, Rules
from .record import Record
from .usage import Usage

if TYPE_CHECKING:  # the memories it reads: a type, not an import the rules run on
    from .entry import Entry

DAY = 86400.0


def is_current(e: Entry) -> bool:
    """Whether a memory is current: not retired (superseded, archived or
    purged) and not in the archive folder. What a search finds by default
    (``search.query.NOT_CURRENT`` is the same test as index flags), what a
    context block, the conflict scan, the patrol and the palace map take; a
    person's note is current (its ``status`` is theirs, never a lifecycle
    state). Callers add what their job excludes besides (inbox fragments, a
    person's notes)."""
    return e.status == "active" and e.layer != "archive"


# Words that, at the start of a new judgement, say it overturns an earlier one
# in the same event (see Repository.add, auto-supersede).
OVERTURN_WORDS = (
    "不对", "其实", "改为", "改成", "更正", "纠正", "不再", "推翻", "错了", "实际上", "应该是", "并不是",
    "actually", "no longer", "correction", "i was wrong", "not anymore", "scratch that",
    "on second thought", "instead", "update:",
)
_OVERTURN_RE = re.compile(r"^[\s\W_]*(" + "|".join(re.escape(w) for w in OVERTURN_WORDS) + r")",
                          re.IGNORECASE)


def overturns(text: str) -> bool:
    """Does this judgement start with an overturn word?"""
    return bool(_OVERTURN_RE.match(text))


@dataclass(frozen=True)
class Strength(Record):
    value: float
    decay: float
    strength: float
    last_use: float
    days_since_use: float
    grace: float | None
    half_life: float | None  # effective, after recalls
    recalls: int
    confirms: int

    def explain(self) -> str:
        if self.grace is None:
            return (f"strength {self.strength:.3f} = value {self.value:.2f} × decay 1 "
                    f"(never decays: core or bedrock)")
        state = ("within grace" if self.days_since_use <= self.grace else
                 f"{self.days_since_use - self.grace:.1f} d past grace")
        return (f"strength {self.strength:.3f} = value {self.value:.2f} × decay {self.decay:.3f}; "
                f"last used {self.days_since_use:.1f} d ago ({state}, grace {self.grace:g} d); "
                f"effective half-life {self.half_life:.1f} d after {self.recalls} recall(s); "
                f"{self.confirms} confirmation(s)")


def _ts(e: Entry) -> float:
    try:
        return e.created.timestamp()
    except Exception:  # an unparsable time was reported by check(); treat as old
        return 0.0


def strength(e: Entry, u: Usage | None, kinds: Mapping[str, Clock | None], now: float) -> Strength:
    u = u or Usage()
    last = max(_ts(e), u.last_use)
    age = max(0.0, (now - last) / DAY)
    clocks = kinds.get(e.kind, kinds.get("inbox"))
    if clocks is None or e.layer == "bedrock":
        return Strength(e.value, 1.0, e.value, last, age, None, None, u.recalls, u.confirms)
    grace, half, _ = clocks
    eff = half * min(4.0, 1 + 0.6 * math.log2(1 + u.recalls))
    decay = 1.0 if age <= grace else 0.5 ** ((age - grace) / eff)
    return Strength(e.value, decay, e.value * decay, last, age, grace, eff, u.recalls, u.confirms)


@dataclass(frozen=True)
class Move:
    id: str
    title: str
    source: str  # layer
    target: str
    reason: str
    status: str | None = None  # new status, when it changes

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "from": self.source, "to": self.target,
                "reason": self.reason, **({"status": self.status} if self.status else {})}


def _date(t: float, tz: _dt.tzinfo) -> str:
    return _dt.datetime.fromtimestamp(t, tz).date().isoformat()


def plan(entries: Iterable[Entry], usage: Mapping[str, Usage], policy: Policy,
         now: float) -> list[Move]:
    """The moves metabolism would make, sorted by id. Pure and deterministic.

    Rules, in order (the first that applies wins):
    1. refuted after its last confirmation → archive (any layer);
    2. status superseded → archive;
    3. shallow/sediment, not core: strength below ``archive_strength``, or the
       kind's archive age passed since last use → archive;
    4. promotion, as far as the signals reach in one step (so a second run with
       the same ``now`` has nothing left to do):
       shallow → sediment after ``promote_min_age_days`` when value ≥
       ``promote_value``, recalled ≥ ``promote_recalls`` times (one a day: see
       ``Usage.add``), or confirmed;
       sediment → bedrock after ``crystallize_min_age_days`` only when confirmed
       ≥ ``crystallize_confirms`` times or recalled on ≥ ``crystallize_recall_days``
       distinct days; kind core goes to bedrock. Inbox fragments are never
       promoted: they wait for ``consolidate``.
    """
    moves: list[Move] = []
    for e in sorted(entries, key=lambda x: x.id):
        if e.layer == "archive" or e.status == "purged" or e.reference:
            continue  # (a person's note, outside the layer folders, is never moved)
        u = usage.get(e.id) or Usage()
        move = _retirement(e, u, policy, now) or _promotion(e, u, policy.metabolism, now)
        if move is not None:
            moves.append(move)
    return moves


def _retirement(e: Entry, u: Usage, policy: Policy, now: float) -> Move | None:
    """Rules 1–3 of ``plan``: the move to archive of a memory refuted,
    superseded or decayed, or None."""
    if u.refuted:
        return Move(e.id, e.title, e.layer, "archive",
                    f"refuted on {_date(u.last_refute, policy.tz)} ({u.refutes} refutation(s), "
                    f"{u.confirms} confirmation(s))", "archived")
    if e.status == "superseded":
        by = ", ".join(O.items(e.meta.get("superseded_by"))) or "a newer memory"
        return Move(e.id, e.title, e.layer, "archive", f"superseded by {by}", None)
    rules, kinds = policy.metabolism, policy.kinds
    s = strength(e, u, kinds, now)
    if e.layer not in ("shallow", "sediment") or s.grace is None:
        return None
    clocks = kinds.get(e.kind, kinds.get("inbox"))
    archive_days = clocks[2] if clocks else None
    if s.strength < rules.archive_strength:
        return Move(e.id, e.title, e.layer, "archive",
                    f"decayed: strength {s.strength:.3f} < {rules.archive_strength:g} "
                    f"(value {s.value:.2f}, unused for {s.days_since_use:.0f} d, "
                    f"half-life {s.half_life:.0f} d)", "archived")
    if archive_days is not None and s.days_since_use > archive_days:
        return Move(e.id, e.title, e.layer, "archive",
                    f"unused for {s.days_since_use:.0f} d, past the {e.kind} archive "
                    f"age of {archive_days:g} d", "archived")
    return None


def _promotion(e: Entry, u: Usage, rules: Rules, now: float) -> Move | None:
    """Rule 4 of ``plan``: the move up of a memory that proved useful, as
    far as its signals reach in one step, or None."""
    if e.kind == "inbox":
        return None
    if e.kind == "core":
        return None if e.layer == "bedrock" else Move(e.id, e.title, e.layer, "bedrock",
                                                       "kind core: belongs in bedrock")
    age = (now - _ts(e)) / DAY
    target, reasons = e.layer, []
    if target == "shallow" and age >= rules.promote_min_age_days:
        signal = []
        if e.value >= rules.promote_value:
            signal.append(f"value {e.value:.2f}")
        if u.recalls >= rules.promote_recalls:
            signal.append(f"recalled {u.recalls} times on {len(u.days)} day(s)")
        if u.confirms:
            signal.append(f"confirmed {u.confirms} time(s)")
        if signal:
            target = "sediment"
            reasons.append("proved useful: " + "; ".join(signal))
    if target == "sediment" and age >= rules.crystallize_min_age_days:
        signal = []
        if u.confirms >= rules.crystallize_confirms:
            signal.append(f"confirmed {u.confirms} times")
        if len(u.days) >= rules.crystallize_recall_days and u.recalls:
            signal.append(f"recalled on {len(u.days)} distinct days")
        if signal:
            target = "bedrock"
            reasons.append("crystallized: " + "; ".join(signal))
    return Move(e.id, e.title, e.layer, target, "; ".join(reasons)) if target != e.layer else None


def bigram_similarity(a: str, b: str) -> float:
    """Dice coefficient of the character bigrams of two texts (letters and digits
    only, case-folded): 1 for the same text, 0 for nothing shared."""
    def grams(s: str) -> set[str]:
        s = "".join(ch for ch in s.lower() if ch.isalnum())
        return {s[i:i + 2] for i in range(len(s) - 1)} or ({s} if s else set())
    ga, gb = grams(a), grams(b)
    if not ga or not gb:
        return 0.0
    return 2 * len(ga & gb) / (len(ga) + len(gb))
