"""Small hand-made stores with a knowledge graph: real SQLite files made by the project's schema
DDL (either release line), filled with plain SQL by column name, as Signet's daemon leaves them."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from signet_bench.store import write
from signet_bench.store.schema import connect_writer, create_store

T0 = "2026-01-01T00:00:00.000Z"


class GraphStore:
    """A store being filled: memories through the project's writer, graph rows by name (a
    dependency goes to `entity_dependencies` on a current store, to `relations` on 0.58)."""

    def __init__(self, path: Path, schema: str = "current") -> None:
        self.path = create_store(path, schema=schema)
        self.schema = schema
        self.con: sqlite3.Connection = connect_writer(self.path)

    def insert(self, table: str, **values: Any) -> None:
        present = {r[1] for r in self.con.execute(f"PRAGMA table_info({table})")}
        values = {k: v for k, v in values.items() if k in present}
        cols, marks = ", ".join(values), ", ".join("?" * len(values))
        self.con.execute(f"INSERT INTO {table} ({cols}) VALUES ({marks})", tuple(values.values()))

    def memory(self, mid: str, *, content: str | None = None, **cols: Any) -> None:
        row = {"id": mid, "content": content or f"memory {mid}", "created_at": T0, **cols}
        write.insert_memories(self.con, [row], history=False)

    def entity(self, eid: str, name: str | None = None, **cols: Any) -> None:
        now = cols.pop("updated_at", T0)
        self.insert(
            "entities",
            id=eid,
            name=name or eid,
            entity_type=cols.pop("entity_type", "project"),
            created_at=T0,
            updated_at=now,
            **cols,
        )

    def aspect(self, aid: str, entity: str, weight: float = 0.5, **cols: Any) -> None:
        self.insert(
            "entity_aspects",
            id=aid,
            entity_id=entity,
            name=aid,
            canonical_name=aid,
            weight=weight,
            **cols,
        )

    def attribute(self, memory: str, aspect: str | None, **cols: Any) -> None:
        aid = cols.pop("id", f"attr-{memory}-{aspect}")
        self.insert(
            "entity_attributes",
            id=aid,
            aspect_id=aspect,
            memory_id=memory,
            kind=cols.pop("kind", "attribute"),
            content=f"attribute of {memory}",
            normalized_content=f"attribute of {memory}",
            **cols,
        )

    def dependency(self, source: str, target: str, did: str | None = None, **cols: Any) -> None:
        did = did or f"dep-{source}-{target}"
        if self.schema == "current":
            self.insert(
                "entity_dependencies",
                id=did,
                source_entity_id=source,
                target_entity_id=target,
                dependency_type="uses",
                **cols,
            )
        else:
            self.insert(
                "relations",
                id=did,
                source_entity_id=source,
                target_entity_id=target,
                relation_type="uses",
                **cols,
            )

    def mention(self, memory: str, entity: str, confidence: float | None = None) -> None:
        self.insert(
            "memory_entity_mentions", memory_id=memory, entity_id=entity, confidence=confidence
        )

    def close(self) -> Path:
        self.con.close()
        return self.path
