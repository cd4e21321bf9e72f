"""Several machines, one memory: ``sediment sync`` through a bare remote.

The three ways plain git broke a shared memory, each with real clones:
git's directory-rename guess moving a new note into another layer; two
automatic rewrites of the same frontmatter lines conflicting; two machines
deciding differently for want of each other's usage (and git then keeping two
files with one id). Then what sync leaves to a person: only the same body
lines edited on two machines, which ``check()`` names and search leaves out.
"""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pytest

from sediment.cli.main import main as cli_main
from sediment.model.entry import parse
from sediment.sync.sync import LOCAL

from _machines import GIT, apply_env, git, git_env, network, notes, open_root

pytestmark = pytest.mark.skipif(GIT is None, reason="git is not installed")

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.timezone.utc)


@pytest.fixture
def machines(tmp_path, monkeypatch):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    return network(tmp_path, 2)


def sync(root) -> None:
    with open_root(root) as repo:
        repo.sync()


def where(root, eid: str) -> list[str]:
    return sorted(p for p, data in notes(root).items() if f"id: {eid}".encode() in data)


def test_a_layer_emptied_on_one_machine_does_not_pull_a_new_note_of_another_into_it(machines):
    a, b = machines
    with open_root(a) as repo:
        old = repo.add("the deploy host is build-3", kind="fact", value=0.9, room="infra", now=T0)
    sync(a)
    sync(b)
    with open_root(a) as repo:  # promotes the only note of shallow/infra: the folder goes
        plan = repo.metabolize(dry_run=False, now=T0 + dt.timedelta(days=3))
        assert [(m.source, m.target) for m in plan.moves] == [("shallow", "sediment")]
    assert not (a / "shallow" / "infra").exists()
    with open_root(b) as repo:
        new = repo.add("the deploy user is ci", kind="fact", room="infra", now=T0 + dt.timedelta(days=3))
    sync(a)
    sync(b)  # git would guess shallow/infra → sediment/infra for the new note
    sync(a)
    for root in (a, b):
        assert where(root, new.id) == [new.path], "the new note stays in the layer it was written to"
        assert where(root, old.id) == [f"sediment/infra/{old.path.split('/')[-1]}"]
        assert git(root, "status", "--porcelain").stdout == ""


def test_automatic_rewrites_of_the_same_frontmatter_lines_merge_without_a_conflict(machines):
    a, b = machines
    with open_root(a) as repo:
        x = repo.add("the release train leaves on friday", kind="fact", value=0.9, event="release", now=T0)
    sync(a)
    sync(b)
    with open_root(a) as repo:  # A: promotion rewrites reason (and moves it)
        assert repo.metabolize(dry_run=False, now=T0 + dt.timedelta(days=3)).moves
    with open_root(b) as repo:  # B: an automatic supersede rewrites status, reason, superseded_by
        y = repo.add("actually the release train leaves on thursday", kind="fact", event="release", now=T0)
        assert repo.get(x.id).status == "superseded"
    sync(a)
    sync(b)
    sync(a)
    for root in (a, b):
        files = notes(root)
        assert not any(b"<<<<<<<" in data for data in files.values())
        [path] = where(root, x.id)
        assert path.startswith("sediment/"), "A's promotion stands"
        e = parse(files[path], path)
        assert e.status == "superseded" and e.meta["superseded_by"] == [f"[[{y.path.split('/')[-1][:-3]}]]"]
        with open_root(root) as repo:
            assert repo.check() == []
    assert notes(a) == notes(b)


def test_usage_travels_so_both_machines_plan_the_same(machines):
    a, b = machines
    with open_root(a) as repo:
        x = repo.add("the staging database is pg-7", kind="fact", value=0.1, now=T0)
    sync(a)
    sync(b)
    later = T0 + dt.timedelta(days=40)
    with open_root(a) as repo:  # only A uses the memory
        for _ in range(3):
            assert repo.search("staging database", record=True)
        repo.touch(x.id, "confirm", now=T0 + dt.timedelta(days=1))
    assert git(a, "status", "--porcelain").stdout == "", "reads change no versioned file"
    with open_root(a) as repo:
        plan_a = repo.metabolize(now=later).to_dict()["moves"]
    with open_root(b) as repo:
        before = repo.metabolize(now=later).to_dict()["moves"]
    assert plan_a != before, "without A's usage B decides otherwise"
    sync(a)
    sync(b)
    with open_root(b) as repo:
        assert repo.metabolize(now=later).to_dict()["moves"] == plan_a
    assert git(a, "status", "--porcelain").stdout == ""
    assert [p for p in git(a, "ls-files").stdout.splitlines() if p.startswith("_system/")] == [
        "_system/policy.yaml", *[p for p in git(a, "ls-files", "_system/shared").stdout.splitlines()]]
    del x


