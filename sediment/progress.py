"""Progress of long work (a cold open of a large root, applying a plan):
the library calls ``progress(stage, done, total)``; the CLI draws a bar on a
terminal and nothing when piped."""

from __future__ import annotations

import sys
from typing import Any, Callable

Progress = Callable[[str, int, int], None]  # (stage, done, total)


class Ticker:
    """Calls ``progress(stage, done, total)`` about a hundred times over a long
    job (and once at its end), so that a progress bar costs the job nothing."""

    def __init__(self, progress: Progress | None, stage: str, total: int) -> None:
        self.progress, self.stage, self.total, self.done = progress, stage, total, 0
        self.step = max(1, -(-total // 100))  # at most a hundred calls, and the last

    def __call__(self, n: int = 1) -> None:
        if self.progress is None:
            return
        self.done += n
        if self.done % self.step == 0 or self.done >= self.total:
            self.progress(self.stage, min(self.done, self.total), self.total)


def terminal_bar() -> Progress | None:
    """A progress bar (tqdm) on a terminal, for a job that lasts over half a
    second (a cold open of a large root, a long metabolize); nothing at all
    when stderr is piped or tqdm is missing."""
    if not sys.stderr.isatty():
        return None
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - a runtime dependency
        return None
    bars: dict[str, Any] = {}

    def show(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            bar = bars[stage] = tqdm(total=total, desc=stage, unit="note", leave=False, delay=0.5,
                                     file=sys.stderr)
        bar.update(done - bar.n)
        if done >= total:
            bar.close()
    return show
