"""An Obsidian vault as a memory root (tests/data/vault, written as a person
writes one): every note opens and is found, nothing of the person's is
written, moved or archived, links resolve as Obsidian resolves them."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sediment import Ambiguous, InvalidInput, NotFound, Repository
from sediment.model import obsidian as O
from sediment.disk import vault as V

VAULT = Path(__file__).parent / "data" / "vault"
# the notes of the vault, and only those: not .obsidian/, .trash/, the templates
# folder (templates.json), Private/ and *.excalidraw.md (app.json userIgnoreFilters)
NOTES = {
    "Home.md", "Areas/Meeting Notes.md", "Areas/Health/Running.md", "Areas/Cooking/Sourdough.md",
    "Projects/Alpha/Meeting Notes.md", "Projects/Alpha/Alpha Roadmap.md", "Projects/Beta/Meeting Notes.md",
    "Resources/Books/Deep Work.md", "Resources/中文笔记.md", "Resources/Quick thought.md",
    "Resources/Zettel.md", "Daily/2024-01-15.md",
}
OURS = ("shallow", "sediment", "bedrock", "archive", "_system")


def state(root: Path) -> dict[str, tuple[str, int]]:
    """Every file of the person's (outside the layer folders and _system/): (sha256, mtime_ns)."""
    out = {}
    for dirpath, dirs, files in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root)
        if rel_dir.parts and rel_dir.parts[0] in OURS:
            dirs[:] = []
            continue
        for f in files:
            p = Path(dirpath, f)
            out[p.relative_to(root).as_posix()] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out


@pytest.fixture
def vault(tmp_path: Path) -> Path:
    root = tmp_path / "vault"
    shutil.copytree(VAULT, root)
    return root


def test_every_note_opens_and_nothing_else(vault):
    present = {p.relative_to(vault).as_posix() for p in vault.rglob("*.md")}
    with Repository(vault) as repo:
        usable = {e.path for e in repo.list()}
        assert usable == NOTES
        assert all(e.reference and e.layer == "" for e in repo.list())
        assert repo.stats()["reference"] == len(NOTES)
    # what is left out is left out on purpose (the figure: usable / present)
    assert present - usable == {".trash/Old idea.md", "Templates/Daily Template.md", "Private/Diary.md",
                                "Resources/Sketch.excalidraw.md"}


def test_titles_ids_and_times_are_obsidians(vault):
    with Repository(vault) as repo:
        e = repo.get("Areas/Cooking/Sourdough.md")
        assert e.title == "Sourdough"  # an empty `title:`: the file name
        assert e.id == O.path_id("Areas/Cooking/Sourdough.md") and e.id.startswith("path-")
        assert repo.get(e.id).path == e.path and repo.get("Sourdough").id == e.id
        assert repo.get("202401150930").path == "Resources/Zettel.md"  # a person's own id is kept
        # times: the note's own properties first
        assert e.created == dt.datetime(2024, 1, 10, tzinfo=dt.timezone.utc)
        assert repo.get("Running").created == dt.datetime(2023, 5, 1, 7, 30, tzinfo=dt.timezone.utc)
        # none, and no git: the file's mtime (approximate)
        q = vault / "Resources" / "Quick thought.md"
        os.utime(q, (1_600_000_000, 1_600_000_000))
        repo.refresh()
        assert repo.get("Quick thought").created.timestamp() == 1_600_000_000
    with Repository(vault) as again:  # warm: from the snapshot, the same ids
        assert again.get("Sourdough").id == e.id


