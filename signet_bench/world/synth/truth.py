"""Planted ground truth: how relevant each memory really is to a session, and where it is stored.

`true_relevance(truth, ctx)` (vectorised over memories) is, for a memory that exists and is
current at the session start:

    base    = topic/project match: TOPIC_MATCH if same project and the session's focus topic,
              SAME_PROJECT for another topic of the project, GLOBAL for a global preference,
              SAME_TOPIC_OTHER_PROJECT / OTHER_PROJECT for memories of other projects;
    graph   = for a store with a knowledge graph (`synth.graph`), through the entity a memory
              is an attribute of (its subject): base = max(base, level), where level is
              REQUIRED for a constraint of a focal entity, FOCAL for any other attribute of
              one, NEIGHBOUR for an attribute of an entity one traversable dependency away
              from a focal entity (confidence x strength >= 0.3 and confidence >= the
              minimum, `graph.traversable`), else 0. A session's focal entities are what a
              daemon can observe: the entity named after the session's project, the pinned
              entities, and the home service of the session's project and focus topic, which
              the session's prompts and transcript name;
    time    = a time-patterned memory of this project (or global) inside its window:
              base = max(base, IN_WINDOW); outside its window: base *= OUT_OF_WINDOW;
    recency = decision/fact decay with a type half-life: RECENCY_FLOOR + (1 - RECENCY_FLOOR)
              * 0.5 ** (age_days / half_life); preference/procedural/constraint do not decay;
    weight  = 1 - IMPORTANCE_WEIGHT * (1 - importance)   (mild: 0.7 .. 1);
    useful  = the memory's latent usefulness, drawn once per memory in [1 - spread, 1] and
              stored only in the truth table (no feature, text or embedding shows it);
    relevance = base * recency * weight * useful, in [0, 1].

One prompt of a session (`prompt_relevance`) keeps the session's relevance for what the prompt
is about (its topic, global memories, the entity it names, the time window it mentions) and
weights the rest by PROMPT_ASIDE.

A memory superseded by the session start scores STALE + STALE_SLOPE * relevance (about -0.3,
below every current memory); one deleted by the user scores DELETED (-0.5); one created after
the session start scores NOT_YET (0). The truth is stored next to the memories in two extra
tables that Signet readers ignore: `synth_persona` (key/value: persona JSON, seed, reference
now, embedder) and `synth_memory_truth` (one row per `memories` row).

What a ranker cannot compute from its inputs: the session's focus topic (the context is the
previous session of the project, whose topic the session keeps only with probability
`sessions.TOPIC_PERSISTENCE`) and each memory's latent usefulness. The graph's truth is kept
in three more tables, written only for a store with a graph: `synth_graph_entities` (each
entity's name, the project and topic that make it focal, pinned), `synth_graph_edges` (every
dependency with its strength and confidence) and `synth_graph_attachments` (each attached
memory's subject and kind). `variance_shares` says how
much of the truth each planted effect carries.
"""

from __future__ import annotations

import dataclasses
import math
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from signet_bench.errors import UserError
from signet_bench.store.read import open_readonly, table_names
from signet_bench.store.timestamps import format_iso, parse_ts
from signet_bench.world.synth.graph import MIN_DEPENDENCY_CONFIDENCE, MIN_DEPENDENCY_STRENGTH
from signet_bench.world.synth.persona import Persona

if TYPE_CHECKING:
    from signet_bench.world.synth.plans import PromptTopic, SessionContext

__all__ = [
    "ALL_HOURS_MASK",
    "ALL_WEEKDAYS_MASK",
    "EFFECTS",
    "GRAPH_TRUTH_DDL",
    "HALF_LIFE_DAYS",
    "TRUTH_DDL",
    "GraphTruth",
    "MemoryTruth",
    "graph_truth",
    "live_rows",
    "load_truth",
    "prompt_relevance",
    "read_synth_meta",
    "save_truth",
    "true_relevance",
    "variance_shares",
]

TOPIC_MATCH = 1.0
SAME_PROJECT = 0.3
GLOBAL = 0.45
SAME_TOPIC_OTHER_PROJECT = 0.15
OTHER_PROJECT = 0.02
IN_WINDOW = 0.85
OUT_OF_WINDOW = 0.05
RECENCY_FLOOR = 0.35
IMPORTANCE_WEIGHT = 0.3
STALE = -0.3
STALE_SLOPE = 0.1
DELETED = -0.5
NOT_YET = 0.0
REQUIRED = 1.0
FOCAL = 0.85
NEIGHBOUR = 0.6
PROMPT_ASIDE = 0.5  # a prompt's weight on what the session needs but the prompt is not about

