"""Memories out and in (issue 30, item 3): ``export`` and ``import_``, and
``sediment export`` / ``sediment import`` run as real processes.

A round trip into an empty root gives the same files byte for byte, the
same usage (so the same metabolism) and the same search results; an import
is a dry run until applied, skips what is there by id, refuses hostile or
malformed records by line and writes nothing outside the root; a mem0 export
and a folder of markdown notes come in adopted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sediment import InvalidInput, NotFound, Repository, StorageError

REPO_DIR = Path(__file__).resolve().parent.parent
QUERIES = ["ArgoCD", "deploy", "发版", "PKCE mobile", "office floor", "secret", "person note"]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO_DIR)}


def sediment(*args: object, **kw: object) -> subprocess.CompletedProcess[str]:
    """``python -m sediment ARGS`` in a process of its own (the code under test)."""
    return subprocess.run([sys.executable, "-m", "sediment", *map(str, args)], capture_output=True, text=True,
                          env=env(), timeout=300, **kw)  # type: ignore[call-overload]


def notes(root: Path) -> dict[str, bytes]:
    """Every file of a root but sediment's own ``_system/``, by path."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and not rel.startswith("_system/"):
            out[rel] = p.read_bytes()
    return out


def rich_root(root: Path) -> Repository:
    """A root with what an export must carry: rooms and layers, a person's
    edit kept byte for byte (CRLF, BOM, a comment), archived, superseded,
    purged and erased notes, a person's note outside the layer folders, a
    line separator inside a body, and usage (recalls on two days, a
    confirmation, a refutation)."""
    repo = Repository(root)
    a = repo.add("Deploys go through ArgoCD.\nRollbacks too.", kind="fact", tags=["deploy"],
                 now="2026-10-01T09:00:00+00:00")
    b = repo.add("移动端登录用 PKCE，不再下发 client secret", title="PKCE mobile", kind="rule", room="auth",
                 layer="sediment", now="2026-10-02T09:00:00+00:00")
    c = repo.add("周五前发版\u2028下一行", kind="rule", tags=["发布"], now="2026-10-03T09:00:00+00:00")
    d = repo.add("The office is on floor 3.", kind="fact", now="2026-10-04T09:00:00+00:00")
    e = repo.add("The office is on floor 5.", kind="fact", now="2026-10-05T09:00:00+00:00")
    f = repo.add("api key sk-123 is the secret", kind="fact")
    g = repo.add("wrong fact about deploys", kind="fact")
    h = repo.add("an old inbox fragment about deploy windows")
    repo.supersede(d.id, e.id, "moved offices")
    repo.purge(f.id, confirm=True, erase=True, reason="a secret")
    repo.purge(g.id, confirm=True)
    repo.archive(h.id, reason="stale")
    path = root / a.path  # a person's edit: CRLF line ends, a BOM, a comment in the frontmatter
    text = path.read_text(encoding="utf-8").replace("---\n", "---\n# checked by hand\n", 1)
    path.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode("utf-8"))
    (root / "Projects").mkdir()
    (root / "Projects" / "alpha.md").write_text("---\ntitle: Alpha\ndate: 2024-01-02\n---\nA person note on "
                                                "ArgoCD deploys.\n", encoding="utf-8")
    repo.refresh()
    repo.usage.record([a.id, c.id], "recall", now=1790000000.0)
    repo.usage.record([a.id], "recall", now=1790100000.0)
    repo.touch(b.id, "confirm", now="2026-10-10T09:00:00+00:00")
    repo.touch(c.id, "refute", now="2026-10-11T09:00:00+00:00")
    return repo


