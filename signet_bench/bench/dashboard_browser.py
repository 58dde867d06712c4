"""The dashboard's first chart in a real browser: seconds from navigation to a drawn chart.

The notebook is served as `signet-bench app` serves it (`launch.run_command`: `marimo run`, one
process for every browser session) and opened in headless Chromium (Debian's, launched by path
and never downloaded) through Playwright. A run is a fresh server and a fresh browser context
(no cache): what the first visitor of a newly started app waits for. The clock starts as the
page is requested and stops when the first Altair chart is drawn: the first `canvas` inside a
`.vega-embed` element (Vega's canvas renderer, which marimo's altair output uses) that is
visible with a non-zero box and holds painted pixels. marimo creates that canvas only once the
chart's data has arrived, and the pixel check leaves out a canvas laid out but not yet painted;
the selector names no panel, so whichever chart is drawn first counts.

The page is complete when every cell of the notebook is done: the kernel has reported each
cell named in its `kernel-ready` message idle again after the page's first run (its `cell-op`
messages on the page's websocket, read as the browser receives them), every output sent.

Rows (docs/specification.md §12; metrics `p50` and `max`, unit `s`, `n` runs):
  dashboard_first_chart  the dashboard on the store (goal <= 3 s)
  dashboard_complete     the same page loads until every cell is done
  marimo_first_chart     a one-chart notebook (`FLOOR_NOTEBOOK`) served and opened the same
                         way, in the same runs: the part of the time that is marimo's and the
                         browser's whatever the notebook (on 2 cores, it follows the load)
and the ratios to `marimo_first_chart`'s p50 in the same run (metric `ratio_p50`, unit `x`):
`dashboard_first_chart` (goal <= 1.15) and `dashboard_complete` (goal <= 2), so a figure
measured on a slower host compares with one measured on a faster host.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from signet_bench.analysis.report import Row
from signet_bench.app.launch import free_port, run_command, serve
from signet_bench.errors import UserError

__all__ = [
    "CHART_SELECTOR",
    "COMPLETE_RATIO_GOAL",
    "FIRST_CHART_GOAL_S",
    "FIRST_CHART_RATIO_GOAL",
    "FLOOR_NOTEBOOK",
    "CellWatch",
    "FirstChart",
    "browser_rows",
    "chromium_path",
    "first_chart",
    "first_chart_rows",
]

CHROMIUM_PATHS = ("/usr/lib/chromium/chromium", "/usr/bin/chromium")
CHART_SELECTOR = ".vega-embed canvas"
FIRST_CHART_GOAL_S = 3.0
FIRST_CHART_RATIO_GOAL = 1.15  # dashboard_first_chart / marimo_first_chart, p50s of one run
COMPLETE_RATIO_GOAL = 2.0  # dashboard_complete / marimo_first_chart
BROWSER_RUNS = 5
CHART_TIMEOUT_S = 120.0
VIEWPORT = {"width": 1400, "height": 1000}

# marimo's own floor: one small chart, nothing read. Served and opened the same way, it is what
# any notebook costs before its first chart (the page's scripts, the session, Vega's start).
FLOOR_NOTEBOOK = """import marimo

app = marimo.App(width="full")

with app.setup:
    import altair as alt
    import marimo as mo
    import polars as pl


@app.cell
def _():
    _frame = pl.DataFrame({"x": [1, 2, 3], "y": [3.0, 1.0, 2.0]})
    _chart = alt.Chart(_frame).mark_bar().encode(x="x:O", y="y:Q")
    mo.ui.altair_chart(_chart, chart_selection=False, legend_selection=False)
    return


if __name__ == "__main__":
    app.run()
"""


def chromium_path() -> Path | None:
    """Debian's Chromium binary, or None when it is not installed."""
    return next((Path(p) for p in CHROMIUM_PATHS if Path(p).exists()), None)


# The canvas's painted (non-transparent) pixels.
_PAINTED_JS = """canvas => {
    const data = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
    let painted = 0;
    for (let i = 3; i < data.length; i += 4) if (data[i] > 0) painted++;
    return painted;
}"""


@dataclass(frozen=True, slots=True)
class FirstChart:
    """One page load: seconds from the request to the first drawn chart, that chart's canvas
    box in CSS pixels and its painted pixels, and seconds from the request to every cell done
    (`complete`; NaN when not waited for)."""

    seconds: float
    width: float
    height: float
    painted: int
    complete: float = math.nan


class CellWatch:
    """The kernel's cell statuses as a page's websocket brings them: `done` is the clock's
    time at which every cell `kernel-ready` named was reported idle after the first run."""

    def __init__(self, clock=time.perf_counter) -> None:
        self.clock = clock
        self.status: dict[str, str] = {}
        self.cells: frozenset[str] = frozenset()
        self.done: float | None = None

    def frame(self, payload: str | bytes) -> None:
        """One websocket message (JSON; others ignored)."""
        try:
            message = json.loads(payload)
        except (ValueError, TypeError):
            return
        if not isinstance(message, dict) or self.done is not None:
            return
        op, data = message.get("op"), message.get("data") or {}
        if op == "kernel-ready":
            self.cells = frozenset(data.get("cell_ids") or ())
        elif op == "cell-op" and data.get("status"):
            self.status[data["cell_id"]] = data["status"]
            ran = self.cells and self.cells <= self.status.keys()
            if ran and all(self.status[c] == "idle" for c in self.cells):
                self.done = self.clock()


