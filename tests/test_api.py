"""The public API: names, errors, and the verbs' contracts."""

from __future__ import annotations

import datetime as dt
import inspect
import pickle

import portalocker
import pytest

import sediment
from sediment import (Ambiguous, Conflict, Entry, InvalidInput, LockTimeout, NotFound, ParseError, PolicyError,
                      PolicyFileError, Repository, SearchHit, SedimentError, StorageError, TooLarge,
                      UnsafePath)

PUBLIC = {
    "Repository", "Entry", "SearchHit", "Problem", "parse", "render", "LAYERS",
    # what the verbs return
    "Strength", "Plan", "Context", "Observed", "Working", "Mood", "About", "Profile", "Proposed", "ConflictPair",
    "Report", "Palace", "Source", "Turn", "Consolidation", "SyncResult", "Forecast", "History", "Attention",
    "SedimentError", "NotFound", "Ambiguous", "Conflict", "InvalidInput", "UnsafePath", "TooLarge",
    "PolicyError", "PolicyFileError", "ParseError", "LockTimeout", "StorageError",
    "__version__",
}

# exception → (code, builtin it must also be, or None)
ERRORS = {
    SedimentError: ("error", None),
    NotFound: ("not_found", KeyError),
    Ambiguous: ("ambiguous", LookupError),
    Conflict: ("conflict", None),
    InvalidInput: ("invalid", ValueError),
    UnsafePath: ("unsafe_path", ValueError),
    TooLarge: ("too_large", ValueError),
    PolicyError: ("policy", None),
    PolicyFileError: ("policy_file", ValueError),
    ParseError: ("parse", ValueError),
    LockTimeout: ("lock_timeout", TimeoutError),
    StorageError: ("storage", OSError),
}


def md_files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md"))


def files_with_id(root, eid):
    return [p for p in md_files(root) if f"\nid: {eid}\n" in (root / p).read_text(encoding="utf-8")]


# --------------------------------------------------------------------------- names


def test_all_is_exactly_the_public_names():
    assert len(sediment.__all__) == len(set(sediment.__all__)), "duplicates in __all__"
    assert set(sediment.__all__) == PUBLIC
    for name in sediment.__all__:
        assert getattr(sediment, name) is not None
    namespace: dict = {}
    exec("from sediment import *", namespace)
    assert {k for k in namespace if k != "__builtins__"} == PUBLIC
    # nothing public sits in the package namespace without being exported
    stray = {n for n, v in vars(sediment).items()
             if not n.startswith("_") and not inspect.ismodule(v)} - PUBLIC
    assert not stray, f"public but not in __all__: {sorted(stray)}"
    assert sediment.LAYERS == ("shallow", "sediment", "bedrock", "archive")
    assert isinstance(sediment.__version__, str) and sediment.__version__


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_error_classes(cls):
    code, builtin = ERRORS[cls]
    assert issubclass(cls, SedimentError) and issubclass(cls, Exception)
    assert cls.code == code
    if builtin is not None:
        assert issubclass(cls, builtin)
    err = cls("something went wrong: 移动端", key="k", path="shallow/x.md")
    assert str(err) == "something went wrong: 移动端"  # also for KeyError, which would repr() it
    assert err.code == code
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is cls
    assert back.code == code and str(back) == str(err) and back.message == err.message
    assert back.details == {"key": "k", "path": "shallow/x.md"}
    if builtin is not None:
        with pytest.raises(builtin):
            raise back


def test_error_codes_are_distinct():
    codes = [c for c, _ in ERRORS.values()]
    assert len(codes) == len(set(codes))


def test_errors_without_builtin_are_not_value_errors():
    """Callers catching ValueError for bad input must not swallow a conflict or a refusal."""
    assert not issubclass(Conflict, ValueError)
    assert not issubclass(PolicyError, ValueError)
    assert not issubclass(NotFound, ValueError)


def test_errors_raised_by_the_library_survive_pickling(tmp_path):
    repo = Repository(tmp_path, policy={"max_body_bytes": 100})
    e = repo.add("x", title="t")
    raised = []
    for call in (lambda: repo.get("missing"),
                 lambda: repo.update(e.id, expected="stale", text="y"),
                 lambda: repo.purge(e.id),
                 lambda: repo.add("x" * 200),
                 lambda: repo.add("x", room="../out"),
                 lambda: repo.move(e.id, "nowhere")):
        with pytest.raises(SedimentError) as info:
            call()
        raised.append(info.value)
    assert [type(x) for x in raised] == [NotFound, Conflict, PolicyError, TooLarge, UnsafePath, InvalidInput]
    for err in raised:
        back = pickle.loads(pickle.dumps(err))
        assert type(back) is type(err) and back.code == err.code and str(back) == str(err)
        assert str(err) and "Traceback" not in str(err)