EFFECTS: tuple[str, ...] = (
    "topic",
    "project",
    "global",
    "time",
    "recency",
    "importance",
    "usefulness",
    "stale",
    "deleted",
    "graph",
)
"""The planted effects `true_relevance(..., without=...)` can switch off, each to its absence:
topic (no memory matches the focus topic), project (the truth no longer tells projects apart:
every project's memories count as the session's project's), global (global memories count as
another project's), time (no time windows), recency (no decay), importance (weight 1),
usefulness (every memory fully useful), stale (superseded memories count as current), deleted
(deleted memories count as live), graph (no memory is lifted through the knowledge graph; a
store without a graph has nothing to switch off)."""

HALF_LIFE_DAYS: dict[str, float] = {"fact": 60.0, "decision": 30.0}
"""Types whose relevance decays with age; every other type keeps its relevance."""

ALL_HOURS_MASK = (1 << 24) - 1
ALL_WEEKDAYS_MASK = (1 << 7) - 1

TRUTH_DDL: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS synth_persona (key TEXT PRIMARY KEY, value TEXT)",
    """CREATE TABLE IF NOT EXISTS synth_memory_truth (
        memory_id TEXT PRIMARY KEY,
        project TEXT,
        topic TEXT NOT NULL,
        is_global INTEGER NOT NULL,
        memory_type TEXT NOT NULL,
        importance REAL NOT NULL,
        created_at TEXT NOT NULL,
        hour_mask INTEGER NOT NULL,
        weekday_mask INTEGER NOT NULL,
        time_pattern TEXT,
        half_life_days REAL,
        stale INTEGER NOT NULL,
        stale_since TEXT,
        replaced_by TEXT,
        supersede_mode TEXT,
        deleted INTEGER NOT NULL,
        deleted_at TEXT,
        usefulness REAL NOT NULL DEFAULT 1.0
    )""",
)
"""The two truth tables (`half_life_days` NULL = no decay; `project` NULL = global; a store
written before `usefulness` existed reads as fully useful memories)."""

