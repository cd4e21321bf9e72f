"""What an agent reads is current, and what it writes is what it meant
(issue "Trust"): each test names the item it covers and failed before it."""

from __future__ import annotations

import datetime as dt

import pytest

from sediment import InvalidInput, NotFound, ParseError, PolicyError, Repository, UnsafePath

UTC = dt.timezone.utc


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "mem") as r:
        yield r


def ids(repo, query, **kw):
    """The memories that say the query's words (``terms``): not those the
    feedback lane adds for sharing other words with them."""
    return [h.entry.id for h in repo.search(query, record=False, **kw) if h.terms]


# 1. superseded memories leave search -------------------------------------------------

def test_a_superseded_fact_leaves_search_and_its_successor_is_found(repo):
    old = repo.add("Deploys go through ArgoCD.", title="Deploy tool", kind="fact", event="deploy")
    new = repo.add("Actually, deploys now go through Flux.", title="Deploy tool is Flux", kind="fact",
                   event="deploy")
    assert repo.get(old.id).status == "superseded"
    assert ids(repo, "deploy tool") == [new.id]
    hits = repo.search("deploy tool", include_superseded=True, record=False)
    assert [h.entry.id for h in hits] == [new.id, old.id] or [h.entry.id for h in hits] == [old.id, new.id]
    by_id = {h.entry.id: h for h in hits}
    assert by_id[old.id].superseded_by == (new.name,) and by_id[new.id].superseded_by == ()
    assert by_id[old.id].to_dict()["superseded_by"] == [new.name]


def test_an_archived_status_outside_archive_is_left_out_too(repo, tmp_path):
    e = repo.add("the cafeteria closes at three", kind="fact")
    path = repo.root / e.path  # a person marks it archived by hand, without moving it
    path.write_text(path.read_text().replace("status: active", "status: archived"))
    repo.refresh()
    assert ids(repo, "cafeteria") == []
    assert ids(repo, "cafeteria", include_archive=True) == [e.id]


# 2. purged stays purged; restore is the way back -------------------------------------

def test_move_and_update_of_a_purged_memory_are_refused(repo):
    e = repo.add("a wrong phone number 555-0101", kind="fact")
    repo.purge(e.id, confirm=True)
    for call in (lambda: repo.move(e.id, "shallow"), lambda: repo.update(e.id, text="back"),
                 lambda: repo.archive(e.id, reason="x")):
        with pytest.raises(InvalidInput):
            call()
    assert repo.get(e.id).status == "purged" and ids(repo, "phone", include_archive=True) == []
    assert [x.id for x in repo.list(status="purged")] == [e.id]
    assert repo.list() == [] and repo.list(layer="shallow") == []  # shown only when asked for by status
    with pytest.raises(PolicyError):
        repo.restore(e.id)
    back = repo.restore(e.id, confirm=True)
    assert back.status == "active" and back.layer == "shallow" and "reason" not in back.meta
    assert ids(repo, "phone") == [e.id]


def test_restore_brings_back_archived_and_superseded_memories(repo):
    a = repo.add("lunch is at noon", kind="fact")
    repo.archive(a.id, reason="moved to one o'clock")
    r = repo.restore(a.id, layer="sediment")
    assert (r.layer, r.status) == ("sediment", "active") and "reason" not in r.meta
    old = repo.add("builds run on Jenkins", kind="fact")
    new = repo.add("builds run on GitHub Actions", kind="fact")
    repo.supersede(old.id, new.id)
    r = repo.restore(old.id)
    assert r.status == "active" and "superseded_by" not in r.meta and ids(repo, "jenkins") == [old.id]
    with pytest.raises(InvalidInput):  # already active
        repo.restore(new.id)


# 3. a move changes the folder, the reason and the status its target implies ----------

def test_move_keeps_updated_replaces_the_reason_and_sets_the_status_of_its_target(repo):
    e = repo.add("the build cache lives on the NAS", kind="fact")
    m1 = repo.move(e.id, "sediment", reason="proved useful")
    assert m1.meta["updated"] == e.meta["updated"] and m1.meta["reason"] == "proved useful"
    m2 = repo.move(e.id, "bedrock")
    assert "reason" not in m2.meta and m2.meta["updated"] == e.meta["updated"]
    m3 = repo.move(e.id, "archive")
    assert m3.status == "archived"
    with pytest.raises(InvalidInput):  # out of archive is restore's job
        repo.move(e.id, "shallow")


# 4. supersede never leaves no live memory --------------------------------------------

