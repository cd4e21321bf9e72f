"""about(topic): what is remembered about X — each memory's recalls,
confirmations, refutations, layer, state, successor and evidence, with a
summary of the counts. Read-only: no recall, not a byte written."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

from sediment import Repository
from sediment.cli.main import main

NOW = dt.datetime(2026, 12, 1, 9, 0, tzinfo=dt.timezone.utc)


def tree(root: Path) -> dict[str, str]:
    """Every file under the root (``_system/`` too) by its bytes' hash."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def setup(repo: Repository):
    old = repo.add("Deploys go through Jenkins.", title="deploy tool", kind="fact", now=NOW,
                   evidence=["the Jenkinsfile in the repo", "the ops wiki page"])
    new = repo.add("Deploys go through ArgoCD now.", title="deploy tool now", kind="fact", now=NOW,
                   evidence=["ArgoCD dashboard"])
    repo.supersede(old.id, new.id)
    repo.search("deploys ArgoCD")  # a recall of the current one
    repo.touch(new.id, "confirm")
    wrong = repo.add("Deploys need a change ticket.", title="deploy ticket", kind="rule", now=NOW)
    repo.touch(wrong.id, "refute", confirm=True)
    repo.add("The user likes tea.", kind="fact", now=NOW)
    return old, new, wrong


def test_about_tells_the_history_of_each_memory(tmp_path):
    with Repository(tmp_path / "root") as repo:
        old, new, wrong = setup(repo)
        a = repo.about("deploys", now=NOW)
        got = {k.id: k for k in a.memories}
        assert set(got) == {old.id, new.id, wrong.id}  # tea is not about deploys
        assert (got[old.id].status, got[old.id].superseded_by) == ("superseded", (new.name,))
        assert got[new.id].supersedes == (old.name,)
        assert (got[new.id].recalls, got[new.id].confirms, got[new.id].refutes) == (1, 1, 0)
        assert (got[wrong.id].layer, got[wrong.id].status, got[wrong.id].refutes) == ("archive", "archived", 1)
        assert got[old.id].evidence == ("the Jenkinsfile in the repo", "the ops wiki page")
        assert a.summary.startswith("About 'deploys': 3 memories (1 active, 1 archived, 1 superseded; ")
        assert "recalled 1 times on 1 day(s), confirmed 1, refuted 1; 3 piece(s) of evidence" in a.summary
        assert f"Strongest current: [[{new.name}]]" in a.summary
        assert repo.about("quantum chromodynamics", now=NOW).memories == ()


def test_about_is_no_recall_and_writes_nothing(tmp_path):
    root = tmp_path / "root"
    with Repository(root) as repo:
        setup(repo)
        repo.close()  # the index snapshot is written now, not during about()
        before = tree(root)
        usage = {k: v.to_json() for k, v in repo.usage.load().items()}
        a = repo.about("deploys")
        assert a.memories and str(a)
        repo.about("nothing at all")
        assert tree(root) == before
        assert {k: v.to_json() for k, v in repo.usage.load().items()} == usage


def test_cli_about(tmp_path, capsys):
    root = str(tmp_path / "root")
    with Repository(root) as repo:
        setup(repo)
    capsys.readouterr()
    assert main(["--root", root, "about", "deploys"]) == 0
    assert capsys.readouterr().out.startswith("About 'deploys': 3 memories")
    assert main(["--root", root, "--json", "about", "deploys"]) == 0
    assert len(json.loads(capsys.readouterr().out)["memories"]) == 3
