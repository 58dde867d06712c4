"""The corpus: a store's memories as aligned arrays, read once and shared by the session loop,
the trainer's sample assembly and the benchmarks.

Row i of every array is the same memory (ordered by created_at, id, as `read_memories` returns
them); soft-deleted memories are included, because labels and replays need them. Nothing here
decides relevance: it only says what the store held.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import polars as pl

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.store.read import MemoryTable, open_readonly, read_memories
from signet_bench.store.timestamps import format_iso, parse_ts
from signet_scorer.tokenize import token_buckets

__all__ = ["Corpus", "corpus_from_memories", "memory_source_session", "read_corpus"]


@dataclass(frozen=True, eq=False)
class Corpus:
    """Aligned per-memory arrays of one store (deleted memories included)."""

    ids: np.ndarray  # (N,) object: memory ids
    created_at: np.ndarray  # (N,) float64 epoch seconds
    created_text: np.ndarray  # (N,) object: created_at as ISO text (Signet 0.58's sort key)
    importance: np.ndarray  # (N,) float64
    pinned: np.ndarray  # (N,) bool
    is_deleted: np.ndarray  # (N,) bool
    deleted_at: np.ndarray  # (N,) float64 epoch seconds, NaN when not deleted
    is_constraint: np.ndarray  # (N,) bool
    access_count: np.ndarray  # (N,) float64
    project: np.ndarray  # (N,) object: project name or None
    contents: list[str]
    embeddings: np.ndarray  # (N, D) float32, zero rows where there is none
    has_embedding: np.ndarray  # (N,) bool
    superseded_at: np.ndarray  # (N,) float64 epoch seconds when it became stale, NaN if never
    edited_at: tuple[np.ndarray, ...]  # per row: sorted epoch seconds of in-place updates
    row_of: dict[str, int]
    source_session: np.ndarray | None = None  # (N,) object: `memory_source_session`, or
    # None when no memory records one
    _tokens: dict[int, np.ndarray] = field(default_factory=dict, repr=False)
    _scope: dict[str | None, np.ndarray] = field(default_factory=dict, repr=False)
    _id_text: list[np.ndarray] = field(default_factory=list, repr=False)

    def __len__(self) -> int:
        return len(self.ids)

    @classmethod
    def from_arrays(
        cls,
        ids: Sequence[str] | np.ndarray,
        created_at: np.ndarray,
        importance: np.ndarray,
        embeddings: np.ndarray,
        *,
        contents: Sequence[str] | None = None,
        has_embedding: np.ndarray | None = None,
        pinned: np.ndarray | None = None,
        project: Sequence[str | None] | None = None,
    ) -> Corpus:
        """A corpus from plain arrays (absent flags false, no project, contents empty, no
        source sessions; `contents` may also be content lengths, for ranking without text);
        `with_states` sets the rest."""
        n = len(ids)
        no = np.zeros(n, dtype=bool)
        emb = np.asarray(embeddings, dtype=np.float32)
        has = np.linalg.norm(emb, axis=1) > 0 if has_embedding is None else has_embedding
        id_arr = np.asarray(list(ids), dtype=object)
        return cls(
            ids=id_arr,
            created_at=np.asarray(created_at, dtype=np.float64),
            created_text=np.asarray([""] * n, dtype=object),
            importance=np.asarray(importance, dtype=np.float64),
            pinned=no if pinned is None else np.asarray(pinned, dtype=bool),
            is_deleted=no,
            deleted_at=np.full(n, np.nan),
            is_constraint=no,
            access_count=np.zeros(n),
            project=np.asarray([None] * n if project is None else list(project), dtype=object),
            contents=[""] * n if contents is None else list(contents),
            embeddings=emb,
            has_embedding=np.asarray(has, dtype=bool),
            superseded_at=np.full(n, np.nan),
            edited_at=tuple(np.zeros(0) for _ in range(n)),
            row_of={m: i for i, m in enumerate(id_arr)},
        )

    def with_states(
        self,
        *,
        is_constraint: np.ndarray | None = None,
        is_deleted: np.ndarray | None = None,
        access_count: np.ndarray | None = None,
        superseded_at: np.ndarray | None = None,
    ) -> Corpus:
        """This corpus with the given per-memory states (None: the state kept), for a corpus
        built from plain arrays (`from_arrays`)."""
        return replace(
            self,
            is_constraint=self.is_constraint
            if is_constraint is None
            else np.asarray(is_constraint, dtype=bool),
            is_deleted=self.is_deleted if is_deleted is None else np.asarray(is_deleted, bool),
            access_count=self.access_count
            if access_count is None
            else np.asarray(access_count, float),
            superseded_at=self.superseded_at if superseded_at is None else superseded_at,
            _tokens={},
            _scope={},
            _id_text=[],
        )

    @property
    def id_text(self) -> np.ndarray:
        """The ids as a numpy unicode array, made once: the rankers sort and compare ids in
        that form, and converting 4,000 ids on every call was most of a session start."""
        if not self._id_text:
            self._id_text.append(self.ids.astype(str))
        return self._id_text[0]

    @property
    def dim(self) -> int:
        return int(self.embeddings.shape[1])

    def rows(self, memory_ids: list[str] | np.ndarray) -> np.ndarray:
        """Rows of the given ids (all must be in the corpus)."""
        return np.fromiter((self.row_of[m] for m in memory_ids), dtype=np.int64)

    def tokens(self, row: int) -> np.ndarray:
        """The hash buckets of a memory's content (the text path's input), cached."""
        t = self._tokens.get(row)
        if t is None:
            t = self._tokens[row] = token_buckets(self.contents[row], DEFAULT_CONFIG.hash_buckets)
        return t

    def sources(self, rows: np.ndarray) -> np.ndarray:
        """(len(rows),) object: the source session of the memories at `rows` (None: unknown)."""
        if self.source_session is None:
            return np.full(len(rows), None, dtype=object)
        return self.source_session[np.asarray(rows, dtype=np.int64)]

    def in_scope(self, project: str | None) -> np.ndarray:
        """Memories of the project or of no project (the constraints a session can see)."""
        mask = self._scope.get(project)
        if mask is None:
            mask = np.array([p is None or p == project for p in self.project], dtype=bool)
            self._scope[project] = mask
        return mask

    def absent_at(self, epoch_s: float) -> np.ndarray:
        """Memories that are not candidates at a moment: soft-deleted (now) or not yet created."""
        return self.is_deleted | (self.created_at > epoch_s)

    def superseded_by(self, epoch_s: float) -> np.ndarray:
        """Memories already stale (superseded or deleted) at a moment."""
        return np.isfinite(self.superseded_at) & (self.superseded_at <= epoch_s)


def _epoch(col: pl.Series) -> np.ndarray:
    """Datetime column -> epoch seconds (NaN for nulls)."""
    return (col.dt.epoch("us").cast(pl.Float64) / 1e6).fill_null(np.nan).to_numpy()


def _attribute_superseded(con: sqlite3.Connection) -> dict[str, float]:
    """Memory id -> when a knowledge-graph attribute pointing at it was first superseded."""
    cols = {r[1] for r in con.execute("PRAGMA table_info(entity_attributes)")}
    if not {"memory_id", "updated_at"} <= cols:
        return {}
    conds = [
        c
        for c, col in (
            ("status = 'superseded'", "status"),
            ("superseded_by IS NOT NULL", "superseded_by"),
        )
        if col in cols
    ]
    if not conds:
        return {}
    when: dict[str, float] = {}
    sql = (
        "SELECT memory_id, updated_at FROM entity_attributes WHERE memory_id IS NOT NULL "
        f"AND ({' OR '.join(conds)})"
    )
    for mid, at in con.execute(sql):
        if at is None:
            continue
        t = parse_ts(at).timestamp()
        when[mid] = min(when.get(mid, t), t)
    return when


def _edits(con: sqlite3.Connection) -> dict[str, list[float]]:
    """Memory id -> times of in-place content updates (`memory_history` event 'updated')."""
    cols = {r[1] for r in con.execute("PRAGMA table_info(memory_history)")}
    if not {"memory_id", "event", "created_at"} <= cols:
        return {}
    out: dict[str, list[float]] = {}
    for mid, at in con.execute(
        "SELECT memory_id, created_at FROM memory_history WHERE event = 'updated'"
    ):
        if mid is not None and at is not None:
            out.setdefault(mid, []).append(parse_ts(at).timestamp())
    return out


def memory_source_session(source_section: str | None, source_id: str | None) -> str | None:
    """The session a memory came from, as far as the store records it: `source_section` when
    set (a LoCoMo observation's conversation session, a document chunk's section), else
    `source_id` (the session or job a pipeline extracted it from), else unknown (None)."""
    return (source_section or "").strip() or (source_id or "").strip() or None


def _source_sessions(con: sqlite3.Connection, ids: np.ndarray) -> np.ndarray | None:
    """Each memory's `memory_source_session` (aligned with `ids`); None when none has one."""
    cols = {r[1] for r in con.execute("PRAGMA table_info(memories)")}
    picked = [c if c in cols else "NULL" for c in ("source_section", "source_id")]
    rows = con.execute(f"SELECT id, {', '.join(picked)} FROM memories").fetchall()
    found = {mid: memory_source_session(sec, src) for mid, sec, src in rows}
    out = np.asarray([found.get(m) for m in ids], dtype=object)
    return None if all(x is None for x in out) else out


