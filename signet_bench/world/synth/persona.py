"""Synthetic users: projects with topics and weekly activity schedules, in a local time zone.

A persona's *activity* is, per project, `share * schedule`, where a schedule is a normalised
(weekday x local hour) grid: `share` says how much of the user's work (sessions and new memories)
goes to the project, the schedule says when. A drifting persona switches to `share_after_drift`
at `drift_at` (a fraction of whatever timeline is being laid out: the memory time span, or a
session plan). Time-patterned memories carry a `TimePattern` (hours x weekdays when they matter).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from signet_bench.errors import UserError
from signet_bench.world.synth.vocab import GLOBAL_TOPIC, Topic, get_topic

__all__ = [
    "PERSONAS",
    "TIME_PATTERNS",
    "Persona",
    "Project",
    "Schedule",
    "TimePattern",
    "get_persona",
    "local_hour_weekday",
    "mask_of",
]

# How much of a store carries the planted time and supersession patterns (a persona may plant
# more, e.g. for an ablation that needs the pattern to be common).
TIME_PATTERN_SHARE = 0.05
SUPERSEDE_SHARE = 0.08
SUPERSEDE_MODES: tuple[tuple[str, float], ...] = (
    ("in_place", 0.4),
    ("soft_delete", 0.25),
    ("attribute", 0.35),
)


@dataclass(frozen=True, slots=True)
class Schedule:
    """Relative activity per local hour (0..23) and per weekday (Mon..Sun)."""

    hours: tuple[float, ...]
    weekdays: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.hours) != 24 or len(self.weekdays) != 7:
            raise ValueError("a schedule needs 24 hour weights and 7 weekday weights")
        if min(self.hours) < 0 or min(self.weekdays) < 0 or sum(self.hours) <= 0:
            raise ValueError("schedule weights must be non-negative and not all zero")

    def grid(self) -> np.ndarray:
        """(7, 24) activity density over the week, summing to 1."""
        g = np.outer(np.asarray(self.weekdays, float), np.asarray(self.hours, float))
        return g / g.sum()


@dataclass(frozen=True, slots=True)
class Project:
    """A project: its topics (with how often each comes up), schedule and share of activity."""

    name: str
    topics: tuple[Topic, ...]
    topic_weights: tuple[float, ...]
    schedule: Schedule
    share: float
    share_after_drift: float | None = None


@dataclass(frozen=True, slots=True)
class TimePattern:
    """When a time-patterned memory matters: local hours x weekdays (Mon=0)."""

    name: str
    hours: tuple[int, ...]
    weekdays: tuple[int, ...]

    @property
    def hour_mask(self) -> int:
        """24-bit mask, bit h set when local hour h is inside the window."""
        return mask_of(self.hours)

    @property
    def weekday_mask(self) -> int:
        """7-bit mask, bit d set when weekday d (Mon=0) is inside the window."""
        return mask_of(self.weekdays)


def mask_of(bits: tuple[int, ...] | range) -> int:
    """Bit mask with the given bit positions set."""
    m = 0
    for b in bits:
        m |= 1 << int(b)
    return m


ALL_HOURS = tuple(range(24))
ALL_DAYS = tuple(range(7))

TIME_PATTERNS: dict[str, TimePattern] = {
    p.name: p
    for p in (
        TimePattern("friday_deploy", tuple(range(12, 19)), (4,)),
        TimePattern("evening_oncall", tuple(range(18, 24)), ALL_DAYS),
        TimePattern("monday_morning", tuple(range(7, 12)), (0,)),
        TimePattern("weekend", ALL_HOURS, (5, 6)),
        TimePattern("nightly", (22, 23, 0, 1, 2, 3, 4, 5), ALL_DAYS),
    )
}
"""The windows a time-patterned memory can have (deploy only on Friday afternoons, ...)."""


@dataclass(frozen=True, slots=True)
class Persona:
    """A synthetic user: projects, global preferences, time zone, size and pace."""

    name: str
    description: str
    tz: str
    projects: tuple[Project, ...]
    global_topic: Topic
    global_share: float
    n_memories: int
    span_days: float
    sessions_per_day: float
    drift_at: float | None = None
    time_pattern_share: float = TIME_PATTERN_SHARE  # of project memories
    supersede_share: float = SUPERSEDE_SHARE  # of all memories
    supersede_modes: tuple[tuple[str, float], ...] = SUPERSEDE_MODES  # how the old one goes
    embedder: str = "topic"  # what `build_persona_store` embeds with unless told otherwise
    graph: bool = False  # a knowledge graph (`synth.graph`) that relevance flows through

    def __post_init__(self) -> None:
        ZoneInfo(self.tz)  # fail early on a bad zone name
        if not self.projects:
            raise ValueError("a persona needs at least one project")
        for name in ("time_pattern_share", "supersede_share"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        unknown = {m for m, _ in self.supersede_modes} - {m for m, _ in SUPERSEDE_MODES}
        if unknown or not any(w > 0 for _, w in self.supersede_modes):
            raise ValueError(f"supersede_modes: unknown {sorted(unknown)} or no positive weight")

    @property
    def project_names(self) -> tuple[str, ...]:
        """Project names in declaration order."""
        return tuple(p.name for p in self.projects)

    def project(self, name: str) -> Project:
        """The project called `name`."""
        for p in self.projects:
            if p.name == name:
                return p
        raise KeyError(f"persona {self.name!r} has no project {name!r}")

    def shares(self, fraction: float) -> np.ndarray:
        """Project mix (summing to 1) at `fraction` (0..1) of a timeline."""
        after = self.drift_at is not None and fraction >= self.drift_at
        s = np.array(
            [
                p.share_after_drift if after and p.share_after_drift is not None else p.share
                for p in self.projects
            ],
            float,
        )
        return s / s.sum()

    def activity(self, fraction: float) -> np.ndarray:
        """(projects, 7, 24) activity density at `fraction` of a timeline; sums to 1."""
        grids = np.stack([p.schedule.grid() for p in self.projects])
        return grids * self.shares(fraction)[:, None, None]

    def to_json(self) -> str:
        """The persona as JSON (round-trips through `Persona.from_json`); `graph` is written
        only when set, so a persona without a graph reads as it always has."""
        d = dataclasses.asdict(self)
        if not d["graph"]:
            del d["graph"]
        return json.dumps(d, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Persona:
        """Rebuild a persona written by `to_json`."""
        d = json.loads(text)
        return Persona(
            name=d["name"],
            description=d["description"],
            tz=d["tz"],
            projects=tuple(_project_from_dict(p) for p in d["projects"]),
            global_topic=_topic_from_dict(d["global_topic"]),
            global_share=d["global_share"],
            n_memories=d["n_memories"],
            span_days=d["span_days"],
            sessions_per_day=d["sessions_per_day"],
            drift_at=d["drift_at"],
            time_pattern_share=d.get("time_pattern_share", TIME_PATTERN_SHARE),
            supersede_share=d.get("supersede_share", SUPERSEDE_SHARE),
            supersede_modes=tuple(
                (str(m), float(w)) for m, w in d.get("supersede_modes", SUPERSEDE_MODES)
            ),
            embedder=d.get("embedder", "topic"),
            graph=bool(d.get("graph", False)),
        )


def _topic_from_dict(d: dict[str, Any]) -> Topic:
    return Topic(
        d["name"], d["domain"], tuple(d["tools"]), tuple(d["objects"]), tuple(d["actions"])
    )


def _project_from_dict(d: dict[str, Any]) -> Project:
    return Project(
        name=d["name"],
        topics=tuple(_topic_from_dict(t) for t in d["topics"]),
        topic_weights=tuple(d["topic_weights"]),
        schedule=Schedule(tuple(d["schedule"]["hours"]), tuple(d["schedule"]["weekdays"])),
        share=d["share"],
        share_after_drift=d["share_after_drift"],
    )


@cache
def _zone(tz: str) -> ZoneInfo:
    return ZoneInfo(tz)


def local_hour_weekday(epoch_s: np.ndarray, tz: str) -> tuple[np.ndarray, np.ndarray]:
    """Local hour (0..23) and weekday (Mon=0) of UTC epoch seconds in zone `tz` (vectorised:
    one zone lookup per distinct UTC hour, since offsets change only on whole hours here)."""
    t = np.asarray(epoch_s, dtype=np.float64)
    utc_hours = np.floor(t / 3600.0).astype(np.int64)
    uniq, inverse = np.unique(utc_hours, return_inverse=True)
    zone = _zone(tz)
    offsets = np.array(
        [
            datetime.fromtimestamp(int(h) * 3600, UTC).astimezone(zone).utcoffset().total_seconds()
            for h in uniq
        ],
        dtype=np.float64,
    )
    local = t + offsets[inverse].reshape(t.shape)
    local_s = np.floor(local).astype(np.int64)
    hour = (local_s // 3600) % 24
    weekday = (local_s // 86_400 + 3) % 7  # 1970-01-01 was a Thursday
    return hour, weekday


# --- the built-in personas --------------------------------------------------------------------

BUILTIN_SPAN_DAYS = 120.0
"""How many days of memories every built-in persona has before its reference time."""


def _hours(*ranges: tuple[int, int, float], floor: float = 0.02) -> tuple[float, ...]:
    """24 weights: `floor` everywhere, `v` for local hours lo..hi-1 (hi may exceed 24: wraps)."""
    w = [floor] * 24
    for lo, hi, v in ranges:
        for h in range(lo, hi):
            w[h % 24] = max(w[h % 24], v)
    return tuple(w)


def _days(
    mon: float, tue: float, wed: float, thu: float, fri: float, sat: float, sun: float
) -> tuple[float, ...]:
    return (mon, tue, wed, thu, fri, sat, sun)


WEEKDAYS_ONLY = _days(1, 1, 1, 1, 1, 0.1, 0.05)


def _project(
    name: str,
    topics: str,
    share: float,
    schedule: Schedule,
    share_after_drift: float | None = None,
) -> Project:
    """A project on the space-separated `topics`, the first coming up most often (Zipf-like)."""
    names = topics.split()
    weights = tuple(round(1.0 / (k + 1) ** 0.7, 4) for k in range(len(names)))
    topic_tuple = tuple(get_topic(t) for t in names)
    return Project(name, topic_tuple, weights, schedule, share, share_after_drift)


@dataclass(frozen=True, slots=True)
class _Scale:
    """A built-in persona's size and pace: memories, sessions a day, the global topic's share
    and where (as a share of its span) it drifts, if it does."""

    n_memories: int
    sessions_per_day: float
    global_share: float = 0.08
    drift_at: float | None = None


def _builtin(
    name: str,
    tz: str,
    description: str,
    projects: tuple[Project, ...],
    scale: _Scale,
    *,
    graph: bool = False,
) -> Persona:
    """A built-in persona: its own projects, size and pace; the shared global topic and span."""
    return Persona(
        name=name,
        description=description,
        tz=tz,
        projects=projects,
        global_topic=get_topic(GLOBAL_TOPIC),
        global_share=scale.global_share,
        n_memories=scale.n_memories,
        span_days=BUILTIN_SPAN_DAYS,
        sessions_per_day=scale.sessions_per_day,
        drift_at=scale.drift_at,
        graph=graph,
    )


# Each built-in persona's projects: the weekly schedules they keep, then topics and shares.


def _light_projects() -> tuple[Project, ...]:
    evenings = Schedule(_hours((18, 23, 1.0), (13, 18, 0.5)), _days(1, 1, 1, 1, 0.8, 1.2, 1.2))
    return (_project("portfolio", "ui_components styling deploy docs", 1.0, evenings),)


def _heavy_projects() -> tuple[Project, ...]:
    by_day = Schedule(_hours((9, 18, 1.0), (8, 9, 0.4), (18, 19, 0.4)), WEEKDAYS_ONLY)
    evenings = Schedule(_hours((19, 24, 1.0), (24, 25, 0.5)), _days(1, 1, 1, 1, 1, 1.2, 1.2))
    mornings = Schedule(_hours((8, 13, 1.0)), _days(1, 1, 1, 1, 0.3, 0.02, 0.02))
    weekends = Schedule(_hours((9, 17, 1.0)), _days(0.05, 0.05, 0.05, 0.05, 0.05, 1, 1))
    fridays = Schedule(_hours((13, 18, 1.0)), _days(0.1, 0.1, 0.1, 0.1, 1, 0.02, 0.02))
    return (
        _project("signetai", "memory_pipeline sqlite rust embeddings search api", 0.42, by_day),
        _project("ooide", "editor ui_components state styling e2e_tests", 0.25, evenings),
        _project("ledgerly", "payments invoicing postgres auth unit_tests", 0.15, mornings),
        _project("homelab", "kubernetes networking observability security", 0.10, weekends),
        _project("docsite", "docs ci deploy", 0.08, fridays),
    )


def _drifting_projects() -> tuple[Project, ...]:
    daytime = Schedule(_hours((10, 19, 1.0)), WEEKDAYS_ONLY)
    afternoons = Schedule(_hours((14, 23, 1.0)), _days(1, 1, 1, 1, 1, 0.6, 0.4))
    return (
        _project("mobileapp", "ios android api auth", 0.85, daytime, share_after_drift=0.15),
        _project(
            "mlplatform",
            "model_training embeddings prompting queues",
            0.15,
            afternoons,
            share_after_drift=0.85,
        ),
    )


def _multi_projects() -> tuple[Project, ...]:
    mornings = Schedule(_hours((8, 12, 1.0), floor=0.01), _days(1, 1, 1, 1, 1, 0.01, 0.01))
    afternoons = Schedule(_hours((13, 18, 1.0), floor=0.01), _days(1, 1, 1, 1, 1, 0.01, 0.01))
    nights = Schedule(_hours((21, 26, 1.0), floor=0.01), _days(1, 1, 1, 1, 1, 1, 1))
    weekends = Schedule(_hours((9, 18, 1.0), floor=0.01), _days(0.01, 0.01, 0.01, 0.01, 0.01, 1, 1))
    return (
        _project("shopfront", "payments ui_components api postgres", 0.3, mornings),
        _project("datapipe", "analytics queues observability caching", 0.3, afternoons),
        _project("gamejam", "rust networking unit_tests", 0.2, nights),
        _project("gardenbot", "android api docs", 0.2, weekends),
    )


def _architect_projects() -> tuple[Project, ...]:
    by_day = Schedule(_hours((9, 18, 1.0), (8, 9, 0.4)), WEEKDAYS_ONLY)
    afternoons = Schedule(_hours((13, 21, 1.0)), _days(1, 1, 1, 1, 1, 0.3, 0.2))
    mornings = Schedule(_hours((7, 12, 1.0)), _days(1, 1, 1, 1, 1, 0.1, 0.05))
    fridays = Schedule(_hours((12, 18, 1.0)), _days(0.2, 0.2, 0.2, 0.2, 1, 0.05, 0.05))
    # Topics shared between projects (postgres, auth, observability, ci) give the shared
    # libraries and the cross-project dependencies of the knowledge graph something to join.
    return (
        _project("storefront", "api payments postgres caching auth", 0.40, by_day),
        _project("fleetctl", "kubernetes observability networking auth ci", 0.28, afternoons),
        _project("insights", "analytics queues postgres search observability", 0.20, mornings),
        _project("handbook", "docs ci deploy", 0.12, fridays),
    )


PERSONAS: dict[str, Persona] = {
    p.name: p
    for p in (
        _builtin(
            "light",
            "Europe/Berlin",
            "a hobbyist with one side project, evenings and weekend afternoons",
            _light_projects(),
            _Scale(n_memories=300, sessions_per_day=4.0, global_share=0.12),
        ),
        _builtin(
            "heavy",
            "America/Denver",
            "the seed's heavy user: signetai by day, ooIDE in the evenings, a billing client "
            "in weekday mornings, the homelab at weekends, the docs site on Friday afternoons",
            _heavy_projects(),
            _Scale(n_memories=4000, sessions_per_day=40.0),
        ),
        _builtin(
            "drifting",
            "Asia/Tokyo",
            "moves from a mobile app (daytime) to an ML platform (afternoons/evenings) half-way "
            "through",
            _drifting_projects(),
            _Scale(n_memories=1500, sessions_per_day=15.0, drift_at=0.5),
        ),
        _builtin(
            "multi-project",
            "America/New_York",
            "four projects with strongly distinct schedules: weekday mornings, weekday "
            "afternoons, nights, weekends",
            _multi_projects(),
            _Scale(n_memories=2000, sessions_per_day=25.0),
        ),
        _builtin(
            "architect",
            "Europe/Lisbon",
            "a platform architect whose work revolves around services, shared libraries, the "
            "people who own them and four products; a knowledge graph names them all",
            _architect_projects(),
            _Scale(n_memories=4000, sessions_per_day=40.0),
            graph=True,
        ),
    )
}
"""Built-in personas by name."""


def get_persona(
    name: str, n_memories: int | None = None, *, embedder: str | None = None
) -> Persona:
    """The built-in persona `name`, optionally resized to `n_memories` memories and built with
    another embedder ("topic": the fast topic-vector generator, the default; "wordllama" or
    any registered `embed` name: real text embeddings)."""
    persona = PERSONAS.get(name)
    if persona is None:
        raise UserError(f"unknown persona {name!r}; valid names: {', '.join(PERSONAS)}")
    if n_memories is not None:
        if n_memories < 10:
            raise UserError(f"--memories must be at least 10, got {n_memories}")
        persona = dataclasses.replace(persona, n_memories=int(n_memories))
    if embedder is not None:
        persona = dataclasses.replace(persona, embedder=embedder)
    return persona
