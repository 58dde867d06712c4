"""Fixtures shared across test folders: the small demo and the young store
(tests/queries/stores.py), built once per run."""

from __future__ import annotations

import pytest

from tests.analysis.queries.stores import small_demo, young_store


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    return small_demo(tmp_path_factory.getbasetemp() / "shared-demo")


@pytest.fixture(scope="session")
def young(tmp_path_factory):
    return young_store(tmp_path_factory.getbasetemp() / "shared-young")
