"""The dashboard's load and per-filter view, and its one-sentence verdict."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from signet_bench.analysis.queries import dashboard as dash
from signet_bench.analysis.queries.sessions import projects_of
from signet_bench.analysis.queries.source import open_store
from signet_bench.config import DEFAULT_CONFIG


def test_view_follows_the_filters(con, demo):
    data = dash.load_dashboard(con, demo.store, demo.workbench, bench_dir=demo.bench_dir)
    everything = dash.dashboard_view(data)
    assert everything.sessions.height == data.sessions.height
    assert everything.status.mode == "active" and everything.status_line.startswith(
        "[predictor: active"
    )
    assert everything.resets.height >= 1 and everything.markers.height >= 1
    assert everything.latency.height > 0  # the demo's stage reports time the exported model
    project = projects_of(data.sessions)[0]
    one = dash.dashboard_view(data, [project])
    assert set(one.sessions["project"]) == {project}
    assert one.projects["project"].to_list() == [project]
    assert one.status == everything.status  # the state is global
    first = data.sessions["started_at"].min().date()
    early = dash.dashboard_view(data, None, first, first)
    assert early.sessions.height < data.sessions.height
    assert early.runs["created_at"].max() <= early.sessions["compared_at"].max()


def test_verdict_answers_whether_the_predictor_helps(con, demo):
    data = dash.load_dashboard(con, demo.store, demo.workbench)
    view = dash.dashboard_view(data)
    text, tone = dash.verdict(view, last=20)
    counted = view.sessions.filter(pl.col("counted")).sort("n").tail(20)
    assert counted.height == 20  # the demo judged enough sessions for a verdict
    e = dash.verdict_evidence(counted)
    assert f"it won {counted['predictor_won'].mean():.0%} (95% interval" in text
    assert f"margin {e.baseline}" in text
    cosine = counted["cosine_ndcg"].drop_nulls()
    assert cosine.len() > 0  # the simulator records the cosine ranking on the same ratings
    assert f"and {cosine.mean():.2f} for plain cosine, margin {e.cosine}" in text
    low, high = e.baseline.interval
    assert tone == ("success" if low > 0 else "warn" if high < 0 else "neutral")
    assert data.model_available is True and data.parameters and data.parameters > 0


@pytest.fixture(scope="module")
def active(demo):
    """The demo's view: past cold start, so the verdict weighs the sessions it is given."""
    con = open_store(demo.store)
    try:
        view = dash.dashboard_view(dash.load_dashboard(con, demo.store, demo.workbench))
    finally:
        con.close()
    assert view.status.cold_start_exited
    return view


def _judged(view, margins, base=0.5, cosine=None):
    """`view` showing judged sessions whose predictor NDCG@10 is the baseline's plus `margins`."""
    margins = np.asarray(margins, dtype=np.float64)
    n = len(margins)
    baseline = base + 0.05 * np.sin(np.arange(n))  # sessions differ; the margin is what counts
    frame = pl.DataFrame(
        {
            "n": np.arange(1, n + 1),
            "counted": pl.Series([True] * n, dtype=pl.Boolean),
            "predictor_won": pl.Series(margins > 0, dtype=pl.Boolean),
            "predictor_ndcg": baseline + margins,
            "baseline_ndcg": baseline,
            "cosine_ndcg": pl.Series([None] * n if cosine is None else cosine, dtype=pl.Float64),
        }
    )
    return dataclasses.replace(view, sessions=frame)


def test_below_the_minimum_the_verdict_is_too_early_to_tell(active):
    text, tone = dash.verdict(_judged(active, [0.3, 0.2, 0.4]))
    assert tone == "neutral"
    assert text.startswith("Too early to tell (3 sessions)") and "won 3 of 3" in text
    assert "helping" not in text and "%" not in text
    assert dash.verdict(_judged(active, []))[0].startswith("Too early to tell (0 sessions)")
    need = DEFAULT_CONFIG.verdict_min_sessions
    assert dash.verdict(_judged(active, [0.1] * (need - 1)))[0].startswith(
        f"Too early to tell ({need - 1} sessions)"
    )
    stricter = DEFAULT_CONFIG.replace(verdict_min_sessions=need + 10)
    assert dash.verdict(_judged(active, [0.1] * need), cfg=stricter)[1] == "neutral"
    assert dash.verdict(_judged(active, [0.1] * need))[1] == "success"


