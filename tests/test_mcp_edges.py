"""Where an agent meets ``sediment serve`` (issue 25): reading a long note in
parts always ends, every refusal of a call's arguments is a tool error of the
documented shape, what was purged is shown only when asked for, and a
request the SDK cannot parse is answered. The MCP SDK's own client (or raw
JSON-RPC lines) over stdio, against a real server process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from _mcp import a_hand_edit_is_found, call, connect, raw, refusal, run  # noqa: E402

from sediment import LAYERS, Repository  # noqa: E402
from sediment.cli.main import main as cli  # noqa: E402
from sediment.model.policy import DEFAULTS  # noqa: E402


@pytest.fixture
def root(tmp_path: Path) -> Path:
    Repository(tmp_path / "root").close()
    return tmp_path / "root"


# --------------------------------------------------------------------------- read: item 2

def _long_text() -> str:
    lines, n = [], 0
    while sum(map(len, lines)) < 14_780:
        lines.append(f"{n:05d} the release checklist says: tag, build, sign, publish — 发布前先签名。\n")
        n += 1
    return "".join(lines)[:14_780]


async def _read_all(c, id: str, budget: int) -> tuple[str, int]:
    """The body read part by part with this budget; how many reads it took."""
    parts, start, reads = [], 0, 0
    while True:
        text, data = await call(c, "read", id=id, start=start, budget=budget)
        reads += 1
        assert len(text) <= budget
        parts.append(data["body"])
        if data["end"] == data["length"]:
            return "".join(parts), reads
        assert data["end"] > start, f"read at {start} with budget {budget} gave nothing: {text!r}"
        assert text.endswith(f"read again with start={data['end']} for more]")
        start = data["end"]


def test_reading_a_long_note_in_small_parts_ends_and_gives_back_its_text(root):
    tags = [f"long-tag-{i}-" + "x" * 40 for i in range(6)]  # the fields alone are over 300 characters
    with Repository(root) as repo:
        e = repo.add(_long_text(), title="The release checklist, " + "in full detail " * 8, tags=tags, kind="fact")
        assert len(e.body) == 14_781  # (with its final newline)

    async def main() -> None:
        async with connect(root) as c:
            for budget in (200, 300, 1000):
                body, reads = await _read_all(c, e.id, budget)
                assert body == e.body
                assert reads <= len(e.body) // 50 + 1  # every read gave at least 50 characters
            # the first read of a roomy budget shows the fields; a small one gives way to the text
            text, _ = await call(c, "read", id=e.id, budget=2000)
            assert "tags #long-tag-0-" in text and "path shallow/" in text
            code, message = await refusal(c, "read", id=e.id, start=99_999)
            assert code == "invalid" and message.startswith(f"start 99999 is past the end of {e.id}: its text "
                                                            f"has {len(e.body)} characters")
            text, data = await call(c, "read", id=e.id, start=len(e.body), budget=200)  # the very end: empty
            assert data["body"] == "" and text.endswith(f"[characters {len(e.body)}–{len(e.body)} of "
                                                        f"{len(e.body)}]")
    run(main)


def test_a_budget_too_small_for_a_note_is_refused_with_the_budget_it_needs(root):
    long_id = "person-" + "x" * 300  # a person's own id, longer than the smallest budget
    (root / "shallow" / "theirs.md").write_text(
        f"---\nid: {long_id}\ntitle: theirs\ncreated: 2026-01-01T00:00:00+00:00\n---\n" + "word " * 400,
        encoding="utf-8")

    async def main() -> None:
        async with connect(root) as c:
            code, message = await refusal(c, "read", id=long_id, budget=200)
            assert code == "invalid" and message.startswith(f"budget 200 is too small to read {long_id}: at least ")
            need = int(message.split("at least ")[1].split()[0])
            body, _ = await _read_all(c, long_id, need)
            with Repository(root) as repo:
                assert body == repo.get(long_id).body
    run(main)


# --------------------------------------------------------------------------- arguments: item 3

def test_argument_errors_are_invalid_tool_errors_that_name_the_argument(root):
    with Repository(root) as repo:
        e = repo.add("Deploys go through ArgoCD.", kind="fact")
    cases = [("read", {}, "id is required"),
             ("touch", {"id": e.id, "outcome": "maybe"}, "outcome: input should be 'confirm' or 'refute', "
                                                        "not 'maybe'"),
             ("recall", {"query": "deploy", "limit": "abc"}, "limit: input should be a valid integer"),
             ("recent", {"layer": "attic"}, "layer: input should be 'shallow', 'sediment', 'bedrock' or 'archive'"),
             ("remember", {"text": ["not", "text"]}, "text: input should be a valid string"),
             ("forget", {"id": e.id, "reason": "x", "confirm": "perhaps"}, "confirm: input should be a valid "
                                                                          "boolean"),
             ("read", {"id": e.id, "strat": 10}, "strat: is not a parameter of read")]

    async def main() -> None:
        async with connect(root) as c:
            for tool, args, said in cases:
                code, message = await refusal(c, tool, **args)
                assert code == "invalid" and message.startswith(f"{tool}: ") and said in message, message
                assert "pydantic" not in message and "http" not in message
        with Repository(root) as repo:  # nothing was done by any of them
            assert repo.strength(e.id).confirms == 0 and repo.get(e.id).status == "active"
    run(main)


def test_every_parameter_is_described_and_every_choice_is_an_enum(root):
    async def main() -> None:
        async with connect(root) as c:
            tools = {t.name: t.input_schema["properties"] for t in (await c.list_tools()).tools}
        undescribed = [f"{t}.{p}" for t, props in tools.items() for p, schema in props.items()
                       if not schema.get("description")]
        assert undescribed == []
        choices = {"kind": set(DEFAULTS.kinds), "outcome": {"confirm", "refute"},
                   "status": {"active", "superseded", "archived", "purged"}}
        for tool, props in tools.items():
            for name, allowed in choices.items():
                if name in props:
                    assert set(props[name].get("enum", ())) == allowed, (tool, name)
            if "layer" in props:
                assert props["layer"].get("enum") and set(props["layer"]["enum"]) <= set(LAYERS), tool
        assert {"kind", "outcome", "layer", "status"} <= {p for props in tools.values() for p in props}
    run(main)


# --------------------------------------------------------------------------- purged and erased: item 4

def test_what_was_purged_is_shown_only_when_asked_for_and_restore_undoes_a_forget(root, capsys):
    async def main() -> dict[str, dict]:
        async with connect(root) as c:
            _, a = await call(c, "remember", text="The staging password is hunter2.", title="staging password",
                              kind="fact")
            _, b = await call(c, "remember", text="The API key is sk-live-123.", title="api key", kind="fact")
            _, kept = await call(c, "remember", text="Deploys go through ArgoCD.", kind="fact")
            await call(c, "forget", id=a["id"], reason="a secret", purge=True, confirm=True)
            text, gone = await call(c, "forget", id=b["id"], reason="a secret", erase=True, confirm=True)
            assert text.startswith(f"erased {b['id']}") and gone["status"] == "purged"
            _, recent = await call(c, "recent")
            assert [m["id"] for m in recent["memories"]] == [kept["id"]]
            _, purged = await call(c, "recent", status="purged")
            assert {m["id"] for m in purged["memories"]} == {a["id"], b["id"]}
            text, note = await call(c, "read", id=a["id"])
            assert "hunter2" not in text and note["body"] is None
            assert "purged (a secret): its text is not shown; restore with confirm=true brings it back" in text
            text, _ = await call(c, "read", id=b["id"])
            assert "sk-live" not in text and "erased (a secret): only its tombstone is left" in text
            with pytest.raises(Exception, match="purged"):
                await c.read_resource(f"sediment://memory/{a['id']}")
            # restore undoes a forget: a purge with confirm, an archive without
            code, message = await refusal(c, "restore", id=a["id"])
            assert code == "policy" and "confirm" in message
            text, back = await call(c, "restore", id=a["id"], confirm=True)
            assert text.startswith(f"restored {a['id']}") and (back["status"], back["layer"]) == ("active",
                                                                                                  "shallow")
            assert "hunter2" in (await call(c, "read", id=a["id"]))[0]
            await call(c, "forget", id=kept["id"], reason="moved to Flux")
            _, back = await call(c, "restore", id=kept["id"], layer="sediment")
            assert (back["status"], back["layer"]) == ("active", "sediment")
            assert await refusal(c, "restore", id=b["id"], confirm=True) == (
                "invalid", f"{gone['path']} was erased: only its tombstone is left")
            return {"a": a, "b": b}

    made = run(main)
    # the command line's list, like the library's, shows what was purged only when asked for by status
    capsys.readouterr()
    assert cli(["--root", str(root), "--json", "list"]) == 0
    listed = {e["id"] for e in json.loads(capsys.readouterr().out)}
    assert made["b"]["id"] not in listed and made["a"]["id"] in listed  # a was restored
    assert cli(["--root", str(root), "--json", "list", "--status", "purged"]) == 0
    assert [e["id"] for e in json.loads(capsys.readouterr().out)] == [made["b"]["id"]]


def test_remember_takes_an_event_and_evidence(root):
    async def main() -> None:
        async with connect(root) as c:
            _, old = await call(c, "remember", text="Deploys go through ArgoCD.", kind="fact", event="deploy-tool",
                                evidence=["the runbook says so"])
            _, new = await call(c, "remember", text="Actually, deploys go through Flux since March.", kind="fact",
                                event="deploy-tool")
            text, _ = await call(c, "read", id=old["id"])
            assert "## Evidence\n- the runbook says so" in text
        with Repository(root) as repo:
            was = repo.get(old["id"])
            assert was.status == "superseded" and was.meta["superseded_by"] == [f"[[{new['name']}]]"]
            assert repo.get(new["id"]).meta["event"] == "deploy-tool"
    run(main)


# --------------------------------------------------------------------------- unreadable requests: item 6

def test_a_request_holding_a_lone_surrogate_is_answered_with_an_error(root):
    lines = [json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call",  # json.dumps escapes it: \ud800
                         "params": {"name": "recall", "arguments": {"query": "deploy \ud800"}}}),
             json.dumps({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
                         "params": {"uri": "sediment://memory/\udfff"}}),
             '{"jsonrpc": "2.0", "id": 4, "method": "tools/list"',  # torn: not JSON
             json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                         "params": {"name": "recall", "arguments": {"query": "deploy"}}})]
    answers = raw(root, lines, answers={2, 3, None, 5})
    assert "\\ud800" in lines[0]
    tool_error = answers[2]["result"]
    assert tool_error["isError"] is True and tool_error["structuredContent"]["error"] == {
        "code": "invalid", "message": "recall: arguments.query holds a lone surrogate (\\ud800), which is not "
                                      "text: send it as UTF-8"}
    refused = answers[3]["error"]
    assert refused["code"] == -32602 and "params.uri holds a lone surrogate (\\udfff)" in refused["message"]
    assert answers[None]["error"]["code"] == -32700
    assert answers[5]["result"]["isError"] is False  # and the server goes on answering


def test_a_note_edited_by_hand_is_found_while_the_stdio_server_runs(root):
    # a person edits a note in their editor while the agent's session goes on: the stdio
    # server saw other processes' writes (the journal) but a hand edit only at its next start
    async def main() -> None:
        async with connect(root) as c:
            await a_hand_edit_is_found(c, root)
    run(main)
