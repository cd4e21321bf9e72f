"""Several roots, one view: ``Repository(root, shared=[...])``.

A team keeps one shared root that every agent reads; each agent keeps its
own. Search, context, about and profile read every root, ranked together,
each hit naming its root; writes, recalls and every file of ``_system/`` are
the own root's; a shared root is opened without writing one byte of it.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sediment import Ambiguous, InvalidInput, LockTimeout, NotFound, Repository, StorageError

from _machines import GIT, git

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.timezone.utc)

FILLER = ["The office coffee machine is on the second floor.", "Lunch is at noon on weekdays.",
          "The wiki lives on the intranet.", "Invoices go to the finance team by the fifth.",
          "The printer on floor three jams on thick paper.", "Holidays are booked in the HR tool.",
          "We deploy the web app with a script.", "Standup is at ten every morning."]


def tree(root: Path) -> dict[str, tuple[bytes | None, int]]:
    """Every file and folder under ``root``: its bytes (None for a folder) and
    mtime; not ``.git/`` (``git status`` refreshes its own index)."""
    out: dict[str, tuple[bytes | None, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for d in dirnames:
            p = Path(dirpath) / d
            out[p.relative_to(root).as_posix() + "/"] = (None, p.stat().st_mtime_ns)
        for f in filenames:
            p = Path(dirpath) / f
            out[p.relative_to(root).as_posix()] = (p.read_bytes(), p.stat().st_mtime_ns)
    return out


def make_root(path: Path, notes: list[str], **kw) -> list[str]:
    with Repository(path) as repo:
        return [repo.add(text, now=T0, **kw).id for text in notes]


@pytest.fixture
def two(tmp_path):
    """A private root and a shared one ('team'), both with the same filler notes."""
    mine, team = tmp_path / "mine", tmp_path / "team"
    make_root(mine, FILLER, kind="fact")
    make_root(team, FILLER, kind="fact")
    return mine, team


# --------------------------------------------------------------------------- read only


def test_a_shared_root_is_read_without_writing_one_byte_of_it(two):
    mine, team = two
    with Repository(team) as repo:
        shared_id = repo.add("Rollbacks go through ArgoCD history.", title="rollback", kind="rule", now=T0).id
        _ = repo.add("张三拍板：回调最多重试三次", kind="rule", entities={"张三": "拍板"}, now=T0)
    # what a normal open would write: the index snapshot and body store (a cold
    # open), a layer folder git or a person removed, the .gitignore
    shutil.rmtree(team / "_system" / "cache")
    shutil.rmtree(team / "bedrock")
    (team / ".gitignore").unlink()
    if GIT:
        git(team, "init", "-q")
        git(team, "add", "-A")
        git(team, "-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "team")
    before = tree(team)
    status = git(team, "status", "--porcelain", "--ignored").stdout if GIT else ""
    with Repository(mine, shared=[team]) as repo:
        hits = repo.search("rollback argocd")
        assert [(h.root, h.entry.id) for h in hits][:1] == [("team", shared_id)]
        repo.context("rollback argocd", budget=3000)
        repo.about("rollback")
        repo.profile("张三")
        assert repo.get(f"team:{shared_id}").title == "rollback"
        assert "ArgoCD" in repo.markdown(f"team:{shared_id}")
        repo.recalled([shared_id])
        repo.refresh()
        with pytest.raises(StorageError):
            repo.shared["team"].add("a team note written through the private root", now=T0)
        with pytest.raises(StorageError):
            repo.shared["team"].metabolize(dry_run=False, now=T0)
    assert tree(team) == before
    if GIT:
        assert git(team, "status", "--porcelain", "--ignored").stdout == status
    # the same open, not read-only, writes what the read-only one did not (the test can fail)
    with Repository(team):
        pass
    assert tree(team) != before


def test_read_only_is_a_root_of_its_own_that_refuses_every_write_and_records_nothing(two):
    _, team = two
    before = tree(team)
    with Repository(team, read_only=True) as repo:
        assert [h.entry.title for h in repo.search("coffee machine")][:1]
        with pytest.raises(StorageError):
            repo.add("x", now=T0)
        assert repo.check() == [] or all(p.code != "read_only" for p in repo.check())
    assert tree(team) == before


def test_writes_go_to_the_own_root_only(two):
    mine, team = two
    before = tree(team)
    with Repository(mine, shared=[team]) as repo:
        e = repo.add("Deploys need a green build.", kind="rule", now=T0)
        repo.metabolize(dry_run=False, now=T0 + dt.timedelta(days=40))
        assert (mine / repo.get(e.id).path).is_file()
    assert tree(team) == before


# --------------------------------------------------------------------------- ranked together


def _strong_and_weak(strong_root: Path, weak_root: Path) -> tuple[str, str]:
    with Repository(strong_root) as repo:
        strong = repo.add("Rollbacks of the payments service go through ArgoCD history; never kubectl.",
                          title="payments rollback via ArgoCD", kind="rule", now=T0).id
    with Repository(weak_root) as repo:
        weak = repo.add("The payments service rollback has a dashboard.", kind="fact", now=T0).id
    return strong, weak


@pytest.mark.parametrize("strong_in", ["team", "mine"])
def test_a_strong_match_in_either_root_outranks_a_weak_one_in_the_other(two, strong_in):
    mine, team = two
    strong_root, weak_root = (team, mine) if strong_in == "team" else (mine, team)
    strong, weak = _strong_and_weak(strong_root, weak_root)
    with Repository(mine, shared=[team]) as repo:
        hits = repo.search("payments rollback argocd", record=False)
    order = [h.entry.id for h in hits]
    assert order.index(strong) < order.index(weak)  # each was first in its own root
    root_of = {h.entry.id: h.root for h in hits}
    assert root_of[strong] == (None if strong_in == "mine" else "team")
    assert root_of[weak] == ("team" if strong_in == "mine" else None)
    with Repository(strong_root) as alone_strong, Repository(weak_root) as alone_weak:
        assert alone_strong.search("payments rollback argocd", record=False)[0].entry.id == strong
        assert alone_weak.search("payments rollback argocd", record=False)[0].entry.id == weak


def test_each_roots_own_order_is_kept_and_hits_name_their_root(two):
    mine, team = two
    with Repository(mine) as repo:
        own_alone = [h.entry.id for h in repo.search("deploy floor", record=False)]
    with Repository(team) as repo:
        team_alone = [h.entry.id for h in repo.search("deploy floor", record=False)]
    with Repository(mine, shared={"crew": team}) as repo:
        hits = repo.search("deploy floor", record=False, limit=20)
        d = hits[0].to_dict()
    assert [h.entry.id for h in hits if h.root is None] == own_alone
    assert [h.entry.id for h in hits if h.root == "crew"] == team_alone
    assert {h.ref for h in hits if h.root} == {f"crew:{i}" for i in team_alone}
    assert ("root" in d) == (hits[0].root is not None)
    assert not any(str(team) in str(h.to_dict()) for h in hits)  # a label, never the path


def test_a_search_of_several_roots_keeps_its_filters_and_limit(two):
    mine, team = two
    with Repository(team) as repo:
        repo.add("The staging floor plan is in the wiki.", kind="rule", now=T0)
    with Repository(mine, shared=[team]) as repo:
        hits = repo.search("floor", kind="rule", record=False)
        assert [(h.root, h.entry.kind) for h in hits] == [("team", "rule")]
        assert len(repo.search("the", limit=3, record=False)) <= 3


# --------------------------------------------------------------------------- recalls


def test_a_search_records_the_own_roots_hits_only(two):
    mine, team = two
    strong, weak = _strong_and_weak(team, mine)
    usage_before = tree(team / "_system")
    with Repository(mine, shared=[team]) as repo:
        hits = repo.search("payments rollback argocd")
        assert {h.root for h in hits} == {None, "team"}
        assert repo.strength(weak).recalls == 1
        with pytest.raises(NotFound):
            repo.strength(strong)  # (a shared root's memory is not this root's to weigh)
    assert tree(team / "_system") == usage_before
    with Repository(team) as repo:
        assert repo.strength(strong).recalls == 0
    assert strong not in (mine / "_system" / "usage" / "events.log").read_text()


# --------------------------------------------------------------------------- ids


def test_an_id_in_two_roots_is_read_by_its_label_and_a_bare_id_is_the_own_roots(tmp_path):
    mine, team, crew = tmp_path / "mine", tmp_path / "team", tmp_path / "crew"
    [own] = make_root(mine, ["the own copy"], kind="fact")
    make_root(team, ["filler"], kind="fact")
    make_root(crew, ["filler"], kind="fact")
    with Repository(mine) as repo:
        path = repo.get(own).path
    for other in (team, crew):  # the same note, copied (same id) into a shared root, edited there
        (other / path).parent.mkdir(parents=True, exist_ok=True)
        (other / path).write_text((mine / path).read_text().replace("the own copy", f"the {other.name} copy"))
    with Repository(mine, shared=[team]) as repo:
        assert repo.get(own).body.strip() == "the own copy"
        assert repo.get(f"team:{own}").body.strip() == "the team copy"
        assert "the team copy" in repo.markdown(f"team:{own}")
    (mine / path).unlink()
    with Repository(mine, shared=[team]) as repo:  # only a shared root has it: found there
        assert repo.get(own).body.strip() == "the team copy"
    with Repository(mine, shared=[team, crew]) as repo:  # two have it: name one
        with pytest.raises(Ambiguous) as exc:
            repo.get(own)
        assert exc.value.details["candidates"] == [f"team:{own}", f"crew:{own}"]
        assert repo.get(f"crew:{own}").body.strip() == "the crew copy"
        with pytest.raises(NotFound):
            repo.get("team:nothing-like-it")


@pytest.mark.parametrize("shared", [{"a:b": "x"}, {"a/b": "x"}, {"": "x"}, {"-x": "x"}])
def test_a_label_must_be_a_plain_name(tmp_path, shared):
    make_root(tmp_path / "mine", [])
    with pytest.raises(InvalidInput):
        Repository(tmp_path / "mine", shared=shared)


def test_the_own_root_twice_or_a_missing_shared_root_is_refused(tmp_path):
    mine = tmp_path / "mine"
    make_root(mine, [])
    with pytest.raises(InvalidInput):
        Repository(mine, shared=[mine])
    with pytest.raises(InvalidInput):
        Repository(mine, shared=str(mine))  # one path, not a list
    make_root(mine / "team", [])
    with pytest.raises(InvalidInput):  # (the own root's walk would read its notes as a person's)
        Repository(mine, shared=[mine / "team"])
    with pytest.raises(InvalidInput):
        Repository(mine / "team", shared=[mine])
    with pytest.raises(NotFound):
        Repository(mine, shared=[tmp_path / "nowhere"])
    assert not (tmp_path / "nowhere").exists()


# --------------------------------------------------------------------------- context, about, profile


def test_context_draws_reminders_from_every_root_and_records_the_own_ones_only(two):
    mine, team = two
    strong, weak = _strong_and_weak(team, mine)
    with Repository(team) as repo:
        repo.add("Answer the team in English.", title="team voice", kind="core", now=T0)
    with Repository(mine) as repo:
        repo.add("Answer in short sentences.", title="my voice", kind="core", now=T0)
    with Repository(mine, shared=[team]) as repo:
        ctx = repo.context("payments rollback argocd", budget=4000, now=T0)
    reminds = [(i.root, i.id) for i in ctx.items if i.section == "reminds"]
    assert reminds.index(("team", strong)) < reminds.index((None, weak))
    assert ctx.recalled == (weak,)
    assert [i.snippet for i in ctx.items if i.section == "core"] == ["my voice: Answer in short sentences."]
    assert "· from team ·" in str(ctx)
    assert next(i for i in ctx.items if i.id == strong).to_dict()["root"] == "team"


def test_about_reads_every_root_and_names_the_shared_one(two):
    mine, team = two
    strong, weak = _strong_and_weak(team, mine)
    with Repository(mine, shared=[team]) as repo:
        a = repo.about("payments rollback argocd")
    assert [(k.id, k.root) for k in a.memories][:2] == [(strong, "team"), (weak, None)]
    assert a.summary.startswith("About 'payments rollback argocd': 2 memories")
    assert "(team)" in str(a)


def test_profile_reads_every_root(two):
    mine, team = two
    with Repository(team) as repo:
        note = repo.add("管支付系统。", title="张三", kind="person", aliases=["老张"], now=T0).id
        team_rule = repo.add("张三拍板：回调最多重试三次", kind="rule", entities={"张三": "拍板"}, now=T0).id
    with Repository(mine) as repo:
        mine_fact = repo.add("老张审查了回调重试", kind="event", entities={"张三": "审查"},
                             now=T0 + dt.timedelta(days=1)).id
    with Repository(mine, shared=[team]) as repo:
        p = repo.profile("张三")
    assert (p.name, p.known, p.note, p.summary) == ("张三", True, f"team:{note}", "管支付系统。")
    assert p.roles == {"拍板": 1, "审查": 1}
    assert [(m.id, m.root) for m in p.decisions] == [(team_rule, "team")]
    assert [(m.id, m.root) for m in p.facts] == [(mine_fact, None)]


HOLD = """
import sys
from sediment.disk.files import WriterLock
from pathlib import Path
with WriterLock.for_path(Path(sys.argv[1])).hold(30):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_shared_root_is_read_while_its_writer_holds_its_lock(two):
    """No lock is taken in a shared root: its own writer (another agent
    syncing it, say: a real process) holding the lock does not stop a read
    through another root, which a write of that root would wait for."""
    mine, team = two
    with Repository(team) as repo:
        tid = repo.add("The staging cluster is called kestrel.", kind="fact", now=T0).id
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(team / "_system" / "lock")], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with Repository(mine, shared=[team], policy={"lock_timeout_seconds": 0.2}) as repo:
            assert [h.ref for h in repo.search("kestrel")] == [f"team:{tid}"]
            assert repo.context("kestrel", now=T0).items
        with Repository(team, policy={"lock_timeout_seconds": 0.2}) as writer:
            with pytest.raises(LockTimeout):  # (the lock is really held)
                writer.add("x", now=T0)
    finally:
        holder.communicate("")


