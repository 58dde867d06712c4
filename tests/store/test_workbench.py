"""workbench.duckdb: idempotent schema and writes, one transaction per call."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import pytest

from signet_bench.store.errors import WorkbenchRowError
from signet_bench.store.workbench import (
    WORKBENCH_DDL,
    _literal,
    open_workbench,
    record_bench,
    record_calibration,
    record_model,
    record_training_run,
)


@pytest.fixture
def wb(tmp_path: Path):
    con = open_workbench(tmp_path / "wb" / "workbench.duckdb")
    yield con
    con.close()


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return con.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]


def test_open_creates_tables_idempotently(tmp_path: Path) -> None:
    path = tmp_path / "workbench.duckdb"
    con = open_workbench(path)
    record_bench(con, "store", {"results": [1]})
    con.close()
    con = open_workbench(path)  # second open: tables kept, rows kept
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert tables == set(WORKBENCH_DDL)
        assert _count(con, "bench_runs") == 1
    finally:
        con.close()


def test_same_calibration_row_twice_leaves_one(wb: duckdb.DuckDBPyConnection) -> None:
    row = {
        "session_key": "s1",
        "memory_id": "m1",
        "human_label": 0.9,
        "judge_relevance": 0.6,
        "labeled_at": "2026-01-10T09:00:00.000Z",
    }
    assert record_calibration(wb, [row]) == 1
    record_calibration(wb, [row])
    assert _count(wb, "predictor_calibration") == 1
    got = wb.execute(
        "SELECT id, human_label, judge_relevance, delta, labeled_at, labeler"
        " FROM predictor_calibration"
    ).fetchone()
    assert got[1:] == (0.9, 0.6, pytest.approx(0.3), datetime(2026, 1, 10, 9), "human")
    first_id = got[0]
    record_calibration(wb, [{**row, "human_label": 0.2}])  # relabel replaces
    assert wb.execute("SELECT id, human_label FROM predictor_calibration").fetchall() == [
        (first_id, 0.2)
    ]
    record_calibration(wb, [{**row, "labeler": "second"}])  # another labeler: another row
    assert _count(wb, "predictor_calibration") == 2


_OLD_CALIBRATION_DDL = """
    CREATE TABLE predictor_calibration (
        id TEXT NOT NULL, session_key TEXT NOT NULL, memory_id TEXT NOT NULL,
        human_label DOUBLE, scorer_label DOUBLE, delta DOUBLE, labeled_at TIMESTAMP NOT NULL,
        labeler TEXT NOT NULL, PRIMARY KEY (session_key, memory_id, labeler))"""


def test_an_older_workbench_keeps_its_labels_under_the_new_column_name(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as old:
        old.execute(_OLD_CALIBRATION_DDL)
        old.execute(
            "INSERT INTO predictor_calibration VALUES"
            " ('i1', 's1', 'm1', 1.0, 0.25, 0.75, TIMESTAMP '2026-01-10 09:00:00', 'ann')"
        )
    for _ in range(2):  # renamed once; opening again changes nothing
        con = open_workbench(path)
        try:
            cols = [r[0] for r in con.execute("DESCRIBE predictor_calibration").fetchall()]
            got = con.execute(
                "SELECT human_label, judge_relevance, delta FROM predictor_calibration"
            ).fetchall()
        finally:
            con.close()
        assert "scorer_label" not in cols and "judge_relevance" in cols
        assert got == [(1.0, 0.25, 0.75)]


def test_bad_row_rolls_back_the_whole_batch(wb: duckdb.DuckDBPyConnection) -> None:
    good = {"session_key": "s1", "memory_id": "m1", "human_label": 1.0}
    with pytest.raises(WorkbenchRowError, match="row 1: missing memory_id"):
        record_calibration(wb, [good, {"session_key": "s1", "human_label": 0.0}])
    with pytest.raises(WorkbenchRowError, match="unknown field"):
        record_calibration(wb, [good, {**good, "memory_id": "m2", "colour": "red"}])
    assert _count(wb, "predictor_calibration") == 0
    with pytest.raises(duckdb.Error):  # a type error inside the transaction
        record_calibration(wb, [good, {**good, "memory_id": "m2", "human_label": "high"}])
    assert _count(wb, "predictor_calibration") == 0
    assert record_calibration(wb, [good]) == 1  # the connection is still usable


def test_training_run_and_model_upserts(wb: duckdb.DuckDBPyConnection) -> None:
    run = {
        "run_id": "r1",
        "store_path": "/x/memories.db",
        "started_at": datetime(2026, 1, 10, 10, tzinfo=UTC),
        "duration_ms": 1234.5,
        "sample_count": 500,
        "epochs": 50,
        "loss_curve": [0.9, 0.5, 0.3],
        "canary_topk_overlap": 0.8,
        "gate_passed": True,
        "gate_reason": "ok",
    }
    record_training_run(wb, run)
    record_training_run(wb, {**run, "gate_passed": False, "gate_reason": "canary drop"})
    rows = wb.execute("SELECT loss_curve, gate_passed, gate_reason FROM training_runs").fetchall()
    assert len(rows) == 1
    assert json.loads(rows[0][0]) == [0.9, 0.5, 0.3] and rows[0][1:] == (False, "canary drop")
    with pytest.raises(WorkbenchRowError, match="missing run_id"):
        record_training_run(wb, {"epochs": 3})
    record_model(wb, {"model_id": "v1", "path": "/m.onnx", "metrics": {"ndcg@10": 0.7}})
    record_model(wb, {"model_id": "v1", "path": "/m2.onnx", "is_finetuned": True})
    assert wb.execute("SELECT path, is_finetuned FROM models").fetchall() == [("/m2.onnx", True)]


def test_keyed_rows_stamp_models_but_not_runs_and_reject_unknown_fields(
    wb: duckdb.DuckDBPyConnection,
) -> None:
    """Check a model without created_at gets the write time, a run without started_at keeps
    NULL, and an unknown field or a missing key names the table."""
    before = datetime.now(UTC).replace(tzinfo=None)
    assert record_model(wb, {"model_id": "m"}) == "m"
    assert record_training_run(wb, {"run_id": "r", "loss_curve": "[1]"}) == "r"
    created = wb.execute("SELECT created_at FROM models").fetchone()[0]
    assert created >= before.replace(microsecond=0)
    assert wb.execute("SELECT started_at, loss_curve FROM training_runs").fetchone() == (
        None,
        "[1]",
    )
    with pytest.raises(WorkbenchRowError, match="models.*unknown field.*loss_curve"):
        record_model(wb, {"model_id": "m", "loss_curve": []})
    with pytest.raises(WorkbenchRowError, match="models.*missing model_id"):
        record_model(wb, {"path": "/m.onnx"})


def test_bench_record_is_idempotent(wb: duckdb.DuckDBPyConnection) -> None:
    doc = {"bench": "store", "results": [{"name": "x", "metric": "p50", "value": 1.0}]}
    a = record_bench(wb, "store", doc)
    b = record_bench(wb, "store", dict(reversed(list(doc.items()))))  # same content
    c = record_bench(wb, "store", {**doc, "results": []})
    assert a == b != c
    assert _count(wb, "bench_runs") == 2
    stored = wb.execute("SELECT json FROM bench_runs WHERE id = ?", [a]).fetchone()[0]
    assert json.loads(stored) == doc


def test_a_run_is_stored_as_binding_its_values_stores_them(tmp_path: Path) -> None:
    """A training run's row (written as literals) holds exactly what binding each value as a
    parameter holds: texts with quotes, backslashes and other scripts, floats to the last bit
    (NaN and infinities too), numpy scalars, times to the microsecond, NULLs."""
    run = {
        "run_id": "it's \\ a run ✓",
        "store_path": "/x/mem'ories.db",
        "started_at": datetime(2026, 1, 10, 10, 11, 12, 345678, tzinfo=UTC),
        "duration_ms": 0.1 + 0.2,
        "sample_count": np.int64(2**31 - 1),
        "epochs": 50,
        "loss_curve": [0.9, 1e-300],
        "canary_ndcg": float("nan"),
        "canary_ndcg_delta": -float("inf"),
        "canary_score_variance": np.float32(1 / 3),
        "canary_topk_overlap": 5e-324,
        "gate_passed": np.bool_(True),
        "gate_reason": None,
        "holdout": '{"a": "b\'c"}',
    }
    stored = {**run, "started_at": datetime(2026, 1, 10, 10, 11, 12, 345678), "loss_curve": ""}
    assert all(_literal(v) is not None for v in stored.values())  # no value is bound
    written = open_workbench(tmp_path / "a.duckdb")
    record_training_run(written, run)
    got = written.execute("SELECT * FROM training_runs").fetchall()
    written.close()
    bound = open_workbench(tmp_path / "b.duckdb")
    started = run["started_at"].astimezone(UTC).replace(tzinfo=None)
    fields = ", ".join(run)
    values = {**run, "started_at": started, "loss_curve": json.dumps(run["loss_curve"])}
    bound.execute(
        f"INSERT INTO training_runs ({fields}) VALUES ({', '.join('?' * len(run))})",
        [v.item() if isinstance(v, np.generic) else v for v in values.values()],
    )
    want = bound.execute("SELECT * FROM training_runs").fetchall()
    bound.close()
    assert repr(got) == repr(want)  # NaN included: the same text, value by value
    assert got[0][0] == run["run_id"] and got[0][2] == started