def first_chart(
    browser, url: str, timeout_s: float = CHART_TIMEOUT_S, *, complete: bool = False
) -> FirstChart:
    """Open `url` in a new context of the Playwright `browser` (empty cache) and wait for the
    first drawn chart (`CHART_SELECTOR` visible), and with `complete` for every cell done
    (`CellWatch`)."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        page = context.new_page()
        watch = CellWatch()
        page.on("websocket", lambda ws: ws.on("framereceived", watch.frame))
        t0 = time.perf_counter()
        page.goto(url, wait_until="commit")
        chart = page.locator(CHART_SELECTOR).first
        chart.wait_for(state="visible", timeout=timeout_s * 1000)
        canvas = chart.element_handle()
        page.wait_for_function(
            f"c => ({_PAINTED_JS})(c) > 0", arg=canvas, polling="raf", timeout=timeout_s * 1000
        )
        seconds = time.perf_counter() - t0
        box = canvas.bounding_box() or {"width": 0.0, "height": 0.0}
        painted = int(canvas.evaluate(_PAINTED_JS))
        done = _wait_done(page, watch, t0 + timeout_s) if complete else math.nan
        return FirstChart(seconds, float(box["width"]), float(box["height"]), painted, done - t0)
    finally:
        context.close()


def _wait_done(page, watch: CellWatch, deadline: float) -> float:
    """The time every cell was done (`watch.done`); the page's events are delivered while it
    waits, and the time is taken as the message arrives, not when this loop sees it."""
    while watch.done is None:
        if time.perf_counter() > deadline:
            raise TimeoutError(f"not every cell was done within {CHART_TIMEOUT_S:g} s")
        page.wait_for_timeout(50)
    return watch.done


def _rows(name: str, charts: Sequence[FirstChart], goal: str | None) -> list[Row]:
    seconds = [c.seconds for c in charts]
    n = len(seconds)
    return [
        Row(name, "p50", float(np.median(seconds)), "s", n=n, goal=goal),
        Row(name, "max", float(max(seconds)), "s", n=n, goal=goal),
    ]


def first_chart_rows(dashboard: Sequence[FirstChart], floor: Sequence[FirstChart]) -> list[Row]:
    """The `dashboard_first_chart`, `dashboard_complete` (where the runs waited for it) and
    `marimo_first_chart` rows (p50 and max, in s), then the dashboard's ratios to marimo's
    first chart (p50 over p50)."""
    if not dashboard or not floor:
        raise ValueError("no browser run to report")
    rows = _rows("dashboard_first_chart", dashboard, f"<= {FIRST_CHART_GOAL_S:g} s")
    done = [dataclasses.replace(c, seconds=c.complete) for c in dashboard]
    waited = all(math.isfinite(c.seconds) for c in done)
    if waited:
        rows += _rows("dashboard_complete", done, None)
    rows += _rows("marimo_first_chart", floor, None)
    marimo = float(np.median([c.seconds for c in floor]))
    ratios = [("dashboard_first_chart", dashboard, FIRST_CHART_RATIO_GOAL)]
    ratios += [("dashboard_complete", done, COMPLETE_RATIO_GOAL)] if waited else []
    for name, charts, goal in ratios:
        p50 = float(np.median([c.seconds for c in charts]))
        rows.append(Row(name, "ratio_p50", p50 / marimo, "x", n=len(charts), goal=f"<= {goal:g}"))
    return rows


def _floor_command(notebook: Path, port: int) -> list[str]:
    """The one-chart notebook served as the app serves the dashboard."""
    return [
        sys.executable,
        "-m",
        "signet_bench.app.serve",
        "run",
        str(notebook),
        "--headless",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]


def _measure(browser, db: Path, runs: int, logs: Path) -> list[Row]:
    """The runs of `browser_rows` in the Playwright `browser`, servers' output in `logs`."""
    floor = logs / "one_chart.py"
    floor.write_text(FLOOR_NOTEBOOK)
    commands = {
        "dashboard": lambda port: run_command("dashboard", db, port=port, headless=True),
        "floor": lambda port: _floor_command(floor, port),
    }
    charts: dict[str, list[FirstChart]] = {name: [] for name in commands}
    for i in range(runs):
        for name, command in commands.items():
            port = free_port()
            with serve(command(port), port, logs / f"{name}-{i}.log") as url:
                charts[name].append(first_chart(browser, url, complete=name == "dashboard"))
    return first_chart_rows(charts["dashboard"], charts["floor"])


def browser_rows(
    db: Path, runs: int = BROWSER_RUNS, log_dir: Path | None = None, browser=None
) -> list[Row]:
    """The dashboard on the store `db` and the one-chart notebook, each opened `runs` times
    in turn, every time on a newly started app (see the module docstring); their rows.
    `browser`: a Playwright Chromium to use (default: Debian's, launched here); servers'
    output goes to `log_dir` (default: a temporary folder)."""
    with tempfile.TemporaryDirectory(prefix="signet-bench-browser-") as tmp:
        logs = log_dir or Path(tmp)
        if browser is not None:
            return _measure(browser, db, runs, logs)
        # here: Playwright is a dev extra, needed by --browser alone
        from playwright.sync_api import sync_playwright

        chromium = chromium_path()
        if chromium is None:
            paths = " or ".join(CHROMIUM_PATHS)
            raise UserError(f"the browser benchmark needs Chromium at {paths}")
        with sync_playwright() as p:
            launched = p.chromium.launch(executable_path=str(chromium), headless=True)
            try:
                return _measure(launched, db, runs, logs)
            finally:
                launched.close()