def test_supersede_refuses_a_superseded_successor_and_cycles(repo):
    a, b = repo.add("tabs for indentation", kind="rule"), repo.add("spaces for indentation", kind="rule")
    repo.supersede(a.id, b.id)
    with pytest.raises(InvalidInput):
        repo.supersede(b.id, a.id)
    assert repo.get(b.id).status == "active"
    c = repo.add("four spaces for indentation", kind="rule")
    repo.supersede(b.id, c.id)
    with pytest.raises(InvalidInput):  # a → b → c: c cannot be superseded by a
        repo.supersede(c.id, a.id)
    assert repo.get(c.id).status == "active"


# 5. empty memories are refused -------------------------------------------------------

@pytest.mark.parametrize("text", ["", "   ", "\n\t\n"])
def test_an_empty_memory_is_refused(repo, text):
    with pytest.raises(InvalidInput):
        repo.add(text)
    assert repo.list() == []


def test_an_empty_title_is_refused(repo):
    with pytest.raises(InvalidInput):
        repo.add("some text", title="")
    e = repo.add("some text")
    with pytest.raises(InvalidInput):
        repo.update(e.id, text="  ")


# 6. exact duplicates -----------------------------------------------------------------

def test_the_same_text_twice_is_one_memory_with_the_new_tags_and_links(repo):
    target = repo.add("the staging database", title="staging db")
    first = repo.add("Rotate the staging password monthly.", kind="rule", tags=["security"])
    again = repo.add("Rotate  the staging password\nmonthly.", kind="fact", tags=["ops"],
                     links=[target.name])
    assert again.id == first.id and len(repo.list(kind="rule")) == 1
    assert set(again.tags) == {"security", "ops"} and again.meta["links"] == [f"[[{target.name}]]"]
    assert again.kind == "rule" and any("kind" in w for w in again.warnings)
    assert len(repo.list()) == 2


def test_a_duplicate_of_an_archived_memory_is_a_new_memory(repo):
    first = repo.add("the printer is on floor 2", kind="fact")
    repo.archive(first.id, reason="moved")
    again = repo.add("the printer is on floor 2", kind="fact")
    assert again.id != first.id


# 7. invalid filters say what is allowed ----------------------------------------------

@pytest.mark.parametrize("call", [
    lambda r: r.list(layer="nosuch"), lambda r: r.list(status="nosuch"), lambda r: r.list(kind="nosuch"),
    lambda r: r.search("x", layer="deep"), lambda r: r.search("x", kind=["fact", "nosuch"]),
    lambda r: r.list(sort="size"),
])
def test_an_unknown_filter_value_is_invalid_input_naming_the_allowed_ones(repo, call):
    with pytest.raises(InvalidInput) as info:
        call(repo)
    assert "one of" in str(info.value)


def test_tags_filter_takes_one_tag_or_a_list(repo):
    e = repo.add("tagged", tags=["a", "b"])
    repo.add("other", tags=["a"])
    assert [x.id for x in repo.list(tag=["a", "b"])] == [e.id]
    assert [x.id for x in repo.list(tags="b")] == [e.id]
    assert len(repo.list(tags=["a"])) == 2


# 8. times ----------------------------------------------------------------------------

def test_now_since_and_until_take_datetimes_dates_or_iso_strings_naive_ones_in_the_roots_timezone(repo):
    e = repo.add("a fact to decay", kind="fact", value=0.9)
    plan = repo.metabolize(now="2027-01-01T00:00:00+00:00")
    assert plan.now.startswith("2027-01-01")
    assert repo.strength(e.id, now="2027-01-01T00:00:00+08:00").value == 0.9
    assert [x.id for x in repo.list(since="2000-01-01T00:00:00Z")] == [e.id]
    aware = repo.strength(e.id, now="2027-01-01T00:00:00+00:00").to_dict()
    for naive in ("2027-01-01T00:00:00", dt.datetime(2027, 1, 1), "2027-01-01", dt.date(2027, 1, 1)):
        assert repo.metabolize(now=naive).now == plan.now  # the root's timezone: UTC by default
        assert repo.strength(e.id, now=naive).to_dict() == aware
        assert [x.id for x in repo.list(until=naive)] == [e.id]
    with pytest.raises(InvalidInput):
        repo.metabolize(now="next tuesday")


# 9. link text is not the memory's words ----------------------------------------------

def test_a_link_does_not_make_a_note_match_its_target_s_words(repo):
    target = repo.add("用户偏好简短回答", title="用户偏好简短回答")
    linker = repo.add("写周报时参考那条偏好规则", title="周报", links=[target.name])  # a frontmatter link
    assert ids(repo, "回答") == [target.id]
    # a body wikilink counts by the text it shows: here the label, not the target's name
    labelled = repo.add(f"see [[{target.name}|the brevity rule]] first", title="checklist")
    assert ids(repo, "brevity") == [labelled.id]
    assert labelled.id not in ids(repo, "简短") and linker.id not in ids(repo, "简短")


# 10. links to missing notes are said, and found by check() ----------------------------