def test_recalled_counts_the_own_roots_memories_and_skips_a_shared_ones(two):
    mine, team = two
    strong, weak = _strong_and_weak(team, mine)
    before = tree(team)
    with Repository(mine, shared=[team]) as repo:
        repo.recalled([f"team:{strong}", weak, strong])  # (a bare id of the shared root only: no memory here)
        assert repo.strength(weak).recalls == 1
    assert tree(team) == before
    with Repository(team) as repo:
        assert repo.strength(strong).recalls == 0


# The child: a private root with the shared root read through it, every read verb, warnings caught.
CHILD = r'''
import json, logging, sys
from sediment import Repository

mine, team = sys.argv[1], sys.argv[2]
warnings = []

class Catch(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.WARNING:
            warnings.append(record.getMessage())

logging.getLogger("sediment").addHandler(Catch())
with Repository(mine, shared={"team": team}) as repo:
    hits = [h.ref for h in repo.search("kestrel")]
    items = [i.root for i in repo.context("kestrel staging cluster").items if i.section == "reminds"]
    about = [k.root for k in repo.about("kestrel").memories]
    read = repo.get(hits[0]).title if hits else None
    added = repo.add("kestrel has three nodes", kind="fact").path
    problems = [p.code for p in repo.check()]
print(json.dumps({"hits": hits, "items": items, "about": about, "read": read, "added": added,
                  "problems": problems, "warnings": warnings}))
'''


