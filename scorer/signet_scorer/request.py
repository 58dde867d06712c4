"""One training request: everything a training run is asked to do, as plain, checked data.

`signet-bench train`, the session loop and the sidecar's `train_from_db` build one;
`signet_bench.learn.publish.train_store` runs it. It lives here, in the standard library alone,
so the sidecar can build it, check it and hand the whole of it to the trainer's child process
as one JSON file (`signet-bench train --request FILE`) without importing the library.

Defaults are the specification's training constants; `signet_bench.config.PredictorConfig` holds the
same values under its own names (a test keeps them equal), and `learn.publish.scheduled_request`
builds a request from a config that changes them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

__all__ = [
    "FORMATS",
    "FULL_EPOCHS",
    "INCREMENTAL_EPOCHS",
    "INCREMENTAL_LR_SCALE",
    "LOSS_TEMPERATURE",
    "MIN_CONFIDENCE",
    "MODES",
    "NUMBER_RANGES",
    "SESSION_LIMIT",
    "SIDECAR_OWNED",
    "TIME_CAP_S",
    "RequestError",
    "TrainingRequest",
    "check_number",
    "format_for_suffix",
]

# The specification's training constants (PredictorConfig: full_training_epochs, incremental_epochs,
# incremental_lr_scale, loss_temperature, min_scorer_confidence, max_training_seconds).
FULL_EPOCHS = 50
INCREMENTAL_EPOCHS = 5
INCREMENTAL_LR_SCALE = 0.1
LOSS_TEMPERATURE = 0.5
MIN_CONFIDENCE = 0.6
TIME_CAP_S = 30.0
SESSION_LIMIT = 5000  # Signet's train_from_db default: the newest 5,000 scored sessions

Mode = Literal["finetune", "incremental", "fresh"]
# finetune: the base (if any) trained on every session; incremental: the base trained on the
# sessions newer than it, judged on the whole history's canary; fresh: fresh weights trained on
# every session, the base only what the gates compare with.
MODES: tuple[str, ...] = ("finetune", "incremental", "fresh")
FORMATS: tuple[str, ...] = ("onnx", "sgpt", "signet-bench")

_PATHS = ("db_path", "out_dir", "base_weights", "checkpoint_path")
# Fields the sidecar fills itself when it runs a `train_from_db` request: its own work folder,
# and the model it serves as the base (Signet's method always trains the served model).
SIDECAR_OWNED = ("out_dir", "base_weights")


class RequestError(ValueError):
    """A request field the trainer cannot take; `field` names it."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(f"{field_name}: {message}")
        self.field = field_name
        self.message = message


def format_for_suffix(path: str | Path) -> str:
    """The model format a file name asks for: `.onnx` the graph, `.bin` Signet's SGPT, any
    other name the workbench's own checkpoint."""
    suffix = Path(path).suffix
    return {".onnx": "onnx", ".bin": "sgpt"}.get(suffix, "signet-bench")


