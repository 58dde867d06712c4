"""Our session start, as a pure function: pre-filter -> baseline -> predictor scores (optional)
-> RRF(alpha) -> topic diversity -> selection (superseded out, budget and/or top-k,
constraints kept; see select.py) -> exploration. Every ordering breaks ties by (score desc,
memory id asc).

It returns every per-candidate number the loop records in session_memories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.context import SessionContextVector, session_context
from signet_bench.daemon.ranking.baseline import (
    age_days,
    decayed_importance,
    effective_score,
    rank_order,
    top_k_indices,
)
from signet_bench.daemon.ranking.diversity import topic_diversity
from signet_bench.daemon.ranking.exploration import ExplorationResult, maybe_explore
from signet_bench.daemon.ranking.fusion import Fused, fuse
from signet_bench.daemon.ranking.prefilter import (
    cosine_to,
    eligible_mask,
    prefilter,
    similarity_pool,
)
from signet_bench.daemon.ranking.select import content_lengths, select_injected
from signet_bench.store.corpus import Corpus

__all__ = ["Predictor", "SessionStartResult", "ranked_result", "session_start"]

Predictor = Callable[[np.ndarray, SessionContextVector], "np.ndarray | None"]
"""`predictor(candidate_rows, context) -> scores`: `candidate_rows` index the corpus (in
baseline order); the scores align with them (NaN = not scored), or None when the predictor is
offline. It should fail open (return None) rather than raise."""


@dataclass(frozen=True, slots=True)
class SessionStartResult:
    """Per-candidate arrays in baseline order (position i has baseline rank i), plus the run's
    scalars. `final_score` is what session_memories.final_score records.

    Rank bases, as session_memories records them: `rank` is 0-based (Signet records the
    baseline order as 0..N−1); `predictor_rank` is 1-based, −1 (NULL in the table) when not
    scored. RRF takes 1-based ranks on both sides: the baseline term uses `rank + 1`, and a
    missing predictor rank counts as N + 1, N = this session start's candidates (the rows
    whose source is not 'fts_only'). The recorded rows replay the selection: fused = alpha/(k +
    rank + 1) + (1 − alpha)/(k + predictor_rank) (1/(k + rank + 1) without a predictor), topic
    diversity gives `final_score`, then final_score desc / memory id asc, superseded rows out,
    the greedy budget, the remaining constraints, and the exploration swap."""

    index: np.ndarray  # row of each candidate in the corpus arrays
    memory_id: np.ndarray
    rank: np.ndarray  # 0-based baseline rank
    effective_score: np.ndarray
    predictor_score: np.ndarray  # NaN when not scored
    predictor_rank: np.ndarray  # 1-based; -1 when not scored
    fused_score: np.ndarray  # RRF (or 1/(k+i+1) without a predictor), before diversity
    final_score: np.ndarray  # after topic diversity
    overlap_count: np.ndarray  # topic-diversity overlaps (0 = not attenuated)
    is_constraint: np.ndarray
    was_injected: np.ndarray
    source: np.ndarray  # 'effective' | 'exploration'
    final_order: np.ndarray  # candidate positions by final score desc, id asc
    injected_order: np.ndarray  # injected candidate positions, in final order
    predictor_used: bool
    alpha: float  # the baseline weight actually used (1.0 without a predictor)
    context_vector: SessionContextVector  # the session context and the rule that made it
    corpus_size: int  # live memories considered
    explored_id: str | None = None
    displaced_id: str | None = None
    window_size: int | None = None  # Signet 0.58's pool: rows in its created_at DESC window
    kept_size: int | None = None  # ... and those passing effScore > 0.2 or pinned

    @property
    def context(self) -> np.ndarray | None:
        """The context vector (None when no memory has an embedding)."""
        return self.context_vector.vector

    @property
    def context_rule(self) -> str:
        """'previous-session', 'baseline-top10' or 'none' (see context.py)."""
        return self.context_vector.rule

    @property
    def injected_ids(self) -> list[str]:
        """Injected memory ids, best first."""
        return [str(x) for x in self.memory_id[self.injected_order]]

    @property
    def diversity_adjusted(self) -> int:
        """How many candidates topic diversity attenuated (the dashboard's count)."""
        return int((self.overlap_count > 0).sum())


@dataclass(frozen=True, slots=True)
class _Pool:
    """The pre-filtered candidates (corpus rows, baseline order) and the session's context."""

    cand: np.ndarray
    context: SessionContextVector


def _candidate_pool(
    corpus: Corpus,
    eff: np.ndarray,
    dec: np.ndarray,
    cons: np.ndarray,
    absent: np.ndarray,
    previous_used: Iterable[str],
    cfg: PredictorConfig,
) -> _Pool:
    """The session context (`context.session_context` over the eligible memories' baseline
    order) and the pre-filter over the live corpus."""
    ids, has, pin = corpus.ids, corpus.has_embedding, corpus.pinned
    eligible = eligible_mask(dec, pinned=pin, is_constraint=cons, excluded=absent, cfg=cfg)
    idx = np.flatnonzero(eligible)
    top = idx[top_k_indices(eff[idx], ids[idx], cfg.context_fallback_top)]
    context = session_context(corpus.embeddings, has, corpus.row_of, previous_used, top, cfg)
    sims = None
    if context.vector is not None:
        pool = similarity_pool(eff, ids, eligible, cfg)
        pool = pool[has[pool]]
        sims = np.full(len(ids), np.nan)
        sims[pool] = cosine_to(context.vector, np.asarray(corpus.embeddings[pool]))
    cand = prefilter(
        eff, sims, ids, is_constraint=cons, importance_decayed=dec, pinned=pin,
        excluded=absent, cfg=cfg,
    )  # fmt: skip
    return _Pool(cand, context)


def _predict(
    cand: np.ndarray, context: SessionContextVector, predictor: Predictor | None
) -> np.ndarray:
    """Predictor scores aligned with `cand`; NaN where not scored or the predictor is offline."""
    n = len(cand)
    pred = np.full(n, np.nan)
    if predictor is not None and context.vector is not None and n:
        out = predictor(cand, context)
        if out is not None:
            pred = np.asarray(out, dtype=np.float64).reshape(n)
    return np.where(np.isfinite(pred), pred, np.nan)


def _explore(
    injected: np.ndarray,
    final: np.ndarray,
    fz: Fused,
    ids: np.ndarray,
    cons: np.ndarray,
    stale: np.ndarray,
    rng: np.random.Generator | None,
    cold_start_exited: bool,
    cfg: PredictorConfig,
) -> tuple[ExplorationResult, np.ndarray]:
    """The exploration swap (none without an `rng`) and each candidate's recorded source."""
    n = len(injected)
    source = np.full(n, "effective", dtype=object)
    if rng is None:
        return ExplorationResult(injected), source
    ex = maybe_explore(
        injected, final, np.arange(1, n + 1), fz.prank, ids, rng, predictor_used=fz.used,
        cold_start_exited=cold_start_exited, protected=cons, excluded=stale, cfg=cfg,
    )  # fmt: skip
    if ex.explored_index is not None:
        source[ex.explored_index] = "exploration"
    return ex, source


def session_start(
    corpus: Corpus,
    now_epoch: float,
    *,
    project: str | None = None,
    previous_used: Iterable[str] = (),
    predictor: Predictor | None = None,
    alpha: float = 1.0,
    cold_start_exited: bool = False,
    rng: np.random.Generator | None = None,
    budget_chars: int | None = None,
    use_budget: bool = True,
    top_k: int | None = None,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> SessionStartResult:
    """Rank and select the memories of `corpus` to inject at a session start of `project`.

    Memories soft-deleted or not yet created at `now_epoch` never become candidates; the
    constraints of the project's scope (its own and the project-less ones) are always kept.
    The context is `context.session_context` of `previous_used` (the ids the previous session
    of the project used) with the top-10 baseline fallback; the predictor runs only with a
    context. `alpha` is the caller's effective baseline weight (1.0 during cold start).
    Selection (select.py): memories superseded by `now_epoch` stay candidates but are never
    injected; the greedy budget (`budget_chars`, default the config's 2,000;
    `use_budget=False` to skip), then the first `top_k` if given, then every constraint.
    Exploration runs only with an `rng`, a used predictor and `cold_start_exited`; it never
    displaces a constraint nor explores a superseded row in."""
    ids, has = corpus.ids, corpus.has_embedding
    cons_all = corpus.is_constraint & corpus.in_scope(project)
    age = age_days(corpus.created_at, now_epoch)
    dec = decayed_importance(corpus.importance, age, cfg)
    eff = effective_score(corpus.importance, age, corpus.pinned, cfg)
    absent = corpus.absent_at(now_epoch)
    pool = _candidate_pool(corpus, eff, dec, cons_all, absent, previous_used, cfg)
    cand = pool.cand
    n = len(cand)
    c_ids, cons = ids[cand].astype(str), cons_all[cand]
    stale = corpus.superseded_by(now_epoch)[cand]
    pred = _predict(cand, pool.context, predictor)
    fz = fuse(pred, c_ids, alpha, cfg)
    final, overlaps = topic_diversity(fz.fused, c_ids, corpus.embeddings[cand], has[cand], cfg)
    final_order = rank_order(final, c_ids)

    lengths = content_lengths([corpus.contents[i] for i in cand]) if n else np.zeros(0, np.int64)
    budget = cfg.injection_budget_chars if budget_chars is None else budget_chars
    selected = select_injected(
        final_order, lengths, cons, is_superseded=stale,
        budget_chars=budget if use_budget else None, top_k=top_k,
    )  # fmt: skip
    ex, source = _explore(
        np.isin(np.arange(n), selected), final, fz, c_ids, cons, stale, rng, cold_start_exited, cfg
    )
    mask = ex.injected

    return ranked_result(
        cand, c_ids, eff[cand], pred, fz.prank, fz.fused, final, overlaps, mask, final_order,
        is_constraint=cons, source=source, predictor_used=fz.used, alpha=fz.alpha,
        context_vector=pool.context, corpus_size=int((~absent).sum()),
        explored_id=ex.explored_id, displaced_id=ex.displaced_id,
    )  # fmt: skip


def ranked_result(
    cand: np.ndarray,
    ids: np.ndarray,
    effective: np.ndarray,
    predictor: np.ndarray,
    predictor_rank: np.ndarray,
    fused: np.ndarray,
    final: np.ndarray,
    overlaps: np.ndarray,
    injected: np.ndarray,
    final_order: np.ndarray,
    **session: object,
) -> SessionStartResult:
    """A session start's result from its ranking steps, in the order they run (candidates in
    baseline order, their effective and predictor scores, RRF, topic diversity, the injected
    mask, the final order); `session` holds the remaining fields. Both session starts (ours
    and Signet 0.58's, `compat.py`) build their result here."""
    return SessionStartResult(
        index=cand,
        memory_id=ids,
        rank=np.arange(len(cand), dtype=np.int64),
        effective_score=effective,
        predictor_score=predictor,
        predictor_rank=predictor_rank,
        fused_score=fused,
        final_score=final,
        overlap_count=overlaps,
        was_injected=injected,
        final_order=final_order,
        injected_order=final_order[injected[final_order]],
        **session,
    )
