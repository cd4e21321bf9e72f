"""The front door's verbs: what an agent asks each turn: context, working memory, mood, about, profile,
and the names a memory's text holds that its entities do not (proposed, applied when asked).

``Repository`` (``sediment/repository/__init__.py``) is made of these groups; each
method hands its arguments to the module that does the work, in one statement.
"""

from __future__ import annotations

import builtins
import datetime as _dt
from typing import TYPE_CHECKING, Iterable

from .part import Later, Part

if TYPE_CHECKING:  # (the modules below are imported when a verb first calls them: part.Later)
    from ..agent import about as _about
    from ..agent import context as _context
    from ..agent import profile as _profile
    from ..agent import proposed as _proposed
    from ..agent import working
    from ..agent.about import About
    from ..agent.context import Context
    from ..agent.profile import Profile
    from ..agent.proposed import Proposed
    from ..agent.workstate import Mood, Observed, Working
    from ..model.entry import Entry
else:
    _about = Later("sediment.agent.about")
    _context = Later("sediment.agent.context")
    _profile = Later("sediment.agent.profile")
    _proposed = Later("sediment.agent.proposed")
    working = Later("sediment.agent.working")


class ForAgent(Part):
    """What an agent asks each turn: context, working memory, mood, about, profile; proposed entities."""

    # ------------------------------------------------------------------ for the agent

    def context(self, query: str | None = None, *, budget: int = 6000,
                now: _dt.datetime | str | None = None) -> Context:
        """One markdown block for a system prompt, at most ``budget`` Unicode
        characters: who I am (core and bedrock, within policy
        ``context_core_share`` of the budget), unfinished business (working
        memory), what ``query`` reminds me of (hits over the relevance floor,
        one hop along their links, newer memories of their events), and the
        strongest of the rest. An item that does not fit is skipped and the
        next tried; each header says how many were left out. Only the injected
        "reminds me of" items the query found itself (not their neighbours)
        count as recalled (once per memory a day); the
        same root, query and ``now`` give the same block, call after call.
        ``ctx.items``, ``ctx.omitted``, ``ctx.size`` and ``ctx.tokens`` are for
        programs. With shared roots, "what this reminds me of" draws on every
        root, ranked together as ``search`` ranks them, a shared root's item
        marked ``· from <label>`` (``item.root``) and never recorded; "who I
        am" and "the strongest of the rest" are this root's.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = repo.add("Answer in short sentences.", title="How I answer", kind="core")
        >>> _ = repo.add("Deploys go through ArgoCD.", title="Deploy tool", kind="fact")
        >>> ctx = repo.context("how do we deploy", budget=2000)
        >>> [(i.section, i.snippet) for i in ctx.items]
        [('core', 'How I answer: Answer in short sentences.'), ('reminds', 'Deploy tool: Deploys go through ArgoCD.')]
        >>> ctx.size <= 2000, str(ctx).splitlines()[0]
        (True, '<memories>')
        """
        return _context.build(self.store, query, budget=budget, now=now, shared=self.roots.shared)

    def observe(self, text: str, *, now: _dt.datetime | str | None = None,
                request: str | None = None) -> Observed:
        """Read a message for todos and promises (zh and en plain patterns:
        记得, 别忘了, 答应过, remember to, I'll … tomorrow, TODO: …) and
        for "done" (做完了, 已经发了, done, sent, fixed …), which closes the
        open item it shares most words with. At most policy ``working_items``
        (3) are open, a new one replacing the oldest; one not mentioned for
        ``working_days`` (3) days is gone. Kept in ``_system/working/``, not as
        memories. ``request`` is a key of the caller's for this call: the
        same message observed again with the same key (a retry) changes
        nothing again.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> [i.text for i in repo.observe("好的。别忘了明天给老王发报价单！").opened]
        ['别忘了明天给老王发报价单！']
        >>> [i.text for i in repo.observe("报价单已经发给老王了").closed]
        ['别忘了明天给老王发报价单！']
        >>> repo.observe("TODO: a", request="r1").opened == (), repo.observe("TODO: a", request="r1").opened
        (False, ())
        """
        return working.observe(self.store, text, now=now, request=request)

    def working(self, *, now: _dt.datetime | str | None = None) -> Working:
        """The open todos and promises (oldest first) and the mood, as they are
        at ``now``. Reads only.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = repo.observe("Remember to rotate the API keys on Friday.")
        >>> [i.text for i in repo.working().items]
        ['Remember to rotate the API keys on Friday.']
        """
        return working.working(self.store, now=now)

    def mood(self, text: str, *, now: _dt.datetime | str | None = None) -> Mood | None:
        """Set the mood (one state, overwritten by the next) for policy
        ``mood_hours`` (6); ``mood("")`` clears it. Shown in the context block.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> repo.mood("有点累，回答简短些").text, repo.working().mood.text
        ('有点累，回答简短些', '有点累，回答简短些')
        """
        return working.set_mood(self.store, text, now=now)

    def about(self, topic: str, *, now: _dt.datetime | str | None = None) -> About:
        """What do I know about ``topic``: the memories on it (current,
        superseded and archived), each with recalls, confirmations and
        refutations, layer, lifecycle state, what replaced it and its
        evidence; ``summary`` says the counts in one paragraph. A topic that
        names a known person (any of their names) brings their profile's first
        lines too (``people``; ``profile`` has the rest). Not a recall;
        writes nothing. With shared roots, every root's memories, ranked
        together as ``search`` ranks them (``known.root`` names a shared one).

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> a = repo.add("Deploys go through ArgoCD.", title="Deploy tool", kind="fact")
        >>> b = repo.add("Deploys go through Flux now.", title="Deploy tool, new", kind="fact")
        >>> _ = repo.supersede(a.id, b.id)
        >>> [(k.title, k.status) for k in repo.about("deploys").memories]
        [('Deploy tool', 'superseded'), ('Deploy tool, new', 'active')]
        >>> repo.about("deploys").summary.split(";")[0]
        "About 'deploys': 2 memories (1 active, 1 superseded"
        >>> _ = repo.add("Runs the deploys; prefers Flux.", title="Dana", kind="person", aliases=["D."])
        >>> repo.about("dana").people
        ("Person: Dana (D.): Runs the deploys; prefers Flux.; named in 0 memories; profile('Dana') has the rest",)
        """
        return _about.about_roots(self.store, self.roots.shared, topic, now=now)

    def profile(self, name: str) -> Profile:
        """What the memory holds about one person, by any of their names: their
        note of kind ``person`` (its first lines), then the current memories that
        name them, grouped as decisions, open items, impressions and facts, with
        their roles counted. Not a recall; writes nothing. With shared roots,
        every root's memories, newest first, each of a shared root naming it
        (``m.root``; the note as ``label:id``). ``InvalidInput`` for no name.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> _ = repo.add("管支付系统。", title="张三", kind="person", aliases=["老张"])
        >>> _ = repo.add("老张审查了回调重试", kind="event", entities={"张三": "审查"})
        >>> _ = repo.add("张三拍板：回调最多重试三次", kind="rule", entities={"张三": "拍板"})
        >>> p = repo.profile("老张")
        >>> p.name, p.summary, p.roles, [m.title for m in p.decisions], [m.title for m in p.facts]
        ('张三', '管支付系统。', {'审查': 1, '拍板': 1}, ['张三拍板：回调最多重试三次'], ['老张审查了回调重试'])
        """
        return _profile.profile_roots(self.store, self.roots.shared, name)

    def propose_entities(self, id: str) -> builtins.list[Proposed]:
        """The names (people, organisations, places) the memory ``id`` holds in
        its title and text that its ``entities`` property does not: a known
        person by the name they are filed under, anyone else as written.
        Proposals only: reads, writes nothing (``apply_entities`` writes them).

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("老张和 Alice 在上海见了腾讯的人", kind="event", entities={"Alice": "host"})
        >>> [(p.name, p.type) for p in repo.propose_entities(e.id)]
        [('老张', 'person'), ('上海', 'place'), ('腾讯', 'org')]
        """
        return _proposed.propose(self.store, id)

    def apply_entities(self, id: str, names: Iterable[str] | None = None, *,
                       expected: str | None = None) -> Entry:
        """Write the proposed names (all, or those ``names`` gives) into the
        memory's ``entities`` property, without a role (a journaled write; the
        rest of the note as it was). ``expected``: the version the proposals
        were read at (``Conflict`` if the note changed since). ``InvalidInput``
        for a person's own note (outside the layer folders: sediment never
        writes it) or a name not proposed.

        >>> import tempfile; from sediment import Repository
        >>> repo = Repository(tempfile.mkdtemp())
        >>> e = repo.add("老张和 Alice 在上海见了腾讯的人", kind="event", entities={"Alice": "host"})
        >>> repo.apply_entities(e.id, ["老张", "腾讯"]).meta["entities"]
        {'Alice': 'host', '老张': None, '腾讯': None}
        """
        return _proposed.apply(self.store, id, names, expected=expected)
