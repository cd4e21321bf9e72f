"""git and Obsidian: the memory folder as a versioned vault.

git: ``sediment init --git`` makes a repository with the right ``.gitignore``
and a first commit; reading, searching and recording usage leave ``git status``
clean; a metabolize shows as renames; two clones that each add memories and
then pull/push merge without conflicts and both see everything.

Obsidian: every memory file's frontmatter is plain YAML that Obsidian reads as
properties (tags a list, dates quoted ISO strings, numbers numbers, links
``[[name]]``), every ``[[name]]`` resolves to exactly one note in the vault,
also after moves between layers, and ``_system/`` holds no broken note.

git runs with a throw-away configuration (``GIT_CONFIG_GLOBAL`` points into
``tmp_path``; identity from environment variables), never the user's own.
"""

from __future__ import annotations

import datetime as _dt
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from sediment import Repository, SedimentError
from sediment.cli.main import main as cli_main
from sediment.model.fields import WIKILINK
from sediment.model.names import LAYERS

GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")

MACHINE_LOCAL = ["_system/lock", "_system/journal.log", "_system/cache/", "_system/usage/"]


# ---------------------------------------------------------------------------
# helpers


@pytest.fixture
def git_env(tmp_path, monkeypatch):
    """A private git configuration for this test only."""
    cfg = tmp_path / "gitconfig"
    cfg.write_text("[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
                   "[core]\n\tautocrlf = false\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for who in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{who}_NAME", "Sediment Test")
        monkeypatch.setenv(f"GIT_{who}_EMAIL", "test@sediment.invalid")
    monkeypatch.delenv("GIT_DIR", raising=False)
    monkeypatch.delenv("GIT_WORK_TREE", raising=False)
    return cfg


def git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([GIT, *args], cwd=cwd, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc


def porcelain(root: Path) -> str:
    return git(root, "status", "--porcelain", "--untracked-files=all").stdout


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def init_git(root: Path) -> None:
    assert cli_main(["--root", str(root), "init", "--git"]) == 0


def md_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.md") if ".git" not in p.relative_to(root).parts)


def note_files(root: Path) -> list[Path]:
    return [p for p in md_files(root) if p.relative_to(root).parts[0] in LAYERS]


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in note_files(root)}


