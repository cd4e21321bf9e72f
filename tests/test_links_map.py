"""Links and the map as a person and an agent follow them (issue 26, items
10-12): a link written before its target resolves once the target is
written; code is not a link; ``MAP.md`` of a small root reaches every memory."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from sediment import Ambiguous, Repository


@pytest.fixture
def repo(tmp_path: Path) -> Repository:
    return Repository(tmp_path / "mem")


def unresolved(repo: Repository) -> list[str]:
    return [p.reason for p in repo.check() if p.code == "unresolved_link"]


# --------------------------------------------------------------------------- 10. links written before their target

def test_a_link_written_before_its_target_resolves_when_the_target_is_written(repo):
    a = repo.add("Alpha calls Beta for every checkout.", title="Alpha service", kind="fact",
                 links=["Beta service"])
    assert a.warnings and unresolved(repo) == ["[[Beta service]] names no note"]
    b = repo.add("Beta prices the basket.", title="Beta service", kind="fact")
    assert [e.id for e in repo.links_to(b.id)] == [a.id]
    assert unresolved(repo) == []
    assert repo.patrol(now="2027-01-01T09:00:00+00:00").counts["unresolved"] == 0
    again = Repository(repo.root)  # the same from the files alone
    assert [e.id for e in again.links_to(b.id)] == [a.id] and unresolved(again) == []
    assert again.get("Beta service").id == b.id  # get() takes an exact title, as links= does
    edges = json.loads(again.graph("json"))["edges"]
    assert {"source": a.id, "target": b.id, "type": "link"} in edges


def test_a_title_several_memories_have_links_nowhere_and_get_says_which(repo):
    a = repo.add("Checkout calls it.", title="Caller", kind="fact", links=["Gamma"])
    repo.add("Gamma, the first.", title="Gamma", kind="fact")
    repo.add("Gamma, the second.", title="Gamma", kind="fact")
    assert repo.links_to(repo.list(kind="fact", sort="created")[1].id) == []
    assert unresolved(repo) == ["[[Gamma]] names no note"]
    with pytest.raises(Ambiguous):
        repo.get("Gamma")
    assert repo.get(a.name).id == a.id  # names and ids as before


# --------------------------------------------------------------------------- 11. code is not a link

CODE_NOTE = """How to link in Obsidian: type `[[Note name]]`, or ``[[Other | shown]]`` in a table.

```markdown
See [[Some page]] and ![[picture.png]].
```

- In a list:
    ~~~
    [[Indented fence]]
    ~~~

A real link: [[Beta service]].
"""


def test_links_inside_code_spans_and_fences_are_not_links(repo):
    target = repo.add("Beta prices the basket.", title="Beta service", kind="fact")
    e = repo.add(CODE_NOTE, title="Linking help", kind="fact")
    assert repo.get(e.id).links == ("Beta service",)  # (as written; it resolves by title)
    assert [x.id for x in repo.links_to(target.id)] == [e.id]
    assert unresolved(repo) == []
    assert repo.patrol(now="2027-01-01T09:00:00+00:00").counts["unresolved"] == 0
    # a person's note outside the layer folders reads the same way
    (repo.root / "help.md").write_text("Write `[[Nowhere]]` to link.\n\n```\n[[Nowhere else]]\n```\n",
                                       encoding="utf-8")
    repo.refresh()
    assert repo.get("help").links == () and unresolved(repo) == []


# --------------------------------------------------------------------------- 12. the map reaches every memory

MAP_LINK = re.compile(r"\[\[([^\]|]+)(?:\|[^\]]*)?\]\]")


def test_the_map_of_a_small_root_links_every_memory(repo):
    texts = ["Deploys go through ArgoCD.", "The office is on floor 3.", "Standup is at 9:30.",
             "Alice owns billing.", "Backups run nightly at 02:00.", "The VPN needs a hardware key.",
             "Invoices go out on the 1st.", "咖啡机在三楼茶水间。", "周五不发版。", "Use PKCE on mobile."]
    made = [repo.add(t, kind="fact", room="ops" if i < 3 else None) for i, t in enumerate(texts)]
    m = repo.map()
    text = (repo.root / "MAP.md").read_text(encoding="utf-8")
    assert set(MAP_LINK.findall(text)) == {e.name for e in made}
    assert m.listed == {"": sorted(e.name for e in made[3:]), "ops": sorted(e.name for e in made[:3])}


def test_a_large_room_shows_topics_and_counts_what_they_do_not_reach(repo):
    for i in range(24):  # 'ledger' in 4 of 24 memories: a topic; the rest under none
        repo.add(f"item{i} {'ledger ' if i < 4 else ''}entry{i}", kind="fact", room="books")
    m = repo.map()
    text = (repo.root / "MAP.md").read_text(encoding="utf-8")
    assert list(m.topics["books"]) == ["ledger"] and "books" not in m.listed
    assert "- 20 more memories under no topic shown here (`sediment list --room books`)" in text
