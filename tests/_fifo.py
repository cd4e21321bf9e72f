"""Running a read that may block on a FIFO (its open waits until something
writes to it) without letting a test hang."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any, Callable


def unblocked(fn: Callable[[], Any], *fifos: Path) -> Any:
    """``fn()``, run in a thread; fails (rather than hangs) if it blocks. The
    ``fifos`` are then opened for writing, one after the other, to let a
    blocked reader go. An exception of ``fn`` is raised again here."""
    got: dict[str, Any] = {}

    def run() -> None:
        try:
            got["value"] = fn()
        except Exception as exc:  # (raised again below, in the test's thread)
            got["error"] = exc
    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(30)  # a guard against a hang, not a speed target
    try:
        assert not t.is_alive(), "blocked on a FIFO"
    finally:
        for _ in range(400):  # let a blocked reader go, FIFO after FIFO
            if not t.is_alive():
                break
            for fifo in fifos:
                with contextlib.suppress(OSError):  # (no reader there: ENXIO)
                    os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            t.join(0.05)
    if "error" in got:
        raise got["error"]
    return got["value"]
