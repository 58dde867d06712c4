"""Adam with lazy sparse-row updates, parameter copies, and a short training run."""

from __future__ import annotations

import math

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.model.optim import Adam, SparseRows, copy_params, densify
from signet_bench.learn.model.scorer import (
    SessionArrays,
    batch_from_sessions,
    forward,
    loss_and_grads,
)
from tests.learn.model.test_scorer import BUCKETS, CFG, NATIVE, F, small_params

LR = 0.1
TINY = DEFAULT_CONFIG.replace(learning_rate=LR)


def test_two_adam_steps_match_the_hand_computed_update():
    params = {"w": np.array([1.0, -2.0])}
    opt = Adam(params, TINY)
    g1, g2 = np.array([0.5, -0.1]), np.array([0.2, 0.3])
    opt.step(params, {"w": g1})
    # step 1: m_hat = g, v_hat = g², so each weight moves by lr·g/(|g| + eps)
    w1 = np.array([1.0 - LR * 0.5 / (0.5 + 1e-8), -2.0 + LR * 0.1 / (0.1 + 1e-8)])
    np.testing.assert_allclose(params["w"], w1, rtol=1e-14)
    opt.step(params, {"w": g2})
    for i in range(2):
        m = 0.9 * 0.1 * g1[i] + 0.1 * g2[i]
        v = 0.999 * 0.001 * g1[i] ** 2 + 0.001 * g2[i] ** 2
        m_hat, v_hat = m / (1 - 0.9**2), v / (1 - 0.999**2)
        expected = w1[i] - LR * m_hat / (math.sqrt(v_hat) + 1e-8)
        assert params["w"][i] == pytest.approx(expected, rel=1e-13)
    assert opt.t == 2


def test_defaults_come_from_the_config():
    opt = Adam({"w": np.zeros(1)})
    assert (opt.lr, opt.beta1, opt.beta2, opt.eps) == (1e-3, 0.9, 0.999, 1e-8)


def _table_params(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"hash_embeddings": rng.normal(size=(20, 3)), "w": rng.normal(size=(2, 2))}


def test_sparse_step_touches_only_the_given_rows_and_equals_dense_adam_on_step_one():
    rng = np.random.default_rng(1)
    rows = np.array([2, 7, 11])
    g_rows, g_w = rng.normal(size=(3, 3)), rng.normal(size=(2, 2))
    lazy, full = _table_params(), _table_params()
    before = copy_params(lazy)
    opt_lazy, opt_full = Adam(lazy, TINY), Adam(full, TINY)
    opt_lazy.step(lazy, {"hash_embeddings": SparseRows(rows, g_rows), "w": g_w})
    dense_g = np.zeros((20, 3))
    dense_g[rows] = g_rows
    opt_full.step(full, {"hash_embeddings": dense_g, "w": g_w})

    others = np.setdiff1d(np.arange(20), rows)
    assert np.array_equal(lazy["hash_embeddings"][others], before["hash_embeddings"][others])
    assert not np.any(opt_lazy.m["hash_embeddings"][others])
    assert not np.any(opt_lazy.v["hash_embeddings"][others])
    assert np.all(lazy["hash_embeddings"][rows] != before["hash_embeddings"][rows])
    np.testing.assert_array_equal(lazy["hash_embeddings"], full["hash_embeddings"])
    np.testing.assert_array_equal(lazy["w"], full["w"])


def test_lazy_rows_wait_for_their_next_gradient_with_global_bias_correction():
    params = _table_params()
    opt = Adam(params, TINY)
    g = np.array([[0.3, -0.2, 0.1]])
    opt.step(params, {"hash_embeddings": SparseRows(np.array([4]), g)})
    after_one = params["hash_embeddings"].copy()
    opt.step(params, {"hash_embeddings": SparseRows(np.array([9]), g)})
    # row 4 has no gradient at step 2: lazy Adam leaves it (dense Adam would keep moving it)
    np.testing.assert_array_equal(params["hash_embeddings"][4], after_one[4])
    # row 9's first gradient arrives at global step 2: bias correction uses t = 2
    m_hat = 0.1 * g[0] / (1 - 0.9**2)
    v_hat = 0.001 * g[0] ** 2 / (1 - 0.999**2)
    expected = after_one[9] - LR * m_hat / (np.sqrt(v_hat) + 1e-8)
    np.testing.assert_allclose(params["hash_embeddings"][9], expected, rtol=1e-13)


def test_duplicate_sparse_rows_are_summed():
    a = SparseRows(np.array([5, 1, 5]), np.array([[1.0, 2.0], [3.0, 4.0], [10.0, 20.0]]))
    c = a.coalesce()
    assert c.rows.tolist() == [1, 5]
    np.testing.assert_array_equal(c.values, [[3.0, 4.0], [11.0, 22.0]])
    np.testing.assert_array_equal(densify(a, (6, 2)), densify(c, (6, 2)))
    p1, p2 = {"e": np.ones((6, 2))}, {"e": np.ones((6, 2))}
    Adam(p1, TINY).step(p1, {"e": a})
    Adam(p2, TINY).step(p2, {"e": densify(c, (6, 2))})
    np.testing.assert_array_equal(p1["e"], p2["e"])