GRAPH_TRUTH_DDL: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS synth_graph_entities (
        entity_id TEXT PRIMARY KEY,
        name TEXT NOT NULL,
        home_project TEXT,
        home_topic TEXT,
        pinned INTEGER NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS synth_graph_edges (
        source_entity_id TEXT NOT NULL,
        target_entity_id TEXT NOT NULL,
        strength REAL NOT NULL,
        confidence REAL NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS synth_graph_attachments (
        memory_id TEXT PRIMARY KEY,
        entity_id TEXT NOT NULL,
        kind TEXT NOT NULL
    )""",
)
"""The graph's truth tables, only in a store with a knowledge graph (`home_project` NULL:
never focal by its home; `home_topic` NULL: focal whatever the focus topic)."""


@dataclass(frozen=True, eq=False)
class GraphTruth:
    """The planted knowledge graph as the truth reads it: per entity (in a fixed order) what
    makes it focal, and every dependency as entity positions with its strength and confidence."""

    entity_ids: np.ndarray  # object
    names: np.ndarray  # object
    home_project: np.ndarray  # object, "" when no session project makes it focal
    home_topic: np.ndarray  # object, "" when focal whatever the focus topic
    pinned: np.ndarray  # bool
    edges: np.ndarray  # (k, 2) int64: source, target
    strength: np.ndarray  # (k,)
    confidence: np.ndarray  # (k,)

    @property
    def traversable(self) -> np.ndarray:
        """(k,) bool: the dependencies a one-hop traversal follows (`graph.traversable`)."""
        return (self.confidence * self.strength >= MIN_DEPENDENCY_STRENGTH) & (
            self.confidence >= MIN_DEPENDENCY_CONFIDENCE
        )

    def focal(self, project: str, topic: str) -> np.ndarray:
        """(entities,) bool: the focal entities of a session of `project` on `topic`."""
        home = (self.home_project == project) & (
            (self.home_topic == "") | (self.home_topic == topic)
        )
        return home | self.pinned

    def neighbours(self, focal: np.ndarray) -> np.ndarray:
        """(entities,) bool: the entities one traversable dependency away from a focal one,
        the focal ones left out."""
        out = np.zeros(len(focal), dtype=bool)
        edges = self.edges[self.traversable]
        out[edges[focal[edges[:, 0]], 1]] = True
        return out & ~focal

    def topic_names(self, project: str, topic: str) -> list[str]:
        """The names of the entities focal through the session's focus topic (what its
        prompts and transcript name)."""
        home = (self.home_project == project) & (self.home_topic == topic)
        return [str(n) for n in self.names[home]]


EntityRow = tuple[str, str, str | None, str | None, int]  # id, name, home project/topic, pinned
EdgeRow = tuple[str, str, float, float]  # source id, target id, strength, confidence
AttachmentRow = tuple[str, str, str]  # memory id, entity id, kind


def graph_truth(
    entities: Sequence[EntityRow],
    edges: Sequence[EdgeRow],
    attachments: Sequence[AttachmentRow],
    memory_ids: np.ndarray,
) -> tuple[GraphTruth, np.ndarray, np.ndarray]:
    """The graph's truth from its rows (as `GRAPH_TRUTH_DDL` stores them), with each of
    `memory_ids`' subject position (-1: none) and constraint flag."""
    pos = {row[0]: k for k, row in enumerate(entities)}

    def col(k: int) -> np.ndarray:
        return np.array([row[k] or "" for row in entities], dtype=object)

    graph = GraphTruth(
        entity_ids=col(0),
        names=col(1),
        home_project=col(2),
        home_topic=col(3),
        pinned=np.array([bool(row[4]) for row in entities], dtype=bool),
        edges=np.array([(pos[a], pos[b]) for a, b, _, _ in edges], dtype=np.int64).reshape(-1, 2),
        strength=np.array([e[2] for e in edges], dtype=np.float64),
        confidence=np.array([e[3] for e in edges], dtype=np.float64),
    )
    at = {m: (pos[e], kind == "constraint") for m, e, kind in attachments}
    subject = np.array([at.get(m, (-1, False))[0] for m in memory_ids], dtype=np.int64)
    constraint = np.array([at.get(m, (-1, False))[1] for m in memory_ids], dtype=bool)
    return graph, subject, constraint


def _graph_rows(truth: MemoryTruth) -> tuple[list[EntityRow], list[EdgeRow], list[AttachmentRow]]:
    """The rows `graph_truth` reads, from a truth with a graph."""
    g, sub, con = truth.graph, truth.subject, truth.constraint
    if g is None or sub is None or con is None:
        raise ValueError("_graph_rows: the truth has no knowledge graph")
    ents = [
        (
            str(g.entity_ids[k]),
            str(g.names[k]),
            str(g.home_project[k]) or None,
            str(g.home_topic[k]) or None,
            int(g.pinned[k]),
        )
        for k in range(len(g.entity_ids))
    ]
    edges = [
        (str(g.entity_ids[a]), str(g.entity_ids[b]), float(st), float(cf))
        for (a, b), st, cf in zip(g.edges, g.strength, g.confidence, strict=True)
    ]
    atts = [
        (str(truth.ids[i]), str(g.entity_ids[sub[i]]), "constraint" if con[i] else "attribute")
        for i in np.flatnonzero(sub >= 0)
    ]
    return ents, edges, atts


