"""Every notebook: clean under `marimo check --strict`, runs headless as a script on the demo
and on a young cold-start store, and under pytest through `app.run(defs=...)` with its key
frames checked."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from signet_bench.analysis.queries.calibration import read_labels
from signet_bench.app.launch import NOTEBOOK_DIR, NOTEBOOKS, notebook_path
from signet_scorer.workbench import default_workbench


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"nb_{name}", notebook_path(name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


def _run(name: str, **defs):
    outputs, found = _load(name).run(defs=defs)
    if "con" in found:
        found["con"].close()
    return outputs, found


def test_marimo_check_strict_is_clean():
    done = subprocess.run(
        [sys.executable, "-m", "marimo", "check", "--strict", str(NOTEBOOK_DIR)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_notebook_runs_as_a_script_on_both_stores(demo, young):
    runs = {
        (name, label): subprocess.Popen(
            [sys.executable, str(notebook_path(name)), "--db", str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in NOTEBOOKS
        for label, db in (("demo", demo.store), ("young", young))
    }
    failed = {}
    for key, proc in runs.items():
        _out, err = proc.communicate(timeout=300)
        if proc.returncode != 0 or "Traceback" in err:
            failed[key] = err[-2000:]
    assert not failed, failed


def test_dashboard_on_the_demo(demo):
    _, d = _run("dashboard", db_path=demo.store, workbench_path=demo.workbench, bench_dir=None)
    view = d["view"]
    assert view.sessions.height == d["data"].sessions.height > 0
    assert view.status.mode == "active" and view.resets.height >= 1
    assert d["chosen_session"]["n"] == view.sessions["n"].max()  # the latest, by default
    assert d["detail"].baseline_top.height == 10
    assert {"comparison", "fts_overlap"} <= set(d["events"]["event"])
    assert d["timeline"].value.height == 0  # nothing picked yet


def test_dashboard_on_a_young_store(young):
    _, d = _run("dashboard", db_path=young, workbench_path=None, bench_dir=None)
    assert d["view"].status.mode == "collecting"
    # the loop put the shipped base in place before its first session, and the page says so
    outputs, _ = _run(
        "dashboard", db_path=young, workbench_path=default_workbench(young), bench_dir=None
    )
    shown = " ".join(getattr(o, "text", "") for o in outputs)
    served = "<strong>Served at session start</strong> · The shipped base serves: no session has"
    assert served in shown
    assert "timeline" not in d and "detail" not in d  # cold start shows its own panels


def test_calibration_on_the_demo(demo):
    _, d = _run("calibration", db_path=demo.store, workbench_path=demo.workbench, labeler="t")
    assert d["sample"].height > 0 and d["items"].height > 0
    cursor = d["cursor"]  # on the first memory, nothing given yet, nothing saved
    assert cursor.memory_ids == tuple(d["items"]["memory_id"]) and cursor.position == 0
    assert cursor.given is None and d["save_status"] is None
    assert d["labels"].height == read_labels(demo.workbench).height > 0
    assert d["mae"]["labels"].sum() == d["labels"].height


def test_calibration_on_a_young_store(young):
    # the judge is checked from the first session on, predictor or not
    _, d = _run("calibration", db_path=young, workbench_path=None, labeler="t")
    assert d["sample"].height <= 5 and (d["sample"]["confidence"] >= 0.8).all()
    assert d["labels"].height == 0 and d["mae"].height == 0
    assert ("session_picker" in d) == (d["sample"].height > 0)


def test_drift_on_the_demo(demo):
    _, d = _run("drift", db_path=demo.store)
    assert d["overall"]["last_n"].max() == d["sessions"]["n"].max()
    assert d["resets"].height >= 1
    assert d["drift_table"].height == 17
    assert d["success"]["counted"].sum() == d["sessions"]["counted"].sum()


def test_drift_on_a_young_store(young):
    _, d = _run("drift", db_path=young)
    assert d["resets"].height == 0 and d["overall"].height == 1
    assert d["features"].samples["session_key"].n_unique() <= 5


def test_bench_on_the_demo(demo):
    _, d = _run("bench", workbench_path=demo.workbench, bench_dir=demo.bench_dir)
    table = d["side_by_side"]
    runs = [c for c in table.columns if c.startswith("demo: ")]
    assert len(runs) == 4
    row = table.filter((pl.col("name") == "predictor") & (pl.col("metric") == "ndcg@10"))
    assert row.height == 1 and row.select(runs).null_count().sum_horizontal()[0] == 0


def test_bench_without_results(tmp_path: Path):
    _, d = _run("bench", workbench_path=tmp_path / "none.duckdb", bench_dir=None)
    assert d["results"].height == 0 and "side_by_side" not in d


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebooks_hold_no_sqlite3(name):
    text = notebook_path(name).read_text()
    assert "sqlite3" not in text
