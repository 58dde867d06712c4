"""Adam over the scorer's parameter dict, with lazy (sparse-row) updates (docs/specification.md
§4.5).

Dense blocks get textbook Adam (Kingma & Ba), with the config's lr 1e-3, β1 0.9, β2 0.999,
eps 1e-8:

    m = β1 m + (1-β1) g;   v = β2 v + (1-β2) g²
    p -= lr · (m / (1-β1^t)) / (sqrt(v / (1-β2^t)) + eps)

A gradient given as `SparseRows` (the hash embeddings: a step touches a small share of the
16,384 rows) is applied *lazily*, like PyTorch's SparseAdam: only the listed rows have their
moments and values updated, so the step costs O(rows touched × d). The bias correction uses
the global step t (one count per `step` call), not a per-row count. The first step is identical
to dense Adam (untouched rows have zero moments, so dense Adam would not move them either);
afterwards they differ: dense Adam keeps decaying an untouched row's moments and keeps moving
it by its momentum, lazy Adam leaves the row alone until its next gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig

__all__ = ["Adam", "Grads", "SparseRows", "copy_params", "densify"]


@dataclass(frozen=True, slots=True)
class SparseRows:
    """A gradient that is zero except on `rows`: values[i] is the gradient of row rows[i]."""

    rows: np.ndarray  # (k,) int64, strictly increasing once coalesced
    values: np.ndarray  # (k, d)

    def coalesce(self) -> SparseRows:
        """Sorted unique rows, duplicate rows summed (no-op when already so)."""
        rows = np.asarray(self.rows, dtype=np.int64)
        if rows.size < 2 or bool(np.all(rows[1:] > rows[:-1])):
            return SparseRows(rows, self.values)
        uniq, inv = np.unique(rows, return_inverse=True)
        out = np.zeros((uniq.size,) + self.values.shape[1:], dtype=self.values.dtype)
        np.add.at(out, inv, self.values)
        return SparseRows(uniq, out)


Grads = dict[str, np.ndarray | SparseRows]

_CHUNK_ROWS = 2048  # sparse rows per pass: bounds the reused buffers (a batch touches ~1,000)


def densify(grad: np.ndarray | SparseRows, shape: tuple[int, ...]) -> np.ndarray:
    """A dense array of `shape` from a dense or sparse gradient (for tests and inspection)."""
    if isinstance(grad, SparseRows):
        out = np.zeros(shape, dtype=grad.values.dtype)
        np.add.at(out, np.asarray(grad.rows, dtype=np.int64), grad.values)
        return out
    return np.asarray(grad).reshape(shape)


def copy_params(params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A deep copy of the weights, so training can run on it and the live model stays intact."""
    return {name: np.array(value, copy=True) for name, value in params.items()}


