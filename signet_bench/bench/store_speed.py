"""`signet-bench bench store`: store generation, memory loading and DuckDB analytics timings.

Rows (stable names):
  synth_heavy               wall  s   generate the heavy persona store (goal <= 20 s)
  load_memories_4000x768    p50/p95 ms  read_memories: 4,000 memories + 768-d embeddings
  scale_store_<n>           wall  s   write the analytics-scale store (setup, for reference)
  duckdb_aggregate_<n>      p50/p95 ms  per-session summary over <n> session_memories rows,
                                      then summarised over sessions (goal <= 1000 ms at 1.5m)
`<n>` is `1.5m`, or `150k` with --quick. Every store is of the release line `--schema` names
(0.58 by default, or current).
"""

from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path

import polars as pl

from signet_bench.analysis.report import Row, percentiles, timed_ms
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.store.duck import connect_duckdb, session_memory_summary
from signet_bench.store.read import read_memories, release_line
from signet_bench.store.scale import write_memories_scale, write_session_memories_scale
from signet_bench.world.synth.build import build_persona_store

__all__ = ["store_rows"]
_log = logging.getLogger(__name__)

LOAD_MEMORIES = 4000
FULL_ROWS, QUICK_ROWS = 1_500_000, 150_000


def _size_label(n: int) -> str:
    return f"{n / 1e6:g}m" if n >= 1_000_000 else f"{n // 1000}k"


def _synth_heavy(out: Path, seed: int, schema: str) -> tuple[Row, Path]:
    """Time generating the heavy persona's store."""
    t0 = time.perf_counter()
    build_persona_store("heavy", out, seed=seed, schema=schema)
    wall = time.perf_counter() - t0
    return Row("synth_heavy", "wall", wall, "s", n=1, goal="<= 20 s"), out


def _load_store(tmp: Path, heavy: Path, seed: int, schema: str) -> Path:
    """The heavy persona store if it holds 4,000 memories (soft-deleted included) with 768-d
    embeddings, else a generated one."""
    dim = DEFAULT_CONFIG.native_dim
    table = read_memories(heavy, include_deleted=True)
    if len(table) == LOAD_MEMORIES and table.dim == dim:
        return heavy
    _log.info(
        f"note: heavy persona has {len(table)} memories x {table.dim}-d; "
        f"timing load on a generated {LOAD_MEMORIES} x {dim} store instead"
    )
    path = tmp / "load.db"
    write_memories_scale(path, LOAD_MEMORIES, dim=dim, seed=seed, schema=schema)
    return path


def store_rows(*, quick: bool = False, seed: int = 0, schema: str = "0.58") -> list[Row]:
    """Run the three measurements (see the module docstring) on stores of release line
    `schema` and return their rows."""
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="signet-bench-store-") as tmp_name:
        tmp = Path(tmp_name)

        synth_row, heavy = _synth_heavy(tmp / "heavy.db", seed, schema)
        rows.append(synth_row)

        load_path = _load_store(tmp, heavy, seed, schema)
        repeats = 10 if quick else 30
        ms = timed_ms(
            lambda: read_memories(load_path, include_deleted=True), warmup=2, repeats=repeats
        )
        name = f"load_memories_{LOAD_MEMORIES}x{DEFAULT_CONFIG.native_dim}"
        for metric, value in percentiles(ms, (50, 95)).items():
            rows.append(Row(name, metric, value, "ms", n=repeats, goal="<= 300 ms"))

        n_rows = QUICK_ROWS if quick else FULL_ROWS
        label = _size_label(n_rows)
        scale_path = tmp / "scale.db"
        t0 = time.perf_counter()
        write_session_memories_scale(
            scale_path, n_rows, n_memories=LOAD_MEMORIES, seed=seed, schema=schema
        )
        rows.append(Row(f"scale_store_{label}", "wall", time.perf_counter() - t0, "s", n=1))

        lines = sorted({release_line(p) for p in (heavy, load_path, scale_path)})
        _log.info(f"the stores' release line (by their tables): {', '.join(lines)}")
        con = connect_duckdb(scale_path)
        try:

            def aggregate() -> pl.DataFrame:
                per_session = session_memory_summary(con)
                return per_session.select(
                    pl.len().alias("sessions"),
                    pl.col("candidates").mean(),
                    pl.col("injected").mean(),
                    pl.col("mean_relevance").mean(),
                    pl.col("fts_hits").sum(),
                )

            repeats = 10
            ms = timed_ms(aggregate, warmup=2, repeats=repeats)
        finally:
            con.close()
        goal = "<= 1000 ms" if n_rows == FULL_ROWS else None
        for metric, value in percentiles(ms, (50, 95)).items():
            rows.append(Row(f"duckdb_aggregate_{label}", metric, value, "ms", n=repeats, goal=goal))
    return rows
