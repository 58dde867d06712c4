"""DuckDB over a store: offline extension load, read-only attach, timestamp views, aggregates,
and the analytics-scale generator they are benchmarked on."""

from __future__ import annotations

import hashlib
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

from signet_bench.store.duck import (
    DUCKDB_CONFIG,
    attach_store,
    connect_duckdb,
    session_memory_summary,
    session_overview,
    sqlite_extension_path,
)
from signet_bench.store.errors import (
    NotSignetStoreError,
    StoreMissingError,
    StoreTimestampError,
)
from signet_bench.store.read import read_memories, read_session_memories, read_sessions
from signet_bench.store.scale import write_memories_scale, write_session_memories_scale
from signet_bench.store.workbench import open_workbench, record_bench
from signet_bench.timestamps import parse_ts

from .conftest import StoreBuilder


def _candidates(b: StoreBuilder, session: str, created_at: str, rows: list[tuple]) -> None:
    for rank, (mid, injected, relevance, hits, pred) in enumerate(rows):
        b.insert(
            "session_memories",
            id=f"{session}:{mid}",
            session_key=session,
            memory_id=mid,
            source="effective",
            final_score=1.0 - rank / 10,
            predictor_score=pred,
            rank=rank,
            was_injected=injected,
            relevance_score=relevance,
            fts_hit_count=hits,
            created_at=created_at,
        )


@pytest.fixture
def sessions_store(builder: StoreBuilder) -> Path:
    builder.memory("m1", created_at="2026-01-01T00:00:00.000Z", last_accessed="not a date")
    builder.memory(
        "m2", created_at="2026-01-02 08:30:00", last_accessed="2026-01-03T10:00:00+02:00"
    )
    _candidates(
        builder,
        "s1",
        "2026-01-10T09:00:00.000Z",
        [("m1", 1, 0.8, 2, 0.6), ("m2", 1, 0.4, 0, 0.3), ("m3", 0, None, 1, None)],
    )
    _candidates(builder, "s0", "2026-01-09 09:00:00", [("m1", 1, 1.0, 0, None)])
    builder.close()
    return builder.path


def test_extension_loads_from_the_wheel_file_without_network(sessions_store: Path) -> None:
    ext = sqlite_extension_path()
    assert ext.is_file() and "site-packages" in str(ext)
    # With auto-install/auto-load off, ATTACH without our LOAD fails instead of downloading.
    bare = duckdb.connect(config=dict(DUCKDB_CONFIG))
    with pytest.raises(duckdb.Error, match="(?i)not found|install"):
        bare.execute(f"ATTACH '{sessions_store}' AS s (TYPE sqlite, READ_ONLY)")
    bare.close()
    con = connect_duckdb(sessions_store)
    try:
        settings = dict(
            con.execute(
                "SELECT name, value FROM duckdb_settings() WHERE name IN"
                " ('autoinstall_known_extensions', 'autoload_known_extensions')"
            ).fetchall()
        )
        assert settings == {
            "autoinstall_known_extensions": "false",
            "autoload_known_extensions": "false",
        }
        loaded, installed = con.execute(
            "SELECT loaded, installed FROM duckdb_extensions()"
            " WHERE extension_name = 'sqlite_scanner'"
        ).fetchone()
        assert loaded and not installed  # loaded from the file, never installed (downloaded)
        assert con.execute("SELECT COUNT(*) FROM store.memories").fetchone()[0] == 2
    finally:
        con.close()


def test_attach_is_read_only_and_idempotent(sessions_store: Path) -> None:
    before = hashlib.sha256(sessions_store.read_bytes()).hexdigest()
    con = connect_duckdb(sessions_store)
    try:
        attach_store(con, sessions_store)  # second ATTACH IF NOT EXISTS: no error
        dbs = [r[0] for r in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()]
        assert dbs.count("store") == 1
        with pytest.raises(duckdb.Error, match="read-only"):
            con.execute(
                "INSERT INTO store.memories (id, content, created_at, updated_at)"
                " VALUES ('x', 'x', 'x', 'x')"
            )
        with pytest.raises(duckdb.Error, match="read-only"):
            con.execute("DELETE FROM store.session_memories")
    finally:
        con.close()
    assert hashlib.sha256(sessions_store.read_bytes()).hexdigest() == before


