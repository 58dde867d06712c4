"""The app's launcher: what a notebook's setup imports is found and imported before marimo's
server starts, and the served command goes through it."""

from __future__ import annotations

import subprocess
import sys

from signet_bench.app.launch import NOTEBOOKS, notebook_path, run_command
from signet_bench.app.serve import ALSO_IMPORTED, preload, setup_imports

NOTEBOOK = """import marimo

app = marimo.App()

with app.setup:
    import json
    import os.path as osp
    from collections import abc, Counter
    from . import nearby
    from signet_bench import no_such_module

    def helper():
        import textwrap


@app.cell
def _():
    import csv
    return
"""


def test_setup_imports_are_the_setup_blocks_only():
    """Names of the setup block (functions in it included), in order, relative imports left
    out; a cell's own imports are not the setup's."""
    assert setup_imports(NOTEBOOK) == [
        "json",
        "os.path",
        "collections.abc",
        "collections.Counter",
        "signet_bench.no_such_module",
        "textwrap",
    ]
    assert setup_imports("import marimo\napp = marimo.App()\n") == []


def test_what_cannot_be_imported_is_left_to_the_notebook(tmp_path):
    """A missing module does not stop the server: the notebook reports it when it runs."""
    notebook = tmp_path / "nb.py"
    notebook.write_text(NOTEBOOK)
    names = preload([notebook])
    assert "signet_bench.no_such_module" not in names
    assert names[:4] == ["json", "os.path", "collections.abc", "collections.Counter"]


def test_preloading_every_notebook_imports_its_setup():
    """The gallery's folder: each notebook's setup modules, imported in a fresh interpreter."""
    code = (
        "import sys; from signet_bench.app.launch import NOTEBOOK_DIR;"
        " from signet_bench.app.serve import preload; names = preload([NOTEBOOK_DIR]);"
        " print(','.join(names)); print(','.join(sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    imported, modules = (set(line.split(",")) for line in done.stdout.splitlines())
    for name in NOTEBOOKS:
        assert set(setup_imports(notebook_path(name).read_text())) <= imported, name
    assert set(ALSO_IMPORTED) <= modules
    assert {"altair", "polars", "signet_bench.analysis.queries.dashboard"} <= modules
    assert "signet_bench.config.DEFAULT_CONFIG" in imported  # a name, held by its module


def test_warming_builds_what_every_session_reuses():
    """In a fresh interpreter: before `warm`, marimo's Markdown extensions are not imported;
    after it they are, and what it rendered holds a chart and a table."""
    code = (
        "import sys; ext = 'pymdownx.superfences'; before = ext in sys.modules;"
        " from signet_bench.app.serve import warm; html = warm();"
        " print(before, ext in sys.modules, '<marimo-vega' in html, '<marimo-table' in html)"
    )
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "True", "True", "True"]


def test_the_app_is_served_through_the_launcher(tmp_path):
    db = tmp_path / "memories.db"
    db.touch()
    cmd = run_command("dashboard", db)
    assert cmd[1:5] == ["-m", "signet_bench.app.serve", "run", str(notebook_path("dashboard"))]
