"""The embedded demo: what it holds (cold start passed, active mode, a drift reset, two projects,
trained and exported model, calibration labels, benchmark reports) and that a second run
changes nothing."""

from __future__ import annotations

import io
import json

import duckdb
import polars as pl

from signet_bench.analysis.queries.source import open_store
from signet_bench.analysis.queries.status import read_state
from signet_bench.app.demo import DEMO_BENCH, DemoProgress, comparison_blocks, run_demo
from signet_scorer import Scorer
from tests.analysis.queries.stores import DEMO_MEMORIES, DEMO_SESSIONS


def _workbench_counts(path) -> tuple[int, int, int]:
    with duckdb.connect(str(path), read_only=True) as con:
        return tuple(
            con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
            for t in ("predictor_calibration", "bench_runs", "training_runs")
        )


def test_the_demo_holds_every_state_the_dashboard_shows(demo):
    paths = demo
    con = open_store(paths.store)
    try:
        state = read_state(con)
        projects = con.sql("SELECT COUNT(DISTINCT project) FROM store.session_scores").fetchone()
        trainings = con.sql("SELECT COUNT(*) FROM store.predictor_training_log").fetchone()
    finally:
        con.close()
    assert state.cold_start_exited and state.trained and state.drift_resets >= 1
    assert projects[0] > 1 and trainings[0] > 0
    assert Scorer.open(paths.onnx).ready
    labels, bench_runs, _ = _workbench_counts(paths.workbench)
    assert labels > 0 and bench_runs == 4
    reports = sorted(paths.bench_dir.glob(f"{DEMO_BENCH}-*.json"))
    assert len(reports) == 4
    doc = json.loads(reports[-1].read_text())
    names = {(r["name"], r["metric"]) for r in doc["results"]}
    assert {
        ("predictor", "ndcg@10"),
        ("baseline", "ndcg@10"),
        ("score_inprocess_onnx", "p95"),
    } <= names


def test_a_second_run_changes_nothing(demo):
    paths = demo
    before = _workbench_counts(paths.workbench)
    files = {p: p.read_bytes() for p in paths.bench_dir.iterdir()}
    model = paths.model.read_bytes()
    log = io.StringIO()  # not a terminal: lines, no bar
    progress = DemoProgress(log, beat_s=None)
    again = run_demo(paths.dir, memories=DEMO_MEMORIES, progress=progress)
    assert log.getvalue() == f"demo: {paths.dir}: {DEMO_SESSIONS} sessions, up to date\n"
    assert again.report.sessions_run == 0 and again.report.sessions_skipped == DEMO_SESSIONS
    assert again.bench_reports == () and again.labels_written == before[0]
    assert _workbench_counts(paths.workbench) == before
    assert {p: p.read_bytes() for p in paths.bench_dir.iterdir()} == files
    assert paths.model.read_bytes() == model
    assert again.blocks["sessions"].sum() == DEMO_SESSIONS


def test_comparison_blocks_average_per_block():
    comps = pl.DataFrame(
        {
            "baseline_ndcg": [0.2, 0.4, 0.6],
            "predictor_ndcg": [0.5, 0.5, 0.1],
            "predictor_won": [True, True, False],
            "alpha": [1.0, 0.8, 0.6],
        }
    )
    blocks = comparison_blocks(comps, size=2)
    assert blocks["sessions"].to_list() == [2, 1]
    assert blocks["baseline_ndcg"].to_list() == [0.3, 0.6]
    assert blocks["win_rate"].to_list() == [1.0, 0.0]
    assert comparison_blocks(pl.DataFrame()).height == 0


class _Clock:
    """Seconds that pass only when a test says so."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_off_a_terminal_is_a_line_every_few_seconds_and_at_the_end():
    log, clock = io.StringIO(), _Clock()
    progress = DemoProgress(log, tty=False, every_s=5.0, clock=clock, beat_s=None)
    progress.step("building the synthetic store (600 memories) in out")
    for done in range(1, 41):
        clock.now += 0.5  # a session every half second: a line every 10 of them
        progress.sessions(done, 120)
    progress.training()
    progress.tick()  # nothing due yet
    clock.now += 4.0
    progress.tick()
    clock.now += 3.0  # the training: 7 s without a session
    progress.tick()
    for done in range(41, 121):
        clock.now += 0.5
        progress.sessions(done, 120)
    progress.close()
    lines = log.getvalue().splitlines()
    assert lines[:3] == [
        "demo: building the synthetic store (600 memories) in out",
        "demo: simulating sessions 10/120 (8%) · 5 s",
        "demo: simulating sessions 20/120 (16%) · 10 s",
    ]
    assert lines[4:6] == [
        "demo: simulating sessions 40/120 (33%) · 20 s",
        "demo: training the model after 41 of 120 sessions · 27 s",
    ]
    assert lines[-1] == "demo: simulating sessions 120/120 (100%) · 67 s"  # the last, always
    assert len(lines) == 1 + 4 + 1 + 8


def test_progress_on_a_terminal_is_a_bar_with_the_steps_above_it():
    out = io.StringIO()
    progress = DemoProgress(out, tty=True, beat_s=None)
    progress.sessions(30, 120)
    progress.training()
    progress.step("30 of 120 sessions: model exported, report demo-0030.json")
    progress.sessions(60, 120)
    progress.close()
    text = out.getvalue()
    assert "demo: sessions" in text and "30/120" in text and "\r" in text  # a redrawn bar
    assert "training" in text  # the bar says a training runs
    assert "demo: 30 of 120 sessions: model exported, report demo-0030.json\n" in text
    assert "simulating sessions" not in text  # no log lines on a terminal
