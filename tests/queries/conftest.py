"""Fixtures: the shared small demo and young store (tests/queries/stores.py), and a DuckDB
connection on the demo store."""

from __future__ import annotations

import pytest

from signet_bench.queries.source import open_store
from tests.queries.stores import small_demo, young_store


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    return small_demo(tmp_path_factory.getbasetemp() / "shared-demo")


@pytest.fixture(scope="session")
def young(tmp_path_factory):
    return young_store(tmp_path_factory.getbasetemp() / "shared-young")


@pytest.fixture()
def con(demo):
    con = open_store(demo.store)
    yield con
    con.close()