def test_timestamp_views_try_cast_both_formats(sessions_store: Path) -> None:
    con = connect_duckdb(sessions_store)
    try:
        raw = con.execute("SELECT typeof(created_at) FROM store.memories LIMIT 1").fetchone()[0]
        view = con.sql("SELECT id, created_at, last_accessed FROM memories ORDER BY id").pl()
    finally:
        con.close()
    assert raw == "VARCHAR"
    assert view["created_at"].to_list() == [datetime(2026, 1, 1), datetime(2026, 1, 2, 8, 30)]
    # 'not a date' -> NULL without failing the scan; an explicit offset is applied.
    assert view["last_accessed"].to_list() == [None, datetime(2026, 1, 3, 8, 0)]
    # The same instants the stdlib reader gives (which, unlike TRY_CAST, rejects 'not a date').
    expected = [parse_ts("2026-01-01T00:00:00.000Z"), parse_ts("2026-01-02 08:30:00")]
    assert view["created_at"].dt.replace_time_zone("UTC").to_list() == expected
    with pytest.raises(StoreTimestampError, match="last_accessed"):
        read_memories(sessions_store)


def test_session_memory_summary_values(sessions_store: Path) -> None:
    con = connect_duckdb(sessions_store)
    try:
        f = session_memory_summary(con)
        overview = session_overview(con)
    finally:
        con.close()
    assert f["session_key"].to_list() == ["s0", "s1"]  # by start time
    s1 = f.row(1, named=True)
    assert (s1["candidates"], s1["injected"], s1["scored"]) == (3, 2, 2)
    assert s1["mean_relevance"] == pytest.approx(0.6)
    assert (s1["fts_hits"], s1["fts_hit_memories"]) == (3, 2)
    assert s1["started_at"] == datetime(2026, 1, 10, 9, tzinfo=UTC)
    assert f.schema["started_at"] == pl.Datetime("us", "UTC")
    assert overview["sessions"] == 2 and overview["candidates"] == 4
    assert overview["mean_relevance"] == pytest.approx((0.6 + 1.0) / 2)
    assert overview["fts_hits"] == 3


def test_all_varchar_reads_every_column_as_text(sessions_store: Path) -> None:
    con = connect_duckdb(sessions_store, all_varchar=True)
    try:
        kinds = con.execute(
            "SELECT typeof(importance), typeof(rank) FROM store.memories, store.session_memories"
            " LIMIT 1"
        ).fetchone()
        summary = session_memory_summary(con)
    finally:
        con.close()
    assert kinds == ("VARCHAR", "VARCHAR")
    assert summary["candidates"].to_list() == [1, 3]


def test_missing_or_foreign_store(tmp_path: Path, plain_sqlite: Path) -> None:
    with pytest.raises(StoreMissingError):
        connect_duckdb(tmp_path / "absent.db")
    with pytest.raises(NotSignetStoreError, match="embeddings"):
        connect_duckdb(plain_sqlite)


def test_workbench_attached_as_wb(sessions_store: Path, tmp_path: Path) -> None:
    wb_path = tmp_path / "workbench.duckdb"
    wb = open_workbench(wb_path)
    record_bench(wb, "store", {"bench": "store", "results": []})
    wb.close()
    con = connect_duckdb(sessions_store, workbench_path=wb_path)
    try:
        assert con.execute("SELECT bench FROM wb.bench_runs").fetchall() == [("store",)]
        joined = con.execute(
            "SELECT COUNT(*) FROM store.session_memories, wb.bench_runs"
        ).fetchone()[0]
        assert joined == 4
    finally:
        con.close()


def test_scale_store_counts_and_agreement(tmp_path: Path) -> None:
    path = tmp_path / "scale.db"
    summary = write_session_memories_scale(path, 1_010, n_memories=60, seed=3, per_session=20)
    assert (summary.sessions, summary.session_memories, summary.memories) == (51, 1_010, 60)
    sm = read_session_memories(path)
    sessions = read_sessions(path)
    con = sqlite3.connect(path)
    mode = con.execute("PRAGMA journal_mode").fetchone()[0]
    con.close()
    assert mode == "wal"
    assert sm.height == 1_010 and sessions.height == 51
    assert sm.select(pl.struct("session_key", "memory_id").n_unique()).item() == 1_010
    per = sm.group_by("session_key").len()
    assert sorted(per["len"].to_list())[1:] == [20] * 50  # the last session holds the rest (10)
    duck = connect_duckdb(path)
    try:
        f = session_memory_summary(duck)
    finally:
        duck.close()
    assert f.height == 51 and int(f["candidates"].sum()) == 1_010
    assert int(f["fts_hits"].sum()) == int(sm["fts_hit_count"].sum())
    assert int(f["injected"].sum()) == int(sm["was_injected"].sum())


def test_scale_memories_have_unit_embeddings(tmp_path: Path) -> None:
    path = tmp_path / "mem.db"
    write_memories_scale(path, 40, dim=16, seed=1)
    t = read_memories(path)
    assert len(t) == 40 and t.dim == 16 and t.frame["has_embedding"].all()
    np.testing.assert_allclose(np.linalg.norm(t.embeddings, axis=1), 1.0, rtol=1e-5)
    assert t.frame["last_accessed"].null_count() < 40  # some rows use the datetime('now') form
