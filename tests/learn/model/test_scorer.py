"""The scorer's forward/backward and the listwise loss: gradients, masking, temperature rule."""

from __future__ import annotations

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.ranking.prefilter import cosine_to
from signet_bench.learn.model.checkpoint import read_sgpt, write_sgpt
from signet_bench.learn.model.loss import (
    is_low_signal,
    label_spread,
    listwise_loss,
    session_temperature,
    temperatures,
)
from signet_bench.learn.model.optim import SparseRows, densify
from signet_bench.learn.model.params import (
    COSINE_WEIGHT_INIT,
    EXTENSION_PARAMS,
    SIGNET_PARAMS,
    init_params,
    neutral_extensions,
)
from signet_bench.learn.model.scorer import (
    Batch,
    SessionArrays,
    backward,
    batch_from_sessions,
    forward,
    loss_and_grads,
    score_session,
)
from signet_scorer.contract import N_SIGNALS
from signet_scorer.signals import HYBRID_VECTOR_WEIGHT

NATIVE, D, V, F, BUCKETS, SLOTS = 12, 8, 4, 17, 50, 6
CFG = DEFAULT_CONFIG.replace(
    internal_dim=D, value_dim=V, extra_features=F, hash_buckets=BUCKETS, project_slots=SLOTS
)
BLOCKS = SIGNET_PARAMS + EXTENSION_PARAMS  # every parameter block, in checkpoint order


def small_params(seed: int = 0) -> dict[str, np.ndarray]:
    """Small float64 weights under the production names, LN affines away from identity."""
    rng = np.random.default_rng(seed)
    return {
        "down_proj": rng.normal(0, 1 / np.sqrt(NATIVE), (D, NATIVE)),
        "q_proj": rng.normal(0, 1 / np.sqrt(D), (D, D)),
        "k_proj": rng.normal(0, 1 / np.sqrt(D), (D, D)),
        "v_proj": rng.normal(0, 1 / np.sqrt(D), (V, D)),
        "gate_proj": rng.normal(0, 0.5, (1, V + F + D + 1)),
        "hash_embeddings": rng.normal(0, 1, (BUCKETS, D)),
        "project_embeddings": rng.normal(0, 1, (SLOTS, D)),
        "ln_embedded_gamma": 1 + 0.3 * rng.normal(size=D),
        "ln_embedded_beta": 0.3 * rng.normal(size=D),
        "ln_text_gamma": 1 + 0.3 * rng.normal(size=D),
        "ln_text_beta": 0.3 * rng.normal(size=D),
        "query_project": 0.5 * rng.normal(size=(SLOTS, D)),
        "query_time": 0.5 * rng.normal(size=(D, 7)),
        "cosine_weight": np.array([0.8]),
        "signal_weights": 0.7 * rng.normal(size=N_SIGNALS),
    }


def sessions(seed: int = 1) -> dict[str, list]:
    """Three sessions: mixed (with a token-less text candidate), text-only, embedded-only.
    Labels spread well apart so the loss is not flat."""
    rng = np.random.default_rng(seed)
    sizes = (5, 3, 4)
    has = [
        np.array([True, False, True, False, True]),
        np.array([False, False, False]),
        np.array([True, True, True, True]),
    ]
    tokens = [
        [None, [3, 7, 7, 12], None, [], None],  # candidate 3: text path with no tokens
        [[1, 2, 3], [3, 3], [49, 0, 1, 2, 2]],  # buckets shared across candidates
        [[5], None, None, None],  # tokens of an embedded candidate are ignored
    ]
    return {
        "contexts": [rng.normal(size=NATIVE) for _ in sizes],
        "cand_embs": [rng.normal(size=(n, NATIVE)) for n in sizes],
        "has_embs": has,
        "token_lists": tokens,
        "features": [rng.normal(size=(n, F)) for n in sizes],
        "project_slots": [2, 5, 2],  # two sessions share a slot
        "labels": [rng.uniform(-0.5, 1.0, size=n) for n in sizes],
        "signals": [rng.uniform(0.0, 1.0, size=(n, N_SIGNALS)) for n in sizes],
    }


