"""The ``sediment`` command.

Run in-process through ``sediment.cli.main.main`` (fast) and once as a real
``python -m sediment`` subprocess. Contract: help for every subcommand, README
mentions each, ``--json`` prints JSON, exit codes 0 ok / 1 library error
(``error: <code>: <message>`` on stderr) / 2 usage, ``--root`` and
``$SEDIMENT_ROOT``.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sediment.cli.main import main

from _cli import cli

REPO_DIR = Path(__file__).resolve().parents[1]
README = REPO_DIR / "README.md"
REQUIRED = ["init", "add", "get", "list", "search", "move", "archive", "purge", "check", "recover", "stats"]
ERROR_LINE = re.compile(r"^error: [a-z_]+: \S.*$")



def cli_json(capsys, *args: str):
    code, out, err = cli(capsys, *args)
    assert code == 0, (args, out, err)
    return json.loads(out)


def listed_commands(capsys) -> list[str]:
    code, out, _ = cli(capsys, "--help")
    assert code == 0
    return re.findall(r"^    ([a-z][a-z0-9-]*)(?=\s|$)", out, re.MULTILINE)


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.delenv("SEDIMENT_ROOT", raising=False)
    r = tmp_path / "mem"
    return r


# --------------------------------------------------------------------------- help


def test_top_level_help_lists_every_required_command(capsys):
    names = listed_commands(capsys)
    assert set(REQUIRED) <= set(names), names
    code, out, _ = cli(capsys, "--help")
    assert "--root" in out and "--json" in out and "SEDIMENT_ROOT" in out


def _assert_help(capsys, name: str) -> None:
    code, out, err = cli(capsys, name, "--help")
    assert code == 0, (name, err)
    assert out.startswith(f"usage: sediment {name}"), out
    blocks = [b.strip() for b in out.split("\n\n") if b.strip()]
    description = blocks[1] if len(blocks) > 1 else ""
    assert not description.startswith(("positional arguments", "options")), \
        f"`sediment {name} --help` has no description:\n{out}"
    assert len(description.split()) >= 3, description


@pytest.mark.parametrize("name", REQUIRED)
def test_required_subcommand_has_help(capsys, name):
    _assert_help(capsys, name)


def test_every_listed_subcommand_has_help(capsys):
    for name in listed_commands(capsys):
        _assert_help(capsys, name)


@pytest.mark.xfail(not README.exists(), reason="README.md is not written yet", strict=True)
def test_every_subcommand_is_mentioned_in_readme(capsys):
    text = README.read_text(encoding="utf-8")
    missing = [name for name in listed_commands(capsys) + REQUIRED
               if not re.search(rf"(`|sediment\s+(?:--?\S+\s+(?:\S+\s+)?)*){re.escape(name)}\b", text)]
    assert not missing, f"README.md does not mention: {', '.join(sorted(set(missing)))}"


# --------------------------------------------------------------------------- --json


def test_json_output_of_every_command(capsys, root):
    r = str(root)
    init = cli_json(capsys, "--root", r, "--json", "init")
    assert isinstance(init, dict) and root.is_dir()

    a = cli_json(capsys, "--root", r, "--json", "add", "Use PKCE on mobile clients.", "--title", "PKCE",
                 "--room", "auth", "--tag", "auth", "--tag", "mobile,oauth", "--kind", "rule", "--value", "0.8")
    assert a["title"] == "PKCE" and a["kind"] == "rule" and a["tags"] == ["auth", "mobile", "oauth"]
    assert (root / a["path"]).is_file() and a["path"].startswith("shallow/auth/")
    b = cli_json(capsys, "--root", r, "add", "Deploys go through staging first.", "--title", "staging",
                 "--json")  # --json after the subcommand too
    c = cli_json(capsys, "--root", r, "--json", "add", "A mistaken note.", "--title", "mistake")

    got = cli_json(capsys, "--root", r, "--json", "get", a["id"])
    assert got["id"] == a["id"] and "PKCE" in got["body"]
    assert cli_json(capsys, "--root", r, "--json", "get", a["name"])["id"] == a["id"]

    listed = cli_json(capsys, "--root", r, "--json", "list")
    assert {e["id"] for e in listed} == {a["id"], b["id"], c["id"]}
    assert [e["id"] for e in cli_json(capsys, "--root", r, "--json", "list", "--tag", "mobile")] == [a["id"]]
    assert [e["id"] for e in cli_json(capsys, "--root", r, "--json", "list", "--room", "auth")] == [a["id"]]
    assert cli_json(capsys, "--root", r, "--json", "list", "--layer", "bedrock") == []

    hits = cli_json(capsys, "--root", r, "--json", "search", "PKCE mobile")
    assert hits and hits[0]["id"] == a["id"] and isinstance(hits[0]["score"], (int, float))
    assert cli_json(capsys, "--root", r, "--json", "search", "zzzyyyxxx") == []

    moved = cli_json(capsys, "--root", r, "--json", "move", a["id"], "sediment")
    assert moved["path"] == f"sediment/auth/{a['name']}.md" and (root / moved["path"]).is_file()
    arch = cli_json(capsys, "--root", r, "--json", "archive", b["id"], "--reason", "obsolete")
    assert arch["layer"] == "archive" and arch["status"] == "archived"
    purged = cli_json(capsys, "--root", r, "--json", "purge", c["id"], "--confirm")
    assert purged["status"] == "purged" and purged["path"].startswith("archive/")

    problems = cli_json(capsys, "--root", r, "--json", "check")
    assert isinstance(problems, list)
    rec = cli_json(capsys, "--root", r, "--json", "recover")
    assert isinstance(rec, dict)
    stats = cli_json(capsys, "--root", r, "--json", "stats")
    assert stats["memories"] == 3


def test_text_output_is_readable(capsys, root):
    r = str(root)
    cli(capsys, "--root", r, "init")
    code, out, err = cli(capsys, "--root", r, "add", "Remember the staging URL.", "--title", "staging url")
    assert code == 0 and err == ""
    eid = out.split()[1]
    code, out, _ = cli(capsys, "--root", r, "get", eid)
    assert code == 0 and "staging url" in out and "Remember the staging URL." in out
    code, out, _ = cli(capsys, "--root", r, "search", "staging")
    assert code == 0 and "staging url" in out


def test_add_reads_stdin(capsys, root, monkeypatch):
    r = str(root)
    cli(capsys, "--root", r, "init")
    monkeypatch.setattr(sys, "stdin", io.StringIO("text from a pipe\nsecond line\n"))
    e = cli_json(capsys, "--root", r, "--json", "add", "-", "--title", "piped")
    assert e["body"].startswith("text from a pipe\nsecond line")


def test_chinese_through_the_cli(capsys, root):
    r = str(root)
    cli(capsys, "--root", r, "init")
    e = cli_json(capsys, "--root", r, "--json", "add", "移动端登录用 PKCE，不再下发 client secret。",
                 "--title", "用 PKCE 代替 client secret", "--tag", "移动端")
    assert e["tags"] == ["移动端"]
    hits = cli_json(capsys, "--root", r, "--json", "search", "登录")
    assert [h["id"] for h in hits] == [e["id"]]


# --------------------------------------------------------------------------- exit codes


def test_library_error_exits_1_with_code_and_message(capsys, root):
    r = str(root)
    cli(capsys, "--root", r, "init")
    e = cli_json(capsys, "--root", r, "--json", "add", "keep me", "--title", "keep")
    cases = [
        (("get", "NO-SUCH-ID"), "not_found"),
        (("purge", e["id"]), "policy"),  # no --confirm
        (("move", e["id"], "nowhere"), "invalid"),
        (("add", "x", "--room", "../outside"), "unsafe_path"),
        (("archive", "NO-SUCH-ID", "--reason", "r"), "not_found"),
    ]
    for args, code_name in cases:
        code, out, err = cli(capsys, "--root", r, *args)
        assert code == 1, (args, out, err)
        lines = err.strip().splitlines()
        assert lines and ERROR_LINE.match(lines[-1]), (args, err)
        assert lines[-1].startswith(f"error: {code_name}: "), (args, err)
        assert out == ""
        # with --json the error is also printed as JSON on stdout
        code, out, err = cli(capsys, "--root", r, "--json", *args)
        assert code == 1
        data = json.loads(out)
        assert data["error"]["code"] == code_name and data["error"]["message"]
        assert err.strip().splitlines()[-1].startswith(f"error: {code_name}: ")
    # nothing was changed by the failed calls
    assert cli_json(capsys, "--root", r, "--json", "get", e["id"])["path"] == e["path"]
    assert not (root.parent / "outside").exists()


def test_invalid_policy_file_is_a_clear_error(capsys, root):
    r = str(root)
    cli(capsys, "--root", r, "init")
    pol = root / "_system" / "policy.yaml"
    pol.write_text(pol.read_text(encoding="utf-8").replace("lock_timeout_seconds: 10.0",
                                                            "lock_timeout_seconds: soon"), encoding="utf-8")
    code, out, err = cli(capsys, "--root", r, "list")
    assert code == 1
    assert err.strip().startswith("error: policy_file: ") and "lock_timeout_seconds" in err


@pytest.mark.parametrize("args", [
    [],
    ["frobnicate"],
    ["get"],
    ["move", "some-id"],
    ["archive", "some-id"],  # --reason is required
    ["add", "x", "--value", "high"],
    ["list", "--no-such-option"],
    ["search"],
    ["--json"],
], ids=["nothing", "unknown-command", "get-no-id", "move-no-layer", "archive-no-reason", "value-not-number",
        "unknown-option", "search-no-query", "only-json"])
def test_usage_errors_exit_2(capsys, root, args):
    code, out, err = cli(capsys, "--root", str(root), *args)
    assert code == 2, (args, out, err)
    assert "usage:" in err
    assert not root.exists(), "a usage error must not create the root"


def test_read_commands_do_not_create_a_missing_root(capsys, root):
    for args in (["list"], ["search", "x"], ["get", "x"], ["stats"], ["check"]):
        code, out, err = cli(capsys, "--root", str(root), *args)
        assert code == 1, (args, out, err)
        assert ERROR_LINE.match(err.strip().splitlines()[-1])
        assert not root.exists()


def test_check_exit_code(capsys, root):
    r = str(root)
    cli(capsys, "--root", r, "init")
    cli(capsys, "--root", r, "add", "fine", "--title", "fine")
    assert cli(capsys, "--root", r, "check")[0] == 0
    (root / "shallow" / "broken.md").write_text("---\nid: [broken\n---\nx\n", encoding="utf-8")
    code, out, err = cli(capsys, "--root", r, "check")
    assert code == 1 and "shallow/broken.md" in out
    code, out, err = cli(capsys, "--root", r, "--json", "check")
    assert code == 1 and any(p["path"] == "shallow/broken.md" for p in json.loads(out))


# --------------------------------------------------------------------------- root selection


def test_root_option_and_environment(capsys, tmp_path, monkeypatch):
    env_root, opt_root = tmp_path / "from-env", tmp_path / "from-option"
    monkeypatch.setenv("SEDIMENT_ROOT", str(env_root))
    assert cli(capsys, "init")[0] == 0
    e = cli_json(capsys, "--json", "add", "goes to the env root", "--title", "env")
    assert (env_root / e["path"]).is_file()
    assert cli(capsys, "--root", str(opt_root), "init")[0] == 0
    o = cli_json(capsys, "--root", str(opt_root), "--json", "add", "goes to the option root", "--title", "opt")
    assert (opt_root / o["path"]).is_file() and not (env_root / o["path"]).exists()
    assert [x["id"] for x in cli_json(capsys, "--json", "list")] == [e["id"]]
    # --root is accepted after the subcommand as well
    assert [x["id"] for x in cli_json(capsys, "list", "--root", str(opt_root), "--json")] == [o["id"]]


def test_default_root_is_memory_root_in_the_current_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("SEDIMENT_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, "init")[0] == 0
    assert (tmp_path / "memory_root" / "shallow").is_dir()
    e = cli_json(capsys, "--json", "add", "default root", "--title", "default")
    assert (tmp_path / "memory_root" / e["path"]).is_file()


# --------------------------------------------------------------------------- a real process


def test_python_dash_m_sediment(tmp_path):
    root = tmp_path / "mem"
    assert main(["--root", str(root), "init"]) == 0
    # the code under test, not whatever copy of sediment the interpreter has installed
    env = {**os.environ, "SEDIMENT_ROOT": str(root), "PYTHONPATH": str(REPO_DIR)}
    ok = subprocess.run([sys.executable, "-m", "sediment", "--json", "add", "written by a subprocess",
                         "--title", "subprocess note"], cwd=tmp_path, env=env, capture_output=True,
                        text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    e = json.loads(ok.stdout)
    assert (root / e["path"]).read_text(encoding="utf-8").endswith("written by a subprocess\n")

    bad = subprocess.run([sys.executable, "-m", "sediment", "get", "NO-SUCH-ID"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert ERROR_LINE.match(bad.stderr.strip().splitlines()[-1]), bad.stderr
    assert bad.stderr.strip().splitlines()[-1].startswith("error: not_found: ")
