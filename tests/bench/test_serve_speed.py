"""The serving benchmark: its hot swap through a real sidecar (score latency is reported with no
training running and while one runs, beside the hot swap's own rows, and the training swaps),
and its in-process rows (a whole score and its parts)."""

from __future__ import annotations

import pytest

from signet_bench.bench.serve_speed import _hotswap_rows, _inprocess_rows
from signet_bench.learn.export import model_bytes
from signet_bench.learn.model.checkpoint import CheckpointMeta
from signet_bench.learn.model.params import DEFAULT_SEED, init_params


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


def test_in_process_rows_time_the_score_and_its_parts(tmp_path):
    model = tmp_path / "model.onnx"
    model.write_bytes(model_bytes(init_params(seed=DEFAULT_SEED), CheckpointMeta()))
    rows = {(r.name, r.metric): r for r in _inprocess_rows(model, 5)}
    names = {name for name, _ in rows}
    assert names == {
        "score_inprocess_100x768",
        "score_inprocess_100x768_signals",
        "signals_100x768",
        "graph_100x768",
    }
    ratio = rows.pop(("score_inprocess_100x768_signals", "ratio_p50"))
    assert all(r.value > 0 and r.unit == "ms" and r.n == 5 for r in rows.values())
    p50 = rows[("score_inprocess_100x768", "p50")].value
    assert p50 <= rows[("score_inprocess_100x768", "p99")].value
    # the new inputs' cost, as a ratio of the two scores of the same run
    signals = rows[("score_inprocess_100x768_signals", "p50")].value
    assert ratio.value == pytest.approx(signals / p50) and ratio.unit == "x" and ratio.n == 5
    assert ratio.goal == "<= 2"


def test_in_process_rows_say_which_model_did_not_load(tmp_path):
    missing = tmp_path / "none.onnx"
    with pytest.raises(RuntimeError, match="none.onnx"):
        _inprocess_rows(missing, 5)
