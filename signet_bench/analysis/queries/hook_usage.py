"""Each hook's injections and whether their session used them: session start (Signet's choice,
or the scorer's where the session-start wrapper served) beside prompt time (what the
user-prompt-submit wrapper added at the session's prompts, `store.hook_log.prompt_injections`;
the replayed loop records its prompt-time injections in the same log).

Used: the evidence of the session that the label function reads for the memory
(`daemon.labels`): its FTS hits or the recalls that brought it into the session after its start
(`hits`, what the label function counts), the agent's rating above zero, or the judge's
relevance at least `high_continuity_threshold` (where the label function counts a judged
memory as evidence of missing context). One rule for both hooks, so their shares compare.

`candidate_evidence` is the store's candidate rows with their evidence, the query both
`candidate_pass` (Signet's own injections, counted per session in its one pass over the rows,
which `injections.injection_contrast` gives and `signet_starts` reads) and
`injection_evidence` (the rows of the sessions the hook log names) read; `injections_by_hook` sets the wrappers' injections beside it. The rest are pure
functions over frames: `usage_per_session` and `usage_by_hook` count them,
`hook_usage_summary` says it in words.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb
import polars as pl

from signet_bench.analysis.queries.source import agent_condition
from signet_bench.analysis.wording import plural
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.store.duck import attached_tables
from signet_bench.store.hook_log import SERVED, hook_record, prompt_injections, served_injections
from signet_bench.store.read import SESSION_START_SURFACE
from signet_scorer.hook.config import SESSION_START, USER_PROMPT_SUBMIT
from signet_scorer.workbench import DEFAULT_AGENT

__all__ = [
    "BY_HOOK_SCHEMA",
    "EVIDENCE_SCHEMA",
    "INJECTION_SCHEMA",
    "PER_SESSION_SCHEMA",
    "PROMPT_OPT_IN",
    "SIGNET_SCHEMA",
    "candidate_evidence",
    "hook_injections",
    "hook_usage_summary",
    "injection_evidence",
    "injections_by_hook",
    "signet_starts",
    "usage_by_hook",
    "usage_per_session",
    "used_sql",
]

SIGNET = "signet"  # `chosen_by` of Signet's own session-start injections

EVIDENCE_SCHEMA: dict[str, pl.DataType] = {
    "session_key": pl.String(),
    "memory_id": pl.String(),
    "used": pl.Boolean(),  # `used_sql`
    "relevance": pl.Float64(),  # the judge's
}
"""A candidate row's use (`injection_evidence`)."""

SIGNET_SCHEMA: dict[str, pl.DataType] = {
    "session_key": pl.String(),
    "injected": pl.Int64(),
    "used": pl.Int64(),
    "judged": pl.Int64(),
    "relevance_sum": pl.Float64(),
}
"""Per session, Signet's own session-start injections (`signet_starts`)."""

INJECTION_SCHEMA: dict[str, pl.DataType] = {
    "session_key": pl.String(),
    "hook": pl.String(),  # session-start | user-prompt-submit
    "chosen_by": pl.String(),  # signet | scorer
    "invocation_id": pl.Int64(),  # the prompt's invocation (null at session start)
    "memory_id": pl.String(),
    "used": pl.Boolean(),
    "relevance": pl.Float64(),
}
"""One injected memory of one hook (`hook_injections`)."""

PER_SESSION_SCHEMA: dict[str, pl.DataType] = {
    "session_key": pl.String(),
    "start_used": pl.Int64(),  # session start's injections the session used
    "prompts": pl.Int64(),  # prompts at which the wrapper injected
    "prompt_injected": pl.Int64(),
    "prompt_used": pl.Int64(),
}
"""Per session, its hooks' counts (`usage_per_session`)."""

BY_HOOK_SCHEMA: dict[str, pl.DataType] = {
    "hook": pl.String(),
    "chosen_by": pl.String(),
    "sessions": pl.Int64(),  # sessions with an injection of this hook and chooser
    "injected": pl.Int64(),
    "per_session": pl.Float64(),
    "used": pl.Int64(),
    "used_share": pl.Float64(),
    "judged": pl.Int64(),
    "relevance": pl.Float64(),  # the judge's mean over the judged ones
}
"""Per hook and chooser, over the sessions given (`usage_by_hook`)."""

