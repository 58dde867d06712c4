"""A store's knowledge graph as aligned arrays, read once, read-only and by column name.

Signet keeps the graph in `entities`, `entity_aspects`, `entity_attributes` (kind 'attribute'
or 'constraint', each pointing at a memory), `entity_dependencies` (current Signet; 0.58 stores
have `relations` instead) and `memory_entity_mentions`. The session start walks it
(`daemon.ranking.traversal`). Tables or columns a store lacks are skipped (a missing optional
column reads as Signet's default) and `EntityGraph.note` says what is missing. Only the default
agent's rows are read. A store whose graph tables are empty (or absent) gives a graph without
entities (`has_graph` false): the session start then runs exactly as without a graph.

Entity references are positions: `aspect_entity`, `attr_aspect`, `attr_entity`, `dep_source`,
`dep_target` and `mention_entity` index the entity (or aspect) arrays, -1 where the row points at
nothing the graph holds (such rows are kept only where they still say something: an attribute's
importance counts for its memory's traversal score whatever its aspect).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from signet_bench.store.errors import StoreTimestampError
from signet_bench.store.read import open_readonly, quote_ident, table_names
from signet_bench.store.timestamps import TimestampError, parse_ts
from signet_scorer.workbench import DEFAULT_AGENT

__all__ = ["GRAPH_TABLES", "EntityGraph", "read_graph"]

GRAPH_TABLES = (
    "entities",
    "entity_aspects",
    "entity_attributes",
    "entity_dependencies",
    "relations",
    "memory_entity_mentions",
)

# table -> (required columns, optional column -> SQL default when absent or NULL)
_Spec = tuple[tuple[str, ...], Mapping[str, str]]
_SPECS: dict[str, _Spec] = {
    "entities": (
        ("id", "name"),
        {
            "canonical_name": "NULL",
            "entity_type": "NULL",
            "pinned": "0",
            "pinned_at": "NULL",
            "updated_at": "NULL",
            "mentions": "0",
        },
    ),
    "entity_aspects": (("id", "entity_id"), {"weight": "0.5"}),
    "entity_attributes": (
        ("memory_id",),
        {
            "id": "NULL",
            "aspect_id": "NULL",
            "kind": "'attribute'",
            "importance": "0.5",
            "status": "'active'",
            "updated_at": "NULL",
        },
    ),
    "entity_dependencies": (
        ("source_entity_id", "target_entity_id"),
        {"id": "NULL", "strength": "0.5", "confidence": "NULL"},
    ),
    "relations": (
        ("source_entity_id", "target_entity_id"),
        {"id": "NULL", "strength": "1.0", "confidence": "NULL"},
    ),
    "memory_entity_mentions": (("memory_id", "entity_id"), {"confidence": "NULL"}),
}
_NULLABLE_DEFAULTS = {"canonical_name", "entity_type", "pinned_at", "updated_at", "id"}
_NULLABLE_DEFAULTS |= {"aspect_id", "confidence"}

_NODE_TABLES = ("entities", "entity_aspects", "entity_attributes", "memory_entity_mentions")
_ANY = np.zeros(0, dtype=object)


def _objects(values: Sequence[Any]) -> np.ndarray:
    return np.asarray(list(values), dtype=object) if values else _ANY.copy()


def _floats(values: Sequence[Any]) -> np.ndarray:
    return np.asarray([np.nan if v is None else float(v) for v in values], dtype=np.float64)


def _positions(keys: Sequence[Any], of: Mapping[str, int]) -> np.ndarray:
    return np.fromiter((of.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))


def canonical(name: str) -> str:
    """Signet's canonical entity name: lower-cased, trimmed, inner spaces collapsed."""
    return " ".join(str(name).lower().split())


