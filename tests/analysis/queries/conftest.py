"""Fixtures: a DuckDB connection on the shared demo store (tests/conftest.py)."""

from __future__ import annotations

import pytest

from signet_bench.analysis.queries.source import open_store


@pytest.fixture()
def con(demo):
    con = open_store(demo.store)
    yield con
    con.close()
