"""The tolerant read-only reader: values, flags, embedding alignment, old layouts, bad input."""

from __future__ import annotations

import sqlite3
import tempfile
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from signet_bench.errors import UserError
from signet_bench.store.errors import (
    DuckDBStoreError,
    EmbeddingBlobError,
    MissingColumnError,
    NotSignetStoreError,
    NotSQLiteError,
    SchemaVersionError,
    SchemaVersionWarning,
    StoreMissingError,
    StoreTimestampError,
)
from signet_bench.store.read import (
    REQUIRED,
    _spec,
    master_entries,
    open_readonly,
    read_comparisons,
    read_memories,
    read_session_memories,
    read_sessions,
    read_summary_jobs,
    read_training_log,
    schema_version,
    store_tables,
)
from signet_bench.store.schema import FTS_DDL, REQUIRED_TABLES, TABLES_DDL, create_store
from signet_bench.store.timestamps import format_iso, format_sqlite, parse_ts

from .conftest import VEC0_SHADOW_DDL, VEC_MEMORY_IDS, StoreBuilder, vec_vectors

DIM = 8
VECS = {
    m: np.random.default_rng(i).standard_normal(DIM).astype(np.float32)
    for i, m in enumerate(["m01", "m03", "m03old", "m04", "m05", "m06", "m07"])
}
UTC_US = pl.Datetime("us", "UTC")


def same(ts: str) -> str:
    return ts


def flip(ts: str) -> str:
    """The same instant in Signet's other timestamp format."""
    dt = parse_ts(ts)
    return format_sqlite(dt) if "T" in ts else format_iso(dt)


def fill(b: StoreBuilder, fmt: Callable[[str], str] = same) -> None:
    """Memories covering every flag; sessions; values representable in both layouts."""
    b.memory(
        "m01",
        created_at=fmt("2026-01-01T00:00:00.000Z"),
        importance=0.9,
        pinned=1,
        last_accessed=fmt("2026-01-03 08:00:00"),
    )
    b.embedding("m01", VECS["m01"], created_at=fmt("2026-01-01T00:00:00.000Z"))
    b.memory("m02", type="constraint", created_at=fmt("2026-01-02 10:00:00"), importance=0.7)
    b.memory("m08", created_at=fmt("2026-01-02T09:00:00.000Z"))
    b.embedding("m08", [1.0, 2.0, 3.0])  # a minority dimension
    b.memory("m03", created_at=fmt("2026-01-03T00:00:00.000Z"))
    b.cold("m03", "superseded")
    # The newer embedding is inserted first: "newest" must come from created_at, not rowid.
    b.embedding("m03", VECS["m03"], created_at=fmt("2026-01-04 00:00:00"))
    b.embedding("m03", VECS["m03old"], created_at=fmt("2026-01-03T12:00:00.000Z"))
    b.memory("m04", type="decision", created_at=fmt("2026-01-03T00:00:00.000Z"))
    b.attribute("m04", status="superseded")
    b.embedding("m04", VECS["m04"])
    b.memory(
        "m05",
        created_at=fmt("2026-01-04T00:00:00.000Z"),
        is_deleted=1,
        deleted_at=fmt("2026-01-08T00:00:00.000Z"),
    )
    b.embedding("m05", VECS["m05"])
    b.memory("m06", created_at=fmt("2026-01-05 12:00:00"))
    b.attribute("m06", kind="constraint")
    b.embedding("m06", VECS["m06"])
    b.memory("m07", created_at=fmt("2026-01-06T00:00:00.000Z"))
    b.attribute("m07", kind="constraint", status="deleted")
    b.attribute("m07", superseded_by="attr-new")
    b.embedding("m07", VECS["m07"])
    b.memory("m09", created_at=fmt("2026-01-07 00:00:00"), importance=None)
    b.cold("m09", "retention_decay")

    for s, start in (("s1", "2026-01-10T09:00:00.000Z"), ("s2", "2026-01-11 09:00:00")):
        b.insert(
            "session_scores",
            id=f"score-{s}",
            session_key=s,
            project="signet",
            harness="claude-code",
            score=0.8,
            memories_recalled=2,
            memories_used=1,
            novel_context_count=0,
            reasoning="ok",
            created_at=fmt(start),
        )
        for rank, mid in enumerate(["m01", "m02", "m03"]):
            b.insert(
                "session_memories",
                id=f"{s}-{mid}",
                session_key=s,
                memory_id=mid,
                source="effective",
                effective_score=0.9 - rank / 10,
                predictor_score=None,
                final_score=0.9 - rank / 10,
                rank=rank,
                was_injected=int(rank < 2),
                relevance_score=0.5 if rank < 2 else None,
                fts_hit_count=rank,
                created_at=fmt(start),
            )


