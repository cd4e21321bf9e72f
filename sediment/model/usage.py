"""One memory's usage record: recalls (one a day), confirmations and
refutations, and when each last happened. A value type with its JSON form;
the usage log (``disk/usage.py``) keeps them, the lifecycle reads them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Usage:
    recalls: int = 0  # one per memory per day (DESIGN.md, "What counts as a recall")
    confirms: int = 0
    refutes: int = 0
    days: set[str] = field(default_factory=set)  # distinct days with a recall
    last_use: float = 0.0  # unix time of the last recall or confirmation
    last_confirm: float = 0.0
    last_refute: float = 0.0

    def add(self, ev: str, t: float, day: str) -> None:
        if ev == "recall":
            # Any call more than once a day counts once: an agent that searches
            # in a loop must not promote what it keeps asking for.
            if day not in self.days:
                self.recalls += 1
                self.days.add(day)
        elif ev == "confirm":
            self.confirms += 1
            self.last_confirm = max(self.last_confirm, t)
        elif ev == "refute":
            self.refutes += 1
            self.last_refute = max(self.last_refute, t)
            return
        self.last_use = max(self.last_use, t)

    @property
    def refuted(self) -> bool:
        """Refuted after the last confirmation (a later confirm outweighs it)."""
        return self.refutes > 0 and self.last_refute >= self.last_confirm

    def to_json(self) -> dict[str, Any]:
        return {"recalls": self.recalls, "confirms": self.confirms, "refutes": self.refutes,
                "days": sorted(self.days), "last_use": self.last_use,
                "last_confirm": self.last_confirm, "last_refute": self.last_refute}

    @classmethod
    def from_json(cls, d: Any) -> "Usage":
        """What ``to_json`` wrote; ``ValueError`` for anything else (a damaged
        summary costs that memory's record, never the file)."""
        if not isinstance(d, dict):
            raise ValueError("not an object")

        def num(key: str) -> float:
            v = d.get(key, 0)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{key} is not a number")
            return v

        days = d.get("days", [])
        if not isinstance(days, list) or not all(isinstance(x, str) for x in days):
            raise ValueError("days is not a list of text")
        return cls(int(num("recalls")), int(num("confirms")), int(num("refutes")), set(days),
                   float(num("last_use")), float(num("last_confirm")), float(num("last_refute")))
