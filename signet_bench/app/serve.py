"""`python -m signet_bench.app.serve run NOTEBOOK [marimo options] -- [notebook args]`: marimo's
own `marimo run`, in a process that has already imported what the served notebooks import.

`marimo run` serves every browser session as a kernel thread of this one process, and a
session starts its kernel only once the page has loaded in the browser; the notebooks' setup
cells then import Altair, Polars, DuckDB and the analysis modules (about a second on two busy
cores) before the first cell can draw anything. Imported here, before the server listens, they
are in `sys.modules` for every session, the first visitor's included. So are the costs marimo
and Altair pay on first use and keep for the process (`warm`): the first `mo.md` imports and
builds the Markdown renderer with its extensions, the first chart and table compile regexes and
schema checks, and DuckDB checks the SQLite extension's signature on its first load; paid
here, they are no longer part of the first visitor's first chart.

Started by `signet-bench app` (`launch.run_app`, which names itself in `PARENT_ENV`), the server
asks Linux for a SIGTERM when that command dies, however it dies (`follow_parent`): a killed
command never leaves a server holding its port.

marimo writes what it keeps of a notebook (its session cache, `mo.cache` results, exports) to a
`__marimo__` folder beside the notebook file, unless `sys.pycache_prefix` is set: then under
that prefix (`marimo._utils.paths.notebook_output_dir`). The server sets it to a cache folder
(`keep_marimo_files_out`) once its imports are done, so serving writes nothing into the
source tree and the modules imported until then keep their usual bytecode files.
"""

from __future__ import annotations

import ast
import ctypes
import importlib
import os
import runpy
import signal
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = [
    "ALSO_IMPORTED",
    "follow_parent",
    "keep_marimo_files_out",
    "main",
    "marimo_files_dir",
    "preload",
    "setup_imports",
    "warm",
]

# Imported on first use by what the setup cells import: DuckDB's `.pl()` (pyarrow) and
# `launch.notebook_args` (the demo's paths).
ALSO_IMPORTED = ("pyarrow", "signet_bench.app.demo")


def _is_setup(node: ast.stmt) -> bool:
    """Whether `node` is a notebook's `with app.setup:` block."""
    if not isinstance(node, ast.With):
        return False
    return any(ast.unparse(item.context_expr).startswith("app.setup") for item in node.items)


def setup_imports(source: str) -> list[str]:
    """What a notebook's `with app.setup:` block imports, in order, as dotted names: `import
    a.b` gives `a.b`, `from a.b import c` gives `a.b.c` (a submodule, or a name in `a.b`);
    relative imports are skipped."""
    names: list[str] = []
    for block in filter(_is_setup, ast.parse(source).body):
        for node in ast.walk(block):
            if isinstance(node, ast.Import):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names += [f"{node.module}.{alias.name}" for alias in node.names]
    return list(dict.fromkeys(names))


def _load(name: str) -> bool:
    """Import the module `name`, or the module holding it when it names an object there;
    whether that worked (a notebook that cannot import reports it itself, when it runs)."""
    try:
        importlib.import_module(name)
        return True
    except ImportError:
        parent, _, attr = name.rpartition(".")
        try:
            return bool(parent) and hasattr(importlib.import_module(parent), attr)
        except ImportError:
            return False


def _notebooks(target: Path) -> list[Path]:
    """The notebook files `marimo run` serves for `target` (a file, or a folder's `*.py`)."""
    return sorted(target.glob("*.py")) if target.is_dir() else [target]


def preload(targets: Iterable[Path]) -> list[str]:
    """Import what the notebooks at `targets` import in their setup, and ALSO_IMPORTED; the
    names imported."""
    names = [m for t in targets for nb in _notebooks(t) for m in setup_imports(nb.read_text())]
    return [name for name in dict.fromkeys([*names, *ALSO_IMPORTED]) if _load(name)]


def warm() -> str:
    """Render, outside any session, what a notebook's first cells render (Markdown, an Altair
    chart of a Polars frame, a table): marimo's Markdown renderer, Altair's compiled regexes and
    schema checks and the frame conversions are built once per process, on first use, so every
    later session finds them ready. Returns the HTML rendered."""
    # here: the server process starts before these load (start-up time)
    import datetime

    import altair as alt
    import marimo as mo
    import polars as pl

    frame = pl.DataFrame({"x": [1.0], "y": ["a"], "day": [datetime.date(2024, 1, 1)]})
    chart = (
        alt.Chart(frame)
        .mark_bar()
        .encode(
            x=alt.X("x:Q", title="x"),
            y=alt.Y("y:N", title=None),
            color=alt.Color("y:N", legend=None),
            tooltip=["y:N", alt.Tooltip("x:Q", format=".2f"), alt.Tooltip("day:T")],
        )
    )
    page = mo.vstack(
        [
            mo.md("**warm** `up`"),
            mo.ui.altair_chart(chart, chart_selection=False, legend_selection=False),
            mo.ui.table(frame, selection=None),
        ]
    )
    _bind_parameters()
    return mo.as_html(page).text


def _bind_parameters() -> None:
    """A DuckDB query with bound parameters, on a connection that loads the SQLite extension:
    DuckDB imports pandas on the first bound query in a process (a second on two busy cores),
    and checks the extension file's signature on its first load (`store.duck.connect_duckdb`:
    0.3 s), both of which the dashboard's first chart would pay."""
    # here: the server process starts before DuckDB loads (start-up time)
    from signet_bench.store.duck import connect_duckdb

    con = connect_duckdb()
    try:
        con.execute("SELECT $x", {"x": 1.0}).fetchall()
    finally:
        con.close()


_PR_SET_PDEATHSIG = 1  # prctl(2)


def follow_parent() -> bool:
    """When `launch.PARENT_ENV` names this process's parent: have Linux send it a SIGTERM
    when the parent exits (prctl PR_SET_PDEATHSIG), and exit now if the parent is already
    gone. Whether the signal was set up (False elsewhere than Linux, or when not asked)."""
    # here: the server process starts without launch's imports (start-up time)
    from signet_bench.app.launch import PARENT_ENV

    parent = os.environ.pop(PARENT_ENV, None)
    if parent is None or not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0) != 0:
        return False
    if os.getppid() != int(parent):  # it died before the call: no signal will come
        sys.exit(0)
    return True


def marimo_files_dir() -> Path:
    """Where the served notebooks' marimo files go: `$XDG_CACHE_HOME/signet-bench/app`
    (default `~/.cache/signet-bench/app`), mirroring the notebooks' absolute path."""
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "signet-bench" / "app"


def keep_marimo_files_out() -> str:
    """Set `sys.pycache_prefix` (unless set already) so marimo's `__marimo__` folders go
    under `marimo_files_dir()` instead of beside the notebooks; the prefix in force."""
    if sys.pycache_prefix is None:
        sys.pycache_prefix = str(marimo_files_dir())
    return sys.pycache_prefix


def main(argv: Sequence[str] | None = None) -> None:
    """Follow the parent command (`follow_parent`), preload the notebook `marimo run` is asked
    to serve and warm marimo (`warm`), keep marimo's files out of the source tree
    (`keep_marimo_files_out`), then run marimo's command line."""
    follow_parent()
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["run"] and len(args) > 1 and Path(args[1]).exists():
        preload([Path(args[1])])
        warm()
    keep_marimo_files_out()
    sys.argv = ["marimo", *args]
    runpy.run_module("marimo", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
