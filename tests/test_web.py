"""``sediment view`` in a real browser: what a person sees on a root made
for it — every memory drawn, a click opening the right card, a search lighting
up its hits, titles and texts shown as text (never run), no page without the
token, rooms drawn as nodes past the limit, the export working from disk, and
a root left exactly as it was (no recall recorded, ``git status`` clean).

One server for the module (``served``); the live updates have their own root
and server in ``test_web_live.py``. Every test saves a screenshot under its
pytest temp folder."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from sediment import Repository

from _browser import (READY, WAIT_MS, chromium, click_node, env, hover_node, load, open_page, sediment_cli,
                      serve)

XSS_TITLE = "<img src=x onerror=alert(1)>"
SCRIPT_TEXT = "Payload </script><script>alert('body')</script> ends here"
PERSON_NOTE = """---
title: '<script>alert("title")</script> my note'
tags: ['<b>bold</b>', plain]
---
A note of mine. </script><img src=x onerror=alert(2)> [[{pkce}]]
"""
ROOMS_DAILY = 30


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=root,
                          capture_output=True, text=True, check=True).stdout


def _usage_bytes(root: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted((root / "_system" / "usage").glob("*"))
            if p.is_file() and p.name != "lock"}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A root with links, evidence, a supersede chain, an event, a person's
    note, hostile titles and texts, one room of many; versioned by git."""
    root = tmp_path_factory.mktemp("view") / "root"
    ids = {}
    with Repository(root) as repo:
        a = repo.add("Mobile apps cannot keep a secret.", title="no secrets on mobile", kind="fact", room="auth",
                     tags=["auth"])
        b = repo.add("Use PKCE on mobile.", title="PKCE on mobile", kind="rule", room="auth", links=[a.name],
                     evidence=[f"[[{a.name}]]"], hesitation=["the old app still uses the implicit flow"])
        c = repo.add("Deploys go through ArgoCD.", title="Deploy tool", kind="fact", room="infra", event="deploy")
        d = repo.add("Deploys go through Flux.", title="Deploy tool, new", kind="fact", room="infra", event="deploy")
        repo.supersede(c.id, d.id)
        x = repo.add(SCRIPT_TEXT, title=XSS_TITLE, kind="fact", room="infra")
        for i in range(ROOMS_DAILY):
            repo.add(f"daily note number {i} about the garden", kind="daily", room="日常")
        repo.add("likes green tea", kind="fact")
        repo.usage.record([a.id], "recall")
        ids.update(a=a.id, b=b.id, c=c.id, d=d.id, x=x.id)
    (root / "notes").mkdir()
    (root / "notes" / "mine.md").write_text(PERSON_NOTE.replace("{pkce}", b.name), encoding="utf-8")
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "the root")
    with Repository(root, create=False) as repo:
        entries = [e for e in repo.list() if e.status != "purged"]
        ids["mine"] = repo.get("notes/mine.md").id
        rooms = {(e.layer or "notes", e.room) for e in entries}
        deploys = [h.entry.id for h in repo.search("deploy", record=False, limit=50)]
    return {"root": root, "ids": ids, "all": {e.id for e in entries}, "rooms": rooms, "deploys": deploys,
            "usage": _usage_bytes(root)}


@pytest.fixture(scope="module")
def served(made):
    yield from serve(made["root"])


@pytest.fixture(scope="module")
def browser():
    yield from chromium()


@pytest.fixture
def watched(browser, tmp_path, request):
    yield from open_page(browser, tmp_path, request.node.name)


