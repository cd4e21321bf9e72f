"""``sediment serve --http``: the tools over MCP's streamable HTTP, one real
server process for many clients, reached through the MCP SDK's own client
(``mcp.client.streamable_http``) with the bearer token in a header, as a
configured client sends it."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
import httpx2  # noqa: E402
from mcp import MCPError  # noqa: E402
from _mcp import (PROJECT, a_hand_edit_is_found, call, http_connect, http_serving, http_start,  # noqa: E402
                  refusal, run, take_the_lock)

from sediment import Repository  # noqa: E402
from sediment.mcp.server import TOOL_VERBS  # noqa: E402

HELLO = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
MCP_HEADERS = {"content-type": "application/json", "accept": "application/json, text/event-stream"}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    Repository(tmp_path / "root").close()
    return tmp_path / "root"


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join(p for p in (str(PROJECT), os.environ.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": path})


# --------------------------------------------------------------------------- the token

def test_every_request_needs_the_bearer_token(root):
    with http_serving(root) as s:
        for headers in ({}, {"authorization": "Bearer not-the-token-at-all"}, {"authorization": s.token},
                        {"authorization": f"Basic {s.token}"}, {"authorization": f"Bearer {s.token}x"}):
            r = httpx2.post(s.url, headers={**MCP_HEADERS, **headers}, json=HELLO)
            assert r.status_code == 401, headers
            assert r.headers["www-authenticate"].startswith("Bearer")
            err = r.json()["error"]
            assert set(err) == {"code", "message"} and err["code"] == "unauthorized"
        assert httpx2.get(s.url).status_code == 401
        r = httpx2.post(s.url, headers={**MCP_HEADERS, "authorization": f"bearer {s.token}"}, json=HELLO)
        assert r.status_code == 200 and "mcp-session-id" in r.headers

        async def main() -> None:
            with pytest.raises(BaseExceptionGroup) as refused:  # the SDK's client cannot connect with a wrong token…
                async with http_connect(s, token="a-wrong-token-of-some-length"):
                    pass
            assert refused.group_contains(MCPError, depth=None)
            async with http_connect(s) as c:  # …and does with the right one
                assert {t.name for t in (await c.list_tools()).tools} == set(TOOL_VERBS)
                _, e = await call(c, "remember", text="The staging database is reset every Monday.")
                _, found = await call(c, "recall", query="staging database")
                assert [h["id"] for h in found["hits"]] == [e["id"]]
        run(main)


def test_the_token_is_made_once_inside_the_root_readable_by_its_owner_only(root, tmp_path):
    outside = _files(tmp_path) - {f"root/{f}" for f in _files(root)}
    with http_serving(root) as s:
        token_file = root / "_system" / "cache" / "http-token"
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert token_file.read_text().strip() == s.token
        assert s.token in s.said  # printed on the first start…
    with http_serving(root) as again:
        assert again.token == s.token and s.token not in again.said  # …and never again
        assert str(token_file) in again.said

        async def main() -> None:
            async with http_connect(again) as c:
                await call(c, "remember", text="Release notes are written before the tag.")
        run(main)
    assert _files(tmp_path) - {f"root/{f}" for f in _files(root)} == outside  # nothing written outside the root


def test_the_token_stays_out_of_git(root):
    git = _cli("--root", str(root), "init", "--git")
    assert git.returncode == 0, git.stderr
    with http_serving(root):
        pass
    assert (root / "_system" / "cache" / "http-token").exists()
    listed = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout
    assert "http-token" not in listed  # ignored: never a change to commit
    assert subprocess.run(["git", "-C", str(root), "check-ignore", "-q", "_system/cache/http-token"]).returncode == 0
    assert _cli("--root", str(root), "sync").returncode == 0
    tracked = subprocess.run(["git", "-C", str(root), "ls-files"], capture_output=True, text=True, check=True).stdout
    assert "http-token" not in tracked


def test_a_token_file_is_read_or_made_there(root, tmp_path):
    made = tmp_path / "secrets" / "sediment-token"
    made.parent.mkdir()
    with http_serving(root, token_file=made) as s:
        assert stat.S_IMODE(made.stat().st_mode) == 0o600 and made.read_text().strip() == s.token
    assert not (root / "_system" / "cache" / "http-token").exists()  # the root's own is not made

    mine = tmp_path / "mine"
    mine.write_text("a-token-a-person-chose-1234\n")
    mine.chmod(0o600)
    with http_serving(root, token_file=mine) as s:
        assert s.token == "a-token-a-person-chose-1234" and s.token not in s.said

        async def main() -> None:
            async with http_connect(s) as c:
                await call(c, "recall", query="anything")
        run(main)

    mine.write_text("short\n")
    out = _cli("--root", str(root), "serve", "--http", "--port", "0", "--token-file", str(mine))
    assert out.returncode == 1 and "error: invalid:" in out.stderr and "no usable token" in out.stderr


def test_a_symlink_in_place_of_the_token_file_is_not_followed(root, tmp_path):
    target = tmp_path / "elsewhere"
    (root / "_system" / "cache").mkdir(exist_ok=True)
    (root / "_system" / "cache" / "http-token").symlink_to(target)
    out = _cli("--root", str(root), "serve", "--http", "--port", "0")
    assert out.returncode == 1 and "symlink" in out.stderr
    assert not target.exists()


def _session(s) -> dict[str, str]:
    """The headers of a new session, opened by raw requests."""
    headers = {**MCP_HEADERS, "authorization": f"Bearer {s.token}"}
    r = httpx2.post(s.url, headers=headers, json=HELLO)
    headers |= {"mcp-session-id": r.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    httpx2.post(s.url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


def test_a_request_holding_a_lone_surrogate_gets_the_same_answer_as_over_stdio(root):
    with http_serving(root) as s:
        headers = _session(s)
        template = ('{"jsonrpc":"2.0","id":%d,"method":"tools/call",'
                    '"params":{"name":"recall","arguments":{"query":"%s"}}}')
        r = httpx2.post(s.url, headers=headers, content=(template % (5, "a\\ud800")).encode())
        assert r.status_code == 200
        result = r.json()["result"]
        assert result["isError"] is True and result["structuredContent"]["error"] == {
            "code": "invalid", "message": "recall: arguments.query holds a lone surrogate (\\ud800), which is not "
                                          "text: send it as UTF-8"}
        # a surrogate pair is one character, and the request goes through as sent
        r = httpx2.post(s.url, headers=headers, content=(template % (6, "\\ud83d\\ude00")).encode())
        assert r.status_code == 200 and '"isError":false' in r.text.replace(" ", "")
        assert httpx2.post(s.url, headers=headers, content=b"{not json").status_code == 400  # the SDK's parse error


# --------------------------------------------------------------------------- where it listens

def test_another_host_than_this_machine_is_warned_about(root):
    s = http_start(root, "--host", "0.0.0.0")
    code, err = s.stop()
    assert code == 0 and "warning: serving on 0.0.0.0" in err


def test_the_http_options_need_http(root):
    out = _cli("--root", str(root), "serve", "--port", "9999")
    assert out.returncode == 1 and "go with --http" in out.stderr


# --------------------------------------------------------------------------- many clients, one root

def test_many_clients_share_one_root_and_see_each_others_writes_at_once(root):
    clients, each = 6, 5

    with http_serving(root) as s:
        async def main() -> None:
            ids: dict[str, str] = {}
            async with http_connect(s) as reader:
                async def writer(k: int) -> None:
                    async with http_connect(s) as c:
                        for i in range(each):
                            word = f"zq{k}x{i}"
                            _, e = await call(c, "remember", text=f"client {k} note {i} says {word}",
                                              title=f"client {k} note {i}", request_id=f"c{k}-{i}")
                            ids[word] = e["id"]
                            # a write acknowledged to one client is found by the next search of another
                            _, found = await call(reader, "recall", query=word)
                            assert [h["id"] for h in found["hits"]] == [e["id"]], word

                async with anyio.create_task_group() as tg:
                    for k in range(clients):
                        tg.start_soon(writer, k)
            assert len(set(ids.values())) == clients * each
        run(main)
    with Repository(root) as repo:
        assert len(repo) == clients * each and repo.check() == []


def test_an_update_race_between_two_clients_is_one_conflict_as_for_one_client(root):
    """Two clients update the same memory from the same version at once: one
    wins, the other gets ``conflict`` — what one client sending both would
    get — and nothing else goes wrong."""
    with http_serving(root) as s:
        async def main() -> None:
            async with http_connect(s) as a, http_connect(s) as b:
                _, e = await call(a, "remember", text="The build runs on Node 20.")
                results: list[tuple[bool, str]] = []

                async def edit(c: object, text: str) -> None:
                    r = await c.call_tool("update", {"id": e["id"], "expected": e["version"], "text": text})  # type: ignore[attr-defined]
                    results.append((bool(r.is_error), (r.structured_content or {}).get("error", {}).get("code", "")))

                async with anyio.create_task_group() as tg:
                    tg.start_soon(edit, a, "The build runs on Node 22.")
                    tg.start_soon(edit, b, "The build runs on Node 24.")
                assert sorted(results) == [(False, ""), (True, "conflict")]
                code, _ = await refusal(a, "read", id="no-such-memory")
                assert code == "not_found"
        run(main)


def test_a_note_edited_by_hand_is_found_while_the_server_runs(root):
    with http_serving(root) as s:
        async def main() -> None:
            async with http_connect(s) as c:
                await a_hand_edit_is_found(c, root)
        run(main)


# --------------------------------------------------------------------------- stopping

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_it_cleanly_and_the_index_is_saved(root, sig):
    s = http_start(root)
    snapshot = root / "_system" / "cache" / "index.bin"

    async def main() -> None:
        async with http_connect(s) as c:
            await call(c, "remember", text="Signals stop the server between requests.")
    run(main)
    snapshot.unlink(missing_ok=True)
    code, err = s.stop(sig)
    assert code == 0 and "Traceback" not in err, err
    assert snapshot.exists()  # the root was closed (its view saved), not left by a killed process
    with Repository(root) as repo:
        assert len(repo) == 1 and repo.check() == []


def test_a_write_in_flight_when_it_is_stopped_finishes(root):
    """The write waits for the root's lock (held here) when SIGTERM comes;
    the server lets it finish before it exits."""
    s = http_start(root)
    async def main() -> None:
        async with http_connect(s) as c:
            await call(c, "recall", query="warm up")  # the root is open
            release = take_the_lock(root, hold=30)
            async with anyio.create_task_group() as tg:
                tg.start_soon(c.call_tool, "remember", {"text": "written while the server stopped"})
                await anyio.sleep(1.0)  # the request reaches the server, whose write waits for the lock
                assert not list((root / "shallow").glob("*.md"))
                s.proc.send_signal(signal.SIGTERM)
                threading.Timer(1.0, release.set).start()
                tg.cancel_scope.cancel()

    run(main)
    code, err = s.stop()
    assert code == 0, err
    with Repository(root) as repo:
        assert [e.text.strip() for e in repo.list()] == ["written while the server stopped"]
        assert repo.check() == []


def test_the_modern_protocol_works_too(root):
    """``mode="auto"``: the SDK's client discovers the 2026 protocol (no
    handshake) and falls back; the same tools either way."""
    with http_serving(root) as s:
        async def main() -> None:
            async with http_connect(s, mode="auto") as c:
                _, e = await call(c, "remember", text="Auto mode reaches the same tools.")
                _, got = await call(c, "read", id=e["id"])
                assert got["id"] == e["id"]
        run(main)


def test_a_shared_root_is_read_through_the_http_server_too(tmp_path):
    mine, team = tmp_path / "mine", tmp_path / "team"
    with Repository(team) as repo:
        tid = repo.add("The staging cluster is called kestrel; deploys to it need two reviews.", kind="fact").id
    Repository(mine).close()
    before = {p.relative_to(team).as_posix(): p.read_bytes() for p in team.rglob("*") if p.is_file()}
    with http_serving(mine, "--shared", f"crew={team}") as s:
        async def main() -> None:
            async with http_connect(s) as c:
                _, data = await call(c, "recall", query="kestrel")
                assert [(h.get("root"), h["id"]) for h in data["hits"]] == [("crew", tid)]
                _, data = await call(c, "remember", text="kestrel has three nodes.")
                assert (mine / data["path"]).exists()
        run(main)
    assert {p.relative_to(team).as_posix(): p.read_bytes() for p in team.rglob("*") if p.is_file()} == before
