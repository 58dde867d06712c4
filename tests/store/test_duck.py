"""DuckDB over a store: offline extension load, read-only attach, timestamp views, aggregates,
and the analytics-scale generator they are benchmarked on."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import duckdb
import numpy as np
import polars as pl
import pytest

import signet_bench
from signet_bench.errors import UserError
from signet_bench.store import duck
from signet_bench.store.duck import (
    DUCKDB_CONFIG,
    TIMESTAMP_COLUMNS,
    attach_store,
    attached_tables,
    connect_duckdb,
    session_memory_summary,
    session_overview,
    sqlite_extension_path,
    store_sql,
)
from signet_bench.store.errors import (
    DuckDBStoreError,
    NotSignetStoreError,
    SchemaVersionWarning,
    StoreMissingError,
    StoreTimestampError,
)
from signet_bench.store.read import (
    StoreTables,
    read_memories,
    read_session_memories,
    read_sessions,
    store_tables,
)
from signet_bench.store.scale import write_memories_scale, write_session_memories_scale
from signet_bench.store.timestamps import parse_ts
from signet_bench.store.workbench import open_workbench, record_bench

from .conftest import VEC0_SHADOW_DDL, VEC_MEMORY_IDS, StoreBuilder


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


def _file_state(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def _views(con: duckdb.DuckDBPyConnection) -> list[tuple[str, str]]:
    sql = "SELECT schema_name, view_name FROM duckdb_views() WHERE NOT internal ORDER BY ALL"
    return con.execute(sql).fetchall()


def test_attach_is_read_only_and_idempotent(sessions_store: Path) -> None:
    before = _file_state(sessions_store)
    con = connect_duckdb(sessions_store)
    try:
        first, views = attached_tables(con), _views(con)
        again = attach_store(con, sessions_store)  # rebuilds the same views, no error
        assert again == first == attached_tables(con) and _views(con) == views
        assert ("store", "memories") in views and ("main", "memories") in views
        dbs = {r[0] for r in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()}
        assert dbs == {"memory", "system", "temp"}  # nothing attached: the store is views
        with pytest.raises(duckdb.Error):
            con.execute(
                "INSERT INTO store.memories (id, content, created_at, updated_at)"
                " VALUES ('x', 'x', 'x', 'x')"
            )
        with pytest.raises(duckdb.Error):
            con.execute("DELETE FROM store.session_memories")
        assert con.execute("SELECT COUNT(*) FROM store.session_memories").fetchone()[0] == 4
    finally:
        con.close()
    assert _file_state(sessions_store) == before


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


# --- stores as real installs leave them ----------------------------------------------------


def test_vec0_store_attaches_and_says_what_it_skipped(vec_store: Path) -> None:
    expected = store_tables(vec_store)  # stdlib read, closed before DuckDB opens the file
    con = connect_duckdb(vec_store)
    try:
        listing = attached_tables(con)
        again = attach_store(con, vec_store)  # idempotent, returns the same listing
        ids = con.execute("SELECT id FROM memories ORDER BY created_at").fetchall()
        created = con.execute("SELECT typeof(created_at) FROM memories LIMIT 1").fetchone()[0]
        summary = session_memory_summary(con)
        recorded = con.execute(
            "SELECT name FROM store_tables WHERE skipped_reason LIKE '%vec0%' ORDER BY name"
        ).fetchall()
    finally:
        con.close()
    assert listing == again
    assert [r[0] for r in ids] == list(VEC_MEMORY_IDS) and created == "TIMESTAMP"
    assert summary["candidates"].to_list() == [len(VEC_MEMORY_IDS)]
    skipped = {s.name: s.reason for s in listing.skipped}
    assert "no such module: vec0" in skipped["vec_embeddings"]
    assert skipped["vec_embeddings"].startswith("virtual table USING vec0: ")
    assert [r[0] for r in recorded] == sorted(["vec_embeddings", *VEC0_SHADOW_DDL])
    # Both readers list the same tables; DuckDB's columns are the store's, in table order.
    assert listing.columns == expected.columns
    assert {s.name for s in listing.skipped} == {s.name for s in expected.skipped}
    assert listing.path == str(vec_store)


def test_an_undescribable_view_is_skipped_and_the_rest_attached(vec_store: Path) -> None:
    con = sqlite3.connect(vec_store)
    con.execute("CREATE VIEW recent_vectors AS SELECT id FROM vec_embeddings")
    con.execute("CREATE VIEW memory_ids AS SELECT id FROM memories")
    con.commit()
    con.close()
    duck_con = connect_duckdb(vec_store, all_varchar=True)
    try:
        listing = attached_tables(duck_con)
        n = duck_con.execute("SELECT COUNT(*) FROM store.memory_ids").fetchone()[0]
    finally:
        duck_con.close()
    reason = {s.name: s.reason for s in listing.skipped}["recent_vectors"]
    assert reason.startswith("cannot be described: ") and "no such module: vec0" in reason
    assert listing.columns["memory_ids"] == ("id",) and n == len(VEC_MEMORY_IDS)


# --- the whole DuckDB catalog on a store with a vec0 table -------------------------------------

CATALOG_NOTEBOOK = Path(__file__).with_name("catalog_notebook.py")


def _catalog_notebook() -> ModuleType:
    spec = importlib.util.spec_from_file_location("catalog_notebook", CATALOG_NOTEBOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _assert_whole_catalog(listing: dict[str, list[list]], tables: StoreTables) -> None:
    """Every listing succeeded and names the store's views (raw in `store`, timestamps in
    `main`), none of the skipped tables, and every view was selected (row counts)."""
    views = {("store", t) for t in tables.columns}
    views |= {("main", t) for t in TIMESTAMP_COLUMNS if t in tables.columns}
    assert ("store", "memories") in views and ("main", "session_memories") in views
    listed = {k: {tuple(r[:2]) for r in rows} for k, rows in listing.items()}
    assert listed["duckdb_views"] == listed["view_rows"] == views
    for key in ("show_all_tables", "information_schema", "duckdb_columns", "marimo_panel"):
        assert views <= listed[key], key
    # duckdb_tables() holds base tables only: the listing `attach_store` records.
    assert listed["duckdb_tables"] == {("main", "store_tables")}
    skipped = {s.name for s in tables.skipped}
    assert "vec_embeddings" in skipped
    assert not any(name in skipped for rows in listed.values() for _, name in rows)
    rows = {(s, v): n for s, v, n in listing["view_rows"]}
    n = len(VEC_MEMORY_IDS)
    assert rows["store", "memories"] == rows["main", "memories"] == n
    assert rows["main", "session_memories"] == rows["store", "embeddings"] == n


def test_the_whole_catalog_lists_on_a_vec0_store(vec_store: Path) -> None:
    tables = store_tables(vec_store)  # stdlib read, closed before DuckDB opens the file
    before = _file_state(vec_store)
    con = connect_duckdb(vec_store)
    try:
        # The fixture does break a catalog that attaches the file.
        with pytest.raises(duckdb.Error, match="no such module: vec0"):
            con.execute(f"ATTACH '{vec_store}' AS raw (TYPE sqlite, READ_ONLY)")
            con.execute("SHOW ALL TABLES")
        con.execute("DETACH DATABASE IF EXISTS raw")
        listing = _catalog_notebook().catalog_listing(con)
    finally:
        con.close()
    _assert_whole_catalog(listing, tables)
    assert _file_state(vec_store) == before


def test_the_whole_catalog_lists_in_a_marimo_cell(vec_store: Path) -> None:
    tables = store_tables(vec_store)
    root = str(Path(signet_bench.__file__).resolve().parents[1])  # the package these tests import
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, str(CATALOG_NOTEBOOK), "--db", str(vec_store)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert len(lines) == 1, done.stdout[-3000:]
    _assert_whole_catalog(json.loads(lines[0]), tables)


def test_store_sql_attaches_the_file_for_its_query_only(vec_store: Path) -> None:
    con = connect_duckdb(vec_store)
    try:
        ids = store_sql(con, "SELECT id FROM memories ORDER BY id", "id::VARCHAR AS id")
        with pytest.raises(DuckDBStoreError, match="querying the store through SQLite") as info:
            store_sql(con, "SELECT * FROM vec_embeddings")
        dbs = {r[0] for r in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()}
        shown = {r[2] for r in con.execute("SHOW ALL TABLES").fetchall()}
    finally:
        con.close()
    assert ids["id"].to_list() == sorted(VEC_MEMORY_IDS)
    assert "no such module: vec0" in str(info.value) and info.value.path == str(vec_store.resolve())
    assert dbs == {"memory", "system", "temp"} and "memories" in shown  # detached after each


def test_views_wait_out_a_writer_holding_the_store(builder: StoreBuilder) -> None:
    """A writer's exclusive lock (a rollback-journal store) is waited for, not an error."""
    builder.memory("m1")
    builder.con.execute("PRAGMA journal_mode = DELETE")
    builder.close()
    con = connect_duckdb(builder.path)
    hold = (
        "import sqlite3, sys, time\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('BEGIN EXCLUSIVE')\n"
        'c.execute("INSERT INTO memories (id, content, created_at, updated_at)'
        " VALUES ('m2', 'x', 'x', 'x')\")\n"
        "print('locked', flush=True)\n"
        "time.sleep(1.0)\n"
        "c.execute('COMMIT')\n"
    )
    writer = subprocess.Popen(
        [sys.executable, "-c", hold, str(builder.path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "locked"
        t0 = time.perf_counter()
        n = con.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
        waited = time.perf_counter() - t0
    finally:
        writer.wait(timeout=30)
        con.close()
    assert n == 2 and waited > 0.5  # blocked until the writer committed, then read its row


def test_newer_schema_attaches_with_a_warning(builder: StoreBuilder) -> None:
    builder.memory("m1")
    builder.insert("schema_migrations", version=31, applied_at="2026-05-01", checksum="x")
    builder.con.execute("CREATE TABLE future_things (id TEXT PRIMARY KEY)")
    builder.con.execute("ALTER TABLE memories ADD COLUMN future_col TEXT")
    builder.close()
    with pytest.warns(SchemaVersionWarning, match=r"memories\.db: .*version 31"):
        con = connect_duckdb(builder.path)
    try:
        listing = attached_tables(con)
        cols = [d[0] for d in con.execute("SELECT * FROM memories").description]
    finally:
        con.close()
    assert "future_things" in listing.columns and "future_col" in cols


# --- DuckDB failures become store errors -------------------------------------------------------


def test_a_corrupt_store_names_file_and_step(tmp_path: Path) -> None:
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    with pytest.raises(DuckDBStoreError) as info:
        connect_duckdb(corrupt)
    msg = str(info.value)
    assert msg.startswith(f"{corrupt}: listing the store's tables failed in DuckDB: ")
    assert msg.endswith("file is not a database")
    assert isinstance(info.value, UserError) and not isinstance(info.value, duckdb.Error)
    assert isinstance(info.value.__cause__, duckdb.Error)


def test_a_bad_workbench_file_names_file_and_step(sessions_store: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes.duckdb"
    notes.write_text("not a database\n" * 100)
    with pytest.raises(DuckDBStoreError, match="attaching the workbench file failed") as info:
        connect_duckdb(sessions_store, workbench_path=notes)
    assert info.value.path == str(notes)


def test_a_bad_extension_file_names_file_and_step(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "sqlite_scanner.duckdb_extension"
    fake.write_bytes(b"\x00" * 512)
    monkeypatch.setattr(duck, "sqlite_extension_path", lambda: fake)
    with pytest.raises(DuckDBStoreError) as info:
        connect_duckdb()
    assert str(info.value).startswith(f"{fake}: loading the SQLite extension failed in DuckDB")


def test_helpers_without_a_store_raise_a_store_error() -> None:
    con = connect_duckdb()
    try:
        with pytest.raises(DuckDBStoreError, match="no database attached as store.*session_"):
            session_memory_summary(con)
        with pytest.raises(DuckDBStoreError, match="over all sessions failed"):
            session_overview(con)
        with pytest.raises(DuckDBStoreError, match="reading store_tables failed"):
            attached_tables(con)
        with pytest.raises(DuckDBStoreError, match="through SQLite failed.*no store attached"):
            store_sql(con, "SELECT 1")
    finally:
        con.close()


def test_a_failed_attach_leaves_nothing_attached(plain_sqlite: Path) -> None:
    con = connect_duckdb()
    try:
        with pytest.raises(NotSignetStoreError):
            attach_store(con, plain_sqlite)
        dbs = {r[0] for r in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()}
        schemas = {r[0] for r in con.execute("SELECT schema_name FROM duckdb_schemas()").fetchall()}
        views = _views(con)
        listing = con.execute("SHOW ALL TABLES").fetchall()
    finally:
        con.close()
    assert "store" not in dbs and "store" not in schemas
    assert views == [] and listing == []


def _unsigned_allowed(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute("SELECT current_setting('allow_unsigned_extensions')").fetchone()
    return bool(row and row[0])


def test_the_extension_is_checked_once_per_file_and_again_when_it_changes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """DuckDB checks the extension file's signature at its first load in the process; later
    connections skip the check only for the same, unchanged file: one whose signature no
    longer matches is refused."""
    copy = tmp_path / "sqlite_scanner.duckdb_extension"
    copy.write_bytes(sqlite_extension_path().read_bytes())
    monkeypatch.setattr(duck, "sqlite_extension_path", lambda: copy)
    monkeypatch.setattr(duck, "_CHECKED_EXTENSIONS", set())
    allowed = []
    for _ in range(2):
        con = connect_duckdb()
        allowed.append(_unsigned_allowed(con))
        con.close()
    assert allowed == [False, True]
    data = bytearray(copy.read_bytes())
    data[-8] ^= 0xFF  # in the signature the file ends with
    copy.write_bytes(bytes(data))
    os.utime(copy, ns=(time.time_ns(), time.time_ns() + 1_000_000_000))
    with pytest.raises(DuckDBStoreError, match="loading the SQLite extension"):
        connect_duckdb()
