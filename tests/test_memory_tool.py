"""The backend for Anthropic's memory tool: every command on a real root,
path escapes, stale edits, and round trips with the library's own view."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from sediment import Conflict, InvalidInput, NotFound, Repository, UnsafePath
from sediment.integrations.anthropic import MAX_VIEW_CHARS, MemoryTool, sdk_tool


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "root") as r:
        yield r


@pytest.fixture
def tool(repo):
    return MemoryTool(repo)


def created_at(answer: str) -> str:
    assert answer.startswith("File created successfully at: /memories/")
    return answer.split(": ", 1)[1].split(" ")[0]


def test_create_then_view_shows_what_the_model_wrote_with_its_line_numbers(tool, repo):
    path = created_at(tool({"command": "create", "path": "/memories/user_prefs.md",
                            "file_text": "# Preferences\n- short answers\n- tea, not coffee\n"}))
    assert path.startswith("/memories/shallow/user_prefs-") and path.endswith(".md")
    e = repo.get(path[len("/memories/"):-3].split("/")[-1])
    assert e.title == "user_prefs" and e.body == "# Preferences\n- short answers\n- tea, not coffee\n"
    shown = tool({"command": "view", "path": path})
    assert shown.splitlines()[1:] == ["     1\t# Preferences", "     2\t- short answers", "     3\t- tea, not coffee"]
    part = tool({"command": "view", "path": path, "view_range": [2, 2]})
    assert part.splitlines()[1:] == ["     2\t- short answers"]
    # the path the model created is still found (the library gave the file its own name)
    assert tool({"command": "view", "path": "/memories/user_prefs.md"}) == shown
    # a view is a recall
    assert repo.usage.load()[e.id].recalls >= 1


def test_create_in_a_folder_is_a_room_and_an_existing_path_is_refused(tool, repo):
    path = created_at(tool({"command": "create", "path": "/memories/projects/apollo.md", "file_text": "ships in May"}))
    assert path.startswith("/memories/shallow/projects/apollo-")
    with pytest.raises(InvalidInput, match="already exists"):
        tool({"command": "create", "path": path, "file_text": "again"})
    with pytest.raises(InvalidInput, match="already exists"):
        tool({"command": "create", "path": "/memories/projects/apollo.md", "file_text": "again"})
    path2 = created_at(tool({"command": "create", "path": "/memories/sediment/rule.md", "file_text": "PKCE"}))
    assert path2.startswith("/memories/sediment/rule-")


def test_view_of_a_folder_lists_the_real_file_names(tool, repo):
    a = repo.add("Deploys go through ArgoCD.", title="deploy tool", room="infra")
    b = repo.add("likes tea", title="tea")
    (repo.root / "MAP.md").write_text("# a person's map\n", encoding="utf-8")
    listing = tool({"command": "view", "path": "/memories"})
    lines = listing.splitlines()
    assert lines[0].startswith("Here're the files and directories in /memories (every level)")
    assert any(ln.endswith(f"/memories/{b.path}") for ln in lines)
    assert any(ln.endswith("/memories/shallow/infra/") for ln in lines)
    assert not any("MAP.md" in ln or "_system" in ln for ln in lines)  # only layer folders are memory
    assert any(ln.endswith(f"/memories/{a.path}") for ln in tool({"command": "view",
                                                                   "path": "/memories/shallow/infra"}).splitlines())


def test_str_replace_and_insert_are_updates_the_library_sees(tool, repo):
    path = created_at(tool({"command": "create", "path": "/memories/deploy.md",
                            "file_text": "Deploys go through ArgoCD.\nNever by hand.\n"}))
    tool({"command": "str_replace", "path": path, "old_str": "ArgoCD", "new_str": "Flux"})
    tool({"command": "insert", "path": path, "insert_line": 1, "insert_text": "Since March.\n"})
    e = repo.get(path.rsplit("/", 1)[1][:-3])
    assert e.body == "Deploys go through Flux.\nSince March.\nNever by hand.\n"
    assert [h.entry.id for h in repo.search("flux", record=False)] == [e.id]
    assert repo.check() == []


def test_ambiguous_missing_and_out_of_range_edits_are_refused(tool):
    path = created_at(tool({"command": "create", "path": "/memories/x.md", "file_text": "a\nb\na\n"}))
    with pytest.raises(InvalidInput, match="Multiple occurrences .* lines: 1, 3"):
        tool({"command": "str_replace", "path": path, "old_str": "a", "new_str": "c"})
    with pytest.raises(InvalidInput, match="did not appear verbatim"):
        tool({"command": "str_replace", "path": path, "old_str": "zzz", "new_str": "c"})
    with pytest.raises(InvalidInput, match="insert_line"):
        tool({"command": "insert", "path": path, "insert_line": 9, "insert_text": "c"})
    assert tool({"command": "view", "path": path}).splitlines()[1:] == ["     1\ta", "     2\tb", "     3\ta"]


def test_an_edit_that_would_not_read_back_is_refused(tool, repo):
    path = created_at(tool({"command": "create", "path": "/memories/x.md", "file_text": "plain\n"}))
    before = (repo.root / path[len("/memories/"):]).read_bytes()
    with pytest.raises(InvalidInput, match="would not read back"):
        tool({"command": "insert", "path": path, "insert_line": 1, "insert_text": "a\r\nb"})
    with pytest.raises(InvalidInput, match="conflict markers"):
        tool({"command": "insert", "path": path, "insert_line": 0, "insert_text": "<<<<<<< ours\nx\n>>>>>>> theirs"})
    assert (repo.root / path[len("/memories/"):]).read_bytes() == before


def test_a_stale_str_replace_is_refused(tool, repo):
    path = created_at(tool({"command": "create", "path": "/memories/plan.md", "file_text": "ship on Friday\n"}))
    tool({"command": "view", "path": path})
    e = repo.get(path.rsplit("/", 1)[1][:-3])
    with Repository(repo.root) as person:  # someone else edits the note meanwhile
        person.update(e.id, text="ship on Monday\n")
    with pytest.raises(Conflict, match="changed since you last viewed it"):
        tool({"command": "str_replace", "path": path, "old_str": "ship", "new_str": "release"})
    tool({"command": "view", "path": path})  # seen again: the edit goes through
    tool({"command": "str_replace", "path": path, "old_str": "ship", "new_str": "release"})
    assert repo.get(e.id).body == "release on Monday\n"


def test_delete_archives_and_rename_moves(tool, repo):
    path = created_at(tool({"command": "create", "path": "/memories/old.md", "file_text": "the old office"}))
    name = path.rsplit("/", 1)[1][:-3]
    moved = tool({"command": "rename", "old_path": path, "new_path": f"/memories/sediment/places/{name}.md"})
    assert moved.endswith(f"/memories/sediment/places/{name}.md")
    assert repo.get(name).path == f"sediment/places/{name}.md"
    # a new file name is the model's name for the note; the file keeps the library's (links use it)
    said = tool({"command": "rename", "old_path": f"/memories/sediment/places/{name}.md",
                 "new_path": "/memories/sediment/other.md"})
    assert said.endswith(f"(stored as /memories/sediment/{name}.md)") and repo.get(name).meta["memory_path"] == \
        "/memories/sediment/other.md"
    assert "the old office" in tool({"command": "view", "path": "/memories/sediment/other.md"})
    with pytest.raises(InvalidInput, match="is a folder"):
        tool({"command": "delete", "path": "/memories/sediment"})
    # the old path still resolves (by the file's name), and delete archives: nothing is erased
    assert "Successfully deleted" in tool({"command": "delete", "path": path})
    e = repo.get(name)
    assert (e.layer, e.status) == ("archive", "archived") and (repo.root / e.path).exists()
    with pytest.raises(InvalidInput):
        tool({"command": "delete", "path": "/memories"})


def test_a_note_metabolize_moved_is_found_at_its_old_path(tool, repo):
    path = created_at(tool({"command": "create", "path": "/memories/pkce.md", "file_text": "use PKCE on mobile"}))
    e = repo.get(path.rsplit("/", 1)[1][:-3])
    repo.update(e.id, value=0.9)
    plan = repo.metabolize(dry_run=False, now=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2))
    assert [m.target for m in plan.moves] == ["sediment"]
    shown = tool({"command": "view", "path": path})
    assert shown.startswith(f"Here's the content of /memories/sediment/{e.name}.md")


@pytest.mark.parametrize("path", ["/etc/passwd", "/memoriesX/a.md", "/memories/../x.md",
                                  "/memories/shallow/../../x.md", "/memories/_system/policy.yaml",
                                  "/memories/.git/config", "memories/a.md"])
def test_paths_outside_the_memories_are_refused(tool, path):
    with pytest.raises(UnsafePath):
        tool({"command": "create", "path": path, "file_text": "x"})
    with pytest.raises(UnsafePath):
        tool({"command": "view", "path": path})


def test_a_symlink_out_of_the_root_is_not_followed(tool, repo, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret", encoding="utf-8")
    os.symlink(outside, repo.root / "shallow" / "link")
    with pytest.raises(UnsafePath):
        tool({"command": "view", "path": "/memories/shallow/link/secret.md"})
    with pytest.raises(UnsafePath):
        tool({"command": "create", "path": "/memories/shallow/link/new.md", "file_text": "x"})
    assert "secret" not in tool({"command": "view", "path": "/memories/shallow"})
    assert sorted(p.name for p in outside.iterdir()) == ["secret.md"]


def test_unknown_paths_and_commands(tool):
    with pytest.raises(NotFound, match="does not exist"):
        tool({"command": "view", "path": "/memories/nothing.md"})
    with pytest.raises(InvalidInput, match="unknown memory tool command"):
        tool({"command": "format_disk"})
    with pytest.raises(InvalidInput):
        tool({"command": "create", "path": "/memories/x.md"})  # no file_text
    path = created_at(tool({"command": "create", "path": "/memories/x.md", "file_text": "x"}))
    with pytest.raises(InvalidInput, match="view_range"):
        tool({"command": "view", "path": path, "view_range": ["a", 2]})


def test_the_sdk_subclass(repo):
    pytest.importorskip("anthropic")
    from anthropic.lib.tools import BetaAbstractMemoryTool, ToolError
    t = sdk_tool(repo)
    assert isinstance(t, BetaAbstractMemoryTool)
    assert t.to_dict() == {"type": "memory_20250818", "name": "memory"}
    path = created_at(t.call({"command": "create", "path": "/memories/tea.md", "file_text": "likes tea"}))
    assert "likes tea" in t.call({"command": "view", "path": path})
    with pytest.raises(ToolError, match="already exists"):
        t.call({"command": "create", "path": path, "file_text": "again"})


# --------------------------------------------------------------------------- issue 25: items 7-9, through the SDK

@pytest.fixture
def sdk(repo):
    pytest.importorskip("anthropic")
    return sdk_tool(repo)


def _error(sdk, command: dict) -> str:
    from anthropic.lib.tools import ToolError
    with pytest.raises(ToolError) as refused:
        sdk.call(command)
    return str(refused.value)


def test_a_deleted_path_does_not_exist_for_the_model_and_can_be_created_again(sdk, repo):
    path = created_at(sdk.call({"command": "create", "path": "/memories/plan.md", "file_text": "ship on Friday\n"}))
    assert sdk.call({"command": "delete", "path": "/memories/plan.md"}).startswith("Successfully deleted")
    for gone in ("/memories/plan.md", path):
        assert "does not exist" in _error(sdk, {"command": "view", "path": gone})
        assert "does not exist" in _error(sdk, {"command": "str_replace", "path": gone, "old_str": "ship",
                                                "new_str": "sail"})
    assert "/plan-" not in sdk.call({"command": "view", "path": "/memories"})  # nor is the archived file listed
    again = created_at(sdk.call({"command": "create", "path": "/memories/plan.md", "file_text": "ship on Monday\n"}))
    assert again != path
    assert "ship on Monday" in sdk.call({"command": "view", "path": "/memories/plan.md"})
    # the first note is archived, not erased: a person can still bring it back
    first = repo.get(path.rsplit("/", 1)[1][:-3])
    assert (first.layer, first.status, first.body) == ("archive", "archived", "ship on Friday\n")
    assert "does not exist" in _error(sdk, {"command": "view", "path": f"/memories/{first.path}"})


def test_view_lists_every_file_the_model_can_open_at_any_depth(sdk, repo):
    deep = created_at(sdk.call({"command": "create", "path": "/memories/projects/login/notes.md",
                                "file_text": "PKCE on mobile\n"}))
    assert deep.startswith("/memories/shallow/projects/login/notes-")
    top = sdk.call({"command": "view", "path": "/memories"}).splitlines()
    assert any(line.endswith(deep) for line in top)
    listed = [line.split("\t")[1] for line in top[2:] if line.endswith(".md")]
    for shown in listed:  # whatever is listed opens
        assert sdk.call({"command": "view", "path": shown}).startswith(f"Here's the content of {shown}")
    # the model's own folder, without a layer, is its room across the layers
    assert any(line.endswith(deep) for line in sdk.call({"command": "view",
                                                         "path": "/memories/projects"}).splitlines())
    assert "PKCE" in sdk.call({"command": "view", "path": "/memories/projects/login/notes.md"})


def test_rename_takes_the_models_own_names_and_maps_them(sdk, repo):
    created_at(sdk.call({"command": "create", "path": "/memories/projects/login/notes.md",
                         "file_text": "PKCE on mobile\n"}))
    said = sdk.call({"command": "rename", "old_path": "/memories/projects/login/notes.md",
                     "new_path": "/memories/archive-candidates/notes.md"})
    assert said.startswith("Successfully renamed /memories/projects/login/notes.md to "
                           "/memories/archive-candidates/notes.md")
    assert "PKCE" in sdk.call({"command": "view", "path": "/memories/archive-candidates/notes.md"})
    assert "does not exist" in _error(sdk, {"command": "view", "path": "/memories/projects/login/notes.md"})
    (e,) = repo.list()
    assert e.room == "archive-candidates" and e.layer == "shallow" and e.body == "PKCE on mobile\n"
    # to another layer, with a name of the model's choosing
    sdk.call({"command": "rename", "old_path": "/memories/archive-candidates/notes.md",
              "new_path": "/memories/sediment/auth/mobile.md"})
    assert "PKCE" in sdk.call({"command": "view", "path": "/memories/sediment/auth/mobile.md"})
    assert (repo.get(e.id).layer, repo.get(e.id).room) == ("sediment", "auth")
    # the old name is free again
    created_at(sdk.call({"command": "create", "path": "/memories/archive-candidates/notes.md", "file_text": "x"}))
    assert "delete" in _error(sdk, {"command": "rename", "old_path": "/memories/sediment/auth/mobile.md",
                                    "new_path": "/memories/archive/mobile.md"})


@pytest.mark.parametrize("command", [
    {"command": "str_replace", "path": "P", "old_str": "tea", "new_str": "\ud800"},
    {"command": "insert", "path": "P", "insert_line": 1, "insert_text": "a\udfffb"},
    {"command": "create", "path": "/memories/new.md", "file_text": "\ud800"},
    {"command": "str_replace", "path": "P", "old_str": 5, "new_str": "x"},
    {"command": "str_replace", "path": "P", "old_str": "tea", "new_str": ["x"]},
    {"command": "insert", "path": "P", "insert_line": 1, "insert_text": 7},
    {"command": "insert", "path": "P", "insert_line": 7.5, "insert_text": "x"},
    {"command": "insert", "path": "P", "insert_line": "one", "insert_text": "x"},
    {"command": "create", "path": "/memories/new.md", "file_text": None},
    {"command": "view", "path": ["P"]},
    {"command": "rename", "old_path": "P", "new_path": 3},
])
def test_every_bad_argument_is_a_tool_error(sdk, repo, command):
    path = created_at(sdk.call({"command": "create", "path": "/memories/tea.md", "file_text": "likes tea\n"}))
    command = {k: (path if v == "P" else [path] if v == ["P"] else v) for k, v in command.items()}
    message = _error(sdk, command)
    assert "surrogate" in message or "must be" in message, message
    with pytest.raises(InvalidInput):  # the backend itself refuses, with no SDK in between
        MemoryTool(repo)(command)
    for line in ("1", True):  # (the SDK makes these 1; the backend takes whole numbers only)
        with pytest.raises(InvalidInput, match="insert_line must be a whole number"):
            MemoryTool(repo)({"command": "insert", "path": path, "insert_line": line, "insert_text": "x"})
    assert repo.get(path.rsplit("/", 1)[1][:-3]).body == "likes tea\n"
    assert len(repo.list()) == 1


def test_view_of_a_huge_hand_made_file_is_cut_with_how_to_narrow_it(sdk, repo):
    line = "a person's very long notes, " * 4 + "\n"
    (repo.root / "shallow" / "huge.md").write_text("---\nid: 01HUGE\ntitle: huge\ncreated: 2026-01-01T00:00:00"
                                                   "+00:00\n---\n" + line * 20_000, encoding="utf-8")  # ~2.3 MB
    repo.refresh()
    shown = sdk.call({"command": "view", "path": "/memories/shallow/huge.md"})
    assert len(shown) <= MAX_VIEW_CHARS
    last = shown.splitlines()[-1]
    assert last.startswith("… lines ") and "narrow with view_range" in last
    first_missing = int(last.split()[2].split("–")[0])
    part = sdk.call({"command": "view", "path": "/memories/shallow/huge.md",
                     "view_range": [first_missing, first_missing + 1]})
    assert part.splitlines()[1].lstrip().startswith(f"{first_missing}\t")
    one = "x" * (MAX_VIEW_CHARS * 2)  # one line over the cap: cut within the line
    (repo.root / "shallow" / "wide.md").write_text("---\nid: 01WIDE\ntitle: wide\ncreated: 2026-01-01T00:00:00"
                                                   "+00:00\n---\n" + one + "\n", encoding="utf-8")
    repo.refresh()
    shown = sdk.call({"command": "view", "path": "/memories/shallow/wide.md"})
    assert len(shown) <= MAX_VIEW_CHARS and "line 1 is cut" in shown.splitlines()[-1]
