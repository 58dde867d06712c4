"""ONNX export of the cross-attention scorer: the numpy forward pass (`model/scorer.py`) written
node by node with `onnx.helper`, for one session of N candidates (docs/specification.md §4.7).

    enc_n   = LN_emb(candidate_embeddings_n W_cᵀ)                 where has_embedding_n
            = LN_text(Σ_t mask_nt HashEmb[bucket_nt] / max(1, Σ_t mask_nt))   elsewhere
    q       = (LN_emb(context W_cᵀ) + QProj[slot] + features_0[session] QTimeᵀ) W_qᵀ
    cos_n   = cosine(context, candidate_embeddings_n)   where has_embedding_n and both norms > 0
            = 0                                          elsewhere
    logits  = enc (q W_k / sqrt(d) + g_v W_v)ᵀ + features g_fᵀ + candidate_signals w_sig
              + w_cos cos + ProjEmb[slot] g_pᵀ + g_b
    scores  = softmax(logits)

with W_c = W_down minus the mean of its rows (so the layer norm's input has mean 0) and gate_proj
= [g_v, g_f, g_p, g_b]: the attention q·(W_k enc)/sqrt(d) and the gate over [W_v enc, features,
ProjEmb[slot], 1] folded as the numpy forward folds them. What depends on the weights alone
(W_c, g_v W_v, the gate's slices) is written as nodes over the weights, which onnxruntime folds
into constants at load; the text path runs only for a session that has a text-path candidate.

Every parameter of `model/params.py` is one float32 initializer under its own name, and the
builder refuses a parameter set that the graph does not consume entirely, so a parameter added to
the model without being exported fails the export. Opset 17, IR 8, standard ops only; dynamic
`n_candidates` and `n_tokens` axes; metadata under `signet_scorer.contract.META_KEYS`.

`signet-bench export --model PATH --out OUT` also converts between the model formats: the suffix
of OUT picks the format (`.onnx` the graph, `.bin` Signet's SGPT, anything else the workbench's own
checkpoint) unless `--format` names it, and PATH may be any of them (an ONNX file comes back as
float32 weights). The sidecar converts through this command, never by importing this module.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import onnx
from google.protobuf.message import DecodeError
from onnx import TensorProto, helper, numpy_helper

from signet_bench import __version__
from signet_bench.config import PredictorConfig
from signet_bench.errors import UserError
from signet_bench.learn.model.checkpoint import (
    CheckpointMeta,
    load_any,
    save_checkpoint,
    write_sgpt,
)
from signet_bench.learn.model.params import neutral_extensions, param_shapes
from signet_scorer import contract as c
from signet_scorer.atomic import atomic_write_bytes
from signet_scorer.contract import DIM_KEYS
from signet_scorer.request import FORMATS, format_for_suffix
from signet_scorer.workbench import CHECKPOINT_FILE, prompt_model_file

__all__ = [
    "MAX_MODEL_BYTES",
    "ExportError",
    "build_model",
    "convert_model",
    "convert_with_prompt_model",
    "export_model",
    "load_model_file",
    "model_bytes",
    "model_metadata",
    "params_from_onnx",
    "weights_digest",
    "write_model_file",
]

MAX_MODEL_BYTES = 5 * 1024 * 1024
LABEL_POLICIES = {"signet-bench": "seed", "sgpt": "signet-0.58", "onnx": "unknown"}

Params = dict[str, np.ndarray]


class ExportError(UserError):
    """A model that cannot be exported or converted; the message names the file and why."""


# --- graph building -----------------------------------------------------------------------------


@dataclass
class _Graph:
    """Nodes and initializers under construction; every tensor is named after its node."""

    nodes: list[onnx.NodeProto] = field(default_factory=list)
    inits: list[TensorProto] = field(default_factory=list)

    def weight(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name))
        return name

    def const(self, name: str, value: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(value), f"const/{name}"))
        return f"const/{name}"

    def op(self, op_type: str, inputs: Sequence[str], name: str, **attrs: object) -> str:
        self.nodes.append(helper.make_node(op_type, list(inputs), [name], name=name, **attrs))
        return name


def _layer_norm(g: _Graph, x: str, gamma: str, beta: str, cfg: PredictorConfig, name: str) -> str:
    """Row-wise LN over the last axis, one fused node: gamma·(x − mean)/sqrt(var + eps) + beta,
    population variance."""
    eps = float(cfg.layer_norm_eps)
    return g.op("LayerNormalization", [x, gamma, beta], name, axis=-1, epsilon=eps)


def _gate_part(g: _Graph, start: int, stop: int, name: str) -> str:
    """gate_proj[:, start:stop], (1, stop − start): a constant onnxruntime folds at load."""
    bounds = [
        g.const(f"{name}_{k}", np.array([v], dtype=np.int64))
        for k, v in (("start", start), ("stop", stop), ("axis", 1))
    ]
    return g.op("Slice", ["gate_proj", *bounds], f"gate/{name}")


def _centred_down(g: _Graph) -> str:
    """W_down with its rows' mean removed, the numpy forward's `w_centred`: a product with it
    has mean 0 over its d outputs, so the layer norm has nothing to centre (folded at load)."""
    mean = g.op("ReduceMean", ["down_proj"], "down/row_mean", axes=[0], keepdims=1)
    return g.op("Sub", ["down_proj", mean], "down/centred")


def _query(g: _Graph, cfg: PredictorConfig, w_down: str, ctx: str, row0: str) -> str:
    """a [1, d], what a candidate's logit reads of its encoding: (q W_k)/sqrt(d) + g_v W_v,
    q the context row `ctx` on the embedded path plus the project and session-time terms."""
    h = g.op("Gemm", [ctx, w_down], "query/down_proj", transB=1)
    ctx_norm = _layer_norm(g, h, "ln_embedded_gamma", "ln_embedded_beta", cfg, "query/ln")
    proj = g.op("Gather", ["query_project", c.INPUT_PROJECT_SLOT], "query/project", axis=0)
    # the session-level features, read from the first candidate as the numpy model does
    first = g.op("Gather", [c.INPUT_FEATURES, row0], "query/first_candidate", axis=0)
    sess_idx = g.const("session_features", np.array(c.SESSION_FEATURES, dtype=np.int64))
    sess = g.op("Gather", [first, sess_idx], "query/session_features", axis=1)
    time = g.op("Gemm", [sess, "query_time"], "query/time", transB=1)
    q_in = g.op("Add", [g.op("Add", [ctx_norm, proj], "query/plus_project"), time], "query/in")
    q = g.op("Gemm", [q_in, "q_proj"], "query/q_proj", transB=1)
    w_value = _gate_part(g, 0, cfg.value_dim, "value_weights")
    u = g.op("Gemm", [w_value, "v_proj"], "gate/value_read")  # folded at load
    alpha = 1.0 / math.sqrt(cfg.internal_dim)
    return g.op("Gemm", [q, "k_proj", u], "attention/read", alpha=alpha)


def _text_branch(cfg: PredictorConfig, emb: str, has: str, out: str) -> onnx.GraphProto:
    """The `If` branch for a session with text-path candidates: `out` is LN_text of each one's
    mean hashed token, and `emb` for the others."""
    t = _Graph()
    rows = t.op("Gather", ["hash_embeddings", c.INPUT_TOKEN_BUCKETS], "text/hash_rows", axis=0)
    axis1 = t.op("Constant", [], "text/axis1", value_ints=[1])
    axis2 = t.op("Constant", [], "text/axis2", value_ints=[2])
    mask3 = t.op("Unsqueeze", [c.INPUT_TOKEN_MASK, axis2], "text/mask3")
    masked = t.op("Mul", [rows, mask3], "text/masked_rows")
    total = t.op("ReduceSum", [masked, axis1], "text/sum", keepdims=0)
    count = t.op("ReduceSum", [c.INPUT_TOKEN_MASK, axis1], "text/count", keepdims=1)
    one = t.op("Constant", [], "text/one", value_float=1.0)
    mean = t.op("Div", [total, t.op("Max", [count, one], "text/count_at_least_1")], "text/mean")
    txt = _layer_norm(t, mean, "ln_text_gamma", "ln_text_beta", cfg, "text/ln")
    t.nodes.append(helper.make_node("Where", [has, emb, txt], [out], name="text/select"))
    return _branch(t.nodes, "with_text_path", out)


def _branch(nodes: list[onnx.NodeProto], name: str, out: str) -> onnx.GraphProto:
    """An `If` branch: `nodes` over the outer graph's values, giving the float tensor `out`."""
    info = helper.make_tensor_value_info(out, TensorProto.FLOAT, None)
    return helper.make_graph(nodes, name, [], [info])


