"""The session-context embedding: the one definition for pre-filter, training and serving.

At session start the daemon knows the project and the store, not yet the user's prompts.
Signet 0.58 built the context two ways (docs/specification.md §3.3: training took the mean of the
injected candidates' embeddings, inference the mean of the top-10 baseline candidates'). We use one:

    context = unit-length mean of the embeddings of the memories that the *previous scored
              session of the same project* used (its candidates with FTS hits, or rated > 0 by
              the agent); when there is no such session or none of its memories has an
              embedding, the unit mean of the embeddings of the first
              `context_fallback_top` (10) memories of the baseline order, those of them that
              have one (Signet's inference rule).

"Previous" is by session start (ties: session key), among sessions with a continuity score;
a session without a project follows the previous session without a project. It only looks
backwards (the previous session ended before this one starts), so replaying it from a store
gives exactly what the daemon had at session start. The session loop, the trainer's sample
assembly and the benchmarks all call these functions; the rule itself (`context_embedding`,
`mean_unit`) is defined once in `signet_scorer.context`, which the session-start hook also uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np
import polars as pl

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_scorer.context import SessionContextVector, context_embedding

__all__ = [
    "PreviousSession",
    "PreviousSessions",
    "previous_sessions",
    "session_context",
    "used_by_session",
    "used_memory_ids",
]


@dataclass(frozen=True, slots=True)
class PreviousSession:
    """The previous scored session of the same project: its key, start and used memories."""

    session_key: str
    start: datetime
    used: tuple[str, ...]


def _used() -> pl.Expr:
    """Whether a candidate row was used: an FTS hit or a positive agent rating."""
    return (pl.col("fts_hit_count").fill_null(0) > 0) | (
        pl.col("agent_relevance_score").fill_null(0) > 0
    )


def used_memory_ids(candidates: pl.DataFrame | None) -> tuple[str, ...]:
    """The memories a finished session used: candidates with an FTS hit or a positive agent
    rating (`session_memories` columns), in memory-id order."""
    if candidates is None or candidates.height == 0:
        return ()
    return tuple(sorted(candidates.filter(_used())["memory_id"].to_list()))


def used_by_session(candidates: pl.DataFrame) -> dict[str, tuple[str, ...]]:
    """`used_memory_ids` of every session of `candidates` (rows of many sessions) from one
    filter, by session key; a session that used none is absent."""
    used = candidates.filter(_used()).group_by("session_key").agg(pl.col("memory_id"))
    keys, ids = used["session_key"].to_list(), used["memory_id"].to_list()
    return {k: tuple(sorted(m)) for k, m in zip(keys, ids, strict=True)}


class PreviousSessions:
    """The latest scored session per project, fed sessions in start order: the loop records
    each session as it ends, the trainer replays a store's sessions through the same object."""

    def __init__(self) -> None:
        self._last: dict[str | None, PreviousSession] = {}

    def before(self, project: str | None) -> PreviousSession | None:
        """The previous session of `project` (None for its first session)."""
        return self._last.get(project)

    def record(
        self,
        session_key: str,
        project: str | None,
        start: datetime,
        candidates: pl.DataFrame | None,
    ) -> None:
        """A finished session with its `session_memories` rows."""
        self.record_used(session_key, project, start, used_memory_ids(candidates))

    def record_used(
        self, session_key: str, project: str | None, start: datetime, used: tuple[str, ...]
    ) -> None:
        """A finished session with the memories it used (`used_memory_ids`)."""
        self._last[project] = PreviousSession(session_key, start, used)


def previous_sessions(
    sessions: pl.DataFrame, candidates: Mapping[str, pl.DataFrame] | pl.DataFrame
) -> dict[str, PreviousSession | None]:
    """For every session (columns session_key, project, start), its previous scored session of
    the same project, with the memories that one used (from its `session_memories` rows:
    a frame per session key, or one frame of every session's rows)."""
    if isinstance(candidates, pl.DataFrame):
        used = used_by_session(candidates)
    else:
        used = {k: used_memory_ids(c) for k, c in candidates.items()}
    tracker = PreviousSessions()
    out: dict[str, PreviousSession | None] = {}
    for s in sessions.sort(["start", "session_key"]).iter_rows(named=True):
        key, project = s["session_key"], s["project"]
        out[key] = tracker.before(project)
        tracker.record_used(key, project, s["start"], used.get(key, ()))
    return out


def session_context(
    embeddings: np.ndarray,
    has_embedding: np.ndarray,
    row_of: dict[str, int],
    previous_used: Iterable[str],
    baseline_order: Sequence[int] | np.ndarray,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> SessionContextVector:
    """The context of a session over a corpus: `previous_used` are memory ids (those no longer
    in the corpus are ignored), `baseline_order` corpus rows in baseline order (best first)."""
    has = np.asarray(has_embedding, dtype=bool)
    prev = [row_of[m] for m in previous_used if m in row_of]
    prev = [r for r in prev if has[r]]
    top = np.asarray(baseline_order, dtype=np.int64)[: cfg.context_fallback_top]
    top = top[has[top]]
    return context_embedding(embeddings[prev], embeddings[top])
