"""The dashboard's load and per-filter view, and its one-sentence verdict."""

from __future__ import annotations

import polars as pl

from signet_bench.analysis.queries import dashboard as dash
from signet_bench.analysis.queries.sessions import projects_of
from signet_bench.analysis.queries.source import open_store


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
    wins = counted["predictor_won"].mean()
    assert f"{wins:.0%}" in text
    cosine = counted["cosine_ndcg"].drop_nulls()
    assert cosine.len() > 0  # the simulator records the cosine ranking on the same ratings
    assert f"and {cosine.mean():.2f} for plain cosine" in text
    assert tone == ("success" if wins > 0.5 else "warn")
    assert data.model_available is True and data.parameters and data.parameters > 0


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
