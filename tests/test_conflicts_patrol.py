"""Conflict candidates and the patrol report.

* conflicts are found in Chinese and English, each with its clue, strongest
  first; generic words shared with a negation are not a conflict;
* candidate pairs come from postings of rare terms: the comparisons counted
  grow about linearly with the root, far from its square;
* patrol changes no note (every byte of every file in the layers, and the usage
  log: no recall), writes the same bytes for the same root and ``now`` (also
  from a fresh open), lists each kind of item with a command that runs, and
  its folder is in a new root's ``.gitignore``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import random
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from sediment import Repository
from sediment.agent import conflicts as C
from sediment.cli.main import main

UTC = dt.timezone.utc
T0 = dt.datetime(2026, 1, 1, 9, 0, tzinfo=UTC)


def at(days: float) -> dt.datetime:
    return T0 + dt.timedelta(days=days)


@pytest.fixture
def repo(tmp_path):
    with Repository(tmp_path / "root") as r:
        yield r


def _add(repo, text, day, **kw):
    kw.setdefault("kind", "fact")
    return repo.add(text, now=at(day), **kw)


# --------------------------------------------------------------------------- conflicts

def test_conflicts_in_english_and_chinese_each_with_its_clue(repo):
    a = _add(repo, "The Berlin office is on floor 3.", 1)
    b = _add(repo, "The Berlin office moved: it is on floor 5 now.", 2)
    c = _add(repo, "Deploys go through ArgoCD.", 3)
    d = _add(repo, "Deploys no longer go through ArgoCD.", 4)
    e = _add(repo, "小王喜欢喝乌龙茶", 5)
    f = _add(repo, "小王不喜欢喝乌龙茶", 6)
    g = _add(repo, "数据库端口是 5432", 7)
    h = _add(repo, "数据库端口是 6543", 8)
    found = {(x.a, x.b): x for x in repo.conflicts()}
    assert found[(a.id, b.id)].kind == "numbers" and found[(a.id, b.id)].clue == "floor: 3 vs 5"
    assert found[(c.id, d.id)].kind == "overturn" and "no longer" in found[(c.id, d.id)].clue
    assert found[(e.id, f.id)].kind == "negation" and "'不'" in found[(e.id, f.id)].clue
    assert "乌龙茶" in found[(e.id, f.id)].clue
    assert found[(g.id, h.id)].kind == "numbers" and "5432 vs 6543" in found[(g.id, h.id)].clue
    assert set(found) == {(a.id, b.id), (c.id, d.id), (e.id, f.id), (g.id, h.id)}
    scores = [x.score for x in repo.conflicts()]
    assert scores == sorted(scores, reverse=True)  # strongest clue first
    assert repo.conflicts()[0].kind == "numbers"


def test_conflicts_and_patrol_say_the_words_as_the_notes_write_them(repo):
    # the index holds 'stag', 'databas', 'maxconnection', 'connection': a
    # person reads 'staging', 'Databases', 'max_connections', 'connections'
    a = _add(repo, "The staging Databases allow 100 connections (max_connections).", 1)
    b = _add(repo, "The staging Databases allow 200 connections now (max_connections).", 2)
    (c,) = repo.conflicts()
    assert (c.a, c.b, c.kind) == (a.id, b.id, "numbers")
    assert c.clue == "allow: 100 connections vs 200 connections"
    assert set(c.anchors) == {"allow", "connections", "Databases", "max", "max_connections", "staging"}
    r1 = _add(repo, "Quarkus and Vertx power the Billing service's staging.", 3)
    r2 = _add(repo, "Billing latency: Quarkus with Vertx, tuned pools.", 4)
    (item,) = [it for it in repo.patrol(now=at(30)).sections["unlinked"] if set(it.ids) == {r1.id, r2.id}]
    assert item.what.endswith("share Billing, Quarkus, Vertx")


def test_generic_words_are_no_anchor(repo):
    # they share only generic words ('user', 'like'; '用户', '喜欢') and one
    # negates: nothing concrete is in dispute
    _add(repo, "The user likes tea in the morning.", 1)
    _add(repo, "The user does not like long meetings.", 2)
    _add(repo, "用户喜欢简短的回答", 3)
    _add(repo, "用户不喜欢开会", 4)
    assert repo.conflicts() == []


def test_agreeing_memories_are_no_conflict(repo):
    _add(repo, "The Berlin office is on floor 3.", 1)
    _add(repo, "Visitors to the Berlin office take the lift to floor 3.", 2)
    _add(repo, "小王喜欢喝乌龙茶", 3)
    _add(repo, "小王每天下午喝乌龙茶", 4)
    # dates and list numbers are no quantities: two daily notes differ by date
    _add(repo, "日报 2026-11-27：auth-gateway 发版，回滚演练", 5)
    _add(repo, "日报 2026-11-28：auth-gateway 发版，回滚演练复盘", 6)
    _add(repo, "1. Kubernetes upgrade plan for Hetzner", 7)
    _add(repo, "2. Kubernetes upgrade plan for Hetzner, second draft", 8)
    assert repo.conflicts() == []


def test_conflicts_of_given_ids_and_only_active_memories(repo):
    a = _add(repo, "The Berlin office is on floor 3.", 1)
    b = _add(repo, "The Berlin office is on floor 5.", 2)
    c = _add(repo, "数据库端口是 5432", 3)
    _add(repo, "数据库端口是 6543", 4)
    assert [(x.a, x.b) for x in repo.conflicts([a.id])] == [(a.id, b.id)]
    assert {x.a for x in repo.conflicts()} == {a.id, c.id}
    repo.archive(b.id, reason="moved")
    assert [x.a for x in repo.conflicts()] == [c.id]


def _write_root(root: Path, n: int, seed: int = 7) -> None:
    """n notes written as files: common words, a topic word from a pool that
    grows with the root (Heaps' law), and a few rare names."""
    rng = random.Random(seed)
    common = [f"common{i}" for i in range(60)]
    topics = [f"topic{i}" for i in range(max(10, n // 8))]
    for i in range(n):
        words = rng.sample(common, 6) + rng.sample(topics, 2) + [f"name{rng.randrange(n)}" for _ in range(2)]
        body = " ".join(words) + f" count {rng.randrange(100)}.\n"
        folder = root / "shallow"
        folder.mkdir(parents=True, exist_ok=True)
        eid = f"01J{i:023d}"[:26]
        (folder / f"note-{i}.md").write_text(
            f"---\nid: {eid}\ntitle: note {i}\ncreated: '2026-01-01T00:00:00+00:00'\nkind: fact\n---\n{body}",
            encoding="utf-8")


def _comparisons(tmp_path: Path, n: int) -> tuple[int, int]:
    root = tmp_path / f"r{n}"
    _write_root(root, n)
    with Repository(root) as repo:
        assert len(repo) == n
        report = repo.patrol(now=T0)
        assert report.comparisons > 0
        with repo.view.reading() as view:
            return C.scan(view).comparisons, report.comparisons


@pytest.mark.slow
def test_candidate_generation_is_sub_quadratic(tmp_path):
    small, large = 200, 800
    s_conf, s_patrol = _comparisons(tmp_path, small)
    l_conf, l_patrol = _comparisons(tmp_path, large)
    quadratic = (large / small) ** 2  # 16: what comparing all pairs would cost more
    assert s_conf > 0 and s_patrol > 0
    assert l_conf / s_conf < quadratic / 2, (s_conf, l_conf)
    assert l_patrol / s_patrol < quadratic / 2, (s_patrol, l_patrol)
    assert l_conf < large * (large - 1) / 2 / 10  # a tenth of all pairs, at most


# --------------------------------------------------------------------------- patrol

def _layer_bytes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for layer in ("shallow", "sediment", "bedrock", "archive") for p in (root / layer).rglob("*")
            if p.is_file()}


def _messy(repo) -> dict[str, str]:
    ids = {}
    ids["old"] = _add(repo, "The staging cluster runs on Hetzner.", -200).id
    ids["dup1"] = _add(repo, "移动端登录用 PKCE，不再下发 client secret", 1).id
    ids["dup2"] = _add(repo, "移动端登录用 PKCE，不再下发 client secret。", 2).id
    ids["c1"] = _add(repo, "The Berlin office is on floor 3.", 3).id
    ids["c2"] = _add(repo, "The Berlin office is on floor 5.", 4).id
    ids["e1"] = _add(repo, "Auth flow: implicit grant for now.", 5, event="auth-flow").id
    ids["e2"] = repo.add("Auth flow: use the device code grant.", kind="fact", event="auth-flow",
                         now=at(6)).id
    ids["r1"] = _add(repo, "Quarkus and Vertx power the billing service.", 7).id
    ids["r2"] = _add(repo, "Billing latency: Quarkus with Vertx, tuned pools.", 8).id
    ids["i1"] = repo.add("likes green tea", now=at(9)).id
    ids["i2"] = repo.add("likes green tea a lot", now=at(10)).id
    u = repo.add("a kind nobody knows", kind="fact", now=at(11))  # (add refuses one: a person typed it)
    path = repo.root / u.path
    path.write_text(path.read_text(encoding="utf-8").replace("kind: fact", "kind: whatever"), encoding="utf-8")
    repo.refresh()
    ids["u"] = u.id
    ids["link"] = _add(repo, "See [[nowhere-to-be-found]] for the plan.", 12).id
    return ids


def test_patrol_lists_each_kind_of_item_with_a_command(repo):
    ids = _messy(repo)
    e2 = repo.get(ids["e2"])
    assert e2.status == "active"  # (an event sibling that does not overturn stays active)
    r = repo.patrol(now=at(30))
    text = (repo.root / r.path).read_text(encoding="utf-8")
    assert r.path == "_system/patrol/2026-01-31.md"
    unrecalled = {i for it in r.sections["unrecalled"] for i in it.ids}
    assert ids["old"] in unrecalled and ids["c1"] not in unrecalled
    assert [set(it.ids) for it in r.sections["duplicates"]] == [{ids["dup1"], ids["dup2"]}]
    assert {frozenset(it.ids) for it in r.sections["conflicts"]} >= {frozenset((ids["c1"], ids["c2"]))}
    assert [set(it.ids) for it in r.sections["events"]] == [{ids["e1"], ids["e2"]}]
    assert {frozenset(it.ids) for it in r.sections["unlinked"]} >= {frozenset((ids["r1"], ids["r2"]))}
    inbox = [set(it.ids) for it in r.sections["inbox"]]
    assert {ids["i1"], ids["i2"]} in inbox
    assert [it.ids for it in r.sections["unclassified"]] == [(ids["u"],)]
    assert [it.ids for it in r.sections["unresolved"]] == [(ids["link"],)]
    for key, items in r.sections.items():
        for it in items:
            assert it.action.startswith("sediment "), (key, it)
            for name in it.names:
                assert f"[[{name}]]" in it.what
            assert it.what in text and it.action in text


def test_patrol_suggestions_run(repo, capsys):
    ids = _messy(repo)
    r = repo.patrol(now=at(30))
    dup = r.sections["duplicates"][0]
    repo.close()
    argv = shlex.split(dup.action.split("  #")[0])[1:]
    assert main(["--root", str(repo.root), *argv]) == 0
    with Repository(repo.root) as again:
        assert again.get(ids["dup1"]).status == "superseded"
        assert again.patrol(now=at(30)).sections["duplicates"] == []
        link = again.patrol(now=at(30)).sections["unlinked"][0]
    assert main(["--root", str(repo.root), *shlex.split(link.action)[1:]]) == 0
    with Repository(repo.root) as again:
        assert link.ids not in [it.ids for it in again.patrol(now=at(30)).sections["unlinked"]]


def test_patrol_changes_no_note_and_records_no_recall(repo):
    _messy(repo)
    before = _layer_bytes(repo.root)
    usage = {p.name: p.read_bytes() for p in (repo.root / "_system" / "usage").glob("*") if p.is_file()}
    repo.patrol(now=at(30))
    repo.patrol(now=at(400))
    assert _layer_bytes(repo.root) == before
    assert {p.name: p.read_bytes() for p in (repo.root / "_system" / "usage").glob("*") if p.is_file()} == usage


def test_patrol_is_byte_stable_for_the_same_root_and_now(repo, tmp_path):
    _messy(repo)
    r1 = repo.patrol(now=at(30))
    first = (repo.root / r1.path).read_bytes()
    assert repo.patrol(now=at(30)).text.encode() == first
    repo.close()
    copy = tmp_path / "copy"
    shutil.copytree(repo.root, copy)
    shutil.rmtree(copy / "_system" / "cache", ignore_errors=True)  # a cold open: everything re-derived
    (copy / r1.path).unlink()
    with Repository(copy) as other:
        assert (copy / other.patrol(now=at(30)).path).read_bytes() == first
        assert other.patrol(now=at(31)).text != first.decode()


def test_patrol_folder_is_not_versioned(tmp_path):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    root = tmp_path / "root"
    with Repository(root) as repo:
        repo.add("likes tea")
        r = repo.patrol(now=at(1))
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout
    assert r.path and (root / r.path).exists()
    assert "patrol" not in status and "shallow/" in status


def test_patrol_on_a_read_only_root_returns_the_report(repo):
    _messy(repo)
    repo.store.turn_writes_off("test: read-only media")
    r = repo.patrol(now=at(30))
    assert r.path is None and r.counts["duplicates"] == 1
    assert not (repo.root / "_system" / "patrol").exists()
