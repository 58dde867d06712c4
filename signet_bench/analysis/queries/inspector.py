"""The comparison inspector (docs/specification.md §9.5) and the per-session event timeline (§9.4).

One session's rows are read through SQLite itself (`store.duck.store_sql`), so its
`session_key` index answers in milliseconds even on a year of heavy use; DuckDB's scan of the
store's view would read every row. On a current store they are the default agent's rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import duckdb
import numpy as np
import polars as pl

from signet_bench.analysis.queries.source import agent_condition, store_has
from signet_bench.analysis.wording import plural
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.ranking.fusion import rrf_fuse
from signet_bench.store.duck import store_sql

__all__ = [
    "SessionDetail",
    "session_detail",
    "session_events",
    "sqlite_literal",
    "sqlite_rows",
]

PREVIEW_CHARS = 90

_CANDIDATES_SQL = """
SELECT sm.memory_id, sm.source, sm.effective_score, sm.predictor_score, sm.final_score, sm.rank,
       sm.predictor_rank, sm.was_injected, sm.relevance_score, sm.fts_hit_count, sm.is_constraint,
       sm.agent_relevance_score, sm.created_at, m.content, m.type, m.project AS memory_project,
       m.created_at AS memory_created_at
FROM session_memories sm LEFT JOIN memories m ON m.id = sm.memory_id
WHERE sm.session_key = {key} AND {agent}
"""
_CANDIDATE_TYPES = """
memory_id::VARCHAR AS memory_id, source::VARCHAR AS source,
TRY_CAST(effective_score AS DOUBLE) AS effective_score,
TRY_CAST(predictor_score AS DOUBLE) AS predictor_score,
TRY_CAST(final_score AS DOUBLE) AS final_score, TRY_CAST(rank AS BIGINT) AS rank,
TRY_CAST(predictor_rank AS BIGINT) AS predictor_rank,
COALESCE(TRY_CAST(was_injected AS BIGINT), 0) <> 0 AS was_injected,
TRY_CAST(relevance_score AS DOUBLE) AS relevance_score,
COALESCE(TRY_CAST(fts_hit_count AS BIGINT), 0) AS fts_hit_count,
COALESCE(TRY_CAST(is_constraint AS BIGINT), 0) <> 0 AS is_constraint,
TRY_CAST(agent_relevance_score AS DOUBLE) AS agent_relevance_score,
created_at::VARCHAR AS created_at, content::VARCHAR AS content, type::VARCHAR AS type,
memory_project::VARCHAR AS memory_project, memory_created_at::VARCHAR AS memory_created_at
"""
_SCORE_TYPES = """
TRY_CAST(score AS DOUBLE) AS score, TRY_CAST(confidence AS DOUBLE) AS confidence,
reasoning::VARCHAR AS reasoning, continuity_reasoning::VARCHAR AS continuity_reasoning,
TRY_CAST(memories_recalled AS BIGINT) AS memories_recalled,
TRY_CAST(memories_used AS BIGINT) AS memories_used,
TRY_CAST(novel_context_count AS BIGINT) AS novel_context_count, created_at::VARCHAR AS created_at
"""
_SCORE_SQL = """
SELECT score, confidence, reasoning, continuity_reasoning, memories_recalled, memories_used,
       novel_context_count, created_at
FROM session_scores WHERE session_key = {key} AND {agent} ORDER BY created_at DESC LIMIT 1
"""


def sqlite_literal(text: str) -> str:
    """`text` as an SQLite string literal."""
    return "'" + text.replace("'", "''") + "'"


def sqlite_rows(con: duckdb.DuckDBPyConnection, sql: str, select: str = "*") -> pl.DataFrame:
    """Rows of `sql` run by the store's own SQLite (its indexes apply); `select` casts them."""
    return store_sql(con, sql, select)


