"""Fixtures shared across test folders: the small demo, the young store, the one-session
current store and the architect stores (tests/analysis/queries/stores.py), a simulated store
of each of Signet's release lines (tests/lines.py), and the current one as Signet's daemon
would have left it, built once per run."""

from __future__ import annotations

from pathlib import Path

import pytest

from signet_bench.store.schema import RELEASE_LINES
from tests.analysis.queries.stores import (
    architect_store,
    one_session_store,
    small_demo,
    young_store,
)
from tests.lines import as_signet_leaves_it, simulated_store


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    return small_demo(tmp_path_factory.getbasetemp() / "shared-demo")


@pytest.fixture(scope="session")
def young(tmp_path_factory):
    return young_store(tmp_path_factory.getbasetemp() / "shared-young")


@pytest.fixture(scope="session")
def one_session(tmp_path_factory):
    """A current store after its first session, as Signet's daemon leaves it (read only)."""
    return one_session_store(tmp_path_factory.getbasetemp() / "shared-one-session")


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


@pytest.fixture(scope="session")
def bare_current(line_stores, tmp_path_factory) -> Path:
    """The current line's simulated store without the simulator's and synthesizer's tables: no
    predictor state, no comparisons, no session plan (read only)."""
    root = tmp_path_factory.getbasetemp() / "shared-lines"
    return as_signet_leaves_it(line_stores["current"], root / "current-bare.db")


@pytest.fixture(scope="session")
def architect(tmp_path_factory) -> dict[str, Path]:
    """A simulated architect store (with a knowledge graph) per release line (read only)."""
    root = tmp_path_factory.getbasetemp() / "shared-architect"
    return {line: architect_store(root, line) for line in RELEASE_LINES}
