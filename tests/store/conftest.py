"""Shared fixtures: an empty Signet store and a small writer for filling it with plain SQL."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

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
