"""Signet-compatible SQLite stores: schema, tolerant read-only reader, DuckDB analytics."""
