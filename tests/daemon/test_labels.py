"""The label function: one test per rule of docs/specification.md §5, with the sources' own
numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.labels import (
    BASE_REASONS,
    LABEL_RULESETS,
    MODIFIER_REASONS,
    SessionLabelInput,
    compute_labels,
    edited_recently,
    fts_adjustment,
    label_spread,
    ratings,
    seed_labels,
    session_skip_reason,
    session_trainable,
    signet058_labels,
)

NAN = math.nan


def one(injected: bool, continuity: float = 0.85, **kw) -> tuple[float, str]:
    """Label and reason of a single candidate under the seed rules."""
    session = {k: kw.pop(k) for k in ("novel_context_count", "confidence") if k in kw}
    inp = SessionLabelInput.build(
        ["m1"],
        [injected],
        continuity_score=continuity,
        **session,
        **{k: [v] for k, v in kw.items()},
    )
    r = seed_labels(inp)
    return float(r.labels[0]), str(r.reason[0])


# --- injected: continuity path ------------------------------------------------------------------


def test_injected_high_session_label_is_continuity():
    """Check §5.1: injected in a high-scoring session (0.85) -> 0.85."""
    assert one(True, 0.85) == (pytest.approx(0.85), "injected_high_session")


def test_injected_at_threshold_counts_as_high():
    """Check score >= 0.5 is a high session."""
    assert one(True, 0.5)[0] == pytest.approx(0.5)


def test_injected_low_session_label_is_half_continuity():
    """Check §5.1: injected in a low-scoring session (0.4) -> 0.4 * 0.5 = 0.2."""
    assert one(True, 0.4) == (pytest.approx(0.2), "injected_low_session")


@pytest.mark.parametrize("continuity", [0.85, 0.4])
def test_injected_per_memory_relevance_wins_in_high_and_low_sessions(continuity):
    """Check the judge's per-memory relevance is the base in any session."""
    assert one(True, continuity, relevance_score=0.7) == (pytest.approx(0.7), "injected_relevance")


def test_injected_fts_confirmed_boost_capped_at_one():
    """Check +0.1 for injected memories matched by FTS, capped at 1.0 (0.95 -> 1.0)."""
    assert one(True, 0.95, fts_hit_count=1) == (1.0, "injected_high_session+fts_confirmed")
    assert one(True, 0.85, fts_hit_count=1)[0] == pytest.approx(0.95)


def test_injected_unmatched_in_bad_session_reduced_by_point_one():
    """Check injected, never FTS-matched, continuity < 0.3 -> label - 0.1 (0.25*0.5 - 0.1)."""
    label, reason = one(True, 0.25)
    assert label == pytest.approx(0.025)
    assert reason == "injected_low_session+fts_unmatched"


def test_injected_unmatched_penalty_floors_at_zero():
    """Check the -0.1 never makes a negative label (0.1*0.5 - 0.1 -> 0.0)."""
    assert one(True, 0.1)[0] == 0.0
    assert one(True, 0.1, relevance_score=0.05)[0] == 0.0


def test_injected_unmatched_at_point_three_not_penalised():
    """Check the penalty needs continuity strictly below 0.3."""
    assert one(True, 0.3)[0] == pytest.approx(0.15)


# --- not injected -------------------------------------------------------------------------------


def test_not_injected_fts_two_hits_is_fts_missed():
    """Check not injected, FTS >= 2 -> max(0.6, similarity label) = 0.6."""
    assert one(False, fts_hit_count=2, cosine_to_context=0.1) == (pytest.approx(0.6), "fts_missed")


def test_not_injected_fts_missed_keeps_higher_similarity_label():
    """Check max(0.6, similarity_label) with a soft negative (0.25) still 0.6."""
    assert one(False, fts_hit_count=3, cosine_to_context=0.9)[0] == pytest.approx(0.6)


def test_soft_negative_above_similarity_threshold():
    """Check cosine 0.7 > 0.6 -> 0.25 (possible baseline miss)."""
    assert one(False, cosine_to_context=0.7) == (0.25, "soft_negative")


@pytest.mark.parametrize("cos", [0.5, 0.6, NAN])
def test_true_negative_at_or_below_threshold(cos):
    """Check cosine 0.5 (and exactly 0.6, and no embedding) -> 0.0."""
    assert one(False, cosine_to_context=cos) == (0.0, "true_negative")


