"""The served app in a real browser: Debian's chromium driven by Playwright (launched by path,
never downloaded) against `marimo run` started with a token password.

Screenshots are saved under `out/screenshots/` (a test artifact, ignored by git)."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
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
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.holdout import free_ranker_name
from signet_bench.learn.model.checkpoint import load_checkpoint, save_checkpoint
from signet_bench.learn.model.params import init_params
from signet_bench.store.read import read_sessions
from signet_scorer.signals import signal_column
from tests.hook_records import record_prompt, record_start, served_and_failed, session_rows
from tests.lines import as_signet_leaves_it, simulated_store

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
        sys.executable,
        "-m",
        "signet_bench.app.serve",
        "run",
        str(notebook_path(notebook)),
        "--headless",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--token",
        "--token-password",
        TOKEN,
        "--",
        *args,
    ]
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
        for panel in (
            "Sessions the judge scored, per week",
            "Status",
            "Win/loss timeline",
            "Comparison inspector",
            "Training",
            "Errors",
            "Health",
        ):
            page.get_by_text(panel).first.wait_for(timeout=60_000)  # cells render in turn
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
        served = page.get_by_text("The shipped base serves: no session has been trained on yet.")
        assert served.count() > 0  # the base is in place from the first session, and says why
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
        verdict = page.get_by_text("Against Signet's baseline over the last").first
        assert "judged sessions: NDCG@10" in verdict.inner_text()
        assert "Judged offline" in verdict.inner_text()
        assert "helping" not in verdict.inner_text()  # no free ranker measured here
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


def test_current_store_dashboard_sets_prompt_time_beside_session_start(
    browser, bare_current, tmp_path
):
    """With prompts recorded by the user-prompt-submit wrapper, the injections panel counts them
    per session and sets them beside session start's per hook; without, it says why none."""
    store, served, _, shown = served_and_failed(bare_current, tmp_path / "prompted.db")
    rest = [m for m, _, _ in session_rows(store, served) if m not in shown]
    record_prompt(store, served, rest[:3])
    with _served("dashboard", "--db", str(store)) as url:
        page = _open(browser, url)
        summary = page.get_by_text("At the prompts, the scorer added 3 memories in 1 session").first
        summary.wait_for(timeout=90_000)
        assert "Session start injected Signet's choice: " in summary.inner_text()
        assert page.get_by_text("Session start and prompt time").count() > 0
        assert page.get_by_text("prompt_injected").count() > 0  # the per-session column
        assert page.get_by_text(INTERNAL_ERROR).count() == 0
        _screenshot(page, "dashboard-current-prompts")
        page.close()
    with _served("dashboard", "--db", str(bare_current)) as url:
        page = _open(browser, url)
        none = page.get_by_text("No prompt-time injection is in the hook log").first
        none.wait_for(timeout=90_000)
        assert "signet-bench-hook user-prompt-submit" in none.inner_text()
        page.close()


