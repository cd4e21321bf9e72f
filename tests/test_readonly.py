"""Reading never writes a memory file.

Search, get, list, stats and iteration - from the instance that wrote the notes
or from another one opening the same root - leave every ``.md`` byte-identical
(and its mtime alone), so ``git status`` stays clean and Obsidian sees no phantom
edit. Hand-written files in other styles (unquoted times, flow lists, ``density``,
CRLF, BOM, broken YAML) are not "normalised" by reading either.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sediment import NotFound, Repository, SedimentError

HAND_WRITTEN = {
    "sediment/obsidian-style.md": (
        "---\nid: HAND-OBSIDIAN\ntitle: Obsidian style\ncreated: 2026-03-01T10:00:00+08:00\n"
        "updated: 2026-03-02 11:00\ntags: [ops, 运维]\ndensity: 0.6\n---\nflow lists and unquoted times\n"),
    "bedrock/windows.md": (
        "\ufeff---\r\nid: HAND-WINDOWS\r\ntitle: written on windows\r\n"
        "created: '2026-03-01T10:00:00+00:00'\r\n---\r\nbom and crlf line ends\r\n"),
    "shallow/broken.md": "---\nid: [broken\n---\nbroken yaml\n",
    "loose-note.md": "---\nid: LOOSE\ntitle: loose\ncreated: '2026-03-01T10:00:00+00:00'\n---\noutside the layers\n",
}

QUERIES = ["移动端", "登录", "密钥", "PKCE", "deploy", "database migrations", "用户 偏好", "flow lists",
           "bom", "回答", "nothing-matches-this", "", "部署 staging", "运维", "🚀"]


def md_state(root: Path) -> dict[str, tuple[str, int]]:
    """Every .md under the root (and the versioned settings): sha256 and mtime."""
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for f in filenames:
            p = Path(dirpath, f)
            rel = p.relative_to(root).as_posix()
            if f.endswith(".md") or rel in ("_system/policy.yaml", ".gitignore"):
                out[rel] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    root = tmp_path_factory.mktemp("readonly") / "root"
    repo = Repository(root)
    a = repo.add("移动端登录用 PKCE，不再下发 client secret。", title="用 PKCE 代替 client secret",
                 room="auth", kind="rule", tags=["auth", "移动端"], value=0.8, links=["移动端不能保存密钥"],
                 evidence=["移动客户端无法安全保存密钥"])
    repo.add("移动客户端无法安全保存密钥。", title="移动端不能保存密钥", room="auth", kind="fact")
    b = repo.add("Run database migrations before deploying the API.", title="Migrations first",
                 room="deploy", kind="rule", tags=["deploy", "database"])
    c = repo.add("用户喜欢简短的回答，先给结论。", title="用户偏好", kind="fact", tags=["偏好"], layer="bedrock")
    d = repo.add("部署 staging 用 helm upgrade --install 🚀", title="Helm 部署", room="deploy", kind="skill",
                 tags=["部署", "🚀"])
    e = repo.add("an old idea about caching", title="old caching idea", kind="fact")
    f = repo.add("a mistaken note", title="mistake", kind="fact")
    repo.move(b.id, "sediment")
    repo.archive(e.id, reason="superseded by the new cache design")
    repo.purge(f.id, confirm=True)
    repo.close()
    for rel, text in HAND_WRITTEN.items():
        (root / rel).write_bytes(text.encode("utf-8"))
    Repository(root).close()  # warm the derived caches the copies inherit
    keys = [a.id, b.id, c.id, d.id, e.id, f.id, a.name, d.name, "HAND-OBSIDIAN", "HAND-WINDOWS",
            "LOOSE", "no-such-id", "[[移动端不能保存密钥]]"]
    return root, keys


@pytest.fixture
def root(tmp_path, template):
    src, keys = template
    dst = tmp_path / "root"
    shutil.copytree(src, dst, symlinks=True)
    return dst, keys


def read_op(keys):
    filters = st.fixed_dictionaries({}, optional={
        "layer": st.sampled_from(["shallow", "sediment", "bedrock", "archive", ["shallow", "bedrock"]]),
        "room": st.sampled_from(["auth", "deploy", "nope"]),
        "kind": st.sampled_from(["rule", "fact", "skill", "inbox"]),
    })
    return st.one_of(
        st.tuples(st.just("get"), st.sampled_from(keys)),
        st.tuples(st.just("contains"), st.sampled_from(keys)),
        st.tuples(st.just("list"), filters, st.sampled_from([None, "移动端", "deploy", "运维", "🚀"])),
        st.tuples(st.just("search"), st.sampled_from(QUERIES), filters,
                  st.fixed_dictionaries({}, optional={"include_archive": st.booleans(),
                                                      "limit": st.integers(1, 5),
                                                      "tags": st.sampled_from([["移动端"], ["deploy"]])})),
        st.tuples(st.just("stats")),
        st.tuples(st.just("iter")),
        st.tuples(st.just("len")),
        st.tuples(st.just("refresh")),
        st.tuples(st.just("check")),
        st.tuples(st.just("context"), st.sampled_from([None, *QUERIES]), st.integers(0, 4000)),
        st.tuples(st.just("about"), st.sampled_from([q for q in QUERIES if q])),
    )


def run(repo: Repository, op) -> None:
    kind = op[0]
    if kind == "get":
        try:
            e = repo.get(op[1])
            _ = (e.text, e.sections, e.links, e.tags, e.created, e.updated, e.to_dict())
        except NotFound:
            pass
    elif kind == "contains":
        _ = op[1] in repo
    elif kind == "list":
        repo.list(**op[1], tag=op[2])
    elif kind == "search":
        for hit in repo.search(op[1], **op[2], **op[3]):
            _ = (hit.entry.body, hit.snippet, hit.to_dict())
    elif kind == "stats":
        repo.stats()
    elif kind == "iter":
        for e in repo:
            _ = e.to_dict()
    elif kind == "len":
        len(repo)
    elif kind == "refresh":
        repo.refresh()
    elif kind == "check":
        repo.check()
    elif kind == "context":  # records recalls in _system/usage/, never in a note
        _ = str(repo.context(op[1], budget=op[2]))
    elif kind == "about":
        _ = str(repo.about(op[1]))


def test_any_sequence_of_reads_leaves_every_file_alone(root):
    path, keys = root
    before = md_state(path)
    first = Repository(path)
    second = Repository(path)  # another reader of the same root

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(ops=st.lists(st.tuples(st.booleans(), read_op(keys)), min_size=1, max_size=12))
    def check(ops):
        for use_second, op in ops:
            try:
                run(second if use_second else first, op)
            except SedimentError:
                pass  # a refused read is fine; a write is not
        assert md_state(path) == before

    check()
    first.close()
    second.close()
    assert md_state(path) == before


def test_opening_many_times_leaves_every_file_alone(root):
    path, keys = root
    before = md_state(path)
    for _ in range(3):
        with Repository(path) as repo:
            assert len(repo.list()) >= 8
            assert repo.search("PKCE")
            assert repo.get("HAND-OBSIDIAN").value == pytest.approx(0.6)
    assert md_state(path) == before


def test_reads_find_what_they_should(root):
    """The read-only test above is only worth something if the reads do real work."""
    path, keys = root
    repo = Repository(path)
    assert {h.entry.title for h in repo.search("移动端")} >= {"用 PKCE 代替 client secret"}
    assert repo.get("HAND-WINDOWS").title == "written on windows"
    assert [e.id for e in repo.list(tag="运维")] == ["HAND-OBSIDIAN"]
    assert repo.search("mistaken", include_archive=True) == []  # purged
    assert [h.entry.title for h in repo.search("caching", include_archive=True)] == ["old caching idea"]


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd.parent),
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}
    out = subprocess.run(["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false",
                          "-c", "core.autocrlf=false", *args],
                         cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return out.stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_status_stays_clean_after_reads(root):
    path, keys = root
    _git(path, "init", "-q")
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "memories")
    assert _git(path, "status", "--porcelain", "--untracked-files=all") == ""

    def reads(repo: Repository) -> None:
        for k in keys:
            run(repo, ("get", k))
        for q in QUERIES:
            repo.search(q)
            repo.search(q, include_archive=True)
        repo.list()
        repo.list(layer="archive")
        repo.stats()
        list(repo)
        repo.refresh()
        repo.check()

    with Repository(path) as repo:
        reads(repo)
    assert _git(path, "status", "--porcelain", "--untracked-files=all") == ""

    # a fresh clone (no lock, journal or caches yet) stays clean too
    clone = path.parent / "clone"
    _git(path.parent, "clone", "-q", str(path), str(clone))
    with Repository(clone) as repo:
        reads(repo)
    assert _git(clone, "status", "--porcelain", "--untracked-files=all") == ""