@dataclass(frozen=True, eq=False)
class MemoryTruth:
    """Per-memory truth parameters as parallel arrays (one entry per `memories` row).

    Times are UTC epoch seconds; `inf` means never (not stale, not deleted, no decay).
    Strings are object arrays with "" for none. `supersede_mode` is 'in_place' on a row that
    was rewritten (its content is current), 'soft_delete' / 'attribute' on the old row of a
    pair whose replacement is a separate row (`replaced_by`). `usefulness` (None: all 1) is the
    hidden per-memory factor of the relevance. `graph` (None: the store has no knowledge
    graph) with `subject` and `constraint`: the entity each memory is an attribute of.
    """

    ids: np.ndarray
    project: np.ndarray
    topic: np.ndarray
    is_global: np.ndarray
    memory_type: np.ndarray
    importance: np.ndarray
    created_s: np.ndarray
    hour_mask: np.ndarray
    weekday_mask: np.ndarray
    time_pattern: np.ndarray
    half_life_days: np.ndarray
    stale_since_s: np.ndarray
    deleted_at_s: np.ndarray
    replaced_by: np.ndarray
    supersede_mode: np.ndarray
    now: datetime
    usefulness: np.ndarray | None = None
    graph: GraphTruth | None = None
    subject: np.ndarray | None = None  # int64 entity position in `graph`, -1 for none
    constraint: np.ndarray | None = None  # bool: the memory is a constraint of its subject

    def __post_init__(self) -> None:
        u = np.ones(len(self.ids)) if self.usefulness is None else self.usefulness
        object.__setattr__(self, "usefulness", np.asarray(u, dtype=np.float64))
        if self.graph is not None:
            n = len(self.ids)
            sub = np.full(n, -1) if self.subject is None else self.subject
            con = np.zeros(n, dtype=bool) if self.constraint is None else self.constraint
            object.__setattr__(self, "subject", np.asarray(sub, dtype=np.int64))
            object.__setattr__(self, "constraint", np.asarray(con, dtype=bool))

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def is_time_patterned(self) -> np.ndarray:
        """True where the memory matters only inside an hour/weekday window."""
        return (self.hour_mask != ALL_HOURS_MASK) | (self.weekday_mask != ALL_WEEKDAYS_MASK)

    @property
    def stale(self) -> np.ndarray:
        """Stale at the reference now."""
        return np.isfinite(self.stale_since_s)

    @property
    def deleted(self) -> np.ndarray:
        """Soft-deleted at the reference now (for any reason)."""
        return np.isfinite(self.deleted_at_s)

    def positions(self, memory_ids: list[str] | tuple[str, ...] | np.ndarray) -> np.ndarray:
        """Indices of `memory_ids` in this truth (KeyError for an unknown id)."""
        index = {m: i for i, m in enumerate(self.ids)}
        return np.array([index[m] for m in memory_ids], dtype=np.int64)

    def take(self, idx: np.ndarray) -> MemoryTruth:
        """The truth of a subset of memories (e.g. a session's candidates), in `idx` order."""
        idx = np.asarray(idx, dtype=np.int64)
        kw = {}
        for f in fields(self):
            v = getattr(self, f.name)
            kw[f.name] = v if f.name in ("now", "graph") or v is None else v[idx]
        return MemoryTruth(**kw)


def _effects_off(without: Collection[str]) -> frozenset[str]:
    off = frozenset(without)
    unknown = off - set(EFFECTS)
    if unknown:
        raise ValueError(f"unknown effects {sorted(unknown)}; valid: {', '.join(EFFECTS)}")
    return off


def _graph_level(truth: MemoryTruth, ctx: SessionContext) -> np.ndarray:
    """Per memory, the level its subject lifts it to: REQUIRED for a constraint of a focal
    entity, FOCAL for another attribute of one, NEIGHBOUR one traversable hop away, else 0."""
    graph, sub = truth.graph, truth.subject
    if graph is None or sub is None or truth.constraint is None:
        return np.zeros(len(truth))
    focal = graph.focal(ctx.project, ctx.focus_topic)
    near = graph.neighbours(focal)
    has = sub >= 0
    at = np.where(has, sub, 0)
    on_focal, on_near = has & focal[at], has & near[at]
    return np.where(
        on_focal, np.where(truth.constraint, REQUIRED, FOCAL), np.where(on_near, NEIGHBOUR, 0.0)
    )


def _base(truth: MemoryTruth, ctx: SessionContext, off: frozenset[str]) -> np.ndarray:
    """Topic/project/global match, the knowledge graph, then the time windows (see the module
    docstring)."""
    none = np.zeros(len(truth), dtype=bool)
    same_project = truth.project != "" if "project" in off else truth.project == ctx.project
    same_topic = none if "topic" in off else truth.topic == ctx.focus_topic
    is_global = none if "global" in off else truth.is_global
    base = np.where(
        is_global,
        GLOBAL,
        np.where(
            same_project,
            np.where(same_topic, TOPIC_MATCH, SAME_PROJECT),
            np.where(same_topic, SAME_TOPIC_OTHER_PROJECT, OTHER_PROJECT),
        ),
    )
    if "graph" not in off and truth.graph is not None:
        base = np.maximum(base, _graph_level(truth, ctx))
    if "time" in off:
        return base
    in_window = ((truth.hour_mask >> ctx.local_hour) & 1).astype(bool) & (
        (truth.weekday_mask >> ctx.local_weekday) & 1
    ).astype(bool)
    patterned = truth.is_time_patterned
    own = same_project | is_global
    base = np.where(patterned & in_window & own, np.maximum(base, IN_WINDOW), base)
    return np.where(patterned & ~in_window, base * OUT_OF_WINDOW, base)


