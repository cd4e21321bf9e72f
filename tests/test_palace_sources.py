"""The palace map, the graph, and stored sources.

* ``MAP.md`` keeps a term as a topic only in 3 memories or more and 20% of them
  or fewer; its links resolve to notes; the same root gives the same bytes;
  it is no memory and no ``check()`` problem; a person's own ``MAP.md`` is kept;
* ``graph`` exports link, evidence, supersedes and event edges as Mermaid and JSON;
* a session stored under ``sources/`` reads back turn for turn, grows by
  appending, is not indexed, and ``unlinked_sources`` lists the turns no memory
  points to; ``consolidate_with`` writes only through ``add``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import stat

import pytest

from sediment import Conflict, InvalidInput, PolicyFileError, Repository
from sediment.agent import sources as SRC
from sediment.cli.main import main

from _fifo import unblocked

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "root") as r:
        yield r


# --------------------------------------------------------------------------- map

def _map_root(repo) -> None:
    # 20 current memories: 'kafka' in 5 (25%: too common), 'zookeeper' in 4
    # (20%: kept), 'flink' in 3 (kept), 'spark' in 2 (too rare); 数据库 in 3 (a noun, kept),
    # 设计 in 5 (too common)
    for i in range(20):
        words = [f"filler{i}"]
        if i < 5:
            words.append("kafka")
        if i < 4:
            words.append("zookeeper")
        if 5 <= i < 8:
            words.append("flink")
        if 8 <= i < 10:
            words.append("spark")
        zh = ("数据库" if 10 <= i < 13 else "") + ("设计" if 13 <= i < 18 else "")
        repo.add(" ".join(words) + " " + zh + f" 笔记{i}", title=f"note {i}", kind="fact",
                 room="infra" if i % 2 else None)
    old = repo.add("kafka zookeeper flink 数据库 retired", kind="fact")
    repo.archive(old.id, reason="not current: not counted")


def test_map_keeps_topics_between_3_memories_and_20_percent(repo):
    _map_root(repo)
    m = repo.map()
    text = (repo.root / "MAP.md").read_text(encoding="utf-8")
    topics = {t for room in m.topics.values() for t in room}
    assert {"zookeeper", "flink", "数据库"} <= topics
    assert not {"kafka", "spark", "设计"} & topics
    assert m.rooms == {"": 10, "infra": 10}
    assert "**kafka**" not in text and "**zookeeper**" in text and "**数据库**" in text


def test_map_links_are_obsidian_wikilinks_to_notes(repo):
    _map_root(repo)
    repo.map()
    text = (repo.root / "MAP.md").read_text(encoding="utf-8")
    names = {e.name for e in repo.list()}
    links = re.findall(r"\[\[([^\]|]+)(?:\|[^\]]*)?\]\]", text)
    assert links and set(links) <= names
    assert "## infra (10)" in text and "## (no room) (10)" in text


def test_map_is_byte_stable_and_no_memory(repo, tmp_path):
    _map_root(repo)
    n = len(repo)
    repo.map()
    first = (repo.root / "MAP.md").read_bytes()
    repo.map()
    assert (repo.root / "MAP.md").read_bytes() == first
    repo.close()
    copy = tmp_path / "copy"
    shutil.copytree(repo.root, copy)
    shutil.rmtree(copy / "_system" / "cache", ignore_errors=True)
    (copy / "MAP.md").unlink()
    with Repository(copy) as other:
        other.map()
        assert (copy / "MAP.md").read_bytes() == first
    with Repository(copy) as other:  # an open, a rescan and check() all walk the root
        other.refresh()
        assert len(other) == n  # not indexed as a memory, nor as a person's note
        assert all(h.entry.path != "MAP.md" for h in other.search("zookeeper", record=False, limit=50))
        assert [p for p in other.check() if "MAP" in p.path] == []


def test_map_never_replaces_a_persons_map(repo):
    (repo.root / "MAP.md").write_text("# my own map of things\n", encoding="utf-8")
    repo.add("x", kind="fact")
    with pytest.raises(Conflict, match="map_file"):
        repo.map()
    assert (repo.root / "MAP.md").read_text(encoding="utf-8") == "# my own map of things\n"
    with Repository(repo.root, policy={"map_file": "PALACE.md"}) as other:
        assert other.map().path == "PALACE.md" and (repo.root / "PALACE.md").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_at_the_map_or_a_source_is_refused_never_read(repo):
    """A FIFO a person left at ``MAP.md`` or among the session files is not
    a file to read: ``map()`` keeps it (``Conflict``) and ``unlinked_sources``
    passes it over, at once. Opening it to read would block until something
    wrote to it: for good, with the writer lock held."""
    repo.add_source("talk", [("user", "hello there")], now=T0)
    os.mkfifo(repo.root / "MAP.md")
    os.mkfifo(repo.root / "sources" / "pipe.md")
    got: dict[str, object] = {}

    def run() -> None:
        try:
            repo.map()
        except Conflict as exc:
            got["map"] = exc
        got["unlinked"] = [t.session for t in repo.unlinked_sources()]
    unblocked(run, repo.root / "MAP.md", repo.root / "sources" / "pipe.md")
    assert isinstance(got["map"], Conflict) and got["unlinked"] == ["talk"]
    assert stat.S_ISFIFO(os.lstat(repo.root / "MAP.md").st_mode)


def test_map_file_and_sources_folder_are_checked_policy_keys(tmp_path):
    for key, bad in (("map_file", "../MAP.md"), ("map_file", "MAP.txt"), ("sources_folder", "shallow"),
                     ("sources_folder", ".hidden"), ("sources_folder", "a/b")):
        with pytest.raises(PolicyFileError, match=key):
            Repository(tmp_path / "r", policy={key: bad})


# --------------------------------------------------------------------------- graph

def _graph_root(repo):
    a = repo.add("Mobile apps cannot keep a secret.", title="no secrets", kind="fact")
    b = repo.add("Use PKCE on mobile.", title="PKCE", kind="rule", links=[a.name],
                 evidence=[f"see [[{a.name}]]"])
    c = repo.add("Login: implicit flow.", title="login v1", kind="fact", event="login")
    d = repo.add("Actually, login uses PKCE.", title="login v2", kind="fact", event="login", links=[b.name])
    return a, b, c, d


def test_graph_json_has_each_kind_of_edge(repo):
    a, b, c, d = _graph_root(repo)
    g = json.loads(repo.graph(format="json"))
    assert {n["id"] for n in g["nodes"]} == {a.id, b.id, c.id, d.id}
    edges = {(e["source"], e["target"], e["type"]) for e in g["edges"]}
    assert (b.id, a.id, "evidence") in edges  # a link in the Evidence section
    assert (d.id, b.id, "link") in edges
    assert (d.id, c.id, "supersedes") in edges  # the overturn retired v1
    assert (c.id, d.id, "event") in edges
    assert repo.graph(format="json") == repo.graph(format="json")


def test_an_evidence_link_written_with_md_is_an_evidence_edge(repo):
    a = repo.add("Mobile apps cannot keep a secret.", title="no secrets", kind="fact")
    b = repo.add("Use PKCE on mobile.", title="PKCE", kind="rule", evidence=[f"see [[{a.name}.md|the fact]]"])
    edges = {(e["source"], e["target"], e["type"]) for e in json.loads(repo.graph(format="json"))["edges"]}
    assert (b.id, a.id, "evidence") in edges and (b.id, a.id, "link") not in edges


def test_graph_mermaid(repo):
    _graph_root(repo)
    out = repo.graph()
    assert out.startswith("graph LR\n")
    assert "-.->|evidence|" in out and "==>|supersedes|" in out and "---|event|" in out and " --> " in out
    assert 'subgraph ev0["event: login"]' in out
    with pytest.raises(InvalidInput):
        repo.graph(format="dot")


# --------------------------------------------------------------------------- sources

TURNS = [("user", "记得周五前发版"), ("assistant", "好的。\n\n> 引用一行\n^t9 is not an id here"),
         {"role": "user", "text": "Use PKCE on mobile", "time": "2026-03-02T10:00:00+08:00"}]


def test_a_session_round_trips_turn_for_turn(repo):
    s = repo.add_source("session-1", TURNS, now=T0)
    assert s.path == "sources/session-1.md" and s.added == 3
    assert [t.id for t in s.turns] == ["t1", "t2", "t3"]
    text = (repo.root / s.path).read_text(encoding="utf-8")
    back = SRC.parse(text, "session-1")
    assert [(t.role, t.text) for t in back] == [("user", "记得周五前发版"), ("assistant", TURNS[1][1]),
                                              ("user", "Use PKCE on mobile")]
    assert back == list(s.turns)
    assert back[2].time == "2026-03-02T10:00:00+08:00" and back[0].time == T0.isoformat()
    # each turn is a block with its id on a line of its own, as Obsidian wants
    assert re.search(r"\n> 记得周五前发版\n\n\^t1\n", text)
    assert [t.link for t in s.turns][0] == "[[session-1#^t1]]"


def test_a_session_grows_by_appending_and_a_retry_adds_nothing(repo):
    repo.add_source("s", TURNS[:2], now=T0)
    path = repo.root / "sources" / "s.md"
    before = path.read_bytes()
    assert repo.add_source("s", TURNS[:2], now=T0).added == 0
    assert path.read_bytes() == before
    # a person's note between turns stays as it is, byte for byte (even bytes
    # that are not UTF-8)
    path.write_bytes(before + "\nmy own remark\xff\n".encode("latin-1"))
    before = before + "\nmy own remark\xff\n".encode("latin-1")
    s = repo.add_source("s", [*TURNS[:2], ("user", "还有一件事")], now=T0)
    assert s.added == 1 and [t.id for t in s.turns] == ["t1", "t2", "t3"]
    assert path.read_bytes().startswith(before)
    assert repo.add_source("s", [("user", "还有一件事")], now=T0).added == 0


def test_sources_are_not_memories_and_no_check_problem(repo):
    repo.add_source("session-1", TURNS, now=T0)
    e = repo.add("发版日期定在周五", kind="fact", source="session-1", source_links=["[[session-1#^t1]]"])
    repo.add("See [[session-1#^t3]] for the PKCE talk.", kind="fact")
    repo.refresh()
    assert len(repo) == 2
    assert [h.entry.id for h in repo.search("周五", record=False)] == [e.id]
    assert repo.check() == []
    repo.close()
    with Repository(repo.root) as again:  # a cold open walks the root too
        assert len(again) == 2 and again.check() == []


def test_unlinked_sources_lists_turns_no_memory_points_to(repo):
    s = repo.add_source("session-1", TURNS, now=T0)
    repo.add_source("session-2", ["hello there"], now=T0 + dt.timedelta(days=10))
    assert [(t.session, t.id) for t in repo.unlinked_sources()] == [
        ("session-1", "t1"), ("session-1", "t2"), ("session-1", "t3"), ("session-2", "t1")]
    repo.add("发版日期定在周五", kind="fact", source_links=[s.turns[0].link, "session-1#^t3"])
    assert [(t.session, t.id) for t in repo.unlinked_sources()] == [("session-1", "t2"), ("session-2", "t1")]
    assert [(t.session, t.id) for t in repo.unlinked_sources(since=T0 + dt.timedelta(days=1))] == [
        ("session-2", "t1")]
    repo.add("a greeting", kind="fact", source_links=["[[session-2]]"])  # the whole session
    assert [(t.session, t.id) for t in repo.unlinked_sources()] == [("session-1", "t2")]


def test_consolidate_with_writes_only_through_add(repo):
    repo.add_source("s1", ["部署改用 Flux", "好的", "数据库换成 Postgres 16"], now=T0)
    seen = []

    def llm(turns):
        seen.append([t["id"] for t in turns])
        return [{"text": "部署用 Flux", "kind": "fact", "tags": ["部署"], "turns": ["t1"]},
                {"text": "bad", "turns": ["t99"]},  # a turn it was not given
                {"text": "x", "path": "../../etc"},  # not an argument of add
                "not a mapping"]

    r = repo.consolidate_with(llm)
    assert seen == [["t1", "t2", "t3"]]
    assert [(e.kind, e.tags, e.source, e.source_links) for e in r.added] == [
        ("fact", ("部署",), "s1", ("[[s1#^t1]]",))]
    assert len(r.skipped) == 3
    assert [t.id for t in repo.unlinked_sources()] == ["t2", "t3"]
    # without an llm: each unlinked turn becomes an inbox fragment, deterministically
    r2 = repo.consolidate_with()
    assert [(e.kind, e.text.strip(), e.source_links) for e in r2.added] == [
        ("inbox", "好的", ("[[s1#^t2]]",)), ("inbox", "数据库换成 Postgres 16", ("[[s1#^t3]]",))]
    assert repo.unlinked_sources() == [] and repo.consolidate_with().added == []


def test_add_source_refuses_what_cannot_be_a_link_target(repo):
    for bad in ("a#b", "../x", "s.md", "x|y", ""):
        with pytest.raises(InvalidInput):
            repo.add_source(bad, ["hi"])
    with pytest.raises(InvalidInput):
        repo.add_source("ok", [""])
    with pytest.raises(InvalidInput):
        repo.add_source("ok", "a string is not a list of turns")
    assert not (repo.root / "sources").exists()


# --------------------------------------------------------------------------- CLI

def test_cli_commands(repo, capsys, tmp_path):
    repo.add("The Berlin office is on floor 3.", kind="fact")
    repo.add("The Berlin office is on floor 5.", kind="fact")
    repo.close()
    root = str(repo.root)

    def run(*args):
        capsys.readouterr()
        assert main(["--root", root, "--json", *args]) == 0
        return json.loads(capsys.readouterr().out)

    assert run("conflicts")[0]["clue"] == "floor: 3 vs 5"
    assert run("patrol", "--now", "2026-03-01T00:00:00+00:00")["path"] == "_system/patrol/2026-03-01.md"
    assert run("map")["path"] == "MAP.md"
    assert len(run("graph", "--format", "json")["nodes"]) == 2
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([["user", "hello"], {"role": "assistant", "text": "hi"}]), encoding="utf-8")
    assert run("add-source", "s1", "--turns", str(turns))["added"] == 2
    assert [t["link"] for t in run("unlinked-sources")] == ["[[s1#^t1]]", "[[s1#^t2]]"]