PROMPT_OPT_IN = (
    "current Signet injects no memories at a prompt (its user-prompt-submit hook adds only "
    "entity-context lines), so only session start's injections are counted here; to add the "
    "scorer's memories at each prompt, put `signet-bench-hook user-prompt-submit` in the "
    "harness's settings in place of `signet hook user-prompt-submit` (docs/user-guide.md §3), "
    "and put Signet's command back to undo it"
)
"""Why the log holds no prompt-time injection, and how to opt in."""


def used_sql(cfg: PredictorConfig = DEFAULT_CONFIG) -> str:
    """Whether an injected memory was used (the module's rule), in SQL over the columns of
    `candidate_evidence`; false where the session kept no evidence of it."""
    high = float(cfg.high_continuity_threshold)
    return (
        f"(COALESCE(hits, 0) > 0 OR COALESCE(agent_rating > 0, false)"
        f" OR COALESCE(relevance >= {high!r}, false))"
    )


_EVIDENCE_SQL = """
SELECT sm.session_key, sm.memory_id, sm.source,
       COALESCE(TRY_CAST(sm.was_injected AS BIGINT), 0) <> 0 AS injected,
       TRY_CAST(sm.predictor_score AS DOUBLE) AS score,
       GREATEST(COALESCE(TRY_CAST({fts} AS BIGINT), 0), COALESCE(r.recalls, 0)) AS hits,
       TRY_CAST({agent_rating} AS DOUBLE) AS agent_rating,
       TRY_CAST({relevance} AS DOUBLE) AS relevance{extra}
FROM store.session_memories sm
LEFT JOIN ({recalls}) r ON r.session_key = sm.session_key AND r.memory_id = sm.memory_id
WHERE {agent}
"""

_NO_RECALLS = "SELECT NULL::VARCHAR AS session_key, NULL::VARCHAR AS memory_id, 0 AS recalls"


def candidate_evidence(
    con: duckdb.DuckDBPyConnection, agent_id: str = DEFAULT_AGENT, extra: Sequence[str] = ()
) -> str:
    """A query of `agent_id`'s candidate rows (the store's only agent's on a 0.58 store) with
    their evidence of use: `session_key`, `memory_id`, `source`, `injected` (Signet's),
    `score` (the predictor's), `hits` (FTS hits or recalls after the start, whichever is
    more), `agent_rating`, `relevance` (the judge's); what `used_sql` reads. Then the `extra`
    select expressions over the table's raw columns (`candidate_pass`)."""
    have = set(attached_tables(con).columns.get("session_memories", ()))

    def column(name: str) -> str:
        return f"sm.{name}" if name in have else "NULL"

    return _EVIDENCE_SQL.format(
        fts=column("fts_hit_count"),
        agent_rating=column("agent_relevance_score"),
        relevance=column("relevance_score"),
        recalls=_recalls_sql(con, agent_id),
        agent=agent_condition(con, "session_memories", agent_id, "sm.agent_id"),
        extra="".join(f", {e}" for e in extra),
    )


def _recalls_sql(con: duckdb.DuckDBPyConnection, agent_id: str) -> str:
    """Recall events per session and memory, session start's own claims left out (as the label
    signals read them, `learn.samples.read_label_signals`)."""
    columns = attached_tables(con).columns.get("session_recall_events")
    if columns is None or not {"session_key", "item_id"} <= set(columns):
        return _NO_RECALLS
    kind = "item_kind = 'memory'" if "item_kind" in columns else "TRUE"
    start = "'" + SESSION_START_SURFACE.replace("'", "''") + "'"
    surface = f"surface IS DISTINCT FROM {start}" if "surface" in columns else "TRUE"
    agent = agent_condition(con, "session_recall_events", agent_id)
    return (
        "SELECT session_key, item_id AS memory_id, COUNT(*) AS recalls "
        f"FROM store.session_recall_events WHERE {kind} AND {surface} AND {agent} "
        "GROUP BY ALL"
    )


