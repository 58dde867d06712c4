"""Our session start, as a pure function: pre-filter (with the knowledge graph's traversal
candidates when a graph is given) -> baseline -> predictor scores (optional) -> RRF(alpha) ->
topic diversity -> selection (superseded out, budget and/or top-k, constraints kept; see
select.py) -> exploration. Every ordering breaks ties by (score desc, memory id asc).

With a graph (`store.graph`, walked by `traversal.py`): the traversal's memories join the pool
(`prefilter.traversal_join`), the focal entities' constraints are kept and injected like every
constraint of the session's scope, and the memories whose place the graph made take at most
`traversalMaxShare` of the injection budget. Without a graph, or when the walk reaches nothing,
the result is exactly what it is without this step.

It returns every per-candidate number the loop records in session_memories.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.context import session_context
from signet_bench.daemon.ranking.baseline import (
    age_days,
    decayed_importance,
    effective_score,
    rank_order,
    top_k_indices,
)
from signet_bench.daemon.ranking.diversity import topic_diversity
from signet_bench.daemon.ranking.exploration import (
    ExplorationResult,
    RankedCandidates,
    maybe_explore,
)
from signet_bench.daemon.ranking.fusion import fuse
from signet_bench.daemon.ranking.prefilter import (
    MemoryStates,
    cosine_to,
    eligible_mask,
    prefilter,
    similarity_pool,
    traversal_join,
)
from signet_bench.daemon.ranking.select import content_lengths, select_injected
from signet_bench.daemon.ranking.traversal import (
    Traversal,
    TraversalFlags,
    candidate_flags,
    injection_overflow,
    pool_quota,
    session_traversal,
)
from signet_bench.store.corpus import Corpus
from signet_bench.store.graph import EntityGraph
from signet_scorer.budget import Budget
from signet_scorer.context import SessionContextVector

__all__ = [
    "GraphWalk",
    "InjectionLimits",
    "Learned",
    "Predictor",
    "RankingSteps",
    "SessionStartResult",
    "ranked_result",
    "session_start",
]

Predictor = Callable[..., "np.ndarray | None"]
"""`predictor(candidate_rows, context) -> scores`: `candidate_rows` index the corpus (in
baseline order); the scores align with them (NaN = not scored), or None when the predictor is
offline. It should fail open (return None) rather than raise. When the knowledge graph added
to the pool it is called with a third argument, the candidates' `TraversalFlags`."""


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
    source: np.ndarray  # 'effective' | 'ka_traversal' | 'exploration'
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
    traversal: Traversal | None = None  # the graph's walk (None: no graph, or it reached none)
    flags: TraversalFlags | None = None  # what the graph says of each candidate

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
    def path_json(self) -> np.ndarray:
        """(n,) object: each candidate's traversal path as `session_memories.path_json` holds
        it (None where the graph did not reach it)."""
        if self.flags is None:
            return np.full(len(self.index), None, dtype=object)
        return self.flags.path_json

    @property
    def diversity_adjusted(self) -> int:
        """How many candidates topic diversity attenuated (the dashboard's count)."""
        return int((self.overlap_count > 0).sum())


@dataclass(frozen=True, slots=True)
class _Pool:
    """The pre-filtered candidates (corpus rows, baseline order), the session's context, the
    effective scores the pool was ranked by, and the graph's flags of the candidates."""

    cand: np.ndarray
    context: SessionContextVector
    eff: np.ndarray
    flags: TraversalFlags | None = None


def _candidate_pool(
    corpus: Corpus,
    eff: np.ndarray,
    dec: np.ndarray,
    cons: np.ndarray,
    absent: np.ndarray,
    previous_used: Iterable[str],
    cfg: PredictorConfig,
    walked: Traversal | None = None,
) -> _Pool:
    """The session context (`context.session_context` over the eligible memories' baseline
    order) and the pre-filter over the live corpus, the graph's traversal candidates joined."""
    ids, has, pin = corpus.id_text, corpus.has_embedding, corpus.pinned
    eligible = eligible_mask(dec, pinned=pin, is_constraint=cons, excluded=absent, cfg=cfg)
    join = None
    if walked is not None:
        join = traversal_join(
            eff,
            eligible,
            ids,
            walked.rows,
            walked.score,
            is_constraint=cons,
            quota=pool_quota(cfg),
            cfg=cfg,
        )
        eff, eligible = join.eff, join.eligible
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
        eff,
        sims,
        ids,
        MemoryStates(cons, dec, pin, absent),
        joined=None if join is None else join.joined,
        cfg=cfg,
    )
    if walked is None or join is None:
        return _Pool(cand, context, eff)
    flags = candidate_flags(walked, cand, join.joined, join.carried, cons[cand])
    return _Pool(cand, context, eff, flags)