def _encodings(g: _Graph, cfg: PredictorConfig, w_down: str, has: str) -> str:
    """enc [N, d]: the embedded path where has_embedding, else the text path, which is
    computed only for a session that has such a candidate (an `If`: most sessions have none,
    and skipping it took a 100-candidate score from 203 to 175 µs)."""
    h = g.op("Gemm", [c.INPUT_CANDIDATE_EMBEDDINGS, w_down], "embedded/down_proj", transB=1)
    emb = _layer_norm(g, h, "ln_embedded_gamma", "ln_embedded_beta", cfg, "embedded/ln")
    has_int = g.op("Cast", [c.INPUT_HAS_EMBEDDING], "enc/has_int", to=TensorProto.INT32)
    fewest = g.op("ReduceMin", [has_int], "enc/fewest", keepdims=0)
    embedded_only = g.op("Cast", [fewest], "enc/embedded_only", to=TensorProto.BOOL)
    out = "enc/branch"
    only = _branch(
        [helper.make_node("Identity", [emb], [out], name="enc/embedded")], "embedded", out
    )
    text = _text_branch(cfg, emb, has, out)
    return g.op("If", [embedded_only], "enc/select", then_branch=only, else_branch=text)


def _cosine(g: _Graph, has: str, ctx: str) -> str:
    """cos [N, 1]: cosine(context row `ctx`, embedding) of the embedded candidates, 0 for the
    text path and wherever either vector is zero (the numpy model's rule)."""
    emb = c.INPUT_CANDIDATE_EMBEDDINGS
    dots = g.op("Gemm", [emb, ctx], "cosine/dot", transB=1)
    axis1 = g.const("cosine_axis1", np.array([1], dtype=np.int64))
    emb_sq = g.op("ReduceSum", [g.op("Mul", [emb, emb], "cosine/emb_sq"), axis1], "cosine/emb_ss")
    ctx_sq = g.op("ReduceSum", [g.op("Mul", [ctx, ctx], "cosine/ctx_sq"), axis1], "cosine/ctx_ss")
    norms = g.op("Sqrt", [g.op("Mul", [emb_sq, ctx_sq], "cosine/norms_sq")], "cosine/norms")
    zero = g.const("cosine_zero", np.zeros((1, 1), dtype=np.float32))
    one = g.const("cosine_one", np.ones((1, 1), dtype=np.float32))
    ok = g.op("And", [has, g.op("Greater", [norms, zero], "cosine/nonzero")], "cosine/defined")
    safe = g.op("Where", [ok, norms, one], "cosine/safe_norms")
    return g.op("Where", [ok, g.op("Div", [dots, safe], "cosine/ratio"), zero], "cosine/value")


