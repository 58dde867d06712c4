"""Status card, status line (docs/specification.md §9.6) and health score (§9.1)."""

from __future__ import annotations

import dataclasses

import pytest

from signet_bench.analysis.queries import sessions as s
from signet_bench.analysis.queries import status as st
from signet_bench.analysis.queries.training import training_runs
from signet_bench.config import DEFAULT_CONFIG


def _status(**kw) -> st.PredictorStatus:
    base = {
        "mode": "active",
        "source": "test",
        "success_rate": 0.72,
        "alpha": 0.28,
        "model_version": 3,
        "scored_sessions": 142,
        "min_sessions": 10,
        "sessions": 150,
        "drift_resets": 0,
        "trained": True,
        "cold_start_exited": True,
    }
    return st.PredictorStatus(**(base | kw))


@pytest.mark.parametrize(
    ("kw", "line"),
    [
        (
            {
                "mode": "collecting",
                "scored_sessions": 4,
                "trained": False,
                "cold_start_exited": False,
            },
            "[predictor: collecting | 4/10 sessions | baseline only]",
        ),
        (
            {
                "mode": "warming",
                "success_rate": 0.38,
                "model_version": 1,
                "cold_start_exited": False,
            },
            "[predictor: warming | success_rate=0.38 | model_v1 | baseline only]",
        ),
        ({}, "[predictor: active | success_rate=0.72 | α=0.28 | model_v3 | 150 sessions]"),
        (
            {"mode": "retraining", "trained": False, "cold_start_exited": False, "drift_resets": 1},
            "[predictor: retraining | drift detected | baseline fallback]",
        ),
    ],
)
def test_status_line_per_mode(kw, line):
    assert st.status_line(_status(**kw)) == line


def test_health_follows_the_seed():
    cfg = DEFAULT_CONFIG
    cold = st.health(_status(cold_start_exited=False, mode="warming"), model_available=True)
    assert cold.score == cfg.health_cold_start and cold.status == "cold_start"
    assert st.health(_status(success_rate=1.0), model_available=True).score == 1.0
    mid = st.health(_status(success_rate=0.7), model_available=True)
    assert mid.status == "healthy" and cfg.health_healthy_min < mid.score < 1.0
    weak = st.health(_status(success_rate=0.4), model_available=True)
    assert weak.score == cfg.health_degraded_min and weak.status == "degraded"
    slow = st.health(_status(success_rate=1.0), model_available=True, latency_p95_ms=500)
    assert slow.score == pytest.approx(1.0 - cfg.health_latency_penalty)
    biased = st.health(_status(success_rate=1.0), model_available=None, drift=0.5)
    assert biased.score == pytest.approx(1.0 - cfg.health_drift_penalty)
    assert st.health(_status(), model_available=None, drift=-0.5).score > biased.score
    dead = st.health(_status(), model_available=False)
    assert dead.score == 0.0 and dead.color == "red"


def test_status_from_the_simulated_state(con, demo):
    sessions = s.session_frame(con)
    runs = training_runs(con, demo.workbench)
    state = st.read_state(con)
    status = st.predictor_status(state, sessions, runs, s.drift_resets(sessions).height)
    assert status.source == "simulator state"
    assert (status.success_rate, status.alpha) == (state.success_rate, state.alpha)
    assert status.mode == "active" and status.blockers == ()
    assert status.drift_resets == state.drift_resets >= 1
    assert status.last_trained_at == runs.filter("accepted")["created_at"].max()


def test_status_derived_when_the_store_keeps_no_state(con, demo):
    sessions = s.session_frame(con)
    runs = training_runs(con, demo.workbench)
    resets = s.drift_resets(sessions)
    derived = st.predictor_status(None, sessions, runs, resets.height)
    last = sessions.filter(sessions["success_rate"].is_not_null()).row(-1, named=True)
    assert derived.source == "derived from the store"
    assert derived.alpha == last["alpha"] and derived.success_rate == last["success_rate"]
    assert derived.model_version == runs["model_version"].max()
    assert derived.mode == ("active" if last["alpha"] < 1.0 else "warming")
    assert dataclasses.replace(derived, source="x").drift_resets == resets.height


def test_young_store_is_collecting(young):
    from signet_bench.analysis.queries.source import open_store

    con = open_store(young)
    try:
        sessions = s.session_frame(con)
        status = st.predictor_status(st.read_state(con), sessions, training_runs(con, None), 0)
    finally:
        con.close()
    assert status.mode == "collecting" and not status.trained
    assert any("scored sessions" in b for b in status.blockers)
    assert st.status_line(status).startswith("[predictor: collecting | ")
