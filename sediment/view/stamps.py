"""What the view remembers of each file's stat, to tell a change without
reading the file: in this process (the watcher, ``refresh``), and, for a
stat that may stand for the file's bytes later (``vault.settled``), at the
next open, through the index snapshot."""

from __future__ import annotations

import os
from typing import Iterator

from ..disk.vault import settled, stamp


class Stamps:
    """Path → the ``vault.stamp`` of the file's stat when the view last read
    it (or wrote it)."""

    __slots__ = ("of", "_unsettled")

    def __init__(self) -> None:
        self.of: dict[str, int] = {}
        # paths whose stamp was taken too soon after the file changed to vouch
        # for its bytes at the next open: kept out of the snapshot
        self._unsettled: set[str] = set()

    def record(self, rel: str, st: os.stat_result, since: int | None) -> None:
        """The file's stat ``st``, taken after ``since`` (``time.time_ns()``;
        None: unknown, so it never vouches for the file at the next open)."""
        self.of[rel] = stamp(st)
        if since is not None and settled(st, since):
            self._unsettled.discard(rel)
        else:
            self._unsettled.add(rel)

    def drop(self, rel: str) -> None:
        self.of.pop(rel, None)
        self._unsettled.discard(rel)

    def same(self, rel: str, st: os.stat_result) -> bool:
        """Whether ``st`` is the stat the view read the file at."""
        return self.of.get(rel) == stamp(st)

    def settled(self, rel: str) -> int | None:
        """The stamp the snapshot may keep for the file, if any."""
        return None if rel in self._unsettled else self.of.get(rel)

    def __contains__(self, rel: object) -> bool:
        return rel in self.of

    def __iter__(self) -> Iterator[str]:
        return iter(self.of)
