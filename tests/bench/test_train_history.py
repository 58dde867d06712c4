"""`bench train` over a growing history (quick sizes): one scheduled training per size, run as
the sidecar runs it in a child process of its own, its rows in the report contract and its
gate's verdict consistent with the numbers it was judged by."""

from __future__ import annotations

import json
import math
import sys

import pytest

from signet_bench.analysis.report import Row, write_report
from signet_bench.bench.train_history import QUICK_HISTORY, history_rows, run_child
from signet_bench.bench.train_speed import FULL, reference_ratios

METRICS = {
    "wall_s",
    "peak_mb",
    "train_s",
    "epochs",
    "train_sessions",
    "gate_sessions",
    "gate_ndcg@10",
    "gate_bar@10",
    "accepted",
    "heldout_ndcg@10",
    "cosine_ndcg@10",
    "heldout-cosine",
    "first_ndcg@10",
    "heldout-first",
}


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """The quick sizes' rows, each training (and its judge) bounded at 24 optimizer steps a fit:
    what these tests check of the rows, the gate's verdict and the folds does not depend on
    how far a model trains."""
    config = tmp_path_factory.mktemp("train-history") / "agent.yaml"
    config.write_text("predictor:\n  trainingStepBudget: 24\n")
    return history_rows(quick=True, config=str(config))


def _by_size(rows) -> dict[int, dict[str, object]]:
    out: dict[int, dict[str, object]] = {}
    for r in rows:
        assert r.name == "scheduled_training"
        assert r.metric not in out.setdefault(r.n, {}), (r.n, r.metric)
        out[r.n][r.metric] = r
    return out


def test_every_size_has_every_metric_once(rows):
    by_size = _by_size(rows)
    assert sorted(by_size) == sorted(QUICK_HISTORY)
    for metrics in by_size.values():
        assert set(metrics) == METRICS
        assert all(math.isfinite(r.value) for r in metrics.values())
        for name in ("heldout_ndcg@10", "cosine_ndcg@10", "first_ndcg@10"):
            r = metrics[name]
            assert 0.0 <= r.ci_low <= r.value <= r.ci_high <= 1.0


def test_the_smallest_size_s_model_is_judged_on_every_later_size_s_sessions(rows):
    """At the smallest size it is the served model; later it is scored on the same sessions as
    the model served then, and the paired difference is theirs."""
    by_size = _by_size(rows)
    first = by_size[min(by_size)]
    assert first["first_ndcg@10"].value == first["heldout_ndcg@10"].value
    assert first["heldout-first"].value == 0.0
    for m in by_size.values():
        diff = m["heldout_ndcg@10"].value - m["first_ndcg@10"].value
        assert m["heldout-first"].value == pytest.approx(diff, abs=1e-12)
        assert m["heldout-first"].ci_low <= m["heldout-first"].value <= m["heldout-first"].ci_high


def test_each_training_was_gated_on_held_out_sessions(rows):
    """30 sessions are judged by forward folds (the served model then learns from every
    session), 80 by the newest sessions held out of its training."""
    for n, m in _by_size(rows).items():
        trained, judged = m["train_sessions"].value, m["gate_sessions"].value
        assert judged >= 1 and trained >= 1 and m["epochs"].value <= 50
        assert m["accepted"].value in (0.0, 1.0)
        # the verdict is the rule: served only if it reaches the bar on the held-out sessions
        assert bool(m["accepted"].value) == (m["gate_ndcg@10"].value >= m["gate_bar@10"].value)
        assert m["peak_mb"].value > 0 and m["wall_s"].value >= m["train_s"].value
        assert trained <= n and judged < n
        if n == QUICK_HISTORY[-1]:  # a time hold-out: its sessions are not trained on
            assert trained + judged <= n


def test_the_rows_are_a_benchmark_report(rows, tmp_path):
    path = tmp_path / "train.json"
    write_report(path, "train", rows)
    doc = json.loads(path.read_text())
    assert doc["bench"] == "train" and doc["machine"]["cores"] >= 1
    for r in doc["results"]:
        assert {"name", "metric", "value", "unit", "n"} <= set(r)


def test_sizes_closer_than_the_judged_sessions_are_refused():
    with pytest.raises(ValueError, match="must exceed the one before by the 20 sessions"):
        history_rows(sizes=(30, 40), held_out=20)


def test_a_child_s_peak_memory_is_its_own_not_the_process_that_started_it(tmp_path):
    """The child touches 100 MB while this process holds 300 MB: its peak is its own (a child
    started straight from here would report this process's 300 MB)."""
    held = bytearray(b"x") * 300_000_000
    code = "b = bytearray(b'x') * 100_000_000; print(len(b))"
    run = run_child([sys.executable, "-c", code], {}, tmp_path)
    assert run.returncode == 0 and run.stdout.strip() == "100000000"
    assert 100 <= run.peak_mb < 200
    assert len(held) == 300_000_000
    failed = run_child([sys.executable, "-c", "raise SystemExit(3)"], {}, tmp_path)
    assert failed.returncode == 3


def test_each_size_s_wall_time_is_also_a_ratio_to_the_reference_of_the_run(rows):
    """`bench train` reports every size's wall time over the reference training's of the same
    run, beside it; the goal is shown against the full reference only."""
    ref = Row(f"train_{FULL[0]}x80x768_{FULL[1]}ep", "wall", 2.5, "s", n=1)
    out = reference_ratios([ref], rows)
    ratios = {r.n: r for r in out if r.metric == "ratio_to_reference"}
    walls = {r.n: r for r in rows if r.metric == "wall_s"}
    assert sorted(ratios) == sorted(walls) == sorted(QUICK_HISTORY)
    for n, r in ratios.items():
        assert r.value == pytest.approx(walls[n].value / 2.5) and r.unit == "x"
        assert r.goal == "<= 2" and out[out.index(r) - 1] is walls[n]
    assert [r for r in out if r.metric != "ratio_to_reference"] == list(rows)
    quick = reference_ratios([Row("train_100x80x768_10ep", "wall", 1.0, "s")], rows)
    assert all(r.goal is None for r in quick if r.metric == "ratio_to_reference")
