"""The typed config: seed defaults, seed names, agent.yaml loading and rejection."""

from __future__ import annotations

import pytest

from signet_bench.config import (
    DEFAULT_CONFIG,
    ConfigError,
    PredictorConfig,
    from_agent_yaml,
    from_mapping,
    seed_name,
)


def test_seed_phase5_defaults():
    c = DEFAULT_CONFIG
    assert (c.train_interval_sessions, c.min_training_sessions, c.score_timeout_ms) == (10, 10, 120)
    assert (c.crash_disable_threshold, c.rrf_k, c.exploration_rate, c.drift_reset_window) == (
        3,
        12,
        0.05,
        10,
    )
    assert (c.internal_dim, c.hash_buckets, c.ema_alpha, c.drift_reset_threshold) == (
        64,
        16384,
        0.1,
        0.3,
    )
    assert c.early_active_max_influence == (0.2, 0.4)
    assert c.early_active_alpha_floors == (0.8, 0.6)
    assert (c.feedback_weight, c.fts_weight, c.continuity_weight) == (0.7, 0.2, 0.1)
    assert c.effective_score_decay == 0.95 and c.candidate_pool_size == 100


def test_seed_names_round_trip():
    assert seed_name("train_interval_sessions") == "trainIntervalSessions"
    assert seed_name("rrf_k") == "rrfK"
    assert from_mapping({"rrfK": 20, "explorationRate": 0.1}).rrf_k == 20


@pytest.mark.parametrize(
    ("block", "message"),
    [
        ({"rrfKay": 3}, "unknown key predictor.rrfKay"),
        ({"explorationRate": 1.5}, "predictor.explorationRate: 1.5 is outside [0, 1]"),
        ({"trainIntervalSessions": 0}, "predictor.trainIntervalSessions: 0 must be positive"),
        ({"enabled": "yes"}, "predictor.enabled: expected true/false"),
        ({"rrfK": 2.5}, "predictor.rrfK: expected a whole number"),
    ],
)
def test_bad_values_name_the_key(block, message):
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        from_mapping(block)


def test_agent_yaml(tmp_path):
    p = tmp_path / "agent.yaml"
    p.write_text("name: me\npredictor:\n  enabled: true\n  rrfK: 24\n  driftResetWindow: 15\n")
    c = from_agent_yaml(p)
    assert c.enabled and c.rrf_k == 24 and c.drift_reset_window == 15
    assert c.ema_alpha == PredictorConfig().ema_alpha
    p.write_text("predictor:\n  bogusKey: 1\n")
    with pytest.raises(ConfigError, match=r"agent.yaml: unknown key predictor.bogusKey"):
        from_agent_yaml(p)
    p.write_text("other: 1\n")
    assert from_agent_yaml(p) == PredictorConfig()


def test_traversal_defaults_and_their_agent_yaml_names():
    c = DEFAULT_CONFIG
    assert (c.max_aspects_per_entity, c.max_attributes_per_aspect) == (10, 20)
    assert (c.min_dependency_strength, c.min_confidence, c.max_branching) == (0.3, 0.5, 4)
    assert (c.max_traversal_paths, c.boost_weight, c.constraint_budget_chars) == (50, 0.2, 1000)
    assert c.traversal_max_share == 0.25
    block = {"maxAspectsPerEntity": 3, "minDependencyStrength": 0.5, "traversalMaxShare": 1}
    got = from_mapping(block)
    assert (got.max_aspects_per_entity, got.min_dependency_strength) == (3, 0.5)
    assert got.traversal_max_share == 1
    with pytest.raises(ConfigError, match=r"predictor.traversalMaxShare: 1.5 is outside \[0, 1\]"):
        from_mapping({"traversalMaxShare": 1.5})
    with pytest.raises(ConfigError, match="predictor.maxBranching: 0 must be positive"):
        from_mapping({"maxBranching": 0})