def _evidence_weights(g: _Graph, cfg: PredictorConfig) -> str:
    """[1, F + S + 1]: the gate's feature weights, the signal weights and the cosine weight,
    in the order `_logits` concatenates their inputs (folded at load)."""
    w_feat = _gate_part(g, cfg.value_dim, cfg.value_dim + cfg.extra_features, "feature_weights")
    row0 = g.const("evidence_axis0", np.array([0], dtype=np.int64))
    w_sig = g.op("Unsqueeze", ["signal_weights", row0], "signals/weight_row")
    w_cos = g.op("Unsqueeze", ["cosine_weight", row0], "cosine/weight_row")
    return g.op("Concat", [w_feat, w_sig, w_cos], "evidence/weights", axis=1)


def _project_bias(g: _Graph, cfg: PredictorConfig) -> str:
    """[1, 1]: the gate's read of the project row plus its bias, one value per session."""
    start = cfg.value_dim + cfg.extra_features
    w_proj = _gate_part(g, start, start + cfg.internal_dim, "project_weights")
    bias = _gate_part(g, start + cfg.internal_dim, start + cfg.internal_dim + 1, "bias")
    proj = g.op("Gather", ["project_embeddings", c.INPUT_PROJECT_SLOT], "gate/project", axis=0)
    return g.op("Gemm", [proj, w_proj, bias], "gate/project_bias", transB=1)