def same_behaviour(a: Repository, b: Repository) -> None:
    assert notes(b.root) == notes(a.root)
    assert {k: v.to_json() for k, v in b.usage.totals().items()} == \
        {k: v.to_json() for k, v in a.usage.totals().items()}
    for q in QUERIES:
        for archive in (False, True):
            got = [h.entry.id for h in b.search(q, record=False, include_archive=archive, include_superseded=True)]
            want = [h.entry.id for h in a.search(q, record=False, include_archive=archive, include_superseded=True)]
            assert got == want, q
    assert any(a.search(q, record=False) for q in QUERIES)  # (the comparison compared something)
    plans = [r.metabolize(now="2027-06-01T00:00:00+00:00").to_dict()["moves"] for r in (a, b)]
    assert plans[0] == plans[1] and plans[0]


# --------------------------------------------------------------------------- the round trip

def test_a_round_trip_through_the_cli_gives_the_same_files_usage_search_and_plan(tmp_path):
    a = rich_root(tmp_path / "a")
    out = sediment("--root", a.root, "export")  # JSON Lines on stdout
    assert out.returncode == 0, out.stderr
    export = tmp_path / "a.jsonl"
    export.write_text(out.stdout, encoding="utf-8")
    lines = [json.loads(x) for x in out.stdout.split("\n") if x]
    assert lines[0]["type"] == "header" and lines[0]["schema"] == 1 and lines[0]["memories"] == len(lines) - 1
    by_status = {r["status"] for r in lines[1:]}
    assert {"active", "superseded", "purged", "archived"} <= by_status
    assert any(r["person"] and r["path"] == "Projects/alpha.md" for r in lines[1:])
    assert sediment("--root", tmp_path / "b", "init").returncode == 0
    before = notes(tmp_path / "b")

    dry = sediment("--root", tmp_path / "b", "import", export)
    assert dry.returncode == 0, dry.stderr
    assert notes(tmp_path / "b") == before  # a dry run writes nothing
    assert f"would add {len(lines) - 1}," in dry.stdout and "--apply" in dry.stdout

    done = sediment("--root", tmp_path / "b", "--json", "import", export, "--apply")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert (report["added"], report["skipped"], report["refused"]) == (len(lines) - 1, 0, 0)
    with Repository(tmp_path / "b") as b:
        same_behaviour(a, b)
        assert b.check() == [] or all(p.severity != "error" for p in b.check())

    again = sediment("--root", tmp_path / "b", "--json", "import", export, "--apply")  # run twice: skips by id
    report = json.loads(again.stdout)
    assert (report["added"], report["skipped"]) == (0, len(lines) - 1)
    with Repository(tmp_path / "b") as b:
        same_behaviour(a, b)  # usage not counted twice


def test_an_export_as_a_folder_holds_the_files_and_imports_back(tmp_path):
    a = rich_root(tmp_path / "a")
    out = a.export(dir=tmp_path / "out")
    assert out["memories"] == len(a.view.entries) and out["missing"] == []
    folder = notes(tmp_path / "out")
    assert {k: v for k, v in folder.items() if k != "sediment-export.jsonl"} == \
        {k: v for k, v in notes(a.root).items() if k != ".gitignore"}
    with pytest.raises(InvalidInput):
        a.export(dir=tmp_path / "out")  # never into a folder that holds files
    with pytest.raises(InvalidInput):
        a.export(dir=a.root / "exported")  # nor inside the root: every id twice
    with pytest.raises(InvalidInput):
        a.export(a.root / "all.jsonl")
    with Repository(tmp_path / "b") as b:
        assert b.import_(tmp_path / "out", dry_run=False)["format"] == "sediment"
        same_behaviour(a, b)
        b.usage.compact()  # the usage brought in is folded into the summary like any other
    with Repository(tmp_path / "b") as b:
        same_behaviour(a, b)


def test_progress_is_told_as_for_the_other_long_jobs(tmp_path):
    a = rich_root(tmp_path / "a")
    seen: list[tuple[str, int, int]] = []
    with Repository(tmp_path / "a", progress=lambda *x: seen.append(x)) as again:
        again.export(tmp_path / "a.jsonl")
    with Repository(tmp_path / "b", progress=lambda *x: seen.append(x)) as b:
        b.import_(tmp_path / "a.jsonl", dry_run=False)
    n = len(a.view.entries)
    assert ("export", n, n) in seen and ("import", n, n) in seen


