"""`bench dashboard` on a small store: the comparisons it adds, and every row it reports."""

from __future__ import annotations

import sqlite3

from signet_bench.bench.dashboard_speed import TRAIN_EVERY, add_comparisons, dashboard_timings
from signet_bench.store.scale import write_session_memories_scale


def test_comparisons_and_rows_on_a_small_store(tmp_path):
    db = tmp_path / "small.db"
    summary = write_session_memories_scale(db, 4_000, n_memories=200, seed=1)
    assert add_comparisons(db, seed=1) == summary.sessions
    con = sqlite3.connect(db)
    try:
        comparisons = con.execute("SELECT COUNT(DISTINCT session_key) FROM predictor_comparisons")
        assert comparisons.fetchone()[0] == summary.sessions
        runs = con.execute("SELECT COUNT(*) FROM predictor_training_log").fetchone()[0]
    finally:
        con.close()
    assert runs == summary.sessions // TRAIN_EVERY
    rows = dashboard_timings(db)
    names = {(r.name, r.metric) for r in rows}
    assert {("first_render", "p50"), ("filter_change", "p95"), ("query_sessions", "wall")} <= names
    assert all(r.value >= 0 and r.unit == "ms" for r in rows)
