"""Shared fixtures: an empty Signet store, a small writer for filling it with plain SQL, and
stores shaped like real installs (sqlite-vec's vec0 table; a newer schema version)."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from signet_bench.store import write
from signet_bench.store.content import content_hash
from signet_bench.store.schema import connect_writer, create_store


class StoreBuilder:
    """Inserts rows the way Signet's daemon leaves them (autocommit, columns by name)."""

    def __init__(self, path: Path, *, lenient: bool = False) -> None:
        self.path = path
        self.con = connect_writer(path)
        self.lenient = lenient  # drop values for columns the table lacks (older stores)

    def insert(self, table: str, **values: object) -> None:
        if self.lenient:
            present = {r[1] for r in self.con.execute(f"PRAGMA table_info({table})")}
            values = {k: v for k, v in values.items() if k in present}
        cols = ", ".join(values)
        marks = ", ".join("?" for _ in values)
        self.con.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(values.values()))

    def memory(
        self,
        mid: str,
        *,
        created_at: str = "2026-01-01T00:00:00.000Z",
        content: str | None = None,
        **cols: object,
    ) -> None:
        text = content if content is not None else f"memory {mid} about sqlite"
        values: dict[str, object] = {
            "id": mid,
            "content": text,
            "created_at": created_at,
            "updated_at": cols.pop("updated_at", created_at),
            "content_hash": content_hash(text),
        }
        values.update(cols)
        self.insert("memories", **values)

    def embedding(
        self,
        memory_id: str,
        vector: np.ndarray | list[float],
        *,
        dims: int | None = None,
        blob: bytes | None = None,
        created_at: str = "2026-01-01T00:00:00.000Z",
        eid: str | None = None,
    ) -> None:
        vec = np.asarray(vector, dtype="<f4")
        self.insert(
            "embeddings",
            id=eid or str(uuid.uuid4()),
            content_hash=uuid.uuid4().hex,
            vector=blob if blob is not None else vec.tobytes(),
            dimensions=dims if dims is not None else int(vec.size),
            source_type="memory",
            source_id=memory_id,
            chunk_text="chunk",
            created_at=created_at,
        )

    def cold(self, memory_id: str, reason: str = "superseded") -> None:
        self.insert(
            "memories_cold",
            archive_id=str(uuid.uuid4()),
            memory_id=memory_id,
            content="old content",
            original_created_at="2025-12-01T00:00:00.000Z",
            archived_at="2026-01-05T00:00:00.000Z",
            archived_reason=reason,
        )

    def attribute(
        self,
        memory_id: str,
        *,
        kind: str = "attribute",
        status: str = "active",
        superseded_by: str | None = None,
    ) -> None:
        self.insert(
            "entity_attributes",
            id=str(uuid.uuid4()),
            memory_id=memory_id,
            kind=kind,
            content="attribute",
            status=status,
            superseded_by=superseded_by,
        )

    def close(self) -> None:
        self.con.close()


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    """A fresh, empty Signet 0.58 store."""
    return create_store(tmp_path / "memories.db")


@pytest.fixture
def builder(store_path: Path) -> Iterator[StoreBuilder]:
    """A writer on `store_path`, closed after the test (before any reader asserts on files)."""
    b = StoreBuilder(store_path)
    yield b
    b.close()


@pytest.fixture
def plain_sqlite(tmp_path: Path) -> Path:
    """An SQLite file that is not a Signet store (one unrelated table and a memories table)."""
    p = tmp_path / "other.db"
    con = sqlite3.connect(p)
    con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)")
    con.execute("CREATE TABLE memories (id TEXT PRIMARY KEY, content TEXT)")
    con.commit()
    con.close()
    return p


# --- stores as real installs leave them ----------------------------------------------------

VEC_DIM = 8
VEC_MEMORY_IDS = ("vm-1", "vm-2", "vm-3")