def as_sessions(cols: dict[str, list]) -> list[SessionArrays]:
    """`sessions()`'s columns as one SessionArrays per session (no signals or labels where the
    column is None or absent)."""
    b = len(cols["contexts"])
    signals, labels = cols.get("signals") or [None] * b, cols.get("labels") or [None] * b
    keys = ("contexts", "cand_embs", "has_embs", "token_lists", "features", "project_slots")
    return [SessionArrays(*(cols[k][i] for k in keys), signals[i], labels[i]) for i in range(b)]


def make_batch(seed: int = 1, pad_to: int | None = None) -> Batch:
    """The three sessions as a Batch, padded (with garbage in the padded slots) to pad_to."""
    s = sessions(seed)
    batch = batch_from_sessions(as_sessions(s))
    if pad_to is None:
        return batch
    rng = np.random.default_rng(99)
    b, n = batch.mask.shape
    extra = pad_to - n

    def pad(a: np.ndarray, fill: np.ndarray) -> np.ndarray:
        return np.concatenate([a, fill], axis=1)

    owner_b, owner_n = np.divmod(batch.tok_owner, n)
    # garbage tokens owned by padded slots must be ignored too
    junk_owner = np.array([0 * pad_to + n, 2 * pad_to + pad_to - 1])
    return Batch(
        context=batch.context,
        cand_emb=pad(batch.cand_emb, rng.normal(size=(b, extra, NATIVE))),
        has_emb=pad(batch.has_emb, rng.random((b, extra)) < 0.5),
        tok_bucket=np.concatenate([batch.tok_bucket, [4, 9]]),
        tok_owner=np.concatenate([owner_b * pad_to + owner_n, junk_owner]),
        features=pad(batch.features, rng.normal(size=(b, extra, F))),
        project_slot=batch.project_slot,
        mask=pad(batch.mask, np.zeros((b, extra), dtype=bool)),
        labels=pad(batch.labels, rng.normal(size=(b, extra))),
        signals=pad(batch.signals, rng.normal(size=(b, extra, N_SIGNALS))),
    )


