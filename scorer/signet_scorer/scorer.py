"""Score one session's candidates with the exported model: the in-process API for hooks written
in Python, and the engine behind the JSON-RPC sidecar.

`Scorer` fails open: loading or scoring never raises into the caller; a failure gives "no
scores" and the reason, and the caller keeps its baseline order. The parameters have Signet's
sidecar names and defaults (docs/specification.md §8.1): a candidate whose embedding is missing
(`None`) or has the wrong length takes the text path, and needs a text; features default to zeros,
the project slot to 0. The session-level features reach the query from the first candidate's row,
exactly as the numpy model takes them.

Five optional parameters are ours (Signet's daemon never sends them, and its requests score
as before): `query_terms` (the session's keyword query), `query_entities` (the names in it),
`candidate_sources` (each candidate's source session, or null), `candidate_track_record`
(each candidate's track record, `signet_scorer.track_record`, or null: the mean of the given
ones) and `candidate_created_at` (each candidate's creation time in epoch seconds, or null: its
neighbours in the store's order). From them and the candidates' texts and embeddings the server
computes the candidates' signals (`signet_scorer.signals`: lexical, entity match, source
neighbourhood, track record, adjacency), the
same function the trainer's samples use; without them the signals are 0. A graph exported with
fewer signals is fed the first ones (the list only appends).

A model file may be an ONNX export, the workbench's own checkpoint or Signet's SGPT `model.bin`;
the last two are converted to ONNX at load by the library in a child process
(`signet_scorer.library`); serving an ONNX file needs only onnxruntime and numpy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np

from signet_scorer import contract as c
from signet_scorer.library import TrainerError, TrainerOptions, convert
from signet_scorer.query import ScoreQuery
from signet_scorer.runtime import InferenceSession, inference_session
from signet_scorer.signals import Origins, candidate_signals
from signet_scorer.tokenize import token_buckets
from signet_scorer.workbench import SERVED_MODEL_FILE

__all__ = [
    "ModelInfo",
    "OnnxModel",
    "ParamError",
    "Refused",
    "ScoreRequest",
    "ScoreResult",
    "Scorer",
    "graph_inputs",
    "model_kind",
    "parse_score_params",
]

SGPT_MAGIC = b"SGPT"
ZIP_MAGIC = b"PK\x03\x04"


class ParamError(ValueError):
    """A score parameter the model cannot take; `field` names it (JSON-RPC -32602)."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


class Refused(ValueError):
    """A request Signet's sidecar refuses in its handler rather than its parameter types
    (JSON-RPC -32000), with Signet's own message: lengths that disagree with `candidate_ids`, a
    feature row of another width, a context of another dimension, a candidate with neither
    an embedding nor a text; `train`'s and `train_from_db`'s own checks."""


class ModelLoadError(RuntimeError):
    """A model file that cannot be served; the message names the file and why."""


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """What the server knows about a loaded model (from the graph's metadata)."""

    path: str
    kind: str  # "onnx" | "sgpt" | "signet-bench" | "memory"
    native_dim: int
    hash_buckets: int
    project_slots: int
    n_features: int
    metadata: dict[str, str] = field(default_factory=dict)
    n_signals: int = 0  # width of the graph's signal input; 0: a graph exported before it

    @property
    def model_version(self) -> str:
        return self.metadata.get("model_version", "")

    @property
    def feature_spec_hash(self) -> str:
        return self.metadata.get("feature_spec_hash", "unknown")


@dataclass(frozen=True, slots=True)
class ScoreRequest:
    """A validated score request: candidate ids and the graph's input arrays."""

    ids: list[str]
    inputs: dict[str, np.ndarray]


@dataclass(frozen=True, slots=True)
class ScoreResult:
    """(id, probability) sorted by probability descending (ties: id ascending), or no scores
    (`scores is None`) and the reason."""

    scores: list[tuple[str, float]] | None
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.scores is not None


# --- request -> graph inputs --------------------------------------------------------------------