def test_single_fts_hit_without_novel_context_is_similarity_label():
    """Check §5.1 gives no label of its own to one FTS hit (Signet's 0.3 is not used)."""
    assert one(False, fts_hit_count=1, cosine_to_context=0.2)[0] == 0.0


def test_missing_context_default_label():
    """Check novel_context_count > 0 and an FTS hit -> missing context 0.7."""
    label, reason = one(False, fts_hit_count=1, novel_context_count=2)
    assert (label, reason) == (pytest.approx(0.7), "missing_context")


def test_missing_context_with_fts_missed_is_still_point_seven():
    """Check 0.6 (FTS >= 2) + 0.1 novel boost = 0.7: the boost and the default coincide."""
    assert one(False, fts_hit_count=2, novel_context_count=1)[0] == pytest.approx(0.7)


def test_missing_context_higher_when_judge_marks_it_clearly_missing():
    """Check 'or higher when continuity scorer marks them as clearly missing': 0.9 + 0.1 = 1.0."""
    assert one(False, relevance_score=0.9, novel_context_count=1) == (1.0, "missing_context")
    assert one(False, relevance_score=0.75, novel_context_count=1)[0] == pytest.approx(0.85)


def test_missing_context_needs_evidence_for_the_memory():
    """Check novel context alone does not make every non-injected memory 'missing'."""
    assert one(False, novel_context_count=3)[0] == 0.0
    assert one(False, relevance_score=0.2, novel_context_count=3)[0] == 0.0


def test_no_missing_context_without_novel_context():
    """Check an FTS hit without re-explaining is not missing context."""
    assert one(False, fts_hit_count=1, novel_context_count=0)[1] == "true_negative"


def test_access_count_boost_for_not_injected_only():
    """Check access_count > 10 and not injected -> +0.05; at 10, or injected, nothing."""
    assert one(False, access_count=11) == (pytest.approx(0.05), "true_negative+access_boost")
    assert one(False, access_count=11, cosine_to_context=0.7)[0] == pytest.approx(0.3)
    assert one(False, access_count=10)[0] == 0.0
    assert one(True, 0.85, access_count=50)[0] == pytest.approx(0.85)


def test_access_boost_capped_at_one():
    """Check +0.05 cannot pass 1.0."""
    label = one(False, relevance_score=1.0, novel_context_count=1, access_count=99)[0]
    assert label == 1.0


# --- negative memory signals --------------------------------------------------------------------


@pytest.mark.parametrize("injected", [True, False])
def test_superseded_overrides(injected):
    """Check superseded -> -0.3 even with FTS hits and a high judge score."""
    label, reason = one(injected, 0.9, superseded=True, fts_hit_count=5, relevance_score=0.9)
    assert (label, reason) == (-0.3, "superseded")


def test_deleted_within_24h_of_injection():
    """Check deleted within 24 h of being injected -> -0.5, overriding everything."""
    label, reason = one(True, 0.9, deleted_at_hours_after_injection=3.0, fts_hit_count=2)
    assert (label, reason) == (-0.5, "deleted_after_injection")
    assert one(True, 0.9, deleted_at_hours_after_injection=24.0)[0] == -0.5


def test_deleted_beats_superseded():
    """Check the strongest negative signal wins."""
    assert one(True, superseded=True, deleted_at_hours_after_injection=1.0)[0] == -0.5


def test_deleted_after_30h_is_not_minus_point_five():
    """Check deletion 30 h after injection is no 'don't show me this' signal."""
    assert one(True, 0.85, deleted_at_hours_after_injection=30.0) == (
        pytest.approx(0.85),
        "injected_high_session",
    )


def test_deleted_rule_needs_an_injection():
    """Check a memory not injected this session is not labelled by its deletion time."""
    assert one(False, deleted_at_hours_after_injection=2.0)[0] == 0.0


# --- agent feedback (docs/specification.md §5.2) -------------------------------------------------


def test_agent_feedback_combined_label():
    """Check 0.7*0.9 + 0.2*0 + 0.1*0.8 for agent 0.9, no FTS hit, continuity 0.8."""
    label, reason = one(True, 0.8, agent_relevance_score=0.9)
    assert label == pytest.approx(0.7 * 0.9 + 0.2 * 0.0 + 0.1 * 0.8)
    assert reason == "agent_feedback"


