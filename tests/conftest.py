"""Fixtures shared across test folders: the small demo, the young store, the one-session
current store and the architect stores (tests/analysis/queries/stores.py), a simulated store
of each of Signet's release lines (tests/lines.py), and the current one as Signet's daemon
would have left it, built once per run (once for all the workers of a parallel run, each of
which gets its own copy)."""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from signet_bench.app.demo import demo_paths
from signet_bench.store.schema import RELEASE_LINES
from tests.analysis.queries.stores import (
    ONE_SESSION_DB,
    YOUNG_DB,
    architect_db,
    architect_store,
    one_session_store,
    small_demo,
    young_store,
)
from tests.lines import as_signet_leaves_it, simulated_store


def built_once(tmp_path_factory, name: str, build: Callable[[Path], object]) -> Path:
    """The folder `name` of this run's temporary folder, filled by `build(folder)` once per run.
    Alone, it is built in place; under pytest-xdist the first worker to ask builds it, under a
    lock, in the folder all the workers share, and each worker gets its own copy: a copy of a
    few SQLite and DuckDB files is cheap, and a worker then opens, locks and writes only its own
    (DuckDB holds a workbench against every other process)."""
    mine = tmp_path_factory.getbasetemp() / name
    if os.environ.get("PYTEST_XDIST_WORKER") is None:
        build(mine)
        return mine
    shared = tmp_path_factory.getbasetemp().parent / name
    with open(f"{shared}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        done = shared.with_name(f"{name}.built")
        if not done.exists():
            shutil.rmtree(shared, ignore_errors=True)  # what a failed build left
            build(shared)
            done.touch()
    # SQLite rebuilds a -shm from its database and -wal files on the first open
    shutil.copytree(shared, mine, ignore=shutil.ignore_patterns("*-shm"))
    return mine


@pytest.fixture(scope="session")
def demo(tmp_path_factory):
    return demo_paths(built_once(tmp_path_factory, "shared-demo", small_demo))


@pytest.fixture(scope="session")
def young(tmp_path_factory):
    return built_once(tmp_path_factory, "shared-young", young_store) / YOUNG_DB


@pytest.fixture(scope="session")
def one_session(tmp_path_factory):
    """A current store after its first session, as Signet's daemon leaves it (read only)."""
    return built_once(tmp_path_factory, "shared-one-session", one_session_store) / ONE_SESSION_DB


def _line_stores(root: Path) -> None:
    for line in RELEASE_LINES:
        simulated_store(root / f"{line}.db", line)


@pytest.fixture(scope="session")
def line_stores(tmp_path_factory) -> dict[str, Path]:
    """A simulated store per release line ("0.58", "current"), the same user and sessions in
    both; tests only read them (copy one to write)."""
    root = built_once(tmp_path_factory, "shared-lines", _line_stores)
    return {line: root / f"{line}.db" for line in RELEASE_LINES}


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


def _architect_stores(root: Path) -> None:
    for line in RELEASE_LINES:
        architect_store(root, line)


@pytest.fixture(scope="session")
def architect(tmp_path_factory) -> dict[str, Path]:
    """A simulated architect store (with a knowledge graph) per release line (read only)."""
    root = built_once(tmp_path_factory, "shared-architect", _architect_stores)
    return {line: root / architect_db(line) for line in RELEASE_LINES}
