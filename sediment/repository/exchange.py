"""The front door's verbs: memories out and in: export, import_.

``Repository`` (``sediment/repository/__init__.py``) is made of these groups; each
method hands its arguments to the module that does the work, in one statement.
"""

from __future__ import annotations

import os
from typing import IO, TYPE_CHECKING, Any

from .part import Later, Part

if TYPE_CHECKING:  # (imported when a verb first calls it: part.Later)
    from ..verbs import exchange
else:
    exchange = Later("sediment.verbs.exchange")


class Exchange(Part):
    """Memories out and in: export, import_."""

    def export(self, jsonl: str | os.PathLike[str] | IO[str] | None = None, *,
               dir: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        r"""Write every memory out: its file as it is, the fields read from it
        (frontmatter, body, layer, room, status: archived, superseded, purged
        and erased ones too, and a person's notes outside the layer folders)
        and its usage summary, as JSON Lines (``docs/export-format.md``): a
        header line, then one object a memory, by path.

        ``jsonl`` is a file to write (replaced whole, atomically) or a text
        stream; ``dir`` a new or empty folder that gets every note's file at
        its path and the JSON Lines beside them as ``sediment-export.jsonl``.
        Give one. Returns counts and where it wrote; ``missing`` lists notes
        that vanished while being read. Progress is 'export'.

        >>> import tempfile, json; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("Deploys go through ArgoCD.", kind="fact")
        >>> out = repo.export(tempfile.mkdtemp() + "/out.jsonl")
        >>> lines = open(out["file"], encoding="utf-8").read().splitlines()
        >>> json.loads(lines[1])["text"] == (repo.root / e.path).read_text(encoding="utf-8"), out["memories"]
        (True, 1)

        Raises ``InvalidInput`` for neither or both, a target inside the root
        or a ``dir`` that holds files; ``StorageError`` when it cannot be written.
        """
        return exchange.export(self.store, jsonl, dir=dir)

    def import_(self, source: str | os.PathLike[str], *, dry_run: bool = True,
                kind: str | None = None) -> dict[str, Any]:
        r"""Bring memories in from ``source``: an export of ``export`` (the
        JSON Lines file, or its folder), a mem0 export (the JSON of
        ``Memory.get_all()``: ``{"results": [...]}`` or a bare list), or a
        folder of markdown notes (each adopted, as ``adopt`` does: its bytes
        kept, an id, times, a ``kind`` and a title inserted where missing; a
        note outside a layer folder goes to ``shallow/``, its folders kept).

        A dry run unless ``dry_run=False``: the report says what would be
        added, skipped and refused, and nothing is written. Applied, each note
        is written whole (a crash leaves no half note), never over a file;
        a memory whose id (or mem0 id) the root holds is skipped, so running
        it again writes nothing twice. An export's notes keep their ids, paths
        and bytes, and their usage comes back with them. A record that cannot
        be a note here (malformed; a path with ``..``, absolute, in
        ``_system/``, hidden) is refused with its line, the rest go on.
        ``kind``: the kind of mem0's memories and of adopted notes that
        declare none (default ``fact``). Progress is 'import'.

        >>> import tempfile; from sediment import Repository
        >>> a = Repository(tempfile.mkdtemp()); e = a.add("周五前发版", kind="rule")
        >>> out = a.export(tempfile.mkdtemp() + "/a.jsonl")["file"]
        >>> b = Repository(tempfile.mkdtemp())
        >>> b.import_(out)["added"], len(b), b.import_(out, dry_run=False)["added"], b.get(e.id).body
        (1, 0, 1, '周五前发版\n')
        >>> b.import_(out, dry_run=False)["skipped"]
        1

        Raises ``NotFound`` for a missing source, ``InvalidInput`` for an
        unknown ``kind``, a source that cannot be read or a folder that is
        the root, inside it or around it; ``StorageError``
        (or ``LockTimeout``) when writes are off.
        """
        return exchange.import_(self.store, source, dry_run=dry_run, kind=kind)