def test_agent_feedback_fts_adjustment_is_signet_overlap():
    """Check fts_adjustment = min(1, 0.3*hits): 1 hit adds 0.2*0.3."""
    assert fts_adjustment(1) == pytest.approx(0.3)
    assert fts_adjustment(4) == 1.0
    label = one(True, 0.8, agent_relevance_score=0.9, fts_hit_count=1)[0]
    assert label == pytest.approx(0.63 + 0.06 + 0.08)


def test_agent_zero_with_two_fts_hits_bumped_to_point_three():
    """Check §5.2: 'scored 0 by agent but matched by FTS 2x: bump to 0.3'."""
    label, reason = one(True, 0.0, agent_relevance_score=0.0, fts_hit_count=2)
    assert (label, reason) == (0.3, "agent_feedback+agent_fts_bump")
    assert DEFAULT_CONFIG.agent_fts_bump_label == 0.3
    bumped = DEFAULT_CONFIG.replace(agent_fts_bump_label=0.4)
    inp = SessionLabelInput.build(
        ["m"], [True], continuity_score=0.0, agent_relevance_score=[0.0], fts_hit_count=[2]
    )
    assert seed_labels(inp, bumped).labels[0] == pytest.approx(0.4)


def test_agent_negative_not_bumped_by_fts():
    """Check a memory the agent rated harmful keeps its negative label."""
    label = one(True, 0.5, agent_relevance_score=-0.8, fts_hit_count=3)[0]
    assert label == pytest.approx(0.7 * -0.8 + 0.2 * 0.9 + 0.1 * 0.5)
    assert label < 0


def test_agent_high_score_not_penalised_without_fts():
    """Check 'scored 0.8 but never FTS-matched': no FTS penalty even in a bad session."""
    assert one(True, 0.1, agent_relevance_score=0.8)[0] == pytest.approx(0.56 + 0.01)


@pytest.mark.parametrize(("continuity", "expected"), [(0.0, 0.56), (0.5, 0.61), (1.0, 0.66)])
def test_agent_formula_decides_over_the_keep_example(continuity, expected):
    """Check §5.2's combined label for 'scored 0.8, never FTS-matched': 0.7·0.8 + 0.2·0 +
    0.1·continuity (0.56–0.66), not the example's 'keep 0.8'."""
    label, reason = one(True, continuity, agent_relevance_score=0.8)
    assert label == pytest.approx(expected) and label < 0.8 and reason == "agent_feedback"


def test_fts_overlap_per_hit_comes_from_the_config():
    """Check fts_adjustment uses the config's per-hit step (0.3; 4 hits saturate at 1)."""
    assert fts_adjustment(3) == pytest.approx(0.9)
    assert fts_adjustment(3, DEFAULT_CONFIG.replace(fts_overlap_per_hit=0.25)) == 0.75


def test_agent_label_clamped():
    """Check out-of-range agent input is clamped to [-1, 1] before weighting."""
    assert one(True, 1.0, agent_relevance_score=5.0, fts_hit_count=9)[0] == pytest.approx(1.0)
    assert one(True, 0.0, agent_relevance_score=-5.0)[0] == pytest.approx(-0.7)


def test_superseded_overrides_agent_feedback():
    """Check negative memory signals override agent feedback."""
    assert one(True, 0.9, agent_relevance_score=1.0, superseded=True)[0] == -0.3


# --- current Signet: recalls and path rewards ---------------------------------------------------


def test_recalls_count_as_session_evidence():
    """Check a recall is the evidence a prompt-time FTS hit is: two recalls of a memory that was
    not injected make it missed (0.6), one recall confirms an injected memory (+0.1)."""
    assert one(False, 0.7, recall_count=2) == (pytest.approx(0.6), "fts_missed+recalled")
    assert one(True, 0.7, recall_count=1) == (
        pytest.approx(0.8),
        "injected_high_session+fts_confirmed+recalled",
    )
    assert one(False, 0.7, recall_count=1, novel_context_count=1)[1] == ("missing_context+recalled")


def test_recalls_and_fts_hits_take_the_larger_count_not_the_sum():
    """Check one prompt-time search recorded as an FTS hit and as a recall is one piece of
    evidence: the label equals one hit's, with no `+recalled` (recalls added nothing)."""
    assert one(False, 0.7, fts_hit_count=1, recall_count=1) == one(False, 0.7, fts_hit_count=1)
    assert one(False, 0.7, fts_hit_count=1, recall_count=2)[0] == pytest.approx(0.6)


