"""What the exported graph, the sidecar and its callers agree on: feature spec, graph input and
output names, metadata keys, JSON-RPC methods, error codes, timeouts and limits.

`signet_bench` imports the feature-spec constants from here, so the trainer and the server read
one definition; this module imports nothing but the standard library.
"""

from __future__ import annotations

import hashlib

__all__ = [
    "CLIENT_TIMEOUTS_MS",
    "CONTEXT_TOP",
    "CRASH_DISABLE_THRESHOLD",
    "CRASH_WINDOW_S",
    "DIM_KEYS",
    "FEATURE_NAMES",
    "FEATURE_SPEC",
    "FEATURE_SPEC_HASH",
    "GRAPH_INPUTS",
    "GRAPH_OUTPUTS",
    "INPUT_CANDIDATE_EMBEDDINGS",
    "INPUT_CONTEXT",
    "INPUT_FEATURES",
    "INPUT_HAS_EMBEDDING",
    "INPUT_PROJECT_SLOT",
    "INPUT_SIGNALS",
    "INPUT_TOKEN_BUCKETS",
    "INPUT_TOKEN_MASK",
    "IR_VERSION",
    "MAX_CANDIDATES",
    "MAX_LINE_BYTES",
    "MAX_QUERY_TERMS",
    "MAX_TOKEN_CELLS",
    "META_KEYS",
    "METHODS",
    "N_FEATURES",
    "N_SIGNALS",
    "OPSET",
    "OPTIONAL_GRAPH_INPUTS",
    "OUTPUT_LOGITS",
    "OUTPUT_SCORES",
    "REENABLE_AFTER_S",
    "RESTART_ATTEMPTS",
    "RESTART_DELAY_S",
    "SESSION_FEATURES",
    "SIGNAL_NAMES",
    "ErrorCode",
    "feature_spec_hash",
]

# The session context's fallback (docs/specification.md §3.3): the unit mean of the embeddings of
# the first CONTEXT_TOP memories of the pool's order (signet_bench.config's context_fallback_top
# reads it).
CONTEXT_TOP = 10

# --- the 17 candidate features (docs/specification.md §4.1; in signet_scorer/features.py) ---

FEATURE_NAMES: tuple[str, ...] = (
    "recency",
    "importance",
    "usage",
    "tod_sin",
    "tod_cos",
    "dow_sin",
    "dow_cos",
    "moy_sin",
    "moy_cos",
    "session_gap",
    "has_embedding",
    "superseded",
    "entity_slot",
    "aspect_slot",
    "is_constraint",
    "structural_density",
    "is_traversal",
)
N_FEATURES = len(FEATURE_NAMES)
# Features that are the same for every candidate of a session (time of day, weekday, month,
# session gap): in the gate they shift a session's logits uniformly and cancel in its softmax,
# so the scorer also feeds them into the query, read from the session's first candidate.
SESSION_FEATURES: tuple[int, ...] = tuple(
    FEATURE_NAMES.index(n)
    for n in ("tod_sin", "tod_cos", "dow_sin", "dow_cos", "moy_sin", "moy_cos", "session_gap")
)
# Changing any feature definition must change this string: checkpoints and exported graphs
# record its hash, and the server reports whether a model's hash matches its own.
FEATURE_SPEC = (
    "v1;age=start-created;tz=local;dow=mon0;gap=per-project-start;superseded=as-of-start;"
    + ",".join(FEATURE_NAMES)
)


