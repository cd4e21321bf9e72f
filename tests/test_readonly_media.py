"""A root on read-only media (a mounted backup, a CI cache, a container layer)
opens for reading: get, list, search and check work, searches do not record
recalls, recovery that cannot run is reported by ``check()``, and every write
raises ``StorageError`` — never a raw ``OSError``.

Tests run as root here, where ``chmod`` does not stop writes, so the read-only
root is a real read-only bind mount inside a private mount namespace
(``unshare -m``), checked by a child process. As another user, a root made
read-only with ``chmod`` is used instead.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import sediment
from sediment import Repository
from sediment.disk.journal import Journal
from sediment.model.policy import from_mapping

PKG_PARENT = str(Path(sediment.__file__).parent.parent)

# The child: opens the read-only root, reads, tries every write, reports as JSON.
CHILD = r'''
import datetime as dt, json, logging, os, sys
from sediment import Repository, StorageError

root, ids = sys.argv[1], json.loads(sys.argv[2])
if os.environ.get("SEDIMENT_TEST_ACCESS_LIES"):  # media where access() says "writable" wrongly
    os.access = lambda *a, **k: True
out = {"warnings": [], "writes": {}}

class Catch(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.WARNING:
            out["warnings"].append(record.getMessage())

logging.getLogger("sediment").addHandler(Catch())

def attempt(name, fn):
    try:
        fn()
        out["writes"][name] = "no error"
    except StorageError as exc:
        out["writes"][name] = "StorageError"
        out.setdefault("messages", {})[name] = str(exc)
    except BaseException as exc:
        out["writes"][name] = f"{type(exc).__module__}.{type(exc).__name__}: {exc}"

repo = Repository(root)
out["policy"] = repr(repo.policy)
out["len"] = len(repo)
out["get"] = repo.get(ids["rule"]).title
out["list"] = sorted(e.title for e in repo.list())
out["search"] = [h.entry.title for h in repo.search("deploy")]
out["search_zh"] = [h.entry.title for h in repo.search("移动端")]
out["context"] = [i.section for i in repo.context("deploy the API").items]
out["about"] = len(repo.about("deploy").memories)
out["recalls"] = repo.strength(ids["rule"]).recalls
out["check"] = [p.to_dict() for p in repo.check()]
later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=800)
out["dry_run_moves"] = len(repo.metabolize(now=later).moves)
attempt("add", lambda: repo.add("a new note", title="new"))
attempt("update", lambda: repo.update(ids["rule"], text="changed"))
attempt("move", lambda: repo.move(ids["rule"], "sediment"))
attempt("archive", lambda: repo.archive(ids["rule"], reason="old"))
attempt("purge", lambda: repo.purge(ids["rule"], confirm=True))
attempt("supersede", lambda: repo.supersede(ids["rule"], ids["fact"]))
attempt("consolidate", lambda: repo.consolidate([ids["inbox"]], "The user likes tea.", kind="fact"))
attempt("metabolize", lambda: repo.metabolize(dry_run=False, confirm=True, now=later))
attempt("touch", lambda: repo.touch(ids["fact"], "confirm"))
attempt("touch_refute", lambda: repo.touch(ids["fact"], "refute", confirm=True))
attempt("recover", lambda: repo.recover())
attempt("observe", lambda: repo.observe("Remember to deploy the API tomorrow."))
attempt("mood", lambda: repo.mood("tired"))
repo.close()
again = Repository(root, create=False)
out["reopened"] = len(again)
out["recalls_after"] = again.strength(ids["rule"]).recalls
again.close()
print(json.dumps(out))
'''


def _tree(root: Path) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath, name)
            out[p.relative_to(root).as_posix()] = None if p.is_dir() else p.read_bytes()
    return out


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": PKG_PARENT + os.pathsep + os.environ.get("PYTHONPATH", ""), **extra}


def _bind_mount_works(tmp: Path) -> bool:
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    src, dst = tmp / "probe-src", tmp / "probe-dst"
    src.mkdir()
    dst.mkdir()
    try:
        r = subprocess.run(["unshare", "-m", "sh", "-c",
                            'mount --bind -o ro "$0" "$1" && ! touch "$1/probe" 2>/dev/null', src, dst],
                           capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return r.returncode == 0 and not (src / "probe").exists()


def _chmod_tree(root: Path, writable: bool) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*filenames, *dirnames, ""]:
            p = Path(dirpath, name)
            mode = p.stat().st_mode
            p.chmod(mode | stat.S_IWUSR if writable else mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


@pytest.fixture
def readonly(tmp_path):
    """``run(src, ids, **env)``: run the child on ``src`` made read-only; returns its report."""
    if _bind_mount_works(tmp_path):
        def run(src: Path, ids: dict[str, str], **env: str) -> dict:
            dst = tmp_path / "ro-mount"
            dst.mkdir(exist_ok=True)
            r = subprocess.run(["unshare", "-m", "sh", "-c",
                                'mount --bind -o ro "$0" "$1" && exec "$2" -c "$3" "$1" "$4"',
                                src, dst, sys.executable, CHILD, json.dumps(ids)],
                               capture_output=True, text=True, env=_env(**env), timeout=300)
            assert r.returncode == 0, f"the child failed on the read-only root:\n{r.stderr}"
            return json.loads(r.stdout.splitlines()[-1])
        yield run
    elif os.geteuid() != 0:
        made: list[Path] = []

        def run(src: Path, ids: dict[str, str], **env: str) -> dict:
            made.append(src)
            _chmod_tree(src, writable=False)
            r = subprocess.run([sys.executable, "-c", CHILD, str(src), json.dumps(ids)],
                               capture_output=True, text=True, env=_env(**env), timeout=300)
            assert r.returncode == 0, f"the child failed on the read-only root:\n{r.stderr}"
            return json.loads(r.stdout.splitlines()[-1])
        yield run
        for src in made:
            _chmod_tree(src, writable=True)
    else:
        pytest.skip("no way to make a read-only root here: running as root (chmod does not stop "
                    "writes) and `unshare -m` + `mount --bind -o ro` is not available")


def _make_root(root: Path) -> dict[str, str]:
    with Repository(root) as repo:
        rule = repo.add("Run database migrations before you deploy the API.", title="Migrations first",
                        kind="rule", value=0.9)
        fact = repo.add("移动客户端无法安全保存密钥。", title="移动端不能保存密钥", kind="fact", value=0.9)
        inbox = repo.add("likes tea")
        repo.search("deploy")  # one recall on record
    return {"rule": rule.id, "fact": fact.id, "inbox": inbox.id}


WRITES = ["add", "update", "move", "archive", "purge", "supersede", "consolidate", "metabolize",
          "touch", "touch_refute", "recover", "observe", "mood"]


def test_readonly_root_opens_for_reading_and_refuses_every_write(tmp_path, readonly):
    src = tmp_path / "root"
    ids = _make_root(src)
    before = _tree(src)
    out = readonly(src, ids)
    assert out["len"] == 3 and out["reopened"] == 3
    assert out["get"] == "Migrations first"
    assert out["search"] == ["Migrations first"]
    assert out["search_zh"] == ["移动端不能保存密钥"]
    assert out["dry_run_moves"] > 0  # planning is a read
    assert out["context"] == ["reminds", "rest"] and out["about"] == 1  # reads; no recall recorded
    assert out["writes"] == {w: "StorageError" for w in WRITES}
    assert all("read-only" in m.lower() for m in out["messages"].values()), out["messages"]
    # searches read the usage records but do not add to them, and do not complain
    assert out["recalls"] == out["recalls_after"] == 1
    assert out["warnings"] == []
    # check() says why writes are off
    ro = [p for p in out["check"] if p["code"] == "read_only"]
    assert ro and ro[0]["path"] == "_system", out["check"]
    assert _tree(src) == before


def test_readonly_root_that_access_misjudges_is_still_opened_for_reading(tmp_path, readonly):
    """Where ``access()`` says writable but the file system refuses (some network
    file systems), the refused lock at open turns writes off just the same."""
    src = tmp_path / "root"
    ids = _make_root(src)
    before = _tree(src)
    out = readonly(src, ids, SEDIMENT_TEST_ACCESS_LIES="1")
    assert out["search"] == ["Migrations first"] and out["reopened"] == 3
    assert out["writes"] == {w: "StorageError" for w in WRITES}
    assert out["recalls"] == out["recalls_after"] == 1
    assert out["warnings"] == []
    assert [p["code"] for p in out["check"] if p["path"] == "_system/journal.log"] == ["not_recovered"]
    assert _tree(src) == before


def test_readonly_root_with_an_interrupted_operation_reports_recovery_not_run(tmp_path, readonly):
    src = tmp_path / "root"
    ids = _make_root(src)
    with Repository(src) as repo:
        e = repo.get(ids["fact"])
    dst = f"sediment/{e.name}.md"
    Journal(src / "_system" / "journal.log").begin("move", id=e.id, src=e.path, dst=dst)
    shutil.copyfile(src / e.path, src / dst)  # the writer died before removing the old file
    before = _tree(src)
    out = readonly(src, ids)
    codes = {p["code"]: p for p in out["check"]}
    assert "not_recovered" in codes, out["check"]
    problem = codes["not_recovered"]
    assert problem["path"] == "_system/journal.log"
    assert "1 interrupted operation" in problem["reason"] and "left as" in problem["reason"]
    assert "journal_pending" in codes  # the operation itself, as on any root
    assert _tree(src) == before  # both copies are still there, as they were


def test_readonly_root_without_a_policy_file_uses_the_defaults(tmp_path, readonly):
    src = tmp_path / "root"
    ids = _make_root(src)
    (src / "_system" / "policy.yaml").unlink()
    before = _tree(src)
    out = readonly(src, ids)
    assert out["policy"] == repr(from_mapping({}))
    assert out["search"] == ["Migrations first"]
    missing = [p for p in out["check"] if p["path"] == "_system/policy.yaml"]
    assert missing and "default" in missing[0]["reason"], out["check"]
    assert _tree(src) == before


def test_writes_that_the_file_system_refuses_raise_storage_error(tmp_path, monkeypatch):
    """A refusal the open could not foresee (a journal made read-only later, a
    full disk) is a StorageError too, not a raw OSError."""
    repo = Repository(tmp_path)
    e = repo.add("x", title="note")

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("sediment.disk.journal.append_line", refuse)
    # a write that needs no intent record is durable before the journal is
    # told: it stands, and says that other processes were not told
    other = repo.add("y", title="other")
    assert (tmp_path / other.path).exists() and any("journal" in w for w in other.warnings)
    with pytest.raises(sediment.StorageError):  # a move records its intent first: nothing moves
        repo.move(e.id, "sediment")
    assert (tmp_path / e.path).exists()


def test_repository_on_an_impossible_path_raises_storage_error(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(sediment.StorageError):
        Repository(tmp_path / "file" / "root")


def test_metabolize_moves_are_unaffected_on_a_writable_root(tmp_path):
    # the read-only checks cost a writable root nothing
    repo = Repository(tmp_path)
    repo.add("x", kind="fact", value=0.9)
    later = dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2)
    plan = repo.metabolize(dry_run=False, now=later)
    assert plan.applied and plan.report and (tmp_path / plan.report).exists()
    assert not [p for p in repo.check() if p.code in ("read_only", "not_recovered")]