def _train(store: Path) -> Path:
    """`signet-bench train` on `store` into `<store>.predictor`, where the dashboard and the
    session-start wrapper look for the workbench (two epochs: the run is what counts)."""
    out = store.with_name(store.name + ".predictor")
    cmd = [
        sys.executable,
        "-m",
        "signet_bench.cli",
        "train",
        "--db",
        str(store),
        "--out",
        str(out),
        "--epochs",
        "2",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode in (0, 1), done.stderr[-2000:]  # 1: a gate rejected the run
    return out


@pytest.fixture(scope="module")
def as_signet_0145(tmp_path_factory) -> Path:
    """A current store as Signet 0.145 leaves it: no scorer scores, no comparisons, no state
    (the simulated daemon ran without a scorer), read only."""
    root = tmp_path_factory.mktemp("signet-0145")
    sim = simulated_store(root / "sim.db", "current", scorer="none")
    return as_signet_leaves_it(sim, root / "memories.db")


@pytest.fixture(scope="module")
def trained_current(as_signet_0145, tmp_path_factory) -> Path:
    """That store after `signet-bench train --db S --out S.predictor` (a run made today, long
    after the store's last session), the first session served by the session-start wrapper
    (its order reversed from Signet's) for the project `/work/app`, the second failed open."""
    store = tmp_path_factory.mktemp("trained") / "memories.db"
    shutil.copy(as_signet_0145, store)
    _serve_cosine(_train(store) / "model.sbm")
    first, second = read_sessions(store).sort("created_at")["session_key"].head(2)
    shown = [m for m, _, _ in session_rows(store, first)][:5]
    record_start(store, first, shown, project="/work/app")
    record_start(store, second, shown[:2], reason="no model at /models/model.onnx")
    return store


def _serve_cosine(checkpoint: Path) -> None:
    """The served model made plain cosine (fresh weights, lexical weight 0), as a workbench
    trained before the shipped base served: the base itself ranks otherwise."""
    params, meta = load_checkpoint(checkpoint)
    cosine = init_params(DEFAULT_CONFIG, meta.native_dim)
    cosine["signal_weights"][signal_column("lexical")] = 0.0
    save_checkpoint(checkpoint, {**params, **cosine}, meta)


def _headline(page, part: str) -> str:
    """The verdict's text: the element that holds `part` of it."""
    verdict = page.get_by_text(part).first
    verdict.wait_for(timeout=90_000)
    return verdict.inner_text()


def test_a_served_model_that_is_cosine_is_not_called_helping(browser, trained_current):
    """The served model ranks as plain cosine (no training moved it): the headline says the
    learned part adds nothing, with the interval, and never "helping"; the training panel
    shows the workbench's run although it was made after the store's last session; the
    injections panel shows the wrapper's reordering and the project its record names."""
    params, _ = load_checkpoint(trained_current.with_name("memories.db.predictor") / "model.sbm")
    assert free_ranker_name(params) == "cosine"  # the premise: the served model is cosine
    with _served("dashboard", "--db", str(trained_current)) as url:
        page = _open(browser, url)
        headline = _headline(page, "The workbench's served model is plain cosine itself")
        assert "helping" not in headline, headline
        assert headline.startswith(
            "No gain yet: the model the workbench serves ranks every session as plain cosine does"
        )
        assert "+0.00 (95% interval +0.00 to +0.00)" in headline
        page.get_by_text("Runs and canary figures").first.wait_for(timeout=60_000)
        assert page.get_by_text("No training run recorded yet").count() == 0
        reorder = page.get_by_text("How the wrapper reordered Signet's answer").first
        reorder.wait_for(timeout=90_000)
        assert page.get_by_text("(1 served session, newest first)").count() > 0
        page.locator("marimo-table").filter(has_text="signet_rank").first.wait_for(
            state="attached", timeout=60_000
        )
        assert page.get_by_text("/work/app").count() > 0  # the project of the wrapper's record
        assert page.get_by_text("The scorer ranked none of these sessions").count() == 0
        summary = page.get_by_text("In the 1 session the scorer ranked (1 of them served").first
        summary.wait_for(timeout=30_000)
        assert page.get_by_text(INTERNAL_ERROR).count() == 0
        _screenshot(page, "dashboard-current-trained-hook")
        page.close()


def test_a_training_run_of_the_workbench_shows_on_a_current_store(
    browser, as_signet_0145, tmp_path
):
    """A current-schema store (no training log) with a run `signet-bench train` recorded in
    the workbench: the training panel lists it, with its held-out verdict."""
    store = tmp_path / "memories.db"
    shutil.copy(as_signet_0145, store)
    out = _train(store)
    with _served("dashboard", "--db", str(store)) as url:
        page = _open(browser, url)
        page.get_by_text("Runs and canary figures").first.wait_for(timeout=90_000)
        runs = page.locator("marimo-table").filter(has_text="heldout_comparator").first
        runs.wait_for(state="attached", timeout=30_000)
        assert runs.get_attribute("data-total-rows") == "1"  # the one run `train` recorded
        page.get_by_text("heldout_comparator").first.wait_for(timeout=30_000)
        assert page.get_by_text("No training run recorded yet").count() == 0
        assert (out / "workbench.duckdb").exists()
        assert page.get_by_text(INTERNAL_ERROR).count() == 0
        _screenshot(page, "dashboard-current-trained")
        page.close()


def test_a_one_session_store_says_what_to_do_next(browser, tmp_path):
    """One judged session and no model: no dead end; the verdict names the next step with its
    command."""
    sim = simulated_store(tmp_path / "sim.db", "current", sessions=1, scorer="none")
    store = as_signet_leaves_it(sim, tmp_path / "one.db")
    with _served("dashboard", "--db", str(store)) as url:
        page = _open(browser, url)
        headline = _headline(page, "Nothing to judge yet")
        assert f"signet-bench train --db {store} --out {store}.predictor" in headline
        assert headline.count(". ") <= 2, headline  # the verdict, then one sentence
        assert page.get_by_text(INTERNAL_ERROR).count() == 0
        _screenshot(page, "dashboard-one-session")
        page.close()
