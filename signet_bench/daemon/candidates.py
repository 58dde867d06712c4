"""One session's candidate set as every ranker sees it: the `SessionInputs` the session loop
scores, the trainer learns from and the benchmarks evaluate, built by one function.

`session_inputs` takes the corpus, the candidates' corpus rows in baseline order, the session
(start, time zone, project, previous session of the project), its context vector and its query
(`daemon.session_query`), and computes every per-candidate input: embeddings and the text path's
tokens, the 17 features (`signet_scorer.features`), the signals (`signet_scorer.signals`:
lexical, entity match and source neighbourhood, over the whole pool; the track record the
caller read, `signet_scorer.track_record`), the effective score at the session start and the
project slot.
The knowledge-graph columns (entity and aspect slot, constraint flag, structural density,
traversal: `signet_scorer.structure.GraphColumns`) are the caller's when they carry slots (the
trainer: the recorded rows, `signet_scorer.structure.session_columns`), else computed from the
store's graph when the caller gives the store (the simulated daemon at session start, with its
traversal flags), else none (every one of those features 0).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, fields
from datetime import datetime

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.ranking.baseline import age_days, effective_score
from signet_bench.daemon.session_query import NO_QUERY, SessionQuery
from signet_bench.store.corpus import Corpus
from signet_scorer.context import SessionContextVector
from signet_scorer.features import CandidateInfo, SessionInfo, candidate_features
from signet_scorer.signals import Origins, candidate_signals
from signet_scorer.structure import (
    GraphColumns,
    read_structure,
    recorded_structure,
    session_columns,
)
from signet_scorer.tokenize import project_slot

__all__ = [
    "CandidateOrigin",
    "SessionInputs",
    "candidate_info",
    "session_inputs",
]


@dataclass(frozen=True, eq=False)
class SessionInputs:
    """A session's candidates (arrays aligned, baseline order) and the session's own inputs."""

    session_key: str
    start: datetime  # aware
    tz: str
    project: str | None
    previous_start: datetime | None  # the previous session of the same project
    rows: np.ndarray  # (n,) int64 corpus rows
    memory_ids: np.ndarray  # (n,) str
    context: np.ndarray | None  # (D,) float32 unit vector
    context_rule: str
    embeddings: np.ndarray  # (n, D) float32, zero rows on the text path
    has_embedding: np.ndarray  # (n,) bool
    tokens: tuple[np.ndarray, ...]  # hash buckets per candidate (the text path)
    contents: tuple[str, ...]
    features: np.ndarray  # (n, 17) float32
    project_slot: int
    effective_score: np.ndarray  # (n,) float64 at the session start
    created_at: np.ndarray  # (n,) float64 epoch seconds
    importance: np.ndarray  # (n,) float64
    access_count: np.ndarray  # (n,) float64
    is_constraint: np.ndarray  # (n,) bool: a constraint this session must inject
    query: SessionQuery  # the keyword terms and names the signals were computed from
    sources: np.ndarray  # (n,) object: each memory's source session, None when unknown
    signals: np.ndarray  # (n, N_SIGNALS) float32 (`signet_scorer.signals`), computed over the pool
    graph: GraphColumns  # the knowledge-graph columns the features 12-16 were computed from

    def __len__(self) -> int:
        return len(self.memory_ids)

    def scorer_columns(
        self,
    ) -> tuple[np.ndarray | None, np.ndarray, np.ndarray, tuple[np.ndarray, ...], np.ndarray, int]:
        """The session's scorer inputs in `learn.model.scorer.SessionArrays`' order (context,
        embeddings, which have one, token buckets, features, project slot): the one place a
        session's candidates become the model's input, for a sample or a ranking."""
        return (
            self.context,
            self.embeddings,
            self.has_embedding,
            self.tokens,
            self.features,
            self.project_slot,
        )

    def take(self, idx: np.ndarray) -> SessionInputs:
        """The same session restricted to candidates `idx` (positions or a boolean mask)."""
        idx = np.flatnonzero(idx) if np.asarray(idx).dtype == bool else np.asarray(idx)
        n = len(self)
        kwargs = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray) and v.ndim >= 1 and len(v) == n and f.name != "context":
                v = v[idx]
            elif isinstance(v, tuple) and len(v) == n:
                v = tuple(v[i] for i in idx.tolist())
            elif isinstance(v, GraphColumns):
                v = v.take(idx)
            kwargs[f.name] = v
        return SessionInputs(**kwargs)


def candidate_info(
    corpus: Corpus, rows: np.ndarray, project: str | None, graph: GraphColumns | None = None
) -> CandidateInfo:
    """The feature inputs of the candidates at corpus `rows` for a session of `project`.

    A candidate's constraint flag is the corpus flag for constraints in the session's scope
    (its project or none: the ones the daemon forces in), or the flag of the `graph` columns
    (its primary attribute is a constraint, or the daemon recorded it as one)."""
    cons = corpus.is_constraint[rows] & corpus.in_scope(project)[rows]
    if graph is not None:
        cons = cons | np.asarray(graph.is_constraint, dtype=bool)
    return CandidateInfo(
        created_at=corpus.created_at[rows],
        importance=corpus.importance[rows],
        access_count=corpus.access_count[rows],
        has_embedding=corpus.has_embedding[rows],
        superseded_at=corpus.superseded_at[rows],
        entity_slot=None if graph is None else graph.entity_slot,
        aspect_slot=None if graph is None else graph.aspect_slot,
        is_constraint=cons,
        structural_density=None if graph is None else graph.structural_density,
        is_traversal=None if graph is None else graph.is_traversal,
    )


def _signals(
    corpus: Corpus,
    rows: np.ndarray,
    contents: Sequence[str],
    sources: Sequence[str | None],
    context: np.ndarray | None,
    query: SessionQuery,
    track_record: np.ndarray | None,
) -> np.ndarray:
    """The candidates' signals over the pool `rows` (`signet_scorer.signals.candidate_signals`)."""
    return candidate_signals(
        query_terms=query.terms,
        query_entities=query.entities,
        candidate_texts=contents,
        context=context,
        embeddings=corpus.embeddings[rows],
        has_embedding=corpus.has_embedding[rows],
        origins=Origins(
            None if all(x is None for x in sources) else list(sources), corpus.created_at[rows]
        ),
        track_record=track_record,
    )


