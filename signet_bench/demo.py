"""`signet-bench demo`: the main job on the embedded demo store — a light synthetic user,
its session loop with the learned scorer, and how the predictor did, block by block."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from signet_bench.loop import SimOptions, SimReport, simulate
from signet_bench.store.read import read_comparisons
from signet_bench.synth.build import build_persona_store

__all__ = ["DEMO_PERSONA", "DEMO_SEED", "DemoResult", "comparison_blocks", "demo_store", "run_demo"]

DEMO_PERSONA = "light"
DEMO_SEED = 7


@dataclass(frozen=True, slots=True)
class DemoResult:
    """The demo store, what its run did, and the judge-scored comparisons per block."""

    store: Path
    report: SimReport
    blocks: pl.DataFrame


def demo_store(out_dir: str | Path) -> Path:
    """The demo store in `out_dir` (built once, deterministic)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "demo.db"
    if not path.exists():
        build_persona_store(DEMO_PERSONA, path, seed=DEMO_SEED)
    return path


def comparison_blocks(comparisons: pl.DataFrame, size: int = 20) -> pl.DataFrame:
    """Mean baseline and predictor NDCG@10, win rate and alpha per block of `size` sessions."""
    if comparisons.height == 0:
        return pl.DataFrame()
    return (
        comparisons.with_row_index("i")
        .with_columns((pl.col("i") // size).alias("block"))
        .group_by("block", maintain_order=True)
        .agg(
            pl.len().alias("sessions"),
            pl.col("baseline_ndcg").mean().round(3).alias("baseline_ndcg"),
            pl.col("predictor_ndcg").mean().round(3).alias("predictor_ndcg"),
            pl.col("predictor_won").mean().round(2).alias("win_rate"),
            pl.col("alpha").mean().round(2).alias("alpha"),
        )
    )


def run_demo(out_dir: str | Path, sessions: int = 120, *, progress: bool = False) -> DemoResult:
    """Build (or reuse) the demo store and run (or resume) its loop with the learned scorer."""
    path = demo_store(out_dir)
    report = simulate(path, sessions, SimOptions(scorer="model", seed=DEMO_SEED, progress=progress))
    return DemoResult(path, report, comparison_blocks(read_comparisons(path)))
