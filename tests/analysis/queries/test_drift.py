"""The judge's drift signal over stretches of sessions, and success per stretch."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from signet_bench.analysis.judge_monitor import drift_signal
from signet_bench.analysis.queries import drift as d
from signet_bench.analysis.queries.sessions import session_frame


def test_judged_memories_have_ages_at_their_session(con):
    judged = d.judged_memories(con)
    raw = con.sql("SELECT COUNT(*) FROM store.session_memories WHERE relevance_score IS NOT NULL")
    assert judged.height == raw.fetchone()[0] > 0
    assert (judged["age_days"] >= 0).all()
    assert judged["relevance"].is_between(0, 1).all()


def test_the_indexed_read_matches_the_scan(con):
    sessions = session_frame(con).tail(5)
    few = d.judged_of_sessions(con, sessions).sort("session_key", "memory_id")
    all_ = d.judged_memories(con).filter(
        pl.col("session_key").is_in(sessions["session_key"].to_list())
    )
    all_ = all_.sort("session_key", "memory_id")
    assert few["memory_id"].to_list() == all_["memory_id"].to_list()
    assert few["age_days"].to_numpy() == pytest.approx(all_["age_days"].to_numpy(), abs=1e-6)


def test_drift_per_window_is_the_signal_of_its_rows(con):
    sessions = session_frame(con)
    judged = d.judged_memories(con)
    frame = d.drift_by_window(judged, sessions, 20)
    assert frame["last_n"].to_list() == [20, 40, 60, 80]
    first = sessions.filter(pl.col("n") <= 20)["session_key"]
    rows = judged.filter(pl.col("session_key").is_in(first.to_list()))
    expected = drift_signal(rows["relevance"].to_numpy(), rows["age_days"].to_numpy())
    got = frame["drift"][0]
    assert (math.isnan(got) and math.isnan(expected)) or got == pytest.approx(expected)
    per_project = d.drift_by_window(judged, sessions, 20, by_project=True)
    assert set(per_project["project"]) == set(sessions["project"])


def test_success_per_window_adds_up(con):
    sessions = session_frame(con)
    frame = d.success_by_window(sessions, 20, by_project=True)
    assert frame["counted"].sum() == sessions["counted"].sum()
    rates = frame.filter(pl.col("counted") > 0)
    assert np.allclose(rates["win_rate"], rates["wins"] / rates["counted"])
