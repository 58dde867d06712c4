"""The cross-attention memory scorer: batched numpy forward pass and analytic backward pass.

Shapes: B sessions, N candidate slots per session (padded; `mask` marks the real ones), D native
embedding dim, d internal dim, V value dim, F extra features (docs/specification.md §4.3):

    enc_n   = LN_emb(W_down e_n)                    candidates with an embedding
            = LN_text(mean_t HashEmb[bucket_t])     text-path candidates
    q       = W_q (LN_emb(W_down context) + QProj[slot] + QTime·s)
              (the context uses the embedded path's LN; s = the 7 session-level features;
               QProj and QTime are ours, zero-initialised, absent in Signet)
    cos_n   = cosine(context, e_n) for candidates with an embedding, 0 on the text path
              (and 0 when either vector is zero)
    logit_n = w_cos·cos_n + w_sig·signals_n + q·(W_k enc_n) / sqrt(d)
              + gate·[W_v enc_n, features_n, ProjEmb[slot], 1]
              (w_cos and w_sig are ours, absent or 0 in Signet; signals_n are the candidate's
               lexical, entity-match and source-neighbourhood evidence, `signet_scorer.signals`)
    scores  = softmax of the logits over the session's real candidates

LN(x) = gamma · (x - mean(x)) / sqrt(var(x) + eps) + beta, population variance, eps =
layer_norm_eps (1e-5, as Signet; Signet has no gamma/beta, i.e. gamma = 1, beta = 0).
A text-path candidate without tokens has mean 0 and so encodes as LN(0) = beta_text (Signet: 0).
Padding gets logit -inf and probability 0, and no gradient flows from it. The cosine term is
computed exactly, in the embeddings' own space: a fresh model (`params.init_params`) has
w_cos > 0, the lexical signal's weight at w_cos·0.3/0.7 and every other term at 0, so it ranks
by 0.7·cosine(context, memory) + 0.3·lexical until it learns; a text-path candidate's offset
from it is the gate's weight of the `has_embedding` feature.

The project-embedding and bias terms of the gate (and the gate weights of the session-level
features) are the same for every candidate of a session, so they shift a session's logits
uniformly and cancel in its softmax: they do not change scores, and the listwise loss gives them
zero gradient. They are kept for Signet parity (checkpoints, ONNX). The project and the session
features reach the ranking through QProj and QTime in the query instead.

Cost: the two (B·N, D) × (D, d) products (forward and the W_down gradient) dominate; the
attention and gate terms are folded into per-session d-vectors (q·W_k, W_vᵀ·w_v) so no
(B·N, d) × (d, d) product is formed. Candidate embeddings given as float32 (as Signet stores
them) enter those two products, and the embedded path's layer norm, in float32 (about twice
as fast; relative error ~1e-6); everything else, and float64 embeddings, is computed in the
parameters' dtype. Training batches are packed (`Batch.real_emb`): the embeddings of the real
candidates only, so no (B, N, D) array is padded or gathered on a step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.learn.model.loss import listwise_loss, softmax_masked, temperatures
from signet_bench.learn.model.optim import Grads, SparseRows
from signet_scorer.contract import SESSION_FEATURES

__all__ = [
    "Batch",
    "Forward",
    "SessionArrays",
    "backward",
    "batch_from_sessions",
    "forward",
    "loss_and_grads",
    "score_session",
]


@dataclass(slots=True)
class Batch:
    """B sessions padded to N candidate slots; text tokens in a flat (CSR-like) layout."""

    context: np.ndarray  # (B, D) float
    cand_emb: np.ndarray | None  # (B, N, D) float, zeros where a candidate has no embedding;
    # None when real_emb carries the embeddings instead
    has_emb: np.ndarray  # (B, N) bool: True = embedded path, False = text path
    tok_bucket: np.ndarray  # (T,) int64 hash-bucket ids
    tok_owner: np.ndarray  # (T,) int64 flat candidate index b*N + n; only text-path real
    # candidates read their tokens, tokens owned by any other slot are ignored
    features: np.ndarray  # (B, N, F) float
    project_slot: np.ndarray  # (B,) int64
    mask: np.ndarray  # (B, N) bool: True = real candidate
    labels: np.ndarray | None = None  # (B, N) float, for training
    temperature: np.ndarray | None = None  # (B,) loss temperature; None = per-session rule
    signals: np.ndarray | None = None  # (B, N, S) per-candidate signals; None = all zero
    real_emb: np.ndarray | None = None  # (M, D) packed: the rows of the M real candidates in
    # flat (B, N) order, padding left out (rows of text-path candidates are not read); when
    # given, cand_emb is not read, which saves padding and gathering (B, N, D) on every step


@dataclass(slots=True)
class _Query:
    """The query side of a forward pass: what the backward pass needs of it."""

    ctx: np.ndarray  # (B, D)
    ctx_xhat: np.ndarray  # (B, d) normalised W_down·context
    ctx_rstd: np.ndarray  # (B, 1)
    ctx_norm: np.ndarray  # (B, d) LN_emb(W_down·context)
    q_in: np.ndarray  # (B, d) ctx_norm + query_project[slot] + query_time·session features
    sess: np.ndarray  # (B, 7) the session-level features
    q: np.ndarray  # (B, d)
    qk: np.ndarray  # (B, d) q·W_k


@dataclass(slots=True)
class _Embedded:
    """The embedded-path candidates of a forward pass and their layer-norm intermediates."""

    idx: np.ndarray  # flat indices of embedded real candidates
    x: np.ndarray  # (Me, D) their native embeddings (float32 or the params' dtype), or
    # with a packed batch the rows of every real candidate, of which `sel` are embedded
    sel: np.ndarray | None
    xhat: np.ndarray
    rstd: np.ndarray


@dataclass(slots=True)
class _Text:
    """The text-path candidates of a forward pass: their tokens and layer-norm intermediates."""

    idx: np.ndarray  # flat indices of text-path real candidates
    xhat: np.ndarray
    rstd: np.ndarray
    tok_row: np.ndarray  # (T',) text-row index of each used token
    tok_bucket: np.ndarray  # (T',) its bucket
    count: np.ndarray  # (Mt,) tokens per text row


@dataclass(slots=True)
class _Cache:
    """Intermediates of a forward pass that the backward pass needs."""

    query: _Query
    emb: _Embedded
    txt: _Text
    u: np.ndarray  # (d,) W_vᵀ·w_v
    enc: np.ndarray  # (B*N, d), zero at padding
    cos: np.ndarray  # (B, N) cosine(context, embedding), zero on the text path and at padding
    signals: np.ndarray | None  # (B, N, S), None when the batch carries none
    features: np.ndarray  # (B, N, F)
    slot: np.ndarray  # (B,)
    proj_rows: np.ndarray  # (B, d) ProjEmb[slot]


@dataclass(slots=True)
class Forward:
    """Logits (-inf at padding) and softmax scores (0 at padding), both (B, N)."""

    logits: np.ndarray
    probs: np.ndarray
    mask: np.ndarray
    cache: _Cache = field(repr=False)


def _row_mean(x: np.ndarray) -> np.ndarray:
    """Mean of each row of a 2-D array, as one matrix-vector product (faster than .mean)."""
    return x @ np.full(x.shape[-1], 1.0 / x.shape[-1], dtype=x.dtype)


def _layer_norm(
    x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float, *, centered: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row-wise LN; returns (y, xhat, 1/std) for the backward pass. `centered`: the rows
    already have mean 0 (a product with row-centred weights) and are normalised in place."""
    xhat = x if centered else x - _row_mean(x)[:, None]
    var = np.einsum("ij,ij->i", xhat, xhat) / xhat.shape[-1]
    rstd = (1.0 / np.sqrt(var + eps))[:, None]
    xhat *= rstd
    y = xhat * gamma
    y += beta
    return y, xhat, rstd