# --------------------------------------------------------------------------- get / entry


@pytest.mark.parametrize("call", [
    lambda r: r.add("a\ud800"), lambda r: r.add("x", title="t\udfff"), lambda r: r.add("x", tags=["t\ud800"]),
    lambda r: r.add("x", room="r\ud800"), lambda r: r.add("x", source="s\ud800"),
    lambda r: r.add("x", entities={"A\ud800": "r"}), lambda r: r.update(r.list()[0].id, text="b\ud800"),
], ids=["text", "title", "tag", "room", "field", "entity", "update"])
def test_text_that_cannot_be_written_as_utf8_is_refused_as_invalid_input(tmp_path, call):
    # a lone surrogate (what a broken decode or JSON's "\ud800" gives a caller) has no UTF-8 bytes:
    # it was a raw UnicodeEncodeError out of add, after the checks had passed
    repo = Repository(tmp_path)
    repo.add("the first note")
    before = md_files(tmp_path)
    with pytest.raises(InvalidInput) as got:
        call(repo)
    assert got.value.code == "invalid" and "surrogate" in str(got.value)
    assert md_files(tmp_path) == before and len(repo) == 1


def test_get_missing_raises_not_found(tmp_path):
    repo = Repository(tmp_path)
    with pytest.raises(NotFound) as info:
        repo.get("01NOPE")
    assert "01NOPE" in str(info.value)
    with pytest.raises(KeyError):  # callers who know nothing of sediment
        repo.get("01NOPE")
    assert "01NOPE" not in repo


def test_entry_fields(tmp_path):
    when = dt.datetime(2026, 11, 20, 14, 30, tzinfo=dt.timezone(dt.timedelta(hours=8)))
    with Repository(tmp_path) as repo:
        e = repo.add("Use PKCE on mobile.", title="PKCE", room="auth", tags=["auth", "mobile"], kind="rule",
                     value=0.8, source="session-1", links=["mobile-secrets"], now=when,
                     evidence=["apps cannot keep a secret"])
    assert isinstance(e, Entry)
    assert e.id and isinstance(e.id, str)
    assert e.path == f"shallow/auth/{e.name}.md" and e.name.startswith("pkce-")
    assert (tmp_path / e.path).is_file()
    assert (e.layer, e.room, e.title) == ("shallow", "auth", "PKCE")
    assert e.text == "Use PKCE on mobile."
    assert e.sections == {"evidence": "- apps cannot keep a secret"}
    assert list(e.tags) == ["auth", "mobile"]
    assert (e.kind, e.value, e.status, e.source) == ("rule", 0.8, "active", "session-1")
    assert list(e.links) == ["mobile-secrets"]
    assert e.created == when and e.updated == when
    assert isinstance(e.version, str) and e.version
    again = Repository(tmp_path).get(e.id)
    assert (again.meta, again.body, again.path, again.version) == (e.meta, e.body, e.path, e.version)
    assert Repository(tmp_path).get(e.name).id == e.id
    assert Repository(tmp_path).get(f"[[{e.name}]]").id == e.id


def test_no_kind_goes_to_inbox_marked_unclassified_an_unknown_one_is_refused(tmp_path):
    repo = Repository(tmp_path)
    a = repo.add("x", title="no kind")
    assert a.kind == "inbox" and a.meta.get("unclassified") is True
    with pytest.raises(InvalidInput):
        repo.add("y", title="odd kind", kind="whatever")


# --------------------------------------------------------------------------- list and search


