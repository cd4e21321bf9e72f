"""The command line at its edges (issue 25, item 18), as a person's shell runs
it: ``python -m sediment`` as a subprocess, with the bytes a terminal passes,
from the folder the person stands in.

* an argument (or stdin) that is not UTF-8 is refused with an error line,
  never a traceback, and writes nothing;
* ``merge-driver`` given files that are not there fails and writes nothing;
* a path is relative to the current directory, or absolute, as in every
  command line: ``adopt /abs/path/inside/root`` and ``adopt note.md`` from
  inside a layer folder both adopt that note; a path outside the root is
  refused with the reason;
* ``update`` of a person's vault note gives the person's-note message that
  ``archive`` gives, and leaves the file as it was.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sediment import Repository

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX argv bytes")


def sediment(*args: str | bytes | Path, cwd: Path | None = None, stdin: bytes | None = None,
             ) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SEDIMENT_ROOT"}
    proc = subprocess.run([sys.executable, "-m", "sediment", *(os.fspath(a) for a in args)], cwd=cwd, env=env,
                          input=stdin, capture_output=True)
    proc.stdout, proc.stderr = proc.stdout.decode(errors="replace"), proc.stderr.decode(errors="replace")
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


@pytest.fixture
def root(tmp_path: Path) -> Path:
    r = tmp_path / "mem"
    assert sediment("--root", r, "init").returncode == 0
    return r


def files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*.md")}


# --------------------------------------------------------------------------- bytes that are not UTF-8


BAD = b"\xff\xfe half a word"


@pytest.mark.parametrize("args", [
    ("add", "--kind", "fact", BAD),
    ("add", "--kind", "fact", "--title", BAD, "a good text"),
    ("add", "--kind", "fact", "--tag", BAD, "a good text"),
    ("search", BAD),
    ("observe", BAD),
], ids=["text", "title", "tag", "search", "observe"])
def test_an_argument_that_is_not_utf8_is_refused_without_a_traceback(root, args):
    before = files(root)
    proc = sediment("--root", root, *args)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stderr.startswith("error: invalid: ") and "UTF-8" in proc.stderr, proc.stderr
    assert "\\xff\\xfe" in proc.stderr  # the bytes, as a person can read them
    assert files(root) == before
    proc = sediment("--root", root, "--json", *args)
    assert proc.returncode == 1 and json.loads(proc.stdout)["error"]["code"] == "invalid"


def test_text_on_stdin_that_is_not_utf8_is_refused_without_a_traceback(root):
    proc = sediment("--root", root, "add", "--kind", "fact", stdin=BAD)
    assert proc.returncode == 1 and proc.stderr.startswith("error: invalid: ") and "UTF-8" in proc.stderr
    assert files(root) == {}


# --------------------------------------------------------------------------- merge-driver


def test_merge_driver_with_missing_files_fails_and_writes_nothing(tmp_path):
    proc = sediment("merge-driver", "base.md", "ours.md", "theirs.md", "shallow/x.md", cwd=tmp_path)
    assert proc.returncode == 1 and proc.stderr.startswith("error: "), proc.stdout + proc.stderr
    assert "ours.md" in proc.stderr
    assert list(tmp_path.iterdir()) == [], "no empty file left where git reads the result"
    ours = b"---\nid: x\ntitle: x\n---\nmine\n"
    (tmp_path / "ours.md").write_bytes(ours)
    proc = sediment("merge-driver", "base.md", "ours.md", "theirs.md", "shallow/x.md", cwd=tmp_path)
    assert proc.returncode == 1 and "base.md" in proc.stderr and "theirs.md" in proc.stderr, proc.stderr
    assert (tmp_path / "ours.md").read_bytes() == ours
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ours.md"]


# --------------------------------------------------------------------------- paths


NOTE = "周五前发版\nship before Friday\n"


def test_adopt_takes_an_absolute_path_inside_the_root(root, tmp_path):
    note = root / "shallow" / "release.md"
    note.write_text(NOTE, encoding="utf-8")
    proc = sediment("--root", root, "--json", "adopt", note.resolve(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["path"] == "shallow/release.md"
    assert note.read_text(encoding="utf-8").endswith("---\n" + NOTE)


def test_paths_are_relative_to_the_current_directory(root, tmp_path):
    (root / "shallow" / "release.md").write_text(NOTE, encoding="utf-8")
    # standing in the layer folder, as a person does after writing the note there
    proc = sediment("--root", "..", "--json", "adopt", "release.md", cwd=root / "shallow")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    eid = json.loads(proc.stdout)["id"]
    # standing above the root: the path goes through it
    proc = sediment("--root", "mem", "--json", "locate", "mem/shallow/release.md", cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["id"] == eid, proc.stdout + proc.stderr
    with Repository(root) as repo:
        repo.move(eid, "sediment")
    proc = sediment("--root", "mem", "--json", "locate", "mem/shallow/release.md", cwd=tmp_path)
    assert proc.returncode == 0 and json.loads(proc.stdout)["path"] == "sediment/release.md"


def test_a_path_outside_the_root_is_refused_with_the_reason(root, tmp_path):
    outside = tmp_path / "release.md"
    outside.write_text(NOTE, encoding="utf-8")
    for path in (outside, "release.md"):
        proc = sediment("--root", root, "adopt", path, cwd=tmp_path)
        assert proc.returncode == 1 and "not inside the memory root" in proc.stderr, proc.stderr
    assert outside.read_text(encoding="utf-8") == NOTE


# --------------------------------------------------------------------------- a person's note


def test_update_of_a_persons_note_says_it_is_a_persons_note_as_archive_does(tmp_path):
    vault = tmp_path / "vault"
    (vault / "Recipes").mkdir(parents=True)
    bread = vault / "Recipes" / "bread.md"
    bread.write_bytes(b"# bread\nflour, water, salt\n")
    assert sediment("--root", vault, "init").returncode == 0
    archived = sediment("--root", vault, "archive", "bread", "--reason", "stale")
    assert archived.returncode == 1 and "is a person's note" in archived.stderr, archived.stderr
    for args in (("--title", "Bread"), ("--text", "flour, water, salt, yeast"), ("--tag", "kitchen")):
        proc = sediment("--root", vault, "update", "bread", *args)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert proc.stderr == archived.stderr  # the same words: what it is, and how to hand it over
    assert bread.read_bytes() == b"# bread\nflour, water, salt\n"