def true_relevance(
    truth: MemoryTruth, ctx: SessionContext, *, without: Collection[str] = ()
) -> np.ndarray:
    """Planted relevance of every memory in `truth` to session `ctx`, in about [-0.5, 1];
    `without` switches planted effects off (names in `EFFECTS`), for `variance_shares`."""
    off = _effects_off(without)
    base = _base(truth, ctx, off)
    t = ctx.start.timestamp()
    age_days = np.maximum(t - truth.created_s, 0.0) / 86_400.0
    with np.errstate(divide="ignore", invalid="ignore"):
        decay = np.where(
            np.isfinite(truth.half_life_days), 0.5 ** (age_days / truth.half_life_days), 1.0
        )
    recency = 1.0 if "recency" in off else RECENCY_FLOOR + (1.0 - RECENCY_FLOOR) * decay
    weight = 1.0 if "importance" in off else 1.0 - IMPORTANCE_WEIGHT * (1.0 - truth.importance)
    useful = 1.0 if "usefulness" in off else truth.usefulness
    rel = base * recency * weight * useful

    stale = truth.stale_since_s <= t
    deleted = (truth.deleted_at_s <= t) & ~stale
    if "stale" not in off:
        rel = np.where(stale, STALE + STALE_SLOPE * rel, rel)
    if "deleted" not in off:
        rel = np.where(deleted, DELETED, rel)
    return np.where(truth.created_s > t, NOT_YET, rel)


def prompt_relevance(truth: MemoryTruth, ctx: SessionContext, about: PromptTopic) -> np.ndarray:
    """Planted relevance of every memory to one prompt of session `ctx`: the session's
    (`true_relevance` at its start) restricted to what the prompt is about. A memory keeps its
    relevance when it is on the prompt's topic (any project), a global preference, an attribute
    of the entity the prompt names, or a memory of the time window it mentions; any other
    positive relevance (another topic of the project, a focal entity the prompt does not name,
    another time window) is weighted by `PROMPT_ASIDE`: the session still needs it, this
    prompt less. Stale, deleted and not-yet memories keep their scores. Without a topic,
    entity or window to restrict by, this is the session's truth."""
    rel = true_relevance(truth, ctx)
    on = (truth.topic == about.topic) | truth.is_global
    if about.time_pattern is not None:
        on |= truth.time_pattern == about.time_pattern
    if about.entity is not None and truth.graph is not None and truth.subject is not None:
        named = np.flatnonzero(truth.graph.names == about.entity)
        on |= np.isin(truth.subject, named)
    return np.where((rel > 0) & ~on, rel * PROMPT_ASIDE, rel)


def live_rows(truth: MemoryTruth, ctx: SessionContext) -> np.ndarray:
    """Indices of the memories a session-start pool can draw from: created by the session
    start and not deleted by then (soft-deleted memories never enter a pool)."""
    t = ctx.start.timestamp()
    return np.flatnonzero((truth.created_s <= t) & ~(truth.deleted_at_s <= t))


def _explained(full: np.ndarray, part: np.ndarray) -> float:
    """The centred sum of squares of `full` that a linear fit on `part` explains."""
    f, p = full - full.mean(), part - part.mean()
    pp = float(p @ p)
    return float(p @ f) ** 2 / pp if pp > 1e-18 else 0.0


def _coalition_values(
    truth: MemoryTruth,
    plans: Sequence[SessionContext],
    pools: Sequence[np.ndarray] | None,
    effects: Sequence[str] = EFFECTS,
) -> np.ndarray:
    """v[mask]: the truth's within-session variance explained by the truth with only the
    `effects` whose bit is set in `mask` switched on (the rest of `EFFECTS` always on),
    summed over the sessions."""
    n = len(effects)
    v = np.zeros(1 << n)
    for i, ctx in enumerate(plans):
        rows = live_rows(truth, ctx) if pools is None else np.asarray(pools[i], dtype=np.int64)
        if len(rows) < 2:
            continue
        sub = truth.take(rows)
        full = true_relevance(sub, ctx)
        for mask in range(1 << n):
            off = [e for k, e in enumerate(effects) if not (mask >> k) & 1]
            v[mask] += _explained(full, true_relevance(sub, ctx, without=off))
    return v