def frontmatter(path: Path) -> tuple[str, str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith("---\n"), f"{path.name}: frontmatter must open the file"
    end = text.index("\n---\n", 3)
    return text[4:end + 1], text[end + 5:]


def fill(repo: Repository, who: str, *, cjk: bool = True) -> list:
    """A few memories of every shape, as one machine's agent writes them.
    (``cjk=False`` spares a test jieba's start-up, which costs each repository
    instance about a second.)"""
    base = repo.add(f"{who}: mobile apps cannot keep a secret", title=f"{who} secrets on mobile",
                    kind="fact", tags=["auth", "移动端" if cjk else "mobile"], value=0.7, room="auth")
    third = (repo.add(f"{who} 用户喜欢简短的回答", title=f"{who} 回答要简短", kind="fact", tags=["偏好"],
                      weights={"importance": 4, "emotional": 2, "recurrence": 3, "unresolved": 1})
             if cjk else
             repo.add(f"{who}: the user likes short answers", title=f"{who} short answers", kind="fact",
                      tags=["style"], weights={"importance": 4, "emotional": 2, "recurrence": 3,
                                               "unresolved": 1}))
    return [
        base,
        repo.add(f"{who}: use PKCE instead of a client secret, see [[{base.name}]]",
                 title=f"{who} use PKCE", kind="rule", tags=["auth", "oauth2"], room="auth",
                 links=[base.name], evidence=["mobile clients leak secrets"], source=f"session-{who}"),
        third,
        repo.add(f"{who}: a note in the inbox", tags=["inbox"]),
    ]


# ---------------------------------------------------------------------------
# init --git


@needs_git
def test_init_git_makes_a_repository_with_gitignore_and_first_commit(tmp_path, git_env):
    root = tmp_path / "mem"
    pre = Repository(root)  # a root that already holds a memory before git arrives
    e = pre.add("kept from before git", title="before git", room="r")
    pre.search("before")
    pre.close()

    init_git(root)
    assert (root / ".git").is_dir()
    ignore = (root / ".gitignore").read_text(encoding="utf-8").splitlines()
    for pattern in MACHINE_LOCAL:
        assert pattern in ignore, f".gitignore lacks {pattern}"
    log = git(root, "log", "--format=%s").stdout.splitlines()
    assert len(log) == 1, log
    tracked = set(git(root, "ls-files").stdout.splitlines())
    assert {".gitignore", "_system/policy.yaml", e.path} <= tracked
    assert not [t for t in tracked if any(t == p or t.startswith(p) for p in MACHINE_LOCAL)], tracked
    assert porcelain(root) == "", "everything after init is committed or ignored"

    # the machine-local files are ignored wherever they appear
    for rel in ("_system/lock", "_system/journal.log", "_system/cache/index.bin",
                "_system/cache/segments.json", "_system/usage/events.log",
                "_system/usage/summary.json", "shallow/r/.before-git.md.1a2b3c4d.tmp"):
        assert git(root, "check-ignore", "-q", rel, check=False).returncode == 0, f"{rel} not ignored"
    for rel in ("shallow/r/before-git.md", "bedrock/x.md", "_system/policy.yaml", ".gitignore"):
        assert git(root, "check-ignore", "-q", rel, check=False).returncode == 1, f"{rel} ignored"

    # running it again changes nothing
    assert cli_main(["--root", str(root), "init", "--git"]) == 0
    assert len(git(root, "log", "--format=%s").stdout.splitlines()) == 1
    assert porcelain(root) == ""


# ---------------------------------------------------------------------------
# reading keeps git status clean


@needs_git
def test_reads_searches_and_usage_leave_git_status_clean(tmp_path, git_env):
    root = tmp_path / "mem"
    init_git(root)
    repo = Repository(root)
    notes = fill(repo, "alice")
    repo.close()
    commit_all(root, "memories")
    before = snapshot(root)
    assert porcelain(root) == ""

    now = _dt.datetime.now().astimezone()
    repo = Repository(root)
    for q in ("PKCE", "移动端", "回答", "secret mobile", "nothing-matches-this"):
        repo.search(q)  # record=True: usage is written
    for n in notes:
        repo.get(n.id)
        repo.get(n.name)
        repo.strength(n.id)
    repo.list(tag="auth")
    repo.touch(notes[0].id, "confirm")
    repo.touch(notes[2].id, "refute")  # recorded, not applied: the note does not change
    repo.metabolize(dry_run=True, now=now)
    repo.metabolize(dry_run=True, now=now + _dt.timedelta(days=400))
    repo.stats()
    repo.check()
    repo.refresh()
    with repo.watch():
        repo.search("PKCE")
    repo.close()
    repo = Repository(root)  # a warm open (caches) writes nothing versioned either
    assert len(repo) == len(notes)
    repo.search("auth")
    repo.close()

    assert (root / "_system" / "usage").is_dir(), "usage was recorded somewhere"
    assert snapshot(root) == before, "reading changed a memory file"
    assert porcelain(root) == "", "reading left something for git to see"
    ignored = git(root, "status", "--porcelain", "--ignored", "--untracked-files=all").stdout
    assert "_system/usage/" in ignored and "_system/journal.log" in ignored


@needs_git
def test_metabolize_shows_as_renames(tmp_path, git_env):
    root = tmp_path / "mem"
    init_git(root)
    repo = Repository(root)
    notes = fill(repo, "bob", cjk=False)
    repo.close()
    commit_all(root, "memories")

    repo = Repository(root)
    repo.touch(notes[1].id, "refute")  # proved wrong: the next metabolize archives it
    plan = repo.metabolize(dry_run=False, confirm=True)
    assert plan.applied and any(m.id == notes[1].id and m.target == "archive" for m in plan.moves)
    moved = repo.get(notes[1].id)
    assert moved.layer == "archive" and moved.name == notes[1].name
    repo.close()

    git(root, "add", "-A")
    status = git(root, "status", "--porcelain").stdout.splitlines()
    assert f"R  {notes[1].path} -> {moved.path}" in status, status
    assert not [s for s in status if not s.startswith("R ")], f"only renames expected: {status}"


# ---------------------------------------------------------------------------
# two machines, one remote


def _two_clones(tmp_path: Path) -> tuple[Path, Path, Path]:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    a = tmp_path / "machine-a" / "mem"
    init_git(a)
    git(a, "remote", "add", "origin", str(remote))
    git(a, "push", "-q", "-u", "origin", "main")
    b = tmp_path / "machine-b" / "mem"
    b.parent.mkdir()
    git(b.parent, "clone", "-q", str(remote), "mem")
    return remote, a, b


def _sync(root: Path, message: str) -> subprocess.CompletedProcess:
    """What a person or a cron job runs on each machine."""
    git(root, "add", "-A")
    if git(root, "diff", "--cached", "--quiet", check=False).returncode:
        git(root, "commit", "-q", "-m", message)
    pull = git(root, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main", check=False)
    if pull.returncode == 0:
        git(root, "push", "-q", "origin", "HEAD:main")
    return pull


@needs_git
def test_two_clones_add_memories_and_merge_cleanly(tmp_path, git_env):
    _, a, b = _two_clones(tmp_path)
    repo_a, repo_b = Repository(a), Repository(b)
    notes_a, notes_b = fill(repo_a, "alice", cjk=False), fill(repo_b, "bob", cjk=False)
    # both machines also move, update and archive their own memories
    repo_a.move(notes_a[0].id, "sediment")
    repo_b.update(notes_b[1].id, text="bob: PKCE everywhere", tags=["auth", "pkce"])
    repo_b.archive(notes_b[3].id, reason="stale")
    repo_a.search("auth"), repo_b.search("auth")

    for root, msg in ((a, "alice"), (b, "bob"), (a, "alice again")):
        pull = _sync(root, msg)
        assert pull.returncode == 0, f"pull on {root.parent.name} failed:\n{pull.stdout}{pull.stderr}"
    for root in (a, b):
        assert porcelain(root) == "", f"{root.parent.name}: not clean after the merge"
        assert not git(root, "diff", "--name-only", "--diff-filter=U").stdout
        for p in note_files(root):
            assert b"<<<<<<<" not in p.read_bytes(), f"conflict markers in {p.name}"
    assert snapshot(a) == snapshot(b), "both machines hold the same notes"

    every = {e.id for e in notes_a + notes_b}
    # the agent that kept its repository open picks the other machine's notes up with refresh()
    repo_b.refresh()
    assert {e.id for e in repo_b.list()} == every
    repo_a.close(), repo_b.close()
    for root in (a, b):
        repo = Repository(root)  # reopening after the pull
        assert {e.id for e in repo.list()} == every
        assert repo.get(notes_a[0].id).layer == "sediment"
        assert repo.get(notes_b[3].id).layer == "archive"
        assert "PKCE everywhere" in repo.get(notes_b[1].id).body
        assert {h.entry.id for h in repo.search("secret", record=False, limit=20)} >= {
            notes_a[0].id, notes_b[0].id}
        assert not [p for p in repo.check() if p.severity == "error"]
        names = [e.name for e in repo.list()]
        assert len(names) == len(set(names)), "names are unique across the merged root"
        repo.close()
        assert porcelain(root) == ""


@needs_git
def test_same_title_on_two_machines_does_not_collide(tmp_path, git_env):
    """Two agents write a memory with the same title on the same day (a daily
    summary, "user prefers short answers"). Names are unique across the root,
    so after a merge both must exist, without a conflict."""
    _, a, b = _two_clones(tmp_path)
    repo_a, repo_b = Repository(a), Repository(b)
    ea = repo_a.add("alice's summary of the day", title="Daily summary", kind="daily")
    eb = repo_b.add("bob's summary of the day", title="Daily summary", kind="daily")
    repo_a.close(), repo_b.close()
    assert _sync(a, "alice").returncode == 0
    pull = _sync(b, "bob")
    assert pull.returncode == 0, (f"same title on two machines: {ea.path} and {eb.path} collide in "
                                  f"the merge:\n{pull.stdout}{pull.stderr}")
    repo = Repository(b)
    assert {ea.id, eb.id} <= {e.id for e in repo.list()}
    repo.close()


@needs_git
def test_conflicting_edit_of_one_note_is_reported_never_rewritten(tmp_path, git_env):
    """Both machines change the same memory; git stops with a conflict. The
    conflicted file is reported by check(), left out of search, never rewritten
    by the library, and comes back once a person resolves the conflict."""
    _, a, b = _two_clones(tmp_path)
    repo_a = Repository(a)
    shared = repo_a.add("the original decision kumquat1", title="shared decision", tags=["t"])
    other = repo_a.add("an unrelated kumquat1 note", title="unrelated")
    repo_a.close()
    assert _sync(a, "shared").returncode == 0
    assert _sync(b, "get shared").returncode == 0

    repo_a, repo_b = Repository(a), Repository(b)
    repo_a.update(shared.id, text="alice decided kumquat1 differently", value=0.9)
    time.sleep(1.05)  # the 'updated' stamps differ, as they would on two machines
    repo_b.update(shared.id, text="bob decided kumquat1 otherwise", value=0.2)
    repo_a.close()
    assert _sync(a, "alice").returncode == 0
    pull = _sync(b, "bob")
    assert pull.returncode != 0, "the same note changed on both sides: git reports a conflict"
    path = b / shared.path
    conflicted = path.read_bytes()
    assert b"<<<<<<<" in conflicted

    repo_b.refresh()
    errors = [p for p in repo_b.check() if p.path == shared.path and p.severity == "error"]
    assert errors, "a note with conflict markers in its frontmatter is reported"
    hits = [h.entry.id for h in repo_b.search("kumquat1", record=False)]
    assert hits == [other.id]
    with pytest.raises(SedimentError):
        repo_b.update(shared.id, text="agent writes over the conflict")
    assert path.read_bytes() == conflicted, "the library never rewrites a conflicted file"

    # a person resolves it (keeps the other machine's version) and commits
    git(b, "checkout", "--theirs", "--", shared.path)
    git(b, "add", shared.path)
    git(b, "commit", "-q", "--no-edit")
    repo_b.refresh()
    assert "alice decided" in repo_b.get(shared.id).body
    assert shared.id in [h.entry.id for h in repo_b.search("kumquat1", record=False)]
    repo_b.close()
    assert porcelain(b) == ""


# ---------------------------------------------------------------------------
# Obsidian

ISO_WITH_OFFSET = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)$")
LINK_ONLY = re.compile(r"^\[\[([^\[\]|#^]+)\]\]$")
OBSIDIAN_BAD_NAME_CHARS = set("[]#^|\\:*\"<>?/")


def _vault(root: Path) -> Repository:
    repo = Repository(root)
    notes = fill(repo, "vault")
    # same title in other rooms and layers: names must stay unique across the root
    dup1 = repo.add("another PKCE note", title="vault use PKCE", room="elsewhere")
    dup2 = repo.add("yet another", title="vault use PKCE", layer="bedrock")
    odd = repo.add("odd characters in the title", title='C# vs F#: [draft] | notes^2 "quoted"?',
                   links=[notes[1].name, dup1.name])
    ev1 = repo.add("we choose option A", title="choice", event="ev-1", kind="event")
    repo.add(f"on second thought, option B; overturns [[{ev1.name}]]", title="choice revised",
             event="ev-1", kind="event", links=[ev1.name])
    repo.update(notes[2].id, tags=["偏好", "风格/简洁"], links=[odd.name])
    repo.move(notes[0].id, "sediment")
    repo.move(dup2.id, "shallow", room="auth")
    repo.supersede(notes[3].id, dup1.id)
    repo.consolidate([], "inbox fragments combined: a note in the inbox", kind="fact")
    repo.touch(notes[1].id, "refute")
    repo.metabolize(dry_run=False, confirm=True)  # archives the refuted note, writes a report
    return repo


def _check_vault(root: Path) -> None:
    files = md_files(root)
    stems: dict[str, list[str]] = {}
    for p in files:
        stems.setdefault(p.stem, []).append(p.relative_to(root).as_posix())
    notes = note_files(root)
    assert notes
    for p in notes:
        rel = p.relative_to(root).as_posix()
        assert not OBSIDIAN_BAD_NAME_CHARS & set(p.stem), f"{rel}: Obsidian cannot link this name"
        assert len(stems[p.stem]) == 1, f"[[{p.stem}]] is ambiguous: {stems[p.stem]}"
        fm_text, body = frontmatter(p)
        meta = yaml.safe_load(fm_text)
        assert isinstance(meta, dict) and all(isinstance(k, str) for k in meta), rel
        for key, value in meta.items():
            # plain types only: no YAML timestamps, no tagged objects
            assert isinstance(value, (str, int, float, bool, list, dict)), f"{rel}: {key} is {type(value)}"
        for key in ("created", "updated"):
            assert isinstance(meta[key], str) and ISO_WITH_OFFSET.match(meta[key]), f"{rel}: {key}"
            assert re.search(rf"^{key}: '[^']+'$", fm_text, re.M), f"{rel}: {key} is not quoted"
        tags = meta.get("tags")
        if tags is not None:
            assert isinstance(tags, list) and all(isinstance(t, str) and t and not t.startswith("#")
                                                  for t in tags), f"{rel}: tags {tags!r}"
            assert re.search(r"^tags:\n(- .+\n)+", fm_text, re.M), f"{rel}: tags not a YAML list"
        if "value" in meta:
            assert isinstance(meta["value"], (int, float)) and not isinstance(meta["value"], bool), rel
        for w in (meta.get("weights") or {}).values():
            assert isinstance(w, (int, float)) and not isinstance(w, bool), rel
        assert isinstance(meta["id"], str) and isinstance(meta.get("title", ""), str), rel
        links = []
        for key in ("links", "supersedes", "superseded_by"):
            v = meta.get(key)
            if v is None:
                continue
            assert isinstance(v, list), f"{rel}: {key} must be a list"
            for x in v:
                m = LINK_ONLY.match(x) if isinstance(x, str) else None
                assert m, f"{rel}: {key} item {x!r} is not a [[wikilink]]"
                links.append(m.group(1))
        links += WIKILINK.findall(body)
        for target in links:
            name = target.split("|")[0].split("#")[0].strip()
            assert len(stems.get(name, [])) == 1, f"{rel}: [[{name}]] does not resolve to one note"
    for p in files:
        rel = p.relative_to(root).as_posix()
        if rel.split("/")[0] in LAYERS:
            continue
        assert rel.startswith("_system/"), f"a stray .md outside the layers: {rel}"
        text = p.read_bytes().decode("utf-8")  # valid UTF-8
        assert "\x00" not in text
        if text.startswith("---\n"):
            assert isinstance(yaml.safe_load(text[4:text.index("\n---", 3)]), dict), rel
        for name in WIKILINK.findall(text):
            assert len(stems.get(name.split("|")[0], [])) == 1, f"{rel}: [[{name}]] is broken"


@pytest.fixture(scope="module")
def vault(tmp_path_factory) -> Path:
    """A root after every kind of write; built once, only read by the tests."""
    root = tmp_path_factory.mktemp("obsidian") / "vault"
    _vault(root).close()
    return root


def test_obsidian_reads_every_memory_as_properties_and_links_resolve(vault):
    _check_vault(vault)
    # files of each kind of change are there to be checked
    rels = [p.relative_to(vault).as_posix() for p in md_files(vault)]
    assert any(r.startswith("archive/") for r in rels)
    assert any(r.startswith("sediment/") for r in rels)
    text = "\n".join(p.read_text(encoding="utf-8") for p in note_files(vault))
    assert "- 移动端" in text and "- 风格/简洁" in text, "Unicode tags are written as-is"
    assert "supersedes:\n- '[[" in text and "superseded_by:\n- '[[" in text


def test_moving_notes_between_layers_keeps_links_resolvable(tmp_path):
    root = tmp_path / "vault"
    repo = Repository(root)
    target = repo.add("the note everyone links to", title="link target", room="r")
    src = repo.add(f"see [[{target.name}]]", title="linker", links=[target.name])
    for layer in ("sediment", "bedrock", "archive", "shallow"):
        if layer == "shallow":  # out of archive is restore's job (move refuses it)
            moved = repo.restore(target.id, layer=layer)
        else:
            moved = repo.move(target.id, layer, room="r2" if layer == "bedrock" else None)
        assert moved.name == target.name, "a move keeps the file name"
        # the linking note did not need to change, and its links still resolve
        assert (root / src.path).read_bytes() == (root / repo.get(src.id).path).read_bytes()
        _check_vault(root)
        assert repo.get(f"[[{target.name}]]").id == target.id
    # a person moves it by hand too (Obsidian's file explorer)
    cur = repo.get(target.id)
    dst = root / "bedrock" / f"{cur.name}.md"
    os.rename(root / cur.path, dst)
    repo.refresh()
    assert repo.get(target.name).path == f"bedrock/{cur.name}.md"
    _check_vault(root)
    repo.close()


def test_system_folder_holds_no_broken_note(vault):
    reports = list((vault / "_system" / "reports").glob("*.md"))
    assert reports, "metabolize wrote a markdown report"
    for p in (vault / "_system").rglob("*"):
        if p.is_file() and p.suffix.lower() in (".md", ".markdown"):
            text = p.read_bytes().decode("utf-8")
            assert text.startswith("# ") or text.startswith("---\n"), f"{p.name}: not a readable note"
    _check_vault(vault)
