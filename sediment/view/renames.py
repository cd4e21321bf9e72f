"""Which of a person's notes were renamed by hand, so their usage can follow.

A person's note without an id gets one from its path (``obsidian.path_id``),
so renaming it by hand gives it a new id. DESIGN.md ("Names and ids"): its
usage follows when the content hash matches. During one scan of the view (an
open against its snapshot, a rescan, a watcher batch) the path-id notes that
left and those that came are noted by version; a version seen leaving once and
coming once is a rename. Identical copies are ambiguous: nothing follows.
"""

from __future__ import annotations

from ..model.obsidian import PATH_ID_PREFIX, path_id


class Renames:
    def __init__(self) -> None:
        self._left: dict[str, str | None] = {}  # version → id (None: more than one)
        self._came: dict[str, str | None] = {}

    def left(self, eid: str, rel: str, version: str) -> None:
        # (a note with an id of its own keeps it wherever it goes; the prefix
        # test spares the hash for the agent's notes)
        if eid.startswith(PATH_ID_PREFIX) and eid == path_id(rel):
            self._left[version] = eid if version not in self._left else None

    def came(self, eid: str, rel: str, version: str) -> None:
        if eid.startswith(PATH_ID_PREFIX) and eid == path_id(rel):
            self._came[version] = eid if version not in self._came else None

    def pairs(self) -> list[tuple[str, str]]:
        """The (old id, new id) renames of the scan, which this ends."""
        left, came, self._left, self._came = self._left, self._came, {}, {}
        return [(old, new) for v, old in left.items()
                if old is not None and (new := came.get(v)) is not None and new != old]