def test_properties_keep_their_type_and_odd_values_as_written(vault):
    with Repository(vault) as repo:
        m = repo.get("Sourdough").meta
    assert m["description"] == "A country loaf with a long cold proof"  # text
    assert m["ingredients"] == ["flour", "water", "salt", "levain"] and m["cssclasses"] == ["wide-page"]  # list
    assert m["servings"] == 2 and type(m["servings"]) is int and m["rating"] == 4.5  # number
    assert m["publish"] is False and m["favourite"] is True  # checkbox
    assert m["date"] == dt.date(2024, 1, 10) and not isinstance(m["date"], dt.datetime)  # date
    assert m["started"] == "2024-01-10T08:30"  # date & time, as Obsidian writes it
    assert m["baked"] == dt.datetime(2024, 1, 11, 18, 45)
    # what YAML 1.1 would "fix": kept as written, as Obsidian shows it
    assert (m["zip"], m["answer"], m["time"], m["reviewed"]) == ("01234", "yes", "12:30", "{{date}}")
    assert m["title"] is None and m["up"] == "[[Home]]"
    with Repository(vault) as warm:  # from the index snapshot: the same values, the same types
        again = warm.get("Sourdough").meta
    assert again == m and [type(v) for v in again.values()] == [type(v) for v in m.values()]


def test_searchable_by_title_alias_tag_and_body(vault):
    with Repository(vault) as repo:
        def found(query: str, **kw: object) -> list[str]:
            return [h.entry.path for h in repo.search(query, record=False, **kw) if h.terms]  # direct matches

        assert "Areas/Cooking/Sourdough.md" in found("sourdough")  # title = the file name
        assert "Resources/Zettel.md" in found("zettel")
        assert found("jogging")[0] == "Areas/Health/Running.md"  # alias
        assert found("跑步") == ["Areas/Health/Running.md"]
        assert found("读书方法") == ["Resources/中文笔记.md"]  # an alias written as text
        assert found("Weekly review")[0] == "Areas/Meeting Notes.md"
        assert "Resources/Books/Deep Work.md" in found("productivity")  # tags written as text
        assert found("autolyse") == ["Areas/Cooking/Sourdough.md"]  # body
        assert found("Friedrichshafen") == ["Resources/Quick thought.md"]  # a note without frontmatter
        assert found("精读") == ["Resources/中文笔记.md"]
        assert found("plumber") == ["Daily/2024-01-15.md"]
        # nested tags match their parents, in the tag filter and as words
        assert {e.path for e in repo.list(tags="project")} == {"Projects/Alpha/Meeting Notes.md",
                                                               "Projects/Beta/Meeting Notes.md"}
        assert [e.path for e in repo.list(tags="project/beta")] == ["Projects/Beta/Meeting Notes.md"]
        assert [e.path for e in repo.list(tags="sport")] == ["Areas/Health/Running.md"]
        assert [e.path for e in repo.list(tags="学习")] == ["Resources/中文笔记.md"]
        assert found("retro", tags=["project"]) == ["Projects/Beta/Meeting Notes.md"]
        # left out: templates, excluded files, the trash
        assert found("lighthouse") == [] and found("dirigibles") == [] and found("Excalidraw") == []
        assert found("{{title}}") == []


def test_tags_links_and_dataview_lines_are_parsed_as_obsidian_does(vault):
    with Repository(vault) as repo:
        deep = repo.get("Deep Work")
        # property tags (text, split), inline tags; not in code, links or '# headings'; not digits only
        assert deep.tags == ("books", "productivity", "reading", "productivity/focus")
        assert "rating" not in deep.meta and "rating:: 5" in deep.body  # Dataview lines: plain text
        assert repo.get("Running").tags == ("sport/running", "health")
        home = repo.get("Home")
        assert home.tags == ("hub",)
        assert {"Meeting Notes", "Beta/Meeting Notes", "Projects/Alpha/Meeting Notes", "Jogging", "Running",
                "Sourdough", "Deep Work", "diagram.png", "paper.pdf", "board.canvas"} <= set(home.links)
        assert repo.get("Sourdough").links == ("diagram.png", "Home", "Deep Work")  # body, then properties
    links = O.wikilinks("![[Deep Work#Focus|quote]] and [[a\\|b]] [[#local]]")
    assert links == [O.Link("Deep Work", "Focus", "quote", True), O.Link("a", "", "b", False),
                     O.Link("", "local", "", False)]


