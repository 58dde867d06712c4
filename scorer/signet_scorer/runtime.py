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

TELEMETRY_SWITCH = "ORT_DISABLE_TELEMETRY"
LOG_SEVERITY = 3  # errors and fatal only

os.environ[TELEMETRY_SWITCH] = "1"

# after its switch, which it reads at import; onnxruntime ships no stubs for its module
import onnxruntime as ort  # pyright: ignore[reportMissingTypeStubs]

ort.set_default_logger_severity(LOG_SEVERITY)  # pyright: ignore[reportUnknownMemberType]

__all__ = ["LOG_SEVERITY", "TELEMETRY_SWITCH", "ort"]