@pytest.fixture
def filled(builder: StoreBuilder) -> Path:
    fill(builder)
    return builder.path


ORDER = ["m01", "m08", "m02", "m03", "m04", "m06", "m07", "m09"]


def test_round_trip_values_flags_and_order(filled: Path) -> None:
    t = read_memories(filled)
    f = t.frame
    assert f["id"].to_list() == ORDER  # created_at across both formats, then id
    assert dict(zip(f["id"], f["superseded"], strict=True)) == {
        "m01": False,
        "m08": False,
        "m02": False,
        "m03": False,  # updated in place: the live row holds the new content
        "m04": True,
        "m06": False,
        "m07": True,
        "m09": False,
    }
    assert f.filter(pl.col("is_constraint"))["id"].to_list() == ["m02", "m06"]
    row = f.row(0, named=True)
    assert row["pinned"] is True and row["importance"] == pytest.approx(0.9)
    assert row["last_accessed"] == datetime(2026, 1, 3, 8, 0, tzinfo=UTC)
    m02 = f.row(2, named=True)
    assert m02["created_at"] == datetime(2026, 1, 2, 10, 0, tzinfo=UTC)
    assert m02["type"] == "constraint" and m02["pinned"] is False
    assert f.row(7, named=True)["importance"] == 0.5  # NULL reads as Signet's default
    assert f["rowid"].dtype == pl.Int64 and f["rowid"].min() >= 1
    for col in ("created_at", "updated_at", "last_accessed", "deleted_at"):
        assert f[col].dtype == UTC_US


def test_embeddings_aligned_newest_and_majority_dim(filled: Path) -> None:
    t = read_memories(filled)
    assert t.dim == DIM
    assert t.embeddings.shape == (len(ORDER), DIM) and t.embeddings.dtype == np.float32
    has = dict(zip(t.frame["id"], t.frame["has_embedding"], strict=True))
    assert [m for m in ORDER if has[m]] == ["m01", "m03", "m04", "m06", "m07"]
    for i, mid in enumerate(ORDER):
        if has[mid]:
            np.testing.assert_array_equal(t.embeddings[i], VECS[mid])  # m03: the newer one
        else:
            assert not t.embeddings[i].any()
    dims = dict(zip(t.frame["id"], t.frame["embedding_dim"], strict=True))
    assert dims["m08"] == 3 and dims["m02"] is None and dims["m01"] == DIM


def test_dim_argument_selects_that_dimension(filled: Path) -> None:
    t = read_memories(filled, dim=3)
    assert t.embeddings.shape == (len(ORDER), 3)
    assert t.frame.filter(pl.col("has_embedding"))["id"].to_list() == ["m08"]
    np.testing.assert_array_equal(t.embeddings[ORDER.index("m08")], [1.0, 2.0, 3.0])


def test_soft_deleted_excluded_unless_asked(filled: Path) -> None:
    assert "m05" not in read_memories(filled).frame["id"].to_list()
    t = read_memories(filled, include_deleted=True)
    row = t.frame.filter(pl.col("id") == "m05").row(0, named=True)
    assert row["is_deleted"] and row["superseded"]  # 0.58 compatibility: deleted => superseded
    assert row["deleted_at"] == datetime(2026, 1, 8, tzinfo=UTC)
    i = t.frame["id"].to_list().index("m05")
    np.testing.assert_array_equal(t.embeddings[i], VECS["m05"])