class Adam:
    """Adam with lazy updates for `SparseRows` gradients; updates the params dict in place."""

    def __init__(
        self, params: dict[str, np.ndarray], cfg: PredictorConfig = DEFAULT_CONFIG
    ) -> None:
        self.lr = float(cfg.learning_rate)
        self.beta1 = float(cfg.adam_beta1)
        self.beta2 = float(cfg.adam_beta2)
        self.eps = float(cfg.adam_eps)
        self.t = 0
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self._work: dict[tuple[int, np.dtype], np.ndarray] = {}
        # dense blocks updated together as one flat vector (see _fuse)
        self._fused: tuple[str, ...] | None = None
        self._flat_m = self._flat_v = np.zeros(0)

    def step(self, params: dict[str, np.ndarray], grads: Grads) -> None:
        """One update of every parameter named in `grads` (absent names are left alone)."""
        dense = tuple(n for n, g in grads.items() if not isinstance(g, SparseRows))
        for n in dense:
            if np.size(grads[n]) != params[n].size:
                raise ValueError(
                    f"gradient of {n} has {np.size(grads[n])} values, expected {params[n].size}"
                )
        self.t += 1
        b1 = self.beta1
        step_size = self.lr / (1.0 - b1**self.t)
        bc2_sqrt = np.sqrt(1.0 - self.beta2**self.t)
        if len(dense) > 1 and len({params[n].dtype for n in dense}) == 1:
            if dense != self._fused:
                self._fuse(dense)
            flat_g = np.concatenate([np.asarray(grads[n], params[n].dtype).ravel() for n in dense])
            upd = self._dense_update(self._flat_m, self._flat_v, flat_g, step_size, bc2_sqrt)
            at = 0
            for n in dense:
                p = params[n]
                p -= upd[at : at + p.size].reshape(p.shape)
                at += p.size
            dense = ()
        for name, g in grads.items():
            p, m, v = params[name], self.m[name], self.v[name]
            if isinstance(g, SparseRows):
                g = g.coalesce()
                rows = g.rows
                if rows.size == 0:
                    continue
                for s in range(0, rows.size, _CHUNK_ROWS):
                    sl = slice(s, s + _CHUNK_ROWS)
                    self._sparse_update(p, m, v, rows[sl], g.values[sl], step_size, bc2_sqrt)
            elif name in dense:
                p -= self._dense_update(m, v, np.asarray(g).reshape(p.shape), step_size, bc2_sqrt)

    def _fuse(self, names: tuple[str, ...]) -> None:
        """Move the moments of `names` into two flat vectors (the dicts keep views into them),
        so a step updates all those blocks with a handful of array operations."""
        self._flat_m = np.concatenate([self.m[n].ravel() for n in names])
        self._flat_v = np.concatenate([self.v[n].ravel() for n in names])
        at = 0
        for n in names:
            size, shape = self.m[n].size, self.m[n].shape
            self.m[n] = self._flat_m[at : at + size].reshape(shape)
            self.v[n] = self._flat_v[at : at + size].reshape(shape)
            at += size
        self._fused = names

    def _dense_update(
        self, m: np.ndarray, v: np.ndarray, g: np.ndarray, step_size: float, bc2_sqrt: float
    ) -> np.ndarray:
        """Update the moments m, v in place; return the step to subtract."""
        b1, b2 = self.beta1, self.beta2
        m *= b1
        m += g * (1.0 - b1)
        v *= b2
        v += np.square(g) * (1.0 - b2)
        tmp = np.sqrt(v)
        tmp /= bc2_sqrt
        tmp += self.eps
        np.divide(m, tmp, out=tmp)
        tmp *= step_size
        return tmp

    def _sparse_update(
        self,
        p: np.ndarray,
        m: np.ndarray,
        v: np.ndarray,
        rows: np.ndarray,
        g: np.ndarray,
        step_size: float,
        bc2_sqrt: float,
    ) -> None:
        """Adam on rows `rows` only, through reused buffers: fresh temporaries on every step
        cost more than the arithmetic."""
        k = rows.size
        width = int(np.prod(p.shape[1:], dtype=np.int64))
        key = (width, p.dtype)
        buf = self._work.get(key)
        if buf is None or buf.shape[1] < k:
            buf = np.empty((4, k) + p.shape[1:], dtype=p.dtype)
            self._work[key] = buf
        v_r, m_r, p_r, tmp = (buf[i, :k] for i in range(4))
        b1, b2 = self.beta1, self.beta2
        np.take(v, rows, axis=0, out=v_r)
        np.square(g, out=tmp)
        tmp *= 1.0 - b2
        v_r *= b2
        v_r += tmp
        v[rows] = v_r
        np.take(m, rows, axis=0, out=m_r)
        np.multiply(g, 1.0 - b1, out=tmp)
        m_r *= b1
        m_r += tmp
        m[rows] = m_r
        np.sqrt(v_r, out=tmp)
        tmp /= bc2_sqrt
        tmp += self.eps
        np.divide(m_r, tmp, out=tmp)
        tmp *= step_size
        np.take(p, rows, axis=0, out=p_r)
        p_r -= tmp
        p[rows] = p_r

    def state_dict(self) -> dict[str, Any]:
        """A copy of the optimizer state: step count and both moment dicts."""
        return {
            "t": self.t,
            "m": copy_params(self.m),
            "v": copy_params(self.v),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a state from `state_dict` (copied, so the source stays independent)."""
        self.t = int(state["t"])
        self.m = copy_params(state["m"])
        self.v = copy_params(state["v"])
        self._fused = None