def _logits(g: _Graph, cfg: PredictorConfig) -> str:
    """logits [N]: one linear read of [enc, features, signals, cos] with the weights
    [a, gate's feature weights, signal weights, cosine weight], plus the project bias (the
    numpy forward's folded form of the attention and the gate)."""
    axis1 = g.const("has_axis1", np.array([1], dtype=np.int64))
    has = g.op("Unsqueeze", [c.INPUT_HAS_EMBEDDING, axis1], "enc/has_embedding")
    row0 = g.const("axis0", np.array([0], dtype=np.int64))
    ctx = g.op("Unsqueeze", [c.INPUT_CONTEXT, row0], "context_row")  # [1, native_dim]
    w_down = _centred_down(g)
    enc = _encodings(g, cfg, w_down, has)
    inputs = [enc, c.INPUT_FEATURES, c.INPUT_SIGNALS, _cosine(g, has, ctx)]
    x = g.op("Concat", inputs, "logits/inputs", axis=1)
    weights = [_query(g, cfg, w_down, ctx, row0), _evidence_weights(g, cfg)]
    w = g.op("Concat", weights, "logits/weights", axis=1)
    column = g.op("Gemm", [x, w, _project_bias(g, cfg)], "logits/column", transB=1)
    return g.op("Squeeze", [column, axis1], c.OUTPUT_LOGITS)


def _io(native_dim: int, n_features: int, n_signals: int) -> tuple[list, list]:
    """Graph inputs and outputs with their documentation."""
    n, t = "n_candidates", "n_tokens"
    spec = [
        (c.INPUT_CONTEXT, TensorProto.FLOAT, [native_dim], "session context embedding"),
        (
            c.INPUT_CANDIDATE_EMBEDDINGS,
            TensorProto.FLOAT,
            [n, native_dim],
            "candidate embeddings; rows of text-path candidates are ignored (send zeros)",
        ),
        (c.INPUT_HAS_EMBEDDING, TensorProto.BOOL, [n], "True: embedded path; False: text path"),
        (
            c.INPUT_TOKEN_BUCKETS,
            TensorProto.INT64,
            [n, t],
            "hash buckets of each text-path candidate's tokens (signet_scorer.tokenize), 0-padded",
        ),
        (c.INPUT_TOKEN_MASK, TensorProto.FLOAT, [n, t], "1.0 for a real token, 0.0 for padding"),
        (
            c.INPUT_FEATURES,
            TensorProto.FLOAT,
            [n, n_features],
            (
                "the 17 features (signet_scorer.contract.FEATURE_NAMES); the session-level ones "
                "are read from the first candidate"
            ),
        ),
        (c.INPUT_PROJECT_SLOT, TensorProto.INT64, [1], "project slot in [0, project_slots)"),
        (
            c.INPUT_SIGNALS,
            TensorProto.FLOAT,
            [n, n_signals],
            (
                "per-candidate evidence (signet_scorer.contract.SIGNAL_NAMES, "
                "signet_scorer.signals); zeros: none"
            ),
        ),
    ]
    inputs = [helper.make_tensor_value_info(nm, ty, sh, doc) for nm, ty, sh, doc in spec]
    outputs = [
        helper.make_tensor_value_info(c.OUTPUT_LOGITS, TensorProto.FLOAT, [n], "raw logits"),
        helper.make_tensor_value_info(
            c.OUTPUT_SCORES, TensorProto.FLOAT, [n], "softmax of the logits over the candidates"
        ),
    ]
    return inputs, outputs


def weights_digest(params: Mapping[str, np.ndarray]) -> str:
    """16 hex digits of SHA-256 over the float32 weights in parameter order: the model version."""
    h = hashlib.sha256()
    for name in sorted(params):
        h.update(name.encode("utf-8"))
        h.update(np.ascontiguousarray(params[name], dtype="<f4").tobytes())
    return h.hexdigest()[:16]