def test_a_link_to_no_memory_is_warned_about_and_reported_with_its_line(repo):
    e = repo.add("see the runbook", links=["runbook-that-does-not-exist"])
    assert any("runbook-that-does-not-exist" in w for w in e.warnings)
    body = repo.add("body link to [[nowhere-note]] here", title="body link")
    found = {(p.path, p.code): p for p in repo.check()}
    p = found[(e.path, "unresolved_link")]
    assert p.line is not None and "runbook-that-does-not-exist" in (repo.root / e.path).read_text().splitlines()[
        p.line - 1]
    q = found[(body.path, "unresolved_link")]
    assert "nowhere-note" in (repo.root / body.path).read_text().splitlines()[q.line - 1]


def test_links_to_lists_backlinks(repo):
    a = repo.add("the API gateway", title="gateway")
    b = repo.add("rate limits live in the gateway", links=[a.name])
    c = repo.add(f"see [[{a.name}]] for auth", title="auth")
    repo.add("unrelated")
    assert [e.id for e in repo.links_to(a.id)] == sorted([b.id, c.id], key=lambda i: repo.get(i).path)
    with pytest.raises(NotFound):
        repo.links_to("no-such-note")


# 11. a damaged file is not "missing" -------------------------------------------------

def test_get_of_a_damaged_note_says_it_is_damaged(repo):
    e = repo.add("a note a merge will break", title="merge victim")
    path = repo.root / e.path
    path.write_text("<<<<<<< HEAD\n" + path.read_text() + "=======\nother\n>>>>>>> theirs\n")
    repo.refresh()
    for key in (e.name, e.id):
        with pytest.raises(ParseError) as info:
            repo.get(key)
        assert info.value.details["path"] == e.path
    with pytest.raises(NotFound):
        repo.get("never-existed")


# 13. tags as Obsidian accepts them ---------------------------------------------------

def test_tags_are_normalised_or_refused_as_obsidian_would(repo):
    e = repo.add("tagged", tags=["two words", "#hash", "nested/tag", "移动端", "🚀"])
    assert list(e.tags) == ["two-words", "hash", "nested/tag", "移动端", "🚀"]
    for bad in ("123", "a+b", "a,b", "a.b", "/lead", "x//y"):
        with pytest.raises(InvalidInput):
            repo.add("other", tags=[bad])


# 22. erasing a secret ----------------------------------------------------------------

def test_purge_with_erase_leaves_a_tombstone_without_the_text(repo):
    target = repo.add("The staging API key is sk-live-12345.", title="staging key", tags=["secret"],
                      kind="fact", source="s-1")
    linker = repo.add("rotate keys", links=[target.name])
    gone = repo.purge(target.id, confirm=True, erase=True, reason="a secret written by mistake")
    raw = (repo.root / gone.path).read_text()
    front = raw.split("---")[1]
    assert "sk-live-12345" not in raw and "staging" not in raw and "s-1" not in raw
    assert "tags" not in front and "kind" not in front and "title" not in front
    assert gone.status == "purged" and gone.name == target.name and gone.meta["reason"]
    assert ids(repo, "staging", include_archive=True, include_superseded=True) == []
    assert repo.links_to(target.id) == [repo.get(linker.id)]  # links do not dangle
    with pytest.raises(InvalidInput):
        repo.restore(target.id, confirm=True)


# 14. a person's note can be adopted, keeping its bytes -------------------------------

def test_adopt_inserts_only_the_new_keys_and_keeps_every_other_byte(repo):
    bare = repo.root / "shallow" / "周会记录.md"
    bare.write_bytes("周五前把发版说明发给 QA。\n\n- [ ] 通知运维\n".encode())
    titled = repo.root / "sediment" / "ideas.md"
    titled.write_bytes(b"---\r\ntitle: Ideas\r\ntags: [later]\r\nvalue: \"0.7\"\r\n---\r\nWrite the CLI docs.\r\n")
    originals = {p: p.read_bytes() for p in (bare, titled)}
    assert {p.path for p in repo.check() if p.severity == "error"} >= {"shallow/周会记录.md", "sediment/ideas.md"}
    a = repo.adopt("shallow/周会记录.md")
    b = repo.adopt("sediment/ideas.md")
    assert a.title == "周会记录" and a.id and a.layer == "shallow" and b.title == "Ideas" and b.value == 0.7
    ours = (b"id:", b"created:", b"updated:", b"kind:", b"title:")
    _, header, rest = bare.read_bytes().split(b"---\n", 2)  # a new frontmatter, then the file as it was
    assert rest == originals[bare] and all(ln.startswith(ours) for ln in header.splitlines())
    lines = titled.read_bytes().split(b"\r\n")  # inserted lines in the file's own line ends
    kept = [ln for ln in lines if not ln.startswith(ours[:4])]
    assert b"\r\n".join(kept) == originals[titled] and len(lines) - len(kept) == 4
    assert b'value: "0.7"' in titled.read_bytes()  # read as a number, never rewritten
    assert repo.adopt("shallow/周会记录.md").id == a.id  # idempotent
    assert [h.entry.id for h in repo.search("发版", record=False)] == [a.id]


