"""Nothing a caller passes can make the library read or write outside the root,
and destructive operations obey the policy.

Every refusal must be a clear ``sediment`` error and must leave both the root and
the folder next to it exactly as they were (compared by snapshot).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from sediment import (InvalidInput, NotFound, PolicyError, PolicyFileError, Repository,
                      SedimentError, TooLarge, UnsafePath)

BAIT = """---
id: BAIT
title: bait outside the root
created: '2026-01-01T00:00:00+00:00'
---
zanzibar secret outside the root
"""


def snapshot(*dirs: Path, skip_system: bool = False) -> dict:
    """Every folder, file (content hash and mtime) and symlink under ``dirs``.
    ``skip_system`` leaves out ``_system/`` (caches and usage records that opening
    a root or searching may legitimately write)."""
    out = {}
    for i, top in enumerate(dirs):
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            rel_dir = Path(dirpath).relative_to(top).as_posix()
            if skip_system and (rel_dir == "_system" or rel_dir.startswith("_system/")):
                continue
            out[(i, rel_dir, "dir")] = None
            for name in dirnames + filenames:
                p = Path(dirpath, name)
                rel = (Path(rel_dir) / name).as_posix()
                if p.is_symlink():
                    out[(i, rel, "link")] = os.readlink(p)
                elif p.is_file():
                    st = p.stat()
                    out[(i, rel, "file")] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_mtime_ns)
    return out


def diff(before: dict, after: dict) -> list:
    keys = set(before) | set(after)
    return sorted((k, before.get(k, "<absent>"), after.get(k, "<absent>")) for k in keys
                  if before.get(k, "<absent>") != after.get(k, "<absent>"))


@pytest.fixture
def env(tmp_path):
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bait.md").write_text(BAIT, encoding="utf-8")
    repo = Repository(root, policy={"max_body_bytes": 1000, "destructive_per_hour": 2})
    keeper = repo.add("a note that must stay where it is", title="keeper", room="ops")
    return repo, root, outside, keeper


def assert_refused(env, call, exc_type=InvalidInput):
    repo, root, outside, keeper = env
    before = snapshot(root, outside)
    with pytest.raises(exc_type) as info:
        call()
    assert isinstance(info.value, SedimentError)
    assert info.value.code and str(info.value).strip(), "the error must say what is wrong"
    assert diff(before, snapshot(root, outside)) == []
    assert repo.get(keeper.id).path == keeper.path
    return info.value


# --------------------------------------------------------------------------- rooms

UNSAFE_ROOMS = {
    "dotdot": "..",
    "dotdot-out": "../outside",
    "dotdot-deep": "../../../../../../tmp/x",
    "dotdot-inside": "a/../../outside",
    "dot": ".",
    "absolute": "/tmp/sediment-escape",
    "backslash-absolute": "\\tmp\\x",
    "drive": "C:\\Windows",
    "drive-slash": "C:/Windows",
    "backslash-dotdot": "a\\..\\..\\outside",
    "nul-byte": "room\x00x",
    "CON": "CON",
    "con": "con",
    "nul.txt": "nul.txt",
    "NUL": "NUL",
    "COM1": "COM1",
    "lpt9.log": "lpt9.log",
    "aux-in-path": "ok/aux",
    "prn.md": "prn.md",
    "hidden": ".hidden",
    "trailing-dot": "trail.",
    "trailing-space": "trail ",
    "empty-segment": "a//b",
    "control-char": "a\x07b",
    "long-latin": "a" * 300,
    "long-cjk": "长" * 100,  # 300 bytes of UTF-8
    "long-path": "/".join(["d" * 100] * 50),  # each part fine, the whole far beyond PATH_MAX
}


@pytest.mark.parametrize("room", UNSAFE_ROOMS.values(), ids=UNSAFE_ROOMS.keys())
def test_add_refuses_unsafe_room(env, room):
    repo = env[0]
    assert_refused(env, lambda: repo.add("x", title="escape attempt", room=room))


@pytest.mark.parametrize("room", UNSAFE_ROOMS.values(), ids=UNSAFE_ROOMS.keys())
def test_move_refuses_unsafe_room(env, room):
    repo, keeper = env[0], env[3]
    assert_refused(env, lambda: repo.move(keeper.id, "sediment", room=room))


@pytest.mark.parametrize("layer", ["../outside", "/tmp", "shallow/../..", "", "Shallow", "archive/x",
                                   "_system", "..", "shallow\x00"])
def test_unknown_layers_are_refused(env, layer):
    repo, keeper = env[0], env[3]
    assert_refused(env, lambda: repo.add("x", title="t", layer=layer))
    assert_refused(env, lambda: repo.move(keeper.id, layer))


def test_room_that_is_a_symlink_to_outside(env):
    repo, root, outside, keeper = env
    (root / "shallow" / "evil").symlink_to(outside, target_is_directory=True)
    (root / "archive" / "ops").symlink_to(outside, target_is_directory=True)
    (root / "bedrock" / "deep").mkdir()
    (root / "bedrock" / "deep" / "er").symlink_to(outside, target_is_directory=True)

    assert_refused(env, lambda: repo.add("x", title="into the link", room="evil"), UnsafePath)
    assert_refused(env, lambda: repo.add("x", title="below the link", room="evil/sub"), UnsafePath)
    assert_refused(env, lambda: repo.add("x", title="nested link", room="deep/er", layer="bedrock"),
                   UnsafePath)
    assert_refused(env, lambda: repo.move(keeper.id, "shallow", room="evil"), UnsafePath)
    # archive/ops is a link: archiving or purging the keeper (room ops) would land outside
    assert_refused(env, lambda: repo.archive(keeper.id, reason="old"), UnsafePath)
    assert_refused(env, lambda: repo.purge(keeper.id, confirm=True), UnsafePath)
    assert sorted(p.name for p in outside.iterdir()) == ["bait.md"]


def test_symlinks_pointing_out_are_not_read(env):
    repo, root, outside, keeper = env
    (root / "shallow" / "linked-room").symlink_to(outside, target_is_directory=True)
    (root / "sediment" / "linked-note.md").symlink_to(outside / "bait.md")
    before = snapshot(root, outside, skip_system=True)
    for r in (repo, Repository(root)):
        r.refresh()
        with pytest.raises(NotFound):
            r.get("BAIT")
        assert "BAIT" not in r
        assert all(e.id != "BAIT" for e in r.list())
        assert r.search("zanzibar") == []
        assert r.search("zanzibar", include_archive=True) == []
        r.check()
        r.check(fix=True)
    assert diff(before, snapshot(root, outside, skip_system=True)) == []


def test_note_replaced_by_a_symlink_to_outside_is_not_followed(env):
    """Someone swaps a note's file for a link to a file outside the root. Writing
    through it is refused - and reading through it must not happen either: the
    outside file's content must not enter the index."""
    repo, root, outside, keeper = env
    victim = repo.add("victim note", title="victim")
    (root / victim.path).unlink()
    (root / victim.path).symlink_to(outside / "bait.md")
    before = snapshot(root, outside, skip_system=True)
    with pytest.raises(SedimentError):
        repo.update(victim.id, text="written through the link")
    for attempt in (lambda: repo.move(victim.id, "bedrock"), lambda: repo.archive(victim.id, reason="r")):
        with pytest.raises(SedimentError):
            attempt()
    assert diff(before, snapshot(root, outside, skip_system=True)) == []
    with pytest.raises(NotFound):
        repo.get("BAIT")
    assert repo.search("zanzibar") == [] and repo.search("zanzibar", include_archive=True) == []
    assert all(e.id != "BAIT" for e in repo.list())