def model_metadata(
    params: Mapping[str, np.ndarray], meta: CheckpointMeta, *, trained_at: str | None = None
) -> dict[str, str]:
    """The metadata written into the graph (every key of `signet_scorer.contract.META_KEYS`)."""
    out = {k: str(meta.dims[k]) for k in DIM_KEYS}
    out.update(
        feature_spec_hash=meta.feature_spec_hash or "unknown",
        layer_norm_eps=repr(float(meta.config().layer_norm_eps)),
        training_first_session=meta.first_session_at or "",
        training_last_session=meta.last_session_at or "",
        trained_at=trained_at or "",
        label_policy=LABEL_POLICIES.get(meta.source_format, "unknown"),
        model_version=weights_digest(params),
        source_format=meta.source_format,
    )
    return {k: out[k] for k in c.META_KEYS}


def _all_nodes(nodes: Sequence[onnx.NodeProto]) -> Iterator[onnx.NodeProto]:
    """The nodes and, depth first, the nodes of their branches (`If`)."""
    for node in nodes:
        yield node
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                yield from _all_nodes(attr.g.node)


def build_model(
    params: Mapping[str, np.ndarray], meta: CheckpointMeta, *, trained_at: str | None = None
) -> onnx.ModelProto:
    """The checked ONNX model of these weights. Raises ExportError when `params` do not match
    the model's parameter list or the graph leaves one of them unused."""
    cfg: PredictorConfig = meta.config()
    shapes = param_shapes(cfg)
    missing = sorted(set(shapes) - set(params))
    extra = sorted(set(params) - set(shapes))
    if missing or extra:
        raise ExportError(f"cannot export: missing parameters {missing}, unknown {extra}")
    g = _Graph()
    for name, shape in shapes.items():
        if tuple(np.shape(params[name])) != shape:
            raise ExportError(f"cannot export: '{name}' has shape {np.shape(params[name])}")
        g.weight(name, params[name])
    logits = _logits(g, cfg)
    g.op("Softmax", [logits], c.OUTPUT_SCORES, axis=-1)
    consumed = {i for node in _all_nodes(g.nodes) for i in node.input}
    unused = [n for n in shapes if n not in consumed]
    if unused:
        raise ExportError(f"cannot export: the graph does not use parameter(s) {unused}")
    inputs, outputs = _io(cfg.native_dim, cfg.extra_features, shapes["signal_weights"][0])
    graph = helper.make_graph(
        g.nodes, "signet_cross_attention_scorer", inputs, outputs, initializer=g.inits
    )
    graph.doc_string = (__doc__ or "").split("\n\n")[1]
    model = helper.make_model(
        graph,
        opset_imports=[helper.make_opsetid("", c.OPSET)],
        ir_version=c.IR_VERSION,
        producer_name="signet-bench",
        producer_version=__version__,
        doc_string="Signet predictive memory scorer (cross-attention), one session per call",
    )
    helper.set_model_props(model, model_metadata(params, meta, trained_at=trained_at))
    onnx.checker.check_model(model, full_check=True)
    return model


def model_bytes(
    params: Mapping[str, np.ndarray], meta: CheckpointMeta, *, trained_at: str | None = None
) -> bytes:
    """The serialized ONNX model of these weights."""
    return build_model(params, meta, trained_at=trained_at).SerializeToString()


# --- files --------------------------------------------------------------------------------------


def _mtime_iso(path: Path) -> str:
    stamp = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%SZ")


def _is_onnx(path: Path) -> bool:
    with path.open("rb") as f:
        head = f.read(4)
    return head not in (b"SGPT", b"PK\x03\x04") and (path.suffix == ".onnx" or head[:1] == b"\x08")


