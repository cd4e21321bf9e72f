"""What a person at the command line can rely on.

* ``sediment search`` is a person looking something up: it records no recall
  (so it promotes nothing) unless ``--record`` is given (DESIGN.md, "What
  counts as a recall").
* Output piped into a reader that stops early (``sediment list | head -1``)
  ends quietly: no traceback, exit 141 (128 + SIGPIPE, what a tool killed by
  SIGPIPE reports).
* ``stats`` is a readable table (JSON with ``--json``) with usage figures and
  the time of the last metabolize report.
* Errors name the flag a person typed (``--confirm``), not the library's
  parameter (``confirm=True``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sediment import PolicyError, Repository
from sediment.cli.main import main

from _cli import cli

REPO_DIR = Path(__file__).resolve().parents[1]
EPIPE_EXIT = 141



def cli_json(capsys, *args: str):
    code, out, err = cli(capsys, "--json", *args)
    assert code == 0, (args, out, err)
    return json.loads(out)


@pytest.fixture
def root(tmp_path, monkeypatch) -> Path:
    monkeypatch.delenv("SEDIMENT_ROOT", raising=False)
    r = tmp_path / "mem"
    assert main(["--root", str(r), "init"]) == 0
    return r


def recalls(root: Path) -> dict[str, int]:
    repo = Repository(root)
    try:
        return {k: u.recalls for k, u in repo.usage.load().items() if u.recalls}
    finally:
        repo.close()


# --------------------------------------------------------------------------- 18. search records nothing


def test_cli_search_records_no_recall_unless_asked(capsys, root):
    r = str(root)
    e = cli_json(capsys, "--root", r, "add", "kumquat harvest notes", "--title", "kumquats")
    assert [h["id"] for h in cli_json(capsys, "--root", r, "search", "kumquat")] == [e["id"]]
    code, out, _ = cli(capsys, "--root", r, "search", "kumquat")
    assert code == 0 and "kumquats" in out
    assert recalls(root) == {}, "a person looking something up promoted it"
    assert [h["id"] for h in cli_json(capsys, "--root", r, "search", "kumquat", "--no-record")] == [e["id"]]
    assert recalls(root) == {}

    assert [h["id"] for h in cli_json(capsys, "--root", r, "search", "kumquat", "--record")] == [e["id"]]
    assert recalls(root) == {e["id"]: 1}
    # the library's default is unchanged: an agent's search is a recall (once a
    # day: the memory recalled above counts nothing more today, the new one counts)
    jam = cli_json(capsys, "--root", r, "add", "kumquat jam recipe", "--title", "jam")
    repo = Repository(root)
    repo.search("kumquat")
    repo.close()
    assert recalls(root) == {e["id"]: 1, jam["id"]: 1}


def test_search_help_mentions_record(capsys):
    code, out, _ = cli(capsys, "search", "--help")
    assert code == 0 and "--record" in out and "--no-record" in out


# --------------------------------------------------------------------------- 19. broken pipes


def _fill(root: Path, n: int, body: str = "x") -> None:
    """Notes written as a person would (files in a layer folder): fast."""
    for i in range(n):
        title = f"note {i:04d} " + "padding " * 30
        (root / "shallow" / f"n{i:04d}.md").write_text(
            f"---\nid: PIPE{i:06d}\ntitle: {title.strip()}\ncreated: '2026-01-01T00:00:00+00:00'\n"
            f"kind: fact\n---\n{body}\n", encoding="utf-8")


def _head_1(root: Path, *args: str) -> tuple[int, str, str]:
    """``sediment ARGS | head -1``: read one line, then close the pipe."""
    env = {**os.environ, "PYTHONPATH": str(REPO_DIR), "SEDIMENT_ROOT": str(root)}
    proc = subprocess.Popen([sys.executable, "-m", "sediment", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=root.parent)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline().decode("utf-8")
    proc.stdout.close()
    err = proc.stderr.read().decode("utf-8")
    proc.stderr.close()
    return proc.wait(timeout=120), first, err


@pytest.mark.parametrize("args", [["list"], ["--json", "list"], ["get", "PIPE000000"]],
                         ids=["list", "json-list", "get"])
def test_output_into_a_closed_pipe_ends_quietly(root, args):
    _fill(root, 400)  # far more output than a pipe buffers
    if args[0] == "get":
        (root / "shallow" / "n0000.md").write_text(
            "---\nid: PIPE000000\ntitle: big\ncreated: '2026-01-01T00:00:00+00:00'\nkind: fact\n---\n"
            + "a long line of the body\n" * 20000, encoding="utf-8")
    code, first, err = _head_1(root, *args)
    assert first.strip(), "the reader got its first line"
    assert "Traceback" not in err and "BrokenPipeError" not in err and "Exception ignored" not in err, err
    assert err == "", err
    assert code == EPIPE_EXIT


# --------------------------------------------------------------------------- 20. stats


def test_stats_is_a_readable_table_with_usage(capsys, root):
    r = str(root)
    a = cli_json(capsys, "--root", r, "add", "kumquat one", "--title", "one", "--room", "fruit", "--kind", "fact")
    b = cli_json(capsys, "--root", r, "add", "kumquat two", "--title", "two", "--kind", "rule")
    cli_json(capsys, "--root", r, "search", "kumquat", "--record")  # 2 recalls
    cli_json(capsys, "--root", r, "touch", a["id"], "confirm")
    cli_json(capsys, "--root", r, "touch", b["id"], "refute")

    s = cli_json(capsys, "--root", r, "stats")
    assert s["memories"] == 2 and s["layers"]["shallow"] == 2
    assert s["usage"] == {"recalls": 2, "confirmations": 1, "refutations": 1}
    assert s["last_metabolize"] is None

    code, out, err = cli(capsys, "--root", r, "stats")
    assert code == 0 and err == ""
    assert "{" not in out and "'" not in out, f"a dict repr:\n{out}"
    rows = [line.split() for line in out.splitlines() if line.strip()]
    assert ["memories", "2"] in rows
    assert ["shallow", "2"] in rows and ["bedrock", "0"] in rows
    assert ["fruit", "1"] in rows and ["rule", "1"] in rows
    assert ["recalls", "2"] in rows and ["confirmations", "1"] in rows and ["refutations", "1"] in rows
    assert ["last", "metabolize", "never"] in rows
    # columns line up: every value of a section starts in the same column
    starts = {line.index("2") for line in out.splitlines() if line.split()[:1] in (["shallow"], ["recalls"])}
    assert len(starts) == 1, out

    plan = cli_json(capsys, "--root", r, "metabolize", "--apply", "--confirm")
    assert plan["report"]
    s = cli_json(capsys, "--root", r, "stats")
    assert s["last_metabolize"]["report"] == plan["report"]
    assert s["last_metabolize"]["time"][:4].isdigit() and "T" in s["last_metabolize"]["time"]
    code, out, _ = cli(capsys, "--root", r, "stats")
    assert plan["report"] in out and s["last_metabolize"]["time"] in out


# --------------------------------------------------------------------------- 21c. errors name the flag


def _error(capsys, *args: str) -> str:
    code, out, err = cli(capsys, *args)
    assert code == 1, (args, out, err)
    line = err.strip().splitlines()[-1]
    code, out, _ = cli(capsys, "--json", *args)
    assert code == 1 and json.loads(out)["error"]["message"] in line, "--json says the same"
    return line


def test_errors_name_the_cli_flag(capsys, root):
    r = str(root)
    e = cli_json(capsys, "--root", r, "add", "keep me", "--title", "keep")
    msg = _error(capsys, "--root", r, "purge", e["id"])
    assert msg.startswith("error: policy: ") and "--confirm" in msg and "confirm=True" not in msg, msg

    cli_json(capsys, "--root", r, "touch", e["id"], "refute")
    msg = _error(capsys, "--root", r, "metabolize", "--apply")
    assert "--confirm" in msg and "confirm=True" not in msg, msg

    for args, flag in [(("add", "x", "--value", "2"), "--value"),
                       (("add", "x", "--layer", "nowhere"), "--layer"),
                       (("add", "x", "--title", "two\nlines"), "--title"),
                       (("search", "x", "--limit", "0"), "--limit"),
                       (("search", "x", "--since", "last tuesday"), "--since"),
                       (("metabolize", "--now", "soon"), "--now"),
                       (("strength", e["id"], "--now", "soon"), "--now")]:
        msg = _error(capsys, "--root", r, *args)
        assert f": {flag}" in msg, (args, msg)

    # a positional argument is not a flag: `move ID LAYER` keeps the word
    msg = _error(capsys, "--root", r, "move", e["id"], "nowhere")
    assert "error: invalid: layer: 'nowhere'" in msg, msg


def test_the_library_keeps_its_own_parameter_names(root):
    repo = Repository(root)
    e = repo.add("keep me", title="keep")
    with pytest.raises(PolicyError, match=r"confirm=True"):
        repo.purge(e.id)
    repo.close()
