"""Serving Signet's predictive memory scorer: the exported ONNX model behind an in-process API
(`signet_scorer.Scorer`, scoring a `signet_scorer.ScoreQuery`) and a drop-in JSON-RPC sidecar
(`python -m signet_scorer`).

Imports only onnxruntime and numpy (and orjson when installed). Importing the package itself
loads neither (nor `typing`): `signet_scorer.tokenize` and `signet_scorer.contract` stay cheap
for the trainer, which imports them, the session-start hook's front end (`signet_scorer.hook`)
starts fast, and `Scorer` and `ScoreQuery` are loaded on first use.
"""

from __future__ import annotations

__all__ = ["ScoreQuery", "ScoreResult", "Scorer"]

TYPE_CHECKING = False  # `typing` stays unloaded
if TYPE_CHECKING:  # the names `__getattr__` gives, for type checkers
    from signet_scorer.query import ScoreQuery
    from signet_scorer.scorer import Scorer, ScoreResult

# Where each name lives: the query is plain data (numpy only); the scorer loads onnxruntime.
_HOMES = {"ScoreQuery": "query", "ScoreResult": "scorer", "Scorer": "scorer"}


def __getattr__(name: str) -> object:  # `typing` stays unloaded: the hook imports this package
    if name in _HOMES:
        # here: a name's module loads when the name is first used (start-up time)
        import importlib

        return getattr(importlib.import_module(f"signet_scorer.{_HOMES[name]}"), name)
    raise AttributeError(f"module 'signet_scorer' has no attribute {name!r}")
