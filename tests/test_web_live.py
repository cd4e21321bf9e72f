"""The open page follows the files: a memory added, edited, moved, archived or
deleted by another process or by hand shows without a reload (the watcher's
changes pushed over server-sent events). A root and a server of its own, since
these tests write."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sediment import Repository

from _browser import WAIT_MS, chromium, load, open_page, sediment_cli, serve, wait

HAS = "t => Sediment.nebula.titles().includes(t)"
LAYER_OF = "([id, layer]) => (Sediment.nebula.nodes().find(n => n.id === id) || {}).layer === layer"


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    root = tmp_path_factory.mktemp("live") / "root"
    with Repository(root) as repo:
        for i in range(12):
            repo.add(f"a note on the garden, number {i}", kind="fact", room="garden")
        repo.add("Deploys go through Flux.", title="Deploy tool", kind="fact", room="infra")
    return root


@pytest.fixture(scope="module")
def served(root):
    yield from serve(root)


@pytest.fixture(scope="module")
def browser():
    yield from chromium()


def _no_reload(page) -> None:
    assert page.evaluate("window.__same_page") == 1, "the page was reloaded"
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1


def test_changes_by_other_processes_and_by_hand_show_without_a_reload(root: Path, served, browser, tmp_path):
    for watched in open_page(browser, tmp_path, "live"):
        page = load(watched, served.url)
        page.evaluate("window.__same_page = 1")
        before = page.evaluate("Sediment.nebula.count()")

        # added by another process
        added = sediment_cli("--root", str(root), "--json", "add", "grown in by another process", "--title",
                             "grown in", "--room", "garden", "--kind", "rule")
        wait(page, HAS, "grown in", served)
        assert page.evaluate("Sediment.nebula.count()") == before + 1
        new_id = json.loads(added.stdout)["id"]

        # edited by hand, in an editor: the title changes in place
        with Repository(root, create=False) as repo:
            path = root / repo.get(new_id).path
        path.write_text(path.read_text(encoding="utf-8").replace("title: grown in", "title: grown in, edited"),
                        encoding="utf-8")
        wait(page, HAS, "grown in, edited", served)
        assert page.evaluate("Sediment.nebula.count()") == before + 1

        # moved to another layer by another process, then archived
        sediment_cli("--root", str(root), "move", new_id, "sediment")
        wait(page, LAYER_OF, [new_id, "sediment"], served)
        sediment_cli("--root", str(root), "archive", new_id, "--reason", "done with it")
        wait(page, LAYER_OF, [new_id, "archive"], served)
        assert page.evaluate("Sediment.nebula.count()") == before + 1

        # deleted by hand: gone from the picture
        with Repository(root, create=False) as repo:
            gone = repo.list(room="infra")[0]
        (root / gone.path).unlink()
        wait(page, "t => !Sediment.nebula.titles().includes(t)", "Deploy tool", served)
        assert page.evaluate("Sediment.nebula.count()") == before
        assert page.inner_text("#count").startswith(f"{before} memories")
        _no_reload(page)
        assert watched.errors == []


def test_an_open_card_follows_its_memory(root: Path, served, browser, tmp_path):
    for watched in open_page(browser, tmp_path, "card"):
        page = load(watched, served.url)
        page.evaluate("window.__same_page = 1")
        with Repository(root, create=False) as repo:
            e = repo.list(room="garden")[0]
        page.evaluate("id => Sediment.card.open(id)", e.id)
        page.wait_for_selector("#card:not([hidden]) h2", timeout=WAIT_MS)
        path = root / e.path  # a person renames it in their editor
        path.write_text(path.read_text(encoding="utf-8").replace(f"title: {e.title}", "title: the garden, renamed"),
                        encoding="utf-8")
        wait(page, "document.querySelector('#card h2').textContent === 'the garden, renamed'", None, served)
        _no_reload(page)
