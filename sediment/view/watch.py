"""Keep a repository's view current while people edit the folder (watchdog).

Events are only hints. The observer thread records which paths changed and
returns at once; one worker thread waits until the burst settles, then looks at
the disk as it is *now* for each path. That one rule covers every editor's way
of saving (vim's rename dance, Obsidian's in-place write, VS Code's temp +
rename), a ``git checkout`` of thousands of files (coalesced per path, one
thread, no event queue per file), and our own writes (their stat already
matches the view, so they cost one ``stat`` each).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, Iterator, Protocol, TypeVar

from ..disk.files import is_temp
from ..disk.vault import Rules

log = logging.getLogger("sediment")

SETTLE_SECONDS = 0.05  # a burst is applied once no new event came for this long
MAX_DELAY_SECONDS = 0.5  # … but never later than this after its first event

# the vault's settings that say which notes are left out (see vault.Rules)
SETTINGS = {".obsidian/app.json", ".obsidian/templates.json", ".obsidian/plugins/templater-obsidian/data.json"}
Callback = Callable[[str, str], None]  # (what, relative path): 'changed', 'removed', 'invalid', 'rescan'
T = TypeVar("T")


class Watched(Protocol):
    """What the watcher asks of the view (``view.View``)."""

    @property
    def root(self) -> Path: ...
    @property
    def rules(self) -> Rules: ...

    def refresh(self) -> dict[str, int]: ...
    def apply_paths(self, rels: Iterable[str]) -> list[tuple[str, str]]: ...


class Watcher:
    def __init__(self, view: Watched, on_change: Callback | None = None) -> None:
        from watchdog.events import FileSystemEvent, FileSystemEventHandler
        from watchdog.observers import Observer

        self.view = view
        self.on_change = on_change
        self._pending: set[str] = set()
        self._rescan = False
        self._cond = threading.Condition()
        self._first_event = 0.0
        self._last_event = 0.0
        self._stop = False
        self.applied = 0  # batches applied (tests and `watch --verbose` read it)
        # resolved: some observers (macOS FSEvents) report real paths
        root = str(view.root.resolve())
        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:  # runs on the observer thread: be quick
                if event.event_type in ("opened", "closed", "closed_no_write"):
                    return
                if event.is_directory and event.event_type == "modified":
                    return  # a folder's own mtime: its files report themselves
                paths = [event.src_path, getattr(event, "dest_path", "") or ""]
                watcher._hint([os.fsdecode(p) for p in paths if p], event.is_directory)

        self._root = root
        self._observer = Observer()
        # The root, not each layer folder: git removes a folder whose last file
        # went and creates it again on the next pull, and a watch on a removed
        # folder is gone for good.
        self._observer.schedule(Handler(), root, recursive=True)
        self._worker = threading.Thread(target=self._run, name="sediment-watch", daemon=True)

    def start(self) -> "Watcher":
        self._observer.start()
        self._worker.start()
        return self

    def stop(self) -> None:
        with self._cond:
            self._stop = True
            self._cond.notify()
        self._observer.stop()
        self._observer.join(timeout=5)
        self._worker.join(timeout=5)

    def _hint(self, paths: list[str], is_dir: bool) -> None:
        rels = []
        for p in paths:
            try:
                rel = Path(p).relative_to(self._root).as_posix()
            except ValueError:
                continue
            if rel in SETTINGS:  # what the vault leaves out changed: so may its notes
                self._rescan = True
                continue
            if rel == "." or self.view.rules.skips(rel, is_dir):
                continue  # _system/ (our journal, usage, caches), .obsidian/, templates, excluded files
            name = rel.rsplit("/", 1)[-1]
            if is_dir:
                self._rescan = True  # a folder came, went or moved: so did its files
                continue
            if name.endswith(".md") and not name.startswith(".") and not is_temp(name):
                rels.append(rel)
        with self._cond:
            if not rels and not self._rescan:
                return
            now = time.monotonic()
            if not self._pending:
                self._first_event = now
            self._last_event = now
            self._pending.update(rels)
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._rescan and not self._stop:
                    self._cond.wait()
                if self._stop:
                    return
                # let the burst settle, but not for ever
                while not self._stop:
                    now = time.monotonic()
                    quiet = now - self._last_event
                    if quiet >= SETTLE_SECONDS or now - self._first_event >= MAX_DELAY_SECONDS:
                        break
                    self._cond.wait(SETTLE_SECONDS - quiet)
                batch, self._pending = self._pending, set()
                rescan, self._rescan = self._rescan, False
            try:
                self._apply(batch, rescan)
            except Exception:  # never let one bad batch kill the watcher
                log.exception("sediment watch: could not apply a batch of changes")

    def _apply(self, batch: set[str], rescan: bool) -> None:
        if rescan:
            counts = self.view.refresh()
            if self.on_change and any(counts.values()):
                self.on_change("rescan", ", ".join(f"{k} {v}" for k, v in counts.items()))
        else:
            for what, rel in self.view.apply_paths(sorted(batch)):
                if self.on_change:
                    self.on_change(what, rel)
        with self._cond:
            self.applied += 1
            self._cond.notify_all()


class Watching:
    """A repository's one watcher, started by ``Repository(watch=True)`` or a
    ``watch()`` block and stopped at its end (or at ``close``)."""

    def __init__(self, view: Watched) -> None:
        self.view = view
        self.watcher: Watcher | None = None

    def start(self, on_change: Callback | None = None) -> None:
        if self.watcher is None:
            self.watcher = Watcher(self.view, on_change).start()
            self.view.refresh()  # what changed before the observer was listening

    def stop(self) -> None:
        w, self.watcher = self.watcher, None
        if w is not None:
            w.stop()

    @contextlib.contextmanager
    def during(self, owner: T, on_change: Callback | None = None) -> Iterator[T]:
        """Watch until the block ends; the block gets ``owner`` (the repository)."""
        self.start(on_change)
        try:
            yield owner
        finally:
            self.stop()