def _predict(
    cand: np.ndarray,
    context: SessionContextVector,
    predictor: Predictor | None,
    flags: TraversalFlags | None = None,
) -> np.ndarray:
    """Predictor scores aligned with `cand`; NaN where not scored or the predictor is offline."""
    n = len(cand)
    pred = np.full(n, np.nan)
    if predictor is not None and context.vector is not None and n:
        out = predictor(cand, context) if flags is None else predictor(cand, context, flags)
        if out is not None:
            pred = np.asarray(out, dtype=np.float64).reshape(n)
    return np.where(np.isfinite(pred), pred, np.nan)


def _explore(
    ranked: RankedCandidates,
    used: bool,
    rng: np.random.Generator | None,
    cold_start_exited: bool,
    cfg: PredictorConfig,
) -> tuple[ExplorationResult, np.ndarray]:
    """The exploration swap (none without an `rng`; `used`: the predictor ranked them) and
    each candidate's recorded source."""
    n = len(ranked.injected)
    source = np.full(n, "effective", dtype=object)
    if rng is None:
        return ExplorationResult(ranked.injected), source
    ex = maybe_explore(
        ranked, rng, predictor_used=used, cold_start_exited=cold_start_exited, cfg=cfg
    )
    if ex.explored_index is not None:
        source[ex.explored_index] = "exploration"
    return ex, source


def _held_back(
    flags: TraversalFlags | None,
    final_order: np.ndarray,
    lengths: np.ndarray,
    budget_chars: int | None,
    top_k: int | None,
    cfg: PredictorConfig,
) -> np.ndarray | None:
    """Candidates the graph's share of the injection leaves out (None without a graph)."""
    if flags is None:
        return None
    carried = flags.carried & ~flags.is_constraint
    return injection_overflow(
        final_order, carried, lengths, budget_chars=budget_chars, top_k=top_k, cfg=cfg
    )


def _sources(source: np.ndarray, flags: TraversalFlags | None) -> np.ndarray:
    """'ka_traversal' for the candidates the graph alone brought (unless explored)."""
    if flags is None:
        return source
    return np.where(flags.is_traversal & (source == "effective"), "ka_traversal", source)


def _forced(corpus: Corpus, project: str | None, walked: Traversal | None) -> np.ndarray:
    """The constraints a session must inject: its scope's, and the focal entities'."""
    cons = corpus.is_constraint & corpus.in_scope(project)
    if walked is not None and len(walked.constraint_rows):
        cons = cons.copy()
        cons[walked.constraint_rows] = True
    return cons


@dataclass(frozen=True, slots=True)
class Learned:
    """The learned side of a session start: the `predictor`, the baseline's weight `alpha` in
    the fusion (1.0 during cold start), and exploration's state (whether cold start has
    exited, and the generator it draws from; none without one)."""

    predictor: Predictor | None = None
    alpha: float = 1.0
    cold_start_exited: bool = False
    rng: np.random.Generator | None = None


@dataclass(frozen=True, slots=True)
class InjectionLimits:
    """How much a session start injects: the greedy character budget (`budget_chars`, default
    the config's; `use_budget=False` skips it), then the first `top_k` if given; or, with a
    `choice`, the best K within a token budget (`signet_scorer.budget`) in place of both."""

    budget_chars: int | None = None
    use_budget: bool = True
    top_k: int | None = None
    choice: Budget | None = None


@dataclass(frozen=True, slots=True)
class GraphWalk:
    """The knowledge graph a session start walks and the query's words, which name focal
    entities besides the pinned memories' and the project's."""

    graph: EntityGraph | None = None
    query_terms: Sequence[str] = ()


