"""The label sources' counts (`learn.samples.label_sources`) as DuckDB aggregates over the store
the dashboard holds open: per source of `learn.samples.LABEL_SOURCES`, whether the store has it
and how many sessions and rows carry a value of it, the same frame the library's reader
gives, without reading every candidate row into a child process (seconds on a year of heavy
use, against a few aggregates here).

Each source's rows are the ones `learn.samples.read_label_signals` reads: `agent_id`'s on a
current store, recall events that name a memory and are not session start's own claims, and
the session-start wrapper's injections in the sessions it served (its record beside the
workbench, `store.hook_log`).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from signet_bench.analysis.queries.candidate_pass import candidate_sessions
from signet_bench.analysis.queries.source import agent_condition
from signet_bench.learn.samples import LABEL_SOURCE_SCHEMA, LABEL_SOURCES
from signet_bench.store.duck import attached_tables
from signet_bench.store.hook_log import hook_record, served_injections
from signet_bench.store.read import SESSION_START_SURFACE
from signet_scorer.workbench import DEFAULT_AGENT, HOOK_LOG_FILE

__all__ = ["candidate_conditions", "label_source_counts"]

CANDIDATE_TABLE = "session_memories"  # counted by the candidate pass


def _rows_of(where: str, columns: dict[str, tuple[str, ...]]) -> tuple[str, str] | None:
    """(table, the SQL condition of a row carrying a value) of a store source `where`
    (`table` or `table.column`), None where the store lacks the table."""
    table, _, column = where.partition(".")
    have = columns.get(table)
    if have is None:
        return None
    if table == "session_recall_events":
        kind = "COALESCE(item_kind, 'memory') = 'memory'" if "item_kind" in have else "TRUE"
        start = "'" + SESSION_START_SURFACE.replace("'", "''") + "'"
        surface = f"surface IS DISTINCT FROM {start}" if "surface" in have else "TRUE"
        return table, f"{kind} AND {surface}"
    if not column:
        value = "score IS NOT NULL" if table == "session_scores" else "TRUE"
        return table, value if table != "session_scores" or "score" in have else "FALSE"
    if column not in have:
        return table, "FALSE"
    if column == "fts_hit_count":
        return table, "COALESCE(TRY_CAST(fts_hit_count AS BIGINT), 0) > 0"
    return table, f"{column} IS NOT NULL"


def _table_counts(
    con: duckdb.DuckDBPyConnection,
    table: str,
    values: list[str],
    agent: str,
    has_key: bool,
) -> list[tuple[int, int]]:
    """(distinct sessions, rows) of `table`'s rows carrying each of `values` (SQL conditions),
    from one scan of the table."""
    key = "COALESCE(CAST(session_key AS VARCHAR), 'unknown')" if has_key else "NULL"
    inner = ", ".join(f"COUNT(*) FILTER (WHERE {v}) AS c{i}" for i, v in enumerate(values))
    outer = ", ".join(f"COUNT(*) FILTER (WHERE c{i} > 0), SUM(c{i})" for i in range(len(values)))
    sql = (
        f"SELECT {outer} FROM (SELECT {key} AS k, {inner} FROM store.{table} WHERE {agent}"
        " GROUP BY k)"
    )
    row = con.execute(sql).fetchone()
    counts = [int(x or 0) for x in row or ()] or [0] * (2 * len(values))
    return list(zip(counts[::2], counts[1::2], strict=True))


def _hook_counts(
    con: duckdb.DuckDBPyConnection, workbench: str | Path | None, agent_id: str
) -> tuple[bool, int, int]:
    """(the record exists, sessions, rows) of the session-start wrapper's injections in the
    sessions it served."""
    if workbench is None:
        return False, 0, 0
    keyed = "agent_id" in attached_tables(con).columns.get("session_memories", ())
    record = hook_record(workbench, agent_id if keyed else None)
    shown = served_injections(record)
    return record.present, shown["session_key"].n_unique(), shown.height


def candidate_conditions(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """The label sources kept in the candidate rows (`session_memories.<column>`), each with
    the SQL condition of a row carrying a value: what `candidate_pass.candidate_sessions`
    counts for `label_source_counts`."""
    columns = attached_tables(con).columns
    found = {where: _rows_of(where, columns) for _, where, _ in LABEL_SOURCES}
    return {w: rows[1] for w, rows in found.items() if rows and rows[0] == CANDIDATE_TABLE}


def _candidate_counts(candidates: pl.DataFrame, wheres: list[str]) -> list[tuple[int, int]]:
    """(distinct sessions, rows) of each source of `wheres` from the candidate pass's per-session
    counts (a session key the store left empty counts as 'unknown', as in `_table_counts`)."""
    missing = [w for w in wheres if w not in candidates.columns]
    if missing:
        raise ValueError(f"the candidate pass did not count {', '.join(missing)}")
    per_key = candidates.group_by(pl.col("session_key").fill_null("unknown")).agg(
        pl.col(wheres).sum()
    )
    return [(int((per_key[w] > 0).sum()), int(per_key[w].sum())) for w in wheres]


def label_source_counts(
    con: duckdb.DuckDBPyConnection,
    workbench: str | Path | None,
    agent_id: str = DEFAULT_AGENT,
    candidates: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """`learn.samples.label_sources` of the store `con` reads, with the session-start wrapper's
    record beside `workbench` (None: no record), counted in DuckDB: one scan per table, the
    candidate rows' by the candidate pass (`candidates`: `candidate_pass.candidate_sessions`
    with `candidate_conditions` counted, when read already; else read here)."""
    columns = attached_tables(con).columns
    found = {where: _rows_of(where, columns) for _, where, _ in LABEL_SOURCES}
    tables: dict[str, list[str]] = {}
    for where, rows in found.items():
        if rows is not None:
            tables.setdefault(rows[0], []).append(where)
    counts: dict[str, tuple[int, int]] = {}
    if CANDIDATE_TABLE in tables:
        wheres = tables.pop(CANDIDATE_TABLE)
        if candidates is None:
            candidates = candidate_sessions(con, agent_id, candidate_conditions(con))
        counts.update(zip(wheres, _candidate_counts(candidates, wheres), strict=True))
    for table, wheres in tables.items():
        values = [found[w][1] for w in wheres]  # type: ignore[index]
        agent = agent_condition(con, table, agent_id)
        got = _table_counts(con, table, values, agent, "session_key" in columns[table])
        counts.update(zip(wheres, got, strict=True))
    out = []
    for name, where, what in LABEL_SOURCES:
        if where == HOOK_LOG_FILE:
            out.append((name, where, what, *_hook_counts(con, workbench, agent_id)))
            continue
        table, _, column = where.partition(".")
        present = table in columns and (not column or column in columns[table])
        out.append((name, where, what, present, *counts.get(where, (0, 0))))
    return pl.DataFrame(out, schema=LABEL_SOURCE_SCHEMA, orient="row")
