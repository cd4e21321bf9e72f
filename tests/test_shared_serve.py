"""``sediment serve --shared``: the MCP tools over a private root with a team's
root read through it, through the SDK's own client over stdio (a real
server process)."""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("mcp")

from mcp import Client, StdioServerParameters  # noqa: E402

from _mcp import PROJECT, call, run  # noqa: E402
from sediment import Repository  # noqa: E402


def _tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_serve_with_a_shared_root_recalls_from_both_and_reads_the_shared_one_by_label(tmp_path):
    mine, team = tmp_path / "mine", tmp_path / "team"
    with Repository(team) as repo:
        tid = repo.add("The staging cluster is called kestrel; deploys to it need two reviews.", kind="fact").id
    with Repository(mine) as repo:
        mid = repo.add("My kestrel kubeconfig is in the password manager.", kind="fact").id
    before = _tree(team)
    path = os.pathsep.join(p for p in (str(PROJECT), os.environ.get("PYTHONPATH", "")) if p)
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "sediment", "serve", "--wait", "10", "--shared", f"crew={team}"],
                                   env={"SEDIMENT_ROOT": str(mine), "PYTHONPATH": path})

    async def main() -> None:
        async with Client(params, mode="legacy") as c:
            text, data = await call(c, "recall", query="kestrel")
            assert {(h.get("root"), h["id"]) for h in data["hits"]} == {("crew", tid), (None, mid)}
            assert f"crew:{tid}" in text
            text, _ = await call(c, "read", id=f"crew:{tid}")
            assert "two reviews" in text
            _, data = await call(c, "context", query="kestrel staging cluster reviews")
            assert ("crew", tid) in {(i["root"], i["id"]) for i in data["items"]}
            _, data = await call(c, "remember", text="kestrel has three nodes.")
            assert data["id"] in (mine / data["path"]).read_text()
    run(main)
    assert _tree(team) == before  # searched, read, recalled and remembered: not one byte of the team's root
    with Repository(mine) as repo:
        assert repo.strength(mid).recalls == 1
