"""Errors for unreadable or malformed stores: each message names the file, row and field at fault.

All are `UserError`s, so the CLI prints the message and exits 2 instead of showing a traceback.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from signet_bench.errors import UserError

__all__ = [
    "DuckDBStoreError",
    "EmbeddingBlobError",
    "MissingColumnError",
    "NotSQLiteError",
    "NotSignetStoreError",
    "SchemaVersionError",
    "SchemaVersionWarning",
    "StoreError",
    "StoreMissingError",
    "StoreTimestampError",
    "WorkbenchRowError",
    "error_text",
]


def error_text(exc: BaseException) -> str:
    """An exception's message without the SQL context DuckDB appends after the first line."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


class StoreError(UserError):
    """A Signet store (or the workbench file) that cannot be read as asked."""


class StoreMissingError(StoreError):
    """The store path does not exist (or is not a file)."""

    def __init__(self, path: str | Path, reason: str = "no such file") -> None:
        self.path = str(path)
        super().__init__(f"{path}: {reason}; expected a Signet memories.db")


class NotSQLiteError(StoreError):
    """The file exists but is not an SQLite database."""

    def __init__(self, path: str | Path, detail: str = "") -> None:
        self.path = str(path)
        extra = f" ({detail})" if detail else ""
        super().__init__(f"{path}: not an SQLite database file{extra}")


class NotSignetStoreError(StoreError):
    """An SQLite file that lacks tables every Signet store has."""

    def __init__(self, path: str | Path, missing: Iterable[str]) -> None:
        self.path = str(path)
        self.missing = tuple(missing)
        super().__init__(f"{path}: not a Signet store; missing table(s): {', '.join(self.missing)}")


class MissingColumnError(StoreError):
    """A table lacks a column the reader cannot default (e.g. `memories.id`)."""

    def __init__(self, path: str | Path, table: str, column: str) -> None:
        self.path, self.table, self.column = str(path), table, column
        super().__init__(f"{path}: table {table} has no column {column!r}, which is required")


class SchemaVersionError(StoreError):
    """`schema_migrations` is empty, or records a newer version than the reader knows and the
    store lacks tables or columns the workbench reads (`missing`: `table` or `table.column`)."""

    def __init__(self, path: str | Path, detail: str, missing: Iterable[str] = ()) -> None:
        self.path = str(path)
        self.missing = tuple(missing)
        super().__init__(f"{path}: unknown schema version: {detail}")


class SchemaVersionWarning(UserWarning):
    """A store from a newer Signet release than the reader knows, read by column name."""


class DuckDBStoreError(StoreError):
    """DuckDB failed at the store edge: loading the SQLite extension, attaching the store or the
    workbench file, defining the views, or a helper query."""

    def __init__(self, path: str | Path, action: str, detail: str) -> None:
        self.path, self.action = str(path), action
        super().__init__(f"{path}: {action} failed in DuckDB: {detail}")


class EmbeddingBlobError(StoreError):
    """An embedding blob whose byte length is not 4 x `dimensions` (float32)."""

    def __init__(
        self, path: str | Path, memory_id: str, n_bytes: int, dimensions: int, embedding_id: str
    ) -> None:
        self.path, self.memory_id = str(path), memory_id
        self.n_bytes, self.dimensions = n_bytes, dimensions
        super().__init__(
            f"{path}: embeddings row {embedding_id!r} for memory {memory_id!r}: vector has "
            f"{n_bytes} bytes but dimensions={dimensions} needs {4 * dimensions} (float32)"
        )


class StoreTimestampError(StoreError):
    """A timestamp value in neither of Signet's formats."""

    def __init__(
        self, path: str | Path, table: str, column: str, row_id: object, value: object
    ) -> None:
        self.path, self.table, self.column = str(path), table, column
        self.row_id, self.value = row_id, value
        super().__init__(
            f"{path}: {table}.{column} of row {row_id!r} is not a timestamp: {value!r} "
            "(expected 2026-03-14T21:40:46.123Z or 2026-03-14 21:40:46)"
        )


class WorkbenchRowError(StoreError):
    """A row for the workbench file with a missing or unknown field."""

    def __init__(self, table: str, detail: str) -> None:
        self.table = table
        super().__init__(f"workbench {table}: {detail}")