def dense(grads: dict, params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {k: densify(g, params[k].shape) for k, g in grads.items()}


def numeric_grad(f, params: dict[str, np.ndarray], name: str, idx: tuple, h: float = 1e-5):
    p = params[name]
    old = p[idx]
    p[idx] = old + h
    up = f(params)
    p[idx] = old - h
    down = f(params)
    p[idx] = old
    return (up - down) / (2 * h)


def check_entries(name: str, params: dict[str, np.ndarray], rng, hash_rows=None, k: int = 30):
    """Entries to check: all of a small block, else a random subset (hash: used rows + others)."""
    shape = params[name].shape
    if name == "hash_embeddings":
        rows = np.concatenate([hash_rows, [10, 20]])  # two rows no token uses
        return [(int(r), int(c)) for r in rows for c in rng.choice(shape[1], 3, replace=False)]
    every = list(np.ndindex(shape))
    if len(every) <= k:
        return every
    return [every[i] for i in rng.choice(len(every), k, replace=False)]


def rel_err(a: float, n: float) -> float:
    return abs(a - n) / max(abs(a) + abs(n), 1e-7)


@pytest.mark.parametrize("name", BLOCKS)
def test_gradients_match_finite_differences_for_any_logit_gradient(name):
    """backward() for L = sum w·logits + 0.5·sum logits² over real candidates; this exercises
    every block, including the per-session terms that the softmax would cancel."""
    params, batch = small_params(), make_batch(pad_to=7)
    w = np.random.default_rng(5).normal(size=batch.mask.shape)

    def f(p):
        z = np.where(batch.mask, forward(p, batch, CFG).logits, 0.0)
        return float(np.sum(w * z) + 0.5 * np.sum(z * z))

    fwd = forward(params, batch, CFG)
    z = np.where(batch.mask, fwd.logits, 0.0)
    grads = dense(backward(params, fwd, w + z), params)
    rng = np.random.default_rng(7)
    for idx in check_entries(name, params, rng, hash_rows=np.unique(batch.tok_bucket)):
        num = numeric_grad(f, params, name, idx)
        assert rel_err(grads[name][idx], num) < 1e-4, (name, idx, grads[name][idx], num)


@pytest.mark.parametrize("name", BLOCKS)
def test_loss_gradients_match_finite_differences(name):
    params, batch = small_params(), make_batch(pad_to=7)

    def f(p):
        return loss_and_grads(p, batch, CFG)[0]

    loss, g = loss_and_grads(params, batch, CFG)
    assert np.isfinite(loss) and loss > 0
    grads = dense(g, params)
    rng = np.random.default_rng(8)
    for idx in check_entries(name, params, rng, hash_rows=np.unique(batch.tok_bucket)):
        num = numeric_grad(f, params, name, idx)
        a = grads[name][idx]
        if name == "project_embeddings" or (name == "gate_proj" and idx[1] >= V + F):
            # per-session constants cancel in the softmax: exactly no gradient
            assert abs(a) < 1e-12 and abs(num) < 1e-8, (name, idx, a, num)
        else:
            assert rel_err(a, num) < 1e-4, (name, idx, a, num)


def test_hash_gradient_is_sparse_over_used_buckets():
    params, batch = small_params(), make_batch()
    _, grads = loss_and_grads(params, batch, CFG)
    g = grads["hash_embeddings"]
    assert isinstance(g, SparseRows)
    # text-path tokens only: bucket 5 belongs to an embedded candidate
    assert g.rows.tolist() == [0, 1, 2, 3, 7, 12, 49]
    assert g.values.shape == (7, D)
    assert all(k in grads for k in BLOCKS)


def assert_same_loss_and_gradients(params: dict, batch: Batch, reference: Batch) -> dict:
    """Loss and every gradient block of `batch` equal those of `reference` (returned)."""
    loss_ref, g_ref = loss_and_grads(params, reference, CFG)
    loss, g = loss_and_grads(params, batch, CFG)
    assert loss == pytest.approx(loss_ref, rel=1e-12)
    for name in BLOCKS:
        np.testing.assert_allclose(
            densify(g[name], params[name].shape),
            densify(g_ref[name], params[name].shape),
            rtol=1e-10,
            atol=1e-14,
            err_msg=name,
        )
    return g_ref


def test_padding_changes_no_score_and_no_gradient():
    params = small_params()
    tight, padded = make_batch(), make_batch(pad_to=9)
    f_tight, f_pad = forward(params, tight, CFG), forward(params, padded, CFG)
    n = tight.mask.shape[1]
    np.testing.assert_allclose(f_pad.probs[:, :n], f_tight.probs, rtol=1e-12, atol=1e-15)
    assert np.all(f_pad.probs[:, n:] == 0.0)
    assert np.all(np.isneginf(f_pad.logits[~padded.mask]))
    assert_same_loss_and_gradients(params, padded, tight)


def test_packed_batches_match_padded_ones():
    """real_emb (no padding; text-path rows never read) gives the padded batch's numbers."""
    params, s = small_params(), sessions()
    padded = batch_from_sessions(as_sessions(s))
    packed = batch_from_sessions(as_sessions(s), packed=True)
    assert packed.cand_emb is None
    assert packed.real_emb.shape == (int(padded.mask.sum()), NATIVE)
    text_rows = np.flatnonzero(~packed.has_emb[packed.mask])
    packed.real_emb[text_rows] = 1e6
    np.testing.assert_allclose(
        forward(params, packed, CFG).probs, forward(params, padded, CFG).probs, rtol=1e-12
    )
    g_a = assert_same_loss_and_gradients(params, packed, padded)
    # float32 rows take the float32 path; gradients stay close to the exact ones
    s32 = {**s, "cand_embs": [e.astype(np.float32) for e in s["cand_embs"]]}
    _, g32 = loss_and_grads(params, batch_from_sessions(as_sessions(s32), packed=True), CFG)
    for name in ("down_proj", "q_proj", "ln_embedded_gamma"):
        np.testing.assert_allclose(g32[name], g_a[name], rtol=1e-3, atol=1e-6, err_msg=name)
    packed.real_emb = packed.real_emb[1:]
    with pytest.raises(ValueError, match="real_emb"):
        forward(params, packed, CFG)


def test_softmax_sums_to_one_over_real_candidates():
    fwd = forward(small_params(), make_batch(pad_to=8), CFG)
    np.testing.assert_allclose(fwd.probs.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(fwd.probs[fwd.mask] > 0)
    assert np.all(fwd.probs[~fwd.mask] == 0)


def test_text_only_and_mixed_sessions_score():
    params = small_params()
    s = sessions()
    for b in range(3):  # mixed, text-only, embedded-only
        p = score_session(params, as_sessions(s)[b], CFG)
        assert p.shape == (len(s["has_embs"][b]),)
        assert np.all(np.isfinite(p)) and p.sum() == pytest.approx(1.0)
        # one session alone scores as it does inside the batch
        np.testing.assert_allclose(p, forward(params, make_batch(), CFG).probs[b, : p.size])


def test_text_only_session_needs_no_embedding_array():
    params, s = small_params(), sessions()
    args = (s["contexts"][1], None, s["has_embs"][1], s["token_lists"][1], s["features"][1], 5)
    with_none = score_session(params, SessionArrays(*args, s["signals"][1]), CFG)
    expected = forward(params, make_batch(), CFG).probs[1, :3]
    np.testing.assert_allclose(with_none, expected, rtol=1e-12)


def test_text_candidate_without_tokens_encodes_as_text_beta():
    """LN of the zero mean vector is beta_text, so only beta_text·(...) reaches its logit."""
    params = small_params()
    one = batch_from_sessions(
        [
            SessionArrays(
                np.ones(NATIVE),
                np.zeros((2, NATIVE)),
                np.array([False, False]),
                [[], [4, 4]],
                np.zeros((2, F)),
                0,
            )
        ]
    )
    fwd = forward(params, one, CFG)
    np.testing.assert_allclose(fwd.cache.enc[0], params["ln_text_beta"], atol=1e-12)


def test_embedding_rows_of_text_candidates_are_ignored():
    params, batch = small_params(), make_batch()
    before = forward(params, batch, CFG).probs
    batch.cand_emb[~batch.has_emb] = 1e6
    np.testing.assert_array_equal(forward(params, batch, CFG).probs, before)


def test_float32_embeddings_score_close_to_float64():
    params, batch = small_params(), make_batch()
    f64 = forward(params, batch, CFG)
    batch.cand_emb = batch.cand_emb.astype(np.float32)
    f32 = forward(params, batch, CFG)
    np.testing.assert_allclose(f32.probs, f64.probs, rtol=1e-5, atol=1e-7)


def test_production_shapes_run():
    params = init_params(DEFAULT_CONFIG, 768, 3)
    rng = np.random.default_rng(0)
    contexts = [rng.normal(size=768) for _ in range(2)]
    embs = [rng.normal(size=(4, 768)), np.zeros((3, 768))]
    features = [rng.normal(size=(4, 17)), rng.normal(size=(3, 17))]
    batch = batch_from_sessions(
        [
            SessionArrays(
                contexts[0],
                embs[0],
                np.array([True, True, False, True]),
                [None, None, [1, 16383], None],
                features[0],
                0,
                labels=np.array([1.0, 0.0, 0.5, 0.2]),
            ),
            SessionArrays(
                contexts[1],
                embs[1],
                np.zeros(3, dtype=bool),
                [[5, 6], [7], []],
                features[1],
                31,
                labels=np.array([0.7, 0.0, -0.3]),
            ),
        ]
    )
    loss, grads = loss_and_grads(params, batch)
    assert np.isfinite(loss)
    for name, g in grads.items():
        assert densify(g, params[name].shape).shape == params[name].shape


def test_bad_inputs_raise():
    params, batch = small_params(), make_batch()
    batch.tok_bucket = batch.tok_bucket.copy()
    batch.tok_bucket[0] = -1
    with pytest.raises(ValueError, match="tok_bucket"):
        forward(params, batch, CFG)
    batch = make_batch()
    batch.mask[1] = False
    with pytest.raises(ValueError, match="at least one real candidate"):
        forward(params, batch, CFG)
    batch = make_batch()
    batch.labels = None
    with pytest.raises(ValueError, match="labels"):
        loss_and_grads(params, batch, CFG)


# --- the loss --------------------------------------------------------------------------------


def test_loss_is_kl_of_tempered_softmaxes():
    logits = np.array([[1.0, 0.0, -1.0, 7.0]])
    labels = np.array([[0.9, 0.1, 0.5, 123.0]])
    mask = np.array([[True, True, True, False]])
    loss, grad = listwise_loss(logits, labels, mask, 0.5)
    pt = np.exp(labels[0, :3] / 0.5) / np.exp(labels[0, :3] / 0.5).sum()
    pm = np.exp(logits[0, :3] / 0.5) / np.exp(logits[0, :3] / 0.5).sum()
    assert loss == pytest.approx(float(np.sum(pt * np.log(pt / pm))), rel=1e-12)
    np.testing.assert_allclose(grad[0, :3], (pm - pt) / 0.5, rtol=1e-12)
    assert grad[0, 3] == 0.0


def test_loss_is_mean_over_sessions_with_per_session_temperature():
    rng = np.random.default_rng(0)
    logits, labels = rng.normal(size=(2, 4)), rng.normal(size=(2, 4))
    mask = np.ones((2, 4), dtype=bool)
    t = np.array([0.5, 0.3])
    loss, grad = listwise_loss(logits, labels, mask, t)
    parts = [listwise_loss(logits[i : i + 1], labels[i : i + 1], mask[:1], t[i]) for i in range(2)]
    assert loss == pytest.approx((parts[0][0] + parts[1][0]) / 2, rel=1e-12)
    np.testing.assert_allclose(grad[1], parts[1][1][0] / 2, rtol=1e-12)


def test_nan_label_makes_the_loss_non_finite():
    params, batch = small_params(), make_batch()
    batch.labels[1, 0] = np.nan
    loss, _ = loss_and_grads(params, batch, CFG)
    assert not np.isfinite(loss)
    # a NaN in a padded position is not a label at all
    padded = make_batch(pad_to=6)
    padded.labels[:, 5] = np.nan
    assert np.isfinite(loss_and_grads(params, padded, CFG)[0])


def test_nan_logit_makes_the_loss_non_finite():
    loss, _ = listwise_loss(
        np.array([[0.0, np.nan]]), np.array([[0.0, 1.0]]), np.ones((1, 2), bool), 0.5
    )
    assert not np.isfinite(loss)


def test_low_spread_sessions_get_the_sharpened_temperature():
    cfg = PredictorConfig()
    wide = np.array([0.2, 0.9, 0.5])
    narrow = np.array([0.50, 0.55, 0.58, 5.0])
    narrow_mask = np.array([True, True, True, False])  # the padded 5.0 does not count
    assert session_temperature(wide, None, cfg) == 0.5
    assert not is_low_signal(wide, None, cfg)
    assert session_temperature(narrow, narrow_mask, cfg) == 0.3
    assert is_low_signal(narrow, narrow_mask, cfg)
    assert session_temperature(np.array([0.4]), None, cfg) == 0.3  # a single candidate
    assert label_spread(narrow, narrow_mask) == pytest.approx(0.08)
    labels = np.stack([np.r_[wide, 0.0], narrow])
    mask = np.stack([np.r_[True, True, True, False], narrow_mask])
    np.testing.assert_array_equal(temperatures(labels, mask, cfg), [0.5, 0.3])
    custom = cfg.replace(low_label_spread=0.05, sharpened_temperature=0.25)
    assert session_temperature(narrow, narrow_mask, custom) == 0.5


def test_batch_temperature_overrides_the_rule():
    params, batch = small_params(), make_batch()
    batch.temperature = np.array([1.0, 1.0, 1.0])
    fwd = forward(params, batch, CFG)
    expected, _ = listwise_loss(fwd.logits, batch.labels, batch.mask, 1.0)
    assert loss_and_grads(params, batch, CFG)[0] == pytest.approx(expected, rel=1e-12)


def test_neutral_query_and_cosine_terms_compute_signets_forward_pass():
    """Zero query terms, cosine and signal weights (their neutral values) give exactly the
    scores without them."""
    params = small_params()
    params["query_project"][:] = 0.0
    params["query_time"][:] = 0.0
    params["cosine_weight"][:] = 0.0
    params["signal_weights"][:] = 0.0
    ours = ("query_project", "query_time", "cosine_weight", "signal_weights")
    signet = {k: v for k, v in params.items() if k not in ours}
    batch = make_batch()
    np.testing.assert_array_equal(
        forward(params, batch, CFG).probs, forward(signet, batch, CFG).probs
    )


def signet_reference_logits(params: dict, s: dict, b: int) -> np.ndarray:
    """Session b's logits by Signet's formula (docs/specification.md §4.3), candidate by candidate
    in plain numpy: LN without affine, attention over W_down'd context and candidate, gate."""

    def ln(x):
        return (x - x.mean()) / np.sqrt(x.var() + DEFAULT_CONFIG.layer_norm_eps)

    q = params["q_proj"] @ ln(params["down_proj"] @ s["contexts"][b])
    out = []
    for j, has in enumerate(s["has_embs"][b]):
        toks = s["token_lists"][b][j]
        if has:
            enc = ln(params["down_proj"] @ s["cand_embs"][b][j])
        elif toks is not None and len(toks):
            enc = ln(params["hash_embeddings"][np.asarray(toks)].mean(axis=0))
        else:
            enc = np.zeros(D)
        gate_in = np.concatenate(
            [
                params["v_proj"] @ enc,
                s["features"][b][j],
                params["project_embeddings"][s["project_slots"][b]],
                [1.0],
            ]
        )
        attention = q @ (params["k_proj"] @ enc) / np.sqrt(D)
        out.append(attention + params["gate_proj"][0] @ gate_in)
    return np.array(out)


def test_sgpt_import_computes_signets_forward_pass(tmp_path):
    """Signet's seven matrices written as SGPT and read back (our terms neutral, the cosine
    weight 0) score every session exactly as Signet's own formula does."""
    params = small_params()
    signet = {k: params[k] for k in SIGNET_PARAMS}
    path = tmp_path / "model.bin"
    write_sgpt(path, signet | neutral_extensions(CFG))
    imported, _ = read_sgpt(path)
    assert imported["cosine_weight"].tolist() == [0.0]
    s = sessions()
    logits = forward(imported, batch_from_sessions(as_sessions(s)), CFG).logits
    for b in range(3):
        ref = signet_reference_logits(signet, s, b)
        np.testing.assert_allclose(logits[b, : ref.size], ref, rtol=1e-10, atol=1e-12)


def test_cosine_term_is_the_exact_cosine_of_context_and_embedding():
    """The logit moves by w_cos · cosine(context, e) on the embedded path and not at all on
    the text path, whatever the other weights."""
    params, s = small_params(), sessions()
    batch = batch_from_sessions(as_sessions(s))
    with_cos = forward(params, batch, CFG).logits
    without = forward({**params, "cosine_weight": np.array([0.0])}, batch, CFG).logits
    for b in range(3):
        n = len(s["has_embs"][b])
        has = s["has_embs"][b]
        expected = np.zeros(n)
        expected[has] = 0.8 * cosine_to(s["contexts"][b], s["cand_embs"][b][has])
        np.testing.assert_allclose(with_cos[b, :n] - without[b, :n], expected, atol=1e-12)


def test_cosine_of_a_zero_vector_is_zero():
    params = {**small_params(), "gate_proj": np.zeros((1, V + F + D + 1))}
    params["q_proj"] = np.zeros((D, D))  # only the cosine term is left
    emb = np.zeros((3, NATIVE))
    emb[1, 0] = 2.0
    one = batch_from_sessions(
        [
            SessionArrays(
                np.eye(NATIVE)[0],
                emb,
                np.array([True, True, False]),
                [None, None, [1]],
                np.zeros((3, F)),
                0,
            )
        ]
    )
    np.testing.assert_allclose(forward(params, one, CFG).logits[0], [0.0, 0.8, 0.0], atol=1e-15)
    zero_ctx = batch_from_sessions(
        [
            SessionArrays(
                np.zeros(NATIVE),
                emb,
                np.array([True, True, False]),
                [None, None, [1]],
                np.zeros((3, F)),
                0,
            )
        ]
    )
    np.testing.assert_array_equal(forward(params, zero_ctx, CFG).logits[0], np.zeros(3))


def test_untrained_model_scores_are_the_softmax_of_the_hybrid():
    """A fresh model (`init_params`) computes softmax(COSINE_WEIGHT_INIT / 0.7 · (0.7·cosine +
    0.3·lexical)) exactly, and softmax(COSINE_WEIGHT_INIT · cosine) without signals; the
    entity and neighbourhood signals start with no weight."""
    params = init_params(CFG, NATIVE)
    s = sessions()
    probs = forward(params, batch_from_sessions(as_sessions(s)), CFG).probs
    plain = forward(params, batch_from_sessions(as_sessions({**s, "signals": None})), CFG).probs
    a = HYBRID_VECTOR_WEIGHT
    for b in range(3):
        has = s["has_embs"][b]
        cos = np.zeros(has.size)
        cos[has] = cosine_to(s["contexts"][b], s["cand_embs"][b][has])
        for got, lexical in ((probs, s["signals"][b][:, 0]), (plain, np.zeros(has.size))):
            logit = COSINE_WEIGHT_INIT / a * (a * cos + (1 - a) * lexical)
            z = np.exp(logit - logit.max())
            np.testing.assert_allclose(got[b, : has.size], z / z.sum(), rtol=1e-12)


def test_signal_term_is_the_signals_times_their_weights():
    """The logit moves by signals · w_sig, on both paths; a session without signals is one
    whose signals are all zero."""
    params, s = small_params(), sessions()
    with_sig = forward(params, batch_from_sessions(as_sessions(s)), CFG).logits
    zeros = [np.zeros_like(x) for x in s["signals"]]
    without = forward(params, batch_from_sessions(as_sessions({**s, "signals": zeros})), CFG).logits
    none = forward(params, batch_from_sessions(as_sessions({**s, "signals": None})), CFG).logits
    np.testing.assert_array_equal(without, none)
    mixed = batch_from_sessions(as_sessions({**s, "signals": [s["signals"][0], None, None]}))
    np.testing.assert_array_equal(forward(params, mixed, CFG).logits[1:], none[1:])
    for b in range(3):
        n = len(s["has_embs"][b])
        expected = s["signals"][b] @ params["signal_weights"]
        np.testing.assert_allclose(with_sig[b, :n] - without[b, :n], expected, atol=1e-12)


def test_signals_of_the_wrong_width_are_refused():
    params, s = small_params(), sessions()
    batch = batch_from_sessions(as_sessions({**s, "signals": [x[:, :2] for x in s["signals"]]}))
    with pytest.raises(ValueError, match="signals have shape"):
        forward(params, batch, CFG)


def test_project_and_session_time_can_change_the_ranking():
    """Through the query, the project slot and the session features reorder candidates; in the
    gate alone they would cancel in the softmax."""
    params = small_params()
    s = sessions()
    base = batch_from_sessions(as_sessions(s))
    other_slot = batch_from_sessions(as_sessions({**s, "project_slots": [3, 5, 2]}))
    p0, p1 = forward(params, base, CFG).probs[0], forward(params, other_slot, CFG).probs[0]
    assert not np.allclose(p0, p1)
    signet = {k: v for k, v in params.items() if not k.startswith("query_")}
    q0, q1 = forward(signet, base, CFG).probs[0], forward(signet, other_slot, CFG).probs[0]
    np.testing.assert_allclose(q0, q1, rtol=1e-12)  # Signet's project embedding cancels
