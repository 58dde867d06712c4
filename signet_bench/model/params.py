"""The cross-attention scorer's parameters: names, shapes, initialisation (DESIGN §6, reference §4).

The first seven are Signet's, in its checkpoint order; the per-path layer-norm affine parameters
are ours (Signet's layer norm has none) and start as the identity, so a fresh or imported model
computes exactly Signet's forward pass.
"""

from __future__ import annotations

import math

import numpy as np

from serving.contract import feature_spec_hash
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.features import SESSION_FEATURES

__all__ = [
    "DEFAULT_SEED",
    "EXTENSION_PARAMS",
    "LAYER_NORM_PARAMS",
    "QUERY_PARAMS",
    "SIGNET_PARAMS",
    "extensions_are_neutral",
    "feature_spec_hash",
    "gate_width",
    "init_params",
    "layer_norm_is_identity",
    "neutral_extensions",
    "param_count",
    "param_shapes",
    "shape_problems",
]

DEFAULT_SEED = 0x519E7  # Signet's RNG seed (its xorshift stream differs; only the value is shared)

SIGNET_PARAMS = (
    "down_proj",
    "q_proj",
    "k_proj",
    "v_proj",
    "gate_proj",
    "hash_embeddings",
    "project_embeddings",
)
LAYER_NORM_PARAMS = (
    "ln_embedded_gamma",
    "ln_embedded_beta",
    "ln_text_gamma",
    "ln_text_beta",
)
QUERY_PARAMS = ("query_project", "query_time")
EXTENSION_PARAMS = LAYER_NORM_PARAMS + QUERY_PARAMS


def gate_width(cfg: PredictorConfig = DEFAULT_CONFIG) -> int:
    """Width of the gate input [v, features, project_emb, 1]: 32 + 17 + 64 + 1 = 114 by default."""
    return cfg.value_dim + cfg.extra_features + cfg.internal_dim + 1


def param_shapes(
    cfg: PredictorConfig = DEFAULT_CONFIG, native_dim: int | None = None
) -> dict[str, tuple[int, ...]]:
    """Every parameter's shape, Signet's seven first in checkpoint order, then the LN affines."""
    n = cfg.native_dim if native_dim is None else int(native_dim)
    d = cfg.internal_dim
    return {
        "down_proj": (d, n),
        "q_proj": (d, d),
        "k_proj": (d, d),
        "v_proj": (cfg.value_dim, d),
        "gate_proj": (1, gate_width(cfg)),
        "hash_embeddings": (cfg.hash_buckets, d),
        "project_embeddings": (cfg.project_slots, d),
        "ln_embedded_gamma": (d,),
        "ln_embedded_beta": (d,),
        "ln_text_gamma": (d,),
        "ln_text_beta": (d,),
        "query_project": (cfg.project_slots, d),
        "query_time": (d, len(SESSION_FEATURES)),
    }


def init_params(
    cfg: PredictorConfig = DEFAULT_CONFIG, native_dim: int | None = None, seed: int = DEFAULT_SEED
) -> dict[str, np.ndarray]:
    """Fresh float64 weights: N(0, 1/sqrt(native_dim)) for down_proj, the identity for q_proj
    and k_proj, N(0, 1/sqrt(d)) for the other matrices, identity layer-norm affines (gamma 1,
    beta 0). Signet draws q_proj and k_proj at random too; as the identity, the attention term
    of an untrained scorer is the similarity of context and memory in the projected space, so
    a new user's first model starts from the pre-filter's own notion of relevance instead of
    a random order."""
    shapes = param_shapes(cfg, native_dim)
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for name, shape in shapes.items():
        if name.endswith("_gamma"):
            out[name] = np.ones(shape, dtype=np.float64)
        elif name.endswith("_beta") or name in QUERY_PARAMS:
            out[name] = np.zeros(shape, dtype=np.float64)
        elif name in ("q_proj", "k_proj"):
            out[name] = np.eye(shape[0], shape[1], dtype=np.float64)
        else:
            fan_in = shapes["down_proj"][1] if name == "down_proj" else cfg.internal_dim
            out[name] = rng.normal(0.0, 1.0 / math.sqrt(fan_in), size=shape)
    return out


def param_count(params: dict[str, np.ndarray]) -> int:
    """Total number of scalar weights."""
    return int(sum(np.asarray(a).size for a in params.values()))


def shape_problems(
    params: dict[str, np.ndarray],
    cfg: PredictorConfig = DEFAULT_CONFIG,
    native_dim: int | None = None,
) -> list[str]:
    """What is missing, extra or mis-shaped in `params` for these dims (empty when all fit)."""
    shapes = param_shapes(cfg, native_dim)
    problems = [f"missing parameter '{n}'" for n in shapes if n not in params]
    problems += [f"unexpected parameter '{n}'" for n in params if n not in shapes]
    for name, shape in shapes.items():
        if name in params and tuple(np.shape(params[name])) != shape:
            problems.append(
                f"parameter '{name}' has shape {tuple(np.shape(params[name]))}, expected {shape}"
            )
    return problems


def layer_norm_is_identity(params: dict[str, np.ndarray]) -> bool:
    """True when every LN affine present is gamma == 1 and beta == 0 (absent counts as identity)."""
    for name in LAYER_NORM_PARAMS:
        if name not in params:
            continue
        target = 1.0 if name.endswith("_gamma") else 0.0
        if not np.all(np.asarray(params[name]) == target):
            return False
    return True


def neutral_extensions(cfg: PredictorConfig = DEFAULT_CONFIG) -> dict[str, np.ndarray]:
    """Our parameters at their neutral values (identity LN, zero query terms)."""
    shapes = param_shapes(cfg)
    return {
        n: (np.ones if n.endswith("_gamma") else np.zeros)(shapes[n], dtype=np.float64)
        for n in EXTENSION_PARAMS
    }


def extensions_are_neutral(params: dict[str, np.ndarray]) -> bool:
    """True when the model computes Signet's forward pass: identity LN affines and zero query
    terms (absent ones count as neutral)."""
    if not layer_norm_is_identity(params):
        return False
    return all(not np.any(np.asarray(params[n])) for n in QUERY_PARAMS if n in params)
