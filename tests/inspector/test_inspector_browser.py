"""The inspector in a real browser: Debian's headless Chromium driven by Playwright, against
the app served by uvicorn on a loopback port, started here. Overview, search, a result, edit,
forget, restore, a chat session, erase a user — each step checked on the page and in the store,
with no script or style refused by the pages' Content-Security-Policy. And a page of another
origin that frames the inspector gets nothing rendered in the frame.

Screenshots go to a temporary directory, or to ``$MEMENTO_SCREENSHOTS`` (the README's are made
with ``MEMENTO_SCREENSHOTS=benchmarks/results/inspector``).
"""

from __future__ import annotations

import http.server
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _inspector_support import SESSION, TOKEN, Seeded

from memento_core import Memento, MemoryNotFound
from memento_inspector import create_app

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (Debian: apt-get install chromium)"
)
playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
uvicorn = pytest.importorskip("uvicorn")

VIEWPORT = {"width": 1100, "height": 800}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _serve(app: Any) -> Iterator[str]:
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    started = threading.Event()

    def wait() -> None:
        while not server.started and thread.is_alive():
            started.wait(0.05)

    wait()
    assert server.started, "uvicorn did not start"
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=30)


@pytest.fixture
def served(fresh: tuple[Memento, Seeded]) -> Iterator[str]:
    """The inspector over the test's store, as its owner, on a free loopback port."""
    yield from _serve(create_app(fresh[0], token=TOKEN, allowed_hosts={"127.0.0.1"}))


@pytest.fixture
def served_without_token(fresh: tuple[Memento, Seeded]) -> Iterator[str]:
    """As user alice, started with ``--no-token``: no credential stands in a framer's way."""
    app = create_app(
        fresh[0], user="alice", project="apollo", no_token=True, allowed_hosts={"127.0.0.1"}
    )
    yield from _serve(app)


@pytest.fixture
def framer(served_without_token: str, tmp_path: Path) -> Iterator[str]:
    """Another origin (another port): a page that frames the inspector's users page, and for
    comparison a page of its own."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "own.html").write_text("<h1 id='own'>the framer's own page</h1>")
    (site / "index.html").write_text(
        f'<iframe id="inspector" src="{served_without_token}/users" width="900" height="400">'
        '</iframe><iframe id="own" src="/own.html"></iframe>'
    )

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, directory=str(site), **kwargs)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join(timeout=30)


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    chosen = os.environ.get("MEMENTO_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_the_main_flow_in_chromium(served: str, fresh: tuple[Memento, Seeded], shots: Path) -> None:
    mem, ids = fresh
    with playwright_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        page = browser.new_page(viewport=VIEWPORT)
        refused: list[str] = []  # what the CSP stopped: nothing may be
        page.on(
            "console",
            lambda message: (
                refused.append(message.text) if "Content Security Policy" in message.text else None
            ),
        )
        try:
            # The printed address: the token once, then a cookie.
            page.goto(f"{served}/?token={TOKEN}")
            assert "token" not in page.url
            assert page.locator("h1").inner_text() == "Overview"
            assert page.locator("svg.plot rect").count() >= 1
            page.screenshot(path=str(shots / "overview.png"))

            page.click("text=Search")
            page.fill("input[name=q]", "how does Alice take her coffee?")
            page.fill("input[name=as_user]", "alice")  # the owner searches as one user
            page.click("#search button")
            page.wait_for_selector("ol.results li")
            assert page.locator("svg.scorebar").count() >= 2
            assert page.locator("ol.results mark").count() >= 1
            page.screenshot(path=str(shots / "search.png"))
            # The one script runs under the CSP: a slider let go runs the search again.
            with page.expect_navigation():
                page.locator("input[name=w_importance]").fill("0.75")
            assert "w_importance=0.75" in page.url
            page.wait_for_selector("ol.results li")

            page.click(f'ol.results a[href="/memory/{ids.coffee}"]')
            page.wait_for_selector("#content")
            assert "coffee black" in page.locator("#content").inner_text()
            assert page.locator("svg.graph").count() == 1
            page.screenshot(path=str(shots / "memory.png"), full_page=False)

            page.fill("textarea[name=content]", "Alice takes her coffee with oat milk.")
            page.click("#edit button")
            assert "oat milk" in page.locator("#changes").inner_text()
            page.click("#confirm")
            page.wait_for_selector("#done")
            assert "oat milk" in page.locator("#content").inner_text()
            assert mem.get(ids.coffee).content == "Alice takes her coffee with oat milk."

            page.click("#forget")
            page.click("#confirm")
            page.wait_for_selector("#restore")
            with pytest.raises(MemoryNotFound):
                mem.get(ids.coffee)
            page.click("#restore")
            page.click("#confirm")
            page.wait_for_selector("#forget")
            assert mem.get(ids.coffee).deleted_at is None

            page.goto(f"{served}/session?id={SESSION}")
            assert page.locator(".message").count() >= 4  # the window beside the history
            assert page.locator("#summaries a").count() >= 1

            page.goto(f"{served}/users")
            page.click('button[name=erase][value="bob"]')
            page.click("#confirm")
            page.wait_for_selector("#report")
            assert "User bob erased" in page.locator("h1").inner_text()
            assert "bob" not in mem.census().by_user
            assert refused == []
        finally:
            browser.close()


def test_a_page_of_another_origin_cannot_frame_the_inspector(
    framer: str, served_without_token: str, fresh: tuple[Memento, Seeded]
) -> None:
    mem, _ = fresh
    with playwright_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=CHROMIUM, headless=True)
        page = browser.new_page(viewport=VIEWPORT)
        try:
            page.goto(f"{served_without_token}/users")  # served, outside a frame
            assert page.locator("button[name=erase]").count() >= 1
            page.goto(framer)
            own = page.frame_locator("iframe#own").locator("#own")
            own.wait_for()  # frames render on this page: the framer's own does
            page.wait_for_load_state("load")
            element = page.query_selector("iframe#inspector")
            framed = element.content_frame() if element else None
            assert framed is not None
            # Chromium refuses it (frame-ancestors 'none', X-Frame-Options: DENY) and shows
            # its own error page in the frame: nothing of the inspector, no button to click.
            assert framed.url.startswith("chrome-error://"), framed.url
            assert "Memento Inspector" not in framed.content()
            assert framed.locator("button[name=erase]").count() == 0
            assert "alice" in mem.census().by_user  # nothing was erased
        finally:
            browser.close()
