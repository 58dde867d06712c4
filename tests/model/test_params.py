"""The scorer's parameter set: names, shapes, initialisation, spec hash."""

from __future__ import annotations

import numpy as np

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.model.params import (
    LAYER_NORM_PARAMS,
    SIGNET_PARAMS,
    extensions_are_neutral,
    feature_spec_hash,
    gate_width,
    init_params,
    layer_norm_is_identity,
    param_count,
    param_shapes,
    shape_problems,
)


def test_default_shapes_match_signet():
    shapes = param_shapes(DEFAULT_CONFIG, 768)
    assert shapes == {
        "down_proj": (64, 768),
        "q_proj": (64, 64),
        "k_proj": (64, 64),
        "v_proj": (32, 64),
        "gate_proj": (1, 114),
        "hash_embeddings": (16384, 64),
        "project_embeddings": (32, 64),
        "ln_embedded_gamma": (64,),
        "ln_embedded_beta": (64,),
        "ln_text_gamma": (64,),
        "ln_text_beta": (64,),
        "query_project": (32, 64),
        "query_time": (64, 7),
    }
    assert tuple(shapes)[:7] == SIGNET_PARAMS
    assert tuple(shapes)[7:11] == LAYER_NORM_PARAMS
    assert gate_width() == 114


def test_native_dim_defaults_to_config_and_dims_follow_config():
    assert param_shapes()["down_proj"] == (64, DEFAULT_CONFIG.native_dim)
    small = DEFAULT_CONFIG.replace(internal_dim=8, value_dim=4, hash_buckets=128, project_slots=4)
    shapes = param_shapes(small, 256)
    assert shapes["down_proj"] == (8, 256)
    assert shapes["gate_proj"] == (1, 4 + 17 + 8 + 1)
    assert shapes["hash_embeddings"] == (128, 8)


def test_init_shapes_dtype_and_identity_layer_norm():
    params = init_params(DEFAULT_CONFIG, 768)
    for name, shape in param_shapes(DEFAULT_CONFIG, 768).items():
        assert params[name].shape == shape
        assert params[name].dtype == np.float64
    for name in LAYER_NORM_PARAMS:
        assert np.all(params[name] == (1.0 if name.endswith("gamma") else 0.0))
    assert layer_norm_is_identity(params)
    assert not params["query_project"].any() and not params["query_time"].any()
    assert extensions_are_neutral(params)
    params["query_time"][0, 0] = 0.1
    assert layer_norm_is_identity(params) and not extensions_are_neutral(params)


def test_init_std_follows_fan_in():
    params = init_params(DEFAULT_CONFIG, 768)
    assert abs(params["down_proj"].std() - 1 / np.sqrt(768)) < 0.002
    assert abs(params["hash_embeddings"].std() - 1 / np.sqrt(64)) < 0.002
    assert abs(params["hash_embeddings"].mean()) < 0.002


def test_init_is_seeded():
    a, b = init_params(seed=1), init_params(seed=1)
    c = init_params(seed=2)
    assert all(np.array_equal(a[n], b[n]) for n in a)
    assert not np.array_equal(a["down_proj"], c["down_proj"])
    assert not np.array_equal(a["v_proj"], c["v_proj"])


def test_query_and_key_start_as_the_identity():
    """Untrained, the attention logit is LN(W_down context)·LN(W_down memory)/sqrt(d)."""
    params = init_params(DEFAULT_CONFIG, 768)
    d = DEFAULT_CONFIG.internal_dim
    np.testing.assert_array_equal(params["q_proj"], np.eye(d))
    np.testing.assert_array_equal(params["k_proj"], np.eye(d))


def test_param_count_default_dims():
    params = init_params(DEFAULT_CONFIG, 768)
    signet = 64 * 768 + 2 * 64 * 64 + 32 * 64 + 114 + 16384 * 64 + 32 * 64
    assert param_count(params) == signet + 4 * 64 + 32 * 64 + 64 * 7
    assert param_count({n: params[n] for n in SIGNET_PARAMS}) == signet


def test_shape_problems_names_each_fault():
    params = init_params(DEFAULT_CONFIG, 768)
    assert shape_problems(params, DEFAULT_CONFIG, 768) == []
    del params["q_proj"]
    params["extra"] = np.zeros(3)
    params["v_proj"] = np.zeros((31, 64))
    problems = shape_problems(params, DEFAULT_CONFIG, 768)
    assert "missing parameter 'q_proj'" in problems
    assert "unexpected parameter 'extra'" in problems
    assert any("'v_proj' has shape (31, 64), expected (32, 64)" in p for p in problems)


def test_layer_norm_identity_detects_learned_affine():
    params = init_params()
    params["ln_text_beta"] = params["ln_text_beta"] + 0.01
    assert not layer_norm_is_identity(params)
    assert layer_norm_is_identity({n: params[n] for n in SIGNET_PARAMS})


def test_feature_spec_hash_is_short_and_stable():
    h = feature_spec_hash("recency,importance,usage")
    assert h == "e4b0ef969e11d3d2"  # sha256("recency,importance,usage")[:16]
    assert h == feature_spec_hash("recency,importance,usage")
    assert h != feature_spec_hash("recency,importance")
    assert all(c in "0123456789abcdef" for c in h)
