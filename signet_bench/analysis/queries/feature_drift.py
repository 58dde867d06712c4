"""Feature distributions for the drift explorer: the model's input features of every trainable
session (as the trainer assembles them) and Signet 0.58's train/serve skew report.

Both read the store through the trainer's own functions, which use the stdlib `sqlite3`; the
notebooks hold the store open through DuckDB, and one process must never use both libraries
on a file (docs/specification.md §2.3). So `feature_frames` computes them in a child process
(`python -m signet_bench.analysis.queries.feature_drift DB OUT_DIR`) and reads back its Parquet files.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from signet_bench.analysis.queries.source import child_frames, child_main
from signet_bench.analysis.queries.stattests import run_test
from signet_bench.errors import UserError
from signet_scorer.contract import FEATURE_NAMES
from signet_scorer.timestamps import local_tz

__all__ = ["FeatureFrames", "feature_drift", "feature_frames", "feature_histogram", "main"]


@dataclass(frozen=True, slots=True)
class FeatureFrames:
    """`samples`: one row per trainable candidate (session_key, start, project, label and the
    17 features by name), oldest session first; `skew`: `skew.skew_report`'s frame."""

    samples: pl.DataFrame
    skew: pl.DataFrame


def _store_tz(db: Path) -> str:
    """The synthetic persona's time zone, else the machine's."""
    # here: the dashboard's first render does without the synthetic world's (start-up time)
    from signet_bench.world.synth.persona import Persona
    from signet_bench.world.synth.truth import read_synth_meta

    try:
        return Persona.from_json(read_synth_meta(db)["persona"]).tz
    except (UserError, KeyError):
        return local_tz()


def _compute(db: Path, out: Path, tz: str | None) -> None:
    """The child's work: the samples' features and the skew report, as Parquet."""
    # here: the dashboard's first render does without the trainer's modules (start-up time)
    from signet_bench.analysis.skew import skew_report
    from signet_bench.learn.samples import load_samples

    zone = tz or _store_tz(db)
    samples, _ = load_samples(db, tz=zone)
    rows = [
        {
            "session_key": s.session_key,
            "start": s.start,
            "project": s.project,
            "label": float(s.labels[i]),
            **{name: float(s.features[i, j]) for j, name in enumerate(FEATURE_NAMES)},
        }
        for s in samples
        for i in range(len(s))
    ]
    schema = {"session_key": pl.String, "start": pl.Datetime("us", "UTC"), "project": pl.String}
    schema |= {"label": pl.Float64} | {name: pl.Float64 for name in FEATURE_NAMES}
    frame = pl.DataFrame(rows, schema=schema) if rows else pl.DataFrame(schema=schema)
    frame.write_parquet(out / "samples.parquet")
    skew_report(db, tz=zone).write_parquet(out / "skew.parquet")


def feature_frames(
    db: str | Path, *, tz: str | None = None, timeout_s: float = 600
) -> FeatureFrames:
    """Compute the feature frames of `db` in a child process (see the module docstring)."""
    frames = child_frames(
        "signet_bench.analysis.queries.feature_drift",
        db,
        ("samples", "skew"),
        ["--tz", tz] if tz else [],
        what="computing the feature distributions",
        timeout_s=timeout_s,
    )
    return FeatureFrames(frames["samples"], frames["skew"])


# Typed even where every value is missing (one session: no earlier window to compare with).
_DRIFT_SCHEMA = {
    "feature": pl.String,
    "test": pl.String,
    "statistic": pl.Float64,
    "threshold": pl.Float64,
    "drifted": pl.Boolean,
    "reference_mean": pl.Float64,
    "current_mean": pl.Float64,
    "reference_rows": pl.Int64,
    "current_rows": pl.Int64,
}


def feature_drift(
    samples: pl.DataFrame, current_sessions: int, test: str | None = None
) -> pl.DataFrame:
    """Per feature: the features of the last `current_sessions` sessions (serving now) against
    every earlier session's (what the model learned from), judged by the registry's default
    test (or `test`). Columns: feature, kind of test, statistic, threshold, drifted,
    reference_mean, current_mean, reference_rows, current_rows."""
    is_current = _windows(samples, current_sessions)
    ref, cur = samples.filter(~is_current), samples.filter(is_current)
    rows = []
    for name in FEATURE_NAMES:
        r, c = ref[name].to_numpy(), cur[name].to_numpy()
        res = run_test(r, c, test)
        rows.append(
            {
                "feature": name,
                "test": res.test,
                "statistic": res.statistic,
                "threshold": res.threshold,
                "drifted": res.drifted,
                "reference_mean": float(np.mean(r)) if len(r) else None,
                "current_mean": float(np.mean(c)) if len(c) else None,
                "reference_rows": len(r),
                "current_rows": len(c),
            }
        )
    return pl.DataFrame(rows, schema=_DRIFT_SCHEMA)


def _windows(samples: pl.DataFrame, current_sessions: int) -> pl.Expr:
    """True for the rows of the latest `current_sessions` sessions."""
    keys = samples.select("session_key", "start").unique().sort("start")["session_key"]
    return pl.col("session_key").is_in(keys.tail(current_sessions).to_list())


def feature_histogram(
    samples: pl.DataFrame, feature: str, current_sessions: int, bins: int = 30
) -> pl.DataFrame:
    """One feature's distribution in both windows on shared bins: window ("training
    (earlier)" / "serving (latest)"), bin_start, bin_end, share of the window's rows."""
    values = samples[feature].to_numpy()
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return pl.DataFrame(
            schema={
                "window": pl.String,
                "bin_start": pl.Float64,
                "bin_end": pl.Float64,
                "share": pl.Float64,
            }
        )
    edges = np.histogram_bin_edges(finite, bins=bins)
    current = samples.select(_windows(samples, current_sessions))[:, 0].to_numpy()
    rows = []
    for label, mask in (("training (earlier)", ~current), ("serving (latest)", current)):
        counts, _ = np.histogram(values[mask & np.isfinite(values)], bins=edges)
        shares = counts / max(1, counts.sum())
        rows += [
            (label, float(a), float(b), float(c))
            for a, b, c in zip(edges[:-1], edges[1:], shares, strict=True)
        ]
    schema = ["window", "bin_start", "bin_end", "share"]
    return pl.DataFrame(rows, schema=schema, orient="row")


def main(argv: list[str] | None = None) -> int:
    """The child process: `python -m signet_bench.analysis.queries.feature_drift DB OUT_DIR [--tz ZONE]`."""
    return child_main(
        lambda db, out, args: _compute(db, out, args.tz),
        argv,
        __doc__.splitlines()[0],
        lambda parser: parser.add_argument("--tz", default=None),
    )


if __name__ == "__main__":
    sys.exit(main())