def test_searches_read_the_machine_name_only_when_the_summaries_change(machines):
    """Each search's tie-breaks ask for the other machines' usage; the answer
    is cached until a summary changes, and so is this machine's own name
    (which tells its own summary from the others'): not a file read a search."""
    a, b = machines
    with open_root(a) as repo:
        x = repo.add("the staging database is pg-7", kind="fact", value=0.1, now=T0)
        repo.add("the staging database is pg-8", kind="fact", value=0.1, now=T0)  # a tie
        assert repo.search("staging database", record=True)
    sync(a)
    sync(b)  # B's name is made here; B has A's summary now
    name = (b / "_system" / "usage" / "machine").resolve()
    opened: list[str] | None = None

    def hook(event: str, args: tuple) -> None:
        if opened is not None and event == "open" and isinstance(args[0], (str, Path)):
            opened.append(str(Path(args[0]).resolve()))

    sys.addaudithook(hook)  # (it cannot be removed: it records only while ``opened`` is a list)
    with open_root(b) as repo:
        assert repo.strength(x.id).recalls == 1  # A's recall, through A's summary
        opened = []
        try:
            for _ in range(20):
                assert len(repo.search("staging database", record=False)) == 2
        finally:
            reads, opened = opened.count(str(name)), None
    assert reads == 0


def test_one_note_moved_to_two_layers_ends_in_one_file_archive_first(machines, monkeypatch):
    a, b = machines
    with open_root(a) as repo:
        x = repo.add("the office wifi is guest-5", kind="fact", value=0.9, now=T0)
    sync(a)
    sync(b)
    with open_root(b) as repo:
        repo.archive(x.id, reason="moved offices")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-03-05T10:00:00+00:00")
    sync(b)
    with open_root(a) as repo:
        repo.metabolize(dry_run=False, now=T0 + dt.timedelta(days=3))  # promoted, and moved later
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-03-05T11:00:00+00:00")
    with open_root(a) as repo:
        r = repo.sync()
        assert len(r.moves) == 1 and "kept archive/" in r.moves[0]
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    sync(b)
    for root in (a, b):
        [path] = where(root, x.id)
        assert path.startswith("archive/")
        assert parse(notes(root)[path], path).status == "archived"
        with open_root(root) as repo:
            assert repo.check() == [] and repo.get(x.id).layer == "archive"


def test_the_same_body_lines_edited_on_two_machines_stay_a_conflict_for_a_person(machines):
    a, b = machines
    with open_root(a) as repo:
        x = repo.add("the printer is on floor 2", kind="fact", tags=["office"], now=T0)
        keep = repo.add("the kitchen closes at 6", kind="fact", now=T0)
    sync(a)
    sync(b)
    with open_root(a) as repo:
        repo.update(x.id, text="the printer is on floor 3", tags=["office", "printing"])
    with open_root(b) as repo:
        repo.update(x.id, text="the printer is on floor 4", tags=["office", "hardware"])
    untouched = notes(a)[keep.path]
    sync(a)
    assert cli_main(["--root", str(b), "sync"]) == 3, "synced, with a note left to a person"
    text = (b / x.path).read_text()
    assert text.count("<<<<<<<") == 1 and "floor 3" in text and "floor 4" in text
    assert "- printing" in text and "- hardware" in text, "the frontmatter was merged by rule"
    assert notes(b)[keep.path] == untouched
    with open_root(b) as repo:
        assert [p.path for p in repo.check()] == [x.path]
        assert repo.search("printer") == []
    assert cli_main(["--root", str(a), "sync"]) == 3, "the note pulled awaits a person here too"
    assert notes(a) == notes(b)


def test_a_supersede_cycle_made_on_two_machines_is_broken_by_rule(machines):
    a, b = machines
    with open_root(a) as repo:
        x = repo.add("lunch is at noon", kind="fact", now=T0)
        y = repo.add("lunch is at one", kind="fact", now=T0 + dt.timedelta(hours=1))
    sync(a)
    sync(b)
    with open_root(a) as repo:
        repo.supersede(x.id, y.id)
    with open_root(b) as repo:
        repo.supersede(y.id, x.id)
    sync(a)
    with open_root(b) as repo:
        r = repo.sync()
        assert any(y.id in line and "cycle" in line for line in r.repairs)
        assert repo.get(y.id).status == "active", "the newest of the cycle stays"
        assert repo.get(x.id).status == "superseded"
        assert repo.check() == []
    sync(a)
    assert notes(a) == notes(b)


