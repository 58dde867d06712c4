"""What the workbench derives from a store with the library's own reader, for the dashboard:
the comparison rows (`daemon.comparison_log.store_comparisons`: a 0.58 store's
`predictor_comparisons`, recomputed with the success-rate EMA on a current store, which keeps
none) and the label sources (`learn.samples.label_sources`, with the session-start wrapper's
record beside the dashboard's workbench).

The library reads a store with the stdlib `sqlite3`, and the dashboard holds it open through
DuckDB; one process must never use both libraries on a file, so `derived_frames` computes them
in a child process (`python -m signet_bench.analysis.queries.derived DB OUT_DIR`) and reads
back its Parquet files.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from serving.workbench import HOOK_LOG_FILE
from signet_bench.analysis.queries.sessions import session_frame
from signet_bench.analysis.queries.source import child_frames, child_main
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.store.duck import attached_tables
from signet_bench.store.schema import ReleaseLine, release_line_of

__all__ = [
    "DerivedFrames",
    "derived_frames",
    "label_sources_text",
    "line_sessions",
    "main",
    "store_line",
]

_MODULE = "signet_bench.analysis.queries.derived"
_NAMES = ("comparisons", "label_sources")


@dataclass(frozen=True, slots=True)
class DerivedFrames:
    """`comparisons`: the store's comparison rows in `store.read.read_comparisons`' columns;
    `label_sources`: one row per label source (`learn.samples.label_sources`)."""

    comparisons: pl.DataFrame
    label_sources: pl.DataFrame


def derived_frames(
    db: str | Path, *, workbench: str | Path | None = None, timeout_s: float = 600
) -> DerivedFrames:
    """The store's `DerivedFrames`, computed in a child process (see the module docstring);
    the label sources read the hook's record beside `workbench` (default: the store's)."""
    args = () if workbench is None else ("--workbench", str(workbench))
    frames = child_frames(
        _MODULE, db, _NAMES, args, what="deriving comparisons and label sources",
        timeout_s=timeout_s,
    )  # fmt: skip
    return DerivedFrames(frames["comparisons"], frames["label_sources"])


def store_line(con: duckdb.DuckDBPyConnection) -> ReleaseLine:
    """The release line of the store `con` reads (by what it holds)."""
    return release_line_of(attached_tables(con).columns)


def line_sessions(
    con: duckdb.DuckDBPyConnection, derived: DerivedFrames, cfg: PredictorConfig = DEFAULT_CONFIG
) -> pl.DataFrame:
    """`sessions.session_frame` with the store's comparisons whichever its line: its own on a
    0.58 store, the ones the workbench recomputed (`derived`) on a current store."""
    current = store_line(con) == "current"
    return session_frame(con, cfg, derived.comparisons if current else None)


def _compute(db: Path, out: Path, args: argparse.Namespace) -> None:
    """The child's work: both frames as Parquet files in `out`."""
    from signet_bench.daemon.comparison_log import store_comparisons
    from signet_bench.learn.samples import label_sources, read_label_signals
    from signet_bench.store.read import open_readonly

    con = open_readonly(db)
    try:
        store_comparisons(con).write_parquet(out / "comparisons.parquet")
        signals = read_label_signals(con, workbench=args.workbench)
        label_sources(signals).write_parquet(out / "label_sources.parquet")
    finally:
        con.close()


def _sessions(n: int) -> str:
    return f"{n} session{'' if n == 1 else 's'}"


def label_sources_text(sources: pl.DataFrame) -> str:
    """One statement of what the labels learn from: each source the store holds with the
    sessions it covers, the sources it keeps empty, and the ones this store does not have at
    all (a 0.58 store has no path feedback or recall events). The session-start wrapper's
    record is no part of the store: it is named only where the workbench has one."""
    held = sources.filter(pl.col("present") & (pl.col("sessions") > 0))
    empty = sources.filter(pl.col("present") & (pl.col("sessions") == 0))
    absent = sources.filter(~pl.col("present") & (pl.col("where") != HOOK_LOG_FILE))
    parts = [
        f"{r['source']} in {_sessions(r['sessions'])} (`{r['where']}`)"
        for r in held.iter_rows(named=True)
    ]
    text = f"Labels learn from {', '.join(parts) if parts else 'no source yet'}."
    if empty.height:
        names = ", ".join(f"{r['source']} (`{r['where']}`)" for r in empty.iter_rows(named=True))
        text += f" Recorded in none yet: {names}."
    if absent.height:
        text += f" Not kept by this store: {', '.join(absent['source'])}."
    return text


def _options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workbench", default=None, help="the workbench beside the hook's record")


def main(argv: list[str] | None = None) -> int:
    """The child process: `python -m signet_bench.analysis.queries.derived DB OUT_DIR`."""
    return child_main(_compute, argv, __doc__.splitlines()[0], _options)


if __name__ == "__main__":
    sys.exit(main())
