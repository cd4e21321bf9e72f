"""A view catching up with other processes' writes, through the journal
(``disk.journal.Feed``), without losing a note another process moves while
it looks.

The feed names the paths a finished write or move changed; the view reads
them as they are now. A move of another process may be under way meanwhile
(a metabolize moving hundreds of notes, one after another): the reader saw
the note gone from its old place, and by the time it read the new one it had
gone on again. Read that way, the note is nowhere, and ``get`` said
``NotFound``. But a move's intent is in the journal before its first step,
and it links the new copy before it removes the old one: a note the view
lost is looked for where its latest intent takes it, the old place first
(gone from there, it was at the new one already), and the journal read again
for a later intent, until none came while we looked.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Protocol

from ..disk.journal import Feed, note_path

# rounds of reading on after a move began while we looked: a round takes far
# less than a move (which waits for fsyncs), so one or two are the rule; the
# bound only keeps a reader from chasing a mover for ever
ROUNDS = 50


class Following(Protocol):
    """What ``catch_up`` needs of the view (``view.View``)."""

    @property
    def feed(self) -> Feed: ...
    @property
    def entries(self) -> Mapping[str, Any]: ...

    def refresh(self) -> dict[str, int]: ...
    def apply_paths(self, rels: Iterable[str]) -> list[tuple[str, str]]: ...
    def load_file(self, rel: str) -> None: ...


def catch_up(view: Following) -> None:
    """Apply what other processes finished since the view last looked, and
    find again every note that an intent read meanwhile (or still open) is
    about and that the view no longer holds."""
    _apply(view, view.feed.poll())
    moves = view.feed.moves(open_too=True)
    for _ in range(ROUNDS):
        for eid, intent in moves.items():
            if eid not in view.entries:
                _look_for(view, eid, intent)
        # Read the journal again before trusting what we read: a move that
        # began while we read the files (after the journal said where the
        # notes were) took a note from under us, and only its intent, appended
        # since, says where it went. Nothing appended (one stat), nothing
        # moved while we looked.
        paths = view.feed.poll()
        moves = view.feed.moves()
        if paths == [] and not moves:
            return
        _apply(view, paths)


def _apply(view: Following, paths: list[str] | None) -> None:
    if paths is None:  # compacted by someone: records may be missed
        view.refresh()
    elif paths:
        view.apply_paths(paths)


def _look_for(view: Following, eid: str, intent: Mapping[str, Any]) -> None:
    """The note at the move's source, else at its destination."""
    for rel in (intent.get("src"), intent.get("dst")):
        if isinstance(rel, str) and note_path(rel):
            view.load_file(rel)
            if eid in view.entries:
                return
