"""The demo as a library function: it returns its store, its report and per-block figures, and
a second run resumes instead of redoing anything."""

from __future__ import annotations

import polars as pl

from signet_bench.demo import comparison_blocks, run_demo


def test_run_demo_returns_data_and_is_idempotent(tmp_path):
    first = run_demo(tmp_path, 25)
    assert first.store == tmp_path / "demo.db" and first.store.exists()
    assert first.report.sessions_run == 25 and first.report.comparisons == 25
    assert first.blocks["sessions"].to_list() == [20, 5]
    again = run_demo(tmp_path, 25)
    assert again.report.sessions_run == 0 and again.report.sessions_skipped == 25
    assert again.blocks.equals(first.blocks)


def test_comparison_blocks_average_per_block():
    comps = pl.DataFrame(
        {
            "baseline_ndcg": [0.2, 0.4, 0.6],
            "predictor_ndcg": [0.5, 0.5, 0.1],
            "predictor_won": [True, True, False],
            "alpha": [1.0, 0.8, 0.6],
        }
    )
    blocks = comparison_blocks(comps, size=2)
    assert blocks["sessions"].to_list() == [2, 1]
    assert blocks["baseline_ndcg"].to_list() == [0.3, 0.6]
    assert blocks["win_rate"].to_list() == [1.0, 0.0]
    assert comparison_blocks(pl.DataFrame()).height == 0
