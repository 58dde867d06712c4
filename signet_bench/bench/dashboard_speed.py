"""`signet-bench bench dashboard`: the dashboard on a year of heavy use.

The store: `store.scale`'s one-year heavy-use store (4,000 memories, 18,750 sessions of 80
candidates: 1.5M `session_memories` rows; --quick: 150k rows), plus a comparison per session and
a training run every 10 sessions (written before any DuckDB connection opens it, then closed),
so the dashboard is in active mode with every panel populated.

Rows (stable names; times in ms):
  query_attach        wall  a new DuckDB connection with the store's views made (tables listed)
  query_sessions      wall  one row per session (session_memories aggregated, scores, comparisons)
  query_judged        wall  the latest 100 sessions' judged memories (judge drift signal)
  query_training      wall  training log + workbench runs
  query_state         wall  predictor state
  query_inspector     p50   one session's inspector view and event timeline
  first_render        p50/max  the dashboard notebook run headless from a new connection (its
                      default view: the last 90 days), every output rendered to HTML as the
                      server sends it (goal <= 5000 ms)
  filter_change       p50/p95  a project and/or date filter (up to the whole year): every panel's
                      frame, chart and table rebuilt and rendered (goal <= 1000 ms)
These times are the server's. With `browser=True` (`--browser`), also what a visitor waits for
(`bench.dashboard_browser`):
  dashboard_first_chart  p50/max  seconds from navigation to the first chart drawn in headless
                      Chromium, each run on a newly started app (goal <= 3 s)
  dashboard_complete  p50/max  seconds from navigation to every cell done
  ratio_p50           both rows against marimo's one-chart notebook in the same runs
"""

from __future__ import annotations

import importlib.util
import logging
import math
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import marimo as mo
import numpy as np

from signet_bench.analysis.queries import dashboard as dash
from signet_bench.analysis.queries import drift, inspector, status, training
from signet_bench.analysis.queries.dashboard import DRIFT_RECENT_SESSIONS
from signet_bench.analysis.queries.sessions import projects_of, session_frame
from signet_bench.analysis.queries.source import open_store
from signet_bench.analysis.report import Row, percentiles
from signet_bench.app import dashboard_panels as panels
from signet_bench.app.dashboard_charts import project_chart
from signet_bench.app.launch import notebook_path
from signet_bench.app.ui import static, table
from signet_bench.bench.dashboard_browser import browser_rows
from signet_bench.store.scale import write_session_memories_scale
from signet_bench.store.schema import connect_writer

__all__ = ["add_comparisons", "dashboard_rows", "dashboard_timings"]
_log = logging.getLogger(__name__)

FULL_ROWS, QUICK_ROWS = 1_500_000, 150_000
TRAIN_EVERY = 10
RENDER_REPEATS, FILTER_REPEATS, INSPECT_REPEATS = 3, 10, 20


def add_comparisons(path: Path, seed: int = 0) -> int:
    """A `predictor_comparisons` row per session and a training log row every TRAIN_EVERY
    sessions, with plausible values (a predictor improving over the year); returns the number
    of comparisons. Uses the store's writer connection; call it before DuckDB opens the store."""
    con = connect_writer(path)
    try:
        rows = con.execute(
            "SELECT session_key, project, created_at, confidence FROM session_scores"
            " ORDER BY created_at"
        ).fetchall()
        rng = np.random.default_rng(seed)
        n = len(rows)
        skill = np.linspace(-0.05, 0.12, n) + rng.normal(0, 0.15, n)
        base = np.clip(rng.beta(4, 3, n), 0, 1)
        pred = np.clip(base + skill, 0, 1.2)
        walk = np.cumsum(rng.normal(0, 0.05, n))
        rate = 0.3 + 0.6 / (1 + np.exp(-(walk - walk.mean())))
        cmp_rows = [
            (
                f"cmp-{i:07d}",
                key,
                float(pred[i]),
                float(base[i]),
                int(pred[i] > base[i]),
                float(pred[i] - base[i]),
                float(min(1.0, max(0.1, 1 - rate[i]))),
                int(conf is not None and conf >= 0.6),
                project,
                77,
                at,
                float(conf or 0),
                float(rate[i]),
            )
            for i, (key, project, at, conf) in enumerate(rows)
        ]
        con.execute("BEGIN")
        con.executemany(
            "INSERT INTO predictor_comparisons (id, session_key, predictor_ndcg, baseline_ndcg,"
            " predictor_won, margin, alpha, ema_updated, project, candidate_count, created_at,"
            " scorer_confidence, success_rate) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            cmp_rows,
        )
        runs = [
            (
                f"run-{j:05d}",
                j + 1,
                float(0.3 * math.exp(-j / 400) + rng.uniform(0, 0.05)),
                TRAIN_EVERY * (j + 1),
                900,
                float(rng.uniform(0.6, 0.8)),
                rows[i][2],
            )
            for j, i in enumerate(range(TRAIN_EVERY - 1, n, TRAIN_EVERY))
        ]
        con.executemany(
            "INSERT INTO predictor_training_log (id, model_version, loss, sample_count,"
            " duration_ms, canary_ndcg, created_at) VALUES (?,?,?,?,?,?,?)",
            runs,
        )
        con.execute("COMMIT")
    finally:
        con.close()
    return n


