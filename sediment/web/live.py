"""Live updates: the watcher's changes applied to the nebula, and the diffs
pushed to every open page (server-sent events).

Two threads, so that a slow reconciliation never holds up a change: ``fast``
applies each burst of changed paths at once (a node's ``get`` and strength),
``slow`` runs ``Nebula.refresh`` (edges, strengths) once changes have been
quiet for a while, and every few minutes anyway (strength decays with time).
The wait before a refresh grows with how long the last one took, so a large
root is not reconciled over and over during a burst of edits; a burst that
never ends still gets one every ``MAX_WAIT`` seconds. The first one (the
edges) waits until the first page has its picture (``asked``), or
``FIRST_WAIT`` seconds: on 100,000 memories it takes a minute of the CPU, and
the page's first picture needs no edge.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from typing import Any

from .nebula import Diff, Nebula

log = logging.getLogger("sediment")

QUIET = 1.0  # seconds without a change before the edges are reconciled ...
MAX_WAIT = 30.0  # ... but never later than this after the first change
EVERY = 300.0  # strengths decay: reconciled this often in any case
FIRST_WAIT = 5.0  # the first edges wait for the first page's picture, or this long


class Hub:
    """The pages listening: one asyncio queue each, on the server's loop.
    ``publish`` may be called from any thread."""

    def __init__(self) -> None:
        self._clients: set[tuple[asyncio.AbstractEventLoop, asyncio.Queue[str]]] = set()
        self._lock = threading.Lock()

    def subscribe(self) -> tuple[asyncio.AbstractEventLoop, asyncio.Queue[str]]:
        client = (asyncio.get_running_loop(), asyncio.Queue[str]())
        with self._lock:
            self._clients.add(client)
        return client

    def unsubscribe(self, client: tuple[asyncio.AbstractEventLoop, asyncio.Queue[str]]) -> None:
        with self._lock:
            self._clients.discard(client)

    def publish(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        with self._lock:
            clients = list(self._clients)
        for loop, queue in clients:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, data)
            except RuntimeError:  # the loop closed: the server is stopping
                continue


class Live:
    """Feeds the nebula from ``Repository.watch``'s callback (``on_change``)."""

    def __init__(self, nebula: Nebula) -> None:
        self.nebula = nebula
        self._cond = threading.Condition()
        self._paths: set[str] = set()
        self._rescan = False
        self._stop = False
        self._changed_at = 0.0  # the last change not yet reconciled (monotonic), 0 when none
        self._first_change = 0.0
        self._refresh_took = 0.0
        self._next_refresh = time.monotonic() + FIRST_WAIT  # (sooner when a page asks: ``asked``)
        self.applied = 0  # bursts applied (the tests wait on it)
        self._refreshed = False
        self._threads = [threading.Thread(target=self._fast, name="sediment-view-live", daemon=True),
                         threading.Thread(target=self._slow, name="sediment-view-refresh", daemon=True)]

    def start(self) -> "Live":
        for t in self._threads:
            t.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        for t in self._threads:
            t.join(timeout=5)

    def asked(self) -> None:
        """A page was given its picture: the first edges may be computed now."""
        with self._cond:
            if not self._refreshed:
                self._next_refresh = min(self._next_refresh, time.monotonic())
                self._cond.notify_all()

    def on_change(self, what: str, path: str) -> None:
        """The watcher's callback (its thread): note the path, return at once."""
        with self._cond:
            if what == "rescan":
                self._rescan = True
            else:
                self._paths.add(path)
            now = time.monotonic()
            if not self._changed_at:
                self._first_change = now
            self._changed_at = now
            self._cond.notify_all()

    def _fast(self) -> None:
        while True:
            with self._cond:
                while not self._paths and not self._rescan and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                paths, self._paths = self._paths, set()
                rescan, self._rescan = self._rescan, False
            try:
                if rescan:
                    self.nebula.reload()
                elif paths:
                    self.nebula.apply(paths)
            except Exception:  # one bad burst must not end live updates
                log.exception("sediment view: could not apply a change")
            with self._cond:
                self.applied += 1
                self._cond.notify_all()

    def _due(self, now: float) -> float:
        """Seconds until the next refresh (<= 0: now)."""
        if self._changed_at:
            wait = max(QUIET, 3 * self._refresh_took)
            return min(self._changed_at + wait, self._first_change + MAX_WAIT) - now
        return self._next_refresh - now

    def _slow(self) -> None:
        while True:
            with self._cond:
                while not self._stop and self._due(time.monotonic()) > 0:
                    self._cond.wait(self._due(time.monotonic()))
                if self._stop:
                    return
                self._changed_at = 0.0
            started = time.monotonic()
            diff: Diff | None = None
            try:
                diff = self.nebula.refresh()
            except Exception:
                log.exception("sediment view: could not reconcile the nebula")
            self._refresh_took = time.monotonic() - started
            with self._cond:
                self._refreshed = True
                self._next_refresh = time.monotonic() + EVERY
            if diff is not None:
                log.debug("sediment view: reconciled in %.2f s", self._refresh_took)
