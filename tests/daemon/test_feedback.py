"""Agent relevance feedback parsing (docs/specification.md §5.2): fail-open, clamped, injected ids
only."""

from __future__ import annotations

import json
import logging
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from signet_bench.daemon.feedback import (
    PAYLOAD_KEY,
    FeedbackResult,
    accumulate,
    parse_feedback,
    running_mean,
)

INJECTED = {
    "3f2a9c1e-0000-4000-8000-000000000001",
    "7b6d5e4f-0000-4000-8000-000000000002",
    "7b6d5e4f-1111-4000-8000-000000000003",
}
A = "3f2a9c1e-0000-4000-8000-000000000001"


def test_seed_example_wrapped_object():
    """Check the addendum's response shape {"memory_feedback": {...}} as a JSON string."""
    raw = json.dumps({"memory_feedback": {A: 0.9}})
    assert parse_feedback(raw, INJECTED) == FeedbackResult({A: 0.9}, [])


def test_bare_map_and_dict_input():
    """Check the map itself, as a string or an already decoded dict."""
    assert parse_feedback(f'{{"{A}": -0.2}}', INJECTED).scores == {A: -0.2}
    assert parse_feedback({A: 0}, INJECTED).scores == {A: 0.0}


def test_absent_feedback_is_silent():
    """Check None (older harness) gives an empty result without rejections or logs."""
    assert parse_feedback(None, INJECTED) == FeedbackResult()
    assert parse_feedback({"memory_feedback": None}, INJECTED) == FeedbackResult()


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("{not json", "malformed JSON"),
        ("", "malformed JSON"),
        ("[1, 2]", "expected a JSON object, got list"),
        ('"text"', "expected a JSON object, got str"),
        (42, "expected a JSON object, got int"),
        ('{"memory_feedback": [0.5]}', "memory_feedback: expected a JSON object, got list"),
    ],
)
def test_malformed_payload_ignored_with_reason(raw, reason, caplog):
    """Check malformed payloads never raise, yield no scores, and log why."""
    with caplog.at_level(logging.WARNING, logger="signet_bench.daemon.feedback"):
        result = parse_feedback(raw, INJECTED)
    assert result.scores == {}
    assert result.rejected[0][0] == PAYLOAD_KEY
    assert reason in result.rejected[0][1]
    assert reason in caplog.text


@pytest.mark.parametrize(
    ("value", "expected"),
    [(1.7, 1.0), (-3, -1.0), (0.25, 0.25), (1, 1.0)],
)
def test_scores_clamped(value, expected):
    """Check scores outside [-1, 1] are clamped."""
    assert parse_feedback({A: value}, INJECTED).scores == {A: expected}


@pytest.mark.parametrize("value", ["0.8", None, True, [0.5], {"s": 1}])
def test_non_numeric_values_rejected(value):
    """Check strings, null, booleans and containers are rejected per entry."""
    result = parse_feedback({A: value}, INJECTED)
    assert result.scores == {}
    assert result.rejected == [(A, f"non-numeric score {value!r}")]


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_inf_rejected(token):
    """Check JSON NaN/Infinity tokens are rejected, other entries kept."""
    b = "7b6d5e4f-0000-4000-8000-000000000002"
    result = parse_feedback(f'{{"{A}": {token}, "{b}": 0.5}}', INJECTED)
    assert result.scores == {b: 0.5}
    assert result.rejected[0][0] == A and "non-finite" in result.rejected[0][1]


def test_non_injected_ids_rejected():
    """Check an agent cannot rate memories it was not shown."""
    result = parse_feedback({A: 0.5, "mem_other": 0.9}, INJECTED)
    assert result.scores == {A: 0.5}
    assert result.rejected == [("mem_other", "not injected in this session")]


def test_unambiguous_prefix_mapped_back():
    """Check an 8-char prefix of exactly one injected id maps to that id."""
    assert parse_feedback({"3f2a9c1e": 0.4}, INJECTED).scores == {A: 0.4}


def test_ambiguous_prefix_rejected():
    """Check an 8-char prefix shared by two injected ids is rejected."""
    result = parse_feedback({"7b6d5e4f": 0.4}, INJECTED)
    assert result.scores == {}
    assert result.rejected == [("7b6d5e4f", "ambiguous id prefix (2 injected memories match)")]


def test_other_prefix_lengths_not_mapped():
    """Check only 8-char prefixes are mapped (Signet's judge format)."""
    assert parse_feedback({"3f2a9c1": 0.4, "3f2a9c1e-0": 0.4}, INJECTED).scores == {}


def test_duplicate_rating_keeps_first():
    """Check a full id and its prefix in one payload rate once."""
    result = parse_feedback({A: 0.2, "3f2a9c1e": 0.9}, INJECTED)
    assert result.scores == {A: 0.2}
    assert result.rejected == [("3f2a9c1e", f"duplicate rating of {A}")]


@given(st.one_of(st.text(), st.binary(), st.none(), st.integers(), st.floats()))
def test_never_raises(raw):
    """Check parse_feedback is fail-open for any input."""
    result = parse_feedback(raw, INJECTED)
    assert all(-1.0 <= v <= 1.0 for v in result.scores.values())


@given(st.dictionaries(st.sampled_from(sorted(INJECTED) + ["x", "3f2a9c1e"]), st.floats()))
def test_accepted_scores_finite_and_bounded(payload):
    """Check any accepted score is finite, in [-1, 1], for an injected id."""
    result = parse_feedback(payload, INJECTED)
    for k, v in result.scores.items():
        assert k in INJECTED and math.isfinite(v) and -1.0 <= v <= 1.0


# --- running mean --------------------------------------------------------------------------------


def test_running_mean_first_score():
    """Check the first score becomes the mean (old NULL or NaN)."""
    assert running_mean(None, 0, 0.8) == (0.8, 1)
    assert running_mean(math.nan, 0, -0.4) == (-0.4, 1)


def test_running_mean_update():
    """Check (old*count + s)/(count+1): 0.8 over 1, then 0.2 -> 0.5 over 2, then 0.5 -> 0.5."""
    mean, count = running_mean(0.8, 1, 0.2)
    assert (mean, count) == (pytest.approx(0.5), 2)
    assert running_mean(mean, count, 0.5) == (pytest.approx(0.5), 3)


def test_running_mean_clamps_and_rejects():
    """Check new scores are clamped; non-finite scores and negative counts raise."""
    assert running_mean(None, 0, 2.0) == (1.0, 1)
    with pytest.raises(ValueError, match="finite"):
        running_mean(0.1, 1, math.nan)
    with pytest.raises(ValueError, match="count"):
        running_mean(0.1, -1, 0.5)


def test_accumulate_over_prompts():
    """Check per-prompt feedback accumulates into per-memory (mean, count)."""
    b = "7b6d5e4f-0000-4000-8000-000000000002"
    state: dict = {}
    for payload in ({A: 1.0}, {A: 0.0, b: -0.5}, {A: 0.5}):
        state = accumulate(state, parse_feedback(payload, INJECTED))
    assert state[A] == (pytest.approx(0.5), 3)
    assert state[b] == (-0.5, 1)
