"""Model checkpoints: the workbench's own format and Signet's `SGPT` v1 (docs/specification.md
§4.6).

Own format (version 2): one zip file holding `meta.json` (format, version, model dims, feature-spec
hash, training range, metrics, flags, parameter shapes) and one `<name>.npy` per parameter
(float64, written and read without pickle). Version 2 added the cosine weight (and later the
signal weights); a parameter of ours that a file lacks (an older file) is read at its neutral
value, the forward pass that file was trained with. SGPT v1, little-endian: magic `SGPT`, u32
version = 1, u32 flags (bit 0 pretrained base, bit 1 fine-tuned), u32 config length + config
JSON, u32 parameter count = 7, then per parameter u32 length + length f64, row-major, in
Signet's order.

Writes go to a temporary file in the target directory and are renamed over the target, so a crash
never leaves half a file. Every read problem raises `CheckpointError` naming the file and the fault.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import struct
import threading
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, ConfigError, PredictorConfig
from signet_bench.errors import UserError
from signet_bench.learn.model.params import (
    SIGNET_PARAMS,
    extensions_are_neutral,
    layer_norm_is_identity,
    neutral_extensions,
    param_shapes,
    shape_problems,
)
from signet_scorer.atomic import atomic_write
from signet_scorer.contract import DIM_KEYS, N_SIGNALS

__all__ = [
    "FLAG_FINETUNED",
    "FLAG_PRETRAINED_BASE",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "SGPT_MAGIC",
    "SGPT_VERSION",
    "CheckpointError",
    "CheckpointMeta",
    "ModelSlot",
    "load_any",
    "load_checkpoint",
    "read_sgpt",
    "save_checkpoint",
    "write_sgpt",
]

FORMAT_NAME = "signet-bench-checkpoint"
FORMAT_VERSION = 2
SGPT_MAGIC = b"SGPT"
SGPT_VERSION = 1
FLAG_PRETRAINED_BASE = 1
FLAG_FINETUNED = 2
ZIP_MAGIC = b"PK\x03\x04"
_META_MEMBER = "meta.json"

Params = dict[str, np.ndarray]


class CheckpointError(UserError):
    """A checkpoint file that cannot be read or written; the message names the file and why."""


@dataclass(frozen=True, slots=True)
class CheckpointMeta:
    """Everything stored beside the weights: dims, feature spec, training range, metrics, flags.

    `source_format` / `format_version` say what the model was read from ("signet-bench" or "sgpt").
    """

    native_dim: int = DEFAULT_CONFIG.native_dim
    internal_dim: int = DEFAULT_CONFIG.internal_dim
    value_dim: int = DEFAULT_CONFIG.value_dim
    extra_features: int = DEFAULT_CONFIG.extra_features
    hash_buckets: int = DEFAULT_CONFIG.hash_buckets
    project_slots: int = DEFAULT_CONFIG.project_slots
    feature_spec_hash: str | None = None
    first_session_at: str | None = None
    last_session_at: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    is_pretrained_base: bool = False
    is_finetuned: bool = False
    source_format: str = "signet-bench"
    format_version: int = FORMAT_VERSION

    @classmethod
    def from_config(
        cls, cfg: PredictorConfig = DEFAULT_CONFIG, native_dim: int | None = None, **fields: Any
    ) -> CheckpointMeta:
        """Meta with the model dims of `cfg` (native_dim overrides cfg.native_dim)."""
        dims = {k: getattr(cfg, k) for k in DIM_KEYS}
        if native_dim is not None:
            dims["native_dim"] = int(native_dim)
        return cls(**dims, **fields)

    @property
    def dims(self) -> dict[str, int]:
        """The model dims under Signet's ScorerConfig names."""
        return {k: getattr(self, k) for k in DIM_KEYS}

    @property
    def flags(self) -> int:
        """SGPT flag bits: 1 pretrained base, 2 fine-tuned."""
        return FLAG_PRETRAINED_BASE * self.is_pretrained_base + FLAG_FINETUNED * self.is_finetuned

    def config(self, base: PredictorConfig = DEFAULT_CONFIG) -> PredictorConfig:
        """`base` with this model's dims."""
        return base.replace(**self.dims)

    def replace(self, **changes: Any) -> CheckpointMeta:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)


