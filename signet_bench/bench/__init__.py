"""Benchmarks: each prints a table and can write JSON (docs/specification.md §12)."""