def test_links_resolve_as_obsidian_resolves_them(vault):
    with Repository(vault) as repo:
        view = repo.view
        path = lambda target: (view.link(target) or pytest.fail(target)).path  # noqa: E731
        assert path("Meeting Notes") == "Areas/Meeting Notes.md"  # three of that name: the shortest path
        assert path("Beta/Meeting Notes") == "Projects/Beta/Meeting Notes.md"  # a folder names one
        assert path("Projects/Alpha/Meeting Notes") == "Projects/Alpha/Meeting Notes.md"
        assert path("Alpha/Meeting Notes.md") == "Projects/Alpha/Meeting Notes.md"
        assert path("Jogging") == "Areas/Health/Running.md"  # an alias
        assert path("quick thought") == "Resources/Quick thought.md"  # any case
        assert path("Running#Plan") == "Areas/Health/Running.md"
        assert view.link("diagram.png") is None and view.link("Nowhere") is None
        with pytest.raises(Ambiguous) as err:  # get() of a name several notes have: say which
            repo.get("Meeting Notes")
        assert err.value.code == "ambiguous" and isinstance(err.value, LookupError)
        assert err.value.details["candidates"] == ["Areas/Meeting Notes.md", "Projects/Beta/Meeting Notes.md",
                                                   "Projects/Alpha/Meeting Notes.md"]
        assert repo.get("Beta/Meeting Notes").path == "Projects/Beta/Meeting Notes.md"
        with pytest.raises(NotFound):
            repo.get("Diary")  # excluded: not a note of the memory
        backlinks = {e.path for e in repo.links_to("Areas/Health/Running.md")}
        assert {e.path for e in repo.links_to("Projects/Beta/Meeting Notes.md")} == {"Home.md"}
        assert {e.path for e in repo.links_to("Areas/Meeting Notes.md")} == {"Home.md",
                                                                         "Projects/Alpha/Alpha Roadmap.md"}
        assert backlinks == {"Daily/2024-01-15.md", "Home.md"}  # by name, by alias, to a heading
        # check(): links to attachments and to the template are no problem; nothing else either
        assert repo.check() == []


def test_nothing_of_the_persons_changes(vault):
    before = state(vault)
    with Repository(vault) as repo:
        assert state(vault) == before  # open
        for q in ("sourdough", "jogging", "meetings", "精读"):
            repo.search(q)  # records recalls, outside the notes
        repo.touch("Running", "confirm")
        far = dt.datetime(2040, 1, 1, tzinfo=dt.timezone.utc)
        assert repo.metabolize(now=far).moves == []  # decayed or not: a person's note never moves
        assert repo.metabolize(dry_run=False, confirm=True, now=far).moves == []
        repo.check(fix=True)
        # the agent's memories live in the layer folders, beside the person's
        e = repo.add("The person bakes sourdough on Sundays", title="baking day", links=["Sourdough"])
        assert e.path.startswith("shallow/") and e.links == ("Sourdough",) and not e.warnings
        assert repo.metabolize(dry_run=False, confirm=True, now=far).moves  # that one decays
        ref = repo.get("Alpha Roadmap")
        assert ref.status == "active" and ref.value == 0.5  # `status: in-progress`, `value: high`: the person's
        for write in (lambda: repo.update(ref.id, tags=["x"]), lambda: repo.move(ref.id, "sediment"),
                      lambda: repo.archive(ref.id, reason="old"), lambda: repo.purge(ref.id, confirm=True),
                      lambda: repo.touch(ref.id, "refute", confirm=True), lambda: repo.adopt(ref.path),
                      lambda: repo.supersede(ref.id, e.id)):
            with pytest.raises(InvalidInput):
                write()
    assert state(vault) == before
    assert not (vault / ".gitignore").exists()  # the vault's root is the person's
    assert "lock" in (vault / "_system" / ".gitignore").read_text()


def test_a_person_hands_a_note_to_the_agent_by_moving_it_into_a_layer(vault):
    with Repository(vault) as repo:
        (vault / "shallow").mkdir(exist_ok=True)
        os.replace(vault / "Resources" / "Quick thought.md", vault / "shallow" / "Quick thought.md")
        repo.refresh()
        assert [p.code for p in repo.check()] == ["parse"]  # in a layer folder: a memory without an id
        repo.check(fix=True)  # adopts notes in layer folders only
        e = repo.get("Quick thought")
        assert not e.reference and e.layer == "shallow" and e.id != O.path_id("shallow/Quick thought.md")
        assert (vault / "shallow" / "Quick thought.md").read_text().startswith("---\nid: ")