def test_a_clear_win_is_a_success_with_its_intervals(active):
    margins = 0.1 + 0.03 * np.cos(np.arange(30))  # every session won, by about 0.1
    text, tone = dash.verdict(_judged(active, margins))
    assert tone == "success" and text.startswith("Yes, the predictor is helping")
    assert "won 100% (95% interval 89%–100%)" in text  # Wilson: 30 / (30 + 1.96^2) = 0.886
    e = dash.verdict_evidence(_judged(active, margins).sessions)
    low, high = e.baseline.interval
    assert e.baseline.ndcg == pytest.approx(0.5 + 0.05 * np.sin(np.arange(30)).mean())
    assert e.predictor_ndcg == pytest.approx(e.baseline.ndcg + margins.mean())
    assert e.baseline.margin == pytest.approx(margins.mean())
    assert 0 < low < e.baseline.margin < high
    assert f"margin {e.baseline.margin:+.2f} (95% interval {low:+.2f} to " in text
    assert "plain cosine" not in text  # a real store has no cosine column values
    share = 1.0 - active.status.alpha
    assert text.endswith(f"It carries {share:.0%} of the ranking weight.")


def test_a_noisy_tie_is_no_clear_difference(active):
    margins = 0.2 * np.where(np.arange(40) % 2 == 0, 1.0, -1.0)  # won half, mean margin 0
    text, tone = dash.verdict(_judged(active, margins))
    assert tone == "neutral" and text.startswith("No clear difference yet")
    assert "won 50% (95% interval 35%–65%)" in text
    e = dash.verdict_evidence(_judged(active, margins).sessions)
    assert e.baseline.interval.low < 0 < e.baseline.interval.high


def test_a_clear_loss_warns(active):
    margins = -0.08 - 0.02 * np.sin(np.arange(25))
    text, tone = dash.verdict(_judged(active, margins))
    assert tone == "warn" and text.startswith("Not now: the baseline ranks better")
    assert "won 0% (95% interval 0%–13%)" in text  # Wilson: 1.96^2 / (25 + 1.96^2) = 0.133


def test_the_margin_interval_is_the_normal_interval_of_the_mean_for_many_sessions(active):
    rng = np.random.default_rng(11)
    margins = rng.normal(0.03, 0.1, size=400)
    e = dash.verdict_evidence(_judged(active, margins).sessions)
    half = 1.959964 * margins.std(ddof=1) / np.sqrt(len(margins))  # the reference interval
    assert e.baseline.margin == pytest.approx(margins.mean())
    assert e.baseline.interval.low == pytest.approx(margins.mean() - half, abs=0.15 * half)
    assert e.baseline.interval.high == pytest.approx(margins.mean() + half, abs=0.15 * half)
    assert dash.verdict_evidence(_judged(active, margins).sessions) == e  # fixed bootstrap seed
    same = dash.verdict_evidence(_judged(active, [0.05] * 20).sessions).baseline
    assert same.interval == pytest.approx((0.05, 0.05))


def test_the_cosine_margin_pairs_only_sessions_with_a_cosine_ranking(active):
    margins = [0.1] * 24
    cosine = [0.4, None] * 12  # half the sessions ran the simulator's cosine ranking
    view = _judged(active, margins, base=0.5, cosine=cosine)
    e = dash.verdict_evidence(view.sessions)
    paired = view.sessions.filter(pl.col("cosine_ndcg").is_not_null())
    assert e.cosine.ndcg == pytest.approx(0.4)
    assert e.cosine.margin == pytest.approx((paired["predictor_ndcg"] - 0.4).mean())
    assert f"and 0.40 for plain cosine, margin {e.cosine}" in dash.verdict(view)[0]
    with pytest.raises(ValueError, match="at least two judged sessions"):
        dash.verdict_evidence(view.sessions.head(1))


def test_a_young_store_is_in_cold_start(young):
    con = open_store(young)
    try:
        data = dash.load_dashboard(con, young, None)
        view = dash.dashboard_view(data)
    finally:
        con.close()
    assert view.status.mode == "collecting" and not view.status.cold_start_exited
    assert dash.verdict(view)[1] == "neutral" and "cold start" in dash.verdict(view)[0]
    assert view.steps.height == 0 and view.latency.height == 0 and view.errors.height == 0
    assert data.model_available is None


def test_a_store_without_the_simulators_tables_has_no_cosine_column_values(young, tmp_path):
    import shutil
    import sqlite3

    plain = tmp_path / "plain.db"
    shutil.copy(young, plain)
    with sqlite3.connect(plain) as db:
        db.execute("DROP TABLE sim_sessions")
    con = open_store(plain)
    try:
        sessions = dash.load_dashboard(con, plain, None).sessions
    finally:
        con.close()
    assert sessions.height > 0 and sessions["cosine_ndcg"].null_count() == sessions.height