def _layer_norm_back(
    dy: np.ndarray, xhat: np.ndarray, rstd: np.ndarray, gamma: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients of row-wise LN: (dx, dgamma, dbeta)."""
    dxhat = dy * gamma
    width = xhat.shape[-1]
    proj = np.einsum("ij,ij->i", dxhat, xhat) / width
    dx = xhat * proj[:, None]
    np.subtract(dxhat, dx, out=dx)
    dx -= _row_mean(dxhat)[:, None]
    dx *= rstd
    return dx, np.einsum("ij,ij->j", dy, xhat), dy.sum(axis=0)


def _segment_sum(values: np.ndarray, ids: np.ndarray, n: int) -> np.ndarray:
    """out[i] = sum of values[j] (T, k) with ids[j] == i, for i < n."""
    t, k = values.shape
    if t == 0:
        return np.zeros((n, k), dtype=values.dtype)
    if n * 8 <= t and bool(np.all(ids[1:] >= ids[:-1])):
        # few long sorted segments (tokens grouped by candidate): reduceat is fastest
        out = np.zeros((n, k), dtype=values.dtype)
        starts = np.flatnonzero(np.concatenate(([True], ids[1:] != ids[:-1])))
        out[ids[starts]] = np.add.reduceat(values, starts, axis=0)
        return out
    # many short segments (tokens grouped by bucket): one flat bincount
    flat = (ids[:, None] * k + np.arange(k)).reshape(-1)
    out = np.bincount(flat, weights=values.reshape(-1), minlength=n * k)
    return out.reshape(n, k).astype(values.dtype, copy=False)


def _rows_by_bucket(buckets: np.ndarray, per_row: np.ndarray, row: np.ndarray) -> SparseRows:
    """sum over tokens t of per_row[row[t]], grouped by buckets[t]: coalesced sparse rows."""
    order = np.argsort(buckets, kind="stable")
    ordered = buckets[order]
    if ordered.size == 0:
        return SparseRows(ordered, np.zeros((0, per_row.shape[1]), dtype=per_row.dtype))
    first = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    values = per_row[row[order]]
    sums = values[first]
    if not first.all():  # most buckets occur once: add the repeats (reduceat is slow here)
        np.add.at(sums, np.cumsum(first)[~first] - 1, values[~first])
    return SparseRows(ordered[first], sums)


def _float_rows(x: np.ndarray, dt: np.dtype) -> np.ndarray:
    """Embedding rows as float32 (kept: the fast product) or else in the parameters' dtype."""
    x = np.asarray(x)
    return x if x.dtype == np.float32 else x.astype(dt, copy=False)


def _split_gate(gate: np.ndarray, v_dim: int, n_feat: int, d: int) -> tuple[np.ndarray, ...]:
    """gate_proj (1, V+F+d+1) -> (w_v, w_features, w_project, bias)."""
    g = gate.reshape(-1)
    if g.size != v_dim + n_feat + d + 1:
        raise ValueError(f"gate_proj has {g.size} weights, expected {v_dim + n_feat + d + 1}")
    return g[:v_dim], g[v_dim : v_dim + n_feat], g[v_dim + n_feat : -1], g[-1]


def _check(params: dict[str, np.ndarray], batch: Batch) -> None:
    """Shape and index checks that would otherwise fail silently (negative indices wrap)."""
    mask = np.asarray(batch.mask)
    b, n = mask.shape
    d_native = params["down_proj"].shape[1]
    if batch.real_emb is not None:
        m_real = int(mask.sum())
        if np.shape(batch.real_emb) != (m_real, d_native):
            raise ValueError(
                f"real_emb has shape {np.shape(batch.real_emb)}, expected {(m_real, d_native)}"
            )
    elif np.shape(batch.cand_emb) != (b, n, d_native):
        raise ValueError(
            f"cand_emb has shape {np.shape(batch.cand_emb)}, expected {(b, n, d_native)}"
        )
    if np.shape(batch.context) != (b, d_native):
        raise ValueError(f"context has shape {np.shape(batch.context)}, expected {(b, d_native)}")
    if np.shape(batch.has_emb) != (b, n) or np.shape(batch.features)[:2] != (b, n):
        raise ValueError("has_emb and features must match mask's (B, N)")
    if np.shape(batch.project_slot) != (b,):
        raise ValueError(f"project_slot has shape {np.shape(batch.project_slot)}, expected {(b,)}")
    if batch.signals is not None and "signal_weights" in params:
        # weights of fewer signals read the first columns (signals are only ever appended)
        k = params["signal_weights"].shape[0]
        got = np.shape(batch.signals)
        if len(got) != 3 or got[:2] != (b, n) or got[2] < k:
            raise ValueError(f"signals have shape {got}, expected {(b, n)} and >= {k} columns")
    if b and not bool(np.all(mask.any(axis=1))):
        raise ValueError("every session needs at least one real candidate")
    slots = params["project_embeddings"].shape[0]
    slot = np.asarray(batch.project_slot)
    if b and (slot.min() < 0 or slot.max() >= slots):
        raise ValueError(f"project_slot outside [0, {slots})")
    bucket, owner = np.asarray(batch.tok_bucket), np.asarray(batch.tok_owner)
    if bucket.shape != owner.shape or bucket.ndim != 1:
        raise ValueError("tok_bucket and tok_owner must be 1-D and of the same length")
    if bucket.size:
        buckets = params["hash_embeddings"].shape[0]
        if bucket.min() < 0 or bucket.max() >= buckets:
            raise ValueError(f"tok_bucket outside [0, {buckets})")
        if owner.min() < 0 or owner.max() >= b * n:
            raise ValueError(f"tok_owner outside [0, {b * n})")


def _query(
    params: dict[str, np.ndarray],
    ctx: np.ndarray,
    w_centred: np.ndarray,
    features: np.ndarray,
    mask: np.ndarray,
    slot: np.ndarray,
    eps: float,
) -> _Query:
    """Each session's query: LN_emb(W_down context), plus (ours, zero-initialised) its
    project row and session-level time features, through W_q; and q·W_k."""
    g_emb, b_emb = params["ln_embedded_gamma"], params["ln_embedded_beta"]
    ctx_norm, ctx_xhat, ctx_rstd = _layer_norm(ctx @ w_centred.T, g_emb, b_emb, eps, centered=True)
    b = mask.shape[0]
    sess = np.zeros((b, len(SESSION_FEATURES)), dtype=ctx.dtype)
    q_in = ctx_norm
    if "query_project" in params:
        q_in = q_in + params["query_project"][slot]
    if "query_time" in params:
        sess = features[np.arange(b), np.argmax(mask, axis=1)][:, list(SESSION_FEATURES)]
        q_in = q_in + sess @ params["query_time"].T
    q = q_in @ params["q_proj"].T
    qk = q @ params["k_proj"]
    return _Query(ctx, ctx_xhat, ctx_rstd, ctx_norm, q_in, sess, q, qk)


def _encode_embedded(
    params: dict[str, np.ndarray],
    batch: Batch,
    w_centred: np.ndarray,
    flat_mask: np.ndarray,
    flat_has: np.ndarray,
    eps: float,
) -> tuple[_Embedded, np.ndarray]:
    """LN_emb(W_down e) of the embedded real candidates: (their cache, their encodings).
    Float32 embeddings keep their precision in the W_down product and the layer norm."""
    dt = w_centred.dtype
    m_all = flat_mask.size
    idx = np.flatnonzero(flat_mask & flat_has)
    sel = None
    if batch.real_emb is not None:
        # packed: project every real row (text-path rows are few) and keep the embedded ones
        x = _float_rows(batch.real_emb, dt)
        if idx.size != x.shape[0]:
            sel = np.flatnonzero(flat_has[flat_mask])
    else:
        x_flat = _float_rows(np.asarray(batch.cand_emb).reshape(m_all, w_centred.shape[1]), dt)
        x = x_flat if idx.size == m_all else x_flat[idx]
    h = x @ w_centred.T.astype(x.dtype, copy=False)
    h = h if sel is None else h[sel]
    # float32 rows stay float32 through the layer norm (half the memory traffic)
    g_emb, b_emb = params["ln_embedded_gamma"], params["ln_embedded_beta"]
    y, xhat, rstd = _layer_norm(h, g_emb.astype(h.dtype), b_emb.astype(h.dtype), eps, centered=True)
    return _Embedded(idx, x, sel, xhat, rstd), y


def _context_cosine(emb: _Embedded, ctx: np.ndarray, flat_mask: np.ndarray, n: int) -> np.ndarray:
    """cosine(context, embedding) of the embedded real candidates as a (B, N) array, 0 for
    every other slot and wherever either vector is zero (`prefilter.cosine_to`'s rule),
    computed in the embedding rows' dtype, one matrix-vector product per session."""
    out = np.zeros(flat_mask.size, dtype=ctx.dtype)
    x = emb.x
    # the flat slot of each row of x: the embedded candidates, or every real one when packed
    slots = emb.idx if emb.sel is None else np.flatnonzero(flat_mask)
    if slots.size:
        c = ctx.astype(x.dtype, copy=False)
        sess = slots // n
        bounds = np.searchsorted(sess, np.arange(ctx.shape[0] + 1))  # slots are ascending
        dots = np.empty(slots.size, dtype=x.dtype)
        for b in np.flatnonzero(np.diff(bounds)).tolist():
            dots[bounds[b] : bounds[b + 1]] = x[bounds[b] : bounds[b + 1]] @ c[b]
        norms = np.sqrt(np.einsum("ij,ij->i", x, x)) * np.sqrt(np.einsum("ij,ij->i", c, c))[sess]
        if emb.sel is not None:  # drop the rows of text-path candidates (never used)
            slots, dots, norms = slots[emb.sel], dots[emb.sel], norms[emb.sel]
        ok = norms > 0
        out[slots[ok]] = dots[ok] / norms[ok]
    return out.reshape(ctx.shape[0], n)


def _encode_text(
    params: dict[str, np.ndarray],
    batch: Batch,
    flat_mask: np.ndarray,
    flat_has: np.ndarray,
    eps: float,
    dt: np.dtype,
) -> tuple[_Text, np.ndarray]:
    """LN_text of the mean hash row of each text-path real candidate's tokens: (their cache,
    their encodings); tokens owned by any other slot are dropped."""
    idx = np.flatnonzero(flat_mask & ~flat_has)
    row_of = np.full(flat_mask.size, -1, dtype=np.int64)
    row_of[idx] = np.arange(idx.size)
    tok_row = row_of[np.asarray(batch.tok_owner, dtype=np.int64)]
    used = tok_row >= 0
    tok_row = tok_row[used]
    tok_bucket = np.asarray(batch.tok_bucket, dtype=np.int64)[used]
    count = np.bincount(tok_row, minlength=idx.size).astype(dt)
    sums = _segment_sum(params["hash_embeddings"][tok_bucket], tok_row, idx.size)
    mean = sums / np.maximum(count, 1.0)[:, None]
    y, xhat, rstd = _layer_norm(mean, params["ln_text_gamma"], params["ln_text_beta"], eps)
    return _Text(idx, xhat, rstd, tok_row, tok_bucket, count), y


def forward(
    params: dict[str, np.ndarray], batch: Batch, cfg: PredictorConfig = DEFAULT_CONFIG
) -> Forward:
    """Logits and softmax scores of every session in the batch, with a cache for `backward`."""
    _check(params, batch)
    eps = float(cfg.layer_norm_eps)
    w_down, w_v = params["down_proj"], params["v_proj"]
    dt = w_down.dtype
    d = params["q_proj"].shape[0]
    mask = np.asarray(batch.mask, dtype=bool)
    b, n = mask.shape
    features = np.asarray(batch.features, dtype=dt)
    w_val, w_feat, w_proj, bias = _split_gate(
        params["gate_proj"], w_v.shape[0], features.shape[2], d
    )
    # mean(W_down x) = mean_rows(W_down)·x, so centring W_down's rows centres every product
    w_centred = w_down - w_down.mean(axis=0)
    slot = np.asarray(batch.project_slot, dtype=np.int64)
    ctx = np.asarray(batch.context, dtype=dt)
    query = _query(params, ctx, w_centred, features, mask, slot, eps)
    u = w_val @ w_v

    enc = np.zeros((b * n, d), dtype=dt)
    flat_mask = mask.reshape(-1)
    flat_has = np.asarray(batch.has_emb, dtype=bool).reshape(-1)
    emb, enc_emb = _encode_embedded(params, batch, w_centred, flat_mask, flat_has, eps)
    enc[emb.idx] = enc_emb
    txt, enc_txt = _encode_text(params, batch, flat_mask, flat_has, eps, dt)
    enc[txt.idx] = enc_txt

    # logits: q·(W_k enc)/sqrt(d) + w_v·(W_v enc) = enc·(qk/sqrt(d) + u)
    proj_rows = params["project_embeddings"][slot]
    a = query.qk / np.sqrt(d) + u
    enc3 = enc.reshape(b, n, d)
    raw = np.matmul(enc3, a[:, :, None])[:, :, 0] + features @ w_feat
    raw += (proj_rows @ w_proj + bias)[:, None]
    cos = np.zeros((b, n), dtype=dt)
    if "cosine_weight" in params:
        cos = _context_cosine(emb, ctx, flat_mask, n)
        raw += params["cosine_weight"][0] * cos
    signals = None if batch.signals is None else np.asarray(batch.signals, dtype=dt)
    if signals is not None and "signal_weights" in params:
        signals = signals[:, :, : params["signal_weights"].shape[0]]
        raw += signals @ params["signal_weights"]
    logits = np.where(mask, raw, -np.inf)
    cache = _Cache(query, emb, txt, u, enc, cos, signals, features, slot, proj_rows)
    return Forward(logits=logits, probs=softmax_masked(raw, mask), mask=mask, cache=cache)


def _embedded_back(
    emb: _Embedded, denc: np.ndarray, gamma: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gradients through the embedded path's layer norm and W_down product, given dL/denc of
    its candidates: (dW_down, dgamma, dbeta), computed in the dtype of the embedding rows."""
    xdt = emb.xhat.dtype
    dh, dg, db = _layer_norm_back(
        denc.astype(xdt, copy=False), emb.xhat, emb.rstd, gamma.astype(xdt)
    )
    if emb.sel is not None:
        dh_rows = np.zeros((emb.x.shape[0], dh.shape[1]), dtype=dh.dtype)
        dh_rows[emb.sel] = dh
        dh = dh_rows
    return dh.T.astype(emb.x.dtype, copy=False) @ emb.x, dg, db


def backward(params: dict[str, np.ndarray], fwd: Forward, dlogits: np.ndarray) -> Grads:
    """Gradients of every parameter given dL/dlogits (B, N); padding entries are ignored.
    hash_embeddings comes back as SparseRows over the buckets the batch used."""
    c = fwd.cache
    w_q, w_k, w_v = (params[k] for k in ("q_proj", "k_proj", "v_proj"))
    b, n = fwd.mask.shape
    d = w_q.shape[0]
    n_feat = c.features.shape[2]
    w_val, _, w_proj, _ = _split_gate(params["gate_proj"], w_v.shape[0], n_feat, d)
    g_emb, g_txt = params["ln_embedded_gamma"], params["ln_text_gamma"]

    dl = np.where(fwd.mask, dlogits, 0.0)
    a = c.query.qk / np.sqrt(d) + c.u
    enc3 = c.enc.reshape(b, n, d)
    dl_flat = dl.reshape(-1)

    def denc(idx: np.ndarray) -> np.ndarray:
        """dL/denc for the flat candidates idx: dlogit · (qk/sqrt(d) + u) of their session."""
        return dl_flat[idx, None] * a[idx // n]

    s = np.matmul(dl[:, None, :], enc3)[:, 0, :]  # (B, d) = sum_n dl·enc
    dqk = s / np.sqrt(d)
    du = s.sum(axis=0)
    dl_sum = dl.sum(axis=1)

    d_wk = c.query.q.T @ dqk
    dq = dqk @ w_k.T
    d_wv = np.outer(w_val, du)
    d_wval = w_v @ du
    d_wfeat = np.einsum("bn,bnf->f", dl, c.features)
    d_wproj = dl_sum @ c.proj_rows
    d_bias = dl_sum.sum()
    d_proj_emb = np.zeros_like(params["project_embeddings"])
    np.add.at(d_proj_emb, c.slot, dl_sum[:, None] * w_proj)

    d_wq = dq.T @ c.query.q_in
    dq_in = dq @ w_q
    dh, dg_emb, db_emb = _layer_norm_back(dq_in, c.query.ctx_xhat, c.query.ctx_rstd, g_emb)
    d_wdown = dh.T @ c.query.ctx

    d_wdown_emb, dg, db = _embedded_back(c.emb, denc(c.emb.idx), g_emb)
    d_wdown += d_wdown_emb
    dg_emb += dg.astype(dg_emb.dtype, copy=False)
    db_emb += db.astype(db_emb.dtype, copy=False)

    txt = c.txt
    dmean, dg_txt, db_txt = _layer_norm_back(denc(txt.idx), txt.xhat, txt.rstd, g_txt)
    d_row = dmean / np.maximum(txt.count, 1.0)[:, None]  # each token gets its row's share
    d_hash = _rows_by_bucket(txt.tok_bucket, d_row, txt.tok_row)

    gate = np.concatenate([d_wval, d_wfeat, d_wproj, [d_bias]]).reshape(params["gate_proj"].shape)
    grads: Grads = {
        "down_proj": d_wdown,
        "q_proj": d_wq,
        "k_proj": d_wk,
        "v_proj": d_wv,
        "gate_proj": gate,
        "hash_embeddings": d_hash,
        "project_embeddings": d_proj_emb,
        "ln_embedded_gamma": dg_emb,
        "ln_embedded_beta": db_emb,
        "ln_text_gamma": dg_txt,
        "ln_text_beta": db_txt,
    }
    if "query_project" in params:
        d_qp = np.zeros_like(params["query_project"])
        np.add.at(d_qp, c.slot, dq_in)
        grads["query_project"] = d_qp
    if "query_time" in params:
        grads["query_time"] = dq_in.T @ c.query.sess
    if "cosine_weight" in params:
        grads["cosine_weight"] = np.array([np.einsum("bn,bn->", dl, c.cos)])
    if "signal_weights" in params:
        w_sig = params["signal_weights"]
        grads["signal_weights"] = (
            np.zeros_like(w_sig) if c.signals is None else np.einsum("bn,bns->s", dl, c.signals)
        )
    return grads


def loss_and_grads(
    params: dict[str, np.ndarray], batch: Batch, cfg: PredictorConfig = DEFAULT_CONFIG
) -> tuple[float, Grads]:
    """Mean listwise loss of the batch and its gradients (batch.temperature, else the
    per-session rule of `loss.temperatures`)."""
    if batch.labels is None:
        raise ValueError("loss_and_grads needs batch.labels")
    fwd = forward(params, batch, cfg)
    temp = batch.temperature
    if temp is None:
        temp = temperatures(np.asarray(batch.labels, dtype=np.float64), fwd.mask, cfg)
    loss, dlogits = listwise_loss(fwd.logits, batch.labels, fwd.mask, temp)
    return loss, backward(params, fwd, dlogits)


@dataclass(frozen=True, slots=True)
class SessionArrays:
    """One session's candidates as the scorer reads them: the context (D,), their embeddings
    (N, D) or None when none has one, `has_emb` (N,), one hash-bucket list per candidate (the
    text path), features (N, F), the project slot, signals (N, S) or None (no evidence), and
    for training their labels (N,)."""

    context: np.ndarray
    cand_emb: np.ndarray | None
    has_emb: np.ndarray
    tokens: Sequence[Sequence[int] | np.ndarray | None]
    features: np.ndarray
    project_slot: int
    signals: np.ndarray | None = None
    labels: np.ndarray | None = None


def batch_from_sessions(
    sessions: Sequence[SessionArrays],
    *,
    temperature: np.ndarray | None = None,
    dtype: type = np.float64,
    packed: bool = False,
) -> Batch:
    """Pad sessions into one Batch, with labels when every session has them; `dtype` is that
    of the float arrays (float32 = the fast embedding path). `packed` puts the embeddings in
    `real_emb` (no padding) instead of `cand_emb`."""
    labelled = [x.labels is not None for x in sessions]
    if any(labelled) and not all(labelled):
        raise ValueError("labels: some sessions have them and some do not")
    contexts = [x.context for x in sessions]
    cand_embs = [x.cand_emb for x in sessions]
    has_embs = [x.has_emb for x in sessions]
    token_lists = [x.tokens for x in sessions]
    features = [x.features for x in sessions]
    labels = [x.labels for x in sessions if x.labels is not None] if all(labelled) else None
    signals = [x.signals for x in sessions]
    b = len(contexts)
    sizes = [len(h) for h in has_embs]
    n = max(sizes, default=0)
    d_native = int(np.shape(contexts[0])[-1]) if b else 0
    n_feat = int(np.shape(features[0])[-1]) if b else 0
    real = None
    if packed:
        parts = [
            np.zeros((size, d_native), dtype=dtype) if e is None else np.asarray(e)
            for e, size in zip(cand_embs, sizes, strict=True)
        ]
        real = np.concatenate(parts, dtype=dtype) if parts else np.zeros((0, d_native), dtype)
    cand = None if packed else np.zeros((b, n, d_native), dtype=dtype)
    mask = np.arange(n) < np.asarray(sizes, dtype=np.int64).reshape(b, 1)
    has = np.zeros((b, n), dtype=bool)
    feats = np.zeros((b, n, n_feat), dtype=dtype)
    lab = None if labels is None else np.zeros((b, n), dtype=np.float64)
    if b:
        # every real slot at once: mask is row-major, like the concatenated sessions
        has[mask] = np.concatenate([np.asarray(h, dtype=bool).reshape(-1) for h in has_embs])
        if any(sizes):
            feats[mask] = np.concatenate([np.asarray(f).reshape(-1, n_feat) for f in features])
        if lab is not None and labels is not None:
            lab[mask] = np.concatenate([np.asarray(x, dtype=np.float64) for x in labels])
    if cand is not None:
        for i, size in enumerate(sizes):
            h = has[i, :size]
            if h.any():
                cand[i, :size][h] = np.asarray(cand_embs[i])[h]
    bucket, owner = _text_tokens(token_lists, has, sizes)
    return Batch(
        context=np.asarray(np.stack(contexts) if b else np.zeros((0, 0)), dtype=dtype),
        cand_emb=cand,
        has_emb=has,
        tok_bucket=bucket,
        tok_owner=owner,
        features=feats,
        project_slot=np.asarray([x.project_slot for x in sessions], dtype=np.int64).reshape(b),
        mask=mask,
        labels=lab,
        temperature=None if temperature is None else np.asarray(temperature, dtype=np.float64),
        real_emb=real,
        signals=_padded_signals(signals, mask, dtype),
    )


def _text_tokens(
    token_lists: Sequence[Sequence[Sequence[int] | np.ndarray | None]],
    has: np.ndarray,
    sizes: Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:
    """(tok_bucket, tok_owner) of a batch: the tokens of every text-path candidate (session by
    session, candidate by candidate, each in order) and the flat slot that owns each; one
    concatenation for the batch, not arrays per candidate."""
    n = has.shape[1]
    parts: list[Sequence[int] | np.ndarray] = []
    slots: list[int] = []
    lengths: list[int] = []
    for i, size in enumerate(sizes):
        toks_i = token_lists[i]
        for j in np.flatnonzero(~has[i, :size]).tolist():
            toks = toks_i[j]
            if toks is not None and len(toks):
                parts.append(toks)
                slots.append(i * n + j)
                lengths.append(len(toks))
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    bucket = np.concatenate([np.asarray(t, dtype=np.int64) for t in parts])
    return bucket, np.repeat(np.asarray(slots, dtype=np.int64), lengths)


def _padded_signals(
    signals: Sequence[np.ndarray | None] | None, mask: np.ndarray, dtype: type
) -> np.ndarray | None:
    """The sessions' (N_b, S) signals padded to (B, N, S) (zeros for a session without any);
    None when no session carries any, so such a batch costs nothing."""
    if signals is None or all(x is None for x in signals):
        return None
    width = next(np.shape(x)[-1] for x in signals if x is not None)
    out = np.zeros((*mask.shape, width), dtype=dtype)
    sizes = mask.sum(axis=1)
    parts = [
        np.zeros((int(k), width)) if x is None else np.asarray(x).reshape(int(k), width)
        for x, k in zip(signals, sizes, strict=True)
    ]
    out[mask] = np.concatenate(parts) if parts else np.zeros((0, width))
    return out


def score_session(
    params: dict[str, np.ndarray], session: SessionArrays, cfg: PredictorConfig = DEFAULT_CONFIG
) -> np.ndarray:
    """Softmax scores (N,) of one session's candidates; rows of its embeddings where `has_emb`
    is False are ignored (those candidates use their tokens)."""
    if np.asarray(session.has_emb, dtype=bool).size == 0:
        return np.zeros(0, dtype=np.float64)
    batch = batch_from_sessions([session])
    return forward(params, batch, cfg).probs[0]
