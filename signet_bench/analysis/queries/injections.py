"""What Signet injected against what the scorer would have injected, session by session.

Signet's choice is `session_memories.was_injected`. The scorer's is the same number of the
session's start candidates, taken in the order of its scores (`predictor_score`: written by a
0.58 daemon running the predictor, by the simulated daemon, and never by current Signet, which
writes it as NULL). Both choices are set beside the judge's per-memory `relevance_score`;
Signet's judge rates what was injected, so the scorer's other picks are often unjudged, and
their number is reported rather than counted as zero.

On current Signet the session-start hook may run through the workbench's wrapper, which prints
the scorer's choice in place of Signet's and records it beside the workbench
(`store.hook_log`). Where it did, Signet's `was_injected` is what Signet would have injected,
and the wrapper's record is what was: the `hook_*` columns set it beside Signet's choice, and
say which sessions the wrapper served and which it failed open on (printing Signet's own).
In a session it served, the scorer did rank: its picks are what the wrapper injected (even
where the store, as current Signet's, holds no scorer scores), and `served_ranks` sets each
one's rank beside Signet's, the reordering the wrapper made.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl

from signet_bench.analysis.queries.candidate_pass import CONTRAST_COLUMNS, candidate_sessions
from signet_bench.analysis.queries.source import agent_condition
from signet_bench.analysis.wording import plural
from signet_bench.store.duck import attached_tables
from signet_bench.store.hook_log import hook_record, hook_sessions, served_injections
from signet_scorer.workbench import DEFAULT_AGENT

__all__ = [
    "HOOK_COLUMNS",
    "hook_contrast",
    "injection_contrast",
    "injection_summary",
    "injection_table",
    "served_ranks",
]

HOOK_COLUMNS: dict[str, pl.DataType] = {
    "hook": pl.String(),  # served | failed open | null: no record of the session
    "hook_reason": pl.String(),  # why it failed open (its first invocation)
    "hook_project": pl.String(),  # the project its first invocation names
    "hook_injected": pl.Int64(),  # memories the wrapper injected (served sessions)
    "hook_kept": pl.Int64(),  # of them, Signet's own injected ones
    "hook_outside": pl.Int64(),  # of them, not among Signet's candidate rows
    "hook_relevance": pl.Float64(),  # the judge's mean relevance of its judged ones
    "hook_judged": pl.Int64(),
    "hook_relevance_sum": pl.Float64(),
    "hook_memory_ids": pl.List(pl.String()),  # what it injected, in its order
}
"""The columns the wrapper's record adds to `injection_contrast` (null where it has none)."""

_ROWS_SQL = """
SELECT session_key, memory_id, COALESCE(TRY_CAST(was_injected AS BIGINT), 0) <> 0 AS injected,
       TRY_CAST(relevance_score AS DOUBLE) AS relevance
FROM store.session_memories
WHERE {agent} AND session_key IN (SELECT UNNEST(?::VARCHAR[]))
"""


def _mean_relevance(who: str) -> pl.Expr:
    """The judge's mean relevance of a choice over its judged memories (null: none judged)."""
    judged, total = pl.col(f"{who}_judged"), pl.col(f"{who}_relevance_sum")
    return pl.when(judged > 0).then(total / judged).alias(f"{who}_relevance")


def hook_contrast(
    con: duckdb.DuckDBPyConnection, workbench: str | Path | None, agent_id: str = DEFAULT_AGENT
) -> pl.DataFrame:
    """Per session the wrapper's record beside `workbench` names (`agent_id`'s, where the store
    keeps agent ids), `session_key` and `HOOK_COLUMNS`: served or failed open, and for served
    sessions what it injected against Signet's rows of the session."""
    empty = pl.DataFrame(schema={"session_key": pl.String(), **HOOK_COLUMNS})
    if workbench is None:
        return empty
    keyed = "agent_id" in attached_tables(con).columns.get("session_memories", ())
    record = hook_record(workbench, agent_id if keyed else None)
    sessions, shown = hook_sessions(record), served_injections(record)
    if sessions.height == 0:
        return empty
    keys = shown["session_key"].unique().to_list()
    sql = _ROWS_SQL.format(agent=agent_condition(con, "session_memories", agent_id))
    rows = con.execute(sql, [keys]).pl()
    served = (
        shown.join(rows, on=["session_key", "memory_id"], how="left")
        .group_by("session_key")
        .agg(
            pl.len().alias("hook_injected"),
            pl.col("injected").fill_null(False).sum().alias("hook_kept"),
            pl.col("injected").is_null().sum().alias("hook_outside"),
            pl.col("relevance").count().alias("hook_judged"),
            pl.col("relevance").sum().alias("hook_relevance_sum"),
            pl.col("memory_id").sort_by("rank").alias("hook_memory_ids"),
        )
    )
    status = pl.when(pl.col("served")).then(pl.lit("served")).otherwise(pl.lit("failed open"))
    projects = (
        record.invocations.sort("id")
        .group_by("session_key", maintain_order=True)
        .agg(pl.col("project").drop_nulls().first().alias("hook_project"))
    )
    frame = (
        sessions.select("session_key", status.alias("hook"), pl.col("reason").alias("hook_reason"))
        .join(projects, on="session_key", how="left")
        .join(served, on="session_key", how="left")
        .with_columns(_mean_relevance("hook"))
    )
    return frame.select(pl.col(c).cast(t) for c, t in empty.schema.items())


