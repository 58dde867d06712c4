"""Planted ground truth: how relevant each memory really is to a session, and where it is stored.

`true_relevance(truth, ctx)` (vectorised over memories) is, for a memory that exists and is
current at the session start:

    base    = topic/project match: TOPIC_MATCH if same project and the session's focus topic,
              SAME_PROJECT for another topic of the project, GLOBAL for a global preference,
              SAME_TOPIC_OTHER_PROJECT / OTHER_PROJECT for memories of other projects;
    time    = a time-patterned memory of this project (or global) inside its window:
              base = max(base, IN_WINDOW); outside its window: base *= OUT_OF_WINDOW;
    recency = decision/fact decay with a type half-life: RECENCY_FLOOR + (1 - RECENCY_FLOOR)
              * 0.5 ** (age_days / half_life); preference/procedural/constraint do not decay;
    weight  = 1 - IMPORTANCE_WEIGHT * (1 - importance)   (mild: 0.7 .. 1);
    useful  = the memory's latent usefulness, drawn once per memory in [1 - spread, 1] and
              stored only in the truth table (no feature, text or embedding shows it);
    relevance = base * recency * weight * useful, in [0, 1].

A memory superseded by the session start scores STALE + STALE_SLOPE * relevance (about -0.3,
below every current memory); one deleted by the user scores DELETED (-0.5); one created after
the session start scores NOT_YET (0). The truth is stored next to the memories in two extra
tables that Signet readers ignore: `synth_persona` (key/value: persona JSON, seed, reference
now, embedder) and `synth_memory_truth` (one row per `memories` row).

What a ranker cannot compute from its inputs: the session's focus topic (the context is the
previous session of the project, whose topic the session keeps only with probability
`sessions.TOPIC_PERSISTENCE`) and each memory's latent usefulness. `variance_shares` says how
much of the truth each planted effect carries.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from signet_bench.errors import UserError
from signet_bench.store.read import open_readonly
from signet_bench.store.timestamps import format_iso, parse_ts
from signet_bench.world.synth.persona import Persona

if TYPE_CHECKING:
    from signet_bench.world.synth.plans import SessionContext

__all__ = [
    "ALL_HOURS_MASK",
    "ALL_WEEKDAYS_MASK",
    "EFFECTS",
    "HALF_LIFE_DAYS",
    "TRUTH_DDL",
    "MemoryTruth",
    "live_rows",
    "load_truth",
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
)
"""The planted effects `true_relevance(..., without=...)` can switch off, each to its absence:
topic (no memory matches the focus topic), project (the truth no longer tells projects apart:
every project's memories count as the session's project's), global (global memories count as
another project's), time (no time windows), recency (no decay), importance (weight 1),
usefulness (every memory fully useful), stale (superseded memories count as current), deleted
(deleted memories count as live)."""

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


@dataclass(frozen=True, eq=False)
class MemoryTruth:
    """Per-memory truth parameters as parallel arrays (one entry per `memories` row).

    Times are UTC epoch seconds; `inf` means never (not stale, not deleted, no decay).
    Strings are object arrays with "" for none. `supersede_mode` is 'in_place' on a row that
    was rewritten (its content is current), 'soft_delete' / 'attribute' on the old row of a
    pair whose replacement is a separate row (`replaced_by`). `usefulness` (None: all 1) is the
    hidden per-memory factor of the relevance.
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

    def __post_init__(self) -> None:
        u = np.ones(len(self.ids)) if self.usefulness is None else self.usefulness
        object.__setattr__(self, "usefulness", np.asarray(u, dtype=np.float64))

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
        kw = {
            f.name: getattr(self, f.name)[idx] if f.name != "now" else self.now
            for f in fields(self)
        }  # usefulness is an array here (see __post_init__)
        return MemoryTruth(**kw)


def _effects_off(without: Collection[str]) -> frozenset[str]:
    off = frozenset(without)
    unknown = off - set(EFFECTS)
    if unknown:
        raise ValueError(f"unknown effects {sorted(unknown)}; valid: {', '.join(EFFECTS)}")
    return off


def _base(truth: MemoryTruth, ctx: SessionContext, off: frozenset[str]) -> np.ndarray:
    """Topic/project/global match, then the time windows (see the module docstring)."""
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
    truth: MemoryTruth, plans: Sequence[SessionContext], pools: Sequence[np.ndarray] | None
) -> np.ndarray:
    """v[mask]: the truth's within-session variance explained by the truth with only the
    effects whose bit is set in `mask` switched on, summed over the sessions."""
    n = len(EFFECTS)
    v = np.zeros(1 << n)
    for i, ctx in enumerate(plans):
        rows = live_rows(truth, ctx) if pools is None else np.asarray(pools[i], dtype=np.int64)
        if len(rows) < 2:
            continue
        sub = truth.take(rows)
        full = true_relevance(sub, ctx)
        for mask in range(1 << n):
            off = [e for k, e in enumerate(EFFECTS) if not (mask >> k) & 1]
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
    v = _coalition_values(truth, plans, pools)
    full = v[-1]
    if full <= 0.0:
        raise ValueError("variance_shares: the truth does not vary within any session")
    n = len(EFFECTS)
    size = np.array([m.bit_count() for m in range(1 << n)])
    weight = np.array([math.factorial(k) * math.factorial(n - k - 1) for k in range(n)])
    weight = weight / math.factorial(n)
    shares = {}
    for k, effect in enumerate(EFFECTS):
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
    return Persona.from_json(meta["persona"]), truth