def test_adopt_takes_a_whole_path_inside_the_root_and_refuses_one_outside(repo, tmp_path):
    # a person pastes the note's whole path: inside the root it is that note; outside it is
    # refused as outside (it was read as a relative path, "tmp/.../x.md is not in a layer folder")
    note = repo.root / "shallow" / "standup.md"
    note.write_text("Standup moves to 9:30.\n")
    assert repo.adopt(str(note)).path == "shallow/standup.md"
    elsewhere = tmp_path / "shallow" / "elsewhere.md"
    elsewhere.parent.mkdir()
    elsewhere.write_text("a note outside the root\n")
    with pytest.raises(UnsafePath) as got:
        repo.adopt(str(elsewhere))
    assert "outside" in str(got.value) and str(tmp_path) not in str(got.value)
    assert elsewhere.read_text() == "a note outside the root\n"


def test_check_fix_adopts_only_notes_in_layer_folders(repo):
    inside = repo.root / "bedrock" / "principles.md"
    inside.write_text("Prefer boring technology.\n")
    outside = repo.root / "journal.md"
    outside.write_text("a person's own diary\n")
    broken = repo.root / "shallow" / "broken.md"
    broken.write_text("---\ntitle: [unclosed\n---\ntext\n")
    keep = {p: p.read_bytes() for p in (outside, broken)}
    repo.check(fix=True)
    assert repo.get("principles").title == "principles" and inside.read_text().endswith("Prefer boring technology.\n")
    assert {p: p.read_bytes() for p in keep} == keep
    with pytest.raises(InvalidInput):
        repo.adopt("journal.md")  # outside the layer folders: move it into one first


# 12. a move leaves no empty room folder behind --------------------------------------

def test_a_move_removes_the_room_folders_it_emptied_but_never_a_persons(repo):
    a = repo.add("the deploy runbook", title="runbook", room="ops/deploy")
    b = repo.add("the on-call rota", title="rota", room="ops/oncall")
    (repo.root / "shallow" / "ops" / "oncall" / ".keep").write_text("")  # a person's file
    repo.move(a.id, "sediment")
    assert not (repo.root / "shallow" / "ops" / "deploy").exists()
    assert (repo.root / "shallow" / "ops").is_dir()  # oncall is still in it
    repo.move(b.id, "sediment")
    assert (repo.root / "shallow" / "ops" / "oncall" / ".keep").exists()  # never a person's folder
    c = repo.add("a short-lived thought", title="thought", room="scratch/today")
    plan = repo.metabolize(dry_run=False, confirm=True, now="2099-01-01T00:00:00+00:00")
    assert c.id in {m.id for m in plan.moves}
    assert not (repo.root / "shallow" / "scratch").exists()  # metabolize cleans up too
    assert (repo.root / "shallow").is_dir()  # a layer folder always stays


# 17 and 8. the CLI is the API ---------------------------------------------------------

def _cli(root, *args):
    import contextlib
    import io
    import json
    from sediment.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--root", str(root), "--json", *args])
    return code, (json.loads(out.getvalue()) if out.getvalue().strip() else None), err.getvalue()


def test_the_cli_updates_with_expected_sections_fields_and_refuses_what_is_no_time(repo):
    root = repo.root
    code, e, _ = _cli(root, "add", "Use PKCE on mobile.", "--title", "PKCE", "--kind", "rule",
                      "--evidence", "mobile apps cannot keep a secret", "--field", "priority=2",
                      "--now", "2026-01-05T09:00:00+08:00")
    assert code == 0 and e["priority"] == 2 and e["created"].startswith("2026-01-05T09:00:00")
    code, u, _ = _cli(root, "update", e["id"], "--expected", e["version"], "--text", "PKCE everywhere.",
                      "--hesitation", "old apps still use implicit flow", "--unset", "priority")
    assert code == 0 and "priority" not in u and "## Hesitation" in u["body"] and "## Evidence" in u["body"]
    code, _, err = _cli(root, "update", e["id"], "--expected", e["version"], "--text", "stale")
    assert code == 1 and "conflict" in err
    code, _, err = _cli(root, "metabolize", "--now", "the first of January")
    assert code == 1 and "ISO 8601" in err
    code, listed, _ = _cli(root, "list", "--sort", "updated", "--limit", "1", "--since", "2000-01-01T00:00:00Z")
    assert code == 0 and [x["id"] for x in listed] == [e["id"]]
