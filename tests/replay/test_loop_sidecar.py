"""`simulate --scorer sidecar`: the loop scores through the real sidecar subprocess and trains
through its `train_from_db`, and gets the same rankings and comparisons as the in-process
scorer on the same store and seed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.world.synth.build import build_persona_store

# cold start, a training after 10 and 20 sessions (each swapped in) and sessions scored by
# each model: what the two scorers must agree on, at two thirds of 32 sessions' cost
SESSIONS = 24


def _rows(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    out = {}
    for scorer in ("model", "sidecar"):
        db = tmp_path_factory.mktemp(scorer) / "memories.db"
        build_persona_store("light", db, seed=7, n_memories=200)
        out[scorer] = (
            db,
            simulate(db, SESSIONS, SimOptions(scorer=scorer, seed=7, train_epochs=5)),
        )
    return out


def test_the_sidecar_trained_and_scored(both):
    db, report = both["sidecar"]
    assert report.trainings_accepted >= 2 and report.cold_start_exit_session is not None
    scored = _rows(db, "SELECT COUNT(*) FROM session_memories WHERE predictor_score IS NOT NULL")
    assert scored[0][0] > 0
    assert (db.parent / "memories.db.predictor" / "model.sbm").exists()


def test_same_rankings_and_injections(both):
    sql = (
        "SELECT s.idx, m.memory_id, m.rank, m.predictor_rank, m.was_injected, m.source "
        "FROM session_memories m JOIN sim_sessions s ON s.session_key = m.session_key "
        "ORDER BY s.idx, m.rank, m.memory_id"
    )
    assert _rows(both["model"][0], sql) == _rows(both["sidecar"][0], sql)


def test_same_comparisons_and_state(both):
    sql = (
        "SELECT s.idx, c.predictor_won, c.alpha, c.success_rate, c.candidate_count, "
        "ROUND(c.predictor_ndcg, 9), ROUND(c.baseline_ndcg, 9) FROM predictor_comparisons c "
        "JOIN sim_sessions s ON s.session_key = c.session_key ORDER BY s.idx"
    )
    assert _rows(both["model"][0], sql) == _rows(both["sidecar"][0], sql)
    model, sidecar = both["model"][1], both["sidecar"][1]
    assert model.final_state == sidecar.final_state
    assert (model.trainings, model.trainings_accepted) == (
        sidecar.trainings,
        sidecar.trainings_accepted,
    )
