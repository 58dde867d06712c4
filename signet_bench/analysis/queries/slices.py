"""The comparisons' success by project and by focal entity, as text for the command line
(`simulate`, `demo`): the dashboard's "Success by project and entity" slices
(`sessions.project_slices`, `sessions.entity_slices` over `entities.focal_entities`), read
through DuckDB like every notebook, with the comparisons of either release line
(`derived.line_sessions`). The per-entity part is printed only when the store names focal
entities.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from signet_bench.analysis.queries.derived import line_sessions
from signet_bench.analysis.queries.entities import focal_entities
from signet_bench.analysis.queries.sessions import entity_slices, project_slices
from signet_bench.analysis.queries.source import open_store
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig

__all__ = ["SLICE_ROWS", "StoreSlices", "slices_text", "store_slices"]

SLICE_ROWS = 10
"""The most rows a slice prints (the rest are counted)."""


@dataclass(frozen=True, slots=True)
class StoreSlices:
    """A store's `projects` and `entities` slices (`sessions._slices`' columns; `entities`
    empty when no session names a focal entity) and `focal_note`, where the entities come
    from (`entities.FocalEntities.note`)."""

    projects: pl.DataFrame
    entities: pl.DataFrame
    focal_note: str


def store_slices(db: str | Path, cfg: PredictorConfig = DEFAULT_CONFIG) -> StoreSlices:
    """The slices of the store `db`, read through DuckDB (no stdlib connection to it may be
    open in this process meanwhile)."""
    con = open_store(db)
    try:
        sessions = line_sessions(con, db, cfg)
        focal = focal_entities(con)
    finally:
        con.close()
    return StoreSlices(project_slices(sessions), entity_slices(sessions, focal.pairs), focal.note)


def _table(frame: pl.DataFrame, by: str, limit: int) -> list[str]:
    """One aligned line per slice (the first `limit`), and how many were left out."""
    width = max([len(by), *(len(str(v)) for v in frame[by].head(limit))])
    lines = [f"  {by:<{width}}  sessions  counted  wins  win rate  mean margin"]
    for r in frame.head(limit).iter_rows(named=True):
        rate = "-" if r["win_rate"] is None else f"{r['win_rate']:.0%}"
        margin = "-" if r["mean_margin"] is None else f"{r['mean_margin']:+.3f}"
        lines.append(
            f"  {r[by]!s:<{width}}  {r['sessions']:>8}  {r['counted']:>7}  {r['wins']:>4}"
            f"  {rate:>8}  {margin:>11}"
        )
    if frame.height > limit:
        lines.append(f"  ... and {frame.height - limit} more")
    return lines


def slices_text(slices: StoreSlices, limit: int = SLICE_ROWS) -> str:
    """The slices as the command line prints them: per project, then, when the store names
    focal entities, per focal entity (a session counts for each of its entities). Win rate:
    wins over the sessions that counted for the success rate; mean margin: predictor minus
    baseline NDCG@10 over those sessions."""
    lines = ["success by project (win rate and mean NDCG@10 margin over the counted sessions):"]
    lines += _table(slices.projects, "project", limit)
    if slices.entities.height:
        lines.append("success by focal entity (a session counts for each of its entities):")
        lines += _table(slices.entities, "entity", limit)
        lines.append(f"  {slices.focal_note}")
    return "\n".join(lines)