def test_a_shared_root_on_read_only_media_is_read_without_a_warning(tmp_path):
    """Whatever its permissions: the shared root is a real read-only bind mount
    (a private mount namespace; chmod does not stop root), read by a child."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.skip("unshare and mount are needed for a read-only bind mount")
    mine, team, ro = tmp_path / "mine", tmp_path / "team", tmp_path / "ro"
    make_root(mine, FILLER, kind="fact")
    make_root(team, ["The staging cluster is called kestrel."], kind="fact")
    shutil.rmtree(team / "_system" / "cache")  # (a cold open: what it would save, it may not)
    ro.mkdir()
    before = tree(team)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(Path(__file__).resolve().parent.parent), os.environ.get("PYTHONPATH", "")) if p)}
    r = subprocess.run(["unshare", "-m", "sh", "-c",
                        'mount --bind -o ro "$0" "$1" && ! touch "$1/probe" 2>/dev/null && exec "$2" -c "$3" "$4" "$1"',
                        team, ro, sys.executable, CHILD, mine], capture_output=True, text=True, env=env, timeout=300)
    if r.returncode != 0 and not r.stdout:
        pytest.skip(f"no read-only bind mount here: {r.stderr.strip()[:200]}")
    out = json.loads(r.stdout.splitlines()[-1])
    assert out["hits"][:1] and out["hits"][0].startswith("team:") and out["read"]
    assert out["items"] == ["team"] and out["about"] == ["team"]
    assert out["added"].startswith("shallow/") and (mine / out["added"]).is_file()
    assert out["warnings"] == [] and "read_only" not in out["problems"]
    assert tree(team) == before


def test_a_shared_root_written_by_its_own_writer_meanwhile_is_read_as_it_is_now(two):
    """The team's root written while this one is open (by an agent that opened
    it as its own, or its sync): the next read finds what was written, through
    that root's journal, as its own writer's readers do."""
    mine, team = two
    with Repository(mine, shared=[team]) as repo:
        assert repo.search("kestrel", record=False) == []
        with Repository(team) as writer:
            tid = writer.add("The staging cluster is called kestrel.", kind="fact", now=T0).id
        assert [h.ref for h in repo.search("kestrel", record=False)] == [f"team:{tid}"]
