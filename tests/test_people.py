"""People in notes (issue 29): the ``entities`` property (name → roles), the
known people (``policy.yaml`` ``people:`` and notes of kind ``person``), the
entity filter of search and list. Real roots, the real CLI, the MCP SDK's
own client over stdio."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from sediment import InvalidInput, Repository
from sediment.cli.main import main


def cli(capsys, *args: str) -> dict:
    capsys.readouterr()
    assert main(["--json", *map(str, args)]) == 0
    return json.loads(capsys.readouterr().out)


def frontmatter(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8").split("---\n")[1])


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


MEMORY = "---\nid: {id}\ntitle: {title}\ncreated: '2026-01-05T10:00:00+00:00'\n{extra}---\n{body}\n"


# --------------------------------------------------------------------------- the entities property

def test_add_writes_entities_as_a_property_a_person_reads(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("张三审查了认证改动，Alice 拍板并部署。", title="认证改动", kind="fact",
                 entities={"张三": "审查", "Alice": ["decided", "deployed"], "Acme Corp": None})
    # in the file: a block mapping, Unicode as written, one role as text, several as a list
    text = (tmp_path / e.path).read_text(encoding="utf-8")
    assert "entities:\n  张三: 审查\n  Alice:\n  - decided\n  - deployed\n  Acme Corp: null\n" in text
    assert frontmatter(tmp_path / e.path)["entities"] == {"张三": "审查", "Alice": ["decided", "deployed"],
                                                          "Acme Corp": None}
    # read back after a fresh open
    assert Repository(tmp_path).get(e.id).meta["entities"]["Alice"] == ["decided", "deployed"]
    # Tideline's several roles in one text are kept as written
    e2 = repo.add("评审会", entities={"李明": "判断+执行"})
    assert repo.get(e2.id).meta["entities"] == {"李明": "判断+执行"}


def test_update_changes_and_removes_entities(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("Bob deployed the hotfix", kind="event", entities={"Bob": "deployed"})
    e = repo.update(e.id, entities={"Bob": ["deployed", "reviewed"]})
    assert frontmatter(tmp_path / e.path)["entities"] == {"Bob": ["deployed", "reviewed"]}
    e = repo.update(e.id, entities=None)
    assert "entities" not in frontmatter(tmp_path / e.path)


@pytest.mark.parametrize("bad", [5, "张三", {"张三": {"role": "审查"}}, {"": "审查"}, {"a\nb": "x"},
                                 {"张三": ["审查", ["nested"]]}, ["张三", 5.5, True]])
def test_a_bad_entities_value_from_a_caller_is_refused_and_nothing_is_written(tmp_path, bad):
    repo = Repository(tmp_path)
    with pytest.raises(InvalidInput, match="entities"):
        repo.add("some note", entities=bad)
    assert list((tmp_path / "shallow").rglob("*.md")) == []


def test_a_bad_entities_value_typed_by_a_person_is_a_check_problem_never_an_exception(tmp_path):
    Repository(tmp_path).close()
    write(tmp_path, "shallow/ok.md", MEMORY.format(id="OK1", title="ok", extra="entities:\n  张三: 审查\n",
                                                   body="部署 ok"))
    write(tmp_path, "shallow/bad.md", MEMORY.format(id="BAD1", title="bad", body="李明部署 bad",
                                                    extra="entities:\n  张三:\n    role: 审查\n"))
    # a person's own note: any property is theirs; it stays a note, and check says what is wrong
    write(tmp_path, "notes/mine.md", "---\nentities: 42\n---\n部署 mine\n")
    repo = Repository(tmp_path)  # opens
    # a typo in the property does not take the memory out of search: it is read as far as it can be
    found = {h.entry.path for h in repo.search("部署", record=False)}  # searches
    assert found == {"shallow/ok.md", "shallow/bad.md", "notes/mine.md"}
    problems = {(p.path, p.severity): p.reason for p in repo.check()}
    assert "entities" in problems[("shallow/bad.md", "warning")]
    assert "entities" in problems[("notes/mine.md", "warning")]
    assert [p.severity for p in repo.check() if p.path == "shallow/bad.md"] == ["warning"]
    assert [e.id for e in repo.list(entity="张三")] == ["OK1"]  # (what cannot be read names nobody)
    assert repo.metabolize(dry_run=True) is not None
    assert (tmp_path / "shallow/bad.md").read_text(encoding="utf-8").count("role: 审查") == 1  # never rewritten
    with pytest.raises(InvalidInput, match="entities"):  # proposals are not written over what cannot be read
        repo.apply_entities("BAD1")
    # an edit of the memory keeps the person's value as it is (theirs to fix); update(entities=…) replaces it
    repo.update("BAD1", text="部署 bad, again")
    assert frontmatter(tmp_path / "shallow/bad.md")["entities"] == {"张三": {"role": "审查"}}
    repo.update("BAD1", entities={"张三": "审查"})
    assert [p for p in repo.check() if p.path == "shallow/bad.md"] == []


def test_a_list_of_names_is_entities_without_roles(tmp_path):
    Repository(tmp_path).close()
    write(tmp_path, "shallow/list.md", MEMORY.format(id="L1", title="standup", extra="entities:\n- 张三\n- Alice\n",
                                                     body="standup notes"))
    repo = Repository(tmp_path)
    assert repo.check() == []
    assert [e.id for e in repo.list(entity="Alice")] == ["L1"]


def test_cli_entity_option(tmp_path, capsys):
    root = tmp_path / "r"
    cli(capsys, "--root", root, "init")
    out = cli(capsys, "--root", root, "add", "Alice reviewed, Bob deployed", "--kind", "event",
              "--entity", "Alice=reviewed", "--entity", "Bob=deployed,fixed", "--entity", "Acme Corp")
    assert frontmatter(root / out["path"])["entities"] == {"Alice": "reviewed", "Bob": ["deployed", "fixed"],
                                                           "Acme Corp": None}
    cli(capsys, "--root", root, "add", "Carol wrote the spec", "--kind", "fact")
    listed = cli(capsys, "--root", root, "list", "--entity", "bob")
    assert [e["id"] for e in listed] == [out["id"]]
    hits = cli(capsys, "--root", root, "search", "reviewed spec", "--entity", "Alice")
    assert [h["id"] for h in hits] == [out["id"]]


def test_mcp_remember_takes_entities_and_recall_filters_by_them(tmp_path):
    pytest.importorskip("mcp")
    from tests.test_server import call, connect, run
    Repository(tmp_path).close()

    async def go() -> None:
        async with connect(tmp_path) as c:
            _, data = await call(c, "remember", text="张三审查了迁移脚本", kind="event",
                                 entities={"张三": "审查", "王磊": ["执行"]})
            await call(c, "remember", text="张三丰审查了太极拳谱", kind="event", entities={"张三丰": "审查"})
            _, found = await call(c, "recall", query="审查", entity="张三")
            assert [h["id"] for h in found["hits"]] == [data["id"]]
    run(go)
    notes = [frontmatter(p) for p in (tmp_path / "shallow").rglob("*.md")]
    assert {"张三": "审查", "王磊": ["执行"]} in [n.get("entities") for n in notes]


# --------------------------------------------------------------------------- known people

POLICY_PEOPLE = "\npeople:\n  张三: [老张, Zhang San]\n  张三丰: []\n  Alice Chen: [Alice]\n"


def test_known_people_resolve_every_name_and_keep_zhang_san_and_zhang_sanfeng_apart(tmp_path):
    Repository(tmp_path).close()
    with open(tmp_path / "_system/policy.yaml", "a", encoding="utf-8") as f:
        f.write(POLICY_PEOPLE)
    repo = Repository(tmp_path)
    a = repo.add("昨天和老张对了一下发布计划", kind="event")
    b = repo.add("张三丰在武当山练剑", kind="event")
    c = repo.add("Zhang San merged the migration", kind="event")
    d = repo.add("评审会", kind="event", entities={"Alice": "decided", "老张": "审查"})
    e = repo.add("Alice Wong joined the call", kind="event")  # someone else, not known
    ids = lambda name: sorted(x.id for x in repo.list(entity=name))  # noqa: E731
    assert ids("张三") == ids("老张") == ids("zhang san") == sorted([a.id, c.id, d.id])
    assert ids("张三丰") == [b.id]
    assert ids("Alice Chen") == [d.id]
    assert ids("Alice Wong") == [e.id]  # an unknown name: found as written
    assert repo.check() == []


def test_a_person_note_makes_a_known_person_with_its_aliases(tmp_path):
    repo = Repository(tmp_path)
    repo.add("负责支付系统，说话直接。", title="王磊", kind="person", aliases=["小王"])
    talk = repo.add("小王说支付回调要重试", kind="event")
    other = repo.add("王总批了预算", kind="event")  # 王总 is another 王
    assert [x.id for x in repo.list(entity="王磊", kind="event")] == [talk.id]
    assert other.id not in {x.id for x in repo.list(entity="小王")}


def test_a_name_given_to_two_people_is_a_check_warning_not_an_error(tmp_path):
    Repository(tmp_path).close()
    with open(tmp_path / "_system/policy.yaml", "a", encoding="utf-8") as f:
        f.write("\npeople:\n  王磊: [小王]\n  王建国: [小王, 王总]\n  李明: {a: b}\n")
    repo = Repository(tmp_path)  # opens: what cannot be read is left out
    reasons = [p.reason for p in repo.check() if p.code == "people"]
    assert any("'小王' is a name of both '王磊' and '王建国'" in r for r in reasons)
    assert any("李明" in r for r in reasons)
    n = repo.add("小王来了", kind="event")
    assert [x.id for x in repo.list(entity="王磊")] == [n.id] and repo.list(entity="王建国") == []


# --------------------------------------------------------------------------- profiles

def people_root(repo: Repository) -> dict[str, str]:
    ids = {}
    ids["note"] = repo.add("负责支付系统。说话直接，喜欢先看数据。\n\n入职三年。", title="张三", kind="person",
                           aliases=["老张", "Zhang San"]).id
    ids["review1"] = repo.add("老张审查了退款接口", kind="event", entities={"张三": "审查"}).id
    ids["review2"] = repo.add("Zhang San reviewed the refund retry", kind="event", entities={"Zhang San": "审查"}).id
    ids["decided"] = repo.add("回调最多重试三次", kind="rule", entities={"张三": ["拍板", "审查"]}).id
    ids["open"] = repo.add("张三还没决定要不要换支付网关", kind="event", hesitation=["两家报价还没到"]).id
    ids["mood"] = repo.add("今天张三在会上很不耐烦", kind="mood").id
    ids["fact"] = repo.add("张三住在杭州", kind="fact").id
    ids["other"] = repo.add("张三丰审查了拳谱", kind="event", entities={"张三丰": "审查"}).id
    ids["gone"] = repo.add("张三以前负责风控", kind="fact").id
    repo.archive(ids["gone"], reason="out of date")
    return ids


def test_profile_groups_what_the_memory_holds_about_a_person(tmp_path):
    repo = Repository(tmp_path)
    ids = people_root(repo)
    p = repo.profile("老张")  # any of their names
    assert (p.name, p.aliases, p.known, p.note) == ("张三", ("老张", "Zhang San"), True, ids["note"])
    assert p.summary == "负责支付系统。说话直接，喜欢先看数据。\n入职三年。"
    assert p.roles == {"审查": 3, "拍板": 1}
    assert [m.id for m in p.decisions] == [ids["decided"]]
    assert [m.id for m in p.open] == [ids["open"]]
    assert [m.id for m in p.impressions] == [ids["mood"]]
    assert sorted(m.id for m in p.facts) == sorted([ids["review1"], ids["review2"], ids["fact"]])
    # 张三丰's note is not 张三's; an archived memory is no longer what the memory holds
    every = {m.id for g in ("decisions", "open", "impressions", "facts") for m in getattr(p, g)}
    assert ids["other"] not in every and ids["gone"] not in every
    text = str(p)
    assert text.startswith("# 张三 (老张, Zhang San)") and "roles: 审查 3, 拍板 1" in text
    assert "## Decisions\n- [[" in text and "(拍板, 审查)" in text
    assert [m.id for m in repo.profile("张三丰").facts] == [ids["other"]]
    someone = repo.profile("Carol")
    assert (someone.known, someone.note, someone.facts) == (False, None, ())


def test_profile_records_no_recall_and_writes_nothing(tmp_path):
    repo = Repository(tmp_path)
    ids = people_root(repo)
    repo.close()
    tree = lambda: {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}  # noqa: E731
    before = tree()
    usage = {k: v.to_json() for k, v in repo.usage.load().items()}
    assert repo.profile("张三").facts
    assert tree() == before
    assert {k: v.to_json() for k, v in repo.usage.load().items()} == usage
    assert repo.strength(ids["fact"]).recalls == 0


def test_cli_profile(tmp_path, capsys):
    with Repository(tmp_path) as repo:
        people_root(repo)
    capsys.readouterr()
    assert main(["--root", str(tmp_path), "profile", "Zhang San"]) == 0
    assert capsys.readouterr().out.startswith("# 张三 (老张, Zhang San)\n\n负责支付系统")
    data = cli(capsys, "--root", tmp_path, "profile", "张三丰")
    assert data["name"] == "张三丰" and [m["title"] for m in data["facts"]] == ["张三丰审查了拳谱"]


# --------------------------------------------------------------------------- the graph, the map, patrol, context

def test_entity_graph_says_who_appears_with_whom_in_which_roles(tmp_path, capsys):
    repo = Repository(tmp_path)
    ids = people_root(repo)
    repo.add("Alice 和老张一起审查了网关方案", kind="event", entities={"Alice": "审查", "张三": "审查"})
    data = json.loads(repo.graph("json", kind="entities"))
    nodes = {n["name"]: n for n in data["nodes"]}
    assert nodes["张三"]["memories"] == 7 and nodes["张三"]["roles"] == {"审查": 4, "拍板": 1}
    assert nodes["张三"]["known"] is True and nodes["Alice"]["known"] is False
    assert ids["note"] not in nodes["张三"]["ids"]  # their own note is who they are, not a mention
    assert nodes["张三丰"]["memories"] == 1
    assert data["edges"] == [{"source": "Alice", "target": "张三", "memories": 1,
                              "roles": {"Alice": {"审查": 1}, "张三": {"审查": 1}}}]
    mermaid = repo.graph(kind="entities")
    assert mermaid.startswith('graph LR\n  p0["张三 · 7 · 审查 4, 拍板 1"]\n')
    assert "---|1|" in mermaid
    assert main(["--root", str(tmp_path), "graph", "--kind", "entities"]) == 0
    assert capsys.readouterr().out == mermaid
    with pytest.raises(InvalidInput):
        repo.graph(kind="people")


def test_map_has_a_people_section(tmp_path):
    repo = Repository(tmp_path)
    people_root(repo)
    repo.map()
    text = (tmp_path / "MAP.md").read_text(encoding="utf-8")
    people = text.split("## People\n", 1)[1]
    first = [ln for ln in people.splitlines() if ln.startswith("- ")][0]
    assert first.startswith("- **张三** (6); roles: 审查 3, 拍板 1: [[")
    assert "- **张三丰** (1); roles: 审查 1: [[" in people


def test_patrol_names_a_person_under_two_spellings(tmp_path):
    Repository(tmp_path).close()
    with open(tmp_path / "_system/policy.yaml", "a", encoding="utf-8") as f:
        f.write("\npeople:\n  Zhang San: []\n  张三丰: []\n")
    repo = Repository(tmp_path)
    a = repo.add("Zhang San owns the payment service", kind="fact")
    b = repo.add("ZhangSan approved the refund", kind="event", entities={"ZhangSan": "approved"})
    repo.add("张三丰 and 张三 are two people", kind="fact", entities={"张三": None})
    items = repo.patrol().sections["spellings"]
    assert [(set(i.ids), i.action) for i in items] == [
        ({a.id, b.id}, "# if so, in _system/policy.yaml: people: {Zhang San: [ZhangSan]}")]
    assert "## People under two spellings (1)" in repo.report()


def test_context_brings_the_notes_of_the_people_the_query_names(tmp_path):
    repo = Repository(tmp_path)
    ids = people_root(repo)
    ctx = repo.context("明天和老张开会，要准备什么？", budget=2000)
    reminds = [i.id for i in ctx.items if i.section == "reminds"]
    assert reminds[0] == ids["note"]
    assert "负责支付系统" in str(ctx) and ctx.size <= 2000
    assert ids["note"] in ctx.recalled  # injected as a reminder: counted like one
    assert ids["note"] not in [i.id for i in repo.context("明天开会要准备什么？", budget=2000).items
                               if i.section == "reminds"]


def test_the_entity_filter_follows_every_change(tmp_path):
    repo = Repository(tmp_path)
    a = repo.add("老王说网关要换", kind="event", entities={"王磊": "提议"})
    found = lambda: {h.entry.id for h in repo.search("网关", entity="王磊", record=False)}  # noqa: E731
    assert found() == {a.id}
    b = repo.add("王磊审查了网关方案", kind="event")  # a new memory naming him is found at once
    assert found() == {a.id, b.id}
    c = repo.add("网关的证书要续期", kind="event")
    repo.update(c.id, entities={"王磊": "续期"})  # and a memory that comes to name him
    assert found() == {a.id, b.id, c.id}
    repo.update(c.id, entities=None)
    # a person's hand edit takes the name away
    path = tmp_path / a.path
    path.write_text(path.read_text(encoding="utf-8").replace("  王磊: 提议\n", "  王建国: 提议\n"), encoding="utf-8")
    repo.refresh()
    assert found() == {b.id}
    # a person note added by hand makes 老王 one of his names
    (tmp_path / "shallow" / "wang.md").write_text(
        "---\nid: W1\ntitle: 王磊\ncreated: '2026-01-01T00:00:00+00:00'\nkind: person\naliases: [老王]\n---\n后端\n",
        encoding="utf-8")
    repo.refresh()
    assert {e.id for e in repo.list(entity="老王")} == {a.id, b.id, "W1"}  # (their own note names them too)


# --------------------------------------------------------------------------- search: the named person first

def test_a_question_naming_a_known_person_ranks_their_memories_first_among_equal_matches(tmp_path):
    Repository(tmp_path).close()
    with open(tmp_path / "_system/policy.yaml", "a", encoding="utf-8") as f:
        f.write("\npeople:\n  张三: [老张]\n")
    repo = Repository(tmp_path)
    # theirs are older: among equal matches the newer would come first
    theirs = repo.add("回调重试改成三次。", kind="fact", entities={"张三": "审查"}, now="2026-01-01T10:00:00")
    said = repo.add("支付超时改成五秒，老张定的", kind="fact", now="2026-01-01T11:00:00")  # named in the text
    other = repo.add("回调重试改成三次！", kind="fact", entities={"李四": "执行"}, now="2026-01-02T10:00:00")
    plain = repo.add("支付超时改成五秒", kind="fact", now="2026-01-02T11:00:00")
    weaker = repo.add("老张说回调要重试", kind="fact", now="2026-01-03T10:00:00")  # theirs, a worse match
    repo.add("网关证书周五续期", kind="fact", now="2026-01-03T11:00:00")
    ids = lambda q, **kw: [h.entry.id for h in repo.search(q, record=False, **kw)]  # noqa: E731
    # the premise: equal matches, the newer first; a shorter note a little ahead of a longer one
    assert ids("回调重试改成三次")[:3] == [other.id, theirs.id, weaker.id]
    assert ids("支付超时改成五秒")[:2] == [plain.id, said.id]
    assert ids("张三定的回调重试改成三次")[:3] == [theirs.id, other.id, weaker.id]  # a worse one of theirs stays
    found = ids("老张定的回调重试改成三次")  # by another of their names (which 'weaker' holds as written)
    assert found.index(theirs.id) < found.index(other.id)
    assert ids("张三说支付超时改成五秒")[:2] == [said.id, plain.id]  # named in the text, nearly equal
    # just past the cut: the first place among equals is theirs
    assert ids("张三定的回调重试改成三次", limit=1) == [theirs.id]
    assert ids("回调重试改成三次", limit=1) == [other.id]  # a question naming nobody: as before
    # with the entity filter too
    assert ids("张三定的回调重试改成三次", entity="李四") == [other.id]


# --------------------------------------------------------------------------- about a person, the profile tool

def test_about_a_known_person_gives_their_profiles_first_lines(tmp_path, capsys):
    repo = Repository(tmp_path)
    ids = people_root(repo)
    for name in ("张三", "老张", "zhang san"):  # any of their names, Latin in any case
        a = repo.about(name)
        assert a.people == ("Person: 张三 (老张, Zhang San): 负责支付系统。说话直接，喜欢先看数据。 入职三年。; "
                            "named in 6 memories; roles: 审查 3, 拍板 1; profile('张三') has the rest",), name
        assert str(a).split("\n")[1] == a.people[0]  # after the summary, before the memories
    assert repo.about("老张审查了什么").people[0].startswith("Person: 张三 (")  # named in a longer topic
    assert repo.about("张三丰").people == ()  # not 张三 (and not known)
    assert repo.about("退款接口").people == ()  # names nobody
    assert repo.about("Carol").people == ()  # not a known person
    # a long note is cut: the line stays short
    repo.update(ids["note"], text="负责支付系统。" * 200)
    assert len(repo.about("张三").people[0]) <= 400
    capsys.readouterr()
    assert main(["--root", str(tmp_path), "about", "老张"]) == 0
    assert capsys.readouterr().out.split("\n")[1].startswith("Person: 张三 (老张, Zhang San): 负责支付系统。")


def test_mcp_about_and_profile_tools_give_a_person_within_the_budget(tmp_path):
    pytest.importorskip("mcp")
    from tests.test_server import call, connect, run
    with Repository(tmp_path) as repo:
        ids = people_root(repo)

    async def go() -> None:
        async with connect(tmp_path) as c:
            text, data = await call(c, "about", topic="老张")
            assert text.split("\n")[1].startswith("Person: 张三 (老张, Zhang San): 负责支付系统")
            assert data["people"][0].startswith("Person: 张三 (")
            text, data = await call(c, "about", topic="老张", budget=400)
            assert len(text) <= 400 and text.split("\n")[1].startswith("Person: 张三 (")
            text, data = await call(c, "about", topic="老张", budget=250)  # no room for it: counted in "more"
            assert len(text) <= 250 and "Person" not in text and data["people"] == [] and data["more"] == 3
            text, data = await call(c, "profile", name="Zhang San")
            assert text.startswith("# 张三 (老张, Zhang San)\n\n负责支付系统") and "## Decisions\n- [[" in text
            assert (data["name"], data["note"], data["roles"]) == ("张三", ids["note"], {"审查": 3, "拍板": 1})
            assert [m["id"] for m in data["decisions"]] == [ids["decided"]] and data["more"] == 0
            text, data = await call(c, "profile", name="张三", budget=300)
            assert len(text) <= 300 and text.endswith("more — narrow with recall(entity=…)")
            shown = [m for g in ("decisions", "open", "impressions", "facts") for m in data[g]]
            assert data["more"] > 0 and len(shown) < 6  # the data holds what the text shows
            assert all(f"[[{m['name']}]]" in text for m in shown)
    run(go)


# --------------------------------------------------------------------------- proposed entities, written when asked

def test_names_in_the_text_are_proposed_and_written_only_when_asked(tmp_path, capsys):
    from sediment import Conflict
    Repository(tmp_path).close()
    with open(tmp_path / "_system/policy.yaml", "a", encoding="utf-8") as f:
        f.write("\npeople:\n  张三: [老张]\n")
    repo = Repository(tmp_path)
    peer = Repository(tmp_path)  # another process's view of the root, kept current through the journal
    e = repo.add("老张和 Alice 在上海见了腾讯的人", kind="event", entities={"Alice": "host"})
    path = tmp_path / e.path
    before = path.read_bytes()
    got = [(p.name, p.type, p.mentions, p.known) for p in repo.propose_entities(e.id)]
    assert got == [("张三", "person", ("老张",), True), ("上海", "place", ("上海",), False),
                   ("腾讯", "org", ("腾讯",), False)]  # Alice is in the property already
    assert path.read_bytes() == before  # proposing writes nothing
    # a name not proposed, or one string for the list: refused, nothing written
    with pytest.raises(InvalidInput, match="'Bob' is not proposed"):
        repo.apply_entities(e.id, ["Bob"])
    with pytest.raises(InvalidInput, match="a list of names"):
        repo.apply_entities(e.id, "老张")
    assert path.read_bytes() == before
    # the chosen one, by the name as written: filed under the known person's name, no role
    done = repo.apply_entities(e.id, ["老张"])
    assert frontmatter(path)["entities"] == {"Alice": "host", "张三": None}
    assert path.read_text(encoding="utf-8").endswith("老张和 Alice 在上海见了腾讯的人\n")  # the text as it was
    assert peer.get(e.id).meta["entities"] == {"Alice": "host", "张三": None}  # the peer learnt of the write
    assert [p.name for p in repo.propose_entities(e.id)] == ["上海", "腾讯"]
    # proposals read at a version the note has left: a Conflict, nothing written
    with pytest.raises(Conflict):
        repo.apply_entities(e.id, expected=e.version)
    assert frontmatter(path)["entities"] == {"Alice": "host", "张三": None}
    # all the rest (CLI), then nothing left to propose and nothing written
    capsys.readouterr()
    assert main(["--json", "--root", str(tmp_path), "propose-entities", e.id]) == 0
    assert [p["name"] for p in json.loads(capsys.readouterr().out)] == ["上海", "腾讯"]
    assert main(["--root", str(tmp_path), "apply-entities", e.id, "--expected", done.version]) == 0
    assert frontmatter(path)["entities"] == {"Alice": "host", "张三": None, "上海": None, "腾讯": None}
    assert repo.propose_entities(e.id) == []
    after = path.read_bytes()
    assert repo.apply_entities(e.id).version == repo.get(e.id).version and path.read_bytes() == after


def test_a_persons_own_note_gets_proposals_and_is_never_written(tmp_path):
    Repository(tmp_path).close()
    mine = write(tmp_path, "notes/meeting.md", "---\ntags: [standup]\n---\nAlice Chen 和老王在北京开会\n")
    before = mine.read_bytes()
    repo = Repository(tmp_path)
    assert [p.name for p in repo.propose_entities("notes/meeting.md")] == ["Alice Chen", "老王", "北京"]
    with pytest.raises(InvalidInput, match="person's note"):
        repo.apply_entities("notes/meeting.md")
    assert mine.read_bytes() == before
