"""Serving Signet's predictive memory scorer: the exported ONNX model behind an in-process API
(`serving.Scorer`) and a drop-in JSON-RPC sidecar (`python -m serving`).

Imports only onnxruntime and numpy (and orjson when installed). Importing the package itself
loads neither: `serving.tokenize` and `serving.contract` stay cheap for the trainer, which
imports them, and `Scorer` is loaded on first use.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ScoreResult", "Scorer"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from serving import scorer

        return getattr(scorer, name)
    raise AttributeError(f"module 'serving' has no attribute {name!r}")