def test_a_note_moved_and_rewritten_here_and_edited_there_is_one_file_where_it_was_moved(machines):
    a, b = machines
    with open_root(a) as repo:
        x = repo.add("the door code is 1234", kind="fact", tags=["office"], now=T0)
    sync(a)
    sync(b)
    with open_root(a) as repo:  # so much rewritten that git cannot pair the move
        repo.update(x.id, text="the front door now opens with the badge; the old keypad was removed "
                               "last week and the code no longer works anywhere in the building")
        repo.move(x.id, "sediment")
    with open_root(b) as repo:
        repo.update(x.id, tags=["office", "security"])
    sync(a)
    sync(b)
    sync(a)
    for root in (a, b):
        [path] = where(root, x.id)
        assert path.startswith("sediment/")
        e = parse(notes(root)[path], path)
        assert "badge" in e.body and "security" in e.tags
    assert notes(a) == notes(b)


def test_a_plain_clone_and_a_plain_pull_are_finished_by_sync(tmp_path, monkeypatch):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    a, _ = network(tmp_path, 2)
    plain = tmp_path / "plain"
    git(tmp_path, "clone", "-q", str(tmp_path / "remote.git"), str(plain))
    assert git(plain, "config", "--get", "merge.sediment.driver", check=False).returncode == 1
    with open_root(a) as repo:
        x = repo.add("the wiki moved to docs.example", kind="fact", now=T0)
    sync(a)
    git(plain, "pull", "-q", "--no-rebase")
    with open_root(a) as repo:
        repo.update(x.id, tags=["wiki"], value=0.8)
    sync(a)
    with open_root(plain) as repo:
        repo.update(x.id, tags=["docs"], value=0.3)
    git(plain, "commit", "-qam", "by hand")
    pulled = git(plain, "pull", "-q", "--no-rebase", check=False)  # no driver here: git's text merge
    assert pulled.returncode != 0 and "<<<<<<<" in (plain / x.path).read_text()
    with open_root(plain) as repo:
        assert [p.path for p in repo.check()] == [x.path]
        r = repo.sync()
        assert x.path in r.resolved and r.conflicts == []
        assert "merge.sediment.driver" in r.installed
        e = repo.get(x.id)
        assert set(e.tags) == {"wiki", "docs"} and repo.check() == []


def test_a_root_inside_a_larger_repository_commits_only_its_own_files(tmp_path, monkeypatch):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    proj = tmp_path / "project"
    proj.mkdir()
    git(proj, "init", "-q")
    (proj / "src.py").write_text("print(1)\n")
    git(proj, "add", "src.py")
    git(proj, "commit", "-qm", "project")
    git(proj, "remote", "add", "origin", str(remote))
    git(proj, "push", "-q", "-u", "origin", "main")
    with open_root(proj / "memory") as repo:
        repo.add("the build runs on every push", kind="fact")
        (proj / "src.py").write_text("print(2)\n")  # the person's work in progress
        r = repo.sync()
    assert r.pushed and r.committed > 0
    assert git(proj, "status", "--porcelain").stdout == " M src.py\n"
    shown = git(proj, "show", "--name-only", "--format=", "HEAD").stdout.split()
    assert shown and all(p.startswith("memory/") for p in shown)
    assert "sediment" not in (proj / ".git" / "config").read_text(), "never in a larger repository's config"
    info = proj / ".git" / "info" / "attributes"
    assert not (proj / "memory" / ".gitattributes").exists(), "no file of sediment's in the person's project"
    assert not info.exists() or "sediment" not in info.read_text(), "nor in its git folder"


def test_an_exact_duplicate_a_plain_git_pull_brought_is_retired_by_the_next_sync(machines):
    a, b = machines
    with open_root(a) as repo:
        first = repo.add("the fire drill is on tuesday", kind="fact", now=T0)
    sync(a)
    with open_root(b) as repo:  # b has not pulled: the same fact written again there
        second = repo.add("the fire drill is on tuesday", kind="fact", now=T0 + dt.timedelta(hours=1))
    git(b, "add", "-A")
    git(b, "commit", "-qm", "by hand")
    git(b, "pull", "-q", "--no-rebase", "--no-edit")  # a clean merge: two memories, one text
    with open_root(b) as repo:
        r = repo.sync()
        assert any(second.id in line and "duplicate" in line for line in r.repairs)
        assert repo.get(second.id).status == "superseded" and repo.get(first.id).status == "active"


def test_an_open_repository_sees_what_the_pull_moved_and_changed(machines):
    a, b = machines
    with open_root(a) as repo:
        x = repo.add("the coffee machine is descaled on mondays", kind="fact", value=0.9, now=T0)
        y = repo.add("the plants are watered on fridays", kind="fact", now=T0)
    sync(a)
    with open_root(b) as other:
        other.sync()
        assert other.get(x.id).layer == "shallow"
        with open_root(a) as repo:
            repo.metabolize(dry_run=False, now=T0 + dt.timedelta(days=3))
            repo.update(y.id, text="the plants are watered on thursdays")
            repo.sync()
        other.sync()
        [hit] = other.search("coffee descaled")
        assert hit.entry.id == x.id and hit.entry.layer == "sediment" and hit.entry.path == other.get(x.id).path
        assert (other.root / hit.entry.path).exists()
        [hit] = other.search("thursdays")
        assert hit.entry.id == y.id and hit.entry.text.strip() == "the plants are watered on thursdays"