def test_symlink_where_a_new_note_would_go(env):
    """A link planted under the name a new note would get: the note is written
    inside the root (under another name) or refused; the link's target is never created."""
    repo, root, outside, keeper = env
    (root / "shallow" / "trap.md").symlink_to(outside / "created-through-link.md")  # dangling
    (root / "shallow" / "bait-link.md").symlink_to(outside / "bait.md")
    before = snapshot(outside)
    for title in ("trap", "bait link"):
        try:
            e = repo.add("planted", title=title)
        except SedimentError:
            continue
        assert not (root / e.path).is_symlink() and (root / e.path).is_file()
        assert (root / e.path).resolve().is_relative_to(root.resolve())
    assert snapshot(outside) == before
    assert not (outside / "created-through-link.md").exists()


@pytest.mark.parametrize("key", ["../outside/bait", "../../outside/bait.md", "[[../outside/bait]]",
                                 "/etc/passwd", "BAIT", "bait", "outside/bait", "x\x00y", "",
                                 "\\..\\outside\\bait"])
def test_ids_and_names_never_reach_outside(env, key):
    repo, root, outside, keeper = env
    absolute = str(outside / "bait.md")
    for k in (key, absolute):
        assert_refused(env, lambda: repo.get(k), SedimentError)
        assert_refused(env, lambda: repo.update(k, text="overwritten"), SedimentError)
        assert_refused(env, lambda: repo.move(k, "bedrock"), SedimentError)
        assert_refused(env, lambda: repo.archive(k, reason="r"), SedimentError)
        assert_refused(env, lambda: repo.purge(k, confirm=True), SedimentError)