def injection_contrast(
    con: duckdb.DuckDBPyConnection,
    agent_id: str = DEFAULT_AGENT,
    workbench: str | Path | None = None,
    candidates: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Per session: `signet_injected` (and `signet_used`: of them, the ones the session used,
    `hook_usage.used_sql`), `scorer_picks` (0 when the scorer scored none of its
    candidates), `both_chose`, the judge's mean relevance of each choice over its judged
    memories (`signet_relevance`, `scorer_relevance`; null when none was judged) with the
    counts behind them (`signet_judged`, `scorer_judged`); `agent_id`'s sessions on a current
    store. Then `HOOK_COLUMNS` from the wrapper's record beside `workbench` (`hook_contrast`;
    null without one); in a session the wrapper served, the scorer's picks are what it
    injected (the store's scores, if any, did not choose them). `candidates`: the store's
    `candidate_pass.candidate_sessions` when read already (else read here)."""
    if candidates is None:
        candidates = candidate_sessions(con, agent_id)
    frame = candidates.filter(pl.col("candidates") > 0).select("session_key", *CONTRAST_COLUMNS)
    hook = hook_contrast(con, workbench, agent_id)
    joined = frame.join(hook, on="session_key", how="left")
    served = (pl.col("hook") == "served").fill_null(False)
    chosen = {  # a served session's scorer choice is what the wrapper injected
        "scorer_picks": "hook_injected",
        "both_chose": "hook_kept",
        "scorer_judged": "hook_judged",
        "scorer_relevance_sum": "hook_relevance_sum",
    }
    joined = joined.with_columns(
        pl.when(served).then(pl.col(h)).otherwise(pl.col(c)).cast(joined.schema[c]).alias(c)
        for c, h in chosen.items()
    )
    return joined.with_columns(_mean_relevance("signet"), _mean_relevance("scorer")).sort(
        "session_key"
    )


def served_ranks(
    con: duckdb.DuckDBPyConnection, workbench: str | Path | None, agent_id: str = DEFAULT_AGENT
) -> pl.DataFrame:
    """Each memory the wrapper injected in the sessions it served, in its order: `session_key`,
    `rank` (the scorer's, 1-based), `signet_rank` (in Signet's answer), `moved` (how many
    places the scorer moved it up), `signet_injected` (Signet would have injected it), the
    judge's `relevance`, `memory_id`."""
    schema = {
        "session_key": pl.String(),
        "rank": pl.Int64(),
        "signet_rank": pl.Int64(),
        "moved": pl.Int64(),
        "signet_injected": pl.Boolean(),
        "relevance": pl.Float64(),
        "memory_id": pl.String(),
    }
    if workbench is None:
        return pl.DataFrame(schema=schema)
    keyed = "agent_id" in attached_tables(con).columns.get("session_memories", ())
    shown = served_injections(hook_record(workbench, agent_id if keyed else None))
    if shown.height == 0:
        return pl.DataFrame(schema=schema)
    sql = _ROWS_SQL.format(agent=agent_condition(con, "session_memories", agent_id))
    rows = con.execute(sql, [shown["session_key"].unique().to_list()]).pl()
    return (
        shown.join(rows, on=["session_key", "memory_id"], how="left")
        .with_columns(
            (pl.col("signet_rank") - pl.col("rank")).alias("moved"),
            pl.col("injected").fill_null(False).alias("signet_injected"),
        )
        .select(pl.col(c).cast(t) for c, t in schema.items())
        .sort("session_key", "rank")
    )


def injection_table(contrast: pl.DataFrame) -> pl.DataFrame:
    """The contrast as the panel's table shows it: without the sums behind the means and the
    wrapper's memory lists, without the wrapper's columns when no session has its record, and
    without the prompt-time counts when no prompt injected."""
    hidden = [
        "signet_relevance_sum",
        "scorer_relevance_sum",
        "hook_relevance_sum",
        "hook_memory_ids",
        "hook_project",
    ]
    if "hook" in contrast.columns and contrast["hook"].null_count() == contrast.height:
        hidden += list(HOOK_COLUMNS)
    if "prompts" in contrast.columns and not contrast["prompts"].fill_null(0).sum():
        hidden += ["prompts", "prompt_injected", "prompt_used"]
    return contrast.drop(hidden, strict=False)


def _mean(frame: pl.DataFrame, who: str) -> float | None:
    judged = int(frame[f"{who}_judged"].sum())
    return None if judged == 0 else float(frame[f"{who}_relevance_sum"].sum()) / judged


def injection_summary(contrast: pl.DataFrame) -> str:
    """The contrast in words, over the sessions the scorer ranked: how much of Signet's
    injection it would have kept, and the judge's mean relevance of each choice (per memory);
    then what the session-start wrapper did where its record names a session."""
    text = _scorer_summary(contrast)
    hook = _hook_summary(contrast) if "hook" in contrast.columns else ""
    return f"{text} {hook}" if hook else text


def _hook_summary(contrast: pl.DataFrame) -> str:
    """The wrapper's sessions in words: how many it served and failed open on, and in the
    served ones how much of Signet's injection it kept and the judge's mean relevance."""
    named = contrast.filter(pl.col("hook").is_not_null())
    if named.height == 0:
        return ""
    served = named.filter(pl.col("hook") == "served")
    failed = named.height - served.height
    text = (
        f"The session-start wrapper served {served.height} of these sessions and failed open "
        f"on {failed} (printing Signet's own choice)."
    )
    if served.height == 0:
        return text
    shown, kept = int(served["hook_injected"].sum()), int(served["hook_kept"].sum())
    signet, outside = int(served["signet_injected"].sum()), int(served["hook_outside"].sum())
    text += (
        f" Where it served, it injected {plural(shown, 'memory')}: {kept:,} of the {signet:,} "
        f"Signet chose, {plural(shown - kept - outside, 'other candidate')}"
    )
    text += f" and {outside} outside Signet's candidates." if outside else "."
    ours, theirs = _mean(served, "hook"), _mean(served, "signet")
    if ours is not None and theirs is not None:
        unjudged = shown - int(served["hook_judged"].sum())
        text += (
            f" The judge's mean relevance there: {ours:.2f} for what it injected ({unjudged} of "
            f"its {shown} never judged), {theirs:.2f} for Signet's choice."
        )
    return text


def _scorer_summary(contrast: pl.DataFrame) -> str:
    """The scorer's picks against Signet's injections, over the sessions the scorer ranked."""
    ranked = contrast.filter(pl.col("scorer_picks") > 0)
    if ranked.height == 0:
        return (
            "The scorer ranked none of these sessions: the store holds no scorer scores "
            "(session_memories.predictor_score is empty; current Signet writes none), so what "
            "it would have injected is not known here."
        )
    injected, kept = int(ranked["signet_injected"].sum()), int(ranked["both_chose"].sum())
    picks, judged = int(ranked["scorer_picks"].sum()), int(ranked["scorer_judged"].sum())
    share = kept / injected if injected else 0.0
    served = int((ranked["hook"] == "served").sum()) if "hook" in ranked.columns else 0
    where = f" ({served} of them served by the session-start wrapper)" if served else ""
    n = ranked.height
    text = (
        f"In the {plural(n, 'session')} the scorer ranked{where}, it chose {kept:,} of the "
        f"{plural(injected, 'memory')} Signet injected ({share:.0%}), and "
        f"{plural(picks - kept, 'other')}."
    )
    signet, scorer = _mean(ranked, "signet"), _mean(ranked, "scorer")
    if signet is not None and scorer is not None:
        text += (
            f" The judge's mean relevance: {signet:.2f} for Signet's injected memories, "
            f"{scorer:.2f} for the scorer's picks ({picks - judged:,} of its "
            f"{plural(picks, 'pick')} {'was' if picks - judged == 1 else 'were'} never judged: "
            "the judge rates what was injected)."
        )
    return text