def variance_shares(
    truth: MemoryTruth,
    plans: Sequence[SessionContext],
    pools: Sequence[np.ndarray] | None = None,
) -> dict[str, float]:
    """How much of the truth's within-session variance each planted effect (`EFFECTS`) carries.

    Per session, over its pool (`pools[i]`: indices into `truth`; default `live_rows`, what a
    pool can draw from), a set of effects is worth the share of the truth's variance that the
    truth with only those effects switched on (the others off, to their absence) explains
    (squared correlation, summed over sessions weighted by their variance). An effect's share
    is its Shapley value: its mean gain over every order of switching the effects on (as the
    LMG decomposition of a regression's R²). The shares sum to 1 minus what the truth with
    every effect off still explains (with project and global both off, project memories still
    score SAME_PROJECT and global ones OTHER_PROJECT: a few percent in multi-project pools); the
    effects interact multiplicatively and the Shapley value splits each interaction evenly.
    """
    if pools is not None and len(pools) != len(plans):
        raise ValueError(f"pools: expected one per plan ({len(plans)}), got {len(pools)}")
    # an effect that cannot act on this truth (the graph, in a store without one) changes no
    # coalition's value: its share is 0 and leaving it out halves the coalitions to score
    active = [e for e in EFFECTS if e != "graph" or truth.graph is not None]
    v = _coalition_values(truth, plans, pools, active)
    full = v[-1]
    if full <= 0.0:
        raise ValueError("variance_shares: the truth does not vary within any session")
    n = len(active)
    size = np.array([m.bit_count() for m in range(1 << n)])
    weight = np.array([math.factorial(k) * math.factorial(n - k - 1) for k in range(n)])
    weight = weight / math.factorial(n)
    shares = dict.fromkeys(EFFECTS, 0.0)
    for k, effect in enumerate(active):
        without = np.array([m for m in range(1 << n) if not (m >> k) & 1])
        gain = v[without | (1 << k)] - v[without]
        shares[effect] = float(np.sum(weight[size[without]] * gain) / full)
    return shares


# --- persistence ------------------------------------------------------------------------------


def _ts(seconds: float) -> str | None:
    return format_iso(datetime.fromtimestamp(seconds, UTC)) if np.isfinite(seconds) else None


def _s(text: str | None) -> float:
    return parse_ts(text).timestamp() if text else float("inf")


