"""Training samples from any Signet store: one per scored session, built from the corpus and
the recorded candidates with the shared context (`daemon/context.py`), candidate-input
(`daemon/candidates.py`) and label (`daemon/labels.py`) functions, so training sees exactly
what serving saw.

The session loop calls `build_sample` at the end of every session on the rows it has just
recorded; the trainer calls it on every scored session of a store (`load_samples`). A
session's query is its session-start query (`daemon.session_query`: the terms of the project's last
transcripts done before it started), so the candidates' signals are the ones served then.
The label rule's sampled negatives draw from a random stream keyed by the session, so a
session's sample is the same whichever sessions are loaded with it. The knowledge-graph columns
(features 12-16) are the ones the daemon recorded with a session's candidates, else computed
from the store's graph as it is when read (`signet_scorer.structure.session_columns`: the rule the
session-start hook applies too).

The labels read every signal a store keeps, whichever its release line (`LabelSignals`): the
judge's `session_scores` and per-memory `relevance_score`, FTS hits and the agent's
`agent_relevance_score` in `session_memories` (both lines), and current Signet's
`path_feedback_events` and `session_recall_events` (read by table and column presence: a 0.58
store has neither, and its labels are what they were). `label_sources` says which of them a
store has and how many sessions each covers.

What was shown: where current Signet's session-start hook ran through the workbench's wrapper
(`signet-bench-hook`), the wrapper's own record (`hook_injections.db` beside the workbench,
`store.hook_log`) says what was injected, and in the sessions it served that set, not Signet's
`was_injected`, is what the labels treat as injected (`shown_candidates`; the rule is in
`daemon.labels`). The record is looked for beside the store's workbench, where the hook writes
it by default (`signet_scorer.workbench.default_workbench`), unless a workbench is named; without it
the labels are exactly the store's.
"""

from __future__ import annotations

import dataclasses
import itertools
import sqlite3
import zlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.candidates import CandidateOrigin, SessionInputs, session_inputs
from signet_bench.daemon.context import PreviousSession, previous_sessions, session_context
from signet_bench.daemon.labels import (
    SessionLabelInput,
    edited_recently,
    ratings,
    seed_labels,
    session_trainable,
)
from signet_bench.daemon.ranking.prompt_time import PROMPT_CONTEXT_RULE
from signet_bench.daemon.session_query import NO_QUERY, SessionQuery, StartQueries, prompt_query
from signet_bench.store.corpus import Corpus, read_corpus
from signet_bench.store.hook_log import (
    PROMPT_RANKING_SCHEMA,
    hook_record,
    prompt_injections,
    prompt_rankings,
    served_injections,
)
from signet_bench.store.read import (
    SESSION_START_SURFACE,
    open_readonly,
    read_path_feedback,
    read_recall_events,
    read_session_memories,
    read_session_starts,
    read_sessions,
    store_tables,
)
from signet_scorer.context import SessionContextVector
from signet_scorer.features import SessionInfo
from signet_scorer.structure import (
    GraphColumns,
    MemoryStructure,
    read_structure,
    recorded_structure,
    session_columns,
)
from signet_scorer.track_record import read_track_record, read_track_records
from signet_scorer.workbench import DEFAULT_AGENT, HOOK_LOG_FILE, default_workbench

__all__ = [
    "HOOK_SOURCE",
    "LABEL_SOURCES",
    "LABEL_SOURCE_SCHEMA",
    "PROMPT_KEY_MARK",
    "PROMPT_SOURCE",
    "SAMPLE_COLUMNS",
    "CandidateRows",
    "LabelSignals",
    "SampleRules",
    "Selection",
    "SessionSample",
    "build_sample",
    "is_prompt_sample",
    "label_input",
    "label_sources",
    "later_hits",
    "load_samples",
    "prompt_rankings_of",
    "prompt_samples",
    "read_label_signals",
    "sample_rng",
    "scored_sessions",
    "session_count",
    "session_graph",
    "session_of",
    "session_structure",
    "shown_candidates",
    "signals_frame",
    "store_workbench",
    "track_records",
    "track_values",
]

LABEL_SOURCES: tuple[tuple[str, str, str], ...] = (
    ("session scores", "session_scores", "the judge's continuity score and confidence"),
    ("judge relevance", "session_memories.relevance_score", "the judge's rating of a memory"),
    ("FTS hits", "session_memories.fts_hit_count", "prompt-time searches that matched a memory"),
    ("agent feedback", "session_memories.agent_relevance_score", "the agent's own rating"),
    ("path feedback", "path_feedback_events", "the agent's rating and reward of a graph path"),
    ("recall events", "session_recall_events", "memories a recall brought into the session"),
    (
        "hook injections",
        HOOK_LOG_FILE,
        "what the hook wrappers injected (at session start, in Signet's place)",
    ),
)
"""The label sources: (name, where the store keeps it, what it is). The last is no table of
the store but the wrapper's record beside its workbench."""

LABEL_SOURCE_SCHEMA: dict[str, pl.DataType] = {
    "source": pl.String(),
    "where": pl.String(),
    "what": pl.String(),
    "present": pl.Boolean(),
    "sessions": pl.Int64(),
    "rows": pl.Int64(),
}
"""The columns of `label_sources`' frame, one row per entry of `LABEL_SOURCES`."""

HOOK_SOURCE = "session_start_hook"
"""The `source` of a candidate row `shown_candidates` adds for a memory the wrapper injected
that is not among Signet's candidate rows of the session."""

