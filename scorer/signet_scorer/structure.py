"""The knowledge-graph columns of session-start candidates (features 12-16: entity slot, aspect
slot, is constraint, structural density, is KA traversal), computed from a store's graph as
Signet 0.58's inference computes them — the one definition the simulated loop, the trainer, the
skew report and the session-start hook use. Standard library and numpy only.

The rule, per memory:
- **primary attribute**: among its `entity_attributes` rows of the agent with status 'active'
  that belong to an aspect (inner join on `entity_aspects`), the constraint first, then the
  higher importance, then the older `created_at` (compared as text, as Signet orders it), then
  the older row;
- **entity slot** = hashSlot(the aspect's `entity_id`), **aspect slot** = hashSlot(`aspect_id`):
  32-bit FNV-1a over UTF-16 code units, modulo 256 (`signet_scorer.tokenize.hash_slot_32`);
- **is constraint**: the primary attribute's kind is 'constraint';
- **structural density** of the primary entity: its aspects of the agent plus the active
  attributes of kind 'attribute' of the agent in those aspects (`aspectCount +
  attributeCount`); the feature takes ln(x + 1) (`signet_scorer.features`);
- **is traversal**: given by the caller (the candidate came from graph traversal, source
  'ka_traversal'): the graph does not know how a candidate was found.

A memory without a primary attribute gets slots -1, density 0 and no constraint flag (all three
features 0); a store without the graph's tables or the columns the rule reads gives that for
every memory, never an error.

**Recorded or computed** (`session_columns`). Signet's daemon records these columns with each
candidate (`session_memories`) as it computed them when the session started. A session with any
recorded slot keeps its recorded rows (NULL: the memory had no primary attribute then): they are
what was served. A session without one (the simulated daemon's rows, a daemon before the
columns, a store without them) gets the columns computed from the graph as it is when read. The
trainer and the hook both apply this rule, so a session gets the same values in training as in
serving as long as its graph has not changed since; a recorded constraint flag is kept in both
cases.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

import numpy as np

from signet_scorer.tokenize import hash_slot_32
from signet_scorer.workbench import DEFAULT_AGENT

__all__ = [
    "EMPTY_STRUCTURE",
    "MAX_BOUND_IDS",
    "NO_SLOT",
    "GraphColumns",
    "MemoryStructure",
    "read_structure",
    "recorded_structure",
    "session_columns",
    "structure_columns",
]

NO_SLOT = -1.0  # a slot column's value for "no primary attribute" (the feature is then 0)
# Up to this many ids the query filters by them (bound parameters, well below SQLite's oldest
# limit of 999); beyond it, it reads every memory's primary attribute and keeps those asked for.
MAX_BOUND_IDS = 500
_NONE = (NO_SLOT, NO_SLOT, False, 0.0)


@dataclass(frozen=True, slots=True, eq=False)
class GraphColumns:
    """Per-candidate knowledge-graph columns, aligned with the candidates: slots 0..255 (-1 or
    NaN when none), the structural density count (0 when none), and two flags."""

    entity_slot: np.ndarray  # float64
    aspect_slot: np.ndarray  # float64
    structural_density: np.ndarray  # float64
    is_traversal: np.ndarray  # bool
    is_constraint: np.ndarray  # bool: the primary attribute (or the daemon's record) says so

    def __len__(self) -> int:
        return len(self.entity_slot)

    def take(self, idx: np.ndarray) -> GraphColumns:
        """The columns of the candidates `idx` (positions or a boolean mask)."""
        return GraphColumns(*(getattr(self, f.name)[idx] for f in fields(self)))

    def recorded(self, i: int) -> dict[str, int | None]:
        """Candidate `i`'s slots and density as the daemon records them with it in
        `session_memories` (`entity_slot`, `aspect_slot`, `structural_density`; NULL for a
        memory without a primary attribute)."""
        entity, aspect = float(self.entity_slot[i]), float(self.aspect_slot[i])
        if not (np.isfinite(entity) and entity >= 0):
            return {"entity_slot": None, "aspect_slot": None, "structural_density": None}
        return {
            "entity_slot": int(entity),
            "aspect_slot": int(aspect) if np.isfinite(aspect) and aspect >= 0 else None,
            "structural_density": int(self.structural_density[i]),
        }

    @classmethod
    def none(cls, n: int, traversal: Sequence[bool] | np.ndarray | None = None) -> GraphColumns:
        """`n` candidates without a primary attribute, with the given traversal flags."""
        return cls(
            entity_slot=np.full(n, NO_SLOT),
            aspect_slot=np.full(n, NO_SLOT),
            structural_density=np.zeros(n),
            is_traversal=_traversal(traversal, n),
            is_constraint=np.zeros(n, dtype=bool),
        )


def _traversal(flags: Sequence[bool] | np.ndarray | None, n: int) -> np.ndarray:
    """The traversal flags as an (n,) bool array (none given: all False)."""
    if flags is None:
        return np.zeros(n, dtype=bool)
    out = np.asarray(flags, dtype=bool).reshape(-1)
    if len(out) != n:
        raise ValueError(f"traversal flags: expected {n} (one per candidate), got {len(out)}")
    return out


@dataclass(frozen=True, slots=True)
class MemoryStructure:
    """What the graph says of each memory it read: id -> (entity slot, aspect slot, is
    constraint, structural density) of its primary attribute; a memory absent has none."""

    by_id: Mapping[str, tuple[float, float, bool, float]]

    def columns(
        self, memory_ids: Sequence[str], traversal: Sequence[bool] | np.ndarray | None = None
    ) -> GraphColumns:
        """The candidates' columns (aligned with `memory_ids`), with the caller's traversal
        flags (True: the candidate came from graph traversal; None: none did)."""
        rows = [self.by_id.get(str(m), _NONE) for m in memory_ids]
        n = len(rows)
        return GraphColumns(
            entity_slot=np.fromiter((r[0] for r in rows), dtype=np.float64, count=n),
            aspect_slot=np.fromiter((r[1] for r in rows), dtype=np.float64, count=n),
            structural_density=np.fromiter((r[3] for r in rows), dtype=np.float64, count=n),
            is_traversal=_traversal(traversal, n),
            is_constraint=np.fromiter((r[2] for r in rows), dtype=bool, count=n),
        )


EMPTY_STRUCTURE = MemoryStructure({})


def _graph_columns(con: sqlite3.Connection) -> dict[str, set[str]]:
    """The columns of the graph's two tables the store has (a table absent: not a key)."""
    sql = (
        "SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p "
        "WHERE m.type = 'table' AND m.name IN ('entity_attributes', 'entity_aspects')"
    )
    out: dict[str, set[str]] = {}
    for table, column in con.execute(sql):
        out.setdefault(table, set()).add(column)
    return out