def test_the_nebula_draws_every_memory_and_the_edges_between_them(made, served, watched):
    page = load(watched, served.url)
    assert page.evaluate("Sediment.nebula.count()") == len(made["all"])
    assert sorted(page.evaluate("Sediment.nebula.nodes().map(n => n.id)")) == sorted(made["all"])
    page.wait_for_function("document.getElementById('count').textContent.includes('edges') && "
                           "!document.getElementById('count').textContent.includes('coming')", timeout=WAIT_MS)
    assert page.inner_text("#count").startswith(f"{len(made['all'])} memories")
    ids = made["ids"]
    edges = {tuple(e) for e in page.evaluate("Sediment.nebula.edges()")}
    assert {(ids["b"], ids["a"], "evidence"), (ids["d"], ids["c"], "supersedes"), (ids["c"], ids["d"], "event"),
            (ids["mine"], ids["b"], "link")} <= edges
    assert watched.errors == [] and watched.dialogs == []


def test_a_click_on_a_memory_opens_its_card(made, served, watched):
    page = load(watched, served.url)
    click_node(page, made["ids"]["b"])
    page.wait_for_selector("#card:not([hidden]) h2", timeout=WAIT_MS)
    card = page.locator("#card")
    assert page.inner_text("#card h2") == "PKCE on mobile"
    text = card.inner_text()
    for shown in ("Use PKCE on mobile.", "Evidence", "no secrets on mobile", "Hesitation",
                  "the old app still uses the implicit flow", "rule", "auth", "Strength over the next 180 days",
                  "recalled 0×", "shallow/auth/", "sediment --root"):
        assert shown in text, shown
    assert page.locator("#card .uplot canvas").count() >= 1  # the strength plot
    # its link leads to the other card, which names it as a backlink
    page.locator("#card button.link", has_text="no secrets on mobile").first.click()
    page.wait_for_function("document.querySelector('#card h2').textContent === 'no secrets on mobile'",
                           timeout=WAIT_MS)
    text = card.inner_text()
    assert "Backlinks" in text and "PKCE on mobile" in text
    assert "recalled 1×" in text  # the recall the fixture recorded, with its day
    assert watched.errors == [] and watched.dialogs == []


def test_the_card_follows_the_supersede_chain_both_ways(made, served, watched):
    page = load(watched, served.url)
    page.evaluate("id => Sediment.card.open(id)", made["ids"]["c"])
    page.wait_for_function("document.querySelector('#card h2') && "
                           "document.querySelector('#card h2').textContent === 'Deploy tool'", timeout=WAIT_MS)
    text = page.inner_text("#card")
    after = text.split("Superseded by (newer)", 1)[1].split("Links to", 1)[0]
    assert "Deploy tool, new" in after and "superseded" in text


def test_a_search_lights_up_its_hits_with_their_lanes(made, served, watched):
    page = load(watched, served.url)
    page.fill("#q", "deploy")
    page.press("#q", "Enter")
    page.wait_for_function("Sediment.nebula.highlighted().length > 0", timeout=WAIT_MS)
    assert page.evaluate("Sediment.nebula.highlighted()") == sorted(made["deploys"])
    results = page.inner_text("#panel-search")
    assert f"{len(made['deploys'])} found" in results and "lanes: words #1" in results
    assert made["ids"]["c"] not in made["deploys"]  # superseded: not found, not lit


def test_titles_and_texts_from_notes_show_as_text_and_never_run(made, served, watched):
    page = load(watched, served.url)
    assert XSS_TITLE in page.evaluate("Sediment.nebula.titles()")
    point = hover_node(page, made["ids"]["x"])
    page.wait_for_function("t => document.querySelector('.float-tooltip-kap').textContent.includes(t)",
                           arg=XSS_TITLE, timeout=WAIT_MS)
    page.mouse.click(point["x"], point["y"])
    page.wait_for_function("t => document.querySelector('#card h2') && "
                           "document.querySelector('#card h2').textContent === t", arg=XSS_TITLE, timeout=WAIT_MS)
    assert "</script><script>alert('body')</script>" in page.inner_text("#card")
    page.evaluate("id => Sediment.card.open(id)", made["ids"]["mine"])
    page.wait_for_function("document.querySelector('#card h2').textContent.endsWith('my note')", timeout=WAIT_MS)
    text = page.inner_text("#card")
    assert '<script>alert("title")</script> my note' in text and "#<b>bold</b>" in text
    assert "</script><img src=x onerror=alert(2)>" in text
    page.fill("#q", "payload")
    page.press("#q", "Enter")
    page.wait_for_function("Sediment.nebula.highlighted().length > 0", timeout=WAIT_MS)
    assert XSS_TITLE in page.inner_text("#panel-search")
    page.locator("details[data-panel=plan] summary").click()
    page.wait_for_function("!document.querySelector('#panel-plan .body').textContent.startsWith('…')",
                           timeout=WAIT_MS)
    # nothing of a note became markup: no image, no script beyond the page's own files
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("[...document.scripts].every(s => s.src.includes('/static/'))")
    assert watched.dialogs == [] and watched.errors == []