def test_optional_values_and_defaults_without_embeddings(builder: StoreBuilder) -> None:
    builder.memory("x", access_count=7, tags="a,b", project="webapp", pinned=None)
    builder.memory("y", access_count=None, type="preference")
    t = read_memories(builder.path)
    x, y = t.frame.rows(named=True)
    assert (x["access_count"], x["tags"], x["project"], x["pinned"]) == (7, "a,b", "webapp", False)
    assert (y["access_count"], y["tags"], y["type"]) == (0, None, "preference")
    assert t.dim == 768 and t.embeddings.shape == (2, 768)  # no embeddings: default dimension
    assert not t.frame["has_embedding"].any()


def test_open_connection_is_borrowed_not_closed(filled: Path) -> None:
    con = open_readonly(filled)
    try:
        a = read_memories(con)
        assert con.execute("SELECT COUNT(*) FROM memories").fetchone()[0] == 9
        assert schema_version(con) == 30
    finally:
        con.close()
    b = read_memories(filled)
    assert_frame_equal(a.frame, b.frame)


def test_sessions_and_session_memories(filled: Path) -> None:
    s = read_sessions(filled)
    assert s["session_key"].to_list() == ["s1", "s2"]
    assert s["created_at"].to_list() == [
        datetime(2026, 1, 10, 9, tzinfo=UTC),
        datetime(2026, 1, 11, 9, tzinfo=UTC),
    ]
    assert s["confidence"].null_count() == 2 and s["score"].to_list() == [0.8, 0.8]
    sm = read_session_memories(filled, ["s2"])
    assert sm["session_key"].unique().to_list() == ["s2"]
    assert sm["memory_id"].to_list() == ["m01", "m02", "m03"]
    assert sm["was_injected"].to_list() == [True, True, False]
    assert sm["fts_hit_count"].to_list() == [0, 1, 2]
    assert sm["predictor_score"].null_count() == 3
    assert read_session_memories(filled).height == 6
    assert read_session_memories(filled, []).height == 0


def test_session_memories_of_some_columns_are_those_of_the_whole_read(filled: Path) -> None:
    """`columns` reads only those (with the row id and the sort keys), each exactly as a read
    of every column gives it, in the same order."""
    whole = read_session_memories(filled)
    some = read_session_memories(filled, columns=["was_injected", "fts_hit_count"])
    keys = ["id", "session_key", "memory_id", "rank", "created_at"]
    assert sorted(some.columns) == sorted([*keys, "was_injected", "fts_hit_count"])
    assert_frame_equal(some, whole.select(some.columns))
    assert whole.width > some.width


def test_comparisons_jobs_and_training_log(builder: StoreBuilder) -> None:
    builder.insert(
        "predictor_comparisons",
        id="c1",
        session_key="s1",
        predictor_ndcg=0.7,
        baseline_ndcg=0.6,
        predictor_won=1,
        margin=0.1,
        alpha=0.8,
        candidate_count=80,
        created_at="2026-01-10T10:00:00.000Z",
        predictor_top_ids='["m01"]',
    )
    builder.insert(
        "predictor_comparisons",
        id="c0",
        session_key="s0",
        predictor_ndcg=0.5,
        baseline_ndcg=0.6,
        predictor_won=0,
        margin=-0.1,
        alpha=1.0,
        candidate_count=70,
        created_at="2026-01-09 10:00:00",
    )
    builder.insert(
        "summary_jobs",
        id="j1",
        session_key="s1",
        harness="claude-code",
        transcript="user: hi",
        status="completed",
        created_at="2026-01-10 10:00:00",
        completed_at="2026-01-10T10:05:00.000Z",
    )
    builder.insert(
        "predictor_training_log",
        id="t1",
        model_version=42,
        loss=0.3,
        sample_count=100,
        duration_ms=900,
    )  # created_at: datetime('now') default
    c = read_comparisons(builder.path)
    assert c["id"].to_list() == ["c0", "c1"]
    assert c["predictor_won"].to_list() == [False, True]
    assert c["success_rate"].to_list() == [0.5, 0.5] and c["baseline_top_ids"][0] == "[]"
    assert c["predictor_top_ids"][1] == '["m01"]'
    j = read_summary_jobs(builder.path).row(0, named=True)
    assert j["completed_at"] == datetime(2026, 1, 10, 10, 5, tzinfo=UTC)
    assert (j["attempts"], j["max_attempts"], j["status"]) == (0, 3, "completed")
    log = read_training_log(builder.path).row(0, named=True)
    assert log["model_version"] == 42 and log["created_at"].tzinfo is not None