def _structure_sql(attr: set[str], asp: set[str], id_filter: str) -> str:
    """The one statement: each memory's primary attribute with its entity's density. Optional
    columns take Signet's defaults (kind 'attribute', importance 0.5, status 'active'); without
    an `agent_id` column every row is the agent's."""
    kind = "ea.kind" if "kind" in attr else "'attribute'"
    importance = "ea.importance" if "importance" in attr else "0.5"
    created = "ea.created_at" if "created_at" in attr else "''"
    active = "ea.status = 'active'" if "status" in attr else "1"
    ea_agent = "ea.agent_id = :agent" if "agent_id" in attr else "1"
    asp_agent = "asp.agent_id = :agent" if "agent_id" in asp else "1"
    return f"""
        WITH ranked AS (
            SELECT ea.memory_id AS memory_id, {kind} AS kind, ea.aspect_id AS aspect_id,
                   asp.entity_id AS entity_id,
                   ROW_NUMBER() OVER (
                       PARTITION BY ea.memory_id
                       ORDER BY CASE {kind} WHEN 'constraint' THEN 0 ELSE 1 END,
                                {importance} DESC, {created} ASC, ea.rowid ASC
                   ) AS k
            FROM entity_attributes AS ea JOIN entity_aspects AS asp ON asp.id = ea.aspect_id
            WHERE ea.memory_id IS NOT NULL AND {id_filter} AND {ea_agent} AND {active}
        ),
        chosen AS (SELECT memory_id, kind, aspect_id, entity_id FROM ranked WHERE k = 1),
        aspects AS (
            SELECT asp.entity_id AS entity_id, COUNT(*) AS n FROM entity_aspects AS asp
            WHERE asp.entity_id IN (SELECT entity_id FROM chosen) AND {asp_agent}
            GROUP BY asp.entity_id
        ),
        attributes AS (
            SELECT asp.entity_id AS entity_id, COUNT(*) AS n
            FROM entity_attributes AS ea JOIN entity_aspects AS asp ON asp.id = ea.aspect_id
            WHERE asp.entity_id IN (SELECT entity_id FROM chosen) AND {asp_agent}
              AND {ea_agent} AND {kind} = 'attribute' AND {active}
            GROUP BY asp.entity_id
        )
        SELECT c.memory_id, c.kind, c.aspect_id, c.entity_id,
               COALESCE(a.n, 0) + COALESCE(t.n, 0)
        FROM chosen AS c
        LEFT JOIN aspects AS a ON a.entity_id = c.entity_id
        LEFT JOIN attributes AS t ON t.entity_id = c.entity_id"""