def injection_evidence(
    con: duckdb.DuckDBPyConnection,
    session_keys: list[str],
    agent_id: str = DEFAULT_AGENT,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> pl.DataFrame:
    """`EVIDENCE_SCHEMA` for every candidate row of `session_keys` (the sessions the hook log
    names), `agent_id`'s on a current store."""
    sql = (
        f"SELECT session_key, memory_id, {used_sql(cfg)} AS used, relevance "
        f"FROM ({candidate_evidence(con, agent_id)}) "
        "WHERE session_key IN (SELECT UNNEST(?::VARCHAR[]))"
    )
    frame = con.execute(sql, [session_keys]).pl()
    return frame.select(pl.col(c).cast(t) for c, t in EVIDENCE_SCHEMA.items())


def hook_injections(
    evidence: pl.DataFrame, served: pl.DataFrame, prompts: pl.DataFrame
) -> pl.DataFrame:
    """`INJECTION_SCHEMA`: what the wrappers injected, at session start where it served
    (`served`: `store.hook_log.served_injections`) and at the prompts (`prompts`:
    `store.hook_log.prompt_injections`), each with its use (`evidence`:
    `injection_evidence`; not used where the store has no row of it)."""
    keys = ["session_key", "memory_id"]
    start = served.select(
        *keys, pl.lit(None, pl.Int64).alias("i"), pl.lit(SESSION_START).alias("hook")
    )
    prompt = prompts.select(
        *keys,
        pl.col("invocation_id").cast(pl.Int64).alias("i"),
        pl.lit(USER_PROMPT_SUBMIT).alias("hook"),
    )
    rows = pl.concat([start, prompt]).join(evidence, on=keys, how="left")
    return rows.select(
        "session_key",
        "hook",
        pl.lit(SERVED).alias("chosen_by"),
        pl.col("i").alias("invocation_id"),
        "memory_id",
        pl.col("used").fill_null(False),
        "relevance",
    ).select(pl.col(c).cast(t) for c, t in INJECTION_SCHEMA.items())


def signet_starts(contrast: pl.DataFrame) -> pl.DataFrame:
    """`SIGNET_SCHEMA` of the sessions in `contrast` (`injections.injection_contrast`) where
    Signet's own session-start injection was shown: it injected and no wrapper served."""
    shown = (pl.col("signet_injected") > 0) & (pl.col("hook") != "served").fill_null(True)
    return (
        contrast.filter(shown)
        .select(
            "session_key",
            pl.col("signet_injected").alias("injected"),
            pl.col("signet_used").alias("used"),
            pl.col("signet_judged").alias("judged"),
            pl.col("signet_relevance_sum").alias("relevance_sum"),
        )
        .select(pl.col(c).cast(t) for c, t in SIGNET_SCHEMA.items())
    )


def injections_by_hook(
    con: duckdb.DuckDBPyConnection,
    workbench: str | Path | None,
    agent_id: str = DEFAULT_AGENT,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> pl.DataFrame:
    """`hook_injections` of the hook log beside `workbench` (none: empty) and the store `con`
    reads, `agent_id`'s where the store keeps agent ids."""
    if workbench is None:
        return pl.DataFrame(schema=INJECTION_SCHEMA)
    keyed = "agent_id" in attached_tables(con).columns.get("session_memories", ())
    record = hook_record(workbench, agent_id if keyed else None)
    served, prompts = served_injections(record), prompt_injections(record)
    named = pl.concat([served["session_key"], prompts["session_key"]]).unique().to_list()
    if not named:
        return pl.DataFrame(schema=INJECTION_SCHEMA)
    return hook_injections(injection_evidence(con, named, agent_id, cfg), served, prompts)


def usage_per_session(injections: pl.DataFrame, signet: pl.DataFrame) -> pl.DataFrame:
    """`PER_SESSION_SCHEMA`: per session with an injection, how many of session start's it
    used (`signet`: `signet_starts`, or the wrapper's, `injections`: `hook_injections`), and
    the prompts that injected, their memories and how many of those it used."""
    start = pl.col("hook") == SESSION_START
    prompt = pl.col("hook") == USER_PROMPT_SUBMIT
    counts = [c for c in PER_SESSION_SCHEMA if c != "session_key"]
    hooks = injections.group_by("session_key").agg(
        (start & pl.col("used")).sum().alias("start_used"),
        pl.col("invocation_id").filter(prompt).n_unique().alias("prompts"),
        prompt.sum().alias("prompt_injected"),
        (prompt & pl.col("used")).sum().alias("prompt_used"),
    )
    own = signet.select("session_key", pl.col("used").cast(pl.Int64).alias("start_used"))
    frame = (
        pl.concat([hooks.with_columns(pl.col(counts).cast(pl.Int64)), own], how="diagonal")
        .group_by("session_key")
        .agg(pl.col(c).fill_null(0).sum() for c in counts)
    )
    return frame.select(pl.col(c).cast(t) for c, t in PER_SESSION_SCHEMA.items()).sort(
        "session_key"
    )


def usage_by_hook(injections: pl.DataFrame, signet: pl.DataFrame) -> pl.DataFrame:
    """`BY_HOOK_SCHEMA`: per hook (session start, then prompt time) and chooser (Signet:
    `signet`, `signet_starts`; the scorer: `injections`, `hook_injections`), its sessions,
    memories injected and per session, how many and which share of them were used, and the
    judge's mean relevance over the judged ones."""
    wrapped = injections.group_by("hook", "chosen_by").agg(
        pl.col("session_key").n_unique().alias("sessions"),
        pl.len().alias("injected"),
        pl.col("used").sum().alias("used"),
        pl.col("relevance").count().alias("judged"),
        pl.col("relevance").sum().alias("relevance_sum"),
    )
    own = signet.select(
        pl.lit(SESSION_START).alias("hook"),
        pl.lit(SIGNET).alias("chosen_by"),
        pl.len().alias("sessions"),
        pl.col("injected").sum(),
        pl.col("used").sum(),
        pl.col("judged").sum(),
        pl.col("relevance_sum").sum(),
    ).filter(pl.col("sessions") > 0)
    frame = pl.concat(
        [own.cast(wrapped.schema), wrapped] if wrapped.height else [own], how="vertical"
    ).with_columns(
        (pl.col("injected") / pl.col("sessions")).alias("per_session"),
        (pl.col("used") / pl.col("injected")).alias("used_share"),
        pl.when(pl.col("judged") > 0)
        .then(pl.col("relevance_sum") / pl.col("judged"))
        .alias("relevance"),
    )
    order = pl.col("hook") != SESSION_START, pl.col("chosen_by") != SIGNET
    return frame.sort(order).select(pl.col(c).cast(t) for c, t in BY_HOOK_SCHEMA.items())


def _part(row: dict) -> str:
    """One hook and chooser's row in words."""
    relevance = "" if row["relevance"] is None else f", judge's mean {row['relevance']:.2f}"
    return (
        f"{plural(row['injected'], 'memory')} in {plural(row['sessions'], 'session')} "
        f"({row['per_session']:.1f} per session), {row['used_share']:.0%} of them used{relevance}"
    )


def hook_usage_summary(by_hook: pl.DataFrame) -> str:
    """`usage_by_hook` in words: each hook's injections and how often they were used; where no
    prompt-time injection is in the log, why and how to add them (`PROMPT_OPT_IN`)."""
    rows = {(r["hook"], r["chosen_by"]): r for r in by_hook.iter_rows(named=True)}
    start = [
        f"{who}: {_part(rows[(SESSION_START, key)])}"
        for key, who in ((SIGNET, "Signet's choice"), (SERVED, "the scorer's, where served"))
        if (SESSION_START, key) in rows
    ]
    head = f"Session start injected {'; '.join(start)}." if start else "No session start injected."
    prompt = rows.get((USER_PROMPT_SUBMIT, SERVED))
    if prompt is None:
        return f"{head} No prompt-time injection is in the hook log: {PROMPT_OPT_IN}."
    return f"{head} At the prompts, the scorer added {_part(prompt)}."
