"""Signet's session-start hook with the scorer's order: `signet-bench-hook session-start ...`
(`python -m signet_scorer.hook`) wraps `signet hook session-start ...` and fails open to exactly
what Signet prints (`signet_scorer.hook.cli`); its resident scorer (`signet_scorer.hook.resident`)
keeps the model loaded between session starts. Importing this package loads neither numpy nor
onnxruntime (nor `typing` or `dataclasses`): they are imported when a model is ranked here."""

from __future__ import annotations

__all__ = []