def test_a_recalled_memory_enters_training():
    """Check a recalled, not injected memory is a signal candidate (always included)."""
    inp = _session(20, recall_count=[0, 0, 1] + [0] * 19)
    assert seed_labels(inp).include[2]
    assert not seed_labels(_session(20)).include[2:].all()


@pytest.mark.parametrize(("reward", "usage"), [(1.0, 1.0), (0.5, 0.5), (-0.15, -0.15), (2.1, 1.0)])
def test_path_reward_joins_the_usage_term_of_the_agent_formula(reward, usage):
    """Check 0.7·agent + 0.2·clamp(fts_adjustment + reward, −1, 1) + 0.1·continuity: a forward
    citation (1.0) counts as full use, a dead end (−0.15) lowers the label."""
    label, reason = one(True, 0.8, agent_relevance_score=0.5, path_reward=reward)
    assert label == pytest.approx(0.7 * 0.5 + 0.2 * usage + 0.1 * 0.8)
    assert reason == "agent_feedback+path_reward"
    with_hit = one(True, 0.8, agent_relevance_score=0.5, fts_hit_count=1, path_reward=0.5)[0]
    assert with_hit == pytest.approx(0.35 + 0.2 * 0.8 + 0.08)


def test_path_reward_needs_the_agents_rating():
    """Check a path reward without an agent rating leaves the rules of §5.1 alone."""
    assert one(True, 0.8, path_reward=1.0) == one(True, 0.8)
    assert one(False, 0.8, path_reward=1.0) == one(False, 0.8)


def test_signet058_rules_know_no_recalls_or_path_rewards():
    """Check the 0.58 trainer's rule set ignores both current-Signet signals."""
    kw = {"continuity_score": 0.7, "agent_relevance_score": [0.9, NAN]}
    plain = SessionLabelInput.build(["a", "b"], [True, False], **kw)
    extra = SessionLabelInput.build(
        ["a", "b"], [True, False], recall_count=[3, 3], path_reward=[1.0, 1.0], **kw
    )
    assert signet058_labels(extra).labels.tolist() == signet058_labels(plain).labels.tolist()
    assert seed_labels(extra).labels.tolist() != seed_labels(plain).labels.tolist()


# --- poisoning guard ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("injected", "extra"),
    [
        (True, {}),
        (False, {}),
        (False, {"novel_context_count": 2}),
        (False, {"cosine_to_context": 0.9, "access_count": 20}),
    ],
)
def test_fts_stuffed_memory_gets_no_more_than_two_hits(injected, extra):
    """Check a memory with 50 FTS hits is labelled exactly like one with 2 (§5.3's poisoning
    guard)."""
    assert one(injected, 0.7, fts_hit_count=50, **extra) == one(
        injected, 0.7, fts_hit_count=2, **extra
    )


def test_fts_stuffing_cannot_pass_caps():
    """Check FTS alone keeps not-injected labels <= 0.6 and agent-path FTS gain <= 0.2."""
    assert one(False, 0.9, fts_hit_count=10_000)[0] == pytest.approx(0.6)
    stuffed = one(True, 0.5, agent_relevance_score=0.5, fts_hit_count=10_000)[0]
    clean = one(True, 0.5, agent_relevance_score=0.5, fts_hit_count=0)[0]
    assert stuffed - clean == pytest.approx(0.2)
    assert one(True, 0.5, agent_relevance_score=0.5, fts_hit_count=4)[0] == stuffed


@settings(max_examples=200, deadline=None)
@given(
    injected=st.booleans(),
    continuity=st.floats(0, 1),
    rel=st.one_of(st.just(NAN), st.floats(0, 1)),
    agent=st.one_of(st.just(NAN), st.floats(-1, 1)),
    hits=st.integers(0, 100),
    cos=st.one_of(st.just(NAN), st.floats(-1, 1)),
    novel=st.integers(0, 3),
    access=st.integers(0, 50),
)
def test_labels_bounded_and_fts_saturates(
    injected, continuity, rel, agent, hits, cos, novel, access
):
    """Check every seed label is in [-1, 1] and hits beyond 4 never change it."""
    kw = {
        "relevance_score": rel,
        "agent_relevance_score": agent,
        "cosine_to_context": cos,
        "novel_context_count": novel,
        "access_count": access,
    }
    label = one(injected, continuity, fts_hit_count=hits, **kw)[0]
    assert -1.0 <= label <= 1.0
    assert (
        one(injected, continuity, fts_hit_count=max(hits, 4), **kw)[0]
        == one(injected, continuity, fts_hit_count=max(hits, 4) + 46, **kw)[0]
    )
    if math.isnan(agent) and not injected and math.isnan(rel):
        # without a judge rating, FTS evidence tops out at missing context (+ access boost)
        assert label <= DEFAULT_CONFIG.missing_context_label + DEFAULT_CONFIG.access_count_boost


