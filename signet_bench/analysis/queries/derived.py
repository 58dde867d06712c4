"""What the workbench derives from a store with the library's own reader, for the dashboard:
the comparison rows (`daemon.comparison_log.store_comparisons`: a 0.58 store's
`predictor_comparisons`, recomputed with the success-rate EMA on a current store, which keeps
none) and the label sources (`learn.samples.label_sources`, with the session-start wrapper's
record beside the dashboard's workbench), and the served model scored offline on the judged
sessions (`served.served_frame`, the verdict's evidence).

The library reads a store with the stdlib `sqlite3`, and the dashboard holds it open through
DuckDB; one process must never use both libraries on a file, so `derived_frames` computes them
in a child process (`python -m signet_bench.analysis.queries.derived DB OUT_DIR`) and reads
back its Parquet files. The child computes only the frames asked for: a 0.58 store's sessions
need none (it keeps its comparisons), and the label sources, which read every session's signals
(seconds on a year of heavy use), are asked for on their own. The dashboard counts them with
DuckDB aggregates instead (`label_counts`, held to this frame by its tests).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import duckdb
import polars as pl

from signet_bench.analysis.queries.served import SERVED_SCHEMA, served_frame, served_model_path
from signet_bench.analysis.queries.sessions import session_frame
from signet_bench.analysis.queries.source import child_frames, child_main
from signet_bench.analysis.wording import plural
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.store.duck import attached_tables
from signet_bench.store.read import open_readonly
from signet_bench.store.schema import ReleaseLine, release_line_of
from signet_scorer.workbench import HOOK_LOG_FILE, default_workbench

__all__ = [
    "DERIVED",
    "DerivedFrames",
    "derived_frames",
    "label_sources_text",
    "line_sessions",
    "main",
    "served_sessions",
    "store_line",
]

_MODULE = "signet_bench.analysis.queries.derived"
DERIVED = ("comparisons", "label_sources", "served")
_WHAT = {
    "comparisons": "deriving comparisons",
    "label_sources": "counting label sources",
    "served": "scoring the served model",
}


@dataclass(frozen=True, slots=True)
class DerivedFrames:
    """`comparisons`: the store's comparison rows in `store.read.read_comparisons`' columns;
    `label_sources`: one row per label source (`learn.samples.label_sources`); `served`: the
    served model against the free rankers per judged session (`served.served_frame`); None
    when not asked for."""

    comparisons: pl.DataFrame | None
    label_sources: pl.DataFrame | None
    served: pl.DataFrame | None = None


def derived_frames(
    db: str | Path,
    *,
    workbench: str | Path | None = None,
    frames: Sequence[str] = DERIVED,
    timeout_s: float = 600,
) -> DerivedFrames:
    """The store's `DerivedFrames` named in `frames` (of DERIVED), computed in one child
    process (see the module docstring); the label sources read the hook's record beside
    `workbench` (default: the store's)."""
    unknown = sorted(set(frames) - set(DERIVED))
    if unknown or not frames:
        raise ValueError(f"frames: some of {', '.join(DERIVED)}, got {list(frames)}")
    args = ["--frames", ",".join(frames)]
    args += [] if workbench is None else ["--workbench", str(workbench)]
    what = " and ".join(_WHAT[f] for f in frames)
    got = child_frames(_MODULE, db, frames, args, what=what, timeout_s=timeout_s)
    return DerivedFrames(got.get("comparisons"), got.get("label_sources"), got.get("served"))


def store_line(con: duckdb.DuckDBPyConnection) -> ReleaseLine:
    """The release line of the store `con` reads (by what it holds)."""
    return release_line_of(attached_tables(con).columns)


def line_sessions(
    con: duckdb.DuckDBPyConnection, db: str | Path, cfg: PredictorConfig = DEFAULT_CONFIG
) -> pl.DataFrame:
    """`sessions.session_frame` of the store `db` (read through `con`) with its comparisons
    whichever its line: its own on a 0.58 store, the ones the workbench recomputes (in a child
    process) on a current store."""
    return served_sessions(con, db, None, cfg)[0]


def served_sessions(
    con: duckdb.DuckDBPyConnection,
    db: str | Path,
    workbench: str | Path | None,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """`line_sessions`, and with a served model beside `workbench` its offline scores per
    judged session (`served.served_frame`; empty without), both from one child process."""
    current = store_line(con) == "current"
    served = workbench is not None and served_model_path(workbench) is not None
    frames = (("comparisons",) if current else ()) + (("served",) if served else ())
    got = derived_frames(db, workbench=workbench, frames=frames) if frames else None
    sessions = session_frame(con, cfg, got.comparisons if current and got else None)
    offline = got.served if got is not None and got.served is not None else None
    return sessions, offline if offline is not None else pl.DataFrame(schema=SERVED_SCHEMA)


def _compute(db: Path, out: Path, args: argparse.Namespace) -> None:
    """The child's work: the frames asked for, as Parquet files in `out`."""
    # here: the dashboard's first render does without the trainer's modules (start-up time)
    from signet_bench.learn.samples import label_sources, read_label_signals
    from signet_bench.replay.comparison_log import store_comparisons

    frames = set(args.frames.split(","))
    con = open_readonly(db)
    try:
        if "comparisons" in frames:
            store_comparisons(con).write_parquet(out / "comparisons.parquet")
        if "label_sources" in frames:
            signals = read_label_signals(con, workbench=args.workbench)
            label_sources(signals).write_parquet(out / "label_sources.parquet")
    finally:
        con.close()
    if "served" in frames:
        served_frame(db, args.workbench or default_workbench(db)).write_parquet(
            out / "served.parquet"
        )


def label_sources_text(sources: pl.DataFrame) -> str:
    """One statement of what the labels learn from: each source the store holds with the
    sessions it covers, the sources it keeps empty, and the ones this store does not have at
    all (a 0.58 store has no path feedback or recall events). The session-start wrapper's
    record is no part of the store: it is named only where the workbench has one."""
    held = sources.filter(pl.col("present") & (pl.col("sessions") > 0))
    empty = sources.filter(pl.col("present") & (pl.col("sessions") == 0))
    absent = sources.filter(~pl.col("present") & (pl.col("where") != HOOK_LOG_FILE))
    parts = [
        f"{r['source']} in {plural(r['sessions'], 'session')} (`{r['where']}`)"
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
    parser.add_argument("--frames", default=",".join(DERIVED), help="comma-separated frames")


def main(argv: list[str] | None = None) -> int:
    """The child process: `python -m signet_bench.analysis.queries.derived DB OUT_DIR`."""
    return child_main(_compute, argv, __doc__.splitlines()[0], _options)


if __name__ == "__main__":
    sys.exit(main())