def graph_inputs(
    context: np.ndarray,
    embeddings: np.ndarray,
    has_embedding: np.ndarray,
    token_lists: Sequence[np.ndarray | Sequence[int] | None],
    features: np.ndarray,
    project_slot: int,
    signals: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """The graph's float32/int64/bool inputs for one session (token lists padded to at least
    one column; rows of text-path candidates' embeddings zeroed; signals (n, N_SIGNALS), zeros
    when None)."""
    n = len(has_embedding)
    has = np.asarray(has_embedding, dtype=bool)
    emb = np.asarray(embeddings, dtype=np.float32)
    text_rows = np.flatnonzero(~has).tolist()
    if text_rows:
        emb = emb.copy()
        emb[text_rows] = 0.0
    lengths = {i: len(t) for i in text_rows if (t := token_lists[i]) is not None}
    width = max(1, max(lengths.values(), default=0))
    buckets = np.zeros((n, width), dtype=np.int64)
    mask = np.zeros((n, width), dtype=np.float32)
    for i, size in lengths.items():
        if size:
            buckets[i, :size] = np.asarray(token_lists[i], dtype=np.int64)
            mask[i, :size] = 1.0
    return {
        c.INPUT_CONTEXT: np.asarray(context, dtype=np.float32).reshape(-1),
        c.INPUT_CANDIDATE_EMBEDDINGS: emb,
        c.INPUT_HAS_EMBEDDING: has,
        c.INPUT_TOKEN_BUCKETS: buckets,
        c.INPUT_TOKEN_MASK: mask,
        c.INPUT_FEATURES: np.asarray(features, dtype=np.float32).reshape(n, -1),
        c.INPUT_PROJECT_SLOT: np.array([project_slot], dtype=np.int64),
        c.INPUT_SIGNALS: (
            np.zeros((n, c.N_SIGNALS), dtype=np.float32)
            if signals is None
            else np.asarray(signals, dtype=np.float32).reshape(n, -1)
        ),
    }


def _finite_f32(name: str, value: Any, shape: tuple[int, ...] | None = None) -> np.ndarray:
    """`value` (an array or nested lists of numbers) as a finite float32 array, of `shape` when
    given; anything else raises ParamError(name)."""
    if not isinstance(value, list | np.ndarray):
        raise ParamError(name, f"must be an array of numbers, got {type(value).__name__}")
    with np.errstate(over="ignore", invalid="ignore"):
        try:
            arr = np.asarray(value, dtype=np.float32)
        except (TypeError, ValueError, OverflowError):
            raise ParamError(name, "must be a rectangular array of numbers") from None
        if shape is not None and arr.shape != shape:
            raise ParamError(name, f"has shape {list(arr.shape)}, expected {list(shape)}")
        if arr.size and not np.isfinite(arr).all():
            raise ParamError(name, "contains a non-finite value (NaN, Infinity or > 3.4e38)")
    return arr


def _array(value: object) -> list[Any] | np.ndarray | None:
    """`value` as the array it is (a JSON array, or a numpy one given in process), else None."""
    if isinstance(value, np.ndarray):
        return cast("np.ndarray", value)
    return cast("list[Any]", value) if isinstance(value, list) else None


def _length(value: object) -> int | None:
    """How many entries `value` has when it is an array, else None."""
    arr = _array(value)
    return None if arr is None else len(arr)


def _optional_list(params: Mapping[str, Any], name: str, n: int) -> list[Any] | np.ndarray | None:
    value = params.get(name)
    if value is None:
        return None
    arr = _array(value)
    if arr is None:
        raise ParamError(name, f"must be an array or null, got {type(value).__name__}")
    if len(arr) > n:
        raise ParamError(name, f"has {len(arr)} entries for {n} candidates")
    return arr


def _embeddings(params: Mapping[str, Any], n: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(embeddings [n, dim], has [n]): rows that are null, missing or of another length take
    the text path (Signet's rule); a row of the right length must be finite numbers."""
    rows = _optional_list(params, "candidate_embeddings", n)
    m = 0 if rows is None else len(rows)
    whole = (
        rows is not None
        and m > 0
        and (
            rows.shape == (m, dim)
            if isinstance(rows, np.ndarray)
            else all(
                isinstance(r, list) and len(cast("list[Any]", r)) == dim for r in rows
            )  # the daemon's common case
        )
    )
    if whole and m == n:  # every candidate embedded: the array as it is
        return _finite_f32("candidate_embeddings", rows, (m, dim)), np.ones(n, dtype=bool)
    emb = np.zeros((n, dim), dtype=np.float32)
    has = np.zeros(n, dtype=bool)
    if whole:
        emb[:m] = _finite_f32("candidate_embeddings", rows, (m, dim))
        has[:m] = True
        return emb, has
    for i, row in enumerate(() if rows is None else rows):
        if row is None:
            continue
        arr = _array(row)
        if arr is None:
            raise ParamError(f"candidate_embeddings[{i}]", "must be an array of numbers or null")
        if len(arr) == dim:
            emb[i] = _finite_f32(f"candidate_embeddings[{i}]", arr, (dim,))
            has[i] = True
    return emb, has


def _per_candidate(params: Mapping[str, Any], n: int, width: int) -> None:
    """Signet's checks of the per-candidate arrays, in its order: each given non-empty array
    holds one entry per candidate, and each feature row `width` values; else Refused with
    Signet's message (a value of the wrong type is left to the field's own check)."""
    for name in ("candidate_embeddings", "candidate_texts", "candidate_features"):
        length = _length(params.get(name))
        if length and length != n:
            raise Refused(f"candidate_ids and {name} length mismatch")
    rows = _array(params.get("candidate_features"))
    if isinstance(rows, np.ndarray):
        bad = rows.ndim != 2 or rows.shape[1] != width
    else:
        bad = rows is not None and any(_length(r) not in (None, width) for r in rows)
    if bad:
        raise Refused("candidate_features row has invalid dimension")


def _features(params: Mapping[str, Any], n: int, width: int) -> np.ndarray:
    value = params.get("candidate_features")
    if value is None or (isinstance(value, list) and not value):
        return np.zeros((n, width), dtype=np.float32)
    return _finite_f32("candidate_features", value, (n, width))


def _ids(params: Mapping[str, Any]) -> list[str]:
    value = params.get("candidate_ids")
    if not isinstance(value, list):
        raise ParamError("candidate_ids", "is required: an array of strings")
    ids = cast("list[Any]", value)
    if len(ids) > c.MAX_CANDIDATES:
        raise ParamError("candidate_ids", f"{len(ids)} candidates, at most {c.MAX_CANDIDATES}")
    if ids and set(map(type, ids)) != {str}:
        i = next(i for i, x in enumerate(ids) if not isinstance(x, str))
        raise ParamError(f"candidate_ids[{i}]", f"must be a string, got {type(ids[i]).__name__}")
    return ids


def _slot(params: Mapping[str, Any], slots: int) -> int:
    """The project slot: an unsigned 64-bit number reduced modulo the model's slots, as
    Signet's sidecar takes it (39 of 32 slots is slot 7); a negative one is refused."""
    slot = params.get("project_slot")
    if slot is None:
        return 0
    if isinstance(slot, bool) or not isinstance(slot, int | np.integer):
        raise ParamError("project_slot", f"must be a whole number, got {slot!r:.40}")
    if not 0 <= slot < 2**64:
        raise ParamError("project_slot", f"{slot} is outside [0, 2**64)")
    return int(cast("int | np.integer[Any]", slot)) % slots


def _strings_or_null(params: Mapping[str, Any], name: str, n: int) -> list[str | None]:
    """An optional per-candidate array of strings or nulls, padded with nulls to `n`."""
    given = _optional_list(params, name, n)
    values: list[Any] = [] if given is None else list(given)
    values += [None] * (n - len(values))
    bad = next((i for i, t in enumerate(values) if t is not None and not isinstance(t, str)), None)
    if bad is not None:
        raise ParamError(f"{name}[{bad}]", "must be a string or null")
    return values


def _query_list(params: Mapping[str, Any], name: str) -> list[str] | None:
    """An optional array of strings (the query's terms or entities), at most MAX_QUERY_TERMS."""
    given = params.get(name)
    if given is None:
        return None
    if not isinstance(given, list):
        raise ParamError(name, f"must be an array of strings or null, got {type(given).__name__}")
    value = cast("list[Any]", given)
    if len(value) > c.MAX_QUERY_TERMS:
        raise ParamError(name, f"has {len(value)} entries, at most {c.MAX_QUERY_TERMS}")
    bad = next((i for i, t in enumerate(value) if not isinstance(t, str)), None)
    if bad is not None:
        raise ParamError(f"{name}[{bad}]", f"must be a string, got {type(value[bad]).__name__}")
    return value


def _numbers_or_null(
    params: Mapping[str, Any], name: str, n: int, valid: Callable[[float], bool], what: str
) -> np.ndarray | None:
    """The request's list `name` as float64, NaN where it gives null (padded with nulls); None
    when the request has none. A value that is not a number `valid` accepts is a ParamError
    naming its index and saying `what` it must be."""
    given = _optional_list(params, name, n)
    if given is None:
        return None
    out = np.full(n, np.nan)
    for i, v in enumerate(given.tolist() if isinstance(given, np.ndarray) else given):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            continue
        if isinstance(v, bool) or not isinstance(v, int | float) or not valid(v):
            raise ParamError(f"{name}[{i}]", f"must be {what} or null, got {v!r:.40}")
        out[i] = float(v)
    return out


def _track_record(params: Mapping[str, Any], n: int) -> np.ndarray | None:
    """The request's `candidate_track_record` (`signet_scorer.track_record`): a number in [0, 1]
    or null per candidate, padded with nulls; a null takes the mean of the given values (0.5 when
    none is), so a candidate the caller could not judge is neither favoured nor punished. None
    when the request has none."""
    out = _numbers_or_null(
        params, "candidate_track_record", n, lambda v: 0.0 <= v <= 1.0, "a number in [0, 1]"
    )
    if out is None:
        return None
    known = np.isfinite(out)
    out[~known] = float(out[known].mean()) if known.any() else 0.5
    return out.astype(np.float32)


def _created_at(params: Mapping[str, Any], n: int) -> np.ndarray | None:
    """The request's `candidate_created_at`: each candidate's creation time in epoch seconds, or
    null (unknown: no neighbour in the store's order), padded with nulls. None when the request
    has none (a request from before it: the adjacency signals are 0)."""
    return _numbers_or_null(params, "candidate_created_at", n, math.isfinite, "epoch seconds")


def _signals(
    params: Mapping[str, Any],
    texts: list[str | None],
    ctx: np.ndarray,
    emb: np.ndarray,
    has: np.ndarray,
) -> np.ndarray:
    """The candidates' signals (`signet_scorer.signals`) from the request's query terms, entities
    and candidate sources (each may be absent: its signals are then 0), texts and embeddings."""
    terms = _query_list(params, "query_terms")
    entities = _query_list(params, "query_entities")
    sources = None
    if params.get("candidate_sources") is not None:
        sources = _strings_or_null(params, "candidate_sources", len(texts))
    track = _track_record(params, len(texts))
    created = _created_at(params, len(texts))
    return candidate_signals(
        query_terms=terms,
        query_entities=entities,
        candidate_texts=texts,
        context=ctx,
        embeddings=emb,
        has_embedding=has,
        origins=Origins(sources, created),
        track_record=track,
    )


def _tokens(
    texts: list[str | None], ids: list[str], has: np.ndarray, buckets: int
) -> list[np.ndarray | None]:
    """Hash buckets of each text-path candidate's text (None for embedded candidates)."""
    n = len(ids)
    out: list[np.ndarray | None] = [None] * n
    longest = 0
    for i in np.flatnonzero(~has).tolist():
        text = texts[i]
        if text is None:
            raise Refused(f"candidate {ids[i]} must provide either native embedding or text")
        out[i] = tokens = token_buckets(text, buckets)
        longest = max(longest, tokens.size)
    if longest * n > c.MAX_TOKEN_CELLS:
        raise ParamError(
            "candidate_texts",
            f"{n} candidates x {longest} tokens exceeds {c.MAX_TOKEN_CELLS} token cells",
        )
    return out


def parse_score_params(params: object, info: ModelInfo) -> ScoreRequest:
    """Validate Signet's `score` parameters against the model; extra keys are ignored.
    Raises ParamError naming the first bad field (Signet: -32602), or Refused for what Signet's
    handler refuses (-32000), with its message."""
    if not isinstance(params, Mapping):
        raise ParamError("params", "must be an object")
    fields = cast("Mapping[str, Any]", params)  # a JSON object: text keys
    ids = _ids(fields)
    n = len(ids)
    context = fields.get("context_embedding")
    if context is None:
        raise ParamError("context_embedding", "is required")
    ctx = _finite_f32("context_embedding", context)
    if ctx.ndim != 1:
        raise ParamError("context_embedding", f"has shape {list(ctx.shape)}, expected a vector")
    _per_candidate(fields, n, info.n_features)
    if ctx.size != info.native_dim:
        raise Refused(f"query embedding dim mismatch: expected {info.native_dim}, got {ctx.size}")
    if n == 0:  # Signet refuses an empty set; an empty ranking here (docs/user-guide.md §5)
        return ScoreRequest([], {})
    emb, has = _embeddings(fields, n, info.native_dim)
    feats = _features(fields, n, info.n_features)
    slot = _slot(fields, info.project_slots)
    texts = _strings_or_null(fields, "candidate_texts", n)
    toks = _tokens(texts, ids, has, info.hash_buckets)
    signals = _signals(fields, texts, ctx, emb, has) if info.n_signals else None
    return ScoreRequest(ids, graph_inputs(ctx, emb, has, toks, feats, slot, signals))


def ranked(ids: Sequence[str], scores: np.ndarray) -> list[tuple[str, float]]:
    """(id, score) by score descending, then id ascending."""
    values = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-values, kind="stable")
    top = values[order]
    idx: list[int] = order.tolist()
    if top.size > 1 and (top[1:] == top[:-1]).any():  # ties: order them by id
        idx.sort(key=lambda i: (-values[i], ids[i]))
        top = values[idx]
    return list(zip([ids[i] for i in idx], top.tolist(), strict=True))


# --- the model ----------------------------------------------------------------------------------


def model_kind(path: str | Path) -> str:
    """The file's kind by its first bytes: "sgpt", "signet-bench" or (else) "onnx"."""
    with Path(path).open("rb") as f:
        head = f.read(4)
    if head == SGPT_MAGIC:
        return "sgpt"
    if head == ZIP_MAGIC:
        return "signet-bench"
    return "onnx"


def _onnx_bytes(path: Path) -> tuple[bytes, str]:
    """The file's ONNX model; a checkpoint is converted by the library's `export` in a child
    process."""
    kind = model_kind(path)
    if kind == "onnx":
        return path.read_bytes(), kind
    import tempfile  # here: the session-start hook serves ONNX and never loads it

    with tempfile.TemporaryDirectory(prefix="signet-serving-load-") as tmp:
        try:
            out = convert(path, Path(tmp) / SERVED_MODEL_FILE, "onnx", TrainerOptions())
        except (TrainerError, OSError) as exc:
            raise ModelLoadError(f"{path}: cannot convert the {kind} checkpoint ({exc})") from None
        return out.read_bytes(), kind


class OnnxModel:
    """One loaded model: an onnxruntime session and what its metadata says; raises on failure."""

    def __init__(self, session: InferenceSession, info: ModelInfo) -> None:
        self.session = session
        self.info = info
        self._names = frozenset(i.name for i in session.get_inputs())

    @classmethod
    def load(
        cls,
        path: str | Path,
        *,
        threads: int = 1,
        native_dim: int | None = None,
        data: bytes | None = None,
    ) -> OnnxModel:
        """Load (and warm up) the model at `path`; `data` gives the bytes already converted.
        Raises ModelLoadError naming the file and the fault."""
        p = Path(path)
        try:
            kind = "memory" if data is not None else model_kind(p)
            if data is None:
                data, kind = _onnx_bytes(p)
            session = inference_session(data, threads)
        except ModelLoadError:
            raise
        except Exception as exc:  # noqa: BLE001 - any loader fault makes the file unusable
            raise ModelLoadError(f"{p}: cannot load the model ({_short(exc)})") from None
        info = _info(session, str(p), kind)
        if native_dim is not None and info.native_dim != native_dim:
            raise ModelLoadError(
                f"{p}: the model's native_dim is {info.native_dim}, the server's {native_dim}"
            )
        model = cls(session, info)
        model._warm_up()
        return model

    def run(self, inputs: Mapping[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(logits, scores) of one session; inputs the graph does not have (an optional one of
        a graph exported before it) are left out, and a graph exported with fewer signals is
        fed their first columns (signals are only ever appended)."""
        feed = {k: v for k, v in inputs.items() if k in self._names}
        signals = feed.get(c.INPUT_SIGNALS)
        if signals is not None and signals.shape[-1] > self.info.n_signals:
            # a graph of fewer signals takes the first ones (`contract.SIGNAL_NAMES` appends)
            feed[c.INPUT_SIGNALS] = np.ascontiguousarray(signals[..., : self.info.n_signals])
        logits, scores = self.session.run(list(c.GRAPH_OUTPUTS), feed)
        return np.asarray(logits), np.asarray(scores)  # dense outputs (the graph's own)

    def _warm_up(self) -> None:
        info = self.info
        rng = np.random.default_rng(0)
        emb = rng.normal(size=(2, info.native_dim)).astype(np.float32)
        feats = np.zeros((2, info.n_features), dtype=np.float32)
        ctx = emb[0] + emb[1]
        tokens = [None, np.array([1, 2], dtype=np.int64)]
        has = np.array([True, False])
        _, scores = self.run(graph_inputs(ctx, emb, has, tokens, feats, 0))
        if not np.isfinite(scores).all():
            raise ModelLoadError(f"{info.path}: the model gives non-finite scores")


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:300]


def _info(session: InferenceSession, path: str, kind: str) -> ModelInfo:
    meta = dict(session.get_modelmeta().custom_metadata_map)
    names = {i.name: i for i in session.get_inputs()}
    missing = [n for n in c.GRAPH_INPUTS if n not in names]
    if missing:
        raise ModelLoadError(f"{path}: not a scorer graph (inputs {missing} missing)")
    try:
        dims = {k: int(meta[k]) for k in ("native_dim", "hash_buckets", "project_slots")}
        n_features = int(meta.get("extra_features", c.N_FEATURES))
    except (KeyError, ValueError):
        raise ModelLoadError(f"{path}: the model's metadata lacks its dims") from None
    n_signals = 0
    if c.INPUT_SIGNALS in names:
        n_signals = names[c.INPUT_SIGNALS].shape[-1]
        if not isinstance(n_signals, int) or not 0 < n_signals <= c.N_SIGNALS:
            raise ModelLoadError(
                f"{path}: the graph takes {n_signals} candidate signals, this server computes "
                f"{c.N_SIGNALS} ({', '.join(c.SIGNAL_NAMES)}) and feeds a graph the first of them"
            )
    return ModelInfo(
        path=path, kind=kind, n_features=n_features, metadata=meta, n_signals=n_signals, **dims
    )


# --- the fail-open facade -----------------------------------------------------------------------


class Scorer:
    """Scores candidates with a loaded model, or says why it cannot; never raises."""

    def __init__(self, model: OnnxModel | None = None, reason: str | None = None) -> None:
        self.model = model
        self.reason = reason if model is None else None

    @classmethod
    def open(cls, path: str | Path, *, native_dim: int | None = None, threads: int = 1) -> Scorer:
        """Load the model at `path` (ONNX, own checkpoint or SGPT); a missing or broken file
        gives an unready scorer that says why."""
        p = Path(path)
        if not p.exists():
            return cls(None, f"no model at {p} yet")
        try:
            return cls(OnnxModel.load(p, threads=threads, native_dim=native_dim))
        except Exception as exc:  # noqa: BLE001 - fail open: the reason is reported instead
            return cls(None, _short(exc))

    @property
    def ready(self) -> bool:
        return self.model is not None

    @property
    def info(self) -> ModelInfo | None:
        return None if self.model is None else self.model.info

    def score_request(self, params: Mapping[str, Any]) -> list[tuple[str, float]]:
        """Ranked scores of Signet-style `params`. Raises ParamError for bad input, Refused
        for what Signet's sidecar refuses, and RuntimeError when there is no model (the
        sidecar maps them to error codes)."""
        model = self.model
        if model is None:
            raise RuntimeError(f"no model loaded: {self.reason}")
        req = parse_score_params(params, model.info)
        if not req.ids:
            return []
        _, scores = model.run(req.inputs)
        if not np.isfinite(scores).all():
            raise RuntimeError("the model gave non-finite scores")
        return ranked(req.ids, scores)

    def score(self, query: ScoreQuery) -> ScoreResult:
        """Softmax scores of the query's candidates, sorted descending, or no scores and the
        reason. Its `query_terms`, `query_entities`, `candidate_sources` and
        `candidate_created_at` feed the signals
        (module docstring); a session start's terms come from
        `signet_scorer.signals.store_start_terms`."""
        try:
            return ScoreResult(self.score_request(query.rpc_params()))
        except Exception as exc:  # noqa: BLE001 - fail open: never raise into a hook
            return ScoreResult(None, _short(exc))
