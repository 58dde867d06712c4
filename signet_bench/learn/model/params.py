"""The cross-attention scorer's parameters: names, shapes, initialisation (docs/specification.md
§4.3).

The first seven are Signet's, in its checkpoint order. The rest are ours (`EXTENSION_PARAMS`):
the per-path layer-norm affines, the query's project and time terms, the weight of the exact
cosine(context, memory) term and the weights of the per-candidate signals (`signet_scorer.signals`:
lexical, entity match, source neighbourhood). At their neutral values (`neutral_extensions`)
the model computes exactly Signet's forward pass, which is what a Signet `SGPT` import gets; a
fresh model (`init_params`) instead starts as the hybrid ranker 0.7·cosine + 0.3·lexical (plain
cosine where a session has no query terms).
"""

from __future__ import annotations

import functools
import math

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_scorer.contract import N_SIGNALS, SESSION_FEATURES
from signet_scorer.signals import HYBRID_VECTOR_WEIGHT, signal_column

__all__ = [
    "COSINE_PARAMS",
    "COSINE_WEIGHT_INIT",
    "DEFAULT_SEED",
    "EXTENSION_PARAMS",
    "LAYER_NORM_PARAMS",
    "QUERY_PARAMS",
    "SIGNAL_PARAMS",
    "SIGNET_PARAMS",
    "extensions_are_neutral",
    "gate_width",
    "init_params",
    "layer_norm_is_identity",
    "neutral_extensions",
    "param_count",
    "param_shapes",
    "query_held",
    "shape_problems",
    "signal_weights_init",
    "signet_init_params",
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
COSINE_PARAMS = ("cosine_weight",)
SIGNAL_PARAMS = ("signal_weights",)
EXTENSION_PARAMS = LAYER_NORM_PARAMS + QUERY_PARAMS + COSINE_PARAMS + SIGNAL_PARAMS
# A fresh model's logit is COSINE_WEIGHT_INIT · cosine(context, memory), the order of the
# strongest simple ranker. 3 makes its spread within a session (cosine's sd ~0.1 with a text
# embedder) about the labels' (sd ~0.3), so the first steps, which move the zero-initialised
# terms fast, cannot overturn the cosine order. Held-out NDCG@10 minus cosine's (a heavy and a
# drifting wordllama store, offline training): weight 1: -0.19 / -0.05 after 10 / 50
# sessions; 2: -0.03 / +0.04 / +0.06 after 10 / 50 / 300; 3: 0.00 / +0.06 / +0.05;
# 5: 0.00 / +0.06 / +0.04.
COSINE_WEIGHT_INIT = 3.0


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
        "cosine_weight": (1,),
        "signal_weights": (N_SIGNALS,),
    }


def signal_weights_init(cosine_weight: float) -> np.ndarray:
    """The signal weights that make a model with this cosine weight rank as the hybrid
    ranker (`signet_scorer.signals.hybrid_scores`): lexical `cosine_weight · 0.3 / 0.7`, so the two
    terms are (cosine_weight / 0.7)·(0.7·cosine + 0.3·lexical); the other signals 0."""
    out = np.zeros(N_SIGNALS, dtype=np.float64)
    share = (1.0 - HYBRID_VECTOR_WEIGHT) / HYBRID_VECTOR_WEIGHT
    out[signal_column("lexical")] = float(cosine_weight) * share
    return out


def _random_matrix(
    name: str, shapes: dict[str, tuple[int, ...]], rng: np.random.Generator
) -> np.ndarray:
    """Signet's draw: N(0, 1/sqrt(native_dim)) for down_proj, N(0, 1/sqrt(d)) otherwise."""
    fan_in = shapes["down_proj"][1] if name == "down_proj" else shapes["q_proj"][0]
    return rng.normal(0.0, 1.0 / math.sqrt(fan_in), size=shapes[name])


_FRESH_DRAWN = ("down_proj", "v_proj", "hash_embeddings", "project_embeddings")