UNSAFE_TITLES = ["../../outside/evil", "/etc/passwd", "..", ".", "...", "C:\\Windows\\evil", "CON",
                 "nul.txt", "com1", "LPT9", "aux.md", "a" * 500, "长" * 300, ".hidden", "~/.ssh/id_rsa",
                 "a/b/c", "\\\\server\\share", "name with trailing dot.", " ", "-", "🚀🚀"]


@pytest.mark.parametrize("title", UNSAFE_TITLES, ids=range(len(UNSAFE_TITLES)))
def test_titles_never_become_unsafe_file_names(env, title):
    """A title becomes the file name: whatever it says, the file lands directly in
    the layer folder, under a name every file system accepts, or the add is refused."""
    repo, root, outside, keeper = env
    before = snapshot(root, outside)
    try:
        e = repo.add("x", title=title)
    except InvalidInput:
        assert diff(before, snapshot(root, outside)) == []
        return
    assert e.path == f"shallow/{e.name}.md"
    name = e.name
    assert name and "/" not in name and "\\" not in name and "\x00" not in name
    assert not name.startswith(".") and not name.endswith((".", " "))
    assert name.split(".")[0].lower() not in {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)),
                                             *(f"lpt{i}" for i in range(1, 10))}
    assert len((name + ".md").encode("utf-8")) <= 255
    assert (root / e.path).is_file()
    changed = {k[1] for k in (k for k, *_ in diff(before, snapshot(root, outside)))
               if k[0] == 0 and k[2] == "file" and not k[1].startswith("_system/")}
    assert changed == {e.path}
    assert [k for k in diff(before, snapshot(root, outside)) if k[0][0] == 1] == []  # outside untouched


def test_title_with_nul_or_newline_is_refused(env):
    repo = env[0]
    assert_refused(env, lambda: repo.add("x", title="a\x00b"))
    assert_refused(env, lambda: repo.add("x", title="two\nlines"))


def test_path_like_tags_and_links_stay_text(env):
    repo, root, outside, keeper = env
    before = snapshot(outside)
    # tags are text, never paths; those Obsidian refuses ('.', a leading '/') are refused
    for bad in ("../../outside", "/etc/passwd", "nul.txt"):
        with pytest.raises(InvalidInput):
            repo.add("x", title="tags", tags=[bad])
    e = repo.add("x", title="tags", tags=["CON", "a/b", "nul"], links=["../outside/bait", "/etc/passwd"])
    assert list(e.tags) == ["CON", "a/b", "nul"]
    assert e.path == f"shallow/{e.name}.md"
    assert snapshot(outside) == before
    assert [x.id for x in repo.list(tag="a/b")] == [e.id]