def _notebook(name: str) -> ModuleType:
    """A notebook file imported as a module (its `app` and `@app.function`s)."""
    spec = importlib.util.spec_from_file_location(f"signet_notebook_{name}", notebook_path(name))
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import notebook {name}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _html(value: Any) -> int:
    """Render an output as the browser receives it (HTML, chart specs inlined); its size."""
    return len(mo.as_html(value).text) if value is not None else 0


def _timed_ms(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1000.0


def _query_rows(db: Path) -> list[Row]:
    """Each load query once, on a new connection (the first render's order)."""
    timings = {}
    t0 = time.perf_counter()
    con = open_store(db)
    timings["query_attach"] = (time.perf_counter() - t0) * 1000.0
    try:
        t0 = time.perf_counter()
        sessions = session_frame(con)
        timings["query_sessions"] = (time.perf_counter() - t0) * 1000.0
        latest = sessions.sort("n").tail(DRIFT_RECENT_SESSIONS)
        timings["query_judged"] = _timed_ms(lambda: drift.judged_of_sessions(con, latest))
        timings["query_training"] = _timed_ms(lambda: training.training_runs(con, None))
        timings["query_state"] = _timed_ms(lambda: status.read_state(con))
    finally:
        con.close()
    return [Row(name, "wall", ms, "ms", n=1) for name, ms in timings.items()]


def _first_render(nb: ModuleType, db: Path) -> float:
    """The notebook run headless (a new connection), every cell's output rendered."""
    t0 = time.perf_counter()
    outputs, defs = nb.app.run(defs={"db_path": db, "workbench_path": None, "bench_dir": None})
    for out in outputs:
        _html(out)
    ms = (time.perf_counter() - t0) * 1000.0
    defs["con"].close()
    return ms


def _filter_change(data, projects: list[str], days) -> float:
    """What re-runs when a filter changes: the view and the panels drawn from it (the
    notebook's `dashboard_panels`), with the project slices' chart and table."""
    t0 = time.perf_counter()
    view = dash.dashboard_view(data, projects, *days)
    _html(panels.overview(data, view, []))
    _html(panels.status(data, view))
    _html(panels.timeline(*panels.timeline_widgets(view)))
    _html(panels.training(view))
    _html(panels.errors(view))
    _html(static(project_chart(view.projects)))
    _html(table(view.projects))
    return (time.perf_counter() - t0) * 1000.0


def _inspector_ms(con, data) -> list[float]:

    rng = np.random.default_rng(0)
    out = []
    for i in rng.choice(data.sessions.height, INSPECT_REPEATS, replace=False).tolist():
        row = data.sessions.row(int(i), named=True)
        t0 = time.perf_counter()
        detail = inspector.session_detail(con, row)
        inspector.session_events(con, detail, data.runs, data.sessions.head(0))
        out.append((time.perf_counter() - t0) * 1000.0)
    return out


def dashboard_timings(db: Path) -> list[Row]:
    """The query, first-render, filter-change and inspector rows on the store `db`."""
    nb = _notebook("dashboard")
    rows = _query_rows(db)
    renders = [_first_render(nb, db) for _ in range(RENDER_REPEATS)]
    rows += [
        Row(
            "first_render",
            "p50",
            float(np.median(renders)),
            "ms",
            n=RENDER_REPEATS,
            goal="<= 5000 ms",
        ),
        Row("first_render", "max", max(renders), "ms", n=RENDER_REPEATS, goal="<= 5000 ms"),
    ]
    con = open_store(db)
    try:
        data = dash.load_dashboard(con, db, None)
        days = data.sessions["started_at"].dt.date()
        span = (days.min(), days.max())
        choices = [
            (projects_of(data.sessions)[:1], (None, None)),
            ([], (span[0], span[0] + (span[1] - span[0]) / 2)),
            (projects_of(data.sessions)[:2], span),
        ]
        _filter_change(data, [], (None, None))  # warm-up
        filters = [_filter_change(data, *choices[i % 3]) for i in range(FILTER_REPEATS)]
        inspect = _inspector_ms(con, data)
    finally:
        con.close()
    for metric, value in percentiles(filters, (50, 95)).items():
        rows.append(Row("filter_change", metric, value, "ms", n=FILTER_REPEATS, goal="<= 1000 ms"))
    rows.append(Row("query_inspector", "p50", float(np.median(inspect)), "ms", n=INSPECT_REPEATS))
    return rows


def dashboard_rows(*, quick: bool = False, seed: int = 0, browser: bool = False) -> list[Row]:
    """Build the heavy-use store and time the dashboard on it, in a browser too when asked
    (see the module docstring)."""
    n_rows = QUICK_ROWS if quick else FULL_ROWS
    with tempfile.TemporaryDirectory(prefix="signet-bench-dashboard-") as tmp:
        db = Path(tmp) / "heavy.db"
        t0 = time.perf_counter()
        summary = write_session_memories_scale(db, n_rows, n_memories=4000, seed=seed)
        add_comparisons(db, seed)
        setup = time.perf_counter() - t0
        _log.info(
            f"store: {summary.session_memories:,} session_memories rows, "
            f"{summary.sessions:,} sessions ({setup:.1f} s to write)"
        )
        rows = [Row("store_sessions", "count", summary.sessions, "sessions", n=1)]
        rows += dashboard_timings(db)
        if browser:
            rows += browser_rows(db)
        return rows
