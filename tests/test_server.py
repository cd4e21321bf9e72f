"""``sediment serve`` through the MCP SDK's own client, over a real stdio
subprocess with ``SEDIMENT_ROOT`` in its environment."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

import anyio  # noqa: E402
from _mcp import call, connect, error, run, server, take_the_lock  # noqa: E402

from sediment import Repository  # noqa: E402
from sediment.mcp.server import DESCRIPTIONS, TOOL_VERBS  # noqa: E402


@pytest.fixture
def root(tmp_path: Path) -> Path:
    Repository(tmp_path / "root").close()
    return tmp_path / "root"


# --------------------------------------------------------------------------- the tool list

def test_lists_a_compact_tool_set_with_instructions(root):
    async def main() -> None:
        async with connect(root) as c:
            assert "context" in (c.instructions or "") and "remember" in (c.instructions or "")
            tools = {t.name: t for t in (await c.list_tools()).tools}
            assert set(tools) == set(TOOL_VERBS) == set(DESCRIPTIONS)
            assert sum(len(t.description or "") for t in tools.values()) < 3_000
            # the whole listing, schemas too, stays a small part of an agent's context (~3,000 tokens,
            # with every parameter described and every choice an enum)
            listing = json.dumps([t.model_dump(mode="json", by_alias=True, exclude_none=True)
                                  for t in tools.values()])
            assert len(listing) < 12_000
            assert tools["recall"].annotations.read_only_hint is True
            assert tools["forget"].annotations.destructive_hint is True
            assert tools["remember"].annotations.read_only_hint is False
            assert all("budget" in t.input_schema["properties"] for t in tools.values())
            writes = {n for n, t in tools.items() if not t.annotations.read_only_hint} - {"patrol"}
            assert all("request_id" in tools[n].input_schema["properties"] for n in writes)
    run(main)


# --------------------------------------------------------------------------- every tool

def test_every_core_tool_answers_with_ids_and_structured_content(root):
    async def main() -> None:
        async with connect(root) as c:
            text, a = await call(c, "remember", text="Deploys go through ArgoCD, never by hand.",
                                 title="Deploy tool", kind="fact", tags=["deploy"])
            assert text.startswith("remembered " + a["id"]) and a["kind"] == "fact"
            _, b = await call(c, "remember", text="Deploys go through Flux since March.", title="Deploy tool 2",
                              kind="fact")
            text, found = await call(c, "recall", query="deploys argocd")
            assert a["id"] in text and found["hits"][0]["id"] == a["id"]
            text, note = await call(c, "read", id=a["id"])
            assert "never by hand" in text and note["version"] == a["version"]
            text, part = await call(c, "read", id=a["id"], start=10, budget=300)
            assert len(text) <= 300 and "[characters 10–" in text
            assert part["body"] == "Deploys go through ArgoCD, never by hand.\n"[10:] and part["start"] == 10
            _, up = await call(c, "update", id=a["id"], expected=note["version"], text="Deploys go through ArgoCD.")
            assert up["version"] != a["version"]
            text, _ = await call(c, "touch", id=a["id"], outcome="confirm")
            assert text.startswith("confirmed " + a["id"])
            text, _ = await call(c, "supersede", old_id=a["id"], new_id=b["id"], reason="moved to Flux")
            assert text.startswith("superseded " + a["id"]) and b["id"] in text
            text, recent = await call(c, "recent", since="2000-01-01")
            assert {m["id"] for m in recent["memories"]} == {a["id"], b["id"]}
            text, gone = await call(c, "forget", id=b["id"], reason="wrong")
            assert gone["layer"] == "archive" and text.startswith("archived")
            text, plan = await call(c, "metabolize")
            assert plan["applied"] is False
            # what the tools did is what the library sees
        with Repository(root) as repo:
            assert repo.get(a["id"]).status == "superseded" and repo.get(b["id"]).layer == "archive"
            assert repo.strength(a["id"]).confirms == 1
    run(main)


def test_context_tool(root):
    async def main() -> None:
        async with connect(root) as c:
            _, a = await call(c, "remember", text="The user prefers short answers.", kind="core")
            text, ctx = await call(c, "context", query="how to answer", budget=2000)
            assert "short answers" in text and len(text) <= 2000
            assert a["id"] in [i["id"] for i in ctx["items"]]
    run(main)


def test_about_tool(root):
    async def main() -> None:
        async with connect(root) as c:
            _, a = await call(c, "remember", text="Deploys go through ArgoCD.", kind="fact", tags=["deploy"])
            text, known = await call(c, "about", topic="deploy")
            assert text.startswith(known["summary"]) and [m["id"] for m in known["memories"]] == [a["id"]]
            assert a["name"] in text
    run(main)


def test_observe_and_working_tools(root):
    async def main() -> None:
        async with connect(root) as c:
            text, seen = await call(c, "observe", text="Remember to rotate the API keys on Friday.")
            assert text.startswith("opened 'Remember to rotate the API keys on Friday.'")
            text, state = await call(c, "working")
            assert "open: Remember to rotate the API keys on Friday." in text
            assert [i["text"] for i in state["items"]] == ["Remember to rotate the API keys on Friday."]
    run(main)


def test_patrol_tool_and_its_report_resource(root):
    async def main() -> None:
        async with connect(root) as c:
            _, a = await call(c, "remember", text="an unsorted thought")
            text, report = await call(c, "patrol")
            assert text.startswith("patrol ") and a["id"] in text and report["counts"]["inbox"] == 1
            report = await c.read_resource("sediment://patrol/latest")
            assert "No patrol report yet" not in report.contents[0].text
    run(main)


def test_answers_stay_within_the_budget_and_say_how_many_more(root):
    with Repository(root) as repo:
        for i in range(40):
            repo.add(f"release checklist item {i}: tag, build, sign and publish the release", kind="fact")

    async def main() -> None:
        async with connect(root) as c:
            text, found = await call(c, "recall", query="release checklist", limit=40, budget=1000)
            assert len(text) <= 1000
            assert found["more"] > 0 and text.endswith(f"{found['more']} more — narrow with kind, tags, room or "
                                                       "since, or a larger budget")
            assert len(found["hits"]) + found["more"] == 40
    run(main)
    # only what was shown counts as recalled
    with Repository(root) as repo:
        recalled = [i for i, u in repo.usage.load().items() if u.recalls]
        assert 0 < len(recalled) < 40


def test_recall_counts_only_hits_with_direct_evidence(root):
    # the fruit-fly note shares only 实验 with the zebrafish note, and no word with the question
    with Repository(root) as repo:
        zebrafish = repo.add("斑马鱼实验的喂食时间是早上八点", kind="fact").id
        fly = repo.add("果蝇实验的温度是二十五度", kind="fact").id
        for text in ("周末去公园跑步", "晚饭吃了一碗牛肉面", "明天要交季度报告", "猫喜欢在窗台上晒太阳"):
            repo.add(text, kind="fact")

    async def main() -> None:
        async with connect(root) as c:
            _, found = await call(c, "recall", query="斑马鱼 zebrafish")
            assert [h["id"] for h in found["hits"]] == [zebrafish, fly]  # both shown
    run(main)
    with Repository(root) as repo:
        assert {i: u.recalls for i, u in repo.usage.load().items() if u.recalls} == {zebrafish: 1}


def test_resources_memory_by_id_and_map(root):
    async def main() -> None:
        async with connect(root) as c:
            _, a = await call(c, "remember", text="Deploys go through ArgoCD.", kind="fact")
            uris = {str(r.uri) for r in (await c.list_resources()).resources}
            assert {"sediment://map", "sediment://patrol/latest"} <= uris
            got = await c.read_resource(f"sediment://memory/{a['id']}")
            assert got.contents[0].text == (root / a["path"]).read_text(encoding="utf-8")
            assert (await c.read_resource("sediment://map")).contents[0].text
    run(main)


# --------------------------------------------------------------------------- errors

def test_errors_are_tool_errors_with_the_librarys_codes(root):
    async def main() -> None:
        async with connect(root) as c:
            assert await error(c, "read", id="no-such-memory") == "not_found"
            _, a = await call(c, "remember", text="draft", title="t")
            await call(c, "update", id=a["id"], expected=a["version"], text="final")
            assert await error(c, "update", id=a["id"], expected=a["version"], text="lost") == "conflict"
            assert await error(c, "forget", id=a["id"], reason="x", purge=True) == "policy"
            assert await error(c, "recall", query="x", kind="nonsense") == "invalid"
            assert await error(c, "recall", query="x" * 3000) == "too_large"
            assert await error(c, "remember", text="x" * 1_000_001) == "too_large"
            assert await error(c, "recall", query="x", budget=5) == "invalid"
            assert await error(c, "read", id=a["id"], start=-1) == "invalid"
    run(main)


# --------------------------------------------------------------------------- request ids

def test_a_retry_with_the_same_request_id_writes_once_even_after_a_restart(root):
    async def first() -> dict[str, Any]:
        async with connect(root) as c:
            _, a = await call(c, "remember", text="written once", request_id="req-1")
            _, again = await call(c, "remember", text="written once", request_id="req-1")
            assert again == a
            assert await error(c, "remember", text="another text", request_id="req-1") == "invalid"
            # the same request twice at once (a retry while the first still runs): one confirmation
            async with anyio.create_task_group() as tg:
                for _ in range(2):
                    tg.start_soon(lambda: call(c, "touch", id=a["id"], outcome="confirm", request_id="req-2"))
            return a

    a = run(first)

    async def after_restart() -> None:
        async with connect(root) as c:
            _, again = await call(c, "remember", text="written once", request_id="req-1")
            assert again["id"] == a["id"]
    run(after_restart)
    with Repository(root) as repo:
        assert [e.id for e in repo.list()] == [a["id"]]
        assert repo.strength(a["id"]).confirms == 1


# --------------------------------------------------------------------------- concurrency

def test_two_server_processes_writing_at_once_lose_nothing(root):
    n = 12

    async def writer(tag: str, ids: list[str]) -> None:
        async with connect(root) as c:
            async with anyio.create_task_group() as tg:
                async def one(i: int) -> None:
                    _, e = await call(c, "remember", text=f"{tag} wrote note {i}", title=f"{tag} {i}",
                                      request_id=f"{tag}-{i}")
                    ids.append(e["id"])
                for i in range(n):
                    tg.start_soon(one, i)
            # each server sees the other's notes
            _, found = await call(c, "recall", query="wrote note", limit=50, budget=20_000)
            assert len(found["hits"]) >= len(ids)

    async def main() -> None:
        a: list[str] = []
        b: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(writer, "alpha", a)
            tg.start_soon(writer, "beta", b)
        assert len(set(a) | set(b)) == 2 * n
    run(main)
    with Repository(root) as repo:
        assert len(repo) == 2 * n and repo.check() == []


def test_a_client_gone_in_the_middle_of_a_write_loses_nothing(root):
    """The write is held in the middle by the root's lock (taken here); the
    client goes away; the server finishes the write before it exits."""
    async def main() -> None:
        async with connect(root) as c:
            await call(c, "recall", query="warm up")  # the root is open
            release = take_the_lock(root, hold=20)
            async with anyio.create_task_group() as tg:
                tg.start_soon(c.call_tool, "remember", {"text": "written while the client left"})
                await anyio.sleep(1.0)  # the request reaches the server, whose write waits for the lock
                assert not list((root / "shallow").glob("*.md"))
                tg.cancel_scope.cancel()  # the client gives up on the call…
            threading.Timer(1.0, release.set).start()  # (the SDK client kills a server that is not gone in 2 s)
        # …and disconnects: the server's stdin is closed while its write still waits for the lock

    run(main)
    with Repository(root) as repo:
        assert [e.text.strip() for e in repo.list()] == ["written while the client left"]
        assert repo.check() == []


def test_nothing_but_protocol_on_stdout(root):
    msgs = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
             "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
            {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
             "params": {"name": "remember", "arguments": {"text": "hello"}}}]
    p = server(root)
    out = subprocess.run([p.command, *p.args], input="".join(json.dumps(m) + "\n" for m in msgs), text=True,
                         capture_output=True, env={**os.environ, **(p.env or {})}, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines and all(json.loads(ln)["jsonrpc"] == "2.0" for ln in lines)


# --------------------------------------------------------------------------- starting at once

@pytest.fixture(scope="module")
def big_root(tmp_path_factory) -> Path:
    """A root of 20,000 small notes (written directly: a durable add each
    would take minutes), whose cold open takes seconds."""
    root = tmp_path_factory.mktemp("big") / "root"
    Repository(root).close()
    words = "deploy build release cache index query server client token login review merge 部署 发布 缓存 索引".split()
    for i in range(20_000):
        body = " ".join(words[(i * 7 + k * 3) % len(words)] for k in range(40)) + f" item{i}"
        (root / "shallow" / f"note-{i:05d}.md").write_text(
            f"---\nid: 01TEST{i:020d}\ntitle: note {i}\ncreated: 2026-01-01T00:00:00+00:00\nkind: fact\n---\n"
            f"{body}\n", encoding="utf-8")
    return root


def test_initialize_and_tools_list_are_answered_while_the_index_is_still_loading(big_root):
    shutil.rmtree(big_root / "_system" / "cache", ignore_errors=True)  # a cold open: the index is built

    async def main() -> None:
        async with connect(big_root, wait=0) as c:  # initialize answered
            tools = (await c.list_tools()).tools
            assert len(tools) == len(TOOL_VERBS)
            # the load had not finished when tools/list was answered: the call after it says so
            r = await c.call_tool("recall", {"query": "部署"})
            assert r.is_error and r.structured_content["error"]["code"] == "loading", r.content[0].text
            assert r.content[0].text.startswith("error loading: index loading")
            # input limits come before any work, loading or not
            r = await c.call_tool("remember", {"text": "x" * 1_000_001})
            assert r.structured_content["error"]["code"] == "too_large"
    run(main)