def test_first_commit_time_when_versioned(vault):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    env = {**os.environ, "GIT_AUTHOR_NAME": "p", "GIT_AUTHOR_EMAIL": "p@x", "GIT_COMMITTER_NAME": "p",
           "GIT_COMMITTER_EMAIL": "p@x", "GIT_AUTHOR_DATE": "2021-03-04T05:06:07+00:00",
           "GIT_COMMITTER_DATE": "2021-03-04T05:06:07+00:00"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "vault"]):
        subprocess.run(["git", *args], cwd=vault, env=env, check=True)
    with Repository(vault) as repo:
        assert repo.get("Quick thought").created == dt.datetime(2021, 3, 4, 5, 6, 7, tzinfo=dt.timezone.utc)
        assert repo.get("Sourdough").created == dt.datetime(2024, 1, 10, tzinfo=dt.timezone.utc)
        assert repo.list(sort="created")[-1].created.year == 2021  # oldest last


def test_settings_and_new_notes_are_followed(vault):
    with Repository(vault) as repo:
        (vault / "Areas" / "Garden").mkdir()
        (vault / "Areas" / "Garden" / "Tomatoes.md").write_text("Stake the tomatoes in May.\n")
        (vault / "Private" / "More.md").write_text("tomatoes, privately\n")
        assert repo.refresh()["added"] == 1
        assert [h.entry.path for h in repo.search("tomatoes") if h.terms] == ["Areas/Garden/Tomatoes.md"]
        # the person stops excluding Private/ in Obsidian: its notes come in
        (vault / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": []}')
        repo.refresh()
        found = {h.entry.path for h in repo.search("tomatoes") if h.terms}
        assert found == {"Areas/Garden/Tomatoes.md", "Private/More.md"}
        # settings a person broke: as if absent, and check() says so
        (vault / ".obsidian" / "templates.json").write_text("{not json")
        repo.refresh()
        assert "Templates/Daily Template.md" in {e.path for e in repo.list()}
        assert [p.code for p in repo.check() if p.path.startswith(".obsidian")] == ["vault_settings"]


def test_frontmatter_a_person_broke_is_a_warning_and_the_note_still_found(vault):
    note = vault / "Areas" / "Broken.md"
    note.write_text("---\ntags: [unclosed\n---\nThe kelp forest note.\n")
    with Repository(vault) as repo:
        assert [h.entry.path for h in repo.search("kelp") if h.terms] == ["Areas/Broken.md"]
        probs = [p for p in repo.check() if p.path == "Areas/Broken.md"]
        assert [(p.severity, p.code) for p in probs] == [("warning", "properties")]
    with Repository(vault) as warm:  # the warning survives the snapshot
        assert [p.code for p in warm.check() if p.path == "Areas/Broken.md"] == ["properties"]


def test_init_on_an_existing_vault_works_in_place(vault):
    before = state(vault)
    proc = subprocess.run([sys.executable, "-m", "sediment", "--root", str(vault), "init"],
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    assert proc.returncode == 0, proc.stderr
    assert f"{len(NOTES)} note(s) of yours indexed in place" in proc.stdout
    assert state(vault) == before
    assert {p.name for p in vault.iterdir()} - set(before) - {".obsidian", ".trash", "Areas", "Attachments",
                                                              "Daily", "Private", "Projects", "Resources",
                                                              "Templates"} == set(OURS)
    found = subprocess.run([sys.executable, "-m", "sediment", "--root", str(vault), "search", "jogging"],
                           capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    assert "Areas/Health/Running.md" in found.stdout
    got = subprocess.run([sys.executable, "-m", "sediment", "--root", str(vault), "--json", "get", "Sourdough"],
                         capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    out = json.loads(got.stdout)
    assert (out["title"], out["reference"], out["date"], out["reviewed"]) == ("Sourdough", True, "2024-01-10",
                                                                              "{{date}}")
    assert state(vault) == before


@pytest.mark.parametrize("text, tags", [
    ("#a #b/c d#e #1984 #y2k", ["a", "b/c", "y2k"]),
    ("# Heading\n#tag-x, (#no) `#code`", ["tag-x"]),
    ("```\n#fenced\n```\n%% #hidden %%\n#after", ["after"]),
    ("[[note#part]] https://x.org/#frag #中文/标签", ["中文/标签"]),
])
def test_inline_tags(text, tags):
    assert O.inline_tags(text) == tags


def test_ignore_filters_and_path_ids():
    assert O.excluded("Private/x.md", ["Private/"]) and not O.excluded("Privates/x.md", ["Private/"])
    assert O.excluded("a/b.excalidraw.md", ["/\\.excalidraw\\.md$/"]) and not O.excluded("a.md", ["/[/"])
    rules = V.Rules(templates=("Meta/Templates",), filters=("/e/", "sh"))
    assert rules.skips("Meta/Templates/x.md") and rules.skips("Meta/Templates", is_dir=True)
    assert rules.skips("Mine/x.md") and rules.skips("shop.md") and not rules.skips("Mini/Tops.md")
    # the agent's folders are never left out by the person's filters
    assert not rules.skips("shallow", is_dir=True) and not rules.skips("archive/a.md")
    assert O.tag_closure(["a/b/c", "d"]) == {"a", "a/b", "a/b/c", "d"}
    # one path, one id, on every machine (NFC and NFD spellings of a name agree)
    assert O.path_id("Notes/Café.md") == O.path_id("Notes/Cafe\u0301.md") != O.path_id("Notes/Cafe.md")


def test_the_watcher_follows_a_persons_folders_and_settings(vault):
    import time

    def until(pred, what: str) -> None:
        t0 = time.monotonic()
        while not pred():
            assert time.monotonic() - t0 < 10, what
            time.sleep(0.01)

    def paths(q: str) -> set[str]:
        return {h.entry.path for h in repo.search(q, record=False) if h.terms}

    with Repository(vault, watch=True) as repo:
        (vault / "Areas" / "Garden").mkdir()
        (vault / "Areas" / "Garden" / "Beans.md").write_text("Runner beans climb the fence.\n")
        (vault / "Private" / "Beans too.md").write_text("beans, privately\n")
        until(lambda: paths("beans") == {"Areas/Garden/Beans.md"}, "a note in a new folder")
        (vault / ".obsidian" / "app.json").write_text('{"userIgnoreFilters": ["Areas/Garden/"]}')
        until(lambda: paths("beans") == {"Private/Beans too.md"}, "the excluded files changed")


PROPS = ["id: 1", "id: [a]", "id: ''", "id: '{{date}}'", "title: [x]", "title: 3", "aliases: {a: 1}",
         "aliases: [[x]]", "aliases: a, b", "tags: {a: b}", "tags: [[a]]", "tags: '#a #b'", "tags: 1984",
         "created: {{date}}", "created: 2024-02-30", "created: [1]", "date: 2024-13-45", "updated: yes",
         "kind: [x]", "kind: inbox", "status: purged", "status: done", "value: high", "value: 7",
         "weights: x", "event: [x]", "links: {a: 1}", "links: '[[x|y]]'", "up: '[[Home#a|b]]'",
         "source: {a: 1}", "supersedes: x", "x: !!binary aGk=", "x: &a [*a]", "? [a]\n: b", "1: 2",
         "x: 12:30", "x: 0o17", "x: =", "x: .nan", "{{title}}", "- list", "x: |\n  block", "'"]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(PROPS), max_size=5), st.text(max_size=60),
       st.sampled_from(["---\n{fm}\n---\n{body}", "{body}", "---\n{fm}\n{body}", "\ufeff---\r\n{fm}\r\n---\r\n{body}"]))
def test_fuzz_a_persons_note_is_a_note_or_a_problem_never_an_exception(tmp_path, props, body, shape):
    root = Path(tempfile.mkdtemp(dir=tmp_path))
    note = root / "Notes" / "fuzz.md"
    note.parent.mkdir()
    data = shape.format(fm="\n".join(props), body=body).encode("utf-8", "surrogatepass")
    note.write_bytes(data)
    (root / "Home.md").write_text("home quokka [[fuzz]]\n")
    with Repository(root) as repo:
        assert [h.entry.path for h in repo.search("quokka") if h.terms] == ["Home.md"]
        repo.search("fuzz", record=False)
        for e in repo.list(sort="created"):
            e.to_dict(), e.title, e.tags, e.aliases, e.links, e.kind, e.value, e.status, e.updated
        repo.metabolize(dry_run=False, confirm=True)
        served = "Notes/fuzz.md" in {e.path for e in repo.list()}
        assert served or [p for p in repo.check() if p.path == "Notes/fuzz.md"]
        repo.links_to("Home")
    with Repository(root) as warm:  # from the snapshot, the same
        assert served == ("Notes/fuzz.md" in {e.path for e in warm.list()})
    assert note.read_bytes() == data
    shutil.rmtree(root)


# ------------------------------------------------------------------ usage follows a rename by hand

def _person_note(root: Path, rel: str, text: str) -> str:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")
    return O.path_id(rel)


def _used(root: Path, text: str) -> str:
    """A person's note in a fresh root, recalled and confirmed once."""
    with Repository(root) as repo:
        eid = _person_note(root, "garden/watering.md", text)
        repo.refresh()
        assert [h.entry.id for h in repo.search("watering")] == [eid]
        repo.touch(eid, "confirm", now="2026-03-02T10:00:00+00:00")
    return eid


@pytest.mark.parametrize("live", ["open", "refresh", "watcher"])
def test_usage_follows_a_persons_note_renamed_by_hand(tmp_path, live):
    """DESIGN.md "Names and ids": renaming a note without an id gives it a new
    id, and its usage follows when the content hash matches — seen at the next
    open (the snapshot remembers the old path), by a rescan, or by the watcher."""
    import time

    root = tmp_path / "root"
    old = _used(root, "Watering the ferns twice a week in summer.\n")
    new = O.path_id("plants/ferns watering.md")
    repo = Repository(root, watch=live == "watcher")
    try:
        if live != "open":
            (root / "plants").mkdir()
            os.rename(root / "garden/watering.md", root / "plants/ferns watering.md")
            if live == "refresh":
                repo.refresh()
            t0 = time.monotonic()
            while not repo.view.knows(new) or old in repo.usage.load():
                assert time.monotonic() - t0 < 10, "the watcher never applied the rename"
                time.sleep(0.01)
        else:
            repo.close()
            (root / "plants").mkdir()
            os.rename(root / "garden/watering.md", root / "plants/ferns watering.md")
            repo = Repository(root)  # the snapshot remembers the old path
        assert repo.get(new).path == "plants/ferns watering.md"
        u = repo.usage.load()
        assert old not in u and (u[new].recalls, u[new].confirms) == (1, 1)
        assert repo.strength(new).recalls == 1
    finally:
        repo.close()
    with Repository(root) as again:  # recorded, not only folded in memory: compaction keeps it
        again.usage.compact()
        assert (again.usage.load()[new].recalls, again.usage.load()[new].confirms) == (1, 1)


def test_usage_stays_behind_when_the_renamed_note_was_also_edited(tmp_path):
    root = tmp_path / "root"
    old = _used(root, "Watering the ferns twice a week in summer.\n")
    with Repository(root) as repo:
        (root / "plants").mkdir()
        os.rename(root / "garden/watering.md", root / "plants/ferns.md")
        (root / "plants/ferns.md").write_text("Watering the ferns three times a week now.\n", encoding="utf-8")
        repo.refresh()
        new = O.path_id("plants/ferns.md")
        assert repo.get(new) and new not in repo.usage.load() and old in repo.usage.load()
