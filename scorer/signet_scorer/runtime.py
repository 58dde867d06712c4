"""onnxruntime, loaded so that it writes nothing and says nothing: the one place this package
imports it (the scorer, the resident hook scorer and the sidecar all load models through
`signet_scorer.scorer`).

The pinned onnxruntime (1.31) starts a telemetry uploader when it is imported: it writes a device id
and an event store under `~/.cache/Microsoft/DeveloperTools/.onnxruntime/` (or
`$XDG_CACHE_HOME`), and under a read-only home prints "Failed to persist telemetry device ID"
on stderr, which in the session-start hook would land in the harness's stderr. Its switch,
`ORT_DISABLE_TELEMETRY=1`, is read once, at that import, so it is set here first, whatever the
environment said; `disable_telemetry_events()` after the import is too late. Warnings of its
default logger are silenced as well (sessions set their own severity, `scorer._session`).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import numpy as np

TELEMETRY_SWITCH = "ORT_DISABLE_TELEMETRY"
LOG_SEVERITY = 3  # errors and fatal only

os.environ[TELEMETRY_SWITCH] = "1"

# after its switch, which it reads at import; onnxruntime ships no stubs for its module
import onnxruntime as ort  # pyright: ignore[reportMissingTypeStubs]

ort.set_default_logger_severity(LOG_SEVERITY)  # pyright: ignore[reportUnknownMemberType]

__all__ = ["LOG_SEVERITY", "TELEMETRY_SWITCH", "InferenceSession", "inference_session", "ort"]


# The shapes of what the package reads of a session (onnxruntime ships no stubs).
class NodeArg(Protocol):
    """A graph input: its name and shape (a dimension is a number, a name or None)."""

    @property
    def name(self) -> str: ...

    @property
    def shape(self) -> list[int | str | None]: ...


class ModelMetadata(Protocol):
    """The graph's metadata: the exporter's key-value map."""

    @property
    def custom_metadata_map(self) -> dict[str, str]: ...


class InferenceSession(Protocol):
    """An onnxruntime session as the scorer uses it."""

    def get_inputs(self) -> Sequence[NodeArg]: ...

    def get_modelmeta(self) -> ModelMetadata: ...

    def run(
        self, output_names: Sequence[str], input_feed: Mapping[str, np.ndarray]
    ) -> Sequence[object]: ...


def inference_session(data: bytes, threads: int) -> InferenceSession:
    """A CPU session of the ONNX graph `data`: `threads` threads inside an operator, one
    across operators (run in sequence), quiet below errors."""
    so = ort.SessionOptions()  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    so.intra_op_num_threads = threads  # pyright: ignore[reportUnknownMemberType]
    so.inter_op_num_threads = 1  # pyright: ignore[reportUnknownMemberType]
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL  # pyright: ignore[reportUnknownMemberType]
    so.log_severity_level = LOG_SEVERITY  # pyright: ignore[reportUnknownMemberType]
    return ort.InferenceSession(
        data,
        so,  # pyright: ignore[reportUnknownArgumentType] (its options, built above)
        providers=["CPUExecutionProvider"],
    )