# --- inclusion and 3:1 negative sampling ---------------------------------------------------------


def _session(n_neg: int, n_injected: int = 2, **kw) -> SessionLabelInput:
    ids = [f"inj{i}" for i in range(n_injected)] + [f"neg{i:03d}" for i in range(n_neg)]
    injected = [True] * n_injected + [False] * n_neg
    return SessionLabelInput.build(ids, injected, continuity_score=0.8, confidence=0.9, **kw)


def test_negative_sampling_three_to_one():
    """Check 2 positives -> 6 sampled negatives out of 40, plus the positives."""
    r = seed_labels(_session(40), rng=np.random.default_rng(7))
    assert r.include[:2].all()
    assert int(r.include[2:].sum()) == 6
    assert int((r.include & (r.labels > 0)).sum()) == 2


def test_negative_sampling_takes_all_when_pool_small():
    """Check 2 positives and only 4 negatives -> all 4 included."""
    r = seed_labels(_session(4))
    assert r.include.all()


def test_negative_sampling_deterministic_and_order_independent():
    """Check the same generator seed picks the same memories whatever the input order."""
    inp = _session(30)
    a = seed_labels(inp, rng=np.random.default_rng(3))
    perm = np.random.default_rng(0).permutation(len(inp))
    shuffled = SessionLabelInput.build(
        inp.memory_ids[perm], inp.was_injected[perm], continuity_score=0.8
    )
    b = seed_labels(shuffled, rng=np.random.default_rng(3))
    assert set(inp.memory_ids[a.include]) == set(shuffled.memory_ids[b.include])
    c = seed_labels(inp, rng=np.random.default_rng(4))
    assert set(inp.memory_ids[a.include]) != set(inp.memory_ids[c.include])


def test_signal_candidates_always_included():
    """Check FTS-hit, missing-context and superseded candidates enter training unsampled."""
    inp = SessionLabelInput.build(
        ["i", "f", "s", *[f"n{k}" for k in range(20)]],
        [True, False, False, *[False] * 20],
        continuity_score=0.8,
        fts_hit_count=[0, 1, 0, *[0] * 20],
        superseded=[False, False, True, *[False] * 20],
    )
    r = seed_labels(inp)
    assert r.include[:3].all()
    # positives: "i" (0.8); "f" has one hit and no novel context -> 0.0, not a positive
    assert int(r.include[3:].sum()) == 3


def test_no_positives_no_sampled_negatives():
    """Check a session whose signal candidates are all <= 0 samples no negatives."""
    inp = SessionLabelInput.build(
        ["i", "a", "b"], [True, False, False], continuity_score=0.1, superseded=[True, False, False]
    )
    assert seed_labels(inp).include.tolist() == [True, False, False]


# --- session gating -----------------------------------------------------------------------------


def test_confidence_gate():
    """Check confidence >= 0.6 trains, below (or absent) does not."""
    labels = [0.9, 0.1, 0.0]
    assert session_trainable(0.6, labels)
    assert not session_trainable(0.59, labels)
    assert not session_trainable(NAN, labels)
    assert session_skip_reason(0.5, labels) == "confidence 0.5 < 0.6"


def test_low_variance_session_skipped():
    """Check labels all within 0.1 of each other (all ~0.5) -> skipped."""
    assert not session_trainable(0.9, [0.5, 0.52, 0.48])
    assert session_skip_reason(0.9, [0.5, 0.52, 0.48]).startswith("label spread 0.04")
    assert session_trainable(0.9, [0.5, 0.6])
    assert not session_trainable(0.9, [0.7])
    assert label_spread([0.2, NAN, 0.5]) == pytest.approx(0.3)


# --- the rule sets ------------------------------------------------------------------------------


def test_rulesets_registry():
    """Check both named rule sets and the dispatcher."""
    assert set(LABEL_RULESETS) == {"seed", "signet-0.58"}
    inp = _session(3)
    assert compute_labels(inp, ruleset="signet-0.58").ruleset == "signet-0.58"
    with pytest.raises(ValueError, match="unknown label rule set"):
        compute_labels(inp, ruleset="nope")


