"""Session plans: schedule-driven projects, persistent focus topics, drift, prompts."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from signet_bench.world.synth.persona import get_persona
from signet_bench.world.synth.plans import (
    TOPIC_PERSISTENCE,
    make_context,
    plan_sessions,
    planned_prompts,
    prompts_for,
)
from signet_bench.world.synth.text import tokens
from signet_bench.world.synth.vocab import get_topic

START = datetime(2026, 3, 16, 18, 0, tzinfo=UTC)


def test_deterministic_given_seed():
    p = get_persona("heavy")
    a = plan_sessions(p, 60, start=START, seed=4)
    b = plan_sessions(p, 60, start=START, seed=4)
    c = plan_sessions(p, 60, start=START, seed=5)
    assert a == b
    assert a != c
    assert len({s.session_key for s in a}) == 60


def test_sessions_are_ordered_local_and_after_start():
    p = get_persona("multi-project")
    plan = plan_sessions(p, 200, start=START, seed=0)
    assert len(plan) == 200
    starts = [s.start for s in plan]
    assert starts == sorted(starts) and starts[0] > START
    for s in plan[:50]:
        local = s.start.astimezone(ZoneInfo(p.tz))
        assert (s.local_hour, s.local_weekday) == (local.hour, local.weekday())
        assert s.tz == p.tz and s.start.tzinfo is not None


def test_pace_follows_sessions_per_day():
    p = get_persona("heavy")
    plan = plan_sessions(p, 800, start=START, seed=1)
    days = (plan[-1].start - plan[0].start).total_seconds() / 86_400
    assert 0.7 * p.sessions_per_day < len(plan) / days < 1.3 * p.sessions_per_day


def test_projects_follow_their_schedules():
    plan = plan_sessions(get_persona("multi-project"), 600, start=START, seed=2)
    gamejam = [s for s in plan if s.project == "gamejam"]
    garden = [s for s in plan if s.project == "gardenbot"]
    shop = [s for s in plan if s.project == "shopfront"]
    assert gamejam and garden and shop
    assert np.mean([s.local_hour >= 21 or s.local_hour < 2 for s in gamejam]) > 0.8
    assert np.mean([s.local_weekday >= 5 for s in garden]) > 0.8
    assert np.mean([8 <= s.local_hour < 12 and s.local_weekday < 5 for s in shop]) > 0.8


def test_heavy_user_works_on_ooide_in_the_evenings():
    plan = plan_sessions(get_persona("heavy"), 600, start=START, seed=3)
    evening = [s.project for s in plan if 19 <= s.local_hour <= 23]
    assert Counter(evening).most_common(1)[0][0] == "ooide"


def test_focus_topic_persists_within_a_project():
    p = get_persona("heavy")
    plan = plan_sessions(p, 1500, start=START, seed=6)
    last: dict[str, str] = {}
    kept = []
    for s in plan:
        assert s.focus_topic in {t.name for t in p.project(s.project).topics}
        if s.project in last:
            kept.append(last[s.project] == s.focus_topic)
        last[s.project] = s.focus_topic
    # persistence plus the chance of redrawing the same topic
    assert TOPIC_PERSISTENCE - 0.02 < np.mean(kept) < TOPIC_PERSISTENCE + 0.15


def test_drifting_plan_switches_main_project_at_midpoint():
    plan = plan_sessions(get_persona("drifting"), 300, start=START, seed=0)
    first = Counter(s.project for s in plan[:150]).most_common(1)[0][0]
    second = Counter(s.project for s in plan[150:]).most_common(1)[0][0]
    assert (first, second) == ("mobileapp", "mlplatform")


def test_naive_start_is_rejected_and_zero_sessions_is_empty():
    with pytest.raises(ValueError):
        plan_sessions(get_persona("light"), 3, start=datetime(2026, 1, 1), seed=0)
    assert plan_sessions(get_persona("light"), 0, start=START, seed=0) == []


def test_prompts_talk_about_the_focus_topic():
    ctx = make_context("k", "signetai", "sqlite", START, "America/Denver")
    prompts = prompts_for(ctx, 15, np.random.default_rng(0))
    assert len(prompts) == 15
    words = set(get_topic("sqlite").words)
    assert all(set(tokens(p)) & words for p in prompts)
    assert prompts == prompts_for(ctx, 15, np.random.default_rng(0))


def test_prompts_mention_an_active_time_window_sometimes():
    # Friday 15:00 in Denver is inside the Friday deploy window
    friday = datetime(2026, 3, 20, 15, 0, tzinfo=ZoneInfo("America/Denver"))
    ctx = make_context("k", "docsite", "deploy", friday, "America/Denver")
    prompts = prompts_for(ctx, 200, np.random.default_rng(1))
    assert any("friday" in p for p in prompts)
    tuesday = make_context("k", "docsite", "deploy", friday - timedelta(days=3), "America/Denver")
    assert not any("friday" in p for p in prompts_for(tuesday, 200, np.random.default_rng(1)))


def test_planned_prompts_say_what_each_prompt_is_about():
    friday = datetime(2026, 3, 20, 15, 0, tzinfo=ZoneInfo("America/Denver"))
    ctx = make_context("k", "docsite", "deploy", friday, "America/Denver")
    planned = planned_prompts(ctx, 200, np.random.default_rng(1), entities=("paylane", "ledger"))
    assert [text for text, _ in planned] == prompts_for(
        ctx, 200, np.random.default_rng(1), entities=("paylane", "ledger")
    )
    assert {about.topic for _, about in planned} == {"deploy"}
    for text, about in planned:
        assert (about.entity is not None) == text.startswith(("paylane: ", "ledger: "))
        if about.entity is not None:
            assert text.startswith(f"{about.entity}: ")
        assert (about.time_pattern == "friday_deploy") == ("friday" in text)
    assert any(a.entity for _, a in planned) and any(a.time_pattern for _, a in planned)