def _graph(
    corpus: Corpus,
    rows: np.ndarray,
    graph: GraphColumns | None,
    store: sqlite3.Connection | None,
    traversal: np.ndarray | None,
) -> GraphColumns:
    """The candidates' knowledge-graph columns (`session_inputs`): `graph` (or none with the
    `traversal` flags), and with a `store` the slots and density computed from its graph where
    `graph` carries no slot, by the rule the trainer applies to recorded rows."""
    if graph is not None and traversal is not None:
        raise ValueError("give the traversal flags in `graph` or as `traversal`, not both")
    base = GraphColumns.none(len(rows), traversal) if graph is None else graph
    if len(base) != len(rows):
        raise ValueError(f"graph columns for {len(base)} candidates, {len(rows)} rows")
    if store is None or recorded_structure(base.entity_slot, base.aspect_slot):
        return base
    ids = corpus.ids[rows].tolist()
    return session_columns(base, ids, read_structure(store, ids))


@dataclass(frozen=True, slots=True)
class CandidateOrigin:
    """Where a session's candidates came from, as their inputs need it: the session-start pool
    they were scored in (its first `signal_pool` rows; None: every row), their knowledge-graph
    columns (`graph`) or only their `traversal` flags, the `store` whose graph gives the
    slots the columns lack (`session_inputs`), and their `track_record` before the session
    (`signet_scorer.track_record.read_track_record`, one per row; None: the signal is 0)."""

    signal_pool: int | None = None
    graph: GraphColumns | None = None
    traversal: np.ndarray | None = None
    store: sqlite3.Connection | None = None
    track_record: np.ndarray | None = None


def session_inputs(
    corpus: Corpus,
    rows: np.ndarray,
    session_key: str,
    session: SessionInfo,
    context: SessionContextVector,
    *,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    query: SessionQuery = NO_QUERY,
    origin: CandidateOrigin = CandidateOrigin(),
) -> SessionInputs:
    """Every per-candidate input of a session's candidates at corpus `rows` (baseline order);
    `session` is what the daemon knows of it (`previous_project_start`: the previous session
    of its project), `context` its context vector and rule; `query` feeds the lexical and
    entity signals (none: both 0). The signals of a candidate depend on the pool it is scored
    with (BM25's IDF and maximum, the source neighbours): with `origin.signal_pool` k, the
    first k rows are the session-start pool and their signals are computed over those k
    alone, exactly as session start scored them; the rows after them (candidates recorded
    later, e.g. prompt recalls) over every row.
    Knowledge-graph columns: `origin.graph` when given, else none but the `origin.traversal`
    flags (one bool per row: the candidate came from graph traversal). With `origin.store` (a
    connection to the corpus's store) and no slot in them, the slots, density and constraint
    flag are computed from its graph (`signet_scorer.structure`), keeping the given traversal
    and constraint flags: the simulated daemon passes its connection and its traversal flags
    (or `graph` columns of flags), and records the slots and density it got
    (`SessionInputs.graph`) with the candidates, as Signet does."""
    start, tz, project = session.start, session.tz, session.project
    previous_start = session.previous_project_start
    context_rule, signal_pool = context.rule, origin.signal_pool
    rows = np.asarray(rows, dtype=np.int64)
    graph = _graph(corpus, rows, origin.graph, origin.store, origin.traversal)
    info = candidate_info(corpus, rows, project, graph)
    age = age_days(corpus.created_at[rows], start.timestamp())
    at = rows.tolist()  # Python ints: indexing lists by them is several times faster
    contents = tuple(corpus.contents[r] for r in at)
    sources = corpus.sources(rows)
    vector = context.vector
    track = origin.track_record
    if track is not None and len(track) != len(rows):
        raise ValueError(f"track records for {len(track)} candidates, {len(rows)} rows")
    signals = _signals(corpus, rows, contents, sources, vector, query, track)
    if signal_pool is not None and signal_pool < len(rows):
        k = signal_pool
        part = None if track is None else track[:k]
        signals[:k] = _signals(corpus, rows[:k], contents[:k], sources[:k], vector, query, part)
    return SessionInputs(
        session_key=session_key,
        start=start,
        tz=tz,
        memory_ids=np.asarray(corpus.ids[rows]).astype(str),
        project=project,
        project_slot=project_slot(project, cfg.project_slots),
        previous_start=previous_start,
        rows=rows,
        features=candidate_features(info, session),
        context=vector,
        context_rule=context_rule,
        embeddings=corpus.embeddings[rows],
        has_embedding=corpus.has_embedding[rows],
        tokens=tuple(corpus.tokens(r) for r in at),
        contents=contents,
        effective_score=effective_score(corpus.importance[rows], age, corpus.pinned[rows], cfg),
        created_at=info.created_at,
        importance=info.importance,
        access_count=info.access_count,
        is_constraint=np.asarray(info.is_constraint, dtype=bool),
        query=query,
        sources=sources,
        signals=signals,
        graph=graph,
    )