@dataclass(frozen=True, slots=True)
class SessionDetail:
    """Everything the inspector shows about one session.

    `candidates`: every recorded row with memory text (`preview`), 1-based `baseline_rank`,
    `predictor_rank`, `fused_score` (RRF at the session's alpha, before diversity) and
    `diversity_factor` (final / fused: below 1 where topic diversity attenuated it).
    `baseline_top` / `predictor_top`: each ranker's top 10 (rank, memory, relevance,
    injected, fts_hits, memory_id). `fts_missed`: memories the user searched for that were not
    candidates (`fts_only`, missed by the pre-filter)."""

    session: dict
    candidates: pl.DataFrame
    baseline_top: pl.DataFrame
    predictor_top: pl.DataFrame
    fts_missed: pl.DataFrame
    diversity: pl.DataFrame
    judge: dict
    gate: str
    ema: str


def _with_ranks(cand: pl.DataFrame, alpha: float, cfg: PredictorConfig) -> pl.DataFrame:
    pool = cand.filter(pl.col("source") != "fts_only")
    n = pool.height
    base = (pool["rank"].cast(pl.Float64) + 1.0).to_numpy()
    pred = pool["predictor_rank"].cast(pl.Float64).fill_null(-1.0).to_numpy()
    fused = rrf_fuse(base, pred, alpha, cfg.rrf_k, n=n) if n else np.zeros(0)
    final = pool["final_score"].cast(pl.Float64).to_numpy()
    factor = np.divide(final, fused, out=np.ones_like(fused), where=fused > 0)
    return pool.with_columns(
        (pl.col("rank") + 1).alias("baseline_rank"),
        pl.Series("fused_score", fused),
        pl.Series("diversity_factor", np.round(factor, 6)),
    )


def _top(pool: pl.DataFrame, by: str, k: int) -> pl.DataFrame:
    """A ranker's top k as the inspector lists them: rank, memory text, the judge's relevance,
    whether it was injected, its FTS hits."""
    ranked = pool.filter(pl.col(by).is_not_null()).sort(by, "memory_id").head(k)
    return ranked.select(
        pl.col(by).alias("rank"),
        pl.col("preview").alias("memory"),
        pl.col("relevance_score").alias("relevance"),
        pl.col("was_injected").alias("injected"),
        pl.col("fts_hit_count").alias("fts_hits"),
        "memory_id",
    )


def _gate_text(session: dict, cfg: PredictorConfig) -> tuple[str, str]:
    conf = session.get("confidence")
    gate = cfg.min_scorer_confidence
    if conf is None:
        gate_text = "the judge has not scored this session"
    elif conf >= gate:
        gate_text = f"confidence {conf:.2f} >= {gate:g}: passed the gate"
    else:
        gate_text = f"confidence {conf:.2f} < {gate:g}: excluded from comparison and training"
    if session.get("predictor_ndcg") is None:
        ema = "no comparison was recorded"
    elif session.get("counted"):
        won = "win" if session.get("predictor_won") else "loss"
        ema = f"updated the success-rate EMA ({won}; it was {session['success_rate']:.3f})"
    elif session.get("predictor_scored", 0) == 0:
        ema = "not counted: the predictor did not score this session"
    else:
        ema = "not counted: the judge's confidence was below the gate"
    return gate_text, ema


def session_detail(
    con: duckdb.DuckDBPyConnection,
    session: dict,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    k: int = 10,
) -> SessionDetail:
    """The inspector's view of `session` (a row of `sessions.session_frame`, as a dict)."""
    key = sqlite_literal(str(session["session_key"]))
    agent = agent_condition(con, "session_memories", column="sm.agent_id")
    cand = sqlite_rows(con, _CANDIDATES_SQL.format(key=key, agent=agent), _CANDIDATE_TYPES)
    preview = pl.col("content").fill_null("(memory not in the store)").str.slice(0, PREVIEW_CHARS)
    cand = cand.with_columns(preview.alias("preview"))
    alpha = session.get("alpha")
    pool = _with_ranks(cand, 1.0 if alpha is None else float(alpha), cfg)
    agent = agent_condition(con, "session_scores")
    scores = sqlite_rows(con, _SCORE_SQL.format(key=key, agent=agent), _SCORE_TYPES)
    judge = scores.row(0, named=True) if scores.height else {}
    gate, ema = _gate_text(session, cfg)
    diversity = pool.filter(pl.col("diversity_factor") < 1.0 - 1e-9).select(
        "memory_id", "preview", "fused_score", "final_score", "diversity_factor"
    )
    missed = cand.filter(pl.col("source") == "fts_only").select(
        "memory_id", "preview", "fts_hit_count", "relevance_score"
    )
    return SessionDetail(
        session=session,
        candidates=pool,
        baseline_top=_top(pool, "baseline_rank", k),
        predictor_top=_top(pool, "predictor_rank", k),
        fts_missed=missed.sort("fts_hit_count", descending=True),
        diversity=diversity,
        judge=judge,
        gate=gate,
        ema=ema,
    )


