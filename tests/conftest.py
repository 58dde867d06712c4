"""Fixtures shared across test folders: the small demo and the young store
(tests/queries/stores.py), and a simulated store of each of Signet's release lines
(tests/lines.py), built once per run."""

from __future__ import annotations

from pathlib import Path

import pytest

from signet_bench.store.schema import RELEASE_LINES
from tests.analysis.queries.stores import small_demo, young_store
from tests.lines import simulated_store


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    return small_demo(tmp_path_factory.getbasetemp() / "shared-demo")


@pytest.fixture(scope="session")
def young(tmp_path_factory):
    return young_store(tmp_path_factory.getbasetemp() / "shared-young")


@pytest.fixture(scope="session")
def line_stores(tmp_path_factory) -> dict[str, Path]:
    """A simulated store per release line ("0.58", "current"), the same user and sessions in
    both; tests only read them (copy one to write)."""
    root = tmp_path_factory.getbasetemp() / "shared-lines"
    return {line: simulated_store(root / f"{line}.db", line) for line in RELEASE_LINES}


@pytest.fixture(params=RELEASE_LINES)
def line_store(request, line_stores: dict[str, Path]) -> Path:
    """Each release line's simulated store in turn (read only)."""
    return line_stores[request.param]
