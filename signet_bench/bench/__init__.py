"""Benchmarks: each prints a table and can write DESIGN §10 JSON."""