PROMPT_SOURCE = "user_prompt_submit_hook"
PROMPT_KEY_MARK = "#prompt-"  # a prompt sample's key: `<session key>#prompt-<invocation id>`
"""The `source` of a candidate row `shown_candidates` adds for a memory a prompt injected
(the user-prompt-submit wrapper's record) that has no candidate row of the session; such rows
sort after the session-start pool, as `fts_only` rows do."""

SAMPLE_COLUMNS = (
    "source",
    "was_injected",
    "relevance_score",
    "fts_hit_count",
    "agent_relevance_score",
    "entity_slot",
    "aspect_slot",
    "structural_density",
    "is_constraint",
)
"""The `session_memories` columns a sample reads, beside the keys every read keeps
(`store.read.read_session_memories`): a training converts only these."""

AFTER_START = ("fts_only", PROMPT_SOURCE)
"""The sources of candidate rows recorded after the session start (not its pool)."""


@dataclass(frozen=True, slots=True)
class SessionSample:
    """One session's candidate set as the model sees it, with its labels."""

    session_key: str
    start: datetime
    project: str | None
    confidence: float
    continuity: float
    memory_ids: np.ndarray  # (n,) str
    context: np.ndarray  # (D,) float32
    cand_emb: np.ndarray  # (n, D) float32, zero rows on the text path
    has_emb: np.ndarray  # (n,) bool
    tokens: tuple[np.ndarray, ...]  # hash buckets per candidate (text path)
    features: np.ndarray  # (n, 17) float32
    project_slot: int
    labels: np.ndarray  # (n,) float64
    baseline_rank: np.ndarray  # (n,) 0-based rank at session start (fts_only rows last)
    signals: np.ndarray | None = None  # (n, N_SIGNALS) float32 (`signet_scorer.signals`); None: 0
    # (n,) float64, the agent's or the judge's rating (`daemon.labels.ratings`), NaN unrated;
    # None: the source has no ratings (held-out judgements then score against the labels)
    rated: np.ndarray | None = None
    # (n,) bool, the rows of the pool the ranking ranked: at session start, not the rows recorded
    # after it (`AFTER_START`: what the prompts recalled), which training learns from but no
    # session start ranks; None: every row (`learn.holdout.judged_relevance` judges on these)
    start_pool: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.memory_ids)

    @classmethod
    def from_inputs(
        cls,
        inputs: SessionInputs,
        labels: np.ndarray,
        baseline_rank: np.ndarray,
        *,
        confidence: float,
        continuity: float,
        rated: np.ndarray | None = None,
        start_pool: np.ndarray | None = None,
    ) -> SessionSample:
        """A sample of a session's candidates (already restricted to the labelled ones)."""
        if inputs.context is None:
            raise ValueError(f"session {inputs.session_key}: a sample needs a context")
        return cls(
            inputs.session_key,
            inputs.start,
            inputs.project,
            confidence,
            continuity,
            inputs.memory_ids.astype(object),
            *inputs.scorer_columns(),
            np.asarray(labels, dtype=np.float64),
            np.asarray(baseline_rank, dtype=np.int64),
            inputs.signals,
            None if rated is None else np.asarray(rated, dtype=np.float64),
            None if start_pool is None else np.asarray(start_pool, dtype=bool),
        )


@dataclass(frozen=True, slots=True)
class LabelSignals:
    """What one agent's sessions of a store record for labels, as the store reader returns it:
    `sessions` (session_scores), `candidates` (session_memories), `path_feedback`
    (path_feedback_events) and `recalls` (session_recall_events: memories recalled into a
    session after its start, not session start's own claims); `present` holds
    the tables and `table.column`s of `LABEL_SOURCES` the store has, so a source the store lacks
    is told from one it keeps empty. `hook`: what the session-start wrapper injected in the
    sessions it served (`store.hook_log.served_injections`), empty without its record;
    `prompted`: what the user-prompt-submit wrapper injected at the sessions' prompts
    (`store.hook_log.prompt_injections`: session_key, memory_id, rank), empty without it."""

    sessions: pl.DataFrame
    candidates: pl.DataFrame
    path_feedback: pl.DataFrame
    recalls: pl.DataFrame
    present: frozenset[str]
    hook: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(
            schema={"session_key": pl.String, "memory_id": pl.String, "signet_rank": pl.Int64}
        )
    )
    prompted: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(
            schema={"session_key": pl.String, "memory_id": pl.String, "rank": pl.Int64}
        )
    )


def store_workbench(con: sqlite3.Connection) -> Path | None:
    """The default workbench of the store `con` reads (`signet_scorer.workbench.default_workbench`),
    None for a store that is no file."""
    rows = con.execute("PRAGMA database_list").fetchall()
    path = next((r[2] for r in rows if r[1] == "main"), "")
    return default_workbench(Path(path)) if path else None