@pytest.mark.parametrize("kwargs", [
    {"tags": ["ok", "a\x00b"]},
    {"tags": ["two\nlines"]},
    {"tags": [""]},
    {"links": ["bad\x00link"]},
    {"links": ["a]]b"]},
    {"extra_field": "nul\x00value"},
    {"weights": {"importance": 9}},
    {"value": 1.5},
    {"value": float("nan")},
], ids=["tag-nul", "tag-newline", "tag-empty", "link-nul", "link-brackets", "field-nul", "weights",
        "value-high", "value-nan"])
def test_bad_arguments_are_refused(env, kwargs):
    repo = env[0]
    assert_refused(env, lambda: repo.add("x", title="bad argument", **kwargs))


@pytest.mark.parametrize("key", ["../x", "a/b", "a\x00", "created", "updated", "status", "path", "version",
                                 "1abc", "a b", "id"])
def test_bad_field_names_are_refused(env, key):
    repo, keeper = env[0], env[3]
    assert_refused(env, lambda: repo.add("x", title="bad field", **{key: "v"}))
    if key != "id":  # update's first parameter is called id
        assert_refused(env, lambda: repo.update(keeper.id, **{key: "v"}))


@pytest.mark.parametrize("key", ["layer", "room"])
def test_update_cannot_move(env, key):
    repo, keeper = env[0], env[3]
    assert_refused(env, lambda: repo.update(keeper.id, **{key: "../../outside"}))


def test_text_with_nul_is_refused(env):
    repo, keeper = env[0], env[3]
    assert_refused(env, lambda: repo.add("a\x00b", title="nul"))
    assert_refused(env, lambda: repo.update(keeper.id, text="a\x00b"))


# --------------------------------------------------------------------------- size


def test_body_over_the_policy_limit_is_refused(env):
    repo, root, outside, keeper = env
    assert repo.policy.max_body_bytes == 1000
    err = assert_refused(env, lambda: repo.add("x" * 5000, title="huge"), TooLarge)
    assert isinstance(err, InvalidInput)
    # bytes of UTF-8, not characters: 400 Chinese characters are 1200 bytes
    assert_refused(env, lambda: repo.add("长" * 400, title="huge zh"), TooLarge)
    # the structured sections count too
    assert_refused(env, lambda: repo.add("x" * 600, title="huge sections", evidence=["y" * 600]),
                   TooLarge)
    assert_refused(env, lambda: repo.update(keeper.id, text="z" * 5000), TooLarge)
    assert_refused(env, lambda: repo.update(keeper.id, hesitation="z" * 5000), TooLarge)
    assert repo.add("x" * 500, title="fits").text == "x" * 500


def test_max_body_bytes_from_policy_file(tmp_path):
    root = tmp_path / "root"
    Repository(root)
    pol = root / "_system" / "policy.yaml"
    pol.write_text(pol.read_text(encoding="utf-8").replace("max_body_bytes: 1000000", "max_body_bytes: 100"),
                   encoding="utf-8")
    repo = Repository(root)
    before = snapshot(root)
    with pytest.raises(TooLarge):
        repo.add("y" * 200, title="too big for the file's limit")
    assert diff(before, snapshot(root)) == []


# --------------------------------------------------------------------------- destructive policy


def test_purge_without_confirm_changes_nothing(env):
    repo, root, outside, keeper = env
    err = assert_refused(env, lambda: repo.purge(keeper.id), PolicyError)
    assert not isinstance(err, PolicyFileError)
    assert repo.get(keeper.id).status == "active"
    assert keeper.id in [h.entry.id for h in repo.search("stay")]


def test_purge_without_confirm_allowed_when_policy_says_so(tmp_path):
    repo = Repository(tmp_path, policy={"confirm_destructive": False})
    e = repo.add("x", title="gone")
    assert repo.purge(e.id).status == "purged"


