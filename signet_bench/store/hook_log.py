"""Read the session-start hook's injection log (`hook_injections.db` beside the workbench,
written by `signet_scorer.hook.log`): what each invocation did and which memories it injected, so
labels given later describe what the scorer (or Signet, when the hook kept its output) chose.

The file is SQLite written by the hook's processes with the standard library; it is read here
the same way, read-only (`mode=ro`), never through DuckDB (one SQLite library per file and
process). A workbench without the file reads as empty frames.

`hook_record` keeps one agent's part of it (by session key and agent; on a store that keeps no
agent ids, the agent of each key's first invocation), `hook_sessions` says per session whether
the session-start wrapper served it (its recorded injections are the scorer's choice) or failed
open (Signet's output was printed), `served_injections` lists what it injected where it served,
and `prompt_injections` what the user-prompt-submit wrapper added at the session's prompts;
`prompt_rankings` what each prompt's ranking saw (its text, pool, keyword hits and context),
where it was recorded, for the trainer's prompt samples.
A log written before invocations named their hook reads as all `session-start`.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from signet_scorer.hook.config import SESSION_START, USER_PROMPT_SUBMIT
from signet_scorer.hook.log import INJECTION_COLUMNS, INVOCATION_COLUMNS, PROMPT_COLUMNS
from signet_scorer.workbench import DEFAULT_AGENT, HOOK_LOG_FILE

__all__ = [
    "SERVED",
    "HookRecord",
    "hook_log_path",
    "hook_record",
    "hook_sessions",
    "prompt_injections",
    "prompt_rankings",
    "read_hook_injections",
    "read_hook_invocations",
    "served_injections",
]

SERVED = "scorer"  # `outcome` and `chosen_by` when the scorer's order was injected

_ISO = "%Y-%m-%dT%H:%M:%S%.fZ"  # how the hook writes its times (UTC)
_TYPES = {
    "id": pl.Int64,
    "invocation_id": pl.Int64,
    "pool": pl.Int64,
    "injected": pl.Int64,
    "signet_exit": pl.Int64,
    "rank": pl.Int64,
    "signet_rank": pl.Int64,
    "duration_ms": pl.Float64,
    "score": pl.Float64,
}
_DEFAULTS = {"hook": SESSION_START}  # columns an older log lacks, read as this value


def hook_log_path(workbench: str | Path) -> Path:
    """The injection log beside a workbench file (`workbench.duckdb`)."""
    return Path(workbench).parent / HOOK_LOG_FILE


def _read(path: Path, table: str, columns: tuple[str, ...], order: str) -> pl.DataFrame:
    """The table's columns as a frame (its times as UTC datetimes), empty when it is absent."""
    schema: dict[str, pl.DataType] = {c: _TYPES.get(c, pl.Utf8) for c in columns}
    schema.update({c: pl.Datetime("us", "UTC") for c in ("at", "injected_at") if c in schema})
    if not path.exists():
        return pl.DataFrame(schema=schema)
    con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=5.0)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if table not in tables:
            return pl.DataFrame(schema=schema)
        present = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
        picked = [c if c in present else f"'{_DEFAULTS[c]}' AS {c}" for c in columns]
        rows = con.execute(f"SELECT {', '.join(picked)} FROM {table} ORDER BY {order}").fetchall()
    finally:
        con.close()
    text = {c: pl.Utf8 if c in ("at", "injected_at") else t for c, t in schema.items()}
    frame = pl.DataFrame(rows, schema=text, orient="row")
    times = [c for c in ("at", "injected_at") if c in columns]
    return frame.with_columns(pl.col(times).str.to_datetime(_ISO, time_zone="UTC", strict=False))


def read_hook_invocations(workbench: str | Path) -> pl.DataFrame:
    """One row per hook invocation, oldest first: `id` and the columns of
    `signet_scorer.hook.log.INVOCATION_COLUMNS` (`outcome` 'scorer' or 'signet', the `reason`)."""
    return _read(hook_log_path(workbench), "hook_invocations", ("id", *INVOCATION_COLUMNS), "id")


def read_hook_injections(workbench: str | Path) -> pl.DataFrame:
    """One row per injected memory of a session key and agent (the first invocation that
    injected any), by session key, agent and rank: `INJECTION_COLUMNS` (`score` null where
    Signet's order was kept)."""
    return _read(
        hook_log_path(workbench),
        "hook_injections",
        INJECTION_COLUMNS,
        "session_key, agent_id, rank",
    )


@dataclass(frozen=True, slots=True)
class HookRecord:
    """One agent's part of the injection log: its invocations and recorded injections (keyless
    invocations left out: nothing of theirs can be matched to a session), and whether the log
    file exists at all (`present`)."""

    invocations: pl.DataFrame
    injections: pl.DataFrame
    present: bool