def read_label_signals(
    con: sqlite3.Connection,
    agent_id: str = DEFAULT_AGENT,
    *,
    workbench: str | Path | None = None,
    session_keys: Sequence[str] | None = None,
    columns: Collection[str] | None = None,
) -> LabelSignals:
    """The store's `LabelSignals` for `agent_id` (the only agent of a 0.58 store), with the
    session-start wrapper's record beside `workbench` (default: the store's,
    `store_workbench`); with `session_keys`, the candidates of those sessions only; with
    `columns`, only those of the candidates (`store.read.read_session_memories`)."""
    tables = store_tables(con).columns
    wanted = {where for _, where, _ in LABEL_SOURCES}
    have = set(tables) | {f"{t}.{c}" for t, cols in tables.items() for c in cols}
    wb = workbench if workbench is not None else store_workbench(con)
    keyed = "agent_id" in tables.get("session_memories", ())
    record = None if wb is None else hook_record(wb, agent_id if keyed else None)
    if record is not None and record.present:
        have.add(HOOK_LOG_FILE)
    signals = LabelSignals(
        read_sessions(con, agent_id=agent_id),
        read_session_memories(con, session_keys, agent_id=agent_id, columns=columns),
        read_path_feedback(con, agent_id=agent_id),
        read_recall_events(con, agent_id=agent_id).filter(
            pl.col("surface").ne_missing(SESSION_START_SURFACE)
        ),
        frozenset(wanted & have),
    )
    if record is None:
        return signals
    prompted = prompt_injections(record).select("session_key", "memory_id", "rank")
    return dataclasses.replace(signals, hook=served_injections(record), prompted=prompted)


def _sessions_with(frame: pl.DataFrame, keep: pl.Expr | None = None) -> tuple[int, int]:
    """(distinct sessions, rows) of the frame's rows that `keep` selects (all when None)."""
    rows = frame if keep is None else frame.filter(keep)
    return rows["session_key"].n_unique(), rows.height


def label_sources(signals: LabelSignals) -> pl.DataFrame:
    """Per label source (`LABEL_SOURCES`, in order): where the store keeps it, whether it has
    that table or column (`present`), and how many sessions and rows carry a value of it."""
    cand = signals.candidates
    counts = (
        _sessions_with(signals.sessions, pl.col("score").is_not_null()),
        _sessions_with(cand, pl.col("relevance_score").is_not_null()),
        _sessions_with(cand, pl.col("fts_hit_count") > 0),
        _sessions_with(cand, pl.col("agent_relevance_score").is_not_null()),
        _sessions_with(signals.path_feedback),
        _sessions_with(signals.recalls),
        _sessions_with(signals.hook),
    )
    rows = [
        (name, where, what, where in signals.present, n_sessions, n_rows)
        for (name, where, what), (n_sessions, n_rows) in zip(LABEL_SOURCES, counts, strict=True)
    ]
    return pl.DataFrame(rows, schema=LABEL_SOURCE_SCHEMA, orient="row")