def params_from_onnx(path: str | Path) -> tuple[Params, CheckpointMeta]:
    """Weights (float32 values as float64) and meta of a model written by `export_model`."""
    p = Path(path)
    try:
        model = onnx.load(str(p))
    except (OSError, ValueError, DecodeError) as exc:
        raise ExportError(f"{p}: not a readable ONNX model ({exc})") from None
    props = {e.key: e.value for e in model.metadata_props}
    try:
        dims = {k: int(props[k]) for k in DIM_KEYS}
    except (KeyError, ValueError):
        raise ExportError(
            f"{p}: not exported by signet-bench (no model dims in its metadata)"
        ) from None
    spec_hash = props.get("feature_spec_hash")
    meta = CheckpointMeta(
        **dims,
        feature_spec_hash=None if spec_hash in (None, "unknown") else spec_hash,
        first_session_at=props.get("training_first_session") or None,
        last_session_at=props.get("training_last_session") or None,
        source_format=props.get("source_format", "onnx"),
    )
    cfg = meta.config()
    shapes = param_shapes(cfg)
    found = {t.name: t for t in model.graph.initializer if t.name in shapes}
    # a graph exported before one of our terms existed computes that term's neutral value
    neutral = {n: v for n, v in neutral_extensions(cfg).items() if n not in found}
    missing = sorted(set(shapes) - set(found) - set(neutral))
    if missing:
        raise ExportError(f"{p}: lacks parameter(s) {missing}")
    params = {
        n: neutral[n] if n in neutral else numpy_helper.to_array(found[n]).astype(np.float64)
        for n in shapes
    }
    return params, meta


def load_model_file(path: str | Path) -> tuple[Params, CheckpointMeta, str]:
    """(weights, meta, trained_at) of an own checkpoint (or the folder holding `model.sbm`),
    a Signet SGPT `model.bin` or an exported ONNX file."""
    p = Path(path)
    if p.is_dir():
        p = p / CHECKPOINT_FILE
    if not p.is_file():
        raise ExportError(f"{p}: no such model file")
    if _is_onnx(p):
        params, meta = params_from_onnx(p)
    else:
        params, meta = load_any(p)
    return params, meta, _mtime_iso(p)


def export_model(model_path: str | Path, out_path: str | Path) -> Path:
    """Export a checkpoint (own format, its folder, or SGPT) to an ONNX file, atomically."""
    return convert_model(model_path, out_path, fmt="onnx")


def write_model_file(
    path: str | Path,
    params: Mapping[str, np.ndarray],
    meta: CheckpointMeta,
    *,
    fmt: str | None = None,
    flags: int = 0,
    trained_at: str | None = None,
) -> Path:
    """Write weights in `fmt` ("onnx" the graph, "sgpt" Signet's `model.bin` with `flags` as
    its flag bits, "signet-bench" the workbench checkpoint; default: what the path's suffix
    asks for), atomically."""
    out = Path(path)
    fmt = fmt or format_for_suffix(out)
    if fmt == "onnx":
        data = model_bytes(params, meta, trained_at=trained_at)
        if len(data) > MAX_MODEL_BYTES:
            raise ExportError(f"{out}: the model is {len(data)} bytes, over {MAX_MODEL_BYTES}")
        atomic_write_bytes(out, data)
    elif fmt == "sgpt":
        write_sgpt(out, params, flags=flags)
    elif fmt == "signet-bench":
        save_checkpoint(out, params, meta)
    else:
        raise ExportError(f"{out}: unknown model format {fmt!r} (one of {', '.join(FORMATS)})")
    return out


def convert_model(
    model_path: str | Path, out_path: str | Path, *, flags: int = 0, fmt: str | None = None
) -> Path:
    """Write the model of `model_path` in `fmt` (default: the format `out_path` asks for:
    `.onnx` the graph, `.bin` Signet's SGPT with `flags` as its flag bits, anything else the
    workbench checkpoint)."""
    params, meta, trained_at = load_model_file(model_path)
    return write_model_file(out_path, params, meta, fmt=fmt, flags=flags, trained_at=trained_at)


def convert_with_prompt_model(
    model_path: str | Path, out_path: str | Path, *, flags: int = 0, fmt: str | None = None
) -> list[Path]:
    """`convert_model`, and the prompt hook's own model with it (`prompt_model_file`: written
    beside session start's by a training that chose one): converted beside `out_path` when the
    source has one, else any there is removed, so the prompt hook is never served a model older
    than session start's. Returns the files written."""
    src = Path(model_path)
    src = src / CHECKPOINT_FILE if src.is_dir() else src
    written = [convert_model(src, out_path, flags=flags, fmt=fmt)]
    own, target = prompt_model_file(src), prompt_model_file(Path(out_path))
    if own.is_file():
        written.append(convert_model(own, target, flags=flags, fmt=fmt))
    elif target != own:
        target.unlink(missing_ok=True)
    return written
