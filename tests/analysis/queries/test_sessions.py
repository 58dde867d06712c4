"""Sessions: one row per session with its outcome, the filters, drift resets, slices."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta

import polars as pl

from signet_bench.analysis.queries import sessions as s
from signet_bench.analysis.queries.status import read_state
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.predictor_state import start_success
from signet_bench.learn.base import shipped_base_alpha
from tests.analysis.queries.stores import DEMO_SESSIONS


def test_one_row_per_session_in_judging_order(con):
    frame = s.session_frame(con)
    raw = con.sql("SELECT COUNT(DISTINCT session_key) FROM store.session_memories").fetchone()
    assert frame.height == raw[0] == DEMO_SESSIONS
    assert frame["n"].to_list() == list(range(1, DEMO_SESSIONS + 1))
    assert frame["compared_at"].is_sorted()
    assert set(frame["outcome"].unique()) <= set(s.OUTCOMES)


def test_outcomes_and_counted_follow_the_comparisons(con):
    frame = s.session_frame(con)
    counted = con.sql("SELECT COUNT(*) FROM store.predictor_comparisons WHERE ema_updated = 1")
    assert frame["counted"].sum() == counted.fetchone()[0]
    won = frame.filter(pl.col("outcome") == "predictor won")
    assert won["predictor_won"].all() and (won["predictor_scored"] > 0).all()
    lost = frame.filter(pl.col("outcome") == "baseline won")
    assert (lost["margin"] < 0).all()
    unscored = frame.filter(pl.col("outcome") == "not scored")
    assert (unscored["predictor_scored"] == 0).all() and not unscored["counted"].any()
    low = frame.filter(pl.col("low_confidence"))
    assert (low["confidence"] < DEFAULT_CONFIG.min_scorer_confidence).all()


def test_filters_narrow_by_project_and_day(con):
    frame = s.session_frame(con)
    projects = s.projects_of(frame)
    assert len(projects) > 1
    one = s.filter_sessions(frame, [projects[0]])
    assert one.height < frame.height and set(one["project"]) == {projects[0]}
    first_day = frame["started_at"].min().date()
    early = s.filter_sessions(frame, None, first_day, first_day)
    assert early.height > 0 and (early["started_at"].dt.date() == first_day).all()
    assert s.filter_sessions(frame, []).height == frame.height


def test_drift_resets_match_the_simulated_state(con):
    frame = s.session_frame(con)
    resets = s.drift_resets(frame)
    state = read_state(con)
    assert state is not None and resets.height == state.drift_resets >= 1
    # a reset returns to the success rate the shipped base earned (`start_success`)
    expected = start_success(shipped_base_alpha())
    assert expected != DEFAULT_CONFIG.initial_success_rate
    assert ((resets["reset_to"] - expected).abs() < 1e-9).all()
    assert (resets["success_rate"] < DEFAULT_CONFIG.drift_reset_threshold).all()


def _frame(rates: list[float]) -> pl.DataFrame:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    n = len(rates)
    return pl.DataFrame(
        {
            "n": list(range(1, n + 1)),
            "session_key": [f"s{i}" for i in range(n)],
            "compared_at": [t0 + timedelta(hours=i) for i in range(n)],
            "project": ["p"] * n,
            "success_rate": rates,
        }
    )


def test_an_ema_step_is_not_a_reset_but_a_jump_is():
    # 0.25 -> 0.325 is one EMA win step (0.1 * (1 - 0.25) = 0.075); 0.27 -> 0.5 is a reset
    frame = _frame([0.25, 0.325, 0.2925, 0.27, 0.5, 0.55])
    resets = s.drift_resets(frame)
    assert resets["n"].to_list() == [4]
    assert resets["reset_to"].to_list() == [0.5]


def test_slices_count_wins_among_counted_sessions(con):
    frame = s.session_frame(con)
    slices = s.project_slices(frame)
    assert slices["sessions"].sum() == frame.height
    assert (slices["wins"] <= slices["counted"]).all()
    assert (slices["counted"] <= slices["sessions"]).all()
    expected = (slices["wins"] / slices["counted"]).to_list()
    assert slices["win_rate"].to_list() == expected
    # each of the demo's sessions names its project's entity (the comparison's focal entity)
    named = s.entity_slices(frame).rename({"entity": "project"})
    assert named.equals(slices)


def test_recent_sessions_newest_first_with_the_gate(con):
    recent = s.recent_sessions(s.session_frame(con), 10)
    assert recent.height == 10 and recent["n"].is_sorted(descending=True)
    gate = recent["confidence"] >= DEFAULT_CONFIG.min_scorer_confidence
    assert recent["passes_gate"].to_list() == gate.to_list()


def test_a_young_store_is_scored_by_the_shipped_base_from_its_first_session(young):
    """Never trained, yet every session was scored: the shipped base serves from the first."""
    from signet_bench.analysis.queries.source import open_store

    con = open_store(young)
    try:
        frame = s.session_frame(con)
    finally:
        con.close()
    assert frame.height == 5
    assert (frame["predictor_scored"] > 0).all()
    assert "not scored" not in set(frame["outcome"])


def test_weekly_sessions_count_the_judged_sessions_by_week_and_gate(con):
    """Read from session_scores alone, they agree with the session frame's judged sessions
    (the latest score of each) grouped by the Monday of their week and the confidence gate."""
    weekly = s.weekly_sessions(con)
    gate = DEFAULT_CONFIG.min_scorer_confidence
    judged = s.session_frame(con).filter(pl.col("ended_at").is_not_null())
    expected = judged.group_by(
        pl.col("ended_at").dt.truncate("1w").dt.date().alias("week"),
        pl.when(pl.col("confidence").fill_null(0.0) >= gate)
        .then(pl.lit(s.CONFIDENCE_GROUPS[0]))
        .otherwise(pl.lit(s.CONFIDENCE_GROUPS[1]))
        .alias("judged"),
    ).agg(pl.len().alias("sessions"))
    assert sorted(weekly.rows()) == sorted(expected.rows())
    assert weekly["sessions"].sum() == judged.height == DEMO_SESSIONS
    assert set(weekly["judged"]) == set(s.CONFIDENCE_GROUPS)  # the demo has both
    assert (weekly["week"].dt.weekday() == 1).all()  # Mondays


FIRST_CHART_PROCESS = """
import sys
from signet_bench.analysis.queries.sessions import weekly_sessions
from signet_bench.analysis.queries.source import open_store
from signet_bench.app.dashboard_panels import first_chart

weekly = weekly_sessions(open_store(sys.argv[1]))
first_chart("store", weekly)
heavy = sys.argv[2:]
print(weekly["sessions"].sum(), *sorted(n for n in heavy if n in sys.modules))
"""


def test_the_first_chart_imports_neither_pandas_nor_pyarrow(demo):
    """The dashboard's first chart (notebooks/dashboard.py) waits for what its reads import: in
    a fresh process, the weekly sessions and their chart bring in neither pandas nor pyarrow
    (DuckDB imports them for a bound parameter or an Arrow result; the app's server preloads
    the notebook's modules, not these)."""
    heavy = ["pandas", "pyarrow"]
    done = subprocess.run(
        [sys.executable, "-c", FIRST_CHART_PROCESS, str(demo.store), *heavy],
        capture_output=True,
        text=True,
        check=True,
    )
    sessions, *imported = done.stdout.split()
    assert int(sessions) == DEMO_SESSIONS
    assert imported == [], f"the first chart imported {imported}"