# --- a store with another column order, missing optional columns and the other format ------

SHUFFLED_DDL = {
    "memories": """CREATE TABLE memories (
        content TEXT NOT NULL, is_deleted INTEGER DEFAULT 0, created_at TEXT NOT NULL,
        pinned INTEGER DEFAULT 0, id TEXT PRIMARY KEY, importance REAL DEFAULT 0.5,
        deleted_at TEXT, type TEXT NOT NULL DEFAULT 'fact', last_accessed TEXT,
        content_hash TEXT, category TEXT, confidence REAL DEFAULT 1.0)""",
    "embeddings": """CREATE TABLE embeddings (
        source_id TEXT NOT NULL, dimensions INTEGER NOT NULL, created_at TEXT NOT NULL,
        vector BLOB NOT NULL, id TEXT PRIMARY KEY, source_type TEXT NOT NULL,
        content_hash TEXT NOT NULL, chunk_text TEXT NOT NULL)""",
    "session_scores": """CREATE TABLE session_scores (
        created_at TEXT NOT NULL, score REAL NOT NULL, session_key TEXT NOT NULL,
        id TEXT PRIMARY KEY, harness TEXT, project TEXT, memories_used INTEGER,
        memories_recalled INTEGER, novel_context_count INTEGER, reasoning TEXT)""",
    "session_memories": """CREATE TABLE session_memories (
        memory_id TEXT NOT NULL, rank INTEGER NOT NULL, session_key TEXT NOT NULL,
        id TEXT PRIMARY KEY, was_injected INTEGER NOT NULL, source TEXT NOT NULL,
        final_score REAL NOT NULL, predictor_score REAL, effective_score REAL,
        fts_hit_count INTEGER NOT NULL DEFAULT 0, relevance_score REAL,
        agent_preference TEXT, created_at TEXT NOT NULL, UNIQUE(session_key, memory_id))""",
    "entity_attributes": """CREATE TABLE entity_attributes (
        status TEXT DEFAULT 'active', memory_id TEXT, kind TEXT NOT NULL, id TEXT PRIMARY KEY,
        content TEXT NOT NULL, superseded_by TEXT, agent_id TEXT NOT NULL DEFAULT 'default')""",
}
SHUFFLED_TABLES = ("memories_cold", "schema_migrations")  # copied as they are


def make_shuffled_store(path: Path) -> Path:
    con = sqlite3.connect(path)
    for ddl in SHUFFLED_DDL.values():
        con.execute(ddl)
    for name in SHUFFLED_TABLES:
        con.execute(TABLES_DDL[name])
    for ddl in FTS_DDL:
        con.execute(ddl)
    con.executemany(
        "INSERT INTO schema_migrations VALUES (?, '2025-06-01 00:00:00', 'x')",
        [(v,) for v in range(1, 29)],
    )
    con.commit()
    con.close()
    return path


