"""The served app in a real browser: Debian's chromium driven by Playwright (launched by path,
never downloaded) against `marimo run` started with a token password.

Screenshots are saved under `out/screenshots/` (a test artifact, ignored by git)."""

from __future__ import annotations

import contextlib
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from signet_bench.app.launch import free_port, notebook_path, serve
from signet_bench.bench.dashboard_browser import chromium_path
from tests.hook_records import served_and_failed

CHROMIUM = chromium_path()
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed")
sync_api = pytest.importorskip("playwright.sync_api")

SCREENSHOTS = Path(__file__).resolve().parents[2] / "out" / "screenshots"
TOKEN = "browser-test-token"
INTERNAL_ERROR = "An internal error occurred"


def _our_tracebacks(server_output: str) -> list[str]:
    """Tracebacks in the server's output that pass through the project's code (a failing cell).
    marimo also logs its own races, e.g. a chart's data file requested after a re-run
    replaced it (`virtual_file.py`); those are not ours."""
    blocks = server_output.split("Traceback (most recent call last):")[1:]
    return [b for b in blocks if "signet_bench" in b or "/notebooks/" in b]


@contextmanager
def _served(notebook: str, *args: str, log: Path | None = None) -> Iterator[str]:
    """`marimo run` on the notebook with a token password, its output going to `log` (a
    temporary file by default); yields the base URL once healthy. A file, not a pipe: every
    redraw of a replaced table can make marimo log a long traceback, and an unread pipe fills
    up and blocks the server."""
    port = free_port()
    cmd = [
        sys.executable, "-m", "signet_bench.app.serve", "run", str(notebook_path(notebook)),
        "--headless", "--host", "127.0.0.1", "--port", str(port),
        "--token", "--token-password", TOKEN, "--", *args,
    ]  # fmt: skip
    with contextlib.ExitStack() as stack:
        if log is None:
            log = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "server.log"
        with serve(cmd, port, log) as url:
            yield url
        output = log.read_text()
        assert not _our_tracebacks(output), output[-3000:]


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True)
        yield b
        b.close()


def _open(browser, url: str, width: int = 1400):
    """A new page on the app, `width` px wide, keeping the console's messages (see
    `_chart_problems`)."""
    page = browser.new_page(viewport={"width": width, "height": 1000})
    page.console_messages = []
    page.on("console", lambda m: page.console_messages.append((m.type, m.text)))
    page.on("pageerror", lambda e: page.console_messages.append(("error", str(e))))
    page.goto(f"{url}/?access_token={TOKEN}")
    return page


def _chart_problems(page) -> list[str]:
    """The page's console errors and Vega's warnings (its logger writes "WARN ..."; e.g. an
    infinite extent: a chart whose domain does not hold its data). The browser's own notes
    (an unused preload) are not problems of the page."""
    return [
        f"{kind}: {text}"
        for kind, text in page.console_messages
        if kind == "error" or (kind == "warning" and text.startswith("WARN"))
    ]


def _wait_for_charts(page, n: int, timeout_s: float = 60) -> None:
    """Until at least `n` Altair charts are drawn (a canvas each)."""
    deadline = time.monotonic() + timeout_s
    charts = page.locator(".vega-embed canvas")
    while charts.count() < n:
        assert time.monotonic() < deadline, f"only {charts.count()} of {n} charts drawn"
        page.wait_for_timeout(100)