def _corpus_size(con: duckdb.DuckDBPyConnection, started_text: str) -> int | None:
    """Live memories that existed when the session started (the pre-filter's input)."""
    if not store_has(con, "memories"):
        return None
    sql = (
        "SELECT COUNT(*) AS n FROM memories WHERE COALESCE(is_deleted, 0) = 0"
        f" AND created_at <= {sqlite_literal(started_text)}"
    )
    return int(sqlite_rows(con, sql)["n"][0])


def _comparison_events(s: dict, at, runs: pl.DataFrame, resets: pl.DataFrame) -> list[tuple]:
    """The comparison, a drift reset it caused, and the training it triggered (a run logged
    within a few minutes of it)."""
    what = (
        f"predictor {s['predictor_ndcg']:.3f} vs baseline {s['baseline_ndcg']:.3f}, "
        f"{s['outcome']}, margin {s['margin']:+.3f}"
    )
    out = [(at, "comparison", what)]
    hit = resets.filter(pl.col("session_key") == s["session_key"])
    if hit.height:
        what = f"success rate {hit['success_rate'][0]:.3f} -> {hit['reset_to'][0]:.2f}"
        out.append((at, "drift_reset", what + ", alpha back to 1.0, retrain with replay"))
    if runs.height:
        near = pl.col("created_at").is_between(at - timedelta(minutes=1), at + timedelta(minutes=5))
        for r in runs.filter(near).iter_rows(named=True):
            verdict = "accepted" if r["accepted"] else "rejected"
            what = (
                f"model v{r['model_version']}, loss {r['loss']:.4f}, "
                f"{r['sample_count']} samples, {verdict}"
            )
            out.append((r["created_at"], "trained", what))
    return out


def session_events(
    con: duckdb.DuckDBPyConnection,
    detail: SessionDetail,
    runs: pl.DataFrame,
    resets: pl.DataFrame,
) -> pl.DataFrame:
    """The session's predictor events in time order (docs/specification.md §9.4): prefilter, scored,
    diversity, fts_overlap, comparison, drift_reset, trained. Columns: at, event, details."""
    s, pool = detail.session, detail.candidates
    start = s.get("started_at")
    events: list[tuple] = []
    if start is not None and pool.height:
        corpus = _corpus_size(con, pool["created_at"].min())
        events.append(
            (start, "prefilter", f"corpus {corpus} -> {plural(pool.height, 'candidate')}")
        )
    if s.get("predictor_scored"):
        top = detail.predictor_top["memory_id"][0] if detail.predictor_top.height else "-"
        what = (
            f"{plural(pool.height, 'candidate')}, top pick {top}, alpha {s.get('alpha') or 1.0:.2f}"
        )
        events.append((start, "scored", what))
    if detail.diversity.height:
        events.append(
            (start, "diversity", f"attenuated {plural(detail.diversity.height, 'candidate')}")
        )
    end = s.get("ended_at") or start
    injected = pool.filter(pl.col("was_injected"))
    matched = injected.filter(pl.col("fts_hit_count") > 0).height
    fts_only = detail.fts_missed.height
    overlap = f"injected matched {matched}/{injected.height}, fts-only inserts {fts_only}"
    events.append((end, "fts_overlap", overlap))
    at = s.get("compared_at")
    if at is not None:
        events += _comparison_events(s, at, runs, resets)
    schema = {"at": pl.Datetime("us", "UTC"), "event": pl.String, "details": pl.String}
    return pl.DataFrame(events, schema=schema, orient="row").sort("at", maintain_order=True)