def feature_spec_hash(spec: str) -> str:
    """Short stable id of a feature spec text: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(spec.encode("utf-8")).hexdigest()[:16]


FEATURE_SPEC_HASH = feature_spec_hash(FEATURE_SPEC)

# --- the per-candidate signals beside the features (definitions in signet_scorer/signals.py) ---

# Not Signet features: a graph input of their own with a weight each, so Signet's 17 features,
# the feature-spec hash and SGPT files stay as they are.
# Appended only: a graph or checkpoint of fewer signals reads the first ones (the ones it knew).
SIGNAL_NAMES: tuple[str, ...] = (
    "lexical",
    "entity_match",
    "source_neighbourhood",
    "cosine_rank",
    "hybrid_rank",
    "length",
    "session_max",
    "session_best_rank",
    "track_record",
    "adjacent_max",
    "adjacent_best_rank",
    "adjacent_hybrid_rank",
)
N_SIGNALS = len(SIGNAL_NAMES)

# --- the exported graph (signet_bench/learn/export.py builds it; signet_scorer/scorer.py feeds it)

OPSET = 17  # onnxruntime 1.31 accepts up to 26; 17 is the oldest with every op used here
IR_VERSION = 8

INPUT_CONTEXT = "context_embedding"  # float32 [native_dim]
INPUT_CANDIDATE_EMBEDDINGS = "candidate_embeddings"  # float32 [n_candidates, native_dim]
INPUT_HAS_EMBEDDING = "has_embedding"  # bool [n_candidates]: True = embedded path
INPUT_TOKEN_BUCKETS = "token_buckets"  # int64 [n_candidates, n_tokens], 0 at padding
INPUT_TOKEN_MASK = "token_mask"  # float32 [n_candidates, n_tokens]: 1 = a real token
INPUT_FEATURES = "candidate_features"  # float32 [n_candidates, 17]
INPUT_PROJECT_SLOT = "project_slot"  # int64 [1]
INPUT_SIGNALS = "candidate_signals"  # float32 [n_candidates, N_SIGNALS]
GRAPH_INPUTS = (
    INPUT_CONTEXT,
    INPUT_CANDIDATE_EMBEDDINGS,
    INPUT_HAS_EMBEDDING,
    INPUT_TOKEN_BUCKETS,
    INPUT_TOKEN_MASK,
    INPUT_FEATURES,
    INPUT_PROJECT_SLOT,
)
# Inputs of graphs exported since they existed; the server feeds them when the graph has them
# (zeros when the request carries no evidence) and a graph exported before them still loads.
OPTIONAL_GRAPH_INPUTS = (INPUT_SIGNALS,)
OUTPUT_LOGITS = "logits"  # float32 [n_candidates]
OUTPUT_SCORES = "scores"  # float32 [n_candidates], softmax over the candidates
GRAPH_OUTPUTS = (OUTPUT_LOGITS, OUTPUT_SCORES)

# Metadata written into every exported model (all values are strings).
# Signet's ScorerConfig fields, in its serde order (the SGPT config JSON).
DIM_KEYS = (
    "native_dim",
    "internal_dim",
    "value_dim",
    "extra_features",
    "hash_buckets",
    "project_slots",
)
META_KEYS = (
    "feature_spec_hash",  # the hash recorded by the trainer ("unknown" for Signet imports)
    *DIM_KEYS,
    "layer_norm_eps",
    "training_first_session",  # ISO time of the oldest training session ("" if unknown)
    "training_last_session",
    "trained_at",  # ISO time the checkpoint was written ("" if unknown)
    "label_policy",  # the label rule set the weights were trained with
    "model_version",  # 16 hex digits of SHA-256 over the float32 weights
    "source_format",  # "signet-bench" or "sgpt"
)

# --- the JSON-RPC sidecar (docs/specification.md §8) --------------------------------------------

METHODS = ("status", "score", "train", "train_from_db", "save_checkpoint")


class ErrorCode:
    """JSON-RPC 2.0 error codes, as Signet's sidecar uses them."""

    PARSE_ERROR = -32700  # not JSON
    INVALID_REQUEST = -32600  # not a JSON-RPC 2.0 request object
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602  # the message names the field
    SERVER_ERROR = -32000  # the handler failed (no model, training failed, ...)
    INTERNAL_ERROR = -32603  # I/O or serialization


# Signet's daemon client (docs/specification.md §8.2): per-method timeouts and its crash policy. The
# score timeout and the crash threshold are the specification's scoreTimeoutMs and
# crashDisableThreshold (signet_bench.config has the same values; a test keeps them equal).
CLIENT_TIMEOUTS_MS = {
    "status": 5_000,
    "score": 120,
    "train": 30_000,
    "train_from_db": 30_000,
    "save_checkpoint": 10_000,
}
RESTART_DELAY_S = 1.0
RESTART_ATTEMPTS = 3
CRASH_DISABLE_THRESHOLD = 3
CRASH_WINDOW_S = 3_600.0
REENABLE_AFTER_S = 7_200.0

# Limits that keep one hostile request from exhausting the server's memory.
MAX_LINE_BYTES = 32 << 20  # one request line (the daemon's 80 x 768 request is ~1.3 MB)
MAX_CANDIDATES = 1_024
MAX_TOKEN_CELLS = 1 << 18  # n_candidates x n_tokens of the text path (64 MiB of hash rows)
MAX_QUERY_TERMS = 1_024  # query_terms or query_entities of one score request
