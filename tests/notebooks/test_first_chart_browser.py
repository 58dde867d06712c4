"""The dashboard's first chart in a real browser (Debian's chromium driven by Playwright): it is
drawn, and `bench dashboard --browser`'s measurement gives well-formed rows. Correctness
only: how long it takes is the benchmark's to report, never a test's to assert."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from signet_bench.app.priority import SESSION_NICE
from signet_bench.bench.dashboard_browser import CellWatch, browser_rows, first_chart
from signet_bench.bench.dashboard_speed import add_comparisons
from signet_bench.store.scale import write_session_memories_scale
from tests.notebooks import test_browser
from tests.notebooks.test_browser import TOKEN, _our_tracebacks, _served
from tests.scorer.test_train_from_db import thread_nices

pytestmark = test_browser.pytestmark
browser = test_browser.browser  # the shared Chromium fixture


@pytest.fixture(scope="module")
def heavy_use(tmp_path_factory):
    """The benchmark's kind of store, small: a heavy user's sessions with a comparison each and
    a training run every ten (active mode, every panel populated)."""
    db = tmp_path_factory.mktemp("first-chart") / "heavy.db"
    write_session_memories_scale(db, 4_000, n_memories=200, seed=1)
    add_comparisons(db, seed=1)
    return db


def _server_pid(url: str) -> int:
    """The pid of the server listening on `url`'s port (from its command line)."""
    flag = f"--port\0{url.rsplit(':', 1)[1]}\0".encode()
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and flag in (proc / "cmdline").read_bytes():
                pids.append(int(proc.name))
        except OSError:  # a process that ended while read
            continue
    assert len(pids) == 1, pids
    return pids[0]


def test_the_first_chart_is_the_judged_sessions_per_week(browser, heavy_use):
    """The first chart drawn is a painted canvas with a box, and it belongs to the panel read
    before the session frame; the sessions' reads after it ran at a lower priority than the
    server (`app.priority`)."""
    with _served("dashboard", "--db", str(heavy_use)) as url:
        chart = first_chart(browser, f"{url}/?access_token={TOKEN}")
        assert chart.seconds > 0 and chart.width > 0 and chart.height > 0 and chart.painted > 0
        page = test_browser._open(browser, url)
        weekly = page.locator(".marimo-cell").filter(has_text="Sessions the judge scored, per week")
        weekly.first.wait_for(timeout=60_000)
        weekly.first.locator(".vega-embed canvas").first.wait_for(timeout=60_000)
        page.get_by_text("Comparison inspector · session #").first.wait_for(timeout=60_000)
        page.get_by_text("Labels learn from").first.wait_for(timeout=120_000)
        assert page.get_by_text(test_browser.INTERNAL_ERROR).count() == 0
        server = _server_pid(url)
        base = os.getpriority(os.PRIO_PROCESS, server)
        assert base < 19 and min(19, base + SESSION_NICE) in thread_nices(server)
        page.close()


def test_browser_rows_are_well_formed(browser, heavy_use, tmp_path):
    """Two runs of each page on newly started apps: p50 and max in seconds, positive and
    finite, p50 no more than max, and the dashboard's ratios to marimo's first chart (p50 over
    p50); the served dashboard logged no error of ours."""
    rows = browser_rows(heavy_use, runs=2, log_dir=tmp_path, browser=browser)
    assert [(r.name, r.metric) for r in rows] == [
        ("dashboard_first_chart", "p50"),
        ("dashboard_first_chart", "max"),
        ("dashboard_complete", "p50"),
        ("dashboard_complete", "max"),
        ("marimo_first_chart", "p50"),
        ("marimo_first_chart", "max"),
        ("dashboard_first_chart", "ratio_p50"),
        ("dashboard_complete", "ratio_p50"),
    ]
    for row in rows:
        doc = row.to_json()
        assert set(doc) == {"name", "metric", "value", "unit", "n"}
        assert doc["unit"] == ("x" if row.metric == "ratio_p50" else "s") and doc["n"] == 2
        assert math.isfinite(doc["value"]) and doc["value"] > 0
    value = {(r.name, r.metric): r.value for r in rows}
    for name in ("dashboard_first_chart", "dashboard_complete", "marimo_first_chart"):
        assert value[(name, "p50")] <= value[(name, "max")]
    for name in ("dashboard_first_chart", "dashboard_complete"):
        ratio = value[(name, "p50")] / value[("marimo_first_chart", "p50")]
        assert value[(name, "ratio_p50")] == pytest.approx(ratio)
    logs = sorted(tmp_path.glob("dashboard-*.log"))
    assert len(logs) == 2
    for log in logs:
        assert not _our_tracebacks(log.read_text()), log.read_text()[-3000:]


def test_the_page_is_complete_when_every_cell_is_idle_again():
    """`CellWatch` reads the kernel's messages as the page's websocket brings them: done only
    once every cell `kernel-ready` named has been reported idle after running, at the time
    the last of them arrived."""
    clock = iter(range(100))
    watch = CellWatch(clock=lambda: float(next(clock)))
    ops = [("kernel-ready", {"cell_ids": ["a", "b"]})]
    ops += [("cell-op", {"cell_id": c, "status": "queued"}) for c in ("a", "b")]
    ops += [("cell-op", {"cell_id": "a", "status": "running"})]
    ops += [("cell-op", {"cell_id": "a", "status": "idle"})]
    for op, data in ops:
        watch.frame(json.dumps({"op": op, "data": data}))
        assert watch.done is None  # b still queued
    watch.frame(b"not json")
    watch.frame(json.dumps({"op": "cell-op", "data": {"cell_id": "b", "status": "running"}}))
    assert watch.done is None
    watch.frame(json.dumps({"op": "cell-op", "data": {"cell_id": "b", "status": "idle"}}))
    assert watch.done is not None
    done = watch.done
    watch.frame(json.dumps({"op": "cell-op", "data": {"cell_id": "a", "status": "running"}}))
    assert watch.done == done  # a later re-run does not move it
