"""Focal entities per session, from what a store holds: the entity a comparison names (Signet
0.58's `predictor_comparisons.focal_entity_name`), the focal entities a session's checkpoints
name (`session_checkpoints.focal_entity_names`, a JSON list), and the entities its
graph-traversal candidates mention (`session_memories.source` 'ka_traversal' or
'ka_traversal_pinned', through `memory_entity_mentions` to `entities`). The traversal's
mentions are read only for the sessions whose comparison and checkpoint name none: a reached
memory mentions the focal entities and every other entity it names too, so where the store
records a session's focal entities, those are its own. When no session names one,
`FocalEntities.note` says what the store holds and what is missing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import duckdb
import polars as pl

from signet_bench.analysis.queries.candidate_pass import TRAVERSAL_IN
from signet_bench.analysis.queries.source import agent_condition
from signet_bench.analysis.wording import plural
from signet_bench.store.duck import attached_tables
from signet_scorer.workbench import DEFAULT_AGENT

__all__ = ["FocalEntities", "focal_entities"]

_SCHEMA = {"session_key": pl.String, "entity": pl.String, "via": pl.String}
# Each source (`via`) as the note names it: where the store names a session's focal entity.
_WHERE = {
    "comparison": "the comparison",
    "checkpoint": "the checkpoints",
    "graph traversal": "the graph traversal's candidates",
}


@dataclass(frozen=True, slots=True)
class FocalEntities:
    """`pairs`: one row per session and focal entity (session_key, entity, via: where the
    store names it); `note`: one sentence on where they come from, or on what is missing."""

    pairs: pl.DataFrame
    note: str


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _json_names(text: str | None) -> list[str]:
    """The names of a checkpoint's JSON list (nothing for text that is not one)."""
    try:
        names = json.loads(text) if text else []
    except ValueError:
        return []
    return [n for n in names if isinstance(n, str) and n] if isinstance(names, list) else []


def _from_comparisons(con: duckdb.DuckDBPyConnection, tables: dict) -> pl.DataFrame:
    if "focal_entity_name" not in tables.get("predictor_comparisons", ()):
        return pl.DataFrame(schema=_SCHEMA)
    return con.sql(
        "SELECT DISTINCT session_key::VARCHAR AS session_key, focal_entity_name::VARCHAR AS"
        " entity, 'comparison' AS via FROM store.predictor_comparisons"
        " WHERE focal_entity_name IS NOT NULL AND focal_entity_name <> ''"
    ).pl()


def _from_checkpoints(con: duckdb.DuckDBPyConnection, tables: dict, agent: str) -> pl.DataFrame:
    if "focal_entity_names" not in tables.get("session_checkpoints", ()):
        return pl.DataFrame(schema=_SCHEMA)
    cond = agent_condition(con, "session_checkpoints", agent)
    rows = con.execute(
        "SELECT session_key::VARCHAR, focal_entity_names::VARCHAR FROM store.session_checkpoints"
        f" WHERE focal_entity_names IS NOT NULL AND {cond}"
    ).fetchall()
    pairs = {(key, name) for key, text in rows for name in _json_names(text)}
    return pl.DataFrame(
        [(k, n, "checkpoint") for k, n in sorted(pairs)], schema=_SCHEMA, orient="row"
    )


def _from_traversal(con: duckdb.DuckDBPyConnection, tables: dict, agent: str) -> pl.DataFrame:
    if not {"session_memories", "memory_entity_mentions", "entities"} <= set(tables):
        return pl.DataFrame(schema=_SCHEMA)
    cond = agent_condition(con, "session_memories", agent, column="sm.agent_id")
    return con.sql(
        "SELECT DISTINCT sm.session_key::VARCHAR AS session_key, e.name::VARCHAR AS entity,"
        " 'graph traversal' AS via FROM store.session_memories sm"
        " JOIN store.memory_entity_mentions mem ON mem.memory_id = sm.memory_id"
        " JOIN store.entities e ON e.id = mem.entity_id"
        f" WHERE sm.source IN {TRAVERSAL_IN} AND e.name IS NOT NULL AND {cond}"
    ).pl()


def _missing_note(
    con: duckdb.DuckDBPyConnection, tables: dict, agent: str, traversal: int | None
) -> str:
    """Why no session names a focal entity: what the store holds, and what it lacks
    (`traversal`: the graph traversal's candidates, when counted already)."""
    held = []
    for table, what in (("entities", "entities"), ("memory_entity_mentions", "memory mentions")):
        if table in tables:
            held.append(f"{_count(con, f'SELECT COUNT(*) FROM store.{table}'):,} {what}")
        else:
            held.append(f"no {table} table")
    if traversal is None and "session_memories" in tables:
        cond = agent_condition(con, "session_memories", agent)
        traversal = _count(
            con,
            f"SELECT COUNT(*) FROM store.session_memories WHERE source IN {TRAVERSAL_IN} AND {cond}",
        )
    unnamed = "" if not traversal else ", none of which mentions an entity"
    return (
        f"No session names a focal entity. The store holds {' and '.join(held)}, but its "
        f"sessions recorded {traversal or 0:,} graph-traversal candidates (session_memories.source "
        f"'ka_traversal'){unnamed}, its checkpoints name no focal entity "
        "(session_checkpoints.focal_entity_names) and no comparison names one."
    )


def focal_entities(
    con: duckdb.DuckDBPyConnection, agent_id: str = DEFAULT_AGENT, traversal: int | None = None
) -> FocalEntities:
    """Every session's focal entities from what the store holds (see the module docstring),
    each pair once, named by the first source that names it (comparison, checkpoint), else,
    for a session neither names any for, by the entities its graph-traversal candidates
    mention; on a current store, `agent_id`'s sessions. `traversal`: `agent_id`'s
    graph-traversal candidates when counted already (`candidate_pass`), else counted here
    for the note, if there is one."""
    tables = dict(attached_tables(con).columns)
    recorded = pl.concat([_from_comparisons(con, tables), _from_checkpoints(con, tables, agent_id)])
    mentioned = _from_traversal(con, tables, agent_id).filter(
        ~pl.col("session_key").is_in(recorded["session_key"].implode())
    )
    found = pl.concat([recorded, mentioned])
    pairs = found.unique(["session_key", "entity"], keep="first", maintain_order=True)
    if pairs.height == 0:
        return FocalEntities(pairs, _missing_note(con, tables, agent_id, traversal))
    per_via = pairs.group_by("via", maintain_order=True).agg(pl.col("session_key").n_unique())
    parts = [f"{_WHERE[via]} in {plural(n, 'session')}" for via, n in per_via.iter_rows()]
    sources = ", ".join(parts[:-1]) + " and " + parts[-1] if len(parts) > 1 else parts[0]
    return FocalEntities(pairs, f"Focal entities as the store names them, from {sources}.")