def test_shuffled_layout_and_other_timestamp_format_read_identically(
    filled: Path, tmp_path: Path
) -> None:
    other = make_shuffled_store(tmp_path / "shuffled.db")
    b = StoreBuilder(other, lenient=True)
    fill(b, flip)
    b.close()
    assert "access_count" not in {
        r[1] for r in sqlite3.connect(other).execute("PRAGMA table_info(memories)")
    }
    for include_deleted in (False, True):
        a = read_memories(filled, include_deleted=include_deleted)
        z = read_memories(other, include_deleted=include_deleted)
        assert_frame_equal(a.frame, z.frame)
        np.testing.assert_array_equal(a.embeddings, z.embeddings)
    assert_frame_equal(read_sessions(filled), read_sessions(other))
    assert_frame_equal(read_session_memories(filled), read_session_memories(other))
    empty = read_training_log(other)  # table absent in this store
    assert empty.height == 0 and empty.schema["created_at"] == UTC_US
    assert read_comparisons(other).schema == read_comparisons(filled).schema


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2090, 1, 1)),
            st.sampled_from(["iso", "sqlite", "offset"]),
        ),
        min_size=1,
        max_size=12,
    )
)
def test_timestamps_match_parse_ts_in_every_format(stamps) -> None:
    texts = []
    for dt, kind in stamps:
        aware = dt.replace(tzinfo=UTC)
        if kind == "iso":
            texts.append(format_iso(aware))
        elif kind == "sqlite":
            texts.append(format_sqlite(aware))
        else:
            texts.append(aware.isoformat())  # '+00:00' offset: the slow path
    with tempfile.TemporaryDirectory() as tmp:
        path = create_store(Path(tmp) / "m.db")
        b = StoreBuilder(path)
        for i, text in enumerate(texts):
            b.memory(f"m{i:03d}", created_at=text, last_accessed=text)
        b.close()
        f = read_memories(path).frame.sort("id")
    assert f["created_at"].to_list() == [parse_ts(t) for t in texts]
    assert f["last_accessed"].to_list() == [parse_ts(t) for t in texts]


# --- stores as real installs leave them ----------------------------------------------------


def test_vec0_store_reads_and_says_what_it_skipped(vec_store: Path) -> None:
    t = read_memories(vec_store)
    assert t.frame["id"].to_list() == list(VEC_MEMORY_IDS)
    np.testing.assert_array_equal(t.embeddings, vec_vectors())
    assert read_session_memories(vec_store)["memory_id"].to_list() == list(VEC_MEMORY_IDS)
    assert read_sessions(vec_store).height == 1
    tables = store_tables(vec_store)
    skipped = {s.name: s.reason for s in tables.skipped}
    assert skipped["vec_embeddings"] == "virtual table USING vec0: no such module: vec0"
    for shadow in VEC0_SHADOW_DDL:
        assert skipped[shadow] == "shadow table of virtual table vec_embeddings (USING vec0)"
    assert set(skipped) - set(VEC0_SHADOW_DDL) - {"vec_embeddings"} == {
        f"memories_fts_{s}" for s in ("config", "data", "docsize", "idx")
    }
    assert "memories_fts" in tables.columns  # FTS5 is readable: the BM25 ranking uses it
    assert tables.columns["memories"][:2] == ("id", "type")  # in table order
    assert "vec_embeddings" not in tables.columns
    note = tables.skipped_note()
    assert note.startswith(f"{vec_store}: skipped 9 table(s): ") and "no such module: vec0" in note


def test_a_view_over_the_vec0_table_is_skipped_with_the_reason(vec_store: Path) -> None:
    con = sqlite3.connect(vec_store)
    con.execute("CREATE VIEW recent_vectors AS SELECT id FROM vec_embeddings")
    con.commit()
    con.close()
    skipped = {s.name: s.reason for s in store_tables(vec_store).skipped}
    assert skipped["recent_vectors"] == "cannot be described: no such module: vec0"
    assert len(read_memories(vec_store)) == len(VEC_MEMORY_IDS)


def test_master_entries_split_virtual_shadow_and_internal_tables() -> None:
    rows = [
        ("table", "memories_fts", "CREATE VIRTUAL TABLE memories_fts USING fts5(content)"),
        ("table", "memories_fts_data", "CREATE TABLE 'memories_fts_data'(id, block)"),
        ("table", "vec", "create  virtual\ntable vec using VEC0(embedding float[4])"),
        ("table", "vec_items", "CREATE VIRTUAL TABLE vec_items USING vec0(x float[4])"),
        ("table", "vec_items_chunks", "CREATE TABLE vec_items_chunks (chunk_id INTEGER)"),
        ("table", "vec_rowids", "CREATE TABLE vec_rowids (rowid INTEGER)"),
        ("table", "session", "CREATE VIRTUAL TABLE session USING fts5(x)"),
        ("table", "session_scores", "CREATE TABLE session_scores (id TEXT)"),  # Signet's own
        ("table", "sqlite_sequence", "CREATE TABLE sqlite_sequence(name,seq)"),
        ("index", "idx_memories_type", "CREATE INDEX idx_memories_type ON memories(type)"),
        ("view", "recent", "CREATE VIEW recent AS SELECT 1"),
        ("table", "future_things", None),
    ]
    entries, shadows = master_entries(rows)
    assert entries == {
        "memories_fts": "fts5",
        "vec": "vec0",
        "vec_items": "vec0",
        "session": "fts5",
        "session_scores": None,
        "recent": None,
        "future_things": None,
    }
    owners = {s.name: s.reason for s in shadows}
    assert owners == {
        "memories_fts_data": "shadow table of virtual table memories_fts (USING fts5)",
        "vec_items_chunks": "shadow table of virtual table vec_items (USING vec0)",  # longest
        "vec_rowids": "shadow table of virtual table vec (USING vec0)",
    }


