"""Training runs, the loss curve, reset markers, latency colours, benchmark rows, errors."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import polars as pl

from signet_bench.analysis.queries import training as t
from signet_bench.config import DEFAULT_CONFIG


def test_runs_join_the_log_and_the_workbench(con, demo):
    runs = t.training_runs(con, demo.workbench)
    log = con.sql("SELECT COUNT(*) FROM store.predictor_training_log").fetchone()[0]
    assert runs.height == log > 0
    assert runs["created_at"].is_sorted() and runs["run"].to_list() == list(range(1, log + 1))
    assert runs["accepted"].to_list() == runs["gate_passed"].to_list()
    curves = runs["loss_curve"].to_list()
    assert any(len(c) > 0 for c in curves)
    # a run whose held-out sessions chose the start trained no epoch: no curve to end
    assert [c[-1] for c in curves if c] == [
        loss for c, loss in zip(curves, runs["loss"].to_list(), strict=True) if c
    ]


def test_runs_carry_their_held_out_verdicts(con, demo):
    runs = t.training_runs(con, demo.workbench)
    judged = runs.filter(pl.col("heldout_method").is_not_null())
    assert judged.height > 0  # the demo's loop trains with the held-out judge
    assert set(judged["heldout_method"].to_list()) <= {"time", "forward"}
    assert set(judged["heldout_comparator"].to_list()) <= {"cosine", "hybrid", "served", "start"}
    for r in judged.iter_rows(named=True):
        assert r["heldout_sessions"] > 0
        # a finite run serves its model when shown better than the base, else the base, or
        # the free ranker where the base trails it
        assert r["accepted"] and r["served_model"] in ("base", "per-user", "free")
        assert (r["served_model"] == "per-user") == (r["gate_reason"] == "passed")
        opening = {
            "per-user": "This user's own model serves",
            "base": "The shipped base serves",
            "free": "The free ranker ",
        }
        assert r["served_why"].startswith(opening[r["served_model"]])
    # the served model and why, the newest run's choice
    assert t.served_now(demo.workbench) == judged.sort("created_at")["served_why"][-1]
    assert judged["heldout_lead_needed"].max() == DEFAULT_CONFIG.holdout_gain_evidence


def test_an_older_workbench_without_verdicts_still_reads(con, tmp_path):
    import duckdb

    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as old:
        old.execute("CREATE TABLE training_runs (run_id TEXT, loss_curve TEXT, epochs INTEGER)")
        old.execute("INSERT INTO training_runs VALUES ('x', '[0.5, 0.4]', 2)")
    runs = t.training_runs(con, path)
    assert set(t.HOLDOUT_COLUMNS) <= set(runs.columns)
    assert runs["heldout_method"].null_count() == runs.height


def test_without_a_workbench_a_new_model_version_means_accepted(con):
    runs = t.training_runs(con, None)
    version_rose = runs["model_version"] > runs["model_version"].shift(1).fill_null(0)
    assert runs["accepted"].to_list() == version_rose.to_list()
    steps = t.loss_steps(runs)
    assert steps.height == runs.height  # one point per run: its final loss


def test_loss_steps_count_every_epoch(con, demo):
    runs = t.training_runs(con, demo.workbench)
    steps = t.loss_steps(runs)
    # one point per epoch; a run that trained no epoch (the start was chosen) shows its one
    # recorded loss
    assert steps.height == sum(max(1, len(c)) for c in runs["loss_curve"].to_list())
    assert steps["step"].to_list() == list(range(1, steps.height + 1))


def test_reset_markers_fall_on_the_next_run():
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    steps = pl.DataFrame(
        {
            "step": [1, 2, 3, 4, 5, 6],
            "run": [1, 1, 2, 2, 3, 3],
            "model_version": [1, 1, 2, 2, 3, 3],
            "loss": [0.5] * 6,
            "accepted": [True] * 6,
            "created_at": [t0 + timedelta(hours=h) for h in (1, 1, 5, 5, 9, 9)],
        }
    )
    resets = pl.DataFrame({"n": [40], "compared_at": [t0 + timedelta(hours=4)]})
    marks = t.reset_markers(steps, resets)
    assert marks["step"].to_list() == [3] and marks["n"].to_list() == [40]
    late = resets.with_columns(pl.lit(t0 + timedelta(hours=10)).alias("compared_at"))
    assert t.reset_markers(steps, late).height == 0


def _bench(values_ms: list[float]) -> pl.DataFrame:
    n = len(values_ms)
    return pl.DataFrame(
        {
            "run": [f"r{i}" for i in range(n)],
            "created_at": [None] * n,
            "bench": ["serve"] * n,
            "name": ["score_inprocess_100x768"] * n,
            "metric": ["p95"] * n,
            "value": values_ms,
            "unit": ["ms"] * n,
        },
        schema_overrides={"created_at": pl.Datetime("us")},
    )


def test_latency_colours_against_the_timeout():
    timeout = DEFAULT_CONFIG.score_timeout_ms
    warn = timeout * DEFAULT_CONFIG.latency_warning_share
    lat = t.latency_series(_bench([warn / 2, (warn + timeout) / 2, timeout + 1]))
    assert lat["color"].to_list() == ["green", "yellow", "red"]
    other = _bench([1.0]).with_columns(pl.lit("load_memories").alias("name"))
    assert t.latency_series(other).height == 0


def test_bench_rows_read_the_workbench_and_files_once(demo, tmp_path):
    rows = t.bench_rows(demo.workbench, demo.bench_dir)
    files = sorted(demo.bench_dir.glob("*.json"))
    assert rows.select("bench", "run").n_unique() == len(files) == 4
    assert set(rows["source"]) == {"workbench"}  # the files are the same reports
    extra = {
        "bench": "store",
        "results": [{"name": "x", "metric": "p50", "value": 2, "unit": "ms"}],
    }
    (tmp_path / "store.json").write_text(json.dumps(extra))
    more = t.bench_rows(demo.workbench, tmp_path)
    assert more.height == rows.height + 1
    assert more.filter(pl.col("bench") == "store")["value"].to_list() == [2.0]
    assert t.bench_rows(None, None).height == 0


def test_error_feed_lists_diverged_runs_and_rejections_are_apart():
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    runs = pl.DataFrame(
        {
            "run": [1, 2, 3],
            "model_version": [1, 1, 2],
            "loss": [0.3, math.inf, 0.2],
            "accepted": [True, False, False],
            "gate_reason": [None, None, "canary top-5 overlap 0.4 < 0.6"],
            "created_at": [t0, t0 + timedelta(hours=1), t0 + timedelta(hours=2)],
        }
    )
    feed = t.error_feed(runs)
    assert feed["kind"].to_list() == ["predictor_train_failure"]
    assert "diverged" in feed["detail"][0] and "run 2" in feed["detail"][0]
    rejected = t.gate_rejections(runs.with_columns(heldout_ndcg=pl.lit(None, pl.Float64)))
    assert rejected["run"].to_list() == [3]  # the diverged run is an error, not a rejection
    assert rejected["reason"].to_list() == ["canary top-5 overlap 0.4 < 0.6"]
    assert rejected["served"].to_list() == ["v2"]


def test_a_rejection_by_the_held_out_gate_says_its_figures():
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    runs = pl.DataFrame(
        {
            "run": [1],
            "model_version": [1],
            "loss": [0.4],
            "accepted": [False],
            "gate_reason": ["holdout"],
            "created_at": [t0],
            "heldout_sessions": [22],
            "heldout_ndcg": [0.521],
            "heldout_bar": [0.519],
            "heldout_comparator": ["cosine"],
            "heldout_lead_se": [0.41],
            "heldout_lead_needed": [1.5],
        }
    )
    (reason,) = t.gate_rejections(runs)["reason"].to_list()
    assert reason == (
        "held out (22 sessions): NDCG@10 0.521 against the bar 0.519 (cosine), lead 0.41 "
        "standard errors where 1.5 are needed"
    )


def test_runs_only_the_workbench_records_are_shown(bare_current, tmp_path):
    """A current store keeps no training log: the runs `signet-bench train` records in the
    workbench are the store's runs (of that store only), their versions counting the
    accepted ones."""
    from signet_bench.analysis.queries.source import open_store
    from signet_bench.store.workbench import open_workbench, record_training_run

    wb = tmp_path / "workbench.duckdb"
    t0 = datetime(2030, 5, 1)  # long after the store's last session
    with open_workbench(wb) as con:
        for i, (store, passed, curve) in enumerate(
            [
                (bare_current, True, "[0.7, 0.5]"),
                (bare_current, False, "[0.6]"),
                (tmp_path / "other.db", True, "[0.1]"),
                (bare_current, True, "[]"),
            ]
        ):
            record_training_run(
                con,
                {
                    "run_id": f"r{i}",
                    "store_path": str(store),
                    "started_at": t0 + timedelta(hours=i),
                    "sample_count": 10 + i,
                    "epochs": 2,
                    "loss_curve": curve,
                    "gate_passed": passed,
                    "gate_reason": "passed" if passed else "canary variance",
                },
            )
    con = open_store(bare_current)
    try:
        runs = t.training_runs(con, wb, bare_current)
    finally:
        con.close()
    assert runs["id"].to_list() == ["r0", "r1", "r3"]  # r2 trained another store
    assert runs["model_version"].to_list() == [1, 1, 2]
    assert runs["accepted"].to_list() == [True, False, True]
    assert runs["loss"].to_list() == [0.5, 0.6, None]  # the curve's last; none without epochs
    assert runs["sample_count"].to_list() == [10, 11, 13]
    assert runs["created_at"][0] == datetime(2030, 5, 1, tzinfo=UTC)
    assert t.loss_steps(runs)["run"].to_list() == [1, 1, 2]
    assert t.gate_rejections(runs)["run"].to_list() == [2]
