"""What the view remembers of each file's stat, to tell a change without
reading the file: in this process (the watcher, ``refresh``), and, for a
stat that may stand for the file's bytes later (``vault.settled``), at the
next open, through the index snapshot."""

from __future__ import annotations

import os
import time
from typing import Iterator

from ..disk.files import read_nofollow
from ..disk.vault import settled, stamp
from ..model.entry import content_version


class Stamps:
    """Path → the ``vault.stamp`` of the file's stat when the view last read
    it (or wrote it)."""

    __slots__ = ("of", "_unsettled")

    def __init__(self) -> None:
        self.of: dict[str, int] = {}
        # paths whose stamp was taken too soon after the file changed to vouch
        # for its bytes at the next open: kept out of the snapshot
        self._unsettled: set[str] = set()

    def record(self, rel: str, st: os.stat_result, since: int | None, *, settled_as: int | None = None) -> None:
        """The file's stat ``st``, taken after ``since`` (``time.time_ns()``;
        None: unknown, so it never vouches for the file at the next open).
        ``settled_as``: its stamp, which the caller found settled already."""
        if settled_as is not None:
            self.of[rel] = settled_as
            self._unsettled.discard(rel)
            return
        self.of[rel] = stamp(st)
        if since is not None and settled(st, since):
            self._unsettled.discard(rel)
        else:
            self._unsettled.add(rel)

    def vouch(self, path: str, rel: str, version: str) -> bool:
        """Record the stat of the file at ``path`` (``rel``), our own write of
        ``version``, which the view holds for it. A stat that could vouch for
        the file later (settled: a slow batch) is kept only if the bytes read
        after it are of ``version``; False when they are not: a person's save
        landed since the write, which that stat may already be of (the caller
        reads the file instead). An unsettled one (the common case, just after
        the write) is kept as such, unread: it never vouches, and a change
        seen later is checked against the bytes (``unchanged``). Nothing is
        recorded when the file cannot be stat'ed or read."""
        since = time.time_ns()
        try:
            st = os.stat(path, follow_symlinks=False)
            if not settled(st, since):
                self.record(rel, st, None)
                return True
            data = read_nofollow(path)
        except OSError:
            return True
        if content_version(data) != version:
            return False
        self.record(rel, st, since)  # (a stat the bytes read after it were checked against)
        return True

    def drop(self, rel: str) -> None:
        self.of.pop(rel, None)
        self._unsettled.discard(rel)

    def unchanged(self, rel: str, st: os.stat_result, since: int, path: str, version: str | None) -> bool:
        """Whether the file at ``path`` (``rel``), stat'ed as ``st`` after
        ``since``, is still what the view holds there (of ``version``): the
        same settled stat, or another stat (a rename there and back, a touch:
        the ctime moved) or the same one not settled (a save within a
        timestamp's step of the last, which may keep it) over bytes of that
        version, whose stat is then recorded. Rereading a note another
        process moved away and back, or a long note touched, cost a reader a
        parse each time, and a reader slowed so chased a stream of moves to
        the end of its rounds (view/moving.py)."""
        same = self.of.get(rel) == stamp(st)
        if same and (rel not in self._unsettled or version is None):
            return True  # (no version: a file the view holds no note of, a problem, read again on a change)
        if version is None or rel not in self.of:
            return False
        try:
            data = read_nofollow(path)
        except OSError:
            return False
        if content_version(data) != version:
            return False
        self.record(rel, st, since)  # (the bytes read after it are those)
        return True

    def settled(self, rel: str) -> int | None:
        """The stamp the snapshot may keep for the file, if any."""
        return None if rel in self._unsettled else self.of.get(rel)

    def __contains__(self, rel: object) -> bool:
        return rel in self.of

    def __iter__(self) -> Iterator[str]:
        return iter(self.of)