def _status(url: str, method: str = "GET") -> tuple[int, dict[str, str]]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method=method), timeout=60) as r:
            return r.status, dict(r.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers)


def test_without_the_token_every_request_is_refused(made, served, watched):
    response = watched.page.goto(served.base)
    assert response.status == 403 and "token" in watched.page.inner_text("body")
    assert watched.page.goto(served.base + "?token=wrong" + served.token).status == 403
    some = made["ids"]["a"]
    for path in ("", "api/nebula", "api/panel/plan", f"api/memory/{some}", "api/search?q=x", "api/events",
                 "static/app.js", "static/vendor/force-graph.min.js"):
        assert _status(served.base + path)[0] == 403, path
    status, headers = _status(served.url)
    assert status == 200 and "script-src 'self'" in headers["content-security-policy"]
    assert headers["referrer-policy"] == "no-referrer"
    # nothing writes: anything but GET (and HEAD) is refused, token or not
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert _status(served.url, method)[0] == 405, method
        assert _status(served.base + "api/nebula?token=" + served.token, method)[0] == 405, method


def test_past_the_limit_rooms_are_nodes_that_open_on_a_click(made, served, watched):
    page = load(watched, served.url + "&limit=10")
    assert page.evaluate("Sediment.nebula.count()") == 0
    rooms = page.evaluate("Sediment.nebula.aggregates()")
    assert {r["key"] for r in rooms} == {f"{layer}/{room}" for layer, room in made["rooms"]}
    assert sum(r["count"] for r in rooms) == len(made["all"])
    click_node(page, "room:shallow/日常")
    page.wait_for_function("Sediment.nebula.count() > 0", timeout=WAIT_MS)
    assert page.evaluate("Sediment.nebula.count()") == 10  # the strongest ten of thirty
    assert "20 weaker memories" in page.inner_text("#toast")
    assert len(page.evaluate("Sediment.nebula.aggregates()")) == len(rooms) - 1


def test_the_export_is_the_same_page_from_disk_with_no_server(made, browser, tmp_path):
    out = tmp_path / "export"
    done = sediment_cli("--root", str(made["root"]), "view", "--export", str(out))
    assert f"wrote {len(made['all'])} memories" in done.stdout
    assert str(made["root"]) not in (out / "index.html").read_text(encoding="utf-8")
    for watched in open_page(browser, tmp_path, "export"):
        page = load(watched, (out / "index.html").as_uri())
        assert page.evaluate("Sediment.nebula.count()") == len(made["all"])
        click_node(page, made["ids"]["x"])
        page.wait_for_function("t => document.querySelector('#card h2') && "
                               "document.querySelector('#card h2').textContent === t", arg=XSS_TITLE,
                               timeout=WAIT_MS)
        assert "</script><script>alert('body')</script>" in page.inner_text("#card")
        page.fill("#q", "garden")
        page.press("#q", "Enter")
        page.wait_for_function("Sediment.nebula.highlighted().length > 0", timeout=WAIT_MS)
        assert len(page.evaluate("Sediment.nebula.highlighted()")) == ROOMS_DAILY
        assert "titles, tags and paths only" in page.inner_text("#panel-search")
        assert [u for u in watched.requests if not u.startswith("file://")] == []  # offline: nothing fetched
        assert watched.dialogs == [] and watched.errors == []