def corpus_from_memories(con: sqlite3.Connection, mem: MemoryTable) -> Corpus:
    """Build the corpus from memories already read through `con` (deleted included)."""
    f = mem.frame
    ids = np.asarray(f["id"].to_list(), dtype=object)
    created = _epoch(f["created_at"])
    deleted = f["is_deleted"].to_numpy().astype(bool)
    deleted_at = np.where(deleted, _epoch(f["deleted_at"]), np.nan)
    attr = _attribute_superseded(con)
    sup = np.array([attr.get(m, np.nan) for m in ids], dtype=np.float64)
    edits = _edits(con)
    return Corpus(
        ids=ids,
        created_at=created,
        created_text=np.asarray([format_iso(x) for x in f["created_at"].to_list()], dtype=object),
        importance=f["importance"].to_numpy().astype(np.float64),
        pinned=f["pinned"].to_numpy().astype(bool),
        is_deleted=deleted,
        deleted_at=deleted_at,
        is_constraint=f["is_constraint"].to_numpy().astype(bool),
        access_count=f["access_count"].to_numpy().astype(np.float64),
        project=np.asarray(f["project"].to_list(), dtype=object),
        contents=f["content"].to_list(),
        embeddings=mem.embeddings,
        has_embedding=f["has_embedding"].to_numpy().astype(bool),
        superseded_at=np.fmin(sup, deleted_at),
        edited_at=tuple(np.sort(np.asarray(edits.get(m, ()), dtype=np.float64)) for m in ids),
        row_of={m: i for i, m in enumerate(ids)},
        source_session=_source_sessions(con, ids),
    )


def read_corpus(store: str | Path | sqlite3.Connection) -> Corpus:
    """The store's corpus (opened read-only unless a connection is given)."""
    con = store if isinstance(store, sqlite3.Connection) else open_readonly(store)
    try:
        return corpus_from_memories(con, read_memories(con, include_deleted=True))
    finally:
        if not isinstance(store, sqlite3.Connection):
            con.close()