# --- bad input ------------------------------------------------------------------------------


def test_missing_path(tmp_path: Path) -> None:
    p = tmp_path / "nope.db"
    with pytest.raises(StoreMissingError, match="nope.db: no such file"):
        read_memories(p)
    with pytest.raises(StoreMissingError, match="not a regular file"):
        open_readonly(tmp_path)


def test_not_sqlite(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello, this is not a database\n" * 10)
    with pytest.raises(NotSQLiteError, match="notes.txt: not an SQLite database"):
        open_readonly(text)
    empty = tmp_path / "empty.db"
    empty.touch()
    with pytest.raises(NotSQLiteError, match="empty file"):
        read_sessions(empty)
    corrupt = tmp_path / "corrupt.db"
    corrupt.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4000)
    with pytest.raises(NotSQLiteError, match="corrupt.db"):
        open_readonly(corrupt)


def test_not_a_signet_store_lists_missing_tables(plain_sqlite: Path) -> None:
    with pytest.raises(NotSignetStoreError) as info:
        open_readonly(plain_sqlite)
    expected = tuple(t for t in REQUIRED_TABLES if t != "memories")
    assert info.value.missing == expected
    for table in expected:
        assert table in str(info.value)
    listed = str(info.value).split("missing table(s): ")[1].split(", ")
    assert listed == list(expected)  # the present `memories` table is not listed


def test_bad_blob_length_names_memory_and_sizes(builder: StoreBuilder) -> None:
    builder.memory("good")
    builder.embedding("good", np.ones(4))
    builder.memory("mem-bad")
    builder.embedding("mem-bad", np.ones(4), blob=b"\x00" * 13, dims=4, eid="emb-7")
    with pytest.raises(EmbeddingBlobError) as info:
        read_memories(builder.path)
    msg = str(info.value)
    assert "'mem-bad'" in msg and "13 bytes" in msg and "dimensions=4" in msg and "16" in msg
    assert "'emb-7'" in msg
    assert info.value.memory_id == "mem-bad"


def test_bad_timestamp_names_table_column_row_and_value(builder: StoreBuilder) -> None:
    builder.memory("ok")
    builder.memory("m-42", last_accessed="last tuesday")
    with pytest.raises(StoreTimestampError) as info:
        read_memories(builder.path)
    msg = str(info.value)
    assert "memories.last_accessed" in msg and "'m-42'" in msg and "'last tuesday'" in msg
    builder.insert("session_scores", id="sc-1", session_key="s", score=0.5, created_at="soon")
    with pytest.raises(StoreTimestampError, match=r"session_scores\.created_at of row 'sc-1'"):
        read_sessions(builder.path)


