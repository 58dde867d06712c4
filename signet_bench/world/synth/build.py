"""Build a synthetic user's Signet store: memories with planted, known relevance.

`plan_store` (pure, deterministic given the seed) lays out the memories of a persona over
`span_days` ending at a reference now derived from the seed: creation times follow the
persona's activity in local time, the project at that time follows the project mix, then topic,
type, importance, time pattern, pinned flag (a handful per store) and text; then supersessions
(Signet's in-place update, 0.58-style soft delete + new row, or a knowledge-graph attribute
marked superseded with the old row left live), user deletions, access counts and each memory's
hidden usefulness (a factor of the truth that nothing in the store shows); for a persona with a
knowledge graph, the graph (`synth.graph`: its entities named in the memories' texts).
`build_persona_store` writes the plan through `store.write` (and the graph through
`store.graph_write` into the release line's graph tables: dependencies in `entity_dependencies`
where the store has it, else in `relations`), embeds the final contents (a few memories are
left without an embedding, so the text path matters) and saves the truth next to it.
"""

from __future__ import annotations

import dataclasses
import sqlite3
import sys
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
from tqdm import tqdm

from signet_bench.errors import UserError
from signet_bench.store.graph_write import write_graph
from signet_bench.store.schema import check_release_line, new_store
from signet_bench.store.timestamps import format_iso, format_sqlite
from signet_bench.store.write import (
    insert_embeddings,
    insert_memories,
    soft_delete,
    supersede_attribute,
    supersede_memory,
    transaction,
)
from signet_bench.world.embed import Embedder, get_embedder
from signet_bench.world.synth.embedding import TopicEmbedder
from signet_bench.world.synth.graph import WorldGraph, plan_graph, traversable
from signet_bench.world.synth.memory_spec import MemorySpec
from signet_bench.world.synth.persona import (
    TIME_PATTERNS,
    Persona,
    Project,
    get_persona,
    local_hour_weekday,
)
from signet_bench.world.synth.text import memory_text, replacement_text, unique_memory_text
from signet_bench.world.synth.truth import (
    ALL_HOURS_MASK,
    ALL_WEEKDAYS_MASK,
    HALF_LIFE_DAYS,
    MemoryTruth,
    graph_truth,
    save_truth,
)
from signet_bench.world.synth.vocab import Topic

__all__ = [
    "Event",
    "StorePlan",
    "build_persona_store",
    "plan_store",
    "reference_now",
]

BASE_NOW = datetime(2026, 3, 16, 18, 0, tzinfo=UTC)
# Constraints are rare: the daemon surfaces every constraint of the session's project
# outside the character budget, as Signet's "Active Constraints" section does.
PROJECT_TYPE_MIX = {
    "fact": 0.36,
    "decision": 0.22,
    "procedural": 0.265,
    "preference": 0.15,
    "constraint": 0.005,
}
GLOBAL_TYPE_MIX = {"preference": 0.7, "procedural": 0.28, "constraint": 0.02}
IMPORTANCE = {  # (mean, sd) per type, clipped to [0.05, 1]
    "fact": (0.5, 0.15),
    "preference": (0.6, 0.15),
    "decision": (0.7, 0.12),
    "procedural": (0.6, 0.15),
    "constraint": (0.8, 0.1),
}
SUPERSEDABLE_TYPES = ("fact", "decision", "preference", "procedural")
DELETE_SHARE = 0.03
# Real stores pin a handful of memories (6 of the heavy persona's 4,000), not a share of the
# pool: every pin has effectiveScore 1.0, so each one takes a top slot of the baseline.
PINNED_SHARE = 0.0015
# Hidden per-memory usefulness, uniform in [1 - USEFULNESS_SPREAD, 1] (truth.py).
USEFULNESS_SPREAD = 0.4
NO_EMBEDDING_SHARE = 0.01
MIN_NO_EMBEDDING = 3
# time patterns go to procedural/constraint memories only
_PATTERN_TYPES_SHARE = PROJECT_TYPE_MIX["procedural"] + PROJECT_TYPE_MIX["constraint"]
_STREAM = 0xB17D  # seeds the builder's random stream apart from the session planner's
_USEFULNESS_STREAM = 0x05EF  # its own stream, so the layout does not depend on it