@dataclass(frozen=True, slots=True)
class TrainingRequest:
    """One training run's inputs and policy (see the module doc); invalid values raise
    RequestError naming the field."""

    db_path: Path  # the store (only read)
    out_dir: Path | None = None  # model.sbm and workbench.duckdb; the sidecar picks its own
    mode: Mode = "finetune"
    base_weights: Path | None = None  # a model file of any format; None: fresh weights
    protect: bool | None = None  # stability gates protect the base (None: when there is one)
    epochs: int = FULL_EPOCHS
    lr_scale: float = 1.0  # times the config's learning rate
    temperature: float = LOSS_TEMPERATURE  # the listwise loss's (low-spread sessions: 0.3)
    min_confidence: float = MIN_CONFIDENCE  # sessions whose judge was less sure are skipped
    limit: int = SESSION_LIMIT  # the newest N trainable sessions
    seed: int = 0  # shuffling and replay draws
    sample_seed: int | None = None  # the labels' sampled negatives (None: `seed`)
    time_cap_s: float = TIME_CAP_S  # training stops after the step that passes it
    tz: str | None = None  # the user's IANA zone (None: the machine's)
    checkpoint_path: Path | None = None  # an accepted model is also written here
    checkpoint_format: str | None = None  # one of FORMATS (None: from the path's suffix)

    def __post_init__(self) -> None:
        for name in _PATHS:
            _check_path(name, getattr(self, name), optional=name != "db_path")
        if self.mode not in MODES:
            raise RequestError("mode", f"{self.mode!r:.40} is not one of {', '.join(MODES)}")
        # a request read from JSON may hold anything here, whatever the field's type says
        if self.protect is not None and not isinstance(self.protect, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise RequestError("protect", f"must be true, false or null, got {self.protect!r:.40}")
        _check_int("epochs", self.epochs, 1, 10_000)
        _check_int("limit", self.limit, 1, 1_000_000)
        _check_int("seed", self.seed, 0, 2**31 - 1)
        if self.sample_seed is not None:
            _check_int("sample_seed", self.sample_seed, 0, 2**31 - 1)
        for name in NUMBER_RANGES:
            object.__setattr__(self, name, check_number(name, getattr(self, name)))
        _check_zone(self.tz)
        if self.checkpoint_format is not None:
            if self.checkpoint_format not in FORMATS:
                raise RequestError(
                    "checkpoint_format",
                    f"{self.checkpoint_format!r:.40} is not one of {', '.join(FORMATS)}",
                )
            if self.checkpoint_path is None:
                raise RequestError("checkpoint_format", "needs a checkpoint_path")

    @property
    def negatives_seed(self) -> int:
        """The seed of the labels' sampled negatives."""
        return self.seed if self.sample_seed is None else self.sample_seed

    @property
    def checkpoint_kind(self) -> str | None:
        """The format the checkpoint is written in (None without a checkpoint path)."""
        if self.checkpoint_path is None:
            return None
        return self.checkpoint_format or format_for_suffix(self.checkpoint_path)

    def replace(self, **changes: Any) -> TrainingRequest:
        """A copy with some fields changed (checked like the original)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON-ready values (paths as text)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {k: str(v) if isinstance(v, Path) else v for k, v in out.items()}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def rpc_params(self) -> dict[str, Any]:
        """The request as `train_from_db` parameters: every field the sidecar does not fill
        itself, nulls left out."""
        doc = self.to_dict()
        return {k: v for k, v in doc.items() if k not in SIDECAR_OWNED and v is not None}

    @classmethod
    def from_dict(cls, given: object) -> TrainingRequest:
        """A request from JSON-style values (paths as text); an unknown or missing field
        raises RequestError naming it."""
        if not isinstance(given, Mapping):
            raise RequestError("request", f"must be an object, got {type(given).__name__}")
        doc = cast("Mapping[str, Any]", given)  # a JSON object: text keys
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(doc) - known)
        if unknown:
            raise RequestError(unknown[0], "is not a training request field")
        if doc.get("db_path") is None:
            raise RequestError("db_path", "is required")
        values = dict(doc)
        for name in _PATHS:
            value = values.get(name)
            if isinstance(value, str):
                values[name] = Path(value).expanduser() if value else value
        return cls(**values)

    @classmethod
    def from_json(cls, text: str | bytes) -> TrainingRequest:
        try:
            doc = json.loads(text)
        except (ValueError, RecursionError) as exc:
            raise RequestError("request", f"not valid JSON ({exc})") from None
        return cls.from_dict(doc)


# The fractional fields' accepted ranges (the loss temperature's is Signet's `train` method's too).
NUMBER_RANGES = {
    "lr_scale": (1e-9, 1e6),
    "temperature": (1e-6, 1e6),
    "min_confidence": (0.0, 1.0),
    "time_cap_s": (1e-9, 1e7),
}


def _check_path(name: str, value: Any, *, optional: bool) -> None:
    if value is None and optional:
        return
    if not isinstance(value, Path) or not str(value) or "\x00" in str(value):
        raise RequestError(name, f"must be a file path, got {value!r:.60}")


def _check_int(name: str, value: Any, lo: int, hi: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise RequestError(name, f"must be a whole number in [{lo}, {hi}], got {value!r:.40}")


def check_number(name: str, value: Any) -> float:
    """`value` as a float when it is a finite number in the range of field `name`
    (NUMBER_RANGES), else RequestError."""
    lo, hi = NUMBER_RANGES[name]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RequestError(name, f"must be a finite number, got {value!r:.40}")
    if not lo <= value <= hi:
        raise RequestError(name, f"{value} is outside [{lo:g}, {hi:g}]")
    return float(value)


def _check_zone(tz: Any) -> None:
    if tz is None:
        return
    if not isinstance(tz, str) or not tz:
        raise RequestError("tz", f"must be an IANA time zone name, got {tz!r:.40}")
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise RequestError("tz", f"{tz!r:.40} is not a known time zone") from None