def test_newer_schema_with_extra_table_and_column_reads_with_a_warning(
    builder: StoreBuilder,
) -> None:
    fill(builder)
    builder.insert("schema_migrations", version=31, applied_at="2026-05-01", checksum="x")
    builder.con.execute("CREATE TABLE future_things (id TEXT PRIMARY KEY, body TEXT)")
    builder.con.execute("ALTER TABLE memories ADD COLUMN future_col TEXT DEFAULT 'new'")
    builder.con.execute("ALTER TABLE session_scores ADD COLUMN future_score REAL")
    builder.close()
    path = builder.path
    expected = (
        f"{path}: schema_migrations records version 31, newer than the versions this reader "
        "knows (1..30, Signet 0.58; migrations 031..031 are unknown); reading it by column name"
    )
    with pytest.warns(SchemaVersionWarning) as caught:
        t = read_memories(path)
    assert [str(w.message) for w in caught] == [expected]
    assert caught[0].filename == __file__  # points at the caller, not the store package
    with pytest.warns(SchemaVersionWarning, match="version 31"):
        sessions = read_sessions(path)
    assert t.frame["id"].to_list() == ORDER and "future_col" not in t.frame.columns
    assert sessions["session_key"].to_list() == ["s1", "s2"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same data at a known version: no warning
        builder.con = sqlite3.connect(path)
        builder.con.execute("DELETE FROM schema_migrations WHERE version = 31")
        builder.con.commit()
        builder.con.close()
        assert read_memories(path).frame["id"].to_list() == ORDER


def test_newer_schema_missing_what_the_workbench_reads_names_every_gap(
    builder: StoreBuilder,
) -> None:
    builder.insert("schema_migrations", version=32, applied_at="2026-05-01", checksum="y")
    builder.con.execute("DROP TABLE session_scores")
    builder.con.execute("ALTER TABLE embeddings DROP COLUMN dimensions")
    builder.con.execute("ALTER TABLE session_memories DROP COLUMN rank")
    builder.con.execute("ALTER TABLE predictor_comparisons DROP COLUMN baseline_ndcg")
    builder.con.execute("DROP TABLE summary_jobs")  # optional: its absence is no gap
    with pytest.raises(SchemaVersionError) as info:
        read_memories(builder.path)
    gaps = (
        "session_scores",
        "embeddings.dimensions",
        "session_memories.rank",
        "predictor_comparisons.baseline_ndcg",
    )
    assert info.value.missing == gaps
    msg = str(info.value)
    assert str(builder.path) in msg and "version 32" in msg and "031..032" in msg
    assert "missing table(s): session_scores;" in msg
    assert "missing column(s): embeddings.dimensions, session_memories.rank, " in msg


def test_schema_version_of_a_newer_store(builder: StoreBuilder) -> None:
    builder.insert("schema_migrations", version=33, applied_at="2026-05-01", checksum="z")
    with pytest.warns(SchemaVersionWarning, match="version 33"):
        con = open_readonly(builder.path)
    try:
        assert schema_version(con) == 33
    finally:
        con.close()


def test_schema_version_missing(builder: StoreBuilder) -> None:
    builder.con.execute("DELETE FROM schema_migrations")
    with pytest.raises(SchemaVersionError, match="schema_migrations has no rows"):
        open_readonly(builder.path)


def test_required_column_missing(tmp_path: Path) -> None:
    path = make_shuffled_store(tmp_path / "s.db")
    con = sqlite3.connect(path)
    con.execute("ALTER TABLE session_scores DROP COLUMN score")
    con.commit()
    con.close()
    with pytest.raises(MissingColumnError, match="session_scores has no column 'score'"):
        read_sessions(path)


def test_column_spec_rows_parse_and_reject_unknown_kinds() -> None:
    """Check "name kind [default]" rows: `required` is the REQUIRED marker, no default is None,
    SQL defaults are kept as written, and a bad kind or row shape names the row."""
    spec = _spec("id  text  required", "note  text", 'seen  ts  "created_at"', "n  int  0")
    assert spec == (
        ("id", "text", REQUIRED),
        ("note", "text", None),
        ("seen", "ts", '"created_at"'),
        ("n", "int", "0"),
    )
    assert spec[0][2] is REQUIRED
    for bad in ("score float", "lonely", "a text 'x' extra"):
        with pytest.raises(ValueError, match=repr(bad).replace("(", r"\(")):
            _spec(bad)


def test_every_store_error_is_a_user_error() -> None:
    for cls in (
        StoreMissingError,
        NotSQLiteError,
        NotSignetStoreError,
        SchemaVersionError,
        EmbeddingBlobError,
        StoreTimestampError,
        MissingColumnError,
        DuckDBStoreError,
    ):
        assert issubclass(cls, UserError)
