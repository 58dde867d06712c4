"""The comparison inspector and the per-session event timeline."""

from __future__ import annotations

import shutil
import sqlite3

import polars as pl
import pytest

from signet_bench.analysis.queries import inspector as ins
from signet_bench.analysis.queries import sessions as s
from signet_bench.analysis.queries.source import open_store
from signet_bench.analysis.queries.training import training_runs
from signet_bench.config import DEFAULT_CONFIG


def _session(con, outcome: str, *, counted: bool | None = None) -> dict:
    """The latest session with that outcome (and that EMA status, when given): a session the
    judge was unsure of still records its comparison, but it does not count."""
    frame = s.session_frame(con).filter(pl.col("outcome") == outcome)
    if counted is not None:
        frame = frame.filter(pl.col("counted") == counted)
    return frame.row(-1, named=True)


def test_detail_holds_both_rankings_and_the_recorded_rows(con):
    row = _session(con, "predictor won", counted=True)
    d = ins.session_detail(con, row)
    raw = con.execute(
        "SELECT COUNT(*) FILTER (WHERE source <> 'fts_only'), COUNT(*) FILTER (WHERE source ="
        " 'fts_only') FROM store.session_memories WHERE session_key = ?",
        [row["session_key"]],
    ).fetchone()
    assert d.candidates.height == raw[0] and d.fts_missed.height == raw[1]
    assert d.baseline_top["rank"].to_list() == list(range(1, 11))
    assert d.predictor_top["rank"].to_list() == list(range(1, 11))
    assert d.predictor_top["memory_id"].to_list() != d.baseline_top["memory_id"].to_list()
    assert "passed the gate" in d.gate and "updated the success-rate EMA" in d.ema
    assert d.judge["reasoning"] and d.judge["confidence"] == pytest.approx(row["confidence"])


def test_diversity_only_attenuates(con):
    d = ins.session_detail(con, _session(con, "predictor won"))
    factor = d.candidates["diversity_factor"]
    assert (factor <= 1.0 + 1e-9).all()
    assert (factor >= DEFAULT_CONFIG.topic_diversity_floor - 1e-9).all()
    assert d.diversity.height == (factor < 1.0 - 1e-9).sum()


def test_events_of_the_session_that_reset_the_predictor(con, demo):
    frame = s.session_frame(con)
    resets = s.drift_resets(frame)
    row = frame.filter(pl.col("session_key") == resets["session_key"][0]).row(0, named=True)
    d = ins.session_detail(con, row)
    events = ins.session_events(con, d, training_runs(con, demo.workbench), resets)
    kinds = events["event"].to_list()
    for kind in ("prefilter", "scored", "fts_overlap", "comparison", "drift_reset", "trained"):
        assert kind in kinds
    assert events["at"].is_sorted()


def test_an_unscored_session_says_why_it_did_not_count(demo, tmp_path):
    """The shipped base scores from the first session, so a session without the scorer's
    scores (its sidecar down) is made on a copy: the newest uncounted comparison loses them."""
    store = tmp_path / "memories.db"
    shutil.copy(demo.store, store)
    with open_store(demo.store) as con:
        frame = s.session_frame(con).filter(
            ~pl.col("counted") & pl.col("predictor_ndcg").is_not_null()
        )
        key = frame.row(-1, named=True)["session_key"]
    write = sqlite3.connect(store)
    with write:
        write.execute(
            "UPDATE session_memories SET predictor_score = NULL, predictor_rank = NULL"
            " WHERE session_key = ?",
            [key],
        )
    write.close()
    with open_store(store) as con:
        row = s.session_frame(con).filter(pl.col("session_key") == key).row(0, named=True)
        assert row["outcome"] == "not scored"
        d = ins.session_detail(con, row)
    assert d.predictor_top.height == 0
    assert "did not score" in d.ema


def test_sqlite_literal_escapes_quotes():
    assert ins.sqlite_literal("it's") == "'it''s'"
