"""The comparisons and the success-rate EMA stay computable on a current store, which has no
predictor_comparisons: recomputed from its sessions, they equal, value for value, the rows the
loop wrote to a 0.58 store of the same sessions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import polars as pl

from signet_bench.replay.comparison_log import derive_comparisons, store_comparisons
from signet_bench.store.read import read_comparisons
from signet_bench.store.schema import create_store
from tests.lines import LINE_SESSIONS


def test_recomputed_rows_equal_the_written_ones(line_stores: dict[str, Path]) -> None:
    """Check on the 0.58 store that derive_comparisons reproduces predictor_comparisons, every
    column (EMA, alpha, NDCGs, JSON lists, times) included."""
    written = read_comparisons(line_stores["0.58"])
    derived = derive_comparisons(line_stores["0.58"])
    assert written.height == LINE_SESSIONS
    assert derived.equals(written)
    assert written["ema_updated"].any() and written["success_rate"].n_unique() > 1


def test_a_current_store_gets_the_same_comparisons(line_stores: dict[str, Path]) -> None:
    old = store_comparisons(line_stores["0.58"])
    new = store_comparisons(line_stores["current"])
    assert new.equals(old)
    assert read_comparisons(line_stores["current"]).height == 0  # nothing was written


def test_without_predictor_scores_the_baseline_alone_ranks(tmp_path: Path) -> None:
    """Check a current store as Signet's daemon leaves it (predictor_score NULL, no simulator
    tables): alpha 1.0, no win, no EMA update, success rate at its start."""
    db = create_store(tmp_path / "real.db", schema="current")
    con = sqlite3.connect(db)
    con.execute(
        "INSERT INTO session_scores (id, session_key, project, score, created_at, confidence)"
        " VALUES ('sc1', 's1', 'p', 0.7, '2026-03-01T10:30:00.000Z', 0.9)"
    )
    for rank, (mid, rel) in enumerate([("m1", 0.2), ("m2", 0.9), ("m3", None)]):
        con.execute(
            "INSERT INTO session_memories (id, session_key, memory_id, source, effective_score,"
            " final_score, rank, was_injected, relevance_score, created_at)"
            " VALUES (?, 's1', ?, 'effective', ?, ?, ?, ?, ?, '2026-03-01T10:00:00.000Z')",
            (f"r{rank}", mid, 1 - rank / 10, 1 - rank / 10, rank, int(rank < 2), rel),
        )
    con.commit()
    con.close()
    rows = store_comparisons(db)
    row = rows.row(0, named=True)
    assert rows.height == 1
    assert (row["alpha"], row["predictor_won"], row["ema_updated"]) == (1.0, False, False)
    assert row["success_rate"] == 0.5 and row["predictor_ndcg"] == 0.0
    assert 0.0 < row["baseline_ndcg"] < 1.0  # m2, the relevant one, ranks second
    assert row["created_at"].isoformat() == "2026-03-01T10:32:00+00:00"
    assert rows.schema == read_comparisons(db).schema


def test_an_empty_current_store_has_no_comparisons(tmp_path: Path) -> None:
    db = create_store(tmp_path / "empty.db", schema="current")
    rows = derive_comparisons(db)
    assert rows.height == 0 and isinstance(rows, pl.DataFrame)
    assert rows.schema == read_comparisons(db).schema
