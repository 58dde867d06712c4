"""Rank the store's memories for a user's prompt with the scorer: the prompt hook's ranking, in
the hook's own process or its resident scorer alike (`signet_scorer.hook.prompt`).

- **Candidates**, read-only, only memories Signet would show the agent
  (`signet_scorer.hook.access`), none the session already injected: the memories the daemon's
  recall returned for the prompt (`/api/memory/recall`, its hybrid of the prompt's embedding
  and keywords; the hook asks it), in its order, then the prompt's terms through FTS5
  (`memories_fts`, BM25 order; the terms are Signet's prompt query shape,
  `signet_scorer.terms.recall_terms`, the replayed loop's too), at most `POOL` in all. Without
  the daemon's recall the pool is lexical only; `context_rule` says which (`fts+recall` or
  `fts`).
- **Context**: the unit mean of the embeddings of the prompt's first 10 embedded matches, the
  session's injected ones included (the best matches of the prompt stand for it: the scorer
  has no embedder of its own; the context is the prompt's, not what is left of its pool).
- **Query**: the prompt's recall terms (the lexical signal) and its capitalised words (entities).
- **Features**: now, in the user's time zone; the knowledge-graph columns from the store's
  graph; each candidate's track record in the agent's judged sessions, as at session start.

Imports numpy and the serving modules; the scorer (onnxruntime) is given by the caller.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from signet_scorer.context import context_embedding
from signet_scorer.contract import CONTEXT_TOP
from signet_scorer.features import SessionInfo, candidate_features
from signet_scorer.hook.access import agent_scope, visible_clause
from signet_scorer.hook.config import hook_session_fields
from signet_scorer.hook.rank import HookSession, RankError, candidate_info, graph_columns
from signet_scorer.hook.store import read_embeddings, read_memories
from signet_scorer.query import ScoreQuery
from signet_scorer.signals import query_entities
from signet_scorer.terms import fts_match_expression, recall_terms
from signet_scorer.tokenize import project_slot
from signet_scorer.track_record import read_track_record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from signet_scorer.scorer import Scorer

__all__ = [
    "POOL",
    "PromptAsk",
    "PromptRanking",
    "prompt_ask",
    "prompt_candidates",
    "prompt_matches",
    "rank_prompt",
    "ranking_reply",
]

POOL = 100  # candidates scored at most (Signet's session-start candidatePoolLimit)
HITS = 10  # the prompt's keyword hits a ranking records (the later prompts' labels)


@dataclass(frozen=True, slots=True)
class PromptAsk:
    """One prompt to rank for: the session, the prompt, the memories the daemon's recall
    returned for it best first (None: recall was not reached), the memories the session already
    injected and how many to return at most."""

    session: HookSession
    prompt: str
    recalled: tuple[str, ...] | None
    exclude: frozenset[str]
    limit: int


@dataclass(frozen=True, slots=True)
class PromptRanking:
    """The memories to offer, best first (`ids`, `contents`, `created_at` as the store has it,
    the scorer's `scores`), their positions in the candidate pool before scoring (1-based:
    `pool_ranks`), the pool's size and the rule of its sources and context; what the ranking
    saw, for training on prompts (`signet_scorer.hook.log`'s `hook_prompts`): the pool in its
    order (`candidates`), the prompt's first `HITS` keyword hits and the context vector."""

    ids: tuple[str, ...]
    contents: tuple[str, ...]
    created_at: tuple[str, ...]
    scores: tuple[float, ...]
    pool_ranks: tuple[int, ...]
    pool: int
    context_rule: str
    candidates: tuple[str, ...] = ()
    hits: tuple[str, ...] = ()
    context: tuple[float, ...] = ()


def prompt_ask(request: dict[str, Any]) -> PromptAsk:
    """The prompt of a `prompt` request (`signet_scorer.hook.resident_link`): its `session`
    (`HookSession`'s fields, `now` in ISO 8601), `prompt`, `recalled` (a list or null),
    `exclude` and `limit`."""
    session = hook_session_fields(request["session"])
    session["now"] = datetime.fromisoformat(session["now"])
    recalled = request.get("recalled")
    return PromptAsk(
        session=HookSession(**session),
        prompt=str(request["prompt"]),
        recalled=None if recalled is None else tuple(str(m) for m in recalled),
        exclude=frozenset(str(m) for m in request.get("exclude") or ()),
        limit=int(request["limit"]),
    )


def ranking_reply(ranking: PromptRanking) -> dict[str, Any]:
    """A ranking as the `prompt` request's reply carries it (without `ok` and the version)."""
    rows = zip(
        ranking.ids,
        ranking.contents,
        ranking.created_at,
        ranking.scores,
        ranking.pool_ranks,
        strict=True,
    )
    return {
        "memories": [[m, c, t, float(s), int(r)] for m, c, t, s, r in rows],
        "pool": ranking.pool,
        "context_rule": ranking.context_rule,
        "candidates": list(ranking.candidates),
        "hits": list(ranking.hits),
        "context": list(ranking.context),
    }


def _fts(
    con: sqlite3.Connection, terms: Sequence[str], where: str, args: list[object]
) -> list[str]:
    """The visible memories matching any term, best BM25 first (none: no FTS table)."""
    match = fts_match_expression(terms)
    if match is None:
        return []
    sql = (
        "SELECT m.id FROM memories_fts f JOIN memories m ON m.rowid = f.rowid "
        f"WHERE memories_fts MATCH ? AND {where} ORDER BY f.rank LIMIT {POOL}"
    )
    try:
        return [str(r[0]) for r in con.execute(sql, [match, *args])]
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise


def _visible(
    con: sqlite3.Connection, ids: Sequence[str], where: str, args: list[object]
) -> set[str]:
    if not ids:
        return set()
    sql = f"SELECT m.id FROM memories m WHERE m.id IN ({','.join('?' * len(ids))}) AND {where}"
    return {str(r[0]) for r in con.execute(sql, [*ids, *args])}


def prompt_matches(con: sqlite3.Connection, ask: PromptAsk) -> list[str]:
    """The prompt's matches, best first: recalled memories, then FTS hits, only those the
    agent may be shown (the session's injected ones included)."""
    return _sources(con, ask)[0]


def _sources(con: sqlite3.Connection, ask: PromptAsk) -> tuple[list[str], list[str]]:
    """`prompt_matches` and the FTS hits among them, each best first."""
    where, args = visible_clause(con, agent_scope(con, ask.session.agent_id))
    recalled = list(dict.fromkeys(ask.recalled or ()))
    shown = _visible(con, recalled, where, args)
    hits = _fts(con, recall_terms(ask.prompt), where, args)
    return list(dict.fromkeys([*(m for m in recalled if m in shown), *hits])), hits


def prompt_candidates(con: sqlite3.Connection, ask: PromptAsk) -> list[str]:
    """The pool (module docstring): the prompt's matches the session has not injected, at
    most `POOL`."""
    return _pool(prompt_matches(con, ask), ask.exclude)


def _pool(matches: Sequence[str], exclude: frozenset[str]) -> list[str]:
    return [m for m in matches if m not in exclude][:POOL]


def _query(con: sqlite3.Connection, ask: PromptAsk, matches: list[str], dim: int, slots: int):
    """The score query of the pool (`matches` the session has not injected) and its
    context's rule."""
    session = ask.session
    ids = _pool(matches, ask.exclude)
    mem = read_memories(con, ids, session.project)
    vectors = read_embeddings(con, matches, dim)
    emb = [vectors.get(m) for m in ids]
    top = [vectors[m] for m in matches if m in vectors][:CONTEXT_TOP]
    ctx = context_embedding(np.zeros((0, dim)), np.array(top).reshape(-1, dim))
    if ctx.vector is None:
        raise RankError("no context: no memory the prompt matches is embedded")
    graph = graph_columns(con, ids, [], session.agent_id)
    track = read_track_record(con, ids, session.now, agent_id=session.agent_id)
    info = SessionInfo(session.now, session.tz, session.project or None, None)
    embedded = [v for v in emb if v is not None]
    query = ScoreQuery(
        context_embedding=ctx.vector,
        candidate_ids=ids,
        candidate_embeddings=np.stack(embedded) if len(embedded) == len(emb) else emb,
        candidate_texts=mem.contents,
        candidate_features=candidate_features(candidate_info(mem, emb, graph), info),
        project_slot=project_slot(session.project or None, slots),
        query_terms=recall_terms(ask.prompt),
        query_entities=query_entities(ask.prompt) or None,
        candidate_sources=None if all(s is None for s in mem.sources) else mem.sources,
        candidate_created_at=mem.created_at,
        candidate_track_record=track.values,
    )
    return query, ctx.rule


def rank_prompt(con: sqlite3.Connection, scorer: Scorer, ask: PromptAsk) -> PromptRanking:
    """The pool's memories the scorer ranks highest for the prompt, at most `ask.limit`, best
    first. Raises RankError (or a store error) when the prompt cannot be scored."""
    info = scorer.info
    if info is None:
        raise RankError(scorer.reason or "no model")
    if not ask.prompt:
        raise RankError("the prompt is empty")
    matches, hits = _sources(con, ask)
    ids = _pool(matches, ask.exclude)
    source = "fts+recall" if ask.recalled is not None else "fts"
    if not ids:
        raise RankError(f"no memory the agent may be shown matches the prompt ({source})")
    query, rule = _query(con, ask, matches, info.native_dim, info.project_slots)
    result = scorer.score(query)
    if result.scores is None:
        raise RankError(f"the scorer failed: {result.reason}")
    chosen = list(result.scores)[: ask.limit]
    position = {m: i for i, m in enumerate(ids)}
    rows = {
        r[0]: (str(r[1]), str(r[2]))
        for r in con.execute(
            f"SELECT id, content, created_at FROM memories WHERE id IN ({','.join('?' * len(chosen))})",
            [m for m, _ in chosen],
        )
    }
    return PromptRanking(
        ids=tuple(m for m, _ in chosen),
        contents=tuple(rows[m][0] for m, _ in chosen),
        created_at=tuple(rows[m][1] for m, _ in chosen),
        scores=tuple(float(s) for _, s in chosen),
        pool_ranks=tuple(position[m] + 1 for m, _ in chosen),
        pool=len(ids),
        context_rule=f"{source}; {rule}",
        candidates=tuple(ids),
        hits=tuple(hits[:HITS]),
        context=tuple(float(x) for x in query.context_embedding),
    )