def session_start(
    corpus: Corpus,
    now_epoch: float,
    *,
    project: str | None = None,
    previous_used: Iterable[str] = (),
    learned: Learned = Learned(),
    limits: InjectionLimits = InjectionLimits(),
    cfg: PredictorConfig = DEFAULT_CONFIG,
    walk: GraphWalk = GraphWalk(),
) -> SessionStartResult:
    """Rank and select the memories of `corpus` to inject at a session start of `project`.

    Memories soft-deleted or not yet created at `now_epoch` never become candidates; the
    constraints of the project's scope (its own and the project-less ones) are always kept.
    The context is `context.session_context` of `previous_used` (the ids the previous session
    of the project used) with the top-10 baseline fallback; the predictor (`learned`) runs
    only with a context; `learned.alpha` is the caller's effective baseline weight.
    Selection (select.py): memories superseded by `now_epoch` stay candidates but are never
    injected; the greedy budget (`limits`, default the config's 2,000), then the first
    `top_k` if given, then every constraint.
    Exploration runs only with an `rng`, a used predictor and `cold_start_exited`; it never
    displaces a constraint nor explores a superseded row in. `walk.graph` adds its traversal
    (focal entities from the pinned ones, the project and the query terms; see traversal.py);
    it reaches no memory already superseded at `now_epoch` (current Signet's traversal takes
    current memories only; Signet 0.58's, replayed in compat.py, took any live row).
    Exploration never explores in a memory the graph alone brought: its row would record
    'exploration' instead of 'ka_traversal', and training would lose the traversal flag the
    scorer saw."""
    predictor, alpha = learned.predictor, learned.alpha
    cold_start_exited, rng = learned.cold_start_exited, learned.rng
    graph, query_terms = walk.graph, walk.query_terms
    ids, has = corpus.id_text, corpus.has_embedding
    age = age_days(corpus.created_at, now_epoch)
    dec = decayed_importance(corpus.importance, age, cfg)
    eff = effective_score(corpus.importance, age, corpus.pinned, cfg)
    absent = corpus.absent_at(now_epoch)
    reachable = ~absent & ~corpus.superseded_by(now_epoch)
    walked = session_traversal(
        graph, ids, corpus.importance, project, query_terms, now_epoch, reachable, cfg
    )
    cons_all = _forced(corpus, project, walked)
    pool = _candidate_pool(corpus, eff, dec, cons_all, absent, previous_used, cfg, walked)
    cand, flags = pool.cand, pool.flags
    n = len(cand)
    c_ids, cons = ids[cand].astype(str), cons_all[cand]
    stale = corpus.superseded_by(now_epoch)[cand]
    pred = _predict(cand, pool.context, predictor, flags)
    fz = fuse(pred, c_ids, alpha, cfg)
    final, overlaps = topic_diversity(fz.fused, c_ids, corpus.embeddings[cand], has[cand], cfg)
    final_order = rank_order(final, c_ids)

    lengths = content_lengths([corpus.contents[i] for i in cand]) if n else np.zeros(0, np.int64)
    selected = _selected(final_order, lengths, cons, stale, flags, limits, cfg)
    unexplored = stale if flags is None else stale | flags.is_traversal
    injected, order = np.isin(np.arange(n), selected), np.arange(1, n + 1)
    ranked = RankedCandidates(injected, final, order, fz.prank, c_ids, cons, unexplored)
    ex, source = _explore(ranked, fz.used, rng, cold_start_exited, cfg)
    eff_cand = pool.eff[cand]
    steps = RankingSteps(
        cand, c_ids, eff_cand, pred, fz.prank, fz.fused, final, overlaps, ex.injected, final_order
    )
    return ranked_result(
        steps,
        is_constraint=cons,
        source=_sources(source, flags),
        predictor_used=fz.used,
        alpha=fz.alpha,
        context_vector=pool.context,
        corpus_size=int((~absent).sum()),
        explored_id=ex.explored_id,
        displaced_id=ex.displaced_id,
        traversal=walked,
        flags=flags,
    )


def _selected(
    final_order: np.ndarray,
    lengths: np.ndarray,
    cons: np.ndarray,
    stale: np.ndarray,
    flags: TraversalFlags | None,
    limits: InjectionLimits,
    cfg: PredictorConfig,
) -> np.ndarray:
    """The injected candidates (select.py): the greedy budget (`limits`, default the config's),
    then the first `top_k` if given — or, when `limits.choice` is set, the best K within its
    tokens — then every constraint; never a `stale` (superseded) one nor one the graph holds
    back."""
    budget_chars, use_budget, top_k = limits.budget_chars, limits.use_budget, limits.top_k
    if limits.choice is not None:  # K within tokens, in place of the characters and top_k
        budget_chars, use_budget, top_k = None, False, limits.choice.k
    budget = None
    if use_budget:
        budget = cfg.injection_budget_chars if budget_chars is None else budget_chars
    held = _held_back(flags, final_order, lengths, budget, top_k, cfg)
    return select_injected(
        final_order,
        lengths,
        cons,
        is_superseded=stale if held is None else stale | held,
        budget_chars=budget,
        top_k=top_k,
        choice=limits.choice,
    )


@dataclass(frozen=True, slots=True)
class RankingSteps:
    """A session start's ranking steps, in the order they run: the candidates in baseline
    order (`cand`, their rows; `ids`), their effective and predictor scores and predictor
    ranks, RRF, topic diversity (`final`, `overlaps`), the injected mask, the final order."""

    cand: np.ndarray
    ids: np.ndarray
    effective: np.ndarray
    predictor: np.ndarray
    predictor_rank: np.ndarray
    fused: np.ndarray
    final: np.ndarray
    overlaps: np.ndarray
    injected: np.ndarray
    final_order: np.ndarray


def ranked_result(steps: RankingSteps, **session: object) -> SessionStartResult:
    """A session start's result from its ranking steps; `session` holds the remaining fields.
    Both session starts (ours and Signet 0.58's, `compat.py`) build their result here."""
    s = steps
    return SessionStartResult(
        index=s.cand,
        memory_id=s.ids,
        rank=np.arange(len(s.cand), dtype=np.int64),
        effective_score=s.effective,
        predictor_score=s.predictor,
        predictor_rank=s.predictor_rank,
        fused_score=s.fused,
        final_score=s.final,
        overlap_count=s.overlaps,
        was_injected=s.injected,
        final_order=s.final_order,
        injected_order=s.final_order[s.injected[s.final_order]],
        **session,
    )
