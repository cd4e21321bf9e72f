"""Several roots, one view: a repository's own root and the shared roots it
reads (``Repository(root, shared=[...])``), searched and read as one.

The own root is written; a shared root is opened read-only (``open_system``'s
``read_only``) and never written through this repository — not its notes, not
its journal, usage, lock or caches. Each root keeps its own journal, usage and
metabolism.

**Ranked together.** Each root's search keeps its own order (its lanes fused
by reciprocal rank, its feedback, its ties); the lists are merged by one
weight that means the same in every root: the summed inverse document
frequency of the query's terms a hit holds, the frequencies counted over all
the roots together (``search.merged``). Reciprocal-rank fusion across roots would
not do: every root's first hit would tie, a weak match alone in a small
private root level with a strong one in the team's root. A root's list is
merged as it stands — a hit keeps its place behind the hits its own root put
before it (their weight is at least the best weight behind them) — so adding
a shared root never reorders a root's own hits; a tie goes to the own root,
then to the shared roots in the order given.

**Recalls.** Only the own root's hits are recorded (those that made the merged
list, with direct evidence). A hit of a shared root is not recorded at all:
its root is not written, and this root's metabolism cannot act on a note it
does not hold, so a record here would be evidence nothing reads. An agent
whose use should count for the team's notes opens the shared root as its own.

**Ids.** Roots may hold the same id (a note copied from one to another).
``label:id`` names a shared root's memory (``SearchHit.ref``); a bare id is
the own root's, else the one shared root that holds it (``Ambiguous`` when
several do).
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from ..errors import Ambiguous, InvalidInput
from ..model.entry import Entry
from ..search.merged import merge, weigher
from ..search.query import SearchHit
from . import reads

if TYPE_CHECKING:  # a parameter's type: the caller hands the object in
    from ..store.store import Store


@dataclass(frozen=True)
class Roots:
    """The roots a repository reads: its own (written) and the shared ones,
    by label, in the order given (read only)."""
    own: Store
    shared: Mapping[str, Store] = field(default_factory=dict)

    def all(self) -> list[tuple[str | None, Store]]:
        """(label, store) of every root, the own root first (label None)."""
        return [(None, self.own), *self.shared.items()]

    def split(self, ref: str) -> tuple[str | None, str]:
        """(label, key) of a reference: ``label:key`` names a shared root's
        memory; anything else is a key of no root in particular."""
        if isinstance(ref, str):
            label, sep, key = ref.partition(":")
            if sep and label in self.shared:
                return label, key
        return None, ref

    def holder(self, ref: str) -> tuple[str | None, Store, str]:
        """(label, store, key) of the root ``ref`` names: a qualified
        ``label:key``'s, else the own root when it knows the key, else the
        one shared root that does (``Ambiguous`` when several do; the own
        root, which then raises ``NotFound``, when none)."""
        label, key = self.split(ref)
        if label is not None:
            return label, self.shared[label], key
        if not self.shared or reads.knows(self.own, key):
            return None, self.own, key
        found = [(lb, s) for lb, s in self.shared.items() if reads.knows(s, key)]
        if len(found) > 1:
            raise Ambiguous(f"{key!r} is in several shared roots: name one as "
                            + " or ".join(f"{lb}:{key}" for lb, _ in found),
                            candidates=[f"{lb}:{key}" for lb, _ in found])
        if found:
            return found[0][0], found[0][1], key
        return None, self.own, key


def get(roots: Roots, ref: str) -> Entry:
    """The memory ``ref`` names in whichever root holds it (``Roots.holder``)."""
    _, store, key = roots.holder(ref)
    return reads.get(store, key)


def recalled(roots: Roots, refs: Iterable[str]) -> None:
    """Count the own root's memories among ``refs`` as recalled
    (``reads.recalled``); a shared root's (``label:id``) is not recorded."""
    if isinstance(refs, str) or not roots.shared:
        return reads.recalled(roots.own, refs)  # (it refuses one string)
    reads.recalled(roots.own, [r for r in refs if roots.split(r)[0] is None])


def markdown(roots: Roots, ref: str) -> str:
    """The file of the memory ``ref`` names, as it is on disk, in its root."""
    _, store, key = roots.holder(ref)
    return reads.markdown(store, key)


# ---------------------------------------------------------------------------
# ranked together


def search(roots: Roots, query: str, *, limit: int = 10, record: bool = True, explain: bool = False,
           **filters: Any) -> list[SearchHit]:
    """``reads.search`` over every root, ranked together (the module's
    docstring); each hit of a shared root names it (``SearchHit.root``).
    Only the own root's hits are recorded as recalls."""
    if not roots.shared:
        return reads.search(roots.own, query, limit=limit, record=record, explain=explain, **filters)
    lists: list[list[SearchHit]] = []
    for label, store in roots.all():
        hits = reads.search(store, query, limit=limit, record=False, explain=explain, **filters)
        lists.append([h if label is None else dataclasses.replace(h, root=label) for h in hits])
    weigh = weigher(query, [s.view for _, s in roots.all()])
    weights = [[weigh(h.index_terms) for h in hits] for hits in lists]
    if explain:
        for hits, ws in zip(lists, weights, strict=True):
            for h, w in zip(hits, ws, strict=True):
                if h.explain is not None:
                    h.explain["root"], h.explain["merged_weight"] = h.root, round(w, 4)
    out = merge(lists, weights)[:limit]
    if record:  # the own root's direct hits that were shown; a shared root is never written
        roots.own.usage.record_recalls([h.entry.id for h in out if h.root is None and h.direct])
    return out


# ---------------------------------------------------------------------------
# the roots given

_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def labelled(own: Path, shared: Iterable[str | os.PathLike[str]] | Mapping[str, str | os.PathLike[str]] | None
             ) -> dict[str, Path]:
    """The shared roots by label: a mapping's own labels, else each path's
    folder name. A label is a plain name (letters, digits, ``.``, ``_``,
    ``-``: it stands before ``:`` in a reference and is written in answers,
    never a path). Raises ``InvalidInput`` for another label, one given
    twice, a shared root that is the own root or given twice, or inside
    another of the roots, or holding one."""
    if shared is None:
        return {}
    if isinstance(shared, (str, os.PathLike)):
        raise InvalidInput("shared: a list of roots (or a mapping label → root), not one path", what="shared")
    pairs = (list(shared.items()) if isinstance(shared, Mapping)
             else [(Path(p).absolute().name, p) for p in shared])
    out: dict[str, Path] = {}
    seen = {os.path.realpath(own)}
    for label, path in pairs:
        if not isinstance(label, str) or not _LABEL.fullmatch(label):
            raise InvalidInput(f"shared: {label!r} is no label for a root (letters, digits, '.', '_', '-'; "
                               "give a mapping label → root to name one)", what="shared")
        if label in out:
            raise InvalidInput(f"shared: two roots are labelled {label!r} (give a mapping label → root)",
                               what="shared")
        full = Path(path).absolute()
        real = os.path.realpath(full)
        if real in seen:
            raise InvalidInput(f"shared: {label!r} is this root or another shared root again", what="shared")
        if any(_within(real, other) or _within(other, real) for other in seen):
            # (one root's walk would take the other's notes for a person's notes of its own)
            raise InvalidInput(f"shared: {label!r} is inside this root or another given root, or holds one",
                               what="shared")
        seen.add(real)
        out[label] = full
    return out


def _within(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)