def test_signet058_rules():
    """Check Signet 0.58 compute_label: FTS 1 -> 0.3, novel +0.1, no soft negatives, -0.3."""
    inp = SessionLabelInput.build(
        ["inj", "f1", "f2", "nv", "cos", "acc", "del", "sup", "bad"],
        [True, False, False, False, False, False, False, False, True],
        continuity_score=0.25,
        novel_context_count=0,
        fts_hit_count=[1, 1, 2, 0, 0, 0, 0, 0, 0],
        cosine_to_context=[NAN, NAN, NAN, NAN, 0.9, NAN, NAN, NAN, NAN],
        access_count=[0, 0, 0, 0, 0, 11, 0, 0, 0],
        deleted_at_hours_after_injection=[NAN] * 6 + [200.0, NAN, NAN],
        superseded=[False] * 7 + [True, False],
    )
    r = signet058_labels(inp)
    expected = [0.125 + 0.1, 0.3, 0.6, 0.0, 0.0, 0.05, -0.3, -0.3, 0.025]
    np.testing.assert_allclose(r.labels, expected)
    assert r.include.all()
    novel = SessionLabelInput.build(
        ["a", "b"],
        [False, False],
        continuity_score=0.8,
        novel_context_count=1,
        fts_hit_count=[1, 2],
    )
    np.testing.assert_allclose(signet058_labels(novel).labels, [0.4, 0.7])


def test_reason_codes_come_from_the_vocabulary():
    """Check every emitted reason is a known base code plus known modifiers."""
    inp = SessionLabelInput.build(
        [f"m{i}" for i in range(8)],
        [True, True, False, False, False, False, True, False],
        continuity_score=0.2,
        novel_context_count=1,
        fts_hit_count=[1, 0, 2, 1, 0, 0, 0, 0],
        cosine_to_context=[NAN, NAN, NAN, NAN, 0.8, 0.1, NAN, NAN],
        access_count=[0, 0, 0, 0, 0, 30, 0, 0],
        agent_relevance_score=[NAN] * 6 + [0.0, NAN],
        superseded=[False] * 7 + [True],
        recall_count=[0, 2, 0, 3, 0, 1, 0, 0],
        path_reward=[NAN] * 6 + [0.6, NAN],
    )
    for fn in LABEL_RULESETS.values():
        for reason in fn(inp).reason:
            base, *mods = str(reason).split("+")
            assert base in BASE_REASONS
            assert set(mods) <= set(MODIFIER_REASONS)


def test_input_validation():
    """Check mismatched arrays, duplicate ids and a bad continuity score are rejected."""
    with pytest.raises(ValueError, match="fts_hit_count"):
        SessionLabelInput.build(["a", "b"], [True, False], continuity_score=0.5, fts_hit_count=[1])
    with pytest.raises(ValueError, match="duplicate"):
        SessionLabelInput.build(["a", "a"], [True, False], continuity_score=0.5)
    with pytest.raises(ValueError, match="continuity_score"):
        SessionLabelInput.build(["a"], [True], continuity_score=1.5)
    with pytest.raises(ValueError, match="fts_hit_count"):
        SessionLabelInput.build(["a"], [True], continuity_score=0.5, fts_hit_count=[-1])
    with pytest.raises(ValueError, match="recall_count"):
        SessionLabelInput.build(["a"], [True], continuity_score=0.5, recall_count=[1.5])
    with pytest.raises(ValueError, match="path_reward"):
        SessionLabelInput.build(["a"], [True], continuity_score=0.5, path_reward=[math.inf])


def test_constructor_defaults_and_build_agree():
    """Check the constructor fills absent per-memory values (NaN, 0, False) for every candidate,
    the same as `build`, and keeps the required session score keyword-only."""
    direct = SessionLabelInput(["a", "b"], [True, False], continuity_score=0.4, access_count=3)
    built = SessionLabelInput.build(["a", "b"], [True, False], continuity_score=0.4, access_count=3)
    for inp in (direct, built):
        assert np.isnan(inp.relevance_score).all() and np.isnan(inp.agent_relevance_score).all()
        assert np.isnan(inp.cosine_to_context).all()
        assert np.isnan(inp.deleted_at_hours_after_injection).all()
        assert inp.fts_hit_count.tolist() == [0, 0] and inp.access_count.tolist() == [3, 3]
        assert inp.recall_count.tolist() == [0, 0] and np.isnan(inp.path_reward).all()
        assert not inp.superseded.any() and not inp.edited_recently.any()
        assert math.isnan(inp.confidence) and inp.novel_context_count == 0
    assert seed_labels(direct).labels.tolist() == seed_labels(built).labels.tolist()
    with pytest.raises(TypeError):
        SessionLabelInput(["a"], [True], 0.5)  # type: ignore[misc]


