"""Agent relevance feedback (docs/specification.md §5.2): parse one prompt's ``memory_feedback`` and
accumulate it.

Fail-open: whatever the agent sends, parsing never raises; everything it cannot use is listed
in ``FeedbackResult.rejected`` with a reason and logged through ``logging``. An absent payload
(older harness, feedback disabled) is not an error and is not logged.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ID_PREFIX_LEN",
    "PAYLOAD_KEY",
    "FeedbackResult",
    "accumulate",
    "parse_feedback",
    "running_mean",
]

logger = logging.getLogger(__name__)

ID_PREFIX_LEN = 8
"""Signet's continuity judge sees 8-character id prefixes and maps them back to full ids."""
PAYLOAD_KEY = "<payload>"
"""The ``key`` of a rejection that concerns the whole payload rather than one entry."""
_WRAPPER = "memory_feedback"


@dataclass(frozen=True, slots=True)
class FeedbackResult:
    """Accepted scores (full memory id -> score in [−1, 1]) and rejected (key, reason) pairs."""

    scores: dict[str, float] = field(default_factory=dict)
    rejected: list[tuple[str, str]] = field(default_factory=list)


def _reject(rejected: list[tuple[str, str]], key: str, reason: str) -> None:
    logger.warning("memory_feedback: ignored %s: %s", key, reason)
    rejected.append((key, reason))


def _resolve(key: str, injected: frozenset[str]) -> tuple[str | None, str]:
    """The injected id a key names (exact, or an unambiguous 8-char prefix), else a reason."""
    if key in injected:
        return key, ""
    if len(key) == ID_PREFIX_LEN:
        matches = sorted(m for m in injected if m.startswith(key))
        if len(matches) == 1:
            return matches[0], ""
        if len(matches) > 1:
            return None, f"ambiguous id prefix ({len(matches)} injected memories match)"
    return None, "not injected in this session"


def _score(value: Any) -> tuple[float | None, str]:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, f"non-numeric score {value!r}"
    s = float(value)
    if not math.isfinite(s):
        return None, f"non-finite score {value!r}"
    return min(1.0, max(-1.0, s)), ""


def parse_feedback(
    raw: str | Mapping[str, Any] | None, injected_ids: Iterable[str]
) -> FeedbackResult:
    """Parse a ``memory_feedback`` payload; keep only finite scores for injected memories.

    Accepts a JSON string or a decoded object, either the id -> score map itself or wrapped as
    ``{"memory_feedback": {...}}``. Scores are clamped to [−1, 1]; NaN/inf, booleans and
    non-numbers are rejected. Only memories injected into this session may be rated (the agent
    was shown nothing else); a key of exactly 8 characters that is the prefix of exactly one
    injected id is mapped to that id. A second rating of the same memory in one payload is
    rejected (the first one counts).
    """
    rejected: list[tuple[str, str]] = []
    if raw is None:
        return FeedbackResult()
    obj: Any = raw
    if isinstance(raw, (str, bytes, bytearray)):
        try:
            obj = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            _reject(rejected, PAYLOAD_KEY, f"malformed JSON ({exc})")
            return FeedbackResult(rejected=rejected)
    if not isinstance(obj, Mapping):
        _reject(rejected, PAYLOAD_KEY, f"expected a JSON object, got {type(obj).__name__}")
        return FeedbackResult(rejected=rejected)
    if _WRAPPER in obj:
        obj = obj[_WRAPPER]
        if obj is None:
            return FeedbackResult()
        if not isinstance(obj, Mapping):
            reason = f"{_WRAPPER}: expected a JSON object, got {type(obj).__name__}"
            _reject(rejected, PAYLOAD_KEY, reason)
            return FeedbackResult(rejected=rejected)
    injected = frozenset(injected_ids)
    scores: dict[str, float] = {}
    for key, value in obj.items():
        if not isinstance(key, str):
            _reject(rejected, repr(key), "memory id is not a string")
            continue
        memory_id, why = _resolve(key, injected)
        if memory_id is None:
            _reject(rejected, key, why)
            continue
        score, why = _score(value)
        if score is None:
            _reject(rejected, key, why)
            continue
        if memory_id in scores:
            _reject(rejected, key, f"duplicate rating of {memory_id}")
            continue
        scores[memory_id] = score
    return FeedbackResult(scores=scores, rejected=rejected)


def running_mean(old: float | None, count: int, new: float) -> tuple[float, int]:
    """Signet's per-session running mean of agent scores: ((old·count + s)/(count+1), count+1).

    When there is no previous mean (``old`` None or NaN) the result is ``(s, 1)``: the mean of
    one score. (Signet writes ``s`` and ``count + 1``; the two agree for the usual count of 0.)
    ``new`` is clamped to [−1, 1]; a non-finite ``new`` or a negative ``count`` is a ValueError.
    """
    s = float(new)
    if not math.isfinite(s):
        raise ValueError(f"feedback score must be finite, got {new!r}")
    if count < 0:
        raise ValueError(f"feedback count must be >= 0, got {count}")
    s = min(1.0, max(-1.0, s))
    if old is None or math.isnan(old):
        return s, 1
    return (float(old) * count + s) / (count + 1), count + 1


def accumulate(
    prior: Mapping[str, tuple[float | None, int]], result: FeedbackResult
) -> dict[str, tuple[float, int]]:
    """New per-memory (mean, count) after one prompt's feedback; untouched memories carry over."""
    out: dict[str, tuple[float, int]] = {
        k: (v[0], v[1]) for k, v in prior.items() if v[0] is not None
    }
    for memory_id, score in result.scores.items():
        old, count = prior.get(memory_id, (None, 0))
        out[memory_id] = running_mean(old, count, score)
    return out
