"""Where the data comes from: default workbench, per-action workbench reads."""

from __future__ import annotations

import duckdb

from signet_bench.analysis.queries import source
from signet_scorer.workbench import default_workbench


def test_default_workbench(demo, tmp_path):
    assert default_workbench(demo.store) == demo.workbench
    other = tmp_path / "memories.db"
    assert default_workbench(other) == tmp_path / "workbench.duckdb"


def test_read_workbench_tolerates_absence(tmp_path):
    assert source.read_workbench(None, "SELECT 1").height == 0
    assert source.read_workbench(tmp_path / "none.duckdb", "SELECT 1").height == 0
    path = tmp_path / "wb.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("CREATE TABLE t (x INTEGER)")
        con.execute("INSERT INTO t VALUES (1), (2)")
    assert source.read_workbench(path, "SELECT * FROM nothing_here").height == 0
    assert source.read_workbench(path, "SELECT SUM(x) AS s FROM t")["s"].to_list() == [3]
    with duckdb.connect(str(path)) as con:  # nothing was left open
        con.execute("INSERT INTO t VALUES (3)")


def test_store_has(con):
    assert source.store_has(con, "session_memories")
    assert source.store_has(con, "sim_predictor_state")
    assert not source.store_has(con, "no_such_table")
