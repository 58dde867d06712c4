"""The dashboard's label-source counts, DuckDB aggregates over the store it holds open, are the
library's (`learn.samples.label_sources`, read with its own reader in a child process), on
stores of both release lines, as Signet leaves a current one, and with the session-start
wrapper's record beside the workbench."""

from __future__ import annotations

from pathlib import Path

import pytest

from signet_bench.analysis.queries.derived import derived_frames
from signet_bench.analysis.queries.label_counts import label_source_counts
from signet_bench.analysis.queries.source import open_store
from signet_bench.store.read import read_sessions
from signet_scorer.workbench import default_workbench
from tests.hook_records import record_prompt, record_start, session_rows, store_copy


def _both(store: Path):
    workbench = default_workbench(store)
    library = derived_frames(store, workbench=workbench, frames=("label_sources",))
    con = open_store(store)
    try:
        return label_source_counts(con, workbench), library.label_sources
    finally:
        con.close()


@pytest.fixture(scope="module")
def recorded(bare_current, tmp_path_factory) -> Path:
    """A current store whose record has a served session, one failed open and a prompt."""
    store = store_copy(bare_current, tmp_path_factory.mktemp("counted") / "current.db")
    first, second = sorted(set(read_sessions(store)["session_key"]))[:2]
    rows = [m for m, _, _ in session_rows(store, first)]
    record_start(store, first, rows[:5])
    record_start(store, second, rows[:2], reason="no model at /models/model.onnx")
    record_prompt(store, first, rows[5:7])
    return store


def test_the_counts_are_the_librarys_on_both_lines(line_store):
    ours, library = _both(line_store)
    assert ours.equals(library)
    assert ours.filter(present=True)["sessions"].sum() > 0  # something counted


def test_the_counts_are_the_librarys_on_a_current_store_as_signet_leaves_it(bare_current):
    ours, library = _both(bare_current)
    assert ours.equals(library)


def test_the_counts_name_the_wrappers_record(recorded):
    ours, library = _both(recorded)
    assert ours.equals(library)
    hook = ours.filter(source="hook injections").row(0, named=True)
    assert (hook["present"], hook["sessions"], hook["rows"]) == (True, 1, 5)  # served only