def save_truth(
    con: sqlite3.Connection,
    persona: Persona,
    truth: MemoryTruth,
    meta: Mapping[str, str],
) -> None:
    """Write the truth tables (inside the caller's transaction); re-running replaces rows."""
    for ddl in TRUTH_DDL:
        con.execute(ddl)
    items = {"persona": persona.to_json(), "now": format_iso(truth.now), **meta}
    con.executemany(
        "INSERT OR REPLACE INTO synth_persona(key, value) VALUES (?, ?)",
        [(k, str(v)) for k, v in items.items()],
    )
    rows = [
        (
            str(truth.ids[i]),
            str(truth.project[i]) or None,
            str(truth.topic[i]),
            int(truth.is_global[i]),
            str(truth.memory_type[i]),
            float(truth.importance[i]),
            _ts(float(truth.created_s[i])),
            int(truth.hour_mask[i]),
            int(truth.weekday_mask[i]),
            str(truth.time_pattern[i]) or None,
            float(truth.half_life_days[i]) if np.isfinite(truth.half_life_days[i]) else None,
            int(np.isfinite(truth.stale_since_s[i])),
            _ts(float(truth.stale_since_s[i])),
            str(truth.replaced_by[i]) or None,
            str(truth.supersede_mode[i]) or None,
            int(np.isfinite(truth.deleted_at_s[i])),
            _ts(float(truth.deleted_at_s[i])),
            float(truth.usefulness[i]),
        )
        for i in range(len(truth))
    ]
    con.executemany(
        "INSERT OR REPLACE INTO synth_memory_truth VALUES "
        "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    if truth.graph is not None:
        for ddl in GRAPH_TRUTH_DDL:
            con.execute(ddl)
        ents, edges, atts = _graph_rows(truth)
        con.execute("DELETE FROM synth_graph_edges")
        con.executemany("INSERT OR REPLACE INTO synth_graph_entities VALUES (?, ?, ?, ?, ?)", ents)
        con.executemany("INSERT INTO synth_graph_edges VALUES (?, ?, ?, ?)", edges)
        con.executemany("INSERT OR REPLACE INTO synth_graph_attachments VALUES (?, ?, ?)", atts)


def _open(path_or_con: str | Path | sqlite3.Connection) -> tuple[sqlite3.Connection, bool]:
    """The connection given, or the store at the path opened read-only (True: close it after)."""
    if isinstance(path_or_con, sqlite3.Connection):
        return path_or_con, False
    return open_readonly(path_or_con), True


def read_synth_meta(path_or_con: str | Path | sqlite3.Connection) -> dict[str, str]:
    """The `synth_persona` key/value table (persona JSON, seed, now, embedder, ...)."""
    con, owned = _open(path_or_con)
    try:
        try:
            return dict(con.execute("SELECT key, value FROM synth_persona").fetchall())
        except sqlite3.OperationalError as exc:
            raise UserError("not a synthetic store: it has no synth_persona table") from exc
    finally:
        if owned:
            con.close()


def load_truth(path_or_con: str | Path | sqlite3.Connection) -> tuple[Persona, MemoryTruth]:
    """Read the persona and the per-memory truth back from a synthetic store."""
    con, owned = _open(path_or_con)
    try:
        meta = read_synth_meta(con)
        columns = {r[1] for r in con.execute("PRAGMA table_info(synth_memory_truth)")}
        useful = "usefulness" if "usefulness" in columns else "1.0"
        rows = con.execute(
            "SELECT memory_id, project, topic, is_global, memory_type, importance, created_at,"
            " hour_mask, weekday_mask, time_pattern, half_life_days, stale_since, replaced_by,"
            f" supersede_mode, deleted_at, {useful} FROM synth_memory_truth ORDER BY rowid"
        ).fetchall()
        graph_rows = _read_graph_rows(con)
    finally:
        if owned:
            con.close()
    cols = list(zip(*rows, strict=True)) if rows else [()] * 16

    def strs(k: int) -> np.ndarray:
        return np.array([v or "" for v in cols[k]], dtype=object)

    truth = MemoryTruth(
        ids=strs(0),
        project=strs(1),
        topic=strs(2),
        is_global=np.array(cols[3], dtype=bool),
        memory_type=strs(4),
        importance=np.array(cols[5], dtype=np.float64),
        created_s=np.array([_s(v) for v in cols[6]], dtype=np.float64),
        hour_mask=np.array(cols[7], dtype=np.int64),
        weekday_mask=np.array(cols[8], dtype=np.int64),
        time_pattern=strs(9),
        half_life_days=np.array(
            [float("inf") if v is None else v for v in cols[10]], dtype=np.float64
        ),
        stale_since_s=np.array([_s(v) for v in cols[11]], dtype=np.float64),
        replaced_by=strs(12),
        supersede_mode=strs(13),
        deleted_at_s=np.array([_s(v) for v in cols[14]], dtype=np.float64),
        now=parse_ts(meta["now"]),
        usefulness=np.array(cols[15], dtype=np.float64),
    )
    if graph_rows is not None:
        graph, subject, constraint = graph_truth(*graph_rows, truth.ids)
        truth = dataclasses.replace(truth, graph=graph, subject=subject, constraint=constraint)
    return Persona.from_json(meta["persona"]), truth


def _read_graph_rows(
    con: sqlite3.Connection,
) -> tuple[list[EntityRow], list[EdgeRow], list[AttachmentRow]] | None:
    """The graph's truth rows of a store that has them (None: a store without a graph)."""
    if "synth_graph_entities" not in table_names(con):
        return None
    return (
        con.execute("SELECT * FROM synth_graph_entities ORDER BY rowid").fetchall(),
        con.execute("SELECT * FROM synth_graph_edges ORDER BY rowid").fetchall(),
        con.execute("SELECT * FROM synth_graph_attachments ORDER BY rowid").fetchall(),
    )
