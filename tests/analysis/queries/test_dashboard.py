"""The dashboard's load and per-filter view, and its one-sentence verdict."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from signet_bench.analysis.queries import dashboard as dash
from signet_bench.analysis.queries.served import SERVED_SCHEMA
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
    assert f"it won {counted['predictor_won'].mean():.0%} of them (95% interval" in text
    assert "Against Signet's baseline over the last 20 judged sessions: NDCG@10" in text
    assert f"margin {e.baseline}" in text
    cosine = counted["cosine_ndcg"].drop_nulls()
    assert cosine.len() > 0  # the simulator records the cosine ranking on the same ratings
    assert f"{e.cosine}" in text and "plain cosine" in text
    low, high = e.cosine.interval  # the strongest free ranker it records decides the tone
    assert tone == (
        "success" if low > 0 and not e.cosine.identical else "warn" if high < 0 else "neutral"
    )
    assert data.model_available is True and data.parameters and data.parameters > 0
    # the demo's served model, scored offline on the judged sessions beside the free rankers
    assert data.served.height > 0 and set(data.served["model"]) <= {"cosine", "hybrid", "learned"}


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


def _judged(view, margins, base=0.5, cosine=None, served=None):
    """`view` showing judged sessions whose predictor NDCG@10 is the baseline's plus `margins`
    (plain cosine's where given, and the served model's offline rows `served`, none by
    default)."""
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
    offline = pl.DataFrame(schema=SERVED_SCHEMA) if served is None else served
    return dataclasses.replace(view, sessions=frame, served=offline)


def _cosine_below(margins, by):
    """Cosine's NDCG@10 per session: the predictor's minus `by` (a margin per session)."""
    margins = np.asarray(margins, dtype=np.float64)
    baseline = 0.5 + 0.05 * np.sin(np.arange(len(margins)))
    return (baseline + margins - np.asarray(by, dtype=np.float64)).tolist()


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
    ahead = _cosine_below([0.1] * need, 0.1 + 0.01 * np.cos(np.arange(need)))
    assert dash.verdict(_judged(active, [0.1] * need, cosine=ahead), cfg=stricter)[1] == "neutral"
    assert dash.verdict(_judged(active, [0.1] * need, cosine=ahead))[1] == "success"


def test_a_clear_win_over_cosine_is_a_success_with_its_intervals(active):
    margins = 0.1 + 0.03 * np.cos(np.arange(30))  # every session won, by about 0.1
    lead = 0.05 + 0.02 * np.sin(np.arange(30))  # and cosine trails by about 0.05
    view = _judged(active, margins, cosine=_cosine_below(margins, lead))
    text, tone = dash.verdict(view)
    assert tone == "success" and text.startswith("Yes, the predictor is helping: the predictor")
    assert "beats the strongest free ranker, plain cosine, by an NDCG@10 margin of +0.05" in text
    assert "won 100% of them (95% interval 89%–100%)" in text  # Wilson: 30 / (30 + 1.96^2)
    e = dash.verdict_evidence(view.sessions)
    low, high = e.baseline.interval
    assert e.baseline.ndcg == pytest.approx(0.5 + 0.05 * np.sin(np.arange(30)).mean())
    assert e.predictor_ndcg == pytest.approx(e.baseline.ndcg + margins.mean())
    assert e.baseline.margin == pytest.approx(margins.mean())
    assert e.cosine.margin == pytest.approx(lead.mean())
    assert 0 < low < e.baseline.margin < high and e.cosine.interval.low > 0
    assert f"margin {e.baseline.margin:+.2f} (95% interval {low:+.2f} to " in text
    share = 1.0 - active.status.alpha
    assert text.endswith(f"It carries {share:.0%} of the ranking weight.")


def test_beating_the_baseline_alone_is_never_called_helping(active):
    """Without a free ranker's figures (a real store records none, and no served model was
    scored offline) a clear win over the baseline is told as such, never as helping."""
    margins = 0.1 + 0.03 * np.cos(np.arange(30))
    text, tone = dash.verdict(_judged(active, margins))
    assert tone == "neutral" and "helping" not in text
    assert text.startswith("Not measured against a free ranker: the predictor beats Signet's")
    assert "plain cosine" not in text


def test_a_predictor_that_ranks_as_cosine_adds_nothing(active):
    """The served model is cosine: a clear win over the baseline, margin +0.00 [+0.00, +0.00]
    over cosine. The headline says the learned part adds nothing, not helping."""
    margins = 0.3 + 0.05 * np.cos(np.arange(40))
    view = _judged(active, margins, cosine=_cosine_below(margins, [0.0] * 40))
    text, tone = dash.verdict(view)
    assert tone == "neutral" and "helping" not in text
    assert text.startswith("No gain yet: the predictor ranks every session as plain cosine")
    assert (
        "adds nothing over that free ranker: NDCG@10 margin +0.00 (95% interval +0.00 to "
        "+0.00)." in text
    )


def test_a_noisy_tie_with_cosine_is_no_clear_gain(active):
    margins = 0.2 * np.where(np.arange(40) % 2 == 0, 1.0, -1.0)  # won half, mean margin 0
    view = _judged(active, margins, cosine=_cosine_below(margins, margins))
    text, tone = dash.verdict(view)
    assert tone == "neutral" and text.startswith("No clear gain over plain cosine yet")
    assert "won 50% of them (95% interval 35%–65%)" in text
    e = dash.verdict_evidence(view.sessions)
    assert e.cosine.interval.low < 0 < e.cosine.interval.high


def test_a_clear_loss_to_cosine_warns(active):
    margins = -0.08 - 0.02 * np.sin(np.arange(25))
    view = _judged(active, margins, cosine=_cosine_below(margins, margins))
    text, tone = dash.verdict(view)
    assert tone == "warn" and text.startswith("Not now: plain cosine ranks better")
    assert "won 0% of them (95% interval 0%–13%)" in text  # Wilson: 1.96^2 / (25 + 1.96^2)


def test_offline_the_served_model_is_judged_against_the_stronger_free_ranker(active):
    """A store whose sessions carry no scorer scores: the served model's offline rows decide,
    against the hybrid where it leads cosine on them; the sessions it learned from are left
    out, and the labels' bias is said."""
    n = 30
    rng = np.random.default_rng(3)
    cosine = 0.5 + 0.1 * rng.random(n)
    hybrid = cosine + 0.02
    rows = pl.DataFrame(
        {
            "session_key": [f"s{i}" for i in range(n)],
            "started_at": [datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=i) for i in range(n)],
            "model_ndcg": hybrid + 0.04 + 0.01 * np.sin(np.arange(n)),
            "cosine_ndcg": cosine,
            "hybrid_ndcg": hybrid,
            "baseline_ndcg": cosine - 0.1,
            "learned_from": [i < 10 for i in range(n)],
            "hook_served": [i >= 25 for i in range(n)],
            "model": ["learned"] * n,
            "trained_until": [None] * n,
        }
    ).select(pl.col(c).cast(t) for c, t in SERVED_SCHEMA.items())
    offline = dataclasses.replace(active.status, mode="offline", cold_start_exited=False)
    view = dataclasses.replace(
        _judged(active, [0.1] * n, served=rows),
        status=offline,
        sessions=_judged(active, [0.1] * n).sessions.with_columns(predictor_scored=pl.lit(0)),
    )
    text, tone = dash.verdict(view)
    assert tone == "success", text
    assert text.startswith("Yes, the predictor is helping: the model the workbench serves beats")
    assert "Signet's hybrid (cosine with BM25 of the query terms), by an NDCG@10 margin" in text
    assert "on the store's last 20 judged sessions it did not learn from: NDCG@10" in text
    assert "labels exist mostly for what Signet injected" in text
    assert "in 5 of them the session-start wrapper served the model" in text
    f = dash.offline_free_ranker(rows.filter(~pl.col("learned_from")))
    assert f.versus.margin == pytest.approx(0.04 + 0.01 * np.sin(np.arange(10, n)).mean())
    few = dataclasses.replace(view, served=rows.head(12))
    assert dash.verdict(few)[0].startswith("Too early to tell (2 sessions)")
    none = dataclasses.replace(view, served=rows.head(0), next_step="Next: train it: `x`.")
    assert dash.verdict(none) == ("Nothing to judge yet. Next: train it: `x`.", "neutral")


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
    assert f"plain cosine, by an NDCG@10 margin of {e.cosine}" in dash.verdict(view)[0]
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