@functools.lru_cache(maxsize=4)
def _fresh_draws(
    shapes: tuple[tuple[str, tuple[int, ...]], ...], seed: int
) -> tuple[np.ndarray, ...]:
    """`init_params`' random matrices (`_FRESH_DRAWN`, in that order from one generator), drawn
    once per shapes and seed: a training starts several fits from the same fresh model (its
    held-out folds, its free ranker, its base), and a draw costs ~15 times its copy."""
    by_name, rng = dict(shapes), np.random.default_rng(seed)
    drawn = tuple(_random_matrix(name, by_name, rng) for name in _FRESH_DRAWN)
    for matrix in drawn:
        matrix.setflags(write=False)  # shared by every later call: each gets its own copy
    return drawn


def init_params(
    cfg: PredictorConfig = DEFAULT_CONFIG, native_dim: int | None = None, seed: int = DEFAULT_SEED
) -> dict[str, np.ndarray]:
    """Fresh float64 weights of a model that ranks as the hybrid 0.7·cosine(context, memory)
    + 0.3·lexical until it learns (as cosine alone where the lexical signal is 0).

    The cosine weight is COSINE_WEIGHT_INIT and the lexical weight keeps Signet's 0.3 : 0.7
    to it (`signal_weights_init`; the other signals start at 0); q_proj and gate_proj, the two
    weights through which every other term reaches the logit (the attention q·k, and the gate
    over value, features, project and bias), start at zero, so those terms contribute exactly
    0 and grow from their first gradients: learning adds to the hybrid instead of first
    unlearning a random ranking.
    k_proj is the identity; down_proj, v_proj and the hash and project embeddings are drawn as
    Signet draws them; our other terms are neutral (identity LN affines, zero query terms)."""
    shapes = param_shapes(cfg, native_dim)
    out = neutral_extensions(cfg)
    drawn = _fresh_draws(tuple(shapes.items()), seed)
    out.update({name: matrix.copy() for name, matrix in zip(_FRESH_DRAWN, drawn, strict=True)})
    out["q_proj"] = np.zeros(shapes["q_proj"], dtype=np.float64)
    out["k_proj"] = np.eye(*shapes["k_proj"], dtype=np.float64)
    out["gate_proj"] = np.zeros(shapes["gate_proj"], dtype=np.float64)
    out["cosine_weight"] = np.full(shapes["cosine_weight"], COSINE_WEIGHT_INIT, dtype=np.float64)
    out["signal_weights"] = signal_weights_init(COSINE_WEIGHT_INIT)
    return {name: out[name] for name in shapes}


def signet_init_params(
    cfg: PredictorConfig = DEFAULT_CONFIG, native_dim: int | None = None, seed: int = DEFAULT_SEED
) -> dict[str, np.ndarray]:
    """Weights as Signet starts them: its seven matrices drawn at random (`_random_matrix`,
    q_proj and k_proj too), our terms neutral. The forward pass is an untrained Signet
    model's, and the weights can be written as SGPT (a fresh `init_params` model cannot)."""
    shapes = param_shapes(cfg, native_dim)
    rng = np.random.default_rng(seed)
    out = neutral_extensions(cfg)
    out.update({name: _random_matrix(name, shapes, rng) for name in SIGNET_PARAMS})
    return {name: out[name] for name in shapes}


def query_held(params: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The learned query (q_proj) as a mask of entries to hold at their values: at its zero
    start, no learned match with the context (cosine alone matches it), and with it the
    project and time terms that reach the query through q_proj."""
    return {"q_proj": np.ones(params["q_proj"].shape, dtype=bool)}


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
    """Our parameters at their neutral values (identity LN, zero query terms, zero cosine
    and signal weights): with them the model computes Signet's forward pass."""
    shapes = param_shapes(cfg)
    return {
        n: (np.ones if n.endswith("_gamma") else np.zeros)(shapes[n], dtype=np.float64)
        for n in EXTENSION_PARAMS
    }


def extensions_are_neutral(params: dict[str, np.ndarray]) -> bool:
    """True when the model computes Signet's forward pass: identity LN affines, zero query
    terms, zero cosine and signal weights (absent ones count as neutral)."""
    if not layer_norm_is_identity(params):
        return False
    terms = QUERY_PARAMS + COSINE_PARAMS + SIGNAL_PARAMS
    return all(not np.any(np.asarray(params[n])) for n in terms if n in params)