# The vec0 table Signet 0.58's daemon creates when sqlite-vec loads (db-accessor.ensureVecTable),
# and the shadow tables sqlite-vec keeps its data in (DDL as sqlite-vec writes it for a TEXT key).
VEC0_SQL = (
    "CREATE VIRTUAL TABLE vec_embeddings USING vec0("
    "id TEXT PRIMARY KEY, embedding FLOAT[768] distance_metric=cosine)"
)
VEC0_SHADOW_DDL = {
    "vec_embeddings_info": "CREATE TABLE vec_embeddings_info (key text primary key, value any)",
    "vec_embeddings_chunks": (
        "CREATE TABLE vec_embeddings_chunks (chunk_id INTEGER PRIMARY KEY AUTOINCREMENT,"
        " size INTEGER NOT NULL, validity BLOB NOT NULL, rowids BLOB NOT NULL)"
    ),
    "vec_embeddings_rowids": (
        "CREATE TABLE vec_embeddings_rowids (rowid INTEGER PRIMARY KEY AUTOINCREMENT,"
        " id TEXT UNIQUE NOT NULL, chunk_id INTEGER, chunk_offset INTEGER)"
    ),
    "vec_embeddings_vector_chunks00": (
        "CREATE TABLE vec_embeddings_vector_chunks00 (rowid PRIMARY KEY, vectors BLOB NOT NULL)"
    ),
}


def vec_vectors() -> np.ndarray:
    """The embeddings written to the vec0 store, one row per `VEC_MEMORY_IDS` entry."""
    return np.random.default_rng(7).standard_normal((len(VEC_MEMORY_IDS), VEC_DIM)).astype("<f4")


def add_vec0_table(path: Path) -> None:
    """Give a store sqlite-vec's `vec_embeddings` virtual table without loading sqlite-vec: its
    `sqlite_master` row written directly, and its shadow tables as ordinary tables."""
    con = connect_writer(path)
    try:
        for ddl in VEC0_SHADOW_DDL.values():
            con.execute(ddl)
        con.execute("INSERT INTO vec_embeddings_info VALUES ('CREATE_VERSION', 'v0.1.6')")
        ids = [r[0] for r in con.execute("SELECT id FROM embeddings ORDER BY rowid")]
        con.executemany(
            "INSERT INTO vec_embeddings_rowids (id, chunk_id, chunk_offset) VALUES (?, 1, ?)",
            [(eid, i) for i, eid in enumerate(ids)],
        )
        con.execute("PRAGMA writable_schema = ON")
        con.execute(
            "INSERT INTO sqlite_master (type, name, tbl_name, rootpage, sql)"
            " VALUES ('table', 'vec_embeddings', 'vec_embeddings', 0, ?)",
            (VEC0_SQL,),
        )
        con.execute("PRAGMA writable_schema = OFF")
    finally:
        con.close()


def make_vec0_store(path: Path) -> Path:
    """A store as a default install leaves it: memories with embeddings, sessions, and the
    vec0 table with its shadow tables."""
    create_store(path)
    con = connect_writer(path)
    try:
        write.insert_memories(
            con,
            [
                {
                    "id": mid,
                    "content": f"vec memory {i}",
                    "created_at": f"2026-02-0{i + 1}T10:00:00Z",
                }
                for i, mid in enumerate(VEC_MEMORY_IDS)
            ],
        )
        write.insert_embeddings(con, list(VEC_MEMORY_IDS), vec_vectors(), "nomic-embed-text")
        write.insert_session_score(
            con, "vs-1", score=0.7, created_at="2026-02-05T09:00:00.000Z", project="p"
        )
        write.record_session_candidates(
            con,
            "vs-1",
            [
                write.CandidateRow(
                    memory_id=mid,
                    source="effective",
                    effective_score=1.0 - i / 10,
                    predictor_score=None,
                    final_score=1.0 - i / 10,
                    rank=i,
                    was_injected=i < 2,
                )
                for i, mid in enumerate(VEC_MEMORY_IDS)
            ],
            created_at="2026-02-05T09:00:00.000Z",
        )
    finally:
        con.close()
    add_vec0_table(path)
    return path


@pytest.fixture
def vec_store(tmp_path: Path) -> Path:
    """A store carrying sqlite-vec's vec0 table (see `make_vec0_store`)."""
    return make_vec0_store(tmp_path / "vec.db")