# --- shared helpers -----------------------------------------------------------------------------


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such file") from None
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _atomic_write(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Write through `write` into a temp file beside `path`, fsync it, then rename it over
    `path` (`signet_scorer.atomic`): a crash never leaves half a file."""
    if not path.parent.is_dir():
        raise CheckpointError(f"{path}: directory {path.parent} does not exist")
    atomic_write(path, write)


def _check_dims(where: str, dims: Mapping[str, Any]) -> PredictorConfig:
    missing = [k for k in DIM_KEYS if k not in dims]
    if missing:
        raise CheckpointError(f"{where}: config lacks {', '.join(missing)}")
    bad = [
        k
        for k in DIM_KEYS
        if isinstance(dims[k], bool) or not isinstance(dims[k], int) or dims[k] <= 0
    ]
    if bad:
        shown = ", ".join(f"{k}={dims[k]!r}" for k in bad)
        raise CheckpointError(f"{where}: config needs positive whole numbers, got {shown}")
    try:
        return DEFAULT_CONFIG.replace(**{k: dims[k] for k in DIM_KEYS})
    except ConfigError as exc:
        raise CheckpointError(f"{where}: bad config ({exc})") from None


def _non_finite(params: Mapping[str, np.ndarray]) -> list[str]:
    return [n for n, a in params.items() if not np.all(np.isfinite(a))]


def _check_params(where: str, params: Mapping[str, np.ndarray], cfg: PredictorConfig) -> None:
    problems = shape_problems(dict(params), cfg)
    if problems:
        raise CheckpointError(f"{where}: " + "; ".join(problems))
    bad = _non_finite(params)
    if bad:
        names = ", ".join(f"'{n}'" for n in bad)
        raise CheckpointError(f"{where}: non-finite values (NaN or inf) in parameter {names}")


def _appended_signals(weights: np.ndarray) -> np.ndarray:
    """The signal weights of a file written before the last signals were appended
    (`signet_scorer.contract.SIGNAL_NAMES` only appends): its own, then 0 for the new ones."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or w.size >= N_SIGNALS:
        return w
    return np.concatenate([w, np.zeros(N_SIGNALS - w.size)])


def _neutral(cfg: PredictorConfig) -> Params:
    return neutral_extensions(cfg)


# --- the workbench's own format -----------------------------------------------------------------


def _meta_json(meta: CheckpointMeta, params: Params) -> bytes:
    doc = {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "config": meta.dims,
        "feature_spec_hash": meta.feature_spec_hash,
        "training_range": {
            "first_session": meta.first_session_at,
            "last_session": meta.last_session_at,
        },
        "metrics": dict(meta.metrics),
        "is_pretrained_base": bool(meta.is_pretrained_base),
        "is_finetuned": bool(meta.is_finetuned),
        "params": {n: list(np.shape(a)) for n, a in params.items()},
    }
    return json.dumps(doc, indent=2, sort_keys=False).encode("utf-8")


def save_checkpoint(
    path: str | Path, params: Mapping[str, np.ndarray], meta: CheckpointMeta
) -> None:
    """Write weights + meta as one versioned zip file, atomically (absent terms of ours:
    neutral)."""
    p = Path(path)
    cfg = _check_dims(f"{p}: cannot save", meta.dims)
    arrays = {n: np.ascontiguousarray(params[n], dtype=np.float64) for n in params}
    for name, value in _neutral(cfg).items():
        arrays.setdefault(name, value)  # Signet's seven alone mean Signet's forward pass
    _check_params(f"{p}: cannot save", arrays, cfg)
    order = [n for n in param_shapes(cfg) if n in arrays]
    meta_bytes = _meta_json(meta, {n: arrays[n] for n in order})

    def write(f: BinaryIO) -> None:
        with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as zf:
            zf.writestr(_META_MEMBER, meta_bytes)
            for name in order:
                with zf.open(f"{name}.npy", "w") as member:
                    np.lib.format.write_array(member, arrays[name], allow_pickle=False)

    _atomic_write(p, write)


def _opt_str(where: str, doc: Mapping[str, Any], key: str) -> str | None:
    v = doc.get(key)
    if v is not None and not isinstance(v, str):
        raise CheckpointError(f"{where}: meta.json field {key!r} must be text or null, got {v!r}")
    return v


def _meta_from_json(where: str, raw: bytes) -> tuple[CheckpointMeta, dict[str, Any]]:
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"{where}: meta.json is not valid JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT_NAME:
        raise CheckpointError(
            f"{where}: not a signet-bench checkpoint (meta.json lacks the format tag)"
        )
    version = doc.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise CheckpointError(f"{where}: meta.json has no format_version")
    if version > FORMAT_VERSION:
        raise CheckpointError(
            f"{where}: written by a newer signet-bench (format version {version}; "
            f"this one reads up to {FORMAT_VERSION})"
        )
    config = doc.get("config")
    if not isinstance(config, dict):
        raise CheckpointError(f"{where}: meta.json has no config")
    _check_dims(where, config)
    rng = doc.get("training_range") or {}
    metrics = doc.get("metrics") or {}
    if not isinstance(rng, dict) or not isinstance(metrics, dict):
        raise CheckpointError(f"{where}: meta.json training_range and metrics must be objects")
    meta = CheckpointMeta(
        **{k: config[k] for k in DIM_KEYS},
        feature_spec_hash=_opt_str(where, doc, "feature_spec_hash"),
        first_session_at=_opt_str(where, rng, "first_session"),
        last_session_at=_opt_str(where, rng, "last_session"),
        metrics=metrics,
        is_pretrained_base=bool(doc.get("is_pretrained_base", False)),
        is_finetuned=bool(doc.get("is_finetuned", False)),
        source_format="signet-bench",
        format_version=version,
    )
    return meta, doc


def load_checkpoint(path: str | Path) -> tuple[Params, CheckpointMeta]:
    """Read a file written by `save_checkpoint`; any fault raises CheckpointError."""
    p = Path(path)
    data = _read_bytes(p)
    if not data.startswith(ZIP_MAGIC):
        raise CheckpointError(f"{p}: not a signet-bench checkpoint (starts with {data[:4]!r})")
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = zf.namelist()
            if _META_MEMBER not in names:
                raise CheckpointError(f"{p}: no meta.json inside")
            meta, _ = _meta_from_json(str(p), zf.read(_META_MEMBER))
            cfg = meta.config()
            expected = param_shapes(cfg)
            params: Params = {}
            for member in names:
                if member == _META_MEMBER:
                    continue
                name = member.removesuffix(".npy")
                if not member.endswith(".npy") or name not in expected:
                    raise CheckpointError(f"{p}: unexpected member {member!r}")
                try:
                    arr = np.lib.format.read_array(io.BytesIO(zf.read(member)), allow_pickle=False)
                except (ValueError, EOFError, OSError) as exc:
                    raise CheckpointError(f"{p}: parameter '{name}' is corrupt ({exc})") from None
                if arr.dtype.kind != "f":
                    raise CheckpointError(
                        f"{p}: parameter '{name}' has dtype {arr.dtype}, not float"
                    )
                params[name] = arr.astype(np.float64, copy=False)
    except zipfile.BadZipFile as exc:
        raise CheckpointError(f"{p}: truncated or corrupt ({exc})") from None
    except (EOFError, OSError) as exc:
        raise CheckpointError(f"{p}: truncated or corrupt ({exc})") from None
    for name, value in _neutral(cfg).items():
        params.setdefault(name, value)  # older versions lack some of our terms
    params["signal_weights"] = _appended_signals(params["signal_weights"])
    _check_params(str(p), params, cfg)
    return {n: params[n] for n in expected}, meta


# --- Signet's SGPT v1 ---------------------------------------------------------------------------


def read_sgpt(path: str | Path) -> tuple[Params, CheckpointMeta]:
    """Read Signet's `model.bin`; our terms come back neutral (identity LN affines, zero query
    terms and cosine weight), so the model computes Signet's forward pass."""
    p = Path(path)
    data = _read_bytes(p)
    size = len(data)
    pos = 0

    def fail(msg: str) -> CheckpointError:
        return CheckpointError(f"{p}: {msg}")

    def u32(what: str) -> int:
        nonlocal pos
        if pos + 4 > size:
            raise fail(f"truncated in {what} (file ends after {size} bytes)")
        (value,) = struct.unpack_from("<I", data, pos)
        pos += 4
        return value

    if size == 0:
        raise fail("empty file")
    if data[:4] != SGPT_MAGIC:
        raise fail(f"not an SGPT checkpoint (starts with {data[:4]!r}, expected {SGPT_MAGIC!r})")
    pos = 4
    version = u32("the version field")
    if version != SGPT_VERSION:
        raise fail(f"unsupported SGPT version {version} (this reads version {SGPT_VERSION})")
    flags = u32("the flags field")
    n = u32("the config length")
    if pos + n > size:
        raise fail(
            f"truncated in the config JSON (expected {n} bytes, file ends after {size - pos})"
        )
    try:
        dims = json.loads(data[pos : pos + n].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise fail(f"config JSON is not valid ({exc})") from None
    pos += n
    if not isinstance(dims, dict):
        raise fail("config JSON is not an object")
    cfg = _check_dims(str(p), dims)
    count = u32("the parameter count")
    if count != len(SIGNET_PARAMS):
        raise fail(f"holds {count} parameters, expected {len(SIGNET_PARAMS)}")
    shapes = param_shapes(cfg)
    params: Params = {}
    for name in SIGNET_PARAMS:
        length = u32(f"the length of parameter '{name}'")
        shape = shapes[name]
        expected = math.prod(shape)
        if length != expected:
            raise fail(
                f"parameter '{name}' has {length} values, expected {expected} "
                f"({'x'.join(map(str, shape))} for the config)"
            )
        available = (size - pos) // 8
        if available < length:
            raise fail(
                f"truncated in parameter '{name}' (expected {length} values, "
                f"file ends after {available})"
            )
        arr = np.frombuffer(data, dtype="<f8", count=length, offset=pos)
        params[name] = arr.reshape(shape).astype(np.float64)  # copy: writable, native order
        pos += 8 * length
    if pos != size:
        raise fail(f"{size - pos} unexpected bytes after the last parameter")
    params.update(_neutral(cfg))
    _check_params(str(p), params, cfg)
    meta = CheckpointMeta(
        **{k: dims[k] for k in DIM_KEYS},
        is_pretrained_base=bool(flags & FLAG_PRETRAINED_BASE),
        is_finetuned=bool(flags & FLAG_FINETUNED),
        source_format="sgpt",
        format_version=version,
    )
    return params, meta


def _dims_of(where: str, params: Mapping[str, np.ndarray]) -> dict[str, int]:
    missing = [n for n in SIGNET_PARAMS if n not in params]
    if missing:
        raise CheckpointError(f"{where}: missing parameter {', '.join(repr(m) for m in missing)}")
    bad = [n for n in SIGNET_PARAMS if np.ndim(params[n]) != 2]
    if bad:
        raise CheckpointError(f"{where}: parameters must be matrices: {', '.join(bad)}")
    d, native = np.shape(params["down_proj"])
    value_dim = np.shape(params["v_proj"])[0]
    return {
        "native_dim": int(native),
        "internal_dim": int(d),
        "value_dim": int(value_dim),
        "extra_features": int(np.shape(params["gate_proj"])[1] - value_dim - d - 1),
        "hash_buckets": int(np.shape(params["hash_embeddings"])[0]),
        "project_slots": int(np.shape(params["project_embeddings"])[0]),
    }


def write_sgpt(path: str | Path, params: Mapping[str, np.ndarray], flags: int = 0) -> None:
    """Write Signet's SGPT v1 `model.bin` atomically; refuses non-identity LN affines."""
    p = Path(path)
    where = f"{p}: cannot write SGPT"
    if not 0 <= flags < 2**32:
        raise CheckpointError(f"{where}: flags {flags} do not fit in a u32")
    dims = _dims_of(where, params)
    cfg = _check_dims(where, dims)
    if not layer_norm_is_identity(dict(params)):
        raise CheckpointError(
            f"{where}: the layer-norm affine parameters are not the identity, and SGPT has no "
            "place for them; save in the signet-bench format instead"
        )
    if not extensions_are_neutral(dict(params)):
        raise CheckpointError(
            f"{where}: the query-side project/time parameters, the cosine weight or the "
            "signal weights are not zero (a fresh model ranks by cosine and the lexical signal "
            "from the start), and SGPT has no place for them; save in the signet-bench format "
            "or as ONNX instead"
        )
    full = {n: np.asarray(params[n], dtype=np.float64) for n in SIGNET_PARAMS}
    full.update(_neutral(cfg))
    _check_params(where, full, cfg)
    config = json.dumps(dims, separators=(",", ":")).encode("utf-8")

    def write(f: BinaryIO) -> None:
        f.write(SGPT_MAGIC)
        f.write(struct.pack("<III", SGPT_VERSION, flags, len(config)))
        f.write(config)
        f.write(struct.pack("<I", len(SIGNET_PARAMS)))
        for name in SIGNET_PARAMS:
            arr = np.ascontiguousarray(full[name], dtype="<f8")
            f.write(struct.pack("<I", arr.size))
            f.write(arr.tobytes(order="C"))

    _atomic_write(p, write)


def load_any(path: str | Path) -> tuple[Params, CheckpointMeta]:
    """Load either format, told apart by the first bytes of the file."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            head = f.read(4)
    except FileNotFoundError:
        raise CheckpointError(f"{p}: no such file") from None
    except OSError as exc:
        raise CheckpointError(f"{p}: cannot read ({exc.strerror or exc})") from None
    if head == SGPT_MAGIC:
        return read_sgpt(p)
    if head == ZIP_MAGIC:
        return load_checkpoint(p)
    if not head:
        raise CheckpointError(f"{p}: empty file")
    raise CheckpointError(
        f"{p}: not a model checkpoint (starts with {head!r}; expected b'SGPT' or a signet-bench zip)"
    )


# --- the model in use ---------------------------------------------------------------------------


class ModelSlot:
    """The model in use, as one (params, meta) pair replaced whole: a failed load keeps the old one."""

    def __init__(
        self,
        params: Mapping[str, np.ndarray] | None = None,
        meta: CheckpointMeta | None = None,
        *,
        native_dim: int | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._native_dim = native_dim
        self._current: tuple[Params, CheckpointMeta] | None = None
        self._generation = 0
        if params is not None:
            self.set(params, meta if meta is not None else CheckpointMeta())

    @property
    def current(self) -> tuple[Params, CheckpointMeta] | None:
        """The (params, meta) in use, or None before the first model."""
        return self._current

    @property
    def generation(self) -> int:
        """How many times a model was put in the slot."""
        return self._generation

    def set(self, params: Mapping[str, np.ndarray], meta: CheckpointMeta) -> None:
        """Put a model in use (after checking its shapes and native dim)."""
        where = "cannot use model"
        cfg = _check_dims(where, meta.dims)
        arrays = dict(params)
        _check_params(where, arrays, cfg)
        if self._native_dim is not None and meta.native_dim != self._native_dim:
            raise CheckpointError(
                f"{where}: native_dim {meta.native_dim} does not match the serving dim "
                f"{self._native_dim}"
            )
        with self._lock:
            self._current = (arrays, meta)
            self._generation += 1

    def load(self, path: str | Path) -> CheckpointMeta:
        """Load a checkpoint of either format into the slot; on any error the old model stays."""
        params, meta = load_any(path)
        if self._native_dim is not None and meta.native_dim != self._native_dim:
            raise CheckpointError(
                f"{path}: native_dim {meta.native_dim} does not match the serving dim "
                f"{self._native_dim}"
            )
        self.set(params, meta)
        return meta