def test_rate_limit_counts_only_successful_purges(env):
    repo, root, outside, keeper = env
    notes = [repo.add(f"note {i}", title=f"rate {i}") for i in range(4)]
    a, b, c, d = notes
    # refused (no confirm) and failed (unknown id; target taken) calls use up nothing
    for _ in range(3):
        assert_refused(env, lambda: repo.purge(a.id), PolicyError)
    for _ in range(3):
        assert_refused(env, lambda: repo.purge("NO-SUCH-ID", confirm=True), NotFound)
    blocker = root / "archive" / f"{c.name}.md"
    blocker.write_text("---\nid: BLOCKER\ntitle: in the way\ncreated: '2026-01-01T00:00:00+00:00'\n---\nx\n",
                       encoding="utf-8")
    for _ in range(2):
        with pytest.raises(SedimentError):
            repo.purge(c.id, confirm=True)
    assert (root / c.path).exists()
    blocker.unlink()

    assert repo.purge(a.id, confirm=True).status == "purged"
    assert repo.purge(b.id, confirm=True).status == "purged"
    err = assert_refused(env, lambda: repo.purge(d.id, confirm=True), PolicyError)
    assert "destructive_per_hour" in str(err) or "hour" in str(err)
    assert repo.get(d.id).path == d.path and repo.get(d.id).status == "active"
    # the limit holds for another process too (each CLI call is a new one)
    other = Repository(root, policy={"max_body_bytes": 1000, "destructive_per_hour": 2})
    assert_refused(env, lambda: other.purge(d.id, confirm=True), PolicyError)


# --------------------------------------------------------------------------- policy file

POLICY_EDITS = {
    "lock-timeout-word": ("lock_timeout_seconds: 10.0", "lock_timeout_seconds: soon", "lock_timeout_seconds"),
    "unknown-key": (None, "colour: blue", "colour"),
    "negative-rate": ("destructive_per_hour: 30", "destructive_per_hour: -1", "destructive_per_hour"),
    "max-body-word": ("max_body_bytes: 1000000", "max_body_bytes: lots", "max_body_bytes"),
    "confirm-not-bool": ("confirm_destructive: true", "confirm_destructive: maybe", "confirm_destructive"),
    "kind-half-life": ("  fact: [15, 365, 1095]", "  fact: [15, 0, 1095]", "fact"),
    "kind-shape": ("  rule: [120, 730, 3650]", "  rule: often", "rule"),
}


@pytest.mark.parametrize("edit", POLICY_EDITS.values(), ids=POLICY_EDITS.keys())
def test_invalid_policy_file_names_the_key(tmp_path, edit):
    old, new, key = edit
    root = tmp_path / "root"
    e = Repository(root).add("x", title="exists")
    pol = root / "_system" / "policy.yaml"
    text = pol.read_text(encoding="utf-8")
    if old is None:
        text += f"\n{new}\n"
    else:
        assert old in text, "the default policy file changed; update this test"
        text = text.replace(old, new)
    pol.write_text(text, encoding="utf-8")
    before = snapshot(root)
    with pytest.raises(PolicyFileError) as info:
        Repository(root)
    assert isinstance(info.value, PolicyError) and isinstance(info.value, ValueError)
    assert info.value.code == "policy_file"
    assert key in str(info.value), str(info.value)
    assert diff(before, snapshot(root)) == []  # the person's file is not "repaired"
    assert (root / e.path).exists()


def test_policy_file_that_is_not_yaml(tmp_path):
    root = tmp_path / "root"
    Repository(root)
    pol = root / "_system" / "policy.yaml"
    pol.write_text("destructive_per_hour: [1, 2\n", encoding="utf-8")
    with pytest.raises(PolicyFileError):
        Repository(root)
    assert pol.read_text(encoding="utf-8") == "destructive_per_hour: [1, 2\n"


def test_policy_file_written_on_first_open_is_valid_and_kept(tmp_path):
    root = tmp_path / "root"
    repo = Repository(root)
    pol = root / "_system" / "policy.yaml"
    text = pol.read_bytes()
    assert b"confirm_destructive" in text and b"destructive_per_hour" in text
    assert b"max_body_bytes" in text and b"lock_timeout_seconds" in text
    assert Repository(root).policy == repo.policy
    assert pol.read_bytes() == text  # read, never rewritten
