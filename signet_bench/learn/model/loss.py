"""The listwise ranking loss (docs/specification.md §4.4), masked and batched.

Per session, over its real candidates only (padding never enters a softmax or the sum):

    P_true  = softmax(labels / T),  P_model = softmax(logits / T)
    loss    = KL(P_true || P_model) = sum P_true (log P_true - log P_model)
    dloss/dlogits = (P_model - P_true) / T

The batch loss is the mean over sessions, so each session's gradient is also divided by B.
T = loss_temperature (0.5); a session whose label spread (max - min over its real candidates) is
below low_label_spread (0.1) is low-signal: the seed allows sharpening it (T = 0.3, what
`temperatures` returns) or skipping it (`is_low_signal`); training picks one.
Log-softmax is computed directly, so Signet's 1e-9 epsilon is not needed. NaN labels or logits
are not cleaned: they make the loss non-finite, which the training gates catch.
"""

from __future__ import annotations

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig

__all__ = [
    "is_low_signal",
    "label_spread",
    "listwise_loss",
    "log_softmax_masked",
    "low_signal_sessions",
    "session_temperature",
    "softmax_masked",
    "temperatures",
]


def log_softmax_masked(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Log-softmax over the last axis restricted to `mask`; -inf where masked out."""
    z = np.where(mask, x, -np.inf)
    top = np.max(z, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore"):
        shifted = z - top
        lse = np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))
    return np.where(mask, shifted - lse, -np.inf)


def softmax_masked(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Softmax over the last axis restricted to `mask`; exactly 0 where masked out."""
    return np.where(mask, np.exp(log_softmax_masked(x, mask)), 0.0)


def label_spread(labels: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """max - min of the labels over each session's real candidates (NaN if a label is NaN)."""
    hi = np.max(np.where(mask, labels, -np.inf), axis=-1)
    lo = np.min(np.where(mask, labels, np.inf), axis=-1)
    return hi - lo


def low_signal_sessions(
    labels: np.ndarray, mask: np.ndarray, cfg: PredictorConfig = DEFAULT_CONFIG
) -> np.ndarray:
    """Per session: True when the label spread is below low_label_spread ("all within 0.1")."""
    return label_spread(labels, mask) < cfg.low_label_spread


def temperatures(
    labels: np.ndarray, mask: np.ndarray, cfg: PredictorConfig = DEFAULT_CONFIG
) -> np.ndarray:
    """Per-session loss temperature: sharpened_temperature for low-signal sessions, else
    loss_temperature."""
    low = low_signal_sessions(labels, mask, cfg)
    return np.where(low, cfg.sharpened_temperature, cfg.loss_temperature).astype(np.float64)


def _one_session(labels: np.ndarray, mask: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """One session's labels (N,) as float64 and its mask (None = every candidate is real)."""
    labels = np.asarray(labels, dtype=np.float64)
    mask = np.ones(labels.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    return labels, mask


def session_temperature(
    labels: np.ndarray, mask: np.ndarray | None = None, cfg: PredictorConfig = DEFAULT_CONFIG
) -> float:
    """The loss temperature of one session (labels (N,), mask (N,) or None = all real)."""
    return float(temperatures(*_one_session(labels, mask), cfg))


def is_low_signal(
    labels: np.ndarray, mask: np.ndarray | None = None, cfg: PredictorConfig = DEFAULT_CONFIG
) -> bool:
    """Whether one session is low-signal (a candidate for skipping instead of sharpening)."""
    return bool(low_signal_sessions(*_one_session(labels, mask), cfg))


def listwise_loss(
    logits: np.ndarray,
    labels: np.ndarray,
    mask: np.ndarray,
    temperature: float | np.ndarray,
) -> tuple[float, np.ndarray]:
    """Mean masked KL(softmax(labels/T) || softmax(logits/T)) over the B sessions of (B, N)
    arrays, and its gradient w.r.t. the logits (zero at padding)."""
    mask = np.asarray(mask, dtype=bool)
    n_sessions = mask.shape[0]
    t = np.asarray(temperature, dtype=np.float64)
    t = t.reshape(-1, 1) if t.ndim == 1 else t
    log_true = log_softmax_masked(np.asarray(labels, dtype=np.float64) / t, mask)
    log_model = log_softmax_masked(np.asarray(logits, dtype=np.float64) / t, mask)
    p_true = np.where(mask, np.exp(log_true), 0.0)
    p_model = np.where(mask, np.exp(log_model), 0.0)
    with np.errstate(invalid="ignore"):
        terms = np.where(mask & (p_true != 0.0), p_true * (log_true - log_model), 0.0)
        # NaN anywhere in a real position must reach the loss (p_true != 0 is False for NaN).
        terms = np.where(mask & np.isnan(p_true), np.nan, terms)
    loss = float(np.sum(terms) / n_sessions)
    grad = np.where(mask, (p_model - p_true) / (t * n_sessions), 0.0)
    return loss, grad
