"""Our session start, as a pure function: pre-filter -> baseline -> predictor scores (optional)
-> RRF(alpha) -> topic diversity -> selection (budget and/or top-k, constraints kept) ->
exploration. Every ordering breaks ties by (score desc, memory id asc).

It returns every per-candidate number the loop records in session_memories.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.context import FALLBACK_TOP, mean_unit
from signet_bench.ranking.baseline import (
    age_days,
    as_ids,
    decayed_importance,
    effective_score,
    rank_order,
    top_k_indices,
)
from signet_bench.ranking.diversity import topic_diversity
from signet_bench.ranking.exploration import maybe_explore
from signet_bench.ranking.fusion import (
    NOT_RANKED,
    baseline_only_scores,
    ranks_from_scores,
    rrf_fuse,
)
from signet_bench.ranking.prefilter import cosine_to, eligible_mask, prefilter, similarity_pool
from signet_bench.ranking.select import content_lengths, select_with_budget, with_constraints

__all__ = ["Predictor", "SessionStartResult", "session_start"]

Predictor = Callable[[np.ndarray, np.ndarray], "np.ndarray | None"]
"""`predictor(candidate_rows, context) -> scores`: `candidate_rows` index the corpus arrays (in
baseline order); the scores align with them (NaN = not scored), or None when the predictor is
offline. It should fail open (return None) rather than raise."""


@dataclass(frozen=True, slots=True)
class SessionStartResult:
    """Per-candidate arrays in baseline order (position i has baseline rank i), plus the run's
    scalars. `final_score` is what session_memories.final_score records."""

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
    context: np.ndarray | None
    context_rule: str  # 'given' | 'baseline-top10' | 'none'
    corpus_size: int  # live memories considered
    explored_id: str | None = None
    displaced_id: str | None = None

    @property
    def injected_ids(self) -> list[str]:
        """Injected memory ids, best first."""
        return [str(x) for x in self.memory_id[self.injected_order]]

    @property
    def diversity_adjusted(self) -> int:
        """How many candidates topic diversity attenuated (the dashboard's count)."""
        return int((self.overlap_count > 0).sum())


def _fallback_context(
    eff: np.ndarray, ids: np.ndarray, eligible: np.ndarray, emb: np.ndarray, has: np.ndarray
) -> np.ndarray | None:
    """signet_bench.context's fallback rule: unit mean of the top-10 baseline candidates'
    embeddings (those that have one)."""
    idx = np.flatnonzero(eligible)
    top = idx[top_k_indices(eff[idx], ids[idx], FALLBACK_TOP)]
    top = top[has[top]]
    return mean_unit(np.asarray(emb[top])) if len(top) else None


def session_start(
    ids: Sequence[str] | np.ndarray,
    created_at_epoch: np.ndarray,
    importance: np.ndarray,
    pinned: np.ndarray,
    contents: Sequence[str] | np.ndarray,
    embeddings: np.ndarray,
    has_emb: np.ndarray,
    now_epoch: float,
    *,
    is_constraint: np.ndarray | None = None,
    is_deleted: np.ndarray | None = None,
    context: np.ndarray | None = None,
    predictor: Predictor | None = None,
    alpha: float = 1.0,
    cold_start_exited: bool = False,
    rng: np.random.Generator | None = None,
    budget_chars: int | None = None,
    use_budget: bool = True,
    top_k: int | None = None,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> SessionStartResult:
    """Rank and select the memories to inject at session start.

    Corpus arrays are aligned (one row per memory; `contents` may be strings or lengths).
    `context` is the session-context embedding (signet_bench.context); when None, its fallback
    rule (top-10 baseline embeddings) is applied here. The predictor runs only with a context.
    `alpha` is the caller's effective baseline weight (1.0 during cold start). Selection: the
    greedy budget (`budget_chars`, default the config's 2,000; `use_budget=False` to skip),
    then the first `top_k` if given, then every constraint (see select.py). Exploration runs
    only with an `rng`, a used predictor and `cold_start_exited`, and never displaces a
    constraint. Soft-deleted rows (`is_deleted`) never become candidates."""
    id_arr = as_ids(ids)
    n_all = len(id_arr)
    has = np.asarray(has_emb, dtype=bool)
    pin = np.asarray(pinned, dtype=bool)
    cons_all = (
        np.zeros(n_all, dtype=bool) if is_constraint is None else np.asarray(is_constraint, bool)
    )
    deleted = None if is_deleted is None else np.asarray(is_deleted, dtype=bool)

    age = age_days(created_at_epoch, now_epoch)
    dec = decayed_importance(importance, age, cfg)
    eff = effective_score(importance, age, pin, cfg)
    eligible = eligible_mask(dec, pinned=pin, is_constraint=cons_all, excluded=deleted, cfg=cfg)

    rule = "given"
    if context is None:
        context = _fallback_context(eff, id_arr, eligible, embeddings, has)
        rule = "baseline-top10" if context is not None else "none"

    sims = None
    if context is not None:
        pool = similarity_pool(eff, id_arr, eligible, cfg)
        pool = pool[has[pool]]
        sims = np.full(n_all, np.nan)
        sims[pool] = cosine_to(context, np.asarray(embeddings[pool]))

    cand = prefilter(
        eff,
        sims,
        id_arr,
        is_constraint=cons_all,
        importance_decayed=dec,
        pinned=pin,
        excluded=deleted,
        cfg=cfg,
    )
    n = len(cand)
    c_ids = id_arr[cand]
    cons = cons_all[cand]
    brank = np.arange(1, n + 1)

    pred = np.full(n, np.nan)
    if predictor is not None and context is not None and n:
        out = predictor(cand, context)
        if out is not None:
            pred = np.asarray(out, dtype=np.float64).reshape(n)
    used = bool(np.isfinite(pred).any())
    pred = np.where(np.isfinite(pred), pred, np.nan)
    prank = ranks_from_scores(pred, c_ids) if used else np.full(n, NOT_RANKED, dtype=np.int64)
    alpha_used = float(alpha) if used else 1.0
    if used:
        fused = rrf_fuse(brank, prank, alpha_used, cfg.rrf_k, n)
    else:
        fused = baseline_only_scores(n, cfg.rrf_k)

    final, overlaps = topic_diversity(fused, c_ids, np.asarray(embeddings[cand]), has[cand], cfg)
    final_order = rank_order(final, c_ids)

    selected = final_order
    if use_budget:
        lengths = content_lengths([contents[i] for i in cand]) if n else np.zeros(0, np.int64)
        budget = cfg.injection_budget_chars if budget_chars is None else budget_chars
        selected = select_with_budget(final_order, lengths, budget)
    if top_k is not None:
        selected = selected[: max(0, int(top_k))]
    selected = with_constraints(selected, final_order, cons)
    mask = np.zeros(n, dtype=bool)
    mask[selected] = True

    explored_id = displaced_id = None
    source = np.full(n, "effective", dtype=object)
    if rng is not None:
        ex = maybe_explore(
            mask,
            final,
            brank,
            prank,
            c_ids,
            rng,
            predictor_used=used,
            cold_start_exited=cold_start_exited,
            protected=cons,
            cfg=cfg,
        )
        mask, explored_id, displaced_id = ex.injected, ex.explored_id, ex.displaced_id
        if ex.explored_index is not None:
            source[ex.explored_index] = "exploration"

    return SessionStartResult(
        index=cand,
        memory_id=c_ids,
        rank=np.arange(n, dtype=np.int64),
        effective_score=eff[cand],
        predictor_score=pred,
        predictor_rank=prank,
        fused_score=fused,
        final_score=final,
        overlap_count=overlaps,
        is_constraint=cons,
        was_injected=mask,
        source=source,
        final_order=final_order,
        injected_order=final_order[mask[final_order]],
        predictor_used=used,
        alpha=alpha_used,
        context=context,
        context_rule=rule,
        corpus_size=int(n_all if deleted is None else (~deleted).sum()),
        explored_id=explored_id,
        displaced_id=displaced_id,
    )