def test_empty_session():
    """Check a session without candidates gives empty arrays."""
    r = seed_labels(SessionLabelInput.build([], [], continuity_score=0.5))
    assert r.labels.shape == r.reason.shape == r.include.shape == (0,)


# --- edited recently ----------------------------------------------------------------------------

DAY_S = 86_400.0


def test_edited_recently_window():
    """Check an update within 7 days up to the reference time counts; older or later do not."""
    at = 1_700_000_000.0
    edits = [
        np.array([at - 7 * DAY_S]),  # exactly 7 days before: counts
        np.array([at - 7 * DAY_S - 1.0]),  # just older
        np.array([at + 60.0]),  # after the reference time
        np.zeros(0),  # never edited
        np.array([at - 30 * DAY_S, at - 2 * DAY_S, at + DAY_S]),
    ]
    assert edited_recently(edits, at).tolist() == [True, False, False, False, True]
    longer = DEFAULT_CONFIG.replace(edited_recent_days=8.0)
    assert edited_recently(edits, at, longer).tolist() == [True, True, False, False, True]
    assert edited_recently([], at).shape == (0,)


def test_edited_boost_on_the_seed_paths():
    """Check §5.3 '+0.05 to label' on the injected and not-injected paths, capped at 1."""
    assert one(True, 0.85, edited_recently=True) == (
        pytest.approx(0.90),
        "injected_high_session+edited_boost",
    )
    assert one(False, 0.85, cosine_to_context=0.1, edited_recently=True) == (
        pytest.approx(0.05),
        "true_negative+edited_boost",
    )
    label, reason = one(False, 0.85, fts_hit_count=2, access_count=11, edited_recently=True)
    assert label == pytest.approx(0.6 + 0.05 + 0.05)
    assert reason == "fts_missed+access_boost+edited_boost"
    assert one(True, 1.0, fts_hit_count=1, edited_recently=True)[0] == 1.0


def test_edited_boost_does_not_touch_harm_or_agent_feedback():
    """Check superseded, deleted-after-injection and agent-rated memories keep their labels."""
    assert one(False, superseded=True, edited_recently=True) == (-0.3, "superseded")
    deleted = one(True, deleted_at_hours_after_injection=2.0, edited_recently=True)
    assert deleted == (-0.5, "deleted_after_injection")
    label, reason = one(True, 0.8, agent_relevance_score=0.9, edited_recently=True)
    assert label == pytest.approx(0.63 + 0.08) and reason == "agent_feedback"


def test_edited_recently_defaults_to_false_and_is_not_an_inclusion_signal():
    """Check old callers get no boost, and a recent edit alone does not include a candidate."""
    inp = SessionLabelInput.build(["a", "b"], [True, False], continuity_score=0.8)
    assert inp.edited_recently.tolist() == [False, False]
    edited = SessionLabelInput.build(
        ["a", "b"], [False, False], continuity_score=0.8, edited_recently=[True, False]
    )
    r = seed_labels(edited)
    assert r.labels.tolist() == pytest.approx([0.05, 0.0]) and not r.include.any()
    assert signet058_labels(edited).labels.tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="edited_recently"):
        SessionLabelInput.build(["a"], [True], continuity_score=0.5, edited_recently=[True, True])


def test_ratings_take_the_agents_rating_then_the_judges():
    inp = SessionLabelInput.build(
        ["a", "b", "c", "d", "e"],
        [True, True, True, False, False],
        continuity_score=0.8,
        confidence=0.9,
        relevance_score=[0.9, 0.2, np.nan, 0.4, np.nan],
        agent_relevance_score=[np.nan, 0.7, -0.5, np.nan, np.nan],
    )
    got = ratings(inp)
    assert got[:4].tolist() == [0.9, 0.7, 0.0, 0.4]  # a negative rating: not relevant
    assert np.isnan(got[4])