@pytest.fixture(scope="module")
def catalog(tmp_path_factory):
    root = tmp_path_factory.mktemp("catalog")
    # exact sets of lexical matches: without the feedback lane (test_feedback.py)
    repo = Repository(root, policy={"feedback_docs": 0})
    notes = {
        "pkce": repo.add("Use PKCE on mobile.", title="PKCE", room="auth", tags=["auth", "移动端"], kind="rule"),
        "token": repo.add("Tokens expire after an hour.", title="token ttl", room="auth", tags=["auth"],
                          kind="fact", layer="sediment"),
        "authx": repo.add("Not the auth room.", title="authx note", room="authx", tags=["auth"], kind="fact"),
        "deploy": repo.add("我们决定把数据库迁移到新的集群上。", title="数据库迁移计划", room="ops",
                           tags=["deploy"], kind="event", layer="bedrock"),
        "tagonly": repo.add("The login flow on phones.", title="phone login", tags=["移动端"], kind="skill"),
        "old": repo.add("An old rule.", title="old rule", room="auth", tags=["auth"], kind="rule"),
        "gone": repo.add("A purged fact about auth.", title="purged fact", room="auth", tags=["auth"],
                         kind="fact"),
    }
    repo.archive(notes["old"].id, reason="replaced")
    repo.purge(notes["gone"].id, confirm=True)
    return repo, {k: v.id for k, v in notes.items()}


def ids(entries):
    return {e.id for e in entries}


def test_list_filters(catalog):
    repo, n = catalog
    # a purged memory is listed only when asked for by status (issue 25, item 4), and len counts
    # what iterating gives
    shown = set(n.values()) - {n["gone"]}
    assert ids(repo.list()) == shown
    assert ids(repo) == shown and len(repo) == len(shown) == len(list(repo))
    assert ids(repo.list(status="purged")) == ids(repo.list(layer="archive", status="purged")) == {n["gone"]}
    assert ids(repo.list(layer="shallow")) == {n["pkce"], n["authx"], n["tagonly"]}
    assert ids(repo.list(layer="sediment")) == {n["token"]}
    assert ids(repo.list(layer="archive")) == {n["old"]}
    assert ids(repo.list(layer=["sediment", "bedrock"])) == {n["token"], n["deploy"]}
    assert ids(repo.list(room="auth")) == {n["pkce"], n["token"], n["old"]}  # not "authx"
    assert ids(repo.list(room="ops")) == {n["deploy"]}
    assert ids(repo.list(tag="移动端")) == {n["pkce"], n["tagonly"]}
    assert ids(repo.list(tag="移动")) == set()  # tags match whole
    assert ids(repo.list(kind="rule")) == {n["pkce"], n["old"]}
    assert ids(repo.list(kind=["fact", "event"])) == {n["token"], n["authx"], n["deploy"]}
    assert ids(repo.list(layer="shallow", room="auth", tag="auth", kind="rule")) == {n["pkce"]}
    assert ids(repo.list(room="nowhere")) == set()
    paths = [e.path for e in repo.list()]
    assert paths == sorted(paths)


def test_search_finds_chinese_words_and_tags(catalog):
    repo, n = catalog
    hits = repo.search("迁移")  # a 2-character word inside a sentence
    assert hits and hits[0].entry.id == n["deploy"]
    assert all(isinstance(h, SearchHit) and h.score > 0 for h in hits)
    assert n["tagonly"] in {h.entry.id for h in repo.search("移动端")}  # only its tag says so
    assert {h.entry.id for h in repo.search("集群")} == {n["deploy"]}
    assert [h.entry.id for h in repo.search("PKCE")] == [n["pkce"]]


def test_search_filters_and_limit(catalog):
    repo, n = catalog
    assert {h.entry.id for h in repo.search("auth", room="auth")} == {n["pkce"], n["token"]}
    assert {h.entry.id for h in repo.search("auth", layer="sediment")} == {n["token"]}
    assert {h.entry.id for h in repo.search("auth", kind="rule")} == {n["pkce"]}
    assert {h.entry.id for h in repo.search("auth", tags=["移动端"])} == {n["pkce"]}
    assert len(repo.search("auth", limit=1)) == 1
    assert repo.search("xylophone") == []  # no lexical evidence, no candidate
    scores = [h.score for h in repo.search("auth")]
    assert scores == sorted(scores, reverse=True)
    with pytest.raises(InvalidInput):
        repo.search("auth", limit=0)


def test_archive_is_searched_only_when_asked_and_purged_never(catalog):
    repo, n = catalog
    assert n["old"] not in {h.entry.id for h in repo.search("old rule")}
    assert n["old"] in {h.entry.id for h in repo.search("old rule", include_archive=True)}
    assert n["old"] in {h.entry.id for h in repo.search("old rule", layer="archive")}
    for kwargs in ({}, {"include_archive": True}, {"layer": "archive"}, {"room": "auth", "include_archive": True},
                   {"tags": ["auth"], "include_archive": True}, {"kind": "fact", "layer": "archive"}):
        assert n["gone"] not in {h.entry.id for h in repo.search("purged fact", **kwargs)}, kwargs


