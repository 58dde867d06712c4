"""The scorer's parameter set: names, shapes, initialisation, spec hash."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.metrics import ndcg_at_k
from signet_bench.daemon.ranking.prefilter import cosine_to
from signet_bench.learn.model.params import (
    COSINE_WEIGHT_INIT,
    EXTENSION_PARAMS,
    LAYER_NORM_PARAMS,
    SIGNET_PARAMS,
    extensions_are_neutral,
    gate_width,
    init_params,
    layer_norm_is_identity,
    neutral_extensions,
    param_count,
    param_shapes,
    shape_problems,
    signal_weights_init,
    signet_init_params,
)
from signet_bench.learn.model.scorer import SessionArrays, score_session
from signet_bench.learn.samples import SessionSample
from signet_bench.learn.train import TrainOptions, train_model
from signet_scorer.contract import N_SIGNALS, feature_spec_hash


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
        "cosine_weight": (1,),
        "signal_weights": (N_SIGNALS,),
    }
    assert tuple(shapes)[:7] == SIGNET_PARAMS
    assert tuple(shapes)[7:11] == LAYER_NORM_PARAMS
    assert tuple(shapes)[7:] == EXTENSION_PARAMS
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
    assert not extensions_are_neutral(params)  # the cosine and lexical weights
    params["cosine_weight"][:] = 0.0
    assert not extensions_are_neutral(params)  # the lexical weight
    params["signal_weights"][:] = 0.0
    assert extensions_are_neutral(params)
    params["query_time"][0, 0] = 0.1
    assert layer_norm_is_identity(params) and not extensions_are_neutral(params)


def test_fresh_model_has_the_cosine_term_alone():
    """q_proj and gate_proj zero: the attention and gate terms are exactly 0, the cosine weight
    COSINE_WEIGHT_INIT; k_proj is the identity, so q_proj gets a gradient from the first step."""
    params = init_params(DEFAULT_CONFIG, 768)
    d = DEFAULT_CONFIG.internal_dim
    assert params["cosine_weight"].tolist() == [COSINE_WEIGHT_INIT] and COSINE_WEIGHT_INIT > 0
    assert not params["q_proj"].any() and not params["gate_proj"].any()
    np.testing.assert_array_equal(params["k_proj"], np.eye(d))
    assert params["v_proj"].std() > 0 and params["down_proj"].std() > 0


def test_fresh_model_weighs_lexical_as_signets_hybrid():
    """The lexical weight is 0.3/0.7 of the cosine weight (Signet's hybrid), every other signal
    weight 0; the same ratio for any cosine weight."""
    params = init_params(DEFAULT_CONFIG, 768)
    lexical, *others = params["signal_weights"].tolist()
    assert lexical == pytest.approx(COSINE_WEIGHT_INIT * 0.3 / 0.7, rel=1e-15)
    assert others == [0.0] * (N_SIGNALS - 1)
    want = [3.0] + [0.0] * (N_SIGNALS - 1)
    assert signal_weights_init(7.0).tolist() == pytest.approx(want, rel=1e-15)


def test_signet_init_is_signets_start_with_neutral_terms():
    params = signet_init_params(DEFAULT_CONFIG, 768, seed=3)
    assert list(params) == list(param_shapes(DEFAULT_CONFIG, 768))
    assert extensions_are_neutral(params)
    for name, value in neutral_extensions().items():
        np.testing.assert_array_equal(params[name], value)
    for name in ("q_proj", "k_proj", "gate_proj"):  # drawn at random, as Signet does
        assert abs(params[name].std() - 1 / np.sqrt(64)) < 0.02, name
    assert abs(params["down_proj"].std() - 1 / np.sqrt(768)) < 0.002


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


def test_param_count_default_dims():
    params = init_params(DEFAULT_CONFIG, 768)
    signet = 64 * 768 + 2 * 64 * 64 + 32 * 64 + 114 + 16384 * 64 + 32 * 64
    assert param_count(params) == signet + 4 * 64 + 32 * 64 + 64 * 7 + 1 + N_SIGNALS
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


# --- a fresh model learns beyond cosine ----------------------------------------------------------

LEARN_CFG = DEFAULT_CONFIG.replace(internal_dim=8, value_dim=4, hash_buckets=64, project_slots=4)
LEARN_DIM = 16


def useful_direction_sessions(count: int, seed: int) -> list[SessionSample]:
    """Sessions whose labels follow a fixed direction of the embedding space (memories of one
    kind are useful whatever the session is about) and not the context: cosine(context,
    memory) knows nothing of it."""
    rng = np.random.default_rng(seed)
    useful = np.random.default_rng(99).normal(size=LEARN_DIM)
    useful /= np.linalg.norm(useful)
    out = []
    for i in range(count):
        n = 16
        emb = rng.normal(size=(n, LEARN_DIM))
        emb /= np.linalg.norm(emb, axis=1, keepdims=True)
        context = rng.normal(size=LEARN_DIM)
        out.append(
            SessionSample(
                session_key=f"s{seed}-{i}",
                start=datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=i),
                project=None,
                confidence=1.0,
                continuity=1.0,
                memory_ids=np.array([f"m{seed}-{i}-{j:02d}" for j in range(n)], dtype=object),
                context=(context / np.linalg.norm(context)).astype(np.float32),
                cand_emb=emb.astype(np.float32),
                has_emb=np.ones(n, dtype=bool),
                tokens=tuple(np.zeros(0, dtype=np.int64) for _ in range(n)),
                features=np.zeros((n, 17), dtype=np.float32),
                project_slot=0,
                labels=np.clip(0.5 + 1.5 * (emb @ useful), 0.0, 1.0),
                baseline_rank=np.arange(n),
            )
        )
    return out


def mean_ndcg(params: dict[str, np.ndarray] | None, sessions: list[SessionSample]) -> float:
    """Mean NDCG@10 against the labels of the model's order (cosine's when params is None)."""
    values = []
    for s in sessions:
        if params is None:
            scores = cosine_to(s.context, s.cand_emb)
        else:
            session = SessionArrays(s.context, s.cand_emb, s.has_emb, s.tokens, s.features, 0)
            scores = score_session(params, session, LEARN_CFG)
        values.append(ndcg_at_k(s.labels, scores, s.memory_ids, k=10))
    return float(np.mean(values))


def test_a_fresh_model_learns_what_cosine_cannot_see():
    """Trained (`train.train_model`, fresh weights) on sessions whose labels cosine does not
    predict, the model leaves cosine's order and ranks held-out sessions far better."""
    train_set = useful_direction_sessions(40, seed=1)
    held_out = useful_direction_sessions(30, seed=2)
    fresh = init_params(LEARN_CFG, LEARN_DIM)
    assert mean_ndcg(fresh, held_out) == pytest.approx(mean_ndcg(None, held_out), abs=1e-12)
    result = train_model(
        train_set, None, cfg=LEARN_CFG, epochs=50, options=TrainOptions(native_dim=LEARN_DIM)
    )
    assert result.accepted, result.gate_reason
    cosine, learned = mean_ndcg(None, held_out), mean_ndcg(result.params, held_out)
    assert learned > cosine + 0.1, (cosine, learned)