@dataclass(frozen=True, eq=False)
class EntityGraph:
    """The default agent's knowledge graph (arrays aligned per table)."""

    entity_id: np.ndarray  # (E,) object
    entity_name: np.ndarray  # (E,) object
    entity_canonical: np.ndarray  # (E,) object: canonical name (derived when the store has none)
    entity_type: np.ndarray  # (E,) object: 'project', 'person', ... (None when unrecorded)
    entity_pinned: np.ndarray  # (E,) bool
    entity_mentions: np.ndarray  # (E,) float64
    pinned_order: np.ndarray  # positions of the pinned entities, pinned_at desc, updated_at desc
    aspect_id: np.ndarray  # (A,) object
    aspect_entity: np.ndarray  # (A,) int64
    aspect_weight: np.ndarray  # (A,) float64
    attr_memory: np.ndarray  # (T,) object: memory id
    attr_aspect: np.ndarray  # (T,) int64, -1: no aspect the graph holds
    attr_entity: np.ndarray  # (T,) int64: the aspect's entity, -1 without one
    attr_constraint: np.ndarray  # (T,) bool: kind 'constraint'
    attr_importance: np.ndarray  # (T,) float64
    attr_inactive_at: np.ndarray  # (T,) float64 epoch s since not active; NaN: active now
    dep_id: np.ndarray  # (D,) object
    dep_source: np.ndarray  # (D,) int64
    dep_target: np.ndarray  # (D,) int64
    dep_strength: np.ndarray  # (D,) float64
    dep_confidence: np.ndarray  # (D,) float64, NaN when NULL
    mention_memory: np.ndarray  # (M,) object
    mention_entity: np.ndarray  # (M,) int64
    mention_confidence: np.ndarray  # (M,) float64, NaN when NULL
    dependency_table: str | None = None  # where the dependencies came from
    note: str = ""  # what the store lacks ('' when nothing)
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def empty(cls, note: str = "") -> EntityGraph:
        """A graph without entities (a session start with it runs as without a graph)."""
        o, i, f, b = _ANY, np.zeros(0, np.int64), np.zeros(0), np.zeros(0, bool)
        return cls(
            o, o, o, o, b, f, i, o, i, f, o, i, i, b, f, f, o, i, i, f, f, o, i, f, None, note
        )

    @property
    def has_graph(self) -> bool:
        """Whether a traversal can reach anything: entities, and memories attached to them."""
        reach = bool((self.attr_aspect >= 0).any()) or bool((self.mention_entity >= 0).any())
        return len(self.entity_id) > 0 and reach

    @property
    def attr_active(self) -> np.ndarray:
        """Attributes whose status is 'active' in the store."""
        return np.isnan(self.attr_inactive_at)

    def attr_active_at(self, epoch_s: float) -> np.ndarray:
        """Attributes active at a moment (a superseded one counts until its status changed)."""
        return ~(self.attr_inactive_at <= epoch_s)


# --- reading ----------------------------------------------------------------------------------


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({quote_ident(table)})")}


def _select(
    con: sqlite3.Connection, table: str, tables: set[str], notes: list[str]
) -> list[tuple] | None:
    """The table's rows in its spec's column order (absent optional columns as their default,
    the default agent's rows only); None, with a note, when the table or a required column is
    missing."""
    required, optional = _SPECS[table]
    if table not in tables:
        return None
    cols = _columns(con, table)
    missing = [c for c in required if c not in cols]
    if missing:
        notes.append(f"{table} lacks {', '.join(missing)}: not read")
        return None
    parts = [quote_ident(c) for c in required]
    for c, default in optional.items():
        if c not in cols:
            parts.append(default)
        elif c in _NULLABLE_DEFAULTS:
            parts.append(quote_ident(c))
        else:
            parts.append(f"COALESCE({quote_ident(c)}, {default})")
    where = f" WHERE agent_id = '{DEFAULT_AGENT}'" if "agent_id" in cols else ""
    order = " ORDER BY rowid" if _has_rowid(con, table) else ""
    return con.execute(
        f"SELECT {', '.join(parts)} FROM {quote_ident(table)}{where}{order}"
    ).fetchall()


def _has_rowid(con: sqlite3.Connection, table: str) -> bool:
    try:
        con.execute(f"SELECT rowid FROM {quote_ident(table)} LIMIT 0")
    except sqlite3.OperationalError:
        return False
    return True


def _entities(rows: list[tuple]) -> dict[str, np.ndarray]:
    ids = [str(r[0]) for r in rows]
    pinned = np.asarray([bool(r[4]) for r in rows], dtype=bool)
    # pinned_at desc, updated_at desc, as text (SQLite's order; NULL last), then id asc
    key = [(r[5] or "", r[6] or "", ids[i]) for i, r in enumerate(rows)]
    pinned_pos = sorted(np.flatnonzero(pinned).tolist(), key=lambda i: key[i][2])
    pinned_pos.sort(key=lambda i: key[i][:2], reverse=True)
    return {
        "entity_id": _objects(ids),
        "entity_name": _objects([str(r[1]) for r in rows]),
        "entity_canonical": _objects([r[2] or canonical(r[1]) for r in rows]),
        "entity_type": _objects([r[3] for r in rows]),
        "entity_pinned": pinned,
        "entity_mentions": np.nan_to_num(_floats([r[7] for r in rows])),
        "pinned_order": np.asarray(pinned_pos, dtype=np.int64),
    }


def _inactive_at(rows: list[tuple], label: str) -> np.ndarray:
    """Per attribute: NaN when active, else when its status changed (updated_at; -inf when the
    store does not say)."""
    out = np.full(len(rows), np.nan)
    for i, (_m, aid, _a, _k, _imp, status, updated) in enumerate(rows):
        if status == "active":
            continue
        if updated is None:
            out[i] = -np.inf
            continue
        try:
            out[i] = parse_ts(str(updated)).timestamp()
        except TimestampError:
            raise StoreTimestampError(
                label, "entity_attributes", "updated_at", aid, updated
            ) from None
    return out


