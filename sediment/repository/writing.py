"""The front door's verbs: writing memories: add, update, edit, move, archive, purge, restore.

``Repository`` (``sediment/repository/__init__.py``) is made of these groups; each
method hands its arguments to the module that does the work, in one statement.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Callable, Iterable, Mapping

from ..model.entry import Entry
from ..verbs import writes
from .part import Part


class Writing(Part):
    """Writing memories: add, update, edit, move, archive, purge, restore."""

    # ------------------------------------------------------------------ writing

    def add(self, text: str, *, title: str | None = None, room: str | None = None,
            tags: Iterable[str] = (), kind: str | None = None, value: float | None = None,
            source: str | None = None, links: Iterable[str] = (), layer: str = "shallow",
            now: _dt.datetime | str | None = None, entities: Mapping[str, Any] | None = None,
            **fields: Any) -> Entry:
        """Write a new memory and return it.

        ``text`` is the markdown body. ``title`` defaults to the first line of the
        text. ``kind`` is one of the policy's kinds (another is ``InvalidInput``
        naming them); missing → ``inbox``, marked ``unclassified``. ``value``
        0–1, or ``weights={'importance': 1–5, …}``.
        ``links`` are names (or ``[[name]]``) of other memories. Structured
        reasoning goes in ``evidence``, ``hesitation``, ``conclusion``; narrative in
        ``context``, ``gesture``, ``direction`` (strings or lists): they are written
        as markdown sections. Other keyword fields (``event``, ``source_links``, …)
        are stored in the frontmatter as given. ``layer`` is shallow (default),
        sediment or bedrock: ``archive`` holds retired memories (``archive()``)
        and is refused. ``now`` sets the creation time (for importing older
        memories; a date or a time without an offset is in the root's timezone).
        ``entities`` names the people (organisations, places) the memory is
        about, each with its role(s): ``{"张三": "审查", "Alice": ["decided", "deployed"]}``.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("Use PKCE on mobile.", title="PKCE", kind="rule", tags=["auth"],
        ...              evidence=["mobile apps cannot keep a secret"], entities={"Alice": "decided"})
        >>> e.path == f"shallow/pkce-{e.id[-4:].lower()}.md", e.kind, e.sections["evidence"], e.meta["entities"]
        (True, 'rule', '- mobile apps cannot keep a secret', {'Alice': 'decided'})

        Raises ``InvalidInput``/``UnsafePath`` for bad arguments, ``TooLarge`` over
        the body limit, ``PolicyError`` beyond the core cap; nothing is written then.
        """
        return writes.add(self.store, text, title=title, room=room, tags=tags, kind=kind, value=value,
                          source=source, links=links, layer=layer, now=now, entities=entities, **fields)

    def update(self, id: str, *, expected: str | None = None, **changes: Any) -> Entry:
        """Change a memory in place (its file name and folder stay).

        ``changes`` may set ``text`` (the main text; sections are kept unless
        given), ``title``, ``tags`` (replaces the tags), ``add_tags`` and
        ``remove_tags`` (change them, keeping the others; not with ``tags``;
        a tag to remove that the note lacks is a warning), ``kind``, ``value``,
        ``links``, ``source``, section names, and other frontmatter fields
        (``None`` removes one).
        ``expected`` is the ``version`` the caller read: if the file changed since
        (another process, or a person in an editor), ``Conflict`` is raised and
        nothing is written.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("draft", title="t")
        >>> e2 = repo.update(e.id, expected=e.version, text="final")
        >>> repo.update(e.id, expected=e.version, text="lost update")
        Traceback (most recent call last):
        ...
        sediment.errors.Conflict: ...
        """
        return writes.update(self.store, id, expected=expected, **changes)

    def edit(self, id: str, change: Callable[[str], str], *, expected: str | None = None) -> Entry:
        """Rewrite a memory's body, sections and all, with ``change(body)``:
        ``body`` is what the file holds now, and the writer lock is held from
        reading it to writing the result, so no one's edit falls in between.
        The frontmatter keeps every field but ``updated``. With ``expected``
        (a version read), a memory changed since is ``Conflict``; a body
        that would not read back as written (it would break the note's
        frontmatter) is ``InvalidInput``; what ``change`` raises is raised.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("Deploys go through ArgoCD.", kind="fact")
        >>> repo.edit(e.id, lambda body: body.replace("ArgoCD", "Flux"), expected=e.version).body
        'Deploys go through Flux.\\n'
        """
        return writes.edit(self.store, id, change, expected=expected)

    def move(self, id: str, layer: str, *, room: str | None = None, reason: str | None = None) -> Entry:
        """Move a memory to another layer (and/or room; the room is kept unless
        given). The file name stays, so ``[[name]]`` links keep working. A move
        sets ``reason`` (the one given, or none) and the status its target
        implies (archive → archived), nothing else; an archived, superseded or
        purged memory comes back only through ``restore``.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("x", title="note", room="auth")
        >>> repo.move(e.id, "sediment").path == f"sediment/auth/{e.name}.md"
        True
        """
        return writes.move(self.store, id, layer, room=room, reason=reason)

    def archive(self, id: str, *, reason: str) -> Entry:
        """Move a memory to ``archive/`` with status ``archived`` and the reason.
        Archived memories are searched only when asked (``include_archive``).

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("old phone number", kind="fact")
        >>> a = repo.archive(e.id, reason="changed")
        >>> a.layer, a.status, repo.search("phone", record=False)
        ('archive', 'archived', [])
        """
        return writes.archive(self.store, id, reason=reason)

    def purge(self, id: str, *, confirm: bool = False, reason: str = "purged", erase: bool = False) -> Entry:
        """Retire a memory for good: it moves to ``archive/`` marked ``purged`` and
        is no longer found by any search. Nothing is deleted (a person can still
        read, restore or delete the file). With ``erase=True`` (a secret written
        by mistake) only a tombstone stays: id, name, reason and dates, no text,
        tags or other fields, so links do not dangle (git history still has the
        text: README, "Erasing a memory").

        Needs ``confirm=True`` (policy ``confirm_destructive``) and counts against
        ``destructive_per_hour``; a refused or failed call changes nothing and
        uses up nothing. Raises ``PolicyError``.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("wrong fact", kind="fact")
        >>> repo.purge(e.id, confirm=True).status
        'purged'
        """
        return writes.purge(self.store, id, confirm=confirm, reason=reason, erase=erase)

    def restore(self, id: str, *, layer: str = "shallow", confirm: bool = False) -> Entry:
        """Bring an archived or superseded memory back to an active status in
        ``layer``; status and reason are reset. The only way back to active.
        A purged memory needs ``confirm=True`` (``list(status="purged")`` finds
        them); an erased one cannot come back.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("the office is on floor 3", kind="fact")
        >>> _ = repo.archive(e.id, reason="moved offices")
        >>> r = repo.restore(e.id)
        >>> r.layer, r.status, "reason" in r.meta
        ('shallow', 'active', False)
        """
        return writes.restore(self.store, id, layer=layer, confirm=confirm)
