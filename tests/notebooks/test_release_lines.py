"""Every notebook on both of Signet's release lines: run headless as a script on a 0.58 store,
a current store, and a current store as Signet's daemon leaves it (no simulator state, no
comparisons); and the dashboard's frames on each under pytest."""

from __future__ import annotations

import subprocess
import sys

import pytest

from signet_bench.analysis.queries import dashboard as dash
from signet_bench.app.launch import NOTEBOOKS, notebook_path
from tests.hook_records import served_and_failed
from tests.notebooks.test_notebooks import _run


def test_every_notebook_runs_as_a_script_on_both_lines(line_stores, bare_current):
    stores = {**line_stores, "current as Signet leaves it": bare_current}
    failed = {}
    for label, db in stores.items():  # one store at a time: four notebooks at once
        runs = {
            name: subprocess.Popen(
                [sys.executable, str(notebook_path(name)), "--db", str(db)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for name in NOTEBOOKS
        }
        for name, proc in runs.items():
            _out, err = proc.communicate(timeout=300)
            if proc.returncode != 0 or "Traceback" in err:
                failed[(name, label)] = err[-2000:]
    assert not failed, failed


@pytest.mark.parametrize("line", ["0.58", "current"])
def test_dashboard_on_each_line(line_stores, line):
    """Past cold start on both lines: the timeline and the inspector show the comparisons (the
    current store's recomputed by the workbench), the latest session picked."""
    _, d = _run("dashboard", db_path=line_stores[line], workbench_path=None, bench_dir=None)
    view = d["view"]
    assert d["data"].line == line and view.status.mode == "active"
    assert view.sessions.filter(view.sessions["counted"]).height >= 20
    assert d["chosen_session"]["n"] == view.sessions["n"].max()
    assert d["detail"].predictor_top.height == 10
    assert d["lower"].injections.height == view.sessions.height


def test_dashboard_on_a_current_store_as_signet_leaves_it(bare_current):
    """No cold-start dead end: offline, the verdict weighs the recomputed comparisons, the
    timeline and inspector are shown, and the label sources and focal entities are stated."""
    _, d = _run("dashboard", db_path=bare_current, workbench_path=None, bench_dir=None)
    view, details = d["view"], d["details"]
    assert view.status.mode == "offline" and view.status.comparing
    text, _ = dash.verdict(view)
    assert not text.startswith("Not yet") and "Judged offline" in text
    assert "timeline" in d and d["detail"].baseline_top.height == 10
    assert details.label_sources.filter(details.label_sources["present"]).height == 6
    # the loop's checkpoints name each session's focal entities, as current Signet's do
    assert details.focal.note.startswith(
        "Focal entities as the store names them, from the checkpoints in "
    )


def test_drift_on_a_current_store_follows_the_recomputed_comparisons(bare_current):
    """The drift explorer's success rate per stretch counts the sessions the workbench compared
    on a store that keeps no comparisons."""
    _, d = _run("drift", db_path=bare_current)
    assert d["sessions"]["counted"].sum() >= 20
    assert d["success"]["counted"].sum() == d["sessions"]["counted"].sum()


def test_dashboard_shows_what_the_session_start_wrapper_injected(bare_current, tmp_path):
    """With the wrapper's record beside the store's workbench, the injections panel's frame
    holds the session it served and the one it failed open on, and the label sources name it."""
    store, served, failed, shown = served_and_failed(bare_current, tmp_path / "hooked.db")
    _, d = _run("dashboard", db_path=store, workbench_path=None, bench_dir=None)
    rows = d["lower"].injections.filter(d["lower"].injections["hook"].is_not_null())
    assert sorted(rows.select("session_key", "hook").rows()) == sorted(
        [(served, "served"), (failed, "failed open")]
    )
    assert rows.filter(rows["hook"] == "served")["hook_memory_ids"].to_list() == [shown]
    sources = d["details"].label_sources.filter(source="hook injections")
    assert sources["sessions"].to_list() == [1]
