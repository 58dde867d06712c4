"""`signet-bench demo`: the main job on the embedded demo store — a light synthetic user,
its session loop with the learned scorer, and a summary of how the predictor did."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["DEMO_PERSONA", "DEMO_SEED", "demo_store", "run_demo"]

DEMO_PERSONA = "light"
DEMO_SEED = 7


def demo_store(out_dir: str | Path) -> Path:
    """The demo store in `out_dir` (built once, deterministic)."""
    from signet_bench.synth.build import build_persona_store

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "demo.db"
    if not path.exists():
        build_persona_store(DEMO_PERSONA, path, seed=DEMO_SEED)
    return path


def run_demo(args: argparse.Namespace) -> int:
    """Build (or reuse) the demo store, run its loop and print what happened."""
    import polars as pl

    from signet_bench.loop import SimOptions, simulate
    from signet_bench.store.read import read_comparisons

    path = demo_store(args.out or "out")
    report = simulate(
        path,
        args.sessions,
        SimOptions(scorer="model", seed=DEMO_SEED, progress=sys.stderr.isatty()),
    )
    print(f"demo store: {path}")
    print(report.summary())
    comps = read_comparisons(path)
    if comps.height:
        by = (
            comps.with_row_index("i")
            .with_columns((pl.col("i") // 20).alias("block"))
            .group_by("block", maintain_order=True)
            .agg(
                pl.len().alias("sessions"),
                pl.col("baseline_ndcg").mean().round(3).alias("baseline_ndcg"),
                pl.col("predictor_ndcg").mean().round(3).alias("predictor_ndcg"),
                pl.col("predictor_won").mean().round(2).alias("win_rate"),
                pl.col("alpha").mean().round(2).alias("alpha"),
            )
        )
        print("judge-scored NDCG@10 per block of 20 sessions:")
        with pl.Config(tbl_rows=50):
            print(by)
    return 0
