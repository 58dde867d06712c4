"""The store the daemon's loop runs on, which the loop and its trainers share."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

from signet_bench.store.corpus import Corpus
from signet_bench.store.graph import EntityGraph

__all__ = ["LoopStore"]


@dataclass(frozen=True, slots=True)
class LoopStore:
    """The store the loop runs on: its path, its only writer connection, its memories and its
    knowledge graph (None: the lifecycle reads it from the store)."""

    path: Path
    con: sqlite3.Connection
    corpus: Corpus
    graph: EntityGraph | None = None