# --------------------------------------------------------------------------- update


def test_update_with_optimistic_concurrency(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("draft", title="plan")
    e2 = repo.update(e.id, expected=e.version, text="final", tags=["done"])
    assert e2.text == "final" and list(e2.tags) == ["done"] and e2.version != e.version
    assert (e2.id, e2.path) == (e.id, e.path)
    on_disk = (tmp_path / e.path).read_bytes()

    with pytest.raises(Conflict):  # based on a stale read
        repo.update(e.id, expected=e.version, text="lost update")
    assert (tmp_path / e.path).read_bytes() == on_disk
    assert repo.get(e.id).text == "final" and repo.get(e.id).version == e2.version

    other = Repository(tmp_path)  # another process changes it in between
    e3 = other.update(e.id, expected=other.get(e.id).version, text="from the other process")
    with pytest.raises(Conflict):
        repo.update(e.id, expected=e2.version, text="mine")
    assert repo.get(e.id).text == "from the other process"

    # a person edits the file in an editor
    path = tmp_path / e.path
    path.write_text(path.read_text(encoding="utf-8").replace("from the other process", "edited by hand"),
                    encoding="utf-8")
    with pytest.raises(Conflict):
        repo.update(e.id, expected=e3.version, text="overwrites the hand edit")
    assert "edited by hand" in path.read_text(encoding="utf-8")

    fresh = Repository(tmp_path).get(e.id)
    assert fresh.text == "edited by hand"
    done = repo.update(e.id, expected=fresh.version, text="merged")
    assert done.text == "merged" and Repository(tmp_path).get(e.id).text == "merged"
    assert repo.update(e.id, value=0.3).value == 0.3  # without expected: last writer wins
    with pytest.raises(NotFound):
        repo.update("missing", text="x")
    assert files_with_id(tmp_path, e.id) == [e.path]


def test_update_keeps_sections_and_fields(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("main", title="t", evidence=["one"], hesitation="maybe", event="ev-1", custom="kept")
    u = repo.update(e.id, text="new main")
    assert u.text == "new main" and u.sections == {"evidence": "- one", "hesitation": "maybe"}
    assert u.event == "ev-1" and u.meta["custom"] == "kept"
    assert u.created == e.created and u.updated >= e.updated
    u2 = repo.update(e.id, custom=None, conclusion="decided")
    assert "custom" not in u2.meta and u2.sections["conclusion"] == "decided"


# --------------------------------------------------------------------------- move / archive / purge


def test_move_keeps_room_and_name(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("body text", title="PKCE flow", room="auth/mobile", tags=["auth"])
    m = repo.move(e.id, "sediment")
    assert m.path == f"sediment/auth/mobile/{e.name}.md"
    assert (m.id, m.name, m.room, m.layer) == (e.id, e.name, "auth/mobile", "sediment")
    assert m.body == e.body and list(m.tags) == ["auth"]
    assert not (tmp_path / e.path).exists() and (tmp_path / m.path).is_file()
    assert repo.get(e.id).path == m.path and repo.get(e.name).id == e.id
    assert Repository(tmp_path).get(e.id).path == m.path

    r = repo.move(e.id, "bedrock", room="security")
    assert r.path == f"bedrock/security/{e.name}.md" and r.name == e.name
    assert repo.move(e.id, "bedrock").path == r.path  # same place: nothing to do
    assert files_with_id(tmp_path, e.id) == [r.path]
    with pytest.raises(NotFound):
        repo.move("missing", "bedrock")
    with pytest.raises(InvalidInput):
        repo.move(e.id, "deep")
    assert files_with_id(tmp_path, e.id) == [r.path]


def test_moved_entry_reports_its_new_place(tmp_path):
    """The entry a move returns, and what get/list say afterwards, agree with the
    file's new path - also for a pure rename (nothing in the file changes)."""
    repo = Repository(tmp_path)
    e = repo.add("body", title="note", room="auth")
    m = repo.move(e.id, "shallow", room="ops")  # room only: the file's bytes stay the same
    assert m.path == f"shallow/ops/{e.name}.md" and (tmp_path / m.path).is_file()
    assert (m.layer, m.room, m.name) == ("shallow", "ops", e.name)
    assert (repo.get(e.id).layer, repo.get(e.id).room) == ("shallow", "ops")
    assert ids(repo.list(room="ops")) == {e.id} and ids(repo.list(room="auth")) == set()
    m2 = repo.move(e.id, "sediment")
    assert (m2.layer, m2.room) == ("sediment", "ops")
    assert ids(repo.list(layer="sediment")) == {e.id} and ids(repo.list(layer="shallow")) == set()
    assert {h.entry.id for h in repo.search("body", layer="sediment")} == {e.id}


def test_archive_and_restore(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("cache everything in redis", title="redis cache", room="perf")
    with pytest.raises(InvalidInput):
        repo.archive(e.id, reason="")
    a = repo.archive(e.id, reason="we moved to memcached")
    assert a.path == f"archive/perf/{e.name}.md" and a.status == "archived"
    assert "memcached" in a.meta["reason"]
    assert files_with_id(tmp_path, e.id) == [a.path]
    assert repo.search("redis") == []
    assert [h.entry.id for h in repo.search("redis", include_archive=True)] == [e.id]
    back = repo.restore(e.id)  # out of archive is restore's job (move refuses it)
    assert back.path == e.path and back.status == "active"
    assert [h.entry.id for h in repo.search("redis")] == [e.id]


def test_purge_keeps_a_copy_that_is_never_found(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("the staging password is hunter2", title="staging password", room="ops", tags=["secret"])
    before = md_files(tmp_path)
    with pytest.raises(PolicyError):
        repo.purge(e.id)
    assert md_files(tmp_path) == before and repo.get(e.id).status == "active"

    p = repo.purge(e.id, confirm=True, reason="a secret does not belong in memory")
    assert p.id == e.id and p.status == "purged"
    assert p.path == f"archive/ops/{e.name}.md" and p.layer == "archive" and p.room == "ops"
    assert files_with_id(tmp_path, e.id) == [p.path]  # kept, once
    text = (tmp_path / p.path).read_text(encoding="utf-8")
    assert "status: purged" in text and "hunter2" in text
    for r in (repo, Repository(tmp_path)):
        assert r.get(e.id).status == "purged"
        for kwargs in ({}, {"include_archive": True}, {"layer": "archive"}, {"tags": ["secret"],
                                                                                 "include_archive": True}):
            assert r.search("staging password hunter2", **kwargs) == [], kwargs


def test_purge_of_an_archived_memory(tmp_path):
    repo = Repository(tmp_path)
    e = repo.add("old thing", title="old thing")
    repo.archive(e.id, reason="old")
    p = repo.purge(e.id, confirm=True)
    assert p.status == "purged" and p.layer == "archive"
    assert repo.search("old thing", include_archive=True) == []
    assert files_with_id(tmp_path, e.id) == [p.path]


# --------------------------------------------------------------------------- lock


def test_writer_waits_for_the_lock_then_times_out_and_readers_never_lock(tmp_path):
    repo = Repository(tmp_path, policy={"lock_timeout_seconds": 0.3})
    e = repo.add("walrus note written before the lock", title="walrus")
    before = md_files(tmp_path)
    with open(tmp_path / "_system" / "lock", "a+b") as fh:  # another process holds the lock
        portalocker.lock(fh, portalocker.LOCK_EX | portalocker.LOCK_NB)
        try:
            with pytest.raises(LockTimeout) as info:
                repo.add("during the lock", title="during")
            assert isinstance(info.value, TimeoutError)
            with pytest.raises(TimeoutError):
                repo.update(e.id, text="changed")
            # readers go on
            assert repo.get(e.id).text == "walrus note written before the lock"
            assert [h.entry.id for h in repo.search("walrus")] == [e.id]
            assert ids(repo.list()) == {e.id}
        finally:
            portalocker.unlock(fh)
    assert md_files(tmp_path) == before
    assert repo.add("after the lock", title="after").text == "after the lock"
    assert (tmp_path / "_system" / "lock").exists()  # never deleted


def test_repository_is_a_context_manager(tmp_path):
    with Repository(tmp_path) as repo:
        e = repo.add("x", title="ctx")
        assert isinstance(repo, Repository)
    assert repo.get(e.id).title == "ctx"  # still readable after close
    with pytest.raises(NotFound):
        Repository(tmp_path / "missing", create=False)
    assert not (tmp_path / "missing").exists()