def test_the_export_refuses_a_folder_of_other_files_and_the_root_itself(made, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("mine")
    out = sediment_cli("--root", str(made["root"]), "view", "--export", str(tmp_path / "mine"), check=False)
    assert out.returncode == 1 and "not an empty folder" in out.stderr
    assert (tmp_path / "mine" / "keep.txt").read_text() == "mine"
    out = sediment_cli("--root", str(made["root"]), "view", "--export", str(made["root"] / "page"), check=False)
    assert out.returncode == 1 and "outside the memory root" in out.stderr


# --------------------------------------------------------------------------- no browser

WITHOUT_SERVER = ("import sys; sys.modules['starlette'] = None; sys.modules['uvicorn'] = None; "
                  "from sediment.cli.main import main; sys.exit(main(sys.argv[1:]))")


def test_without_the_extra_view_says_what_to_install_and_still_exports(made, tmp_path):
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", WITHOUT_SERVER, "--root", str(made["root"]), "view", *args],
                              capture_output=True, text=True, env=env(), timeout=300)

    out = run("--no-browser")
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.strip() == ("error: not_installed: sediment view needs starlette and uvicorn: "
                                  "pip install -e '.[view]' in a checkout, or pip install 'agent-sediment[view]'")
    out = run("--export", str(tmp_path / "page"))  # files only: no server needed
    assert out.returncode == 0 and (tmp_path / "page" / "index.html").is_file()


def test_another_host_than_this_machine_is_warned_about(made):
    for served in serve(made["root"], "--host", "0.0.0.0"):
        assert _status(served.url.replace("0.0.0.0", "127.0.0.1"))[0] == 200
        assert any("warning: serving on 0.0.0.0" in line for line in served.stderr)
    for served in serve(made["root"]):
        assert served.url.startswith("http://127.0.0.1:")
        assert not any("warning" in line for line in served.stderr)


@pytest.mark.slow
def test_docs_screenshots(browser, tmp_path):
    """docs/view.png and docs/view-card.png, from a generated root of a few
    hundred memories: written into docs/ with SEDIMENT_DOCS=1, else here."""
    docs = Path(__file__).resolve().parent.parent / "docs" if os.environ.get("SEDIMENT_DOCS") else tmp_path
    root = tmp_path / "demo"
    _demo_root(root)
    for served in serve(root):
        for watched in open_page(browser, tmp_path, "docs"):
            page = load(watched, served.url)
            page.wait_for_function("!document.getElementById('count').textContent.includes('coming')",
                                   timeout=WAIT_MS)
            page.locator("details[data-panel=attention] summary").click()
            page.wait_for_selector("table.heat", timeout=WAIT_MS)
            page.fill("#q", "deploy")
            page.press("#q", "Enter")
            page.wait_for_function("Sediment.nebula.highlighted().length > 0", timeout=WAIT_MS)
            page.screenshot(path=str(docs / "view.png"))
            target = page.evaluate("Sediment.nebula.nodes().find(n => n.title === 'Deploying with Flux').id")
            page.evaluate("id => Sediment.card.open(id)", target)
            page.wait_for_selector("#card:not([hidden]) .uplot", timeout=WAIT_MS)
            page.wait_for_function(READY, timeout=WAIT_MS)
            page.screenshot(path=str(docs / "view-card.png"))
    assert (docs / "view.png").stat().st_size > 10_000 and (docs / "view-card.png").stat().st_size > 10_000