def shown_candidates(
    candidates: pl.DataFrame, hook: pl.DataFrame, prompted: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The candidate rows with `was_injected` saying what was shown: in every session with
    candidate rows that the wrapper served (`hook`: `served_injections`), exactly the memories
    it injected; a memory it injected without a row of the session gets one (`HOOK_SOURCE`,
    after Signet's start pool in the order of Signet's answer, at the session's first row's
    time, no judge or agent rating). Other sessions keep Signet's rows as they are. Then what
    the sessions' prompts injected (`prompted`: `prompt_injections`) is shown too, whoever
    served the start: its rows are marked injected, and a memory without a row gets one
    (`PROMPT_SOURCE`, after the session's rows, in the prompts' order); session start's own
    choice is left as it was."""
    keys = ["session_key", "memory_id"]
    shown = hook.join(candidates.select("session_key").unique(), on="session_key", how="semi")
    marked = candidates
    if shown.height:
        served = pl.col("session_key").is_in(shown["session_key"].unique().to_list())
        flags = shown.select(*keys, pl.lit(True).alias("_shown"))
        as_shown = pl.when(served).then(pl.col("_shown").fill_null(False))
        marked = (
            candidates.join(flags, on=keys, how="left", maintain_order="left")
            .with_columns(as_shown.otherwise(pl.col("was_injected")).alias("was_injected"))
            .drop("_shown")
        )
        marked = _added_rows(marked, shown.sort("session_key", "signet_rank"), HOOK_SOURCE)
    if prompted is None or prompted.height == 0:
        return marked
    asked = prompted.join(marked.select("session_key").unique(), on="session_key", how="semi")
    if asked.height == 0:
        return marked
    flags = asked.select(*keys).unique().with_columns(pl.lit(True).alias("_asked"))
    marked = (
        marked.join(flags, on=keys, how="left", maintain_order="left")
        .with_columns(pl.col("was_injected") | pl.col("_asked").fill_null(False))
        .drop("_asked")
    )
    return _added_rows(marked, asked, PROMPT_SOURCE)


def _added_rows(candidates: pl.DataFrame, injected: pl.DataFrame, source: str) -> pl.DataFrame:
    """`candidates` with a row for each of the `injected` memories (in their order) that has
    none in its session: `source`, injected, ranked after the session's start pool (after its
    rows, for a prompt's), at the session's first row's time, no judge or agent rating."""
    keys = ["session_key", "memory_id"]
    extra = injected.join(candidates, on=keys, how="anti").unique(keys, maintain_order=True)
    if extra.height == 0:
        return candidates
    last = (
        pl.col("rank")
        if source == PROMPT_SOURCE
        else pl.col("rank").filter(pl.col("source") != "fts_only")
    )
    pools = candidates.group_by("session_key").agg(
        pl.col("created_at").min(), last.max().fill_null(-1).alias("last")
    )
    added = extra.join(pools, on="session_key", how="left", maintain_order="left").select(
        *keys,
        pl.lit(source).alias("source"),
        (pl.col("last") + pl.int_range(1, pl.len() + 1).over("session_key")).alias("rank"),
        pl.lit(True).alias("was_injected"),
        pl.lit(0).alias("fts_hit_count"),
        pl.lit(False).alias("is_constraint"),
        pl.lit(0).alias("agent_feedback_count"),
        "created_at",
    )
    kept = [c for c in added.columns if c in candidates.schema]  # as the rows were read
    added = added.select(pl.col(c).cast(candidates.schema[c]) for c in kept)
    order = ["created_at", "session_key", "rank", "memory_id"]
    return pl.concat([candidates, added], how="diagonal").sort(order, maintain_order=True)


def signals_frame(signals: LabelSignals) -> pl.DataFrame:
    """The candidates as shown (`shown_candidates`) with each row's in-session signals beside
    it: `recall_count` (recall events of the memory in that session), `path_reward` (the mean
    reward of its path feedback there, null without) and `agent_relevance_score` filled from
    the path feedback's mean rating where `session_memories` holds none (Signet writes both in
    one transaction)."""
    keys = ["session_key", "memory_id"]
    recalls = signals.recalls.group_by("session_key", pl.col("item_id").alias("memory_id")).agg(
        pl.len().cast(pl.Int64).alias("recall_count")
    )
    paths = signals.path_feedback.group_by(keys).agg(
        pl.col("reward").mean().alias("path_reward"), pl.col("rating").mean().alias("path_rating")
    )
    shown = shown_candidates(signals.candidates, signals.hook, signals.prompted)
    joined = shown.join(recalls, on=keys, how="left", maintain_order="left").join(
        paths, on=keys, how="left", maintain_order="left"
    )
    return joined.with_columns(
        pl.col("recall_count").fill_null(0),
        pl.coalesce("agent_relevance_score", "path_rating").alias("agent_relevance_score"),
    ).drop("path_rating")


@dataclass(frozen=True, slots=True, eq=False)
class CandidateRows:
    """A session's candidate rows as the sample reads them, one numpy column each (the
    conversions of `_columns`); `split` gives every session's from one conversion of the
    whole frame, so a load converts its columns once, not once a session."""

    memory_id: list[str]
    source: np.ndarray  # (n,) object
    rank: np.ndarray
    was_injected: np.ndarray  # (n,) bool
    relevance_score: np.ndarray  # (n,) float64, NaN unrated
    fts_hit_count: np.ndarray  # (n,) int64
    agent_relevance_score: np.ndarray  # (n,) float64, NaN unrated
    recall_count: np.ndarray | float  # (n,) float64, or 0 for every row (the loop's rows)
    path_reward: np.ndarray | float  # (n,) float64, or NaN for every row
    entity_slot: np.ndarray  # (n,) float64, -1 unrecorded
    aspect_slot: np.ndarray  # (n,) float64, -1 unrecorded
    structural_density: np.ndarray  # (n,) float64, 0 unrecorded
    is_constraint: np.ndarray  # (n,) bool

    @classmethod
    def of(cls, cand: pl.DataFrame) -> CandidateRows:
        """The rows of one session's frame, in its order."""
        return cls(*_columns(cand))

    @classmethod
    def split(cls, cands: pl.DataFrame) -> dict[str, CandidateRows]:
        """Every session's rows of `cands`, by session key, each in the frame's order."""
        keys = cands["session_key"].to_numpy()
        if keys.size == 0:
            return {}
        order = np.argsort(keys, kind="stable")
        cols = _columns(cands)
        cols[0] = np.asarray(cols[0], dtype=object)
        cols = [c if isinstance(c, float) else c[order] for c in cols]
        ordered = keys[order]
        edges = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
        bounds = np.concatenate(([0], edges, [ordered.size])).tolist()
        out: dict[str, CandidateRows] = {}
        for lo, hi in itertools.pairwise(bounds):
            part = [c if isinstance(c, float) else c[lo:hi] for c in cols]
            part[0] = part[0].tolist()
            out[str(ordered[lo])] = cls(*part)
        return out

    def take(self, keep: np.ndarray) -> CandidateRows:
        """The rows at positions `keep` (or where a boolean `keep` is True)."""
        idx = np.flatnonzero(keep) if np.asarray(keep).dtype == bool else np.asarray(keep)
        parts = [getattr(self, f.name) for f in dataclasses.fields(self)]
        ids = [self.memory_id[i] for i in idx.tolist()]
        rest = [c if isinstance(c, float) else c[idx] for c in parts[1:]]
        return CandidateRows(ids, *rest)


def _columns(cand: pl.DataFrame) -> list:
    """The numpy columns of `CandidateRows` (its field order) from a frame of candidate rows:
    each the same value row by row whichever rows the frame holds."""
    return [
        cand["memory_id"].to_list(),
        cand["source"].to_numpy().astype(object),
        cand["rank"].to_numpy(),
        cand["was_injected"].to_numpy().astype(bool),
        cand["relevance_score"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
        cand["fts_hit_count"].fill_null(0).to_numpy().astype(np.int64),
        cand["agent_relevance_score"].cast(pl.Float64).fill_null(np.nan).to_numpy(),
        _optional(cand, "recall_count", 0.0),
        _optional(cand, "path_reward", np.nan),
        cand["entity_slot"].cast(pl.Float64).fill_null(-1).to_numpy(),
        cand["aspect_slot"].cast(pl.Float64).fill_null(-1).to_numpy(),
        cand["structural_density"].cast(pl.Float64).fill_null(0).to_numpy(),
        cand["is_constraint"].fill_null(False).to_numpy().astype(bool),
    ]


def _optional(cand: pl.DataFrame, name: str, default: float) -> np.ndarray | float:
    """A candidate column the loop's own rows lack (`signals_frame` adds it): its values
    with nulls as `default`, or `default` for every row when the column is absent."""
    if name not in cand.columns:
        return default
    return cand[name].cast(pl.Float64).fill_null(default).to_numpy()


def sample_rng(seed: int, session_key: str) -> np.random.Generator:
    """The random stream of one session's sampled negatives."""
    return np.random.default_rng([seed, zlib.crc32(session_key.encode())])


def scored_sessions(sessions: pl.DataFrame, candidates: pl.DataFrame) -> pl.DataFrame:
    """One row per scored session with candidates: the latest `session_scores` row of the key
    (score not NULL) with `start` = its first candidate row's time, ordered by start, key."""
    starts = candidates.group_by("session_key").agg(pl.col("created_at").min().alias("start"))
    latest = (
        sessions.filter(pl.col("score").is_not_null())
        .sort(["created_at", "id"])
        .unique("session_key", keep="last", maintain_order=True)
    )
    return latest.join(starts, on="session_key", how="inner").sort(["start", "session_key"])


def _recorded_graph(rows: CandidateRows) -> GraphColumns:
    """The knowledge-graph columns the daemon recorded with a session's candidate rows."""
    return GraphColumns(
        entity_slot=rows.entity_slot,
        aspect_slot=rows.aspect_slot,
        structural_density=rows.structural_density,
        is_traversal=rows.source == "ka_traversal",
        is_constraint=rows.is_constraint,
    )


def session_graph(
    cand: pl.DataFrame | CandidateRows, structure: MemoryStructure | None = None
) -> GraphColumns:
    """The knowledge-graph columns of a session's candidate rows: the recorded ones when the
    rows carry any, else computed from `structure` (the store's graph, `session_structure`), as
    the session-start hook takes them (`signet_scorer.structure.session_columns`)."""
    rows = cand if isinstance(cand, CandidateRows) else CandidateRows.of(cand)
    return session_columns(_recorded_graph(rows), list(rows.memory_id), structure)


def session_structure(
    con: sqlite3.Connection,
    candidates: pl.DataFrame,
    agent_id: str = DEFAULT_AGENT,
    *,
    rows: dict[str, CandidateRows] | None = None,
) -> MemoryStructure:
    """The store's graph read once for the memories of every session whose candidate rows
    record no knowledge-graph columns (the ones `session_graph` computes); `rows`: the
    sessions' rows of `candidates` already split (`CandidateRows.split`)."""
    bare: set[str] = set()
    split = CandidateRows.split(candidates) if rows is None else rows
    for cand in split.values():
        if not recorded_structure(cand.entity_slot, cand.aspect_slot):
            bare.update(cand.memory_id)
    return read_structure(con, sorted(bare), agent_id=agent_id)


def label_input(
    corpus: Corpus,
    inputs: SessionInputs,
    cand: pl.DataFrame | CandidateRows,
    session: dict,
    end_s: float,
) -> SessionLabelInput:
    """The label function's input for a session's candidates (`cand` aligned with `inputs`)."""
    c = cand if isinstance(cand, CandidateRows) else CandidateRows.of(cand)
    rows = inputs.rows
    cos = inputs.embeddings @ inputs.context
    start_s = inputs.start.timestamp()
    return SessionLabelInput.build(
        inputs.memory_ids,
        c.was_injected,
        continuity_score=float(session["score"]),
        confidence=float(session["confidence"]),
        novel_context_count=int(session.get("novel_context_count") or 0),
        relevance_score=c.relevance_score,
        fts_hit_count=c.fts_hit_count,
        agent_relevance_score=c.agent_relevance_score,
        cosine_to_context=np.where(inputs.has_embedding, cos, 0.0),
        superseded=np.isfinite(corpus.superseded_at[rows]),
        deleted_at_hours_after_injection=(corpus.deleted_at[rows] - start_s) / 3600.0,
        access_count=corpus.access_count[rows].astype(np.int64),
        edited_recently=edited_recently([corpus.edited_at[r] for r in rows], end_s),
        recall_count=c.recall_count,
        path_reward=c.path_reward,
    )


@dataclass(frozen=True, slots=True)
class SampleRules:
    """How a session becomes a sample: the store's time zone, the predictor's configuration
    and the seed of the label sampler (`sample_rng`)."""

    tz: str = "UTC"
    cfg: PredictorConfig = DEFAULT_CONFIG
    seed: int = 0


@dataclass(frozen=True, slots=True)
class Selection:
    """Which sessions a load keeps: the newest `limit` trainable ones, of confidence at least
    `min_confidence` (None: the config's), reading only the newest `window` scored sessions
    (0: all); with `prompts`, also a sample per prompt the hook log recorded in them
    (`prompt_samples`: what the trainer learns from; the session-start analyses leave them
    out)."""

    limit: int = 5000
    min_confidence: float | None = None
    window: int = 0
    prompts: bool = False


def build_sample(
    corpus: Corpus,
    session: dict,
    cand: pl.DataFrame,
    previous: PreviousSession | None,
    rules: SampleRules,
    *,
    query: SessionQuery = NO_QUERY,
    structure: MemoryStructure | None = None,
) -> SessionSample | None:
    """One session's sample (None when no candidate of it is left, no context can be formed,
    or the labels are not trainable). `session` holds session_key, project, start, score,
    confidence, novel_context_count (and end: the score row's time; track_record: each
    candidate's track record before the start by memory id, `track_records`); `cand` its
    `session_memories` rows; `query` its session-start query (`daemon.session_query.start_query`);
    `structure` the store's graph for rows that record no knowledge-graph columns
    (`session_graph`; None: they have none)."""
    cand = _in_corpus(cand, corpus)
    if cand.height == 0:
        return None
    return _sample(corpus, session, CandidateRows.of(cand), previous, rules, query, structure)


def _in_corpus(cand: pl.DataFrame, corpus: Corpus, by: Sequence[str] = ()) -> pl.DataFrame:
    """The candidate rows of memories in the corpus, in the order a sample reads them (the
    start pool by rank, then the fts_only rows; memory id on ties), first by `by`."""
    cand = cand.filter(pl.col("memory_id").is_in(list(corpus.row_of)))
    return cand.sort([*by, pl.col("source").is_in(AFTER_START), "rank", "memory_id"])


def _sample(
    corpus: Corpus,
    session: dict,
    cand: CandidateRows,
    previous: PreviousSession | None,
    rules: SampleRules,
    query: SessionQuery,
    structure: MemoryStructure | None,
) -> SessionSample | None:
    """`build_sample` on a session's rows in the corpus, in order (`_in_corpus`)."""
    tz, cfg, seed = rules.tz, rules.cfg, rules.seed
    rows = corpus.rows(cand.memory_id)
    pool = ~np.isin(cand.source, AFTER_START)  # the start pool: the rows session start ranked
    baseline = rows[pool]
    ctx = session_context(
        corpus.embeddings,
        corpus.has_embedding,
        corpus.row_of,
        previous.used if previous else (),
        baseline,
        cfg,
    )
    if ctx.vector is None:
        return None
    start: datetime = session["start"]
    inputs = session_inputs(
        corpus,
        rows,
        session["session_key"],
        SessionInfo(start, tz, session.get("project"), previous.start if previous else None),
        ctx,
        cfg=cfg,
        query=query,
        # rows recorded after the start sort last: the first rows are the start pool
        origin=CandidateOrigin(
            signal_pool=len(baseline),
            graph=session_graph(cand, structure),
            track_record=track_values(session.get("track_record"), cand),
        ),
    )
    end = session.get("end") or start
    label_in = label_input(corpus, inputs, cand, session, end.timestamp())
    rng = sample_rng(seed, session["session_key"])
    return _labelled(label_in, inputs, cand.rank, session, cfg, rng, None if pool.all() else pool)


def _labelled(
    label_in: SessionLabelInput,
    inputs: SessionInputs,
    rank: np.ndarray,
    session: dict,
    cfg: PredictorConfig,
    rng: np.random.Generator,
    start_pool: np.ndarray | None = None,
) -> SessionSample | None:
    """The sample of `inputs` (`rank`: their baseline ranks) labelled by the label function
    (`seed_labels` of `label_in`): the candidates it includes; None when fewer than two are, or
    the session is not trainable. Session starts and prompts alike (`start_pool`: the rows of
    the ranked pool, None: every row)."""
    result = seed_labels(label_in, cfg, rng=rng)
    keep = np.asarray(result.include, dtype=bool)
    labels = np.asarray(result.labels, dtype=np.float64)
    if keep.sum() < 2 or not session_trainable(float(session["confidence"]), labels[keep], cfg):
        return None
    return SessionSample.from_inputs(
        inputs.take(keep),
        labels[keep],
        rank[keep],
        confidence=float(session["confidence"]),
        continuity=float(session["score"]),
        rated=ratings(label_in)[keep],
        start_pool=None if start_pool is None else start_pool[keep],
    )


def track_records(con: sqlite3.Connection, session: dict, cand: pl.DataFrame) -> dict[str, float]:
    """Each candidate's track record before the session's start, by memory id
    (`signet_scorer.track_record.read_track_record`: the hook's reader)."""
    ids = cand["memory_id"].unique(maintain_order=True).to_list()
    found = read_track_record(con, ids, session["start"])
    return dict(zip(ids, found.values.tolist(), strict=True))


def _track_records(
    con: sqlite3.Connection, sessions: Sequence[dict], rows: dict[str, CandidateRows]
) -> list[dict[str, float]]:
    """`track_records` of every session in `sessions` from one read of the store
    (`signet_scorer.track_record.read_track_records`: the same values, bit for bit)."""
    ids = [list(dict.fromkeys(rows[s["session_key"]].memory_id)) for s in sessions]
    found = read_track_records(con, [(i, s["start"]) for i, s in zip(ids, sessions, strict=True)])
    return [dict(zip(i, f.values.tolist(), strict=True)) for i, f in zip(ids, found, strict=True)]


def track_values(
    track: dict[str, float] | None, cand: pl.DataFrame | CandidateRows
) -> np.ndarray | None:
    """The track records of `cand`'s rows (None without them)."""
    if track is None:
        return None
    ids = cand.memory_id if isinstance(cand, CandidateRows) else cand["memory_id"].to_list()
    return np.array([track[m] for m in ids], dtype=np.float32)


@dataclass(frozen=True, slots=True)
class _Window:
    """The newest scored sessions a load assembles (`keys`), and every session whose
    candidates it reads: those, and the previous session of the same project of each (the
    memories that one used are the context)."""

    keys: frozenset[str]
    read: tuple[str, ...]


def _window(con: sqlite3.Connection, window: int) -> _Window | None:
    """The newest `window` scored sessions of the store (by start, as `scored_sessions` orders
    them); None when it has no more than that (every session is read, as without a window)."""
    scored = scored_sessions(read_sessions(con), read_session_starts(con))
    if scored.height <= window:
        return None
    previous = pl.col("session_key").shift(1).over("project")
    newest = scored.with_columns(previous.alias("previous")).tail(window)
    keys = frozenset(newest["session_key"].to_list())
    return _Window(keys, tuple(sorted(keys | set(newest["previous"].drop_nulls().to_list()))))


def load_samples(
    store: str | Path | sqlite3.Connection,
    *,
    tz: str = "UTC",
    cfg: PredictorConfig = DEFAULT_CONFIG,
    seed: int = 0,
    corpus: Corpus | None = None,
    workbench: str | Path | None = None,
    select: Selection = Selection(),
    progress: bool = False,
) -> tuple[list[SessionSample], int]:
    """All trainable sessions of a store, oldest first (the newest `limit`), and how many
    scored sessions were skipped, labelled from every signal the store keeps (`LabelSignals`)
    and what the session-start wrapper recorded beside `workbench` (default: the store's).
    `corpus`: the store's corpus when the caller holds it already (the session loop, whose
    memories do not change while it runs). `window` > 0: only the newest `window` scored
    sessions are read and assembled (and counted as skipped), so a training's time and memory
    do not grow with the store; each sample is the one a full load gives. `progress`: a bar
    of the sessions assembled."""
    limit, min_confidence, window = select.limit, select.min_confidence, select.window
    con = store if isinstance(store, sqlite3.Connection) else open_readonly(store)
    if workbench is None and not isinstance(store, sqlite3.Connection):
        workbench = default_workbench(Path(store))
    try:
        corpus = read_corpus(con) if corpus is None else corpus
        part = _window(con, window) if window > 0 else None
        keys = None if part is None else part.read
        signals = read_label_signals(
            con, workbench=workbench, session_keys=keys, columns=SAMPLE_COLUMNS
        )
        cands = signals_frame(signals)
        sessions = scored_sessions(signals.sessions, cands)
        jobs = StartQueries.read(con)
        # every session's columns from one conversion of the frame (not a frame per session)
        raw = CandidateRows.split(cands)
        structure = session_structure(con, cands, rows=raw)
        if sessions.height == 0:
            return [], 0
        threshold = cfg.min_scorer_confidence if min_confidence is None else min_confidence
        rows = sessions.rename({"created_at": "end"}).iter_rows(named=True)
        todo = [s for s in rows if part is None or s["session_key"] in part.keys]
        kept = [s for s in todo if s["confidence"] is not None and s["confidence"] >= threshold]
        bar = _bar(len(todo)) if progress else None
        for s, track in zip(kept, _track_records(con, kept, raw), strict=True):
            s["track_record"] = track
        previous = previous_sessions(sessions, cands)
        rules = SampleRules(tz, cfg, seed)
        prompted: list[SessionSample] = []
        if select.prompts:
            asked = prompt_rankings_of(con, workbench)
            prompted = prompt_samples(con, corpus, asked, (kept, raw, previous), rules)
    finally:
        if not isinstance(store, sqlite3.Connection):
            con.close()
    ordered = CandidateRows.split(_in_corpus(cands, corpus, by=["session_key"]))
    # the frames are dropped before the samples are built: the load's peak memory
    del signals, cands, raw
    out: list[SessionSample] = []
    skipped = 0
    for s in todo:
        # sessions outside the window are read only as the previous session of one in it
        conf = s["confidence"]
        sample = None
        cand = ordered.get(s["session_key"])
        if conf is not None and conf >= threshold and cand is not None:
            prev = previous[s["session_key"]]
            query = jobs.query(s.get("project"), s["start"])
            sample = _sample(corpus, s, cand, prev, rules, query, structure)
        if sample is None:
            skipped += 1
        else:
            out.append(sample)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    if prompted:  # the prompts' samples in time order among the sessions'
        out = sorted([*out, *prompted], key=lambda x: (x.start, x.session_key))
    return out[-limit:], skipped


def prompt_rankings_of(con: sqlite3.Connection, workbench: str | Path | None) -> pl.DataFrame:
    """The prompts' rankings the hook log beside `workbench` (default: the store's) recorded
    for the store's agent (`store.hook_log.prompt_rankings`); empty without them."""
    wb = workbench if workbench is not None else store_workbench(con)
    if wb is None:
        return pl.DataFrame(schema=PROMPT_RANKING_SCHEMA)
    keyed = "agent_id" in store_tables(con).columns.get("session_memories", ())
    return prompt_rankings(wb, hook_record(wb, DEFAULT_AGENT if keyed else None))


def later_hits(asked: pl.DataFrame) -> list[dict[str, int]]:
    """Per recorded prompt (in `asked`'s order), how many of its session's later prompts' own
    keyword searches found each memory: the FTS hits that follow it."""
    out: list[dict[str, int]] = [{} for _ in range(asked.height)]
    keys, hits = asked["session_key"].to_list(), asked["hits"].to_list()
    order = sorted(range(asked.height), key=lambda i: (keys[i], asked["invocation_id"][i]))
    for key, group in itertools.groupby(order, key=lambda i: keys[i]):
        del key
        seen: dict[str, int] = {}
        for i in reversed(list(group)):
            out[i] = dict(seen)
            for m in dict.fromkeys(hits[i] or ()):
                seen[m] = seen.get(m, 0) + 1
    return out


def _prompt_rows(pool: list[str], shown: set[str], hits: dict[str, int], had: CandidateRows | None):
    """A prompt's pool as candidate rows for the label function: injected where the prompt
    injected it, the later prompts' FTS hits, and the session's judge and agent ratings, recall
    events and path rewards of the memory (none where the session holds no row of it)."""
    n = len(pool)
    at = {m: i for i, m in enumerate(had.memory_id)} if had is not None else {}
    idx = np.array([at.get(m, -1) for m in pool], dtype=np.int64)
    found = idx >= 0

    def of(values: np.ndarray | float, missing: float) -> np.ndarray:
        col = np.full(n, missing, dtype=np.float64)
        if not isinstance(values, float):
            col[found] = np.asarray(values, dtype=np.float64)[idx[found]]
        elif found.any():
            col[found] = values
        return col

    none = np.full(n, np.nan)
    return CandidateRows(
        memory_id=list(pool),
        source=np.full(n, PROMPT_SOURCE, dtype=object),
        rank=np.arange(n, dtype=np.int64),
        was_injected=np.array([m in shown for m in pool], dtype=bool),
        relevance_score=none if had is None else of(had.relevance_score, np.nan),
        fts_hit_count=np.array([hits.get(m, 0) for m in pool], dtype=np.int64),
        agent_relevance_score=none if had is None else of(had.agent_relevance_score, np.nan),
        recall_count=0.0 if had is None else of(had.recall_count, 0.0),
        path_reward=np.nan if had is None else of(had.path_reward, np.nan),
        entity_slot=np.full(n, -1.0),
        aspect_slot=np.full(n, -1.0),
        structural_density=np.zeros(n),
        is_constraint=np.zeros(n, dtype=bool),
    )


def is_prompt_sample(sample: SessionSample) -> bool:
    """Whether `sample` is a prompt's ranking (`prompt_samples`), not a session start's."""
    return PROMPT_KEY_MARK in sample.session_key


def session_of(sample: SessionSample) -> str:
    """The key of the session `sample` belongs to (a prompt's, its session's)."""
    return sample.session_key.split(PROMPT_KEY_MARK, 1)[0]


def session_count(samples: Sequence[SessionSample]) -> int:
    """How many sessions `samples` come from: what the training's session thresholds count
    (a session's prompt samples are not sessions of their own)."""
    return len({session_of(s) for s in samples})


def prompt_samples(
    con: sqlite3.Connection,
    corpus: Corpus,
    asked: pl.DataFrame,
    sessions: tuple[Sequence[dict], dict[str, CandidateRows], dict[str, PreviousSession | None]],
    rules: SampleRules,
) -> list[SessionSample]:
    """A sample per recorded prompt (`prompt_rankings_of`) of the scored sessions given
    (`sessions`: their dicts as `load_samples` keeps them, their candidate rows as shown and
    each one's previous session): the prompt's pool (those in the corpus, in the pool's
    order) with the inputs its ranking saw (the recorded context, the prompt's query by
    `session_query.prompt_query`, the time of the prompt, the candidates' track records before
    the session), labelled by the same label function as a session's sample from what followed
    the prompt (`_prompt_rows`). Keyed `<session key>#prompt-<invocation id>`."""
    kept, rows, previous = sessions
    by_key = {s["session_key"]: s for s in kept}
    if asked.height == 0 or not by_key:
        return []
    later = later_hits(asked)
    picked = [
        (i, r)
        for i, r in enumerate(asked.iter_rows(named=True))
        if r["session_key"] in by_key and r["context"] is not None and r["at"] is not None
    ]
    pools = [[m for m in r["pool"] if m in corpus.row_of] for _, r in picked]
    tracks = read_track_records(
        con,
        [(p, by_key[r["session_key"]]["start"]) for p, (_, r) in zip(pools, picked, strict=True)],
    )
    out: list[SessionSample] = []
    for pool, (i, r), track in zip(pools, picked, tracks, strict=True):
        s = by_key[r["session_key"]]
        ctx = np.frombuffer(r["context"], dtype="<f4").astype(np.float32)
        if len(pool) < 2 or ctx.shape[0] != corpus.dim:
            continue
        prev = previous.get(s["session_key"])
        key = f"{s['session_key']}{PROMPT_KEY_MARK}{r['invocation_id']}"
        inputs = session_inputs(
            corpus,
            corpus.rows(pool),
            key,
            SessionInfo(r["at"], rules.tz, s.get("project"), prev.start if prev else None),
            SessionContextVector(ctx, PROMPT_CONTEXT_RULE),
            cfg=rules.cfg,
            query=prompt_query(r["prompt"]),
            origin=CandidateOrigin(store=con, track_record=track.values),
        )
        cand = _prompt_rows(pool, set(r["injected"]), later[i], rows.get(s["session_key"]))
        end = s.get("end") or s["start"]
        label_in = label_input(corpus, inputs, cand, {**s, "session_key": key}, end.timestamp())
        rng = sample_rng(rules.seed, key)
        sample = _labelled(label_in, inputs, cand.rank, s, rules.cfg, rng)
        if sample is not None:
            out.append(sample)
    return out


def _bar(total: int):  # the tqdm bar (its type loads with it)
    """A bar of the sessions a load assembles, below any bar already drawn."""
    # here: tqdm loads only when a bar is drawn (start-up time)
    from tqdm import tqdm

    return tqdm(total=total, desc="samples", unit="session", leave=False)