def hook_record(workbench: str | Path, agent_id: str | None = DEFAULT_AGENT) -> HookRecord:
    """The log beside `workbench`, `agent_id`'s rows; None for a store that keeps no agent ids
    (Signet 0.58): per session key, the rows of the agent whose invocation came first."""
    inv = read_hook_invocations(workbench).filter(pl.col("session_key") != "")
    inj = read_hook_injections(workbench).filter(pl.col("session_key") != "")
    if agent_id is None:
        first = inv.sort("id").unique("session_key", keep="first", maintain_order=True)
        agents = first.select("session_key", "agent_id")
        inv = inv.join(agents, on=["session_key", "agent_id"], how="semi", maintain_order="left")
        inj = inj.join(agents, on=["session_key", "agent_id"], how="semi", maintain_order="left")
    else:
        inv = inv.filter(pl.col("agent_id") == agent_id)
        inj = inj.filter(pl.col("agent_id") == agent_id)
    return HookRecord(inv, inj, hook_log_path(workbench).exists())


def _by_hook(record: HookRecord, hook: str) -> HookRecord:
    """The record's invocations of one hook and the injections they recorded."""
    inv = record.invocations.filter(pl.col("hook") == hook)
    inj = record.injections.filter(pl.col("invocation_id").is_in(inv["id"].implode()))
    return HookRecord(inv, inj, record.present)


def hook_sessions(record: HookRecord) -> pl.DataFrame:
    """One row per session key of the record's session starts, by its first: `served` (the recorded
    injections are the scorer's choice: what was shown), `reason` (why Signet's output was
    printed at the key's first invocation; null where served), `invocations`, `injected`
    (memories recorded as injected: the scorer's, or Signet's as printed), `first_at`."""
    record = _by_hook(record, SESSION_START)
    chosen = record.injections.group_by("session_key").agg(
        (pl.col("chosen_by") == SERVED).any().alias("served"),
        pl.len().cast(pl.Int64).alias("injected"),
    )
    calls = (
        record.invocations.sort("id")
        .group_by("session_key", maintain_order=True)
        .agg(
            pl.col("at").first().alias("first_at"),
            pl.col("reason").first().alias("first_reason"),
            pl.len().cast(pl.Int64).alias("invocations"),
        )
    )
    joined = calls.join(chosen, on="session_key", how="left", maintain_order="left")
    served = pl.col("served").fill_null(False)
    return joined.select(
        "session_key",
        served.alias("served"),
        pl.when(served).then(None).otherwise(pl.col("first_reason")).alias("reason"),
        "invocations",
        pl.col("injected").fill_null(0),
        "first_at",
    )


def served_injections(record: HookRecord) -> pl.DataFrame:
    """The memories the wrapper injected in the sessions it served, by session key and rank:
    `session_key`, `memory_id`, `rank` (in the injected block), `signet_rank` (in Signet's
    answer), `score` (the scorer's probability)."""
    rows = _by_hook(record, SESSION_START).injections.filter(pl.col("chosen_by") == SERVED)
    return rows.select("session_key", "memory_id", "rank", "signet_rank", "score").sort(
        "session_key", "rank"
    )


def prompt_injections(record: HookRecord) -> pl.DataFrame:
    """The memories the user-prompt-submit wrapper added to its sessions, by session key, prompt
    and rank: `session_key`, `invocation_id` (the prompt's invocation), `at` (its time),
    `memory_id`, `rank` (in the prompt's block), `score` (the scorer's probability)."""
    prompts = _by_hook(record, USER_PROMPT_SUBMIT)
    at = prompts.invocations.select(pl.col("id").alias("invocation_id"), "at")
    rows = prompts.injections.join(at, on="invocation_id", how="left")
    return rows.select("session_key", "invocation_id", "at", "memory_id", "rank", "score").sort(
        "session_key", "invocation_id", "rank"
    )


PROMPT_RANKING_SCHEMA: dict[str, pl.DataType] = {
    "session_key": pl.String(),
    "invocation_id": pl.Int64(),
    "at": pl.Datetime("us", "UTC"),
    "prompt": pl.String(),
    "pool": pl.List(pl.String()),
    "hits": pl.List(pl.String()),
    "context": pl.Binary(),
    "injected": pl.List(pl.String()),
}


def prompt_rankings(workbench: str | Path, record: HookRecord) -> pl.DataFrame:
    """What each recorded prompt of `record`'s agent ranked, oldest first
    (`PROMPT_RANKING_SCHEMA`): the prompt, its pool, its keyword hits, the context vector's
    bytes and the memories it injected (in rank order); empty without `hook_prompts`."""
    path = hook_log_path(workbench)
    rows: list[tuple] = []
    if path.exists():
        con = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=5.0)
        try:
            tables = {
                r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")
            }
            if "hook_prompts" in tables:
                rows = con.execute(
                    f"SELECT {', '.join(PROMPT_COLUMNS)} FROM hook_prompts ORDER BY invocation_id"
                ).fetchall()
        finally:
            con.close()
    at = dict(zip(record.invocations["id"], record.invocations["at"], strict=True))
    injected = prompt_injections(record).group_by("invocation_id").agg(pl.col("memory_id"))
    chosen = dict(zip(injected["invocation_id"], injected["memory_id"].to_list(), strict=True))
    out = [
        (key, rid, at[rid], text, json.loads(pool), json.loads(hits), ctx, chosen.get(rid, []))
        for rid, key, agent, text, pool, hits, ctx in rows
        if rid in at
    ]
    return pl.DataFrame(out, schema=PROMPT_RANKING_SCHEMA, orient="row")