def test_parameters_without_a_gradient_are_left_alone():
    params = _table_params()
    before = copy_params(params)
    Adam(params, TINY).step(params, {"w": np.ones((2, 2))})
    np.testing.assert_array_equal(params["hash_embeddings"], before["hash_embeddings"])


def test_copy_params_is_deep():
    params = _table_params()
    copy = copy_params(params)
    Adam(copy, TINY).step(copy, {"w": np.ones((2, 2))})
    copy["hash_embeddings"][0, 0] = 123.0
    assert params["hash_embeddings"][0, 0] != 123.0
    assert not np.array_equal(params["w"], copy["w"])


def test_state_dict_round_trip_resumes_identically():
    rng = np.random.default_rng(3)
    grads = [{"w": rng.normal(size=(2, 2))} for _ in range(4)]
    a = _table_params()
    opt_a = Adam(a, TINY)
    for g in grads[:2]:
        opt_a.step(a, g)
    b = copy_params(a)
    opt_b = Adam(b, TINY)
    opt_b.load_state_dict(opt_a.state_dict())
    for g in grads[2:]:
        opt_a.step(a, g)
        opt_b.step(b, g)
    np.testing.assert_array_equal(a["w"], b["w"])
    assert opt_b.t == 4


def test_a_few_hundred_steps_reduce_the_loss_on_a_toy_problem():
    """Relevance planted in the embeddings (a hidden direction) and in two 'good' buckets."""
    rng = np.random.default_rng(11)
    direction = rng.normal(size=NATIVE)
    contexts, embs, has, toks, feats, slots, labels = [], [], [], [], [], [], []
    for _ in range(24):
        n = int(rng.integers(4, 8))
        e = rng.normal(size=(n, NATIVE))
        h = rng.random(n) < 0.7
        t = [None if h[j] else list(rng.integers(0, BUCKETS, 4)) for j in range(n)]
        lab = np.tanh(e @ direction / 2)
        for j in np.flatnonzero(~h):
            lab[j] = 1.0 if t[j][0] in (3, 4) else -0.5
        contexts.append(rng.normal(size=NATIVE))
        embs.append(e)
        has.append(h)
        toks.append(t)
        feats.append(rng.normal(size=(n, F)))
        slots.append(int(rng.integers(0, 6)))
        labels.append(lab)
    columns = zip(contexts, embs, has, toks, feats, slots, strict=True)
    batch = batch_from_sessions(
        [SessionArrays(*c, labels=lab) for c, lab in zip(columns, labels, strict=True)]
    )
    live = small_params(4)
    params = copy_params(live)
    opt = Adam(params, CFG.replace(learning_rate=1e-2))
    first, _ = loss_and_grads(params, batch, CFG)
    for _ in range(300):
        loss, grads = loss_and_grads(params, batch, CFG)
        assert np.isfinite(loss)
        opt.step(params, grads)
    assert loss < 0.5 * first
    unused = np.setdiff1d(np.arange(BUCKETS), batch.tok_bucket)
    np.testing.assert_array_equal(
        params["hash_embeddings"][unused], live["hash_embeddings"][unused]
    )
    # training ran on the copy
    assert not np.array_equal(params["down_proj"], live["down_proj"])
    assert np.all(np.isfinite(forward(params, batch, CFG).probs))


def test_sparse_step_over_many_rows_equals_dense_adam_on_step_one():
    rng = np.random.default_rng(2)
    rows = np.sort(rng.choice(1000, 600, replace=False))
    values = rng.normal(size=(600, 4))
    lazy = {"e": rng.normal(size=(1000, 4))}
    full = copy_params(lazy)
    Adam(lazy, TINY).step(lazy, {"e": SparseRows(rows, values)})
    Adam(full, TINY).step(full, {"e": densify(SparseRows(rows, values), (1000, 4))})
    np.testing.assert_array_equal(lazy["e"], full["e"])


def test_dense_blocks_stepped_together_equal_each_block_stepped_alone():
    """Several dense blocks share one flat update; the result is each block's own Adam, also
    when a step leaves a block out (it is then left alone)."""
    rng = np.random.default_rng(4)
    shapes = {"a": (3, 4), "b": (5,), "c": (2, 2, 2)}
    together = {k: rng.normal(size=s) for k, s in shapes.items()}
    alone = copy_params(together)
    opt = Adam(together, TINY)
    singles = {k: Adam({k: alone[k]}, TINY) for k in shapes}
    for step in range(4):
        names = ("a", "c") if step == 2 else tuple(shapes)
        grads = {k: rng.normal(size=shapes[k]) for k in names}
        opt.step(together, grads)
        for k in shapes:
            # a block left out still counts the step (the bias correction uses the global t)
            singles[k].t += k not in names
            if k in names:
                singles[k].step({k: alone[k]}, {k: grads[k]})
    for k in shapes:
        np.testing.assert_allclose(together[k], alone[k], rtol=1e-14, err_msg=k)


def test_a_gradient_of_the_wrong_size_is_refused():
    params = {"a": np.zeros((2, 2)), "b": np.zeros(3)}
    opt = Adam(params, TINY)
    with pytest.raises(ValueError, match="gradient of b"):
        opt.step(params, {"a": np.ones((2, 2)), "b": np.ones(4)})
    assert opt.t == 0 and not params["a"].any()  # nothing moved