def _screenshot(page, name: str) -> Path:
    """A full-page screenshot (the app scrolls inside #App: grow the viewport to it first)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    height = page.evaluate("document.querySelector('#App')?.scrollHeight || 2000")
    page.set_viewport_size({"width": page.viewport_size["width"], "height": int(height) + 40})
    page.wait_for_timeout(500)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def test_the_app_needs_the_token(demo):
    with _served("dashboard", "--db", str(demo.store)) as url:
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(f"{url}/api/status", timeout=5)
        assert err.value.code == 401
        page = urllib.request.urlopen(f"{url}/", timeout=5).read().decode()
        assert "Signet predictor" not in page


def test_dashboard_in_a_browser(browser, demo):
    with _served("dashboard", "--db", str(demo.store), "--bench-dir", str(demo.bench_dir)) as url:
        page = _open(browser, url)
        page.get_by_text("Comparison inspector").first.wait_for(timeout=60_000)
        _wait_for_charts(page, 4)  # gauge, latency, timeline, training, projects
        for panel in ("Sessions the judge scored, per week", "Status", "Win/loss timeline",
                      "Comparison inspector", "Training", "Errors", "Health"):  # fmt: skip
            assert page.get_by_text(panel).count() > 0, panel
        # the lower panels: read after every panel above is drawn
        page.get_by_text("Success by project and entity").first.wait_for(timeout=60_000)
        page.get_by_text("Labels learn from").first.wait_for(timeout=60_000)
        assert page.get_by_text("predictor: active").count() > 0
        latest = page.get_by_text("Comparison inspector · session #80").first
        latest.wait_for(timeout=30_000)
        sessions = page.locator("marimo-table").filter(has_text="session_key").first
        row = sessions.locator("tbody tr").nth(2)
        row.locator("input[type=checkbox], button[role=checkbox]").first.click()
        page.get_by_text("Comparison inspector · session #78").first.wait_for(timeout=30_000)
        assert page.get_by_text(INTERNAL_ERROR).count() == 0
        assert not _chart_problems(page)
        _screenshot(page, "dashboard")
        page.close()


def test_young_store_dashboard_in_a_browser(browser, young):
    with _served("dashboard", "--db", str(young)) as url:
        page = _open(browser, url)
        page.get_by_text("Cold start: collecting training data").first.wait_for(timeout=60_000)
        _wait_for_charts(page, 1)
        assert page.get_by_text("predictor: collecting").count() > 0
        assert page.get_by_text(INTERNAL_ERROR).count() == 0
        assert not _chart_problems(page)
        _screenshot(page, "dashboard-cold-start")
        page.close()


def test_current_store_dashboard_in_a_browser(browser, bare_current):
    """A current store as Signet's daemon leaves it (no predictor state, no comparisons): the
    verdict weighs the comparisons the workbench recomputed, the timeline and the inspector
    show them, and the label sources are stated; no cold-start panel."""
    with _served("dashboard", "--db", str(bare_current)) as url:
        page = _open(browser, url)
        page.get_by_text("Comparison inspector · session #").first.wait_for(timeout=90_000)
        _wait_for_charts(page, 2)  # the α gauge and the win/loss timeline at the least
        verdict = page.get_by_text("Over the last").first
        assert "judged sessions it won" in verdict.inner_text()
        assert "Judged offline" in verdict.inner_text()
        sources = page.get_by_text("Labels learn from session scores in 30 sessions").first
        sources.wait_for(timeout=90_000)  # read after the panels above
        assert "Recorded in none yet: path feedback" in sources.inner_text()
        assert page.get_by_text("predictor: none in this Signet").count() > 0
        injected = page.get_by_text("What Signet injected and what the scorer would have")
        injected.first.wait_for(timeout=90_000)
        assert page.get_by_text("Cold start: collecting training data").count() == 0
        assert page.get_by_text(INTERNAL_ERROR).count() == 0
        assert not _chart_problems(page)
        _screenshot(page, "dashboard-current")
        page.close()


def test_current_store_dashboard_with_the_wrappers_record(browser, bare_current, tmp_path):
    """With the session-start wrapper's record beside the store's workbench, the injections
    panel says what it served and failed open on, and the label sources name its record."""
    store = served_and_failed(bare_current, tmp_path / "hooked.db")[0]
    with _served("dashboard", "--db", str(store)) as url:
        page = _open(browser, url)
        summary = page.get_by_text("The session-start wrapper served 1 of these sessions").first
        summary.wait_for(timeout=90_000)
        assert "failed open on 1 (printing Signet's own choice)" in summary.inner_text()
        sources = page.get_by_text("Labels learn from session scores in 30 sessions").first
        assert "hook injections in 1 session (hook_injections.db)" in sources.inner_text()
        assert page.get_by_text("hook_outside").count() > 0  # the table's wrapper columns
        assert page.get_by_text(INTERNAL_ERROR).count() == 0
        _screenshot(page, "dashboard-current-hook")
        page.close()
