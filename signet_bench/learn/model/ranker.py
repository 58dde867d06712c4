"""The numpy cross-attention scorer as a `Ranker`: the workbench's "learned" ranker."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.ranking.ranker import per_distinct_candidate
from signet_bench.learn.model.scorer import SessionArrays, score_session

__all__ = ["ModelRanker"]


@dataclass(frozen=True, eq=False)
class ModelRanker:
    """Softmax scores of the cross-attention scorer (`model/scorer.py`,
    docs/specification.md §4.3) over a session's candidates: the session context is the query, each
    candidate enters by its embedding (or its hash tokens on the text path), its 17 features,
    its signals (lexical, entity match, source neighbourhood) and the session's project slot;
    the scores are positive and sum to 1. Identical candidates are scored once and share the
    score (`per_distinct_candidate`), renormalised: the softmax over all candidates is the
    distinct candidates' softmax weighted by their multiplicities.

    Without a session context Signet skips the predictor; this ranker then returns uniform
    scores 1/n (the softmax of equal logits: no opinion), so `ranking_order` falls back to
    memory id order."""

    params: dict[str, np.ndarray]
    cfg: PredictorConfig = DEFAULT_CONFIG
    name: str = "learned"

    def score(self, inputs: SessionInputs) -> np.ndarray:
        n = len(inputs)
        if inputs.context is None or n == 0:
            return np.full(n, 1.0 / max(n, 1), dtype=np.float64)
        try:
            weights = per_distinct_candidate(inputs, self._softmax)
        except ValueError as err:
            raise ValueError(f"session {inputs.session_key}: {err}") from err
        return weights / weights.sum()

    def _softmax(self, inputs: SessionInputs) -> np.ndarray:
        """The scorer's softmax over these candidates (all distinct, with a context)."""
        session = SessionArrays(*inputs.scorer_columns(), inputs.signals)
        scores = score_session(self.params, session, self.cfg)
        return np.asarray(scores, dtype=np.float64)