def reference_now(seed: int) -> datetime:
    """The store's "now" (end of the memory time span): fixed per seed, never wall-clock."""
    return BASE_NOW + timedelta(days=int(seed) % 29)


@dataclass(frozen=True, slots=True)
class Event:
    """A later change: 'in_place' | 'soft_delete' | 'attribute' supersession, or 'delete'."""

    at: datetime
    kind: str
    memory_id: str
    new_content: str | None = None
    new_id: str | None = None


@dataclass(slots=True)
class StorePlan:
    """Everything a store build writes, in insertion order (by creation time)."""

    persona: Persona
    seed: int
    now: datetime
    specs: list[MemorySpec]
    events: list[Event]
    no_embedding: set[str] = field(default_factory=set)
    graph: WorldGraph | None = None

    def truth(self) -> MemoryTruth:
        """The planted truth of every planned memory, in insertion order."""
        truth = self._memory_truth()
        g = self.graph
        if g is None:
            return truth
        rows = graph_truth(
            [
                (e.id, e.name, g.homes[e.id].project, g.homes[e.id].topic, int(e.pinned))
                for e in g.entities
            ],
            [
                (d.source_entity_id, d.target_entity_id, d.strength, d.confidence)
                for d in g.dependencies
            ],
            [(m, e, kind) for m, (e, kind) in g.subjects.items()],
            truth.ids,
        )
        return dataclasses.replace(truth, graph=rows[0], subject=rows[1], constraint=rows[2])

    def _memory_truth(self) -> MemoryTruth:
        specs = self.specs

        def secs(values: list[datetime | None]) -> np.ndarray:
            return np.array([v.timestamp() if v else np.inf for v in values], dtype=np.float64)

        def strs(values: list[str | None]) -> np.ndarray:
            return np.array([v or "" for v in values], dtype=object)

        masks = [TIME_PATTERNS[s.time_pattern] if s.time_pattern else None for s in specs]
        return MemoryTruth(
            ids=strs([s.id for s in specs]),
            project=strs([s.project for s in specs]),
            topic=strs([s.topic for s in specs]),
            is_global=np.array([s.project is None for s in specs], dtype=bool),
            memory_type=strs([s.type for s in specs]),
            importance=np.array([s.importance for s in specs], dtype=np.float64),
            created_s=secs([s.created for s in specs]),
            hour_mask=np.array([m.hour_mask if m else ALL_HOURS_MASK for m in masks], np.int64),
            weekday_mask=np.array(
                [m.weekday_mask if m else ALL_WEEKDAYS_MASK for m in masks], np.int64
            ),
            time_pattern=strs([s.time_pattern for s in specs]),
            half_life_days=np.array(
                [HALF_LIFE_DAYS.get(s.type, np.inf) for s in specs], dtype=np.float64
            ),
            stale_since_s=secs([s.stale_since for s in specs]),
            deleted_at_s=secs([s.deleted_at for s in specs]),
            replaced_by=strs([s.replaced_by for s in specs]),
            supersede_mode=strs([s.supersede_mode for s in specs]),
            now=self.now,
            usefulness=np.array([s.usefulness for s in specs], dtype=np.float64),
        )


# --- the pure plan ----------------------------------------------------------------------------


def _uuid(rng: np.random.Generator) -> str:
    return str(uuid.UUID(bytes=rng.bytes(16), version=4))


def _pick(rng: np.random.Generator, mix: dict[str, float], n: int) -> list[str]:
    keys = list(mix)
    p = np.array([mix[k] for k in keys], float)
    return [keys[i] for i in rng.choice(len(keys), size=n, p=p / p.sum())]


