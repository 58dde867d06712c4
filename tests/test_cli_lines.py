"""Every store command, run as a user runs it (the real `main`), on a Signet 0.58 store and on a
current (0.145.7) one: synth, simulate, skew, train, export-pairs and bench store."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from signet_bench.cli import main
from signet_bench.learn.samples import load_samples
from signet_bench.store.read import PREDICTOR_TABLES, store_shape
from signet_bench.store.schema import RELEASE_LINES
from signet_scorer.timestamps import local_tz
from tests.lines import LINE_SESSIONS


def _run(capsys, argv: list[str], code: int = 0) -> str:
    """Run the CLI; expect `code` and no traceback; return what it printed."""
    capsys.readouterr()
    assert main(argv) == code
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    return out


def _tables(db: Path) -> set[str]:
    con = sqlite3.connect(db)
    try:
        return {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        con.close()


@pytest.mark.parametrize("line", RELEASE_LINES)
def test_synth_then_simulate(capsys, tmp_path: Path, line: str) -> None:
    db = tmp_path / "light.db"
    synth = ["synth", "--persona", "light", "--out", str(db), "--memories", "100"]
    _run(capsys, [*synth, "--schema", line])
    assert store_shape(db).line == line
    out = _run(capsys, ["simulate", "--db", str(db), "--sessions", "6", "--schema", line])
    assert "sessions simulated: 6 (already recorded, skipped: 0)" in out
    assert "comparisons: 6;" in out
    has_predictor_tables = set(PREDICTOR_TABLES) <= _tables(db)
    assert has_predictor_tables is (line == "0.58")
    other = "current" if line == "0.58" else "0.58"
    capsys.readouterr()
    assert main(["simulate", "--db", str(db), "--sessions", "6", "--schema", other]) == 2
    assert f"a store of release line {line}, not {other}" in capsys.readouterr().err


def test_skew(capsys, line_store: Path) -> None:
    out = _run(capsys, ["skew", "--db", str(line_store), "--tz", "Europe/Berlin"])
    for name in ("recency", "dow_sin", "superseded", "session_gap"):
        assert name in out
    assert "rows" in out


def test_train(capsys, tmp_path: Path, line_store: Path) -> None:
    before = line_store.read_bytes()
    out = _run(
        capsys,
        ["train", "--db", str(line_store), "--out", str(tmp_path / "run"), "--epochs", "2"],
    )
    served, sessions = out.splitlines()[:2]
    assert served.startswith("served: ") and sessions.startswith("sessions: ")
    assert (tmp_path / "run" / "model.sbm").is_file()
    assert (tmp_path / "run" / "workbench.duckdb").is_file()
    assert line_store.read_bytes() == before  # the store is only read


def test_export_pairs(capsys, tmp_path: Path, line_store: Path) -> None:
    out_path = tmp_path / "pairs.parquet"
    out = _run(capsys, ["export-pairs", "--db", str(line_store), "--out", str(out_path)])
    pairs = pl.read_parquet(out_path)
    assert f"wrote {pairs.height} rows" in out and pairs.height > 0
    samples, _ = load_samples(line_store, tz=local_tz())
    assert 0 < pairs["session"].n_unique() == len(samples) <= LINE_SESSIONS


@pytest.mark.parametrize("line", RELEASE_LINES)
def test_bench_store(capsys, tmp_path: Path, line: str) -> None:
    report = tmp_path / "store.json"
    out = _run(capsys, ["bench", "store", "--quick", "--schema", line, "--json", str(report)])
    assert f"the stores' release line (by their tables): {line}\n" in out
    names = {r["name"] for r in json.loads(report.read_text())["results"]}
    assert {"synth_heavy", "load_memories_4000x768", "duckdb_aggregate_150k"} <= names