def _attributes(rows: list[tuple], aspects: dict[str, np.ndarray], label: str) -> dict:
    rows = [r for r in rows if r[0] is not None]  # attributes without a memory reach none
    aspect_of = {a: i for i, a in enumerate(aspects["aspect_id"].tolist())}
    asp = _positions([r[2] for r in rows], aspect_of)
    ent = np.full(len(asp), -1, dtype=np.int64)
    ent[asp >= 0] = aspects["aspect_entity"][asp[asp >= 0]]
    return {
        "attr_memory": _objects([str(r[0]) for r in rows]),
        "attr_aspect": asp,
        "attr_entity": ent,
        "attr_constraint": np.asarray([r[3] == "constraint" for r in rows], dtype=bool),
        "attr_importance": _floats([r[4] for r in rows]),
        "attr_inactive_at": _inactive_at(rows, label),
    }


def _dependencies(
    con: sqlite3.Connection, tables: set[str], entity_of: Mapping[str, int], notes: list[str]
) -> tuple[dict[str, np.ndarray], str | None]:
    """Edges from `entity_dependencies` when it holds rows, else from `relations`."""
    used, rows = None, []
    for table in ("entity_dependencies", "relations"):
        got = _select(con, table, tables, notes)
        if got:
            used, rows = table, got
            break
    if used is None:
        notes.append("no dependency rows (entity_dependencies, relations): no dependency hops")
    elif used == "relations" and "entity_dependencies" in tables:
        notes.append("entity_dependencies is empty: dependencies read from relations")
    src = _positions([r[0] for r in rows], entity_of)
    dst = _positions([r[1] for r in rows], entity_of)
    keep = (src >= 0) & (dst >= 0)
    ids = [str(r[2]) if r[2] is not None else f"{used}:{i}" for i, r in enumerate(rows)]
    return {
        "dep_id": _objects(ids)[keep] if rows else _ANY.copy(),
        "dep_source": src[keep],
        "dep_target": dst[keep],
        "dep_strength": _floats([r[3] for r in rows])[keep],
        "dep_confidence": _floats([r[4] for r in rows])[keep],
    }, used


def _linked(
    rows: list[tuple], entity_of: Mapping[str, int], names: tuple[str, str, str]
) -> dict[str, np.ndarray]:
    """Rows of (id, entity id, number) as the `names` arrays, rows of unknown entities dropped:
    the entity aspects (id, entity, weight) and the memory mentions (memory, entity,
    confidence)."""
    ent = _positions([r[1] for r in rows], entity_of)
    keep = ent >= 0
    ids = _objects([str(r[0]) for r in rows])[keep] if rows else _ANY.copy()
    return dict(zip(names, (ids, ent[keep], _floats([r[2] for r in rows])[keep]), strict=True))


_ASPECTS = ("aspect_id", "aspect_entity", "aspect_weight")
_MENTIONS = ("mention_memory", "mention_entity", "mention_confidence")


def _read(con: sqlite3.Connection, label: str) -> EntityGraph:
    tables = table_names(con)
    notes: list[str] = []
    absent = [t for t in _NODE_TABLES if t not in tables]
    if absent:
        notes.append(f"no {', '.join(absent)} table")
    ent_rows = _select(con, "entities", tables, notes)
    if not ent_rows:
        return EntityGraph.empty("; ".join(notes or ["no entities"]))
    ents = _entities(ent_rows)
    entity_of = {e: i for i, e in enumerate(ents["entity_id"].tolist())}
    aspects = _linked(_select(con, "entity_aspects", tables, notes) or [], entity_of, _ASPECTS)
    attrs = _attributes(_select(con, "entity_attributes", tables, notes) or [], aspects, label)
    deps, used = _dependencies(con, tables, entity_of, notes)
    mention_rows = _select(con, "memory_entity_mentions", tables, notes) or []
    mentions = _linked(mention_rows, entity_of, _MENTIONS)
    return EntityGraph(
        **ents, **aspects, **attrs, **deps, **mentions, dependency_table=used, note="; ".join(notes)
    )


def read_graph(store: str | Path | sqlite3.Connection) -> EntityGraph:
    """The store's knowledge graph (a path is opened read-only; a connection is borrowed)."""
    if isinstance(store, sqlite3.Connection):
        return _read(store, _label(store))
    con = open_readonly(store)
    try:
        return _read(con, str(store))
    finally:
        con.close()


def _label(con: sqlite3.Connection) -> str:
    """The connection's main database file, for error messages."""
    for _seq, name, file in con.execute("PRAGMA database_list"):
        if name == "main":
            return file or ":memory:"
    return "<sqlite connection>"
