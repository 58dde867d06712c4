"""Every constant of the predictive memory scorer, under the names of its sources.

Field names are the snake_case form of the camelCase names of the scorer specification and its
feedback addendum (docs/specification.md §13); `from_agent_yaml` accepts their own spelling, as
written in Signet's `agent.yaml`. Constants the sources use in prose without naming them carry a
descriptive name and cite the section that states them.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from signet_bench.errors import UserError
from signet_scorer.contract import CONTEXT_TOP

__all__ = [
    "DEFAULT_CONFIG",
    "ConfigError",
    "PredictorConfig",
    "from_agent_yaml",
    "load_config",
    "seed_name",
]


class ConfigError(UserError, ValueError):
    """A config value or key that the workbench cannot accept."""


@dataclass(frozen=True, slots=True)
class PredictorConfig:
    """The scorer's configuration: the specification's defaults and constants (docs/specification.md
    §13)."""

    # --- the 8 exposed parameters (docs/specification.md §13) -----------------------------------
    enabled: bool = False
    train_interval_sessions: int = 10
    min_training_sessions: int = 10
    score_timeout_ms: int = 120
    crash_disable_threshold: int = 3
    rrf_k: int = 12
    exploration_rate: float = 0.05
    drift_reset_window: int = 10

    # --- hardcoded defaults (docs/specification.md §13) ------------------------------------------
    internal_dim: int = 64
    hash_buckets: int = 16_384
    ema_alpha: float = 0.1
    drift_reset_threshold: float = 0.3
    replay_buffer_size: int = 20
    min_scorer_confidence: float = 0.6
    loss_temperature: float = 0.5
    negative_similarity_threshold: float = 0.6
    max_project_slices: int = 5
    early_active_ramp_sessions: int = 20
    early_active_max_influence: tuple[float, float] = (0.2, 0.4)
    topic_diversity_decay: float = 0.5
    topic_diversity_floor: float = 0.1
    topic_similarity_threshold: float = 0.85
    candidate_pool_size: int = 100

    # --- agent relevance feedback (docs/specification.md §5.2) ----------------------------------
    agent_feedback: bool = True
    feedback_weight: float = 0.7
    fts_weight: float = 0.2
    continuity_weight: float = 0.1

    # --- baseline and pre-filter (docs/specification.md §3.1-§3.9) -------------------------------
    effective_score_decay: float = 0.95  # importance * 0.95 ** age_days
    pinned_effective_score: float = 1.0
    prefilter_effective_top: int = 50  # top-50 by effectiveScore
    prefilter_similarity_top: int = 50  # top-50 by cosine ...
    prefilter_similarity_pool: int = 200  # ... over the top-200 by effectiveScore
    min_decayed_importance: float = 0.1  # excluded from the candidate pool entirely
    injection_budget_chars: int = 2000  # Signet selectWithBudget at session start
    signet_recall_limit: int = 50  # Signet 0.58 pool: newest recallLimit*3 rows
    signet_min_effective_score: float = 0.2  # Signet 0.58 pool: keep if score > 0.2 or pinned
    context_fallback_top: int = CONTEXT_TOP  # context fallback (docs/specification.md §3.3)

    # --- knowledge-graph traversal at session start (docs/specification.md §3.10) ---------------
    max_aspects_per_entity: int = 10  # aspects walked per entity, by weight desc
    max_attributes_per_aspect: int = 20  # attribute memories per aspect, by importance desc
    min_dependency_strength: float = 0.3  # an edge is followed when confidence·strength >= this
    min_confidence: float = 0.5  # ... and its confidence (NULL read as 0.7) >= this
    max_branching: int = 4  # edges followed per focal entity (the strongest)
    max_traversal_paths: int = 50  # distinct memories one traversal returns at most
    boost_weight: float = 0.2  # prompt recall's traversal boost (score = (1-w)·score + w)
    # The "Active Constraints" section's reserved space: Signet shortens entries to fit and never
    # drops one; the replay injects constraints whole, outside the main budget.
    constraint_budget_chars: int = 1000
    # Project decision against a field failure (one pinned entity's memories filled the whole
    # injection): memories the graph alone brought into the pool are at most this share of
    # `candidatePoolSize`, and memories whose score the graph raised take at most this share of
    # the injection budget (characters; of `top_k` rows without a budget). 1 switches it off.
    traversal_max_share: float = 0.25

    # --- model (docs/specification.md §4.3-§4.5) -------------------------------------------------
    native_dim: int = 768
    value_dim: int = 32
    project_slots: int = 32
    extra_features: int = 17
    layer_norm_eps: float = 1e-5
    learning_rate: float = 1e-3
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8

    # --- training, loss and gates (docs/specification.md §4.4, §6) -------------------------------
    sharpened_temperature: float = 0.3  # when per-session label spread is below ...
    low_label_spread: float = 0.1  # ... this ("all scores within 0.1 of each other")
    canary_size: int = 25
    canary_top_k: int = 5
    canary_min_topk_overlap: float = 0.6
    canary_max_ndcg_drop: float = 0.15
    # Project decision: a run that lifts canary NDCG@10 by this much passes the top-5 stability
    # gate whatever its overlap (churn that improves the canary is learning, not forgetting).
    canary_churn_gain: float = 0.05
    max_training_seconds: float = 30.0
    replay_share: float = 0.2  # ~80% recent / ~20% replay buffer per batch
    # Project decisions beside the specification's schedule (docs/concepts.md §4.1): every scheduled
    # training retrains from fresh weights; incremental runs (`fullRetrainEvery: 0`, or N > 1
    # between full ones) fine-tune the accepted model for a few epochs at a tenth of the
    # learning rate, since at the full rate one run's churn breaks the stability gate.
    full_training_epochs: int = 50  # the specification's budget: 50 epochs in <= 10 s
    incremental_epochs: int = 5
    incremental_lr_scale: float = 0.1
    full_retrain_every: int = 1  # every Nth training retrains from fresh weights (0 = never)
    # Project decision: a model is judged out of sample (`learn/holdout.py`): the newest
    # `holdout_share` of the sessions (at least `canary_size`) once there are two canaries'
    # worth, else `holdout_folds` blocks in time, each judged by a model trained on the ones before.
    # "holdout" (ours) or "canary": the specification's gates alone (Signet 0.58's own rule: a
    # canary of the most confident sessions, top-5 stability and NDCG drop), for replaying that
    # release.
    training_judge: str = "holdout"
    holdout_share: float = 0.2
    holdout_folds: int = 5
    holdout_patience: int = 10  # epochs without a held-out gain before a run stops
    # Project decision: a training's cost does not grow with the user's history (0 switches
    # each bound off). It reads only the newest `training_window_sessions` scored sessions (what
    # it loads and holds in memory), holds out at most `holdout_max_sessions` of them in time,
    # and each epoch passes over at most `epoch_session_budget` of the rest: the newest half of
    # the budget always, the other half drawn from the older ones. A history within the bounds
    # trains exactly as without them (300 sessions leave at least 240 to train on); the
    # window's size is measured in docs/concepts.md §4.5.
    training_window_sessions: int = 600
    holdout_max_sessions: int = 100
    epoch_session_budget: int = 250
    # Project decision: a held-out training takes at most this many optimizer steps (each fit
    # of it; 0: no bound), so its cost is fixed whatever the history; and a scheduled retrain
    # starts from the served model instead of the shipped base when the held-out sessions show
    # it no worse (`learn.train.warm_start`), so the steps go to what the newest sessions add
    # (docs/concepts.md §4.5).
    training_step_budget: int = 400
    warm_start: bool = True
    # Project decision: a training learns from the user's prompts' rankings too (a sample per
    # prompt the hook log recorded, `learn.samples.prompt_samples`); off, it learns from session
    # starts alone. Each hook serves what its own held-out rankings chose (`learn.serving`): one
    # gate over both let through a model worse at session start (prompts outnumber session
    # starts about 15 to 1; design world multi-project 900: session start's served - cosine
    # from -0.026 to -0.352 after 10 sessions), while the prompts need them (the prompt's
    # served - hybrid from -0.006 to +0.090 NDCG@10 after 100; docs/concepts.md §5.1).
    prompt_samples: bool = True
    # Project decision: with fewer trainable sessions than this a training serves its start
    # (the free ranker it starts as) unchanged: the labels of a handful of sessions, most of
    # them on what the baseline injected in cold start, mislead (docs/concepts.md §4.1; 0 switches
    # it off). A prompt's sample counts as one (design seed 900: counting sessions alone held the
    # prompts' served - free ranker after 10 sessions at 0.000 where their samples gave +0.07).
    holdout_min_sessions: int = 20
    # Project decision: with fewer trainable sessions than this the learned query (q_proj) stays
    # at its start, so only cosine matches the context; the rest of the model learns. Learned
    # from few sessions it fits their topics, not the ones that follow (docs/concepts.md §4.1; 0:
    # off).
    query_min_sessions: int = 200
    # Project decision: a fresh model starts at the lexical+vector hybrid instead of cosine only
    # when the hybrid's mean per-session NDCG@10 lead over cosine on the labels is at least this
    # many standard errors (0: any lead): a lead within the noise of the labels chose the
    # hybrid where the planted truth put it below cosine (docs/concepts.md §4.1).
    hybrid_start_evidence: float = 1.0
    # Project decision: a trained model is served only when its per-session NDCG@10 lead over
    # the strongest free ranker on the held-out sessions is at least this many standard errors
    # of its mean (0: any lead; `learn.holdout.decide`). A mean lead within the noise of a few
    # dozen sessions' ratings is as often a loss on the sessions that follow (docs/concepts.md
    # §4.3).
    holdout_gain_evidence: float = 1.5
    # Project decision, superseded by `serving_confidence`: a run whose model is not shown
    # better now serves the shipped base, whatever was served before, so a learned model that
    # trails the free rankers gives way without this rule; kept so configs that set it load.
    holdout_demote: bool = True
    # Project decision: a per-user model serves instead of the shipped base only when the
    # lower confidence bound of its held-out NDCG@10 gain, at this one-sided level, is above 0
    # against the base and the strongest free ranker (`learn.serving`; 0.5: the mean gain).
    serving_confidence: float = 0.95
    # Project decision: the held-out judgement (the gate, the epoch it keeps, the free ranker
    # a fresh model starts at) scores a session against the ratings it has, the agent's where
    # given and the continuity judge's otherwise, over the rated candidates only; its labels
    # only where fewer than two are rated (false: always the labels). The labels' FTS rules
    # come from the agent's keyword searches, which the lexical signal predicts by
    # construction, so the labels favour the hybrid where the truth does not (docs/concepts.md
    # §4.2).
    holdout_on_ratings: bool = True
    # Project decision: a Gaussian prior centred on the start weights (the free ranker the
    # model starts as), `prior_strength / sessions * ||w - w0||^2` (0 switches it off).
    prior_strength: float = 1.0
    negative_sampling_ratio: int = 3  # 3:1 negative:positive

    # --- label values (docs/specification.md §5) -------------------------------------------------
    high_continuity_threshold: float = 0.5  # injected label = score if >= this, else score*0.5
    low_session_multiplier: float = 0.5
    missing_context_label: float = 0.7
    soft_negative_label: float = 0.25
    true_negative_label: float = 0.0
    superseded_label: float = -0.3
    deleted_after_injection_label: float = -0.5
    deleted_after_injection_hours: float = 24.0
    fts_confirmed_boost: float = 0.1
    fts_missed_label: float = 0.6
    fts_missed_min_hits: int = 2
    fts_unmatched_penalty: float = 0.1
    fts_unmatched_max_continuity: float = 0.3
    novel_context_boost: float = 0.1
    access_count_boost: float = 0.05
    access_count_high: int = 10
    edited_boost: float = 0.05  # "Memory edited/updated recently: +0.05 to label"
    edited_recent_days: float = 7.0  # "recently" (docs/specification.md §5.3)
    agent_fts_bump_label: float = 0.3  # docs/specification.md §5.2
    fts_overlap_per_hit: float = 0.3  # fts_adjustment = min(1, 0.3·hits), Signet's

    # --- comparison, cold start, drift, calibration (docs/specification.md §7, §9.8) -------------
    comparison_k: int = 10  # NDCG@10
    cold_start_min_success_rate: float = 0.4
    initial_success_rate: float = 0.5
    calibration_mae_threshold: float = 0.2
    drift_recent_days: float = 7.0
    drift_old_days: float = 30.0

    # --- the predictor's health domain and latency display (docs/specification.md §9.1-§9.5) ----
    health_healthy_min: float = 0.8  # ">= 0.8 healthy"; "trained, success_rate > 0.4: 0.8+"
    health_degraded_min: float = 0.5  # "0.5-0.8 degraded, < 0.5 unhealthy"
    health_cold_start: float = 0.6  # "sidecar alive but cold start: 0.6"
    health_latency_penalty: float = 0.2  # "scoring latency > scoreTimeoutMs: subtract 0.2"
    health_drift_penalty: float = 0.1  # "drift signal above threshold: subtract 0.1"
    # The specification names no value for the drift signal's threshold: a 0.1 relevance gap between
    # young and old memories (labels span 0..1) is our choice.
    judge_drift_signal_threshold: float = 0.1
    # "if p95 is regularly approaching the timeout": the sparkline turns yellow above this share
    latency_warning_share: float = 0.8
    # Project decision: the dashboard's verdict ("is the predictor helping?") says "too early
    # to tell" below this many judged sessions; from it on it shows the win rate and the NDCG@10
    # margin with 95% intervals (even at 20 an even win rate's interval spans 30%-70%).
    verdict_min_sessions: int = 20
    # Judge calibration: "20-50 sessions ... sampled from recent sessions with high-confidence
    # continuity scores"; how high is our choice.
    calibration_sample_sessions: int = 30
    calibration_min_confidence: float = 0.8

    # helpers ------------------------------------------------------------------------------------
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name == "extra":
                continue
            _check_range(f.name, getattr(self, f.name))

    @property
    def early_active_alpha_floors(self) -> tuple[float, float]:
        """Alpha floors during the early active ramp: 1 - max influence (0.8, then 0.6)."""
        a, b = self.early_active_max_influence
        return (round(1.0 - a, 12), round(1.0 - b, 12))

    def replace(self, **changes: Any) -> PredictorConfig:
        """A copy with some fields changed (validated like the original)."""
        return dataclasses.replace(self, **changes)


_PROBABILITIES = {
    "exploration_rate",
    "ema_alpha",
    "drift_reset_threshold",
    "min_scorer_confidence",
    "negative_similarity_threshold",
    "topic_diversity_decay",
    "topic_diversity_floor",
    "topic_similarity_threshold",
    "feedback_weight",
    "fts_weight",
    "continuity_weight",
    "effective_score_decay",
    "replay_share",
    "canary_min_topk_overlap",
    "canary_max_ndcg_drop",
    "canary_churn_gain",
    "cold_start_min_success_rate",
    "initial_success_rate",
    "high_continuity_threshold",
    "low_session_multiplier",
    "min_decayed_importance",
    "signet_min_effective_score",
    "low_label_spread",
    "incremental_lr_scale",
    "holdout_share",
    "min_dependency_strength",
    "min_confidence",
    "boost_weight",
    "traversal_max_share",
    "serving_confidence",
}
_LABELS = {
    "missing_context_label",
    "soft_negative_label",
    "true_negative_label",
    "superseded_label",
    "deleted_after_injection_label",
    "fts_confirmed_boost",
    "fts_missed_label",
    "fts_unmatched_penalty",
    "fts_unmatched_max_continuity",
    "novel_context_boost",
    "access_count_boost",
    "edited_boost",
    "agent_fts_bump_label",
    "fts_overlap_per_hit",
    "calibration_mae_threshold",
}


_ZERO_ALLOWED = {
    "full_retrain_every",
    "prior_strength",
    "holdout_min_sessions",
    "query_min_sessions",
    "hybrid_start_evidence",
    "holdout_gain_evidence",
    "training_window_sessions",
    "holdout_max_sessions",
    "epoch_session_budget",
    "training_step_budget",
}


TRAINING_JUDGES = ("holdout", "canary")


def _check_range(name: str, value: Any) -> None:
    key = seed_name(name)
    if name == "training_judge":
        if value not in TRAINING_JUDGES:
            raise ConfigError(
                f"predictor.{key}: expected one of {', '.join(TRAINING_JUDGES)}, got {value!r}"
            )
        return
    if name in (
        "enabled",
        "agent_feedback",
        "holdout_on_ratings",
        "holdout_demote",
        "warm_start",
        "prompt_samples",
    ):
        if not isinstance(value, bool):
            raise ConfigError(f"predictor.{key}: expected true/false, got {value!r}")
        return
    if name == "early_active_max_influence":
        ok = (
            isinstance(value, (tuple, list))
            and len(value) == 2
            and all(isinstance(v, (int, float)) and 0.0 <= v <= 1.0 for v in value)
            and value[0] <= value[1]
        )
        if not ok:
            raise ConfigError(
                f"predictor.{key}: expected two increasing fractions in [0, 1], got {value!r}"
            )
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"predictor.{key}: expected a number, got {value!r}")
    if math.isnan(value):
        raise ConfigError(f"predictor.{key}: NaN is not a valid value")
    if name in _PROBABILITIES:
        if not 0.0 <= value <= 1.0:
            raise ConfigError(f"predictor.{key}: {value!r} is outside [0, 1]")
    elif name in _LABELS:
        if not -1.0 <= value <= 1.0:
            raise ConfigError(f"predictor.{key}: {value!r} is outside [-1, 1]")
    elif value < 0 or (value == 0 and name not in _ZERO_ALLOWED):
        raise ConfigError(f"predictor.{key}: {value!r} must be positive")
    if name in _int_fields() and not float(value).is_integer():
        raise ConfigError(f"predictor.{key}: expected a whole number, got {value!r}")


@functools.cache
def _int_fields() -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(PredictorConfig) if f.type == "int")


def seed_name(field_name: str) -> str:
    """The camelCase spelling of a field (as in `agent.yaml`): `rrf_k` -> `rrfK`."""
    head, *rest = field_name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


_BY_SEED_NAME = {
    seed_name(f.name): f.name for f in dataclasses.fields(PredictorConfig) if f.name != "extra"
}


def from_mapping(values: dict[str, Any], *, source: str = "config") -> PredictorConfig:
    """Build a config from seed-named keys; unknown keys and bad values name the key."""
    kwargs: dict[str, Any] = {}
    for key, value in values.items():
        name = _BY_SEED_NAME.get(key)
        if name is None:
            name = key if key in _BY_SEED_NAME.values() else None
        if name is None:
            raise ConfigError(f"{source}: unknown key predictor.{key}")
        if name == "early_active_max_influence" and isinstance(value, list):
            value = tuple(value)
        kwargs[name] = value
    return PredictorConfig(**kwargs)


def from_agent_yaml(path: str | Path) -> PredictorConfig:
    """Read the `predictor:` block of Signet's `agent.yaml` (missing block -> defaults)."""
    # here: `signet-bench --help` imports this module and starts without yaml
    import yaml

    p = Path(path)
    if not p.exists():
        raise ConfigError(f"{p}: no such file")
    try:
        doc = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{p}: not valid YAML ({exc})") from exc
    if not isinstance(doc, dict):
        raise ConfigError(f"{p}: expected a mapping at the top level")
    block = doc.get("predictor")
    if block is None:
        block = (
            (doc.get("pipelineV2") or {}).get("predictor")
            if isinstance(doc.get("pipelineV2"), dict)
            else None
        )
    if block is None:
        return PredictorConfig()
    if not isinstance(block, dict):
        raise ConfigError(f"{p}: predictor: expected a mapping, got {type(block).__name__}")
    return from_mapping(block, source=str(p))


DEFAULT_CONFIG = PredictorConfig()


def load_config(path: str | Path | None) -> PredictorConfig:
    """The config of a Signet `agent.yaml` (`predictor:` block), or the defaults for None."""
    return DEFAULT_CONFIG if path is None else from_agent_yaml(path)
