"""One definition on both sides: the feature spec, the hash trick and the client's policy
numbers that `signet_scorer` holds are the ones the trainer and the config use."""

from __future__ import annotations

from signet_bench.config import DEFAULT_CONFIG
from signet_scorer import contract
from signet_scorer.contract import feature_spec_hash


def test_feature_spec_is_the_configs():
    assert contract.N_FEATURES == len(contract.FEATURE_NAMES) == DEFAULT_CONFIG.extra_features
    assert contract.FEATURE_SPEC_HASH == feature_spec_hash(contract.FEATURE_SPEC)


def test_client_policy_is_the_seeds():
    assert contract.CLIENT_TIMEOUTS_MS["score"] == DEFAULT_CONFIG.score_timeout_ms
    assert contract.CRASH_DISABLE_THRESHOLD == DEFAULT_CONFIG.crash_disable_threshold


def test_the_context_fallback_is_one_value():
    """The hook's context fallback and the workbench's config key are the contract's number."""
    assert DEFAULT_CONFIG.context_fallback_top == contract.CONTEXT_TOP
