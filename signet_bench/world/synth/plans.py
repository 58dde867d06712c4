"""Session plans for a persona: when sessions start, which project, which focus topic.

Start times follow the persona's total weekly activity in its local time zone (a Poisson
process thinned by the activity of the local hour and weekday, scaled to `sessions_per_day`);
the project is drawn from the projects' activity at that local time; the focus topic stays the
one of the project's previous session with probability `TOPIC_PERSISTENCE` (so the previous
session is informative), else it is drawn from the project's topic mix. A drifting persona uses
its post-drift mix from session `drift_at * n` on. In a world with a knowledge graph, a share of
the prompts (`ENTITY_PROMPT_SHARE`) names the entities the focus topic makes focal.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import numpy as np

from signet_bench.world.synth.persona import TIME_PATTERNS, Persona, local_hour_weekday
from signet_bench.world.synth.text import prompt_text
from signet_bench.world.synth.vocab import get_topic

__all__ = [
    "ENTITY_PROMPT_SHARE",
    "TIME_PROMPT_SHARE",
    "TOPIC_PERSISTENCE",
    "PromptTopic",
    "SessionContext",
    "make_context",
    "plan_sessions",
    "planned_prompts",
    "prompts_for",
]

TOPIC_PERSISTENCE = 0.7
TIME_PROMPT_SHARE = 0.2  # prompts that mention an active time window ("friday ... deploy")
ENTITY_PROMPT_SHARE = 0.6  # prompts that name one of the session's focal entities, if given
_STREAM = 0x5E55  # seeds this module's random stream apart from the store builder's


@dataclass(frozen=True, slots=True)
class SessionContext:
    """What is known about a session at its start (`start` is an aware UTC datetime)."""

    session_key: str
    project: str
    focus_topic: str
    start: datetime
    tz: str
    local_hour: int
    local_weekday: int  # Mon=0


def make_context(
    session_key: str, project: str, focus_topic: str, start: datetime, tz: str
) -> SessionContext:
    """A context with its local hour and weekday derived from `start` and `tz`."""
    if start.tzinfo is None:
        raise ValueError("session start must be timezone-aware")
    utc = start.astimezone(UTC)
    local = utc.astimezone(ZoneInfo(tz))
    return SessionContext(session_key, project, focus_topic, utc, tz, local.hour, local.weekday())


def plan_sessions(persona: Persona, n: int, *, start: datetime, seed: int) -> list[SessionContext]:
    """`n` sessions from `start` on, deterministic given `seed`."""
    if start.tzinfo is None:
        raise ValueError("start must be timezone-aware")
    if n <= 0:
        return []
    rng = np.random.default_rng([int(seed), _STREAM])
    before = persona.activity(0.0)
    after = persona.activity(1.0) if persona.drift_at is not None else before
    switch = n if persona.drift_at is None else int(np.ceil(persona.drift_at * n))
    peak = max(before.sum(axis=0).max(), after.sum(axis=0).max())
    accept_mean = (before.sum(axis=0).mean() + after.sum(axis=0).mean()) / 2.0 / peak
    mean_gap_s = 86_400.0 / persona.sessions_per_day * accept_mean

    out: list[SessionContext] = []
    last_topic: dict[str, str] = {}
    t = start.astimezone(UTC).timestamp()
    keys = [str(uuid.UUID(bytes=rng.bytes(16), version=4)) for _ in range(n)]
    while len(out) < n:
        batch = max(64, 4 * (n - len(out)))
        times = t + np.cumsum(rng.exponential(mean_gap_s, batch))
        hours, days = local_hour_weekday(times, persona.tz)
        u_accept, u_project, u_keep, u_topic = rng.random((4, batch))
        for k in range(batch):
            act = (before if len(out) < switch else after)[:, days[k], hours[k]]
            if u_accept[k] * peak >= act.sum():
                continue
            p = int(np.searchsorted(np.cumsum(act) / act.sum(), u_project[k], side="right"))
            project = persona.projects[min(p, len(persona.projects) - 1)]
            topic = last_topic.get(project.name)
            if topic is None or u_keep[k] >= TOPIC_PERSISTENCE:
                w = np.cumsum(project.topic_weights) / sum(project.topic_weights)
                j = min(int(np.searchsorted(w, u_topic[k], side="right")), len(w) - 1)
                topic = project.topics[j].name
            last_topic[project.name] = topic
            when = datetime.fromtimestamp(round(float(times[k])), UTC)
            out.append(make_context(keys[len(out)], project.name, topic, when, persona.tz))
            if len(out) == n:
                break
        t = float(times[-1])
    return out


@dataclass(frozen=True, slots=True)
class PromptTopic:
    """What a planned prompt is about: the session's focus topic, the active time window it
    mentions (None: none) and the entity it names (None: none); the per-prompt truth
    (`truth.prompt_relevance`) reads it."""

    topic: str
    time_pattern: str | None = None
    entity: str | None = None


def planned_prompts(
    ctx: SessionContext, n: int, rng: np.random.Generator, *, entities: Sequence[str] = ()
) -> list[tuple[str, PromptTopic]]:
    """`n` user prompts about the session's focus topic, each with what it is about; some
    mention an active time window, and with `entities` (names), some name one of them
    ("paylane: how do I ...")."""
    topic = get_topic(ctx.focus_topic)
    active = [
        name
        for name, p in TIME_PATTERNS.items()
        if (p.hour_mask >> ctx.local_hour) & 1 and (p.weekday_mask >> ctx.local_weekday) & 1
    ]
    prompts = []
    for _ in range(n):
        tp = None
        if active and rng.random() < TIME_PROMPT_SHARE:
            tp = active[int(rng.integers(len(active)))]
        text = prompt_text(topic, rng, time_pattern=tp)
        entity = None
        if entities and rng.random() < ENTITY_PROMPT_SHARE:
            entity = entities[int(rng.integers(len(entities)))]
            text = f"{entity}: {text}"
        prompts.append((text, PromptTopic(ctx.focus_topic, tp, entity)))
    return prompts


def prompts_for(
    ctx: SessionContext, n: int, rng: np.random.Generator, *, entities: Sequence[str] = ()
) -> list[str]:
    """The texts of `planned_prompts` (the same draws)."""
    return [text for text, _ in planned_prompts(ctx, n, rng, entities=entities)]