def _slot(value: object) -> float:
    """hashSlot of an id as Signet's daemon takes it (its text), -1 for none."""
    return NO_SLOT if value is None else float(hash_slot_32(str(value)))


def read_structure(
    con: sqlite3.Connection,
    memory_ids: Sequence[str] | None = None,
    *,
    agent_id: str = DEFAULT_AGENT,
) -> MemoryStructure:
    """The primary-attribute columns of the memories `memory_ids` (None: every memory with
    one) for `agent_id`, from the store's graph as it is now, in one statement."""
    if memory_ids is not None and len(memory_ids) == 0:
        return EMPTY_STRUCTURE
    cols = _graph_columns(con)
    attr, asp = cols.get("entity_attributes", set()), cols.get("entity_aspects", set())
    if not {"memory_id", "aspect_id"} <= attr or not {"id", "entity_id"} <= asp:
        return EMPTY_STRUCTURE
    params: dict[str, object] = {"agent": agent_id}
    wanted = None if memory_ids is None else {str(m) for m in memory_ids}
    id_filter = "1"
    if wanted is not None and len(wanted) <= MAX_BOUND_IDS:
        names = [f":m{i}" for i in range(len(wanted))]
        params.update(zip((n[1:] for n in names), sorted(wanted), strict=True))
        id_filter = f"ea.memory_id IN ({', '.join(names)})"
    out: dict[str, tuple[float, float, bool, float]] = {}
    for mid, kind, aspect_id, entity_id, density in con.execute(
        _structure_sql(attr, asp, id_filter), params
    ):
        key = str(mid)
        if wanted is None or key in wanted:
            out[key] = (_slot(entity_id), _slot(aspect_id), kind == "constraint", float(density))
    return MemoryStructure(out)


def structure_columns(
    con: sqlite3.Connection,
    memory_ids: Sequence[str],
    traversal: Sequence[bool] | np.ndarray | None = None,
    *,
    agent_id: str = DEFAULT_AGENT,
) -> GraphColumns:
    """The knowledge-graph columns of the candidates `memory_ids` (in that order) computed from
    the store's graph (module docstring), in one statement. `traversal`: one flag per candidate,
    True when it came from graph traversal (Signet's source 'ka_traversal'); None: none did."""
    ids = [str(m) for m in memory_ids]
    return read_structure(con, ids, agent_id=agent_id).columns(ids, traversal)


def recorded_structure(entity_slot: np.ndarray, aspect_slot: np.ndarray) -> bool:
    """Whether a session's recorded rows carry the daemon's structural columns: any row with an
    entity or aspect slot (NULL read as -1 or NaN is none)."""
    slots = np.concatenate(
        [np.asarray(entity_slot, dtype=np.float64), np.asarray(aspect_slot, dtype=np.float64)]
    )
    return bool(np.any(np.isfinite(slots) & (slots >= 0)))


def session_columns(
    recorded: GraphColumns, memory_ids: Sequence[str], structure: MemoryStructure | None
) -> GraphColumns:
    """A session's columns by the rule of the module docstring: its `recorded` rows when they
    carry any slot, else computed from `structure` (the graph read for its `memory_ids`) with
    the recorded traversal flags, and the recorded constraint flag kept. No `structure`: the
    recorded rows as they are."""
    if len(memory_ids) != len(recorded):
        raise ValueError(f"{len(memory_ids)} memory ids for {len(recorded)} recorded rows")
    if structure is None or recorded_structure(recorded.entity_slot, recorded.aspect_slot):
        return recorded
    computed = structure.columns(memory_ids, recorded.is_traversal)
    return GraphColumns(
        entity_slot=computed.entity_slot,
        aspect_slot=computed.aspect_slot,
        structural_density=computed.structural_density,
        is_traversal=computed.is_traversal,
        is_constraint=computed.is_constraint | np.asarray(recorded.is_constraint, dtype=bool),
    )
