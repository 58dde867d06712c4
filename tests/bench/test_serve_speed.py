"""The serving benchmark's hot swap through a real sidecar: score latency is reported with no
training running and while one runs, beside the hot swap's own rows, and the training swaps."""

from __future__ import annotations

from signet_bench.bench.serve_speed import _hotswap_rows


def test_hot_swap_reports_scores_idle_and_during_a_training(tmp_path):
    rows = {(r.name, r.metric): r for r in _hotswap_rows(tmp_path, n_idle=7, history=40)}
    assert rows[("hotswap", "swapped")].value == 1.0
    assert rows[("hotswap", "train_wall")].value > 0
    for metric in ("p50", "p99"):
        idle = rows[("score_idle", metric)]
        during = rows[("score_during_training", metric)]
        kept = rows[("hotswap", metric)]
        assert idle.unit == during.unit == kept.unit == "ms"
        assert idle.n == 7 and during.n == kept.n and during.n >= 1
        assert during.value == kept.value and 0 < idle.value and 0 < during.value
    assert rows[("score_idle", "p50")].value <= rows[("score_idle", "p99")].value
    assert rows[("score_during_training", "p99")].goal == "< 120 ms"
