"""The rows of Signet's knowledge-graph tables and their one writer: the worlds (LoCoMo's
conversations, the synthetic personas) build these rows, `write_graph` puts them in a store of
either release line and `store.graph` reads them back.

The tables: `entities`, `entity_aspects`, `entity_attributes` (each pointing at a memory),
`memory_entity_mentions`, and the dependencies in `entity_dependencies` where the store has it
(current Signet, which traverses it), else in `relations` (Signet 0.58). Rows are written in
the order given, table by table in that order, with plain INSERTs: a row that clashes with one
already there is an error, never a silent replacement.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from signet_bench.store.content import normalized_content
from signet_bench.store.read import table_names
from signet_bench.store.timestamps import format_iso
from signet_bench.store.write import transaction

__all__ = [
    "Aspect",
    "Attribute",
    "Dependency",
    "Entity",
    "GraphRows",
    "Mention",
    "dependency_table",
    "write_graph",
]


@dataclass(frozen=True, slots=True)
class Entity:
    """An `entities` row: `mentions` memories name it, the first at `created_at`; a pinned
    entity is pinned since `created_at`. `canonical_name`: the name as Signet canonicalises
    it (`store.graph.canonical`)."""

    id: str
    name: str
    canonical_name: str
    entity_type: str
    description: str | None
    mentions: int
    created_at: datetime
    updated_at: datetime
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class Mention:
    """A `memory_entity_mentions` row: the memory's text names the entity."""

    memory_id: str
    entity_id: str
    mention_text: str
    confidence: float
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Aspect:
    """An `entity_aspects` row: one facet of an entity its attributes group under."""

    id: str
    entity_id: str
    name: str
    canonical_name: str
    weight: float
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Attribute:
    """An `entity_attributes` row: a memory as an attribute (kind 'attribute') or a
    constraint of an aspect; status 'active', 'superseded' (by the attribute `superseded_by`)
    or 'deleted'. Its normalised content is derived from `content` when written."""

    id: str
    aspect_id: str
    memory_id: str
    kind: str
    content: str
    importance: float
    confidence: float
    status: str
    superseded_by: str | None
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Dependency:
    """A directed edge between two entities (`entity_dependencies` on a current store,
    `relations` on a 0.58 one); `co_occurrences`: how often the two are named together, the
    0.58 relation's `mentions` (1 for an edge seen once)."""

    id: str
    source_entity_id: str
    target_entity_id: str
    dependency_type: str
    strength: float
    confidence: float
    reason: str
    created_at: datetime
    updated_at: datetime
    co_occurrences: int = 1


class GraphRows(Protocol):
    """What `write_graph` reads of a graph: its rows, table by table, in insertion order."""

    @property
    def entities(self) -> Sequence[Entity]: ...
    @property
    def aspects(self) -> Sequence[Aspect]: ...
    @property
    def attributes(self) -> Sequence[Attribute]: ...
    @property
    def mentions(self) -> Sequence[Mention]: ...
    @property
    def dependencies(self) -> Sequence[Dependency]: ...


def dependency_table(con: sqlite3.Connection) -> str:
    """The table a store keeps its entity dependencies in: `entity_dependencies` where it
    exists (current Signet), else `relations` (Signet 0.58)."""
    names = table_names(con)
    if "entity_dependencies" in names:
        return "entity_dependencies"
    if "relations" in names:
        return "relations"
    raise ValueError("the store has no dependency table (entity_dependencies or relations)")


def _entity(e: Entity) -> dict[str, Any]:
    return {
        "id": e.id,
        "name": e.name,
        "entity_type": e.entity_type,
        "description": e.description,
        "created_at": format_iso(e.created_at),
        "updated_at": format_iso(e.updated_at),
        "canonical_name": e.canonical_name,
        "mentions": e.mentions,
        "pinned": int(e.pinned),
        "pinned_at": format_iso(e.created_at) if e.pinned else None,
    }


def _aspect(a: Aspect) -> dict[str, Any]:
    return {
        "id": a.id,
        "entity_id": a.entity_id,
        "name": a.name,
        "canonical_name": a.canonical_name,
        "weight": a.weight,
        "created_at": format_iso(a.created_at),
        "updated_at": format_iso(a.updated_at),
    }


def _attribute(a: Attribute) -> dict[str, Any]:
    return {
        "id": a.id,
        "aspect_id": a.aspect_id,
        "memory_id": a.memory_id,
        "kind": a.kind,
        "content": a.content,
        "normalized_content": normalized_content(a.content),
        "confidence": a.confidence,
        "importance": a.importance,
        "status": a.status,
        "superseded_by": a.superseded_by,
        "created_at": format_iso(a.created_at),
        "updated_at": format_iso(a.updated_at),
    }


def _mention(m: Mention) -> dict[str, Any]:
    return {
        "memory_id": m.memory_id,
        "entity_id": m.entity_id,
        "mention_text": m.mention_text,
        "confidence": m.confidence,
        "created_at": format_iso(m.created_at),
    }


def _dependency(d: Dependency) -> dict[str, Any]:
    """An `entity_dependencies` row."""
    return {
        "id": d.id,
        "source_entity_id": d.source_entity_id,
        "target_entity_id": d.target_entity_id,
        "dependency_type": d.dependency_type,
        "strength": d.strength,
        "confidence": d.confidence,
        "reason": d.reason,
        "created_at": format_iso(d.created_at),
        "updated_at": format_iso(d.updated_at),
    }


def _relation(d: Dependency) -> dict[str, Any]:
    """A 0.58 `relations` row: the type is `relation_type`, the reason sits in `metadata`."""
    return {
        "id": d.id,
        "source_entity_id": d.source_entity_id,
        "target_entity_id": d.target_entity_id,
        "relation_type": d.dependency_type,
        "strength": d.strength,
        "confidence": d.confidence,
        "metadata": json.dumps({"reason": d.reason}),
        "mentions": d.co_occurrences,
        "created_at": format_iso(d.created_at),
        "updated_at": format_iso(d.updated_at),
    }


def _insert(
    con: sqlite3.Connection, table: str, rows: Iterable[Any], to_row: Callable[[Any], dict]
) -> None:
    """Insert `rows`, each made a column -> value dict by `to_row`, into `table`."""
    values = [to_row(r) for r in rows]
    if values:
        cols = list(values[0])
        con.executemany(
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
            [tuple(v[c] for c in cols) for v in values],
        )


def write_graph(con: sqlite3.Connection, graph: GraphRows) -> None:
    """Write `graph`'s rows into the store's graph tables (module docstring), after the
    memories its attributes and mentions point at; inside the caller's transaction if it
    holds one."""
    table = dependency_table(con)
    with transaction(con):
        _insert(con, "entities", graph.entities, _entity)
        _insert(con, "entity_aspects", graph.aspects, _aspect)
        _insert(con, "entity_attributes", graph.attributes, _attribute)
        _insert(con, "memory_entity_mentions", graph.mentions, _mention)
        _insert(
            con,
            table,
            graph.dependencies,
            _dependency if table == "entity_dependencies" else _relation,
        )
