"""Re-rank a session start's memories with the scorer, from the store, as the trainer saw its
sessions: the same pool, context, features, query terms and signals (`signet_scorer.features`,
`signet_scorer.context`, `signet_scorer.signals`), computed from what the store holds now.

- **Pool**: the candidates the daemon recorded for this session (`session_memories`, in the
  trainer's order), plus any memory of Signet's answer not among them; without recorded rows
  (no session key, or a store whose daemon records none) the answer's memories in its order.
  The softmax runs over the whole pool; the memories injected are chosen among the answer's,
  the ones Signet's token budget already admitted.
- **Context**: the unit mean of the embeddings of the memories the previous scored session of
  the project used, else of the first 10 memories of the pool's order that have an embedding.
- **Features**: the session starts now, in the user's time zone; the gap is since the previous
  session's start; the knowledge-graph columns are the recorded rows' when any carries one,
  else computed from the store's graph now (`signet_scorer.structure.session_columns`, the trainer's
  rule too).
- **Query**: Signet 0.58's predicted-context terms of the project's last transcripts.
- **Track record**: each candidate's record in the agent's sessions judged before now, shrunk
  toward the user's mean (`signet_scorer.track_record`, the trainer's reader).

What does not depend on Signet's answer (the previous session, the embeddings of the memories
it used, the query terms, the memories' history of use: its `SessionBasis`) can be read while Signet works; the pool cannot,
since the daemon records this session's candidates while it answers.

Imports numpy and the serving modules; the scorer (onnxruntime) is given by the caller.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import numpy as np

from signet_scorer.context import context_embedding
from signet_scorer.contract import CONTEXT_TOP
from signet_scorer.features import CandidateInfo, SessionInfo, candidate_features
from signet_scorer.hook.store import (
    PoolRow,
    StoreMemories,
    previous_session,
    read_embeddings,
    read_memories,
    recorded_pool,
    used_memories,
)
from signet_scorer.query import ScoreQuery
from signet_scorer.signals import store_start_terms
from signet_scorer.structure import (
    GraphColumns,
    read_structure,
    recorded_structure,
    session_columns,
)
from signet_scorer.tokenize import project_slot
from signet_scorer.track_record import TrackHistory, read_track_history, read_track_record

if TYPE_CHECKING:
    from signet_scorer.scorer import Scorer

__all__ = [
    "HookSession",
    "RankError",
    "Ranking",
    "SessionBasis",
    "candidate_info",
    "graph_columns",
    "rerank",
    "session_basis",
    "session_query",
]


class RankError(RuntimeError):
    """The session cannot be scored; the message says why (the hook then keeps Signet's)."""


@dataclass(frozen=True, slots=True)
class HookSession:
    """The session starting: when, where and whose."""

    now: datetime  # aware
    tz: str  # the user's IANA time zone
    project: str | None
    session_key: str
    agent_id: str


@dataclass(frozen=True, slots=True)
class Ranking:
    """The answer's memories to inject, best first: their positions in the answer and their
    probabilities over the pool; how many candidates were scored and the context's rule."""

    order: tuple[int, ...]
    scores: tuple[float, ...]
    pool: int
    context_rule: str


@dataclass(frozen=True, slots=True, eq=False)
class SessionBasis:
    """What the ranking reads of a session start before Signet's answer: the previous scored
    session of the project (its start, the memories it used and their embeddings of `dim`
    values), the session-start query terms and the memories' history of use."""

    prev_start: float | None  # epoch seconds
    used: tuple[str, ...]
    used_vectors: dict[str, np.ndarray]
    terms: list[str]
    dim: int
    track: TrackHistory  # the memories' history before the start (`signet_scorer.track_record`)


def session_basis(con: sqlite3.Connection, session: HookSession, dim: int) -> SessionBasis:
    """The session start's basis (module docstring), from the store as it is now."""
    project = session.project or None
    prev = previous_session(con, project, session.session_key)
    used = used_memories(con, prev[0]) if prev else []
    return SessionBasis(
        prev_start=None if prev is None else prev[1],
        used=tuple(used),
        used_vectors=read_embeddings(con, used, dim),
        terms=store_start_terms(con, project, session.now),
        dim=dim,
        track=read_track_history(con, session.now, session.agent_id),
    )


def _pool(recorded: Sequence[PoolRow], answer_ids: Sequence[str]) -> list[str]:
    """The recorded candidates in their order, then the answer's memories not among them."""
    ids = list(dict.fromkeys(r.memory_id for r in recorded))
    seen = set(ids)
    return ids + [m for m in answer_ids if m not in seen]


def graph_columns(
    con: sqlite3.Connection, ids: Sequence[str], recorded: Sequence[PoolRow], agent_id: str
) -> GraphColumns:
    """The knowledge-graph columns of `ids`: the recorded rows' when any carries a slot (a
    memory without a row: none), else computed from the store's graph for `agent_id`."""
    by_id = {r.memory_id: r for r in recorded}
    none = PoolRow("", "", -1.0, -1.0, 0.0, False)
    rows = [by_id.get(m, none) for m in ids]
    rec = GraphColumns(
        entity_slot=np.array([r.entity_slot for r in rows], dtype=np.float64),
        aspect_slot=np.array([r.aspect_slot for r in rows], dtype=np.float64),
        structural_density=np.array([r.structural_density for r in rows], dtype=np.float64),
        is_traversal=np.array([r.source == "ka_traversal" for r in rows], dtype=bool),
        is_constraint=np.array([r.is_constraint for r in rows], dtype=bool),
    )
    if recorded_structure(rec.entity_slot, rec.aspect_slot):
        return rec
    return session_columns(rec, ids, read_structure(con, ids, agent_id=agent_id))


def candidate_info(
    mem: StoreMemories, emb: Sequence[np.ndarray | None], graph: GraphColumns
) -> CandidateInfo:
    """The feature inputs of a pool: its store rows, which have an embedding, its graph."""
    return CandidateInfo(
        created_at=mem.created_at,
        importance=mem.importance,
        access_count=mem.access_count,
        has_embedding=np.array([v is not None for v in emb], dtype=bool),
        superseded_at=np.where(mem.superseded, 0.0, np.nan),  # recorded by now: before start
        entity_slot=graph.entity_slot,
        aspect_slot=graph.aspect_slot,
        is_constraint=mem.is_constraint | graph.is_constraint,
        structural_density=graph.structural_density,
        is_traversal=graph.is_traversal,
    )


def session_query(
    con: sqlite3.Connection,
    session: HookSession,
    answer_ids: Sequence[str],
    *,
    dim: int,
    slots: int,
    basis: SessionBasis | None = None,
) -> tuple[ScoreQuery, str]:
    """The score query of the session's pool (module docstring) and the context's rule;
    `basis`: the session's basis read before (None: read now)."""
    project = session.project or None
    recorded = recorded_pool(con, session.session_key, session.agent_id)
    ids = _pool(recorded, answer_ids)
    mem = read_memories(con, ids, project)
    if basis is None or basis.dim != dim:
        basis = session_basis(con, session, dim)
    vectors = read_embeddings(con, ids, dim)
    emb = [vectors.get(m) for m in ids]
    top = [v for v in emb[:CONTEXT_TOP] if v is not None]
    used = [basis.used_vectors[m] for m in basis.used if m in basis.used_vectors]
    ctx = context_embedding(np.array(used).reshape(-1, dim), np.array(top).reshape(-1, dim))
    if ctx.vector is None:
        raise RankError("no context: no memory of the pool or the previous session is embedded")
    graph = graph_columns(con, ids, recorded, session.agent_id)
    track = read_track_record(con, ids, session.now, agent_id=session.agent_id, history=basis.track)
    info = candidate_info(mem, emb, graph)
    vectors = [v for v in emb if v is not None]
    prev_start = None if basis.prev_start is None else datetime.fromtimestamp(basis.prev_start, UTC)
    feats = candidate_features(info, SessionInfo(session.now, session.tz, project, prev_start))
    query = ScoreQuery(
        context_embedding=ctx.vector,
        candidate_ids=ids,
        candidate_embeddings=np.stack(vectors) if len(vectors) == len(emb) else emb,
        candidate_texts=mem.contents,
        candidate_features=feats,
        project_slot=project_slot(project, slots),
        query_terms=basis.terms,
        candidate_sources=None if all(s is None for s in mem.sources) else mem.sources,
        candidate_track_record=track.values,
    )
    return query, ctx.rule


def rerank(
    con: sqlite3.Connection,
    scorer: Scorer,
    session: HookSession,
    answer_ids: Sequence[str],
    limit: int,
    basis: SessionBasis | None = None,
) -> Ranking:
    """The answer's memories the scorer ranks highest over the session's pool, at most
    `limit`, best first (ties: memory id), from the session's `basis` when it was read before.
    Raises RankError (or a store error) when the session cannot be scored."""
    info = scorer.info
    if info is None:
        raise RankError(scorer.reason or "no model")
    if len(set(answer_ids)) != len(answer_ids):
        raise RankError("Signet's answer lists a memory twice")
    query, rule = session_query(
        con, session, answer_ids, dim=info.native_dim, slots=info.project_slots, basis=basis
    )
    result = scorer.score(query)
    if result.scores is None:
        raise RankError(f"the scorer failed: {result.reason}")
    position = {m: i for i, m in enumerate(answer_ids)}
    chosen = [(position[m], s) for m, s in result.scores if m in position][:limit]
    return Ranking(
        order=tuple(i for i, _ in chosen),
        scores=tuple(s for _, s in chosen),
        pool=len(query.candidate_ids),
        context_rule=rule,
    )
