"""One definition on both sides: the feature spec, the hash trick and the client's policy
numbers that `signet_scorer` holds are the ones the trainer and the config use."""

from __future__ import annotations

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon import features
from signet_bench.learn.model.params import feature_spec_hash
from signet_scorer import contract


def test_feature_spec_is_the_trainers():
    assert contract.FEATURE_NAMES == features.FEATURE_NAMES
    assert contract.N_FEATURES == features.N_FEATURES == DEFAULT_CONFIG.extra_features
    assert contract.SESSION_FEATURES == features.SESSION_FEATURES
    assert contract.FEATURE_SPEC == features.FEATURE_SPEC
    assert contract.FEATURE_SPEC_HASH == feature_spec_hash(features.FEATURE_SPEC)


def test_client_policy_is_the_seeds():
    assert contract.CLIENT_TIMEOUTS_MS["score"] == DEFAULT_CONFIG.score_timeout_ms
    assert contract.CRASH_DISABLE_THRESHOLD == DEFAULT_CONFIG.crash_disable_threshold