def _demo_root(root: Path) -> None:
    """A few hundred memories an agent might keep, with links, events, supersessions and recalls."""
    import datetime as dt
    import random
    rng = random.Random(7)
    now = dt.datetime.now(dt.timezone.utc)
    topics = {
        "auth": ["PKCE on mobile", "token refresh", "OAuth scopes", "session cookies", "SSO with Okta"],
        "infra": ["deploy with Flux", "staging cluster", "backups at night", "deploy freeze on Fridays", "k3s nodes"],
        "frontend": ["design tokens", "dark mode", "bundle size", "accessibility audit", "React upgrade"],
        "家庭": ["周末去爬山", "孩子的钢琴课", "给妈妈打电话", "装修厨房"],
        "research": ["paper on retrieval", "bigram index", "feedback expansion", "benchmark LoCoMo"],
    }
    kinds = ["fact", "fact", "fact", "rule", "rule", "skill", "event", "daily", "inbox", "core"]
    with Repository(root) as repo:
        made = []
        for i in range(320):
            room = rng.choice(list(topics))
            topic = rng.choice(topics[room])
            layer = rng.choices(["shallow", "sediment", "bedrock", "archive"], [50, 30, 8, 12])[0]
            links = [rng.choice(made).name] if made and rng.random() < 0.35 else []
            event = {"event": f"{room}-{topic}"} if rng.random() < 0.1 else {}
            e = repo.add(f"{topic}: note {i} on {topic}, what we decided and why.", title=f"{topic} ({i})",
                         kind=rng.choice(kinds), room=room, layer="sediment" if layer == "archive" else layer,
                         links=links, value=round(rng.uniform(0.3, 0.95), 2),
                         now=now - dt.timedelta(days=rng.randint(0, 200)), **event)
            if layer == "archive":  # (add writes no memory into archive/: it is retired there)
                e = repo.archive(e.id, reason="decayed")
            made.append(e)
        for e in rng.sample(made, 120):
            for _ in range(rng.randint(1, 4)):
                repo.usage.record([e.id], "recall", now=(now - dt.timedelta(days=rng.randint(0, 80))).timestamp())
        for old, new in zip(made[:6], made[6:12]):
            repo.supersede(old.id, new.id)
        argo = repo.add("Deploys go through ArgoCD: sync the app in its UI.", title="Deploying with ArgoCD",
                        kind="skill", room="infra", layer="sediment", now=now - dt.timedelta(days=150))
        flux = repo.add("Push to `main`; **Flux** applies it within two minutes.\n\n"
                        "Roll back with `flux suspend kustomization app` and a revert.",
                        title="Deploying with Flux", kind="skill", room="infra", layer="sediment", value=0.85,
                        tags=["deploy", "flux"], links=[made[0].name], now=now - dt.timedelta(days=40),
                        evidence=["the March migration moved every service to Flux"],
                        hesitation=["the billing service still has a manual step"])
        repo.supersede(argo.id, flux.id)
        repo.archive(argo.id, reason="superseded by Flux")  # (add writes no memory into archive/)
        for days in (38, 30, 21, 12, 4):
            repo.usage.record([flux.id], "recall", now=(now - dt.timedelta(days=days)).timestamp())
        repo.touch(flux.id, "confirm", now=now - dt.timedelta(days=4))
        repo.observe("Remember to rotate the API keys on Friday.")
        repo.patrol()


def test_looking_leaves_the_root_as_it_was(made, served, watched):
    """Last of the module: after all the browsing above, no note changed, no
    recall was recorded, and git sees nothing to commit."""
    page = load(watched, served.url)
    click_node(page, made["ids"]["a"])
    page.wait_for_selector("#card:not([hidden]) h2", timeout=WAIT_MS)
    for panel in ("plan", "working", "patrol", "attention", "stats"):
        page.locator(f"details[data-panel={panel}] summary").click()
    page.wait_for_function("[...document.querySelectorAll('details[data-panel] .body')]"
                           ".every(b => b.textContent && !b.textContent.startsWith('…'))", timeout=WAIT_MS)
    assert _git(made["root"], "status", "--porcelain") == ""
    assert _usage_bytes(made["root"]) == made["usage"]
