"""Personas: projects, schedules, drift, local time."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from signet_bench.errors import UserError
from signet_bench.world.synth.persona import (
    PERSONAS,
    TIME_PATTERNS,
    Persona,
    get_persona,
    local_hour_weekday,
)


def test_builtin_personas_have_the_documented_shapes():
    assert get_persona("light").n_memories == 300
    assert len(get_persona("light").projects) == 1
    heavy = get_persona("heavy")
    assert heavy.n_memories == 4000 and len(heavy.projects) == 5
    assert "ooide" in heavy.project_names
    assert 3 <= len(get_persona("multi-project").projects) <= 4
    assert get_persona("drifting").drift_at == 0.5


def test_unknown_persona_names_the_valid_ones():
    with pytest.raises(UserError) as exc:
        get_persona("medium")
    for name in PERSONAS:
        assert name in str(exc.value)


def test_size_override():
    assert get_persona("heavy", n_memories=123).n_memories == 123
    with pytest.raises(UserError):
        get_persona("light", n_memories=0)


def test_size_override_leaves_the_builtin_persona_alone():
    """Check resizing returns a new persona: the next caller still gets the built-in size."""
    before = get_persona("drifting")
    resized = get_persona("drifting", n_memories=50)
    assert resized.n_memories == 50 and resized.projects == before.projects
    assert get_persona("drifting") == before and before.n_memories != 50


@pytest.mark.parametrize("name", sorted(PERSONAS))
def test_json_round_trip(name):
    p = get_persona(name)
    assert Persona.from_json(p.to_json()) == p
    real = get_persona(name, embedder="wordllama")
    assert Persona.from_json(real.to_json()) == real and real.embedder == "wordllama"


def test_embedder_defaults_to_the_topic_generator_and_old_json_reads_so():
    p = get_persona("light")
    assert p.embedder == "topic"
    d = json.loads(get_persona("light", embedder="wordllama").to_json())
    del d["embedder"]  # a store written before personas named their embedder
    assert Persona.from_json(json.dumps(d)) == p


def test_activity_is_a_distribution_and_drift_switches_the_mix():
    d = get_persona("drifting")
    before, after = d.activity(0.1), d.activity(0.9)
    assert before.shape == (2, 7, 24)
    assert before.sum() == pytest.approx(1.0) and after.sum() == pytest.approx(1.0)
    main_before = int(np.argmax(before.sum(axis=(1, 2))))
    main_after = int(np.argmax(after.sum(axis=(1, 2))))
    assert main_before != main_after
    light = get_persona("light")
    assert np.allclose(light.shares(0.0), light.shares(1.0))


def test_heavy_ooide_is_an_evening_project():
    grid = get_persona("heavy").project("ooide").schedule.grid()
    evening = grid[:, 19:24].sum()
    assert evening > 0.7


def test_local_hour_weekday_matches_zoneinfo_across_dst():
    tz = "Europe/Berlin"
    start = datetime(2026, 3, 28, 0, 0, tzinfo=UTC)  # DST starts 2026-03-29 01:00 UTC
    stamps = [start + timedelta(minutes=37 * k) for k in range(200)]
    hours, days = local_hour_weekday(np.array([s.timestamp() for s in stamps]), tz)
    for s, h, d in zip(stamps, hours, days, strict=True):
        local = s.astimezone(ZoneInfo(tz))
        assert (int(h), int(d)) == (local.hour, local.weekday())


def test_time_pattern_masks():
    friday = TIME_PATTERNS["friday_deploy"]
    assert friday.weekday_mask == 1 << 4
    assert (friday.hour_mask >> 14) & 1 and not (friday.hour_mask >> 9) & 1
    assert TIME_PATTERNS["evening_oncall"].weekday_mask == 0b1111111