# --------------------------------------------------------------------------- refusals

def test_hostile_and_malformed_records_are_refused_by_line_and_nothing_leaves_the_root(tmp_path):
    src = Repository(tmp_path / "src")
    e = src.add("a good note", kind="fact")
    src.export(tmp_path / "good.jsonl")
    good = json.loads((tmp_path / "good.jsonl").read_text(encoding="utf-8").splitlines()[1])
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "root").mkdir()
    with Repository(tmp_path / "root") as repo:
        os.symlink(outside, repo.root / "shallow" / "out")

        def moved(path: str, **more: object) -> str:
            other = dict(good, path=path, **more)
            other["id"] = other.get("id", good["id"])
            return json.dumps(other, ensure_ascii=False)

        lines = [
            json.dumps({"schema": 1, "type": "header"}),
            moved("../escape.md", id="01ESCAPE0000000000000000A"),
            moved("/tmp/absolute.md"),
            moved("_system/policy.md"),
            moved("shallow/.hidden/x.md"),
            moved("shallow\\..\\..\\x.md"),
            moved("shallow/out/x.md"),  # a folder that is a link out of the root
            moved("MAP.md"),
            moved("shallow/notes.txt"),
            "{not json",
            "[1, 2]",
            json.dumps({"type": "memory", "id": "x", "path": "shallow/x.md"}),  # no schema
            json.dumps(dict(good, schema=99)),
            json.dumps(dict(good, id=None)),
            json.dumps(dict(good, id="01OTHERID0000000000000000A")),  # its text says another id
            json.dumps(dict(good, text=good["text"] + "tampered\n")),  # not the file its version names
            json.dumps(dict(good, usage={"recalls": "many"})),
            json.dumps(good),  # the one good record, after all that
        ]
        (tmp_path / "hostile.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        for dry in (True, False):
            r = repo.import_(tmp_path / "hostile.jsonl", dry_run=dry)
            refused = {it["where"]: it["why"] for it in r["items"] if it["action"] == "refuse"}
            assert sorted(refused) == sorted(f"line {n}" for n in range(2, 18)), refused
            assert (r["added"], r["refused"]) == (1, 16)
            assert "absolute" in refused["line 3"] and "_system/" in refused["line 4"]
            assert "outside the root" in refused["line 7"] or "resolves outside" in refused["line 7"]
            assert "schema 99" in refused["line 13"]
        assert list(outside.iterdir()) == [] and not (tmp_path / "escape.md").exists()
        assert not (repo.root / "_system" / "policy.md").exists() and not (repo.root / "MAP.md").exists()
        assert repo.get(e.id).body == "a good note\n"
    cli = sediment("--root", tmp_path / "root", "import", tmp_path / "hostile.jsonl")
    assert cli.returncode == 1  # a script sees that something was left out
    assert "refuse line 2: path '../escape.md'" in cli.stdout and "Traceback" not in cli.stderr


def test_a_file_in_the_way_is_never_overwritten(tmp_path):
    src = Repository(tmp_path / "src")
    e = src.add("the exported note", kind="fact", title="note")
    src.export(tmp_path / "x.jsonl")
    with Repository(tmp_path / "dst") as dst:
        mine = dst.root / e.path
        mine.write_text("a person's file that happens to be there\n", encoding="utf-8")
        r = dst.import_(tmp_path / "x.jsonl", dry_run=False)
        assert r["refused"] == 1 and "not overwritten" in r["items"][0]["why"]
        assert mine.read_text(encoding="utf-8") == "a person's file that happens to be there\n"


def test_a_source_that_is_not_there_or_a_kind_unknown_is_an_error(tmp_path):
    with Repository(tmp_path / "r") as repo:
        with pytest.raises(NotFound):
            repo.import_(tmp_path / "nothing.jsonl")
        for inside in (repo.root, repo.root / "shallow", tmp_path):  # a folder: from elsewhere only
            with pytest.raises(InvalidInput):
                repo.import_(inside)
        (tmp_path / "x.json").write_text("[]", encoding="utf-8")
        with pytest.raises(InvalidInput):
            repo.import_(tmp_path / "x.json", kind="nonsense")


# --------------------------------------------------------------------------- a crash

def test_an_import_killed_midway_leaves_whole_notes_and_a_second_run_finishes_it(tmp_path):
    src = Repository(tmp_path / "src")
    ids = [src.add(f"note number {i} about deploy window {i}", kind="fact").id for i in range(400)]
    src.usage.record(ids[::7], "recall", now=1790000000.0)
    src.export(tmp_path / "all.jsonl")
    assert sediment("--root", tmp_path / "dst", "init").returncode == 0
    p = subprocess.Popen([sys.executable, "-m", "sediment", "--root", str(tmp_path / "dst"), "import",
                          str(tmp_path / "all.jsonl"), "--apply"], env=env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    shallow = tmp_path / "dst" / "shallow"
    while p.poll() is None and len(list(shallow.glob("*.md"))) < 20:
        time.sleep(0.01)
    p.send_signal(signal.SIGKILL)
    p.wait()
    with Repository(tmp_path / "dst") as dst:
        assert [x for x in dst.check() if x.code in ("parse", "duplicate_id")] == []  # no half note
        r = dst.import_(tmp_path / "all.jsonl", dry_run=False)
        assert r["refused"] == 0 and r["added"] + r["skipped"] == 400
        same = {k: v.to_json() for k, v in dst.usage.totals().items()}
        assert same == {k: v.to_json() for k, v in src.usage.totals().items()}
        assert notes(dst.root) == notes(src.root)


# --------------------------------------------------------------------------- mem0

MEM0 = {"results": [
    {"id": "f38b689d-6b24-45b7-bced-17fbb4d8bac7", "memory": "Is travelling to Paris in May",
     "hash": "62bc074f56d1f909f1b4c2b639f56f6a", "metadata": {"category": "travel", "note": None},
     "created_at": "2025-02-25T23:57:00.108347-07:00", "updated_at": "2025-07-25T23:57:00.108367-07:00",
     "user_id": "alex"},
    {"id": "0b7f7a1e-0000-4000-8000-000000000002", "memory": "Prefers tea to coffee\nin the morning",
     "hash": "aa", "metadata": None, "created_at": "2025-03-01T08:00:00+00:00", "updated_at": None,
     "user_id": "alex", "agent_id": "travel-agent", "run_id": "s1"},
    {"id": "bad-1", "memory": ""},
    {"id": "bad-2", "memory": "a time that is none", "created_at": "yesterday-ish"},
]}


def test_a_mem0_export_comes_in_with_its_times_and_ids_and_once(tmp_path):
    (tmp_path / "mem0.json").write_text(json.dumps(MEM0), encoding="utf-8")
    (tmp_path / "old.json").write_text(json.dumps(MEM0["results"][:2]), encoding="utf-8")  # older: a bare list
    with Repository(tmp_path / "r") as repo:
        r = repo.import_(tmp_path / "mem0.json", dry_run=False)
        assert (r["format"], r["added"], r["refused"]) == ("mem0", 2, 2)
        assert sorted(it["where"] for it in r["items"] if it["action"] == "refuse") == ["item 3", "item 4"]
        paris = next(e for e in repo.list() if "Paris" in e.body)
        assert paris.body == "Is travelling to Paris in May\n" and paris.kind == "fact"
        assert paris.created.isoformat() == "2025-02-25T23:57:00-07:00"
        assert paris.meta["updated"] == "2025-07-25T23:57:00-07:00"
        assert paris.meta["source"] == "mem0"
        assert dict(paris.meta["mem0"]) == {"id": "f38b689d-6b24-45b7-bced-17fbb4d8bac7", "user_id": "alex",
                                            "hash": "62bc074f56d1f909f1b4c2b639f56f6a",
                                            "metadata": {"category": "travel"}}
        tea = next(e for e in repo.list() if "tea" in e.body)
        assert tea.title == "Prefers tea to coffee" and tea.meta["mem0"]["agent_id"] == "travel-agent"
        assert [h.entry.id for h in repo.search("Paris", record=False)] == [paris.id]
        again = repo.import_(tmp_path / "old.json", dry_run=False)  # the same memories, mem0's older shape
        assert (again["format"], again["added"], again["skipped"]) == ("mem0", 0, 2)
        assert len(repo) == 2


# --------------------------------------------------------------------------- a folder of notes

def test_a_folder_of_markdown_notes_is_adopted_each_keeping_its_bytes(tmp_path):
    src = tmp_path / "notes"
    (src / "projects").mkdir(parents=True)
    (src / ".obsidian").mkdir()
    (src / "idea.md").write_text("周五前发版\n", encoding="utf-8")
    (src / "projects" / "alpha.md").write_text("---\ntitle: Alpha plan\ntags: [plan]\n---\nShip alpha.\n",
                                               encoding="utf-8")
    (src / "sediment").mkdir()
    (src / "sediment" / "kept.md").write_text("Kept in its layer.\n", encoding="utf-8")
    (src / "empty.md").write_text("", encoding="utf-8")
    (src / ".obsidian" / "hidden.md").write_text("not a note\n", encoding="utf-8")
    (src / "broken.md").write_text("---\ntitle: [unclosed\n---\ntext\n", encoding="utf-8")
    other = Repository(tmp_path / "other")
    memory = other.add("Already a memory.", kind="rule")
    (src / "bedrock").mkdir()
    (src / "bedrock" / "m.md").write_bytes((other.root / memory.path).read_bytes())
    with Repository(tmp_path / "r") as repo:
        r = repo.import_(src, dry_run=False, kind="rule")
        assert r["format"] == "markdown"
        assert {it["where"]: it["action"] for it in r["items"]} == {
            "idea.md": "add", "projects/alpha.md": "add", "sediment/kept.md": "add", "bedrock/m.md": "add",
            "empty.md": "refuse", "broken.md": "refuse"}
        idea = repo.locate("shallow/idea.md")
        assert (idea.title, idea.kind, idea.body) == ("idea", "rule", "周五前发版\n")
        alpha = repo.locate("shallow/projects/alpha.md")
        assert (alpha.title, alpha.tags, alpha.room) == ("Alpha plan", ("plan",), "projects")
        assert (repo.root / alpha.path).read_text(encoding="utf-8").endswith("title: Alpha plan\ntags: [plan]\n"
                                                                              "---\nShip alpha.\n")
        assert repo.locate("sediment/kept.md").layer == "sediment"
        assert repo.get(memory.id).path == "bedrock/m.md"  # a memory already: its id and bytes kept
        assert (repo.root / "bedrock/m.md").read_bytes() == (other.root / memory.path).read_bytes()
        again = repo.import_(src, dry_run=False)
        assert (again["added"], again["skipped"]) == (0, 4)


def test_an_export_saved_by_a_windows_editor_still_reads_and_a_bad_target_is_a_storage_error(tmp_path):
    src = Repository(tmp_path / "src")
    e = src.add("saved again on Windows", kind="fact")
    src.export(tmp_path / "x.jsonl")
    data = (tmp_path / "x.jsonl").read_bytes()
    (tmp_path / "win.jsonl").write_bytes(b"\xef\xbb\xbf" + data.replace(b"\n", b"\r\n"))
    with Repository(tmp_path / "dst") as dst:
        r = dst.import_(tmp_path / "win.jsonl", dry_run=False)
        assert (r["added"], r["refused"]) == (1, 0)
        assert (dst.root / e.path).read_bytes() == (src.root / e.path).read_bytes()
    (tmp_path / "a-file").write_text("", encoding="utf-8")
    with pytest.raises(StorageError):
        src.export(tmp_path / "a-file" / "x.jsonl")  # (its folder is a file)
