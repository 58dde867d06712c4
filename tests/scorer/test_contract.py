"""One definition on both sides: the feature spec, the hash trick and the client's policy
numbers that `signet_scorer` holds are the ones the trainer and the config use."""

from __future__ import annotations

import signet_scorer.tokenize as hash_trick
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon import features
from signet_bench.learn.model import tokenizer
from signet_bench.learn.model.params import feature_spec_hash
from signet_scorer import contract


def test_feature_spec_is_the_trainers():
    assert contract.FEATURE_NAMES == features.FEATURE_NAMES
    assert contract.N_FEATURES == features.N_FEATURES == DEFAULT_CONFIG.extra_features
    assert contract.SESSION_FEATURES == features.SESSION_FEATURES
    assert contract.FEATURE_SPEC == features.FEATURE_SPEC
    assert contract.FEATURE_SPEC_HASH == feature_spec_hash(features.FEATURE_SPEC)


def test_the_model_tokenizer_is_the_serving_one():
    text = "Deploy via staging_cluster-2; then prod."
    assert (
        tokenizer.token_buckets(text).tolist()
        == hash_trick.token_buckets(text, DEFAULT_CONFIG.hash_buckets).tolist()
    )
    assert tokenizer.project_slot("signetai") == hash_trick.project_slot(
        "signetai", DEFAULT_CONFIG.project_slots
    )


def test_client_policy_is_the_seeds():
    assert contract.CLIENT_TIMEOUTS_MS["score"] == DEFAULT_CONFIG.score_timeout_ms
    assert contract.CRASH_DISABLE_THRESHOLD == DEFAULT_CONFIG.crash_disable_threshold