def _creation_times(
    persona: Persona, rng: np.random.Generator, n: int, start_s: float, end_s: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`n` creation times (whole seconds) following total local activity, with local hour and
    weekday; thinning against the activity peak of both drift phases."""
    before = persona.activity(0.0).sum(axis=0)
    after = persona.activity(1.0).sum(axis=0)
    peak = max(before.max(), after.max())
    drift = persona.drift_at
    out_t, out_h, out_d = [], [], []
    have = 0
    while have < n:
        t = np.floor(rng.uniform(start_s, end_s, size=4 * (n - have) + 64))
        h, d = local_hour_weekday(t, persona.tz)
        frac = (t - start_s) / (end_s - start_s)
        late = (frac >= drift) if drift is not None else np.zeros(len(t), bool)
        w = np.where(late, after[d, h], before[d, h])
        keep = rng.random(len(t)) * peak < w
        out_t.append(t[keep])
        out_h.append(h[keep])
        out_d.append(d[keep])
        have += int(keep.sum())
    t, h, d = (np.concatenate(a)[:n] for a in (out_t, out_h, out_d))
    return t, h, d


def _pattern_for(project: Project, rng: np.random.Generator) -> str:
    """A time pattern whose window holds part, but not all, of the project's activity."""
    grid = project.schedule.grid()
    names, inside = [], []
    for name, p in TIME_PATTERNS.items():
        share = float(grid[np.ix_(list(p.weekdays), list(p.hours))].sum())
        names.append(name)
        inside.append(share)
    fitting = [n for n, s in zip(names, inside, strict=True) if 0.03 <= s <= 0.7]
    if not fitting:
        fitting = [min(zip(names, inside, strict=True), key=lambda x: abs(x[1] - 0.3))[0]]
    return fitting[int(rng.integers(len(fitting)))]


def _categorical(rng: np.random.Generator, weights: np.ndarray) -> np.ndarray:
    """One draw per row of a (n, k) non-negative weight matrix."""
    cum = np.cumsum(weights, axis=1)
    u = rng.random(len(weights)) * cum[:, -1]
    return np.minimum((cum <= u[:, None]).sum(axis=1), weights.shape[1] - 1)


def _base_specs(
    persona: Persona,
    rng: np.random.Generator,
    n: int,
    start_s: float,
    end_s: float,
    taken: set[str],
) -> list[MemorySpec]:
    times, hours, days = _creation_times(persona, rng, n, start_s, end_s)
    is_global = np.zeros(n, bool)
    is_global[rng.choice(n, size=round(persona.global_share * n), replace=False)] = True
    late = (
        (times - start_s) / (end_s - start_s) >= persona.drift_at
        if persona.drift_at is not None
        else np.zeros(n, bool)
    )
    before, after = persona.activity(0.0), persona.activity(1.0)
    act = np.where(late[:, None], after[:, days, hours].T, before[:, days, hours].T)
    project_idx = _categorical(rng, act)
    topic_weights = np.zeros((n, max(len(p.topics) for p in persona.projects)))
    for k, p in enumerate(persona.projects):
        topic_weights[project_idx == k, : len(p.topics)] = p.topic_weights
    topic_idx = _categorical(rng, topic_weights)
    types = np.where(is_global, _pick(rng, GLOBAL_TYPE_MIX, n), _pick(rng, PROJECT_TYPE_MIX, n))
    patterned = rng.random(n) < min(1.0, persona.time_pattern_share / _PATTERN_TYPES_SHARE)
    noise = rng.normal(size=n)

    specs: list[MemorySpec] = []
    for i in range(n):
        mtype = str(types[i])
        if is_global[i]:
            project, topic = None, persona.global_topic
        else:
            p = persona.projects[int(project_idx[i])]
            project, topic = p.name, p.topics[int(topic_idx[i])]
        pattern = None
        if project is not None and mtype in ("procedural", "constraint") and patterned[i]:
            pattern = _pattern_for(persona.project(project), rng)
        mean, sd = IMPORTANCE[mtype]
        importance = float(np.clip(mean + sd * noise[i] + (0.1 if pattern else 0.0), 0.05, 1.0))
        text, fields = unique_memory_text(
            lambda r, mtype=mtype, topic=topic, project=project, pattern=pattern: memory_text(
                mtype, topic, project, r, time_pattern=pattern
            ),
            taken,
            rng,
        )
        specs.append(
            MemorySpec(
                id=_uuid(rng),
                project=project,
                topic=topic.name,
                type=mtype,
                content=text,
                fields=fields,
                created=datetime.fromtimestamp(float(times[i]), UTC),
                importance=round(importance, 3),
                time_pattern=pattern,
            )
        )
    return specs


def _topic_of(persona: Persona, spec: MemorySpec) -> Topic:
    if spec.project is None:
        return persona.global_topic
    return next(t for t in persona.project(spec.project).topics if t.name == spec.topic)


def _pin(rng: np.random.Generator, specs: list[MemorySpec], n: int) -> None:
    """Pin a few constraints and global preferences, the most important the likeliest."""
    eligible = [s for s in specs if s.type == "constraint" or s.project is None]
    n_pinned = min(len(eligible), max(1, round(PINNED_SHARE * n)))
    w = np.array([s.importance for s in eligible]) ** 4
    for k in rng.choice(len(eligible), size=n_pinned, replace=False, p=w / w.sum()):
        eligible[int(k)].pinned = True
        eligible[int(k)].importance = max(eligible[int(k)].importance, 0.9)


def _supersede_one(
    persona: Persona,
    rng: np.random.Generator,
    old: MemorySpec,
    mode: str,
    taken: set[str],
    end_s: float,
) -> tuple[Event, MemorySpec | None]:
    """Supersede `old` by `mode` at a random later time: the event, and the new row (None when
    the row is rewritten in place)."""
    lo = old.created.timestamp() + 86_400.0
    at = datetime.fromtimestamp(float(np.floor(rng.uniform(lo, end_s - 3600.0))), UTC)
    topic = _topic_of(persona, old)
    text, _ = unique_memory_text(
        lambda r, old=old, topic=topic: (
            replacement_text(old.type, old.fields, topic, r),
            old.fields,
        ),
        taken,
        rng,
    )
    old.supersede_mode = mode
    if mode == "in_place":
        old.final_content = text
        return Event(at, "in_place", old.id, new_content=text), None
    new = MemorySpec(
        id=_uuid(rng),
        project=old.project,
        topic=old.topic,
        type=old.type,
        content=text,
        fields=old.fields,
        created=at,
        importance=round(float(np.clip(old.importance + 0.05, 0.05, 1.0)), 3),
    )
    old.stale_since, old.replaced_by = at, new.id
    if mode == "soft_delete":
        old.deleted_at = at
    return Event(at, mode, old.id, new_id=new.id), new


def _supersessions(
    persona: Persona,
    rng: np.random.Generator,
    specs: list[MemorySpec],
    modes: list[str],
    taken: set[str],
    end_s: float,
) -> tuple[list[Event], list[MemorySpec]]:
    """Supersede one eligible memory per mode (as many as there are): the events and the new
    rows."""
    latest = end_s - 2 * 86_400.0
    candidates = [
        s
        for s in specs
        if s.type in SUPERSEDABLE_TYPES
        and not s.pinned
        and s.time_pattern is None
        and s.created.timestamp() < latest
    ]
    chosen = rng.choice(len(candidates), size=min(len(modes), len(candidates)), replace=False)
    events: list[Event] = []
    new_specs: list[MemorySpec] = []
    for mode, k in zip(modes, chosen, strict=False):
        event, new = _supersede_one(persona, rng, candidates[int(k)], mode, taken, end_s)
        events.append(event)
        if new is not None:
            new_specs.append(new)
    return events, new_specs


def _user_deletions(
    rng: np.random.Generator, specs: list[MemorySpec], n: int, end_s: float
) -> list[Event]:
    """Delete a few memories at a random later time (never pinned, never part of a
    supersession); the 'delete' events."""
    deletable = [
        s for s in specs if not s.pinned and s.supersede_mode is None and s.replaced_by is None
    ]
    replacements = {s.replaced_by for s in specs if s.replaced_by}
    deletable = [s for s in deletable if s.id not in replacements]
    n_del = min(len(deletable), round(DELETE_SHARE * n))
    events = []
    for k in rng.choice(len(deletable), size=n_del, replace=False):
        s = deletable[int(k)]
        lo = s.created.timestamp() + 3600.0
        at = datetime.fromtimestamp(float(np.floor(rng.uniform(min(lo, end_s), end_s))), UTC)
        s.deleted_at = at
        events.append(Event(at, "delete", s.id))
    return events


def _access_counts(
    persona: Persona, rng: np.random.Generator, specs: list[MemorySpec], end_s: float
) -> None:
    """Set final contents and access counts: higher for important memories of active projects
    and topics, growing with the memory's live age."""
    shares = dict(
        zip(persona.project_names, persona.shares(1.0) * len(persona.projects), strict=True)
    )
    for s in specs:
        if not s.final_content:
            s.final_content = s.content
        until = min([end_s, *(t.timestamp() for t in (s.stale_since, s.deleted_at) if t)])
        age_days = max(until - s.created.timestamp(), 0.0) / 86_400.0
        if s.project is None:
            pull = 1.5
        else:
            p = persona.project(s.project)
            tw = np.asarray(p.topic_weights, float)
            k = [t.name for t in p.topics].index(s.topic)
            pull = shares[s.project] * tw[k] / tw.mean()
        lam = (0.3 + 6.0 * s.importance * pull) * min(age_days / 30.0, 1.0)
        s.access_count = int(rng.poisson(lam))
        if s.access_count:
            when = rng.uniform(s.created.timestamp(), max(until, s.created.timestamp() + 1))
            s.last_accessed = datetime.fromtimestamp(float(np.floor(when)), UTC)


def _no_embedding(rng: np.random.Generator, specs: list[MemorySpec], n: int) -> set[str]:
    """The ids of a few live memories left without an embedding, so the text path matters."""
    n_plain = max(MIN_NO_EMBEDDING, round(NO_EMBEDDING_SHARE * n))
    live = [s for s in specs if s.deleted_at is None]
    picks = rng.choice(len(live), size=min(n_plain, len(live)), replace=False)
    return {live[int(k)].id for k in picks}


def _usefulness(seed: int, specs: list[MemorySpec]) -> None:
    """Each memory's hidden usefulness, in insertion order from a stream of its own."""
    rng = np.random.default_rng([int(seed), _STREAM, _USEFULNESS_STREAM])
    for s, u in zip(specs, rng.uniform(1.0 - USEFULNESS_SPREAD, 1.0, len(specs)), strict=True):
        s.usefulness = round(float(u), 4)


def plan_store(persona: Persona, seed: int = 0) -> StorePlan:
    """The full, deterministic layout of a persona's store (nothing is written)."""
    rng = np.random.default_rng([int(seed), _STREAM])
    now = reference_now(seed)
    end_s = now.timestamp()
    start_s = end_s - persona.span_days * 86_400.0
    n = persona.n_memories
    taken: set[str] = set()

    modes = _pick(rng, dict(persona.supersede_modes), round(persona.supersede_share * n))
    specs = _base_specs(
        persona, rng, n - sum(m != "in_place" for m in modes), start_s, end_s, taken
    )
    _pin(rng, specs, n)
    events, new_specs = _supersessions(persona, rng, specs, modes, taken, end_s)
    # top up when too few memories could be superseded, so the row count is exact
    missing = n - len(specs) - len(new_specs)
    if missing > 0:
        specs += _base_specs(persona, rng, missing, start_s, end_s, taken)
    specs = sorted(specs + new_specs, key=lambda s: (s.created, s.id))
    events += _user_deletions(rng, specs, n, end_s)
    events.sort(key=lambda e: (e.at, e.memory_id))
    _access_counts(persona, rng, specs, end_s)
    _usefulness(seed, specs)
    plan = StorePlan(persona, int(seed), now, specs, events, _no_embedding(rng, specs, n))
    return _with_graph(plan, datetime.fromtimestamp(start_s, UTC)) if persona.graph else plan


def _with_graph(plan: StorePlan, start: datetime) -> StorePlan:
    """The plan with its knowledge graph (`graph.plan_graph`, a random stream of its own) and
    the memory texts (and in-place rewrites) that name the graph's entities."""
    graph = plan_graph(plan.persona, plan.seed, plan.specs, start)
    for s in plan.specs:
        if s.id in graph.texts:
            s.content, s.final_content = graph.texts[s.id]
    events = [
        dataclasses.replace(e, new_content=graph.texts[e.memory_id][1])
        if e.kind == "in_place" and e.memory_id in graph.texts
        else e
        for e in plan.events
    ]
    return dataclasses.replace(plan, events=events, graph=graph)


# --- writing ----------------------------------------------------------------------------------


def _memory_rows(plan: StorePlan) -> list[dict]:
    return [
        {
            "id": s.id,
            "type": s.type,
            "content": s.content,
            "confidence": 0.9,
            "importance": s.importance,
            "source_type": "session_end",
            "tags": ",".join(t for t in (s.topic, s.project, s.time_pattern) if t),
            "who": "pipeline-v2",
            "why": "extracted-fact",
            "project": s.project,
            "created_at": s.created,
            "updated_at": s.created,
            "updated_by": "pipeline-v2",
            "last_accessed": format_sqlite(s.last_accessed) if s.last_accessed else None,
            "access_count": s.access_count,
            "pinned": s.pinned,
            "extraction_status": "completed",
            "extraction_model": "synth",
        }
        for s in plan.specs
    ]


def _apply(con: sqlite3.Connection, plan: StorePlan, specs_by_id: dict[str, MemorySpec]) -> None:
    for e in plan.events:
        if e.kind == "in_place":
            supersede_memory(con, e.memory_id, e.new_content or "", e.at)
        elif e.kind == "soft_delete":
            soft_delete(con, e.memory_id, e.at, changed_by="pipeline-v2", reason="superseded")
        elif e.kind == "attribute" and plan.graph is not None:
            continue  # the graph holds this supersession: its old attribute is 'superseded'
        elif e.kind == "attribute":
            old = specs_by_id[e.memory_id]
            supersede_attribute(
                con,
                e.memory_id,
                e.new_id or "",
                e.at,
                entity_name=old.project or "user",
                entity_type="project" if old.project else "person",
                aspect_name=f"{old.topic} {old.fields['obj']}",
            )
        elif e.kind == "delete":
            soft_delete(con, e.memory_id, e.at, changed_by="user", reason="deleted by user")
        else:  # pragma: no cover - plan_store makes only the kinds above
            raise ValueError(f"unknown event kind {e.kind!r}")


def _embedder(embedder: str | Embedder, seed: int) -> Embedder:
    """The embedder called "topic" (the seeded topic-vector generator) or any registered text
    embedder (`embed.get_embedder`, e.g. "wordllama")."""
    if not isinstance(embedder, str):
        return embedder
    if embedder == "topic":
        return TopicEmbedder(seed)
    return get_embedder(embedder)


def _meta(plan: StorePlan, embedder: Embedder) -> dict[str, str]:
    return {
        "seed": str(plan.seed),
        "embedder": embedder.name,
        "embedding_dim": str(embedder.dim),
        "usefulness_spread": str(USEFULNESS_SPREAD),
        "n_memories": str(len(plan.specs)),
        "span_days": str(plan.persona.span_days),
        "generator": "signet_bench.world.synth v2",
    }


def _summary(plan: StorePlan, path: Path, embedder: Embedder, n_embedded: int) -> str:
    specs = plan.specs
    by_type = Counter(s.type for s in specs)
    by_project = Counter(s.project or "global" for s in specs)
    modes = Counter(s.supersede_mode for s in specs if s.supersede_mode)
    n_deleted = sum(1 for s in specs if s.deleted_at)
    n_user_deleted = sum(1 for e in plan.events if e.kind == "delete")
    persona = plan.persona
    start = plan.now - timedelta(days=persona.span_days)

    def fmt(c: Counter) -> str:
        return ", ".join(f"{k} {v:,}" for k, v in c.most_common())

    return (
        f"Wrote persona '{persona.name}' (seed {plan.seed}) to {path}: {len(specs):,} memories "
        f"created {format_iso(start)[:10]} .. {format_iso(plan.now)[:10]} "
        f"(reference now {format_iso(plan.now)}, {persona.tz}). By type: {fmt(by_type)}. "
        f"By project: {fmt(by_project)}. {sum(s.pinned for s in specs)} pinned, "
        f"{sum(1 for s in specs if s.time_pattern)} time-patterned; "
        f"{sum(modes.values())} superseded ({modes['in_place']} in place with a memories_cold "
        f"archive, {modes['soft_delete']} soft-deleted with a new row, {modes['attribute']} "
        f"left live with a superseded entity attribute); {n_deleted} soft-deleted in all "
        f"({n_user_deleted} by the user). {n_embedded:,} embeddings ({embedder.name}, "
        f"{embedder.dim}-d); {len(plan.no_embedding)} memories without an embedding. Truth in "
        f"synth_persona / synth_memory_truth."
        + (_graph_summary(plan.graph) if plan.graph is not None else "")
    )


def _graph_summary(graph: WorldGraph) -> str:
    """One sentence on the knowledge graph of a store that has one."""
    types = Counter(e.entity_type for e in graph.entities)
    strong = sum(traversable(d.strength, d.confidence) for d in graph.dependencies)
    n_constraints = sum(a.kind == "constraint" for a in graph.attributes)
    return (
        f" Knowledge graph: {len(graph.entities)} entities ({types['project']} projects,"
        f" {types['system']} services, {types['tool']} libraries, {types['person']} people;"
        f" {sum(e.pinned for e in graph.entities)} pinned), {len(graph.dependencies)}"
        f" dependencies ({strong} traversable), {len(graph.attributes):,} attributes"
        f" ({n_constraints} constraints), {len(graph.mentions):,} mentions; its truth in"
        f" synth_graph_entities / synth_graph_edges / synth_graph_attachments."
    )


def build_persona_store(
    persona: str | Persona,
    out: str | Path,
    *,
    seed: int = 0,
    n_memories: int | None = None,
    embedder: str | Embedder | None = None,
    schema: str = "0.58",
) -> str:
    """Write a new synthetic store at `out` (never overwrites) and return a one-paragraph
    summary of what it holds. `embedder` (default: the persona's own, `Persona.embedder`):
    "topic", a registered embedder name such as "wordllama", or an `Embedder`. `schema`: the
    store's release line, "0.58" (default) or "current" (Signet 0.145.7's tables)."""
    check_release_line(schema)
    if isinstance(persona, str):
        persona = get_persona(persona, n_memories)
    elif n_memories is not None:
        persona = dataclasses.replace(persona, n_memories=int(n_memories))
    path = Path(out)
    if path.exists():
        raise UserError(f"{path}: already exists; refusing to overwrite a store (pick a new --out)")
    with tqdm(
        total=5, desc=f"synth {persona.name}", disable=not sys.stderr.isatty(), leave=False
    ) as bar:
        plan = plan_store(persona, seed)
        bar.update()
        emb = _embedder(persona.embedder if embedder is None else embedder, seed)
        embedded = [s for s in plan.specs if s.id not in plan.no_embedding]
        vectors = emb.embed([s.final_content for s in embedded])
        bar.update()
        with new_store(path, now=plan.now, schema=schema) as con, transaction(con):
            insert_memories(con, _memory_rows(plan))
            if plan.graph is not None:
                write_graph(con, plan.graph)
            bar.update()
            _apply(con, plan, {s.id: s for s in plan.specs})
            bar.update()
            n_embedded = insert_embeddings(con, [s.id for s in embedded], vectors, emb.name)
            save_truth(con, plan.persona, plan.truth(), _meta(plan, emb))
            bar.update()
    return _summary(plan, path, emb, n_embedded)
