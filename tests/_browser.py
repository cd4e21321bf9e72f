"""What the page's tests share: a real ``sediment view`` process, and a real
browser (Debian's chromium, driven by Playwright with ``executable_path``:
never ``playwright install``). Tests wait for what a person would see, with
generous timeouts; how long it takes is for ``benchmarks/bench_view.py``."""

from __future__ import annotations

import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest

import sediment

PROJECT = Path(sediment.__file__).resolve().parent.parent
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
WAIT_MS = 60_000  # for what a person waits on: a loaded page, an update (never asserted as a time)
READY = "document.body.dataset.ready === '1'"


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(PROJECT), os.environ.get("PYTHONPATH"))
                                                        if p)}


def sediment_cli(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The command line, in its own process (another process than the page's)."""
    return subprocess.run([sys.executable, "-m", "sediment", *args], capture_output=True, text=True, env=env(),
                          timeout=300, check=check)


@dataclass
class Served:
    url: str  # with the token
    proc: subprocess.Popen[str]
    stderr: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        return self.url.split("?", 1)[0]

    @property
    def token(self) -> str:
        return self.url.split("token=", 1)[1]


def serve(root: Path, *extra: str) -> Iterator[Served]:
    """``sediment view`` on ``root`` until the generator is closed (then Ctrl-C, as a person stops it)."""
    proc = subprocess.Popen([sys.executable, "-m", "sediment", "--root", str(root), "view", "--no-browser",
                             "--port", "0", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env())
    lines: queue.Queue[str] = queue.Queue()
    served = Served("", proc)

    def pump(stream: Any, sink: Any) -> None:
        for line in stream:
            sink(line)

    threading.Thread(target=pump, args=(proc.stdout, lines.put), daemon=True).start()
    threading.Thread(target=pump, args=(proc.stderr, served.stderr.append), daemon=True).start()
    try:
        while not served.url:
            try:
                line = lines.get(timeout=WAIT_MS / 1000 * 3)
            except queue.Empty:
                pytest.fail("sediment view printed no URL: " + "".join(served.stderr))
            m = re.search(r"http://\S+token=\S+", line)
            if m:
                served.url = m.group(0)
        yield served
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def chromium() -> Iterator[Any]:
    """A headless chromium (skips where Debian's package is not installed)."""
    exe = shutil.which("chromium")
    if exe is None:
        pytest.skip("needs Debian's chromium: apt-get install -y chromium (.ci/run installs it)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


@dataclass
class Watched:
    """A page and what went wrong on it: alert dialogs, script errors."""
    page: Any
    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)


def open_page(browser: Any, shots: Path, name: str = "page") -> Iterator[Watched]:
    """A fresh page (the page's own CSP is bypassed so that Playwright may
    poll, and so that the escaping is tested alone, without CSP's help); its
    screenshot is saved under ``shots`` at the end."""
    context = browser.new_context(bypass_csp=True, viewport={"width": 1400, "height": 860})
    page = context.new_page()
    watched = Watched(page)
    page.on("dialog", lambda d: (watched.dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: watched.errors.append(str(e)))
    page.on("request", lambda r: watched.requests.append(r.url))
    try:
        yield watched
    finally:
        try:
            page.screenshot(path=str(shots / f"{name}.png"))
        finally:
            context.close()


def load(watched: Watched, url: str) -> Any:
    page = watched.page
    page.goto(url)
    page.wait_for_function(READY, timeout=WAIT_MS)
    return page


def hover_node(page: Any, node_id: str) -> dict[str, float]:
    """Point at a memory where it is drawn, as a person would (zoomed onto
    it, once the nodes stopped moving); returns where."""
    page.wait_for_function("Sediment.nebula.settled()", timeout=WAIT_MS)
    page.evaluate("id => Sediment.nebula.zoomTo(id, 6)", node_id)
    point: dict[str, float] = page.evaluate("id => Sediment.nebula.screen(id)", node_id)
    page.mouse.move(point["x"], point["y"])
    # the pointer finds nodes on a picking canvas redrawn now and then: the
    # node is under the pointer once it is hovered (its title shows)
    page.wait_for_function("id => Sediment.nebula.hovered() === id", arg=node_id, timeout=WAIT_MS)
    return point


def wait(page: Any, expression: str, arg: Any = None, served: Served | None = None) -> None:
    """Wait until ``expression`` holds on the page; failing, say what the page
    and the server had seen (the changes applied, the stream's state, errors)."""
    try:
        page.wait_for_function(expression, arg=arg, timeout=WAIT_MS)
    except Exception as exc:
        seen = page.evaluate("({version: document.body.dataset.version, count: Sediment.nebula.count(), "
                             "live: document.getElementById('live').className, "
                             "updates: Sediment.nebula.metrics.updates.slice(-5)})")
        pytest.fail(f"waited for {expression} ({arg!r}): {exc}\npage: {seen}\nserver: "
                    + ("".join(served.stderr) if served else "?"))


def click_node(page: Any, node_id: str) -> None:
    """Click a memory where it is drawn."""
    point = hover_node(page, node_id)
    page.mouse.click(point["x"], point["y"])