def test_a_pulled_rename_renames_the_note_in_the_names_an_open_repository_holds(machines):
    """A move the pull brought that renamed a note's file (same text, same
    room) is followed in place (``View.relocate``): the names the view
    holds for [[links]] and ``by_name`` follow it, built before or after."""
    a, b = machines
    with open_root(a) as repo:
        x = repo.add("the coffee machine is descaled on mondays", kind="fact", now=T0)
    sync(a)
    with open_root(b) as other:
        other.sync()
        old = other.get(x.id)
        assert other.view.by_name[old.name] == (x.id,) and other.view.link(old.name).id == x.id  # (both built)
        new = old.path.replace(old.name, "descaling")
        git(a, "mv", old.path, new)  # a person renames the file by hand on the other machine
        with open_root(a) as repo:
            repo.sync()
        other.sync()
        assert other.get(x.id).path == new
        assert other.view.by_name.get(old.name) is None and other.view.by_name["descaling"] == (x.id,)
        assert other.view.link("descaling").id == x.id and other.view.link(old.name) is None
    with open_root(b) as again:  # (and a view that builds them now agrees)
        assert again.view.by_name["descaling"] == (x.id,) and again.view.link("descaling").id == x.id


def test_clone_of_an_empty_remote_starts_the_memory_and_the_first_sync_pushes_it(tmp_path, monkeypatch, capsys):
    apply_env(git_env(tmp_path), monkeypatch.setenv)
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    root = tmp_path / "mem"
    assert cli_main(["--root", str(root), "clone", str(remote)]) == 0
    assert (root / "_system" / "policy.yaml").exists() and (root / "shallow").is_dir()
    with open_root(root) as repo:
        repo.add("the first memory", kind="fact")
        assert repo.search("first memory")  # a recall: usage, machine-local until a sync
    for local in ("working/now.json", "patrol/report.md", "cache/x.bin", "reports/r.md"):
        (root / "_system" / local).parent.mkdir(parents=True, exist_ok=True)
        (root / "_system" / local).write_text("machine-local\n")
    (root / ".gitignore").write_text("# a person's own\n")  # sync puts the machine-local lines back
    capsys.readouterr()
    assert cli_main(["--root", str(root), "sync"]) == 0
    out = capsys.readouterr().out
    assert "pushed" in out and "committed" in out
    files = git(remote, "ls-tree", "-r", "--name-only", "main").stdout.split()
    assert ".gitattributes" not in files and "_system/policy.yaml" in files  # the driver is this clone's (.git/info)
    assert [f for f in files if f.startswith("_system/")] == [
        "_system/policy.yaml", *[f for f in files if f.startswith("_system/shared/usage/")]]
    assert len([f for f in files if f.startswith("_system/shared/usage/")]) == 1
    kept = (root / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert kept[0] == "# a person's own" and set(LOCAL) <= set(kept)


def test_two_moves_outside_the_archive_keep_the_later_one(machines, monkeypatch):
    a, b = machines
    with open_root(a) as repo:
        x = repo.add("standup is at ten", kind="fact", now=T0)
    sync(a)
    sync(b)
    with open_root(a) as repo:
        repo.move(x.id, "bedrock")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-03-05T10:00:00+00:00")
    sync(a)
    with open_root(b) as repo:
        repo.move(x.id, "sediment", room="team")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-03-05T11:00:00+00:00")
    sync(b)
    monkeypatch.delenv("GIT_COMMITTER_DATE")
    sync(a)
    for root in (a, b):
        assert [p.rsplit("/", 1)[0] for p in where(root, x.id)] == ["sediment/team"]


def test_an_erase_pulled_by_sync_leaves_this_machines_body_store(machines):
    """An erase made on another machine scrubs this machine's body store too,
    in the sync that pulls it (a long-lived process, a server, may not close
    for days), not only the note."""
    a, b = machines
    secret = "the root password is hunter2-zebra"
    with open_root(a) as repo:
        e = repo.add(secret)
        repo.sync()
    sync(b)
    with open_root(b) as repo:  # the body store holds the secret now
        assert repo.get(e.id).text == secret
    store = b / "_system" / "cache" / "bodies.bin"
    assert secret.encode() in store.read_bytes()
    with open_root(a) as repo:
        repo.purge(e.id, confirm=True, erase=True)
        repo.sync()
    with open_root(b) as repo:
        repo.sync()
        assert "Erased" in repo.get(e.id).text
        assert secret.encode() not in store.read_bytes()
