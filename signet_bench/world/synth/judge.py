"""The simulated continuity judge and agent: what they see of a session, and how they err.

Both read what a real one could: the session's transcript. It shows the memories injected at
the session start and the memories its prompts recalled (FTS hits, recorded in
`session_memories.fts_hit_count`), and nothing else of the store.

- **Per-memory relevance** (`judge_ratings`): the judge rates the injected and the recalled
  memories, `clip(truth + N(0, sd), 0, 1)`, sd = the world's `judge_noise` (0.1) for a memory
  the prompts recalled (the transcript shows it in use) and `SILENT_NOISE_FACTOR` times that
  for one they did not (an injected memory no prompt touched: the transcript shows it was
  there, not whether it helped). The specification's second, lightweight pass rates the rest of the
  comparison's evaluation pool (top 10 of each ranking) the same way as the latter: from the
  memory's text against the transcript. Every other memory stays unrated (NULL), the judge's
  blind spot: a relevant memory no ranking put in its top 10 and no prompt recalled.
- **Missing context** (`novel_context_count`): the user re-explains what a memory should have
  covered when the session needed it (truth >= `NEEDED_RELEVANCE`), its prompts went there (they
  recalled it) and the session start did not inject it. The judge notices each such
  re-explanation with probability `NOTICE_PROBABILITY` and reports at most `MAX_NOVEL_CONTEXT`.
- **Agent feedback** (`agent_ratings`): on some sessions the agent rates, after each prompt,
  up to `AGENT_RATINGS_PER_PROMPT` of the memories injected at the start (the only ones its
  feedback block lists), `clip(truth + N(0, AGENT_NOISE), -1, 1)`: noisier than the judge, as
  it sees one prompt, not the whole session.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "AGENT_NOISE",
    "AGENT_RATINGS_PER_PROMPT",
    "MAX_NOVEL_CONTEXT",
    "NEEDED_RELEVANCE",
    "NOTICE_PROBABILITY",
    "SILENT_NOISE_FACTOR",
    "agent_ratings",
    "judge_ratings",
    "novel_context_count",
]

SILENT_NOISE_FACTOR = 2.0
NEEDED_RELEVANCE = 0.7
NOTICE_PROBABILITY = 0.1
MAX_NOVEL_CONTEXT = 5
AGENT_NOISE = 0.2
AGENT_RATINGS_PER_PROMPT = 5


def _aligned(truth: np.ndarray, **masks: np.ndarray) -> list[np.ndarray]:
    n = len(truth)
    out = []
    for name, m in masks.items():
        a = np.asarray(m, dtype=bool)
        if a.shape != (n,):
            raise ValueError(f"{name}: expected shape ({n},) like truth, got {a.shape}")
        out.append(a)
    return out


def judge_ratings(
    truth: np.ndarray,
    injected: np.ndarray,
    recalled: np.ndarray,
    rng: np.random.Generator,
    *,
    noise: float,
    pool: np.ndarray | None = None,
    recency_bias: float = 0.0,
    young: np.ndarray | None = None,
) -> np.ndarray:
    """The judge's relevance of each of a session's memories (parallel arrays): a rating in
    [0, 1] for the injected, the recalled and the `pool` ones (the evaluation pool's second
    pass), NaN for the rest; `recency_bias` is added to the `young` ones (a judge that favours
    what is new)."""
    extra = np.zeros(len(truth), dtype=bool) if pool is None else pool
    inj, rec, second = _aligned(truth, injected=injected, recalled=recalled, pool=extra)
    shown = np.flatnonzero(inj | rec | second)
    sd = np.where(rec[shown], noise, noise * SILENT_NOISE_FACTOR)
    rated = np.asarray(truth, dtype=np.float64)[shown] + rng.normal(0.0, 1.0, len(shown)) * sd
    if young is not None:
        rated = rated + recency_bias * np.asarray(young, dtype=bool)[shown]
    out = np.full(len(truth), np.nan)
    out[shown] = np.clip(rated, 0.0, 1.0)
    return out


def novel_context_count(
    truth: np.ndarray, injected: np.ndarray, recalled: np.ndarray, rng: np.random.Generator
) -> int:
    """How many re-explanations the judge reports: needed, recalled, not injected memories,
    each noticed with `NOTICE_PROBABILITY`, at most `MAX_NOVEL_CONTEXT`."""
    inj, rec = _aligned(truth, injected=injected, recalled=recalled)
    missing = int(np.count_nonzero(rec & ~inj & (np.asarray(truth) >= NEEDED_RELEVANCE)))
    return min(MAX_NOVEL_CONTEXT, int(rng.binomial(missing, NOTICE_PROBABILITY)))


def agent_ratings(truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The agent's ratings in [-1, 1] of memories whose truth is `truth`."""
    t = np.asarray(truth, dtype=np.float64)
    return np.clip(t + rng.normal(0.0, AGENT_NOISE, len(t)), -1.0, 1.0)
