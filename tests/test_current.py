"""What "current" means is one rule (``lifecycle.is_current``): a memory not
retired and not in the archive folder. Every reader that shows only what is
current agrees with it, for every layer and status a file can have (a status
set by hand outside archive/, a file moved into archive/ by hand): a search
by default, a context block, the conflict scan."""

from __future__ import annotations

import datetime as dt

import pytest

from sediment import Repository
from sediment.model import entry as E
from sediment.model.lifecycle import is_current
from sediment.search import query as S
from sediment.model.fields import build_meta, new_id, now_iso

NOW = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)
LAYERS = ("shallow", "sediment", "bedrock", "archive")
STATUSES = ("active", "superseded", "archived", "purged")
KESTREL = {("shallow", "superseded"), ("archive", "active")}  # not current, and naming the kestrel proxy


@pytest.fixture
def repo(tmp_path):
    """One memory about walruses per (layer, status), an inbox fragment, and
    a person's note outside the layer folders. Five of them (the current
    library memories, and two that are not current) also name the kestrel
    proxy's port, each another: rare anchors shared, numbers that disagree."""
    n = 0
    for layer in LAYERS:
        for status in STATUSES:
            n += 1
            extra = {"status": status} if status != "active" else {}
            meta = build_meta(id=new_id(1_700_000_000_000 + n), title=f"walrus {layer} {status}",
                                created=now_iso(NOW), kind="fact", tags=(), value=0.5, source=None, links=(),
                                extra=extra)
            path = tmp_path / layer / f"walrus-{layer}-{status}.md"
            path.parent.mkdir(exist_ok=True)
            body = "The walrus gateway serves the walrus team.\n"
            if status == "active" and layer != "archive" or (layer, status) in KESTREL:
                body += f"The kestrel proxy listens on port {8000 + n}.\n"
            path.write_text(E.render(E.Entry(meta=meta, body=body)), encoding="utf-8")
    (tmp_path / "Notes").mkdir()
    (tmp_path / "Notes" / "walrus by hand.md").write_text(
        "The walrus gateway serves the walrus team.\n", encoding="utf-8")
    with Repository(tmp_path) as r:
        r.add("walrus gateway, walrus team", kind="inbox", now=NOW)
        yield r


def _entries(repo):
    with repo.view.reading() as view:
        return list(view.entries.values())


def test_the_index_flags_say_current_as_the_rule_does(repo):
    entries = _entries(repo)
    assert len(entries) == 4 * 4 + 2
    assert {e.id for e in entries if is_current(e)} == {
        e.id for e in entries if not S.flags(e) & S.NOT_CURRENT}
    # the rule itself, spelled out: active outside archive/; a person's note is current
    assert sorted(e.title for e in entries if is_current(e) and e.kind != "inbox") == [
        "walrus bedrock active", "walrus by hand", "walrus sediment active", "walrus shallow active"]


def test_a_search_finds_what_is_current_by_default(repo):
    hits = repo.search("walrus gateway", limit=50, record=False)
    assert {h.entry.id for h in hits} == {e.id for e in _entries(repo) if is_current(e)}


def test_a_context_block_shows_current_memories_only(repo):
    block = repo.context("walrus gateway", budget=100_000, now=NOW).text
    for e in _entries(repo):
        shown = f"[[{e.name}]]" in block
        assert shown == (is_current(e) and e.kind != "inbox"), e.path


def test_the_conflict_scan_pairs_current_library_memories_only(repo):
    pairs = repo.conflicts()
    assert pairs, "the current memories disagree about the port: the scan must find them"
    paired = {x for p in pairs for x in (p.a, p.b)}
    mine = {e.id for e in _entries(repo) if is_current(e) and not e.reference}
    assert paired <= mine and len(paired) == 3
