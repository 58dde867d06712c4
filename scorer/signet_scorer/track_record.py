"""Each memory's own track record in this user's sessions, shrunk toward the user's mean
(docs/specification.md §4.3.1, "Track record"): the pure score (`track_record`) and its reader
from a Signet store (`read_track_record`), the one the trainer's samples, the replayed loop and
the session-start hook all call, so they agree bit for bit.

What counts is what was known at the scored session's start: only the user's latest
`TRACK_SESSIONS` sessions judged before it (their first `session_scores` row written before the
start; the judge runs after a session ends, so their injections, FTS hits and agent ratings were
all in place by then) and only rows written before it.
A session still open at the start never counts: its counters may still grow. `access_count` is
never read (Signet's own injection raises it).

Observations, each a value y in [0, 1] with a weight, from a memory's rows in those sessions:

- injected and judged (`relevance_score` not null): y = the judge's relevance, weight 1;
- not injected but hit by a prompt's search (`fts_hit_count` > 0): y = 1, weight 1 per session;
- rated by the agent (`agent_relevance_score` a in [-1, 1] over `agent_feedback_count` c ratings):
  y = (a + 1) / 2, weight max(c, 1);
- superseded or deleted before the start: y = 0, weight `PRIOR_STRENGTH`.

Score = (κ·μ + Σ w·y) / (κ + Σ w), κ = `PRIOR_STRENGTH`, μ the user's mean (Σ w·y / Σ w over every
memory's observations of those sessions, supersessions left out; `NO_HISTORY_MEAN` without any):
a memory without history scores exactly μ, neither favoured nor punished. Standard library and
numpy only.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import NamedTuple

import numpy as np

from signet_scorer.workbench import DEFAULT_AGENT

__all__ = [
    "NO_HISTORY_MEAN",
    "PRIOR_STRENGTH",
    "TRACK_SESSIONS",
    "TrackCounts",
    "TrackHistory",
    "TrackRecord",
    "read_track_history",
    "read_track_record",
    "read_track_records",
    "track_record",
    "user_mean",
]

PRIOR_STRENGTH = 2.0  # κ: the user's mean weighs as two observations of the memory's own
NO_HISTORY_MEAN = 0.5  # μ when no session was judged yet
# The history read: the user's latest sessions judged before the start, so that a session start's
# reading (the hook's, within its latency goal) does not grow with the store.
TRACK_SESSIONS = 200

# Signet's two time formats (`2026-03-14T21:40:46.123Z`, `2026-03-14 21:40:46`) as one fixed-width
# text that orders as time: 'T' and 'Z' dropped, milliseconds padded.
_TIME = "SUBSTR(REPLACE(REPLACE({}, 'T', ' '), 'Z', '') || '.000', 1, 23)"
_HISTORY_EVENTS = ("deleted", "superseded", "merged")


@dataclass(frozen=True, slots=True, eq=False)
class TrackCounts:
    """Per memory (arrays aligned with the ids asked for), its history before a session's start."""

    injected: np.ndarray  # (n,) times injected
    judged: np.ndarray  # (n,) of those, times the judge rated it (`relevance_score`)
    useful: np.ndarray  # (n,) the sum of those ratings, each in [0, 1]
    fts_unseen: np.ndarray  # (n,) sessions a prompt's search hit it while it was not injected
    ratings: np.ndarray  # (n,) the agent's ratings (feedback count)
    rating_sum: np.ndarray  # (n,) their sum, each in [-1, 1]
    superseded: np.ndarray  # (n,) bool: superseded or deleted before the start

    @classmethod
    def empty(cls, n: int) -> TrackCounts:
        z = np.zeros(n, dtype=np.float64)
        return cls(z, z, z, z, z, z, np.zeros(n, dtype=bool))

    def observations(self) -> tuple[np.ndarray, np.ndarray]:
        """(Σ w, Σ w·y) per memory of its own evidence (module docstring), supersession aside."""
        weight = self.judged + self.fts_unseen + self.ratings
        value = self.useful + self.fts_unseen + (self.rating_sum + self.ratings) / 2.0
        return weight.astype(np.float64), value.astype(np.float64)


def user_mean(total: TrackCounts) -> float:
    """μ: the pooled share of useful observations over every memory's history (`total`: the
    counts of every memory, one row or many), `NO_HISTORY_MEAN` without any."""
    weight, value = total.observations()
    w = float(weight.sum())
    return NO_HISTORY_MEAN if w <= 0 else min(max(float(value.sum()) / w, 0.0), 1.0)


def track_record(counts: TrackCounts, mean: float, prior: float = PRIOR_STRENGTH) -> np.ndarray:
    """(n,) float32 in [0, 1]: (κ·μ + Σ w·y) / (κ + Σ w) per memory, a supersession counting as
    κ observations of 0 (module docstring; docs/specification.md, "Signals")."""
    if not prior > 0:
        raise ValueError(f"prior strength {prior!r}: must be > 0")
    mu = min(max(float(mean), 0.0), 1.0)
    weight, value = counts.observations()
    weight = weight + np.where(counts.superseded, prior, 0.0)
    score = (prior * mu + value) / (prior + weight)
    return np.clip(score, 0.0, 1.0).astype(np.float32)


# --- the store reader ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, eq=False)
class TrackRecord:
    """The candidates' track records (`values`, aligned with the ids), the user's mean and what
    the store lacked to compute them (`missing`: tables or `table.column`s read as absent)."""

    values: np.ndarray  # (n,) float32
    mean: float
    missing: tuple[str, ...]


def _time(at: datetime) -> str:
    """An aware time as the fixed-width UTC text `_TIME` compares with."""
    if at.tzinfo is None:
        raise ValueError(f"{at!r}: a naive time (give one with a time zone)")
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:23]


def _tables(con: sqlite3.Connection) -> set[str]:
    return {str(r[0]) for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in con.execute(f"PRAGMA table_info({table})")}


def _terms(sm: set[str]) -> tuple[list[str], list[str]]:
    """The six per-row terms the aggregate sums (`TrackCounts`' order) and the
    `session_memories` columns they had to take as absent."""
    wanted = ("relevance_score", "fts_hit_count", "agent_relevance_score")
    missing = [c for c in wanted if c not in sm]
    inj = "COALESCE(sm.was_injected, 0) != 0"
    rel = "sm.relevance_score" if "relevance_score" in sm else "NULL"
    fts = "COALESCE(sm.fts_hit_count, 0)" if "fts_hit_count" in sm else "0"
    rate = "sm.agent_relevance_score" if "agent_relevance_score" in sm else "NULL"
    cnt = "MAX(COALESCE(sm.agent_feedback_count, 1), 1)" if "agent_feedback_count" in sm else "1"
    terms = [
        inj,
        f"{inj} AND {rel} IS NOT NULL",
        f"CASE WHEN {inj} AND {rel} IS NOT NULL THEN MIN(MAX({rel}, 0.0), 1.0) ELSE 0 END",
        f"NOT ({inj}) AND {fts} > 0",
        f"CASE WHEN {rate} IS NOT NULL THEN {cnt} ELSE 0 END",
        f"CASE WHEN {rate} IS NOT NULL THEN MIN(MAX({rate}, -1.0), 1.0) * {cnt} ELSE 0 END",
    ]
    return terms, [f"session_memories.{c}" for c in missing]


def _evidence(terms: Sequence[str]) -> str:
    """The rows any of the six `terms` is not 0 in (injected, hit by a search while not
    injected, or rated): the others add 0 to every sum (exactly: SQLite adds integer 0s and
    keeps float sums as they were; the user's mean adds a memory's sums one after the other),
    so a memory with only such rows reads as one without history, and skipping them before
    the terms are computed changes no value."""
    return f"(({terms[0]}) OR ({terms[3]}) OR ({terms[4]}) != 0)"


def _counts_sql(sm: set[str], scores: set[str], by_agent: bool) -> tuple[str, list[str]]:
    """The per-memory aggregate over the judged sessions' rows written before the start, and the
    `session_memories` columns it had to take as absent."""
    terms, missing = _terms(sm)
    picked = ", ".join(f"SUM({t})" for t in terms)
    scored_by = " WHERE agent_id = ?" if by_agent and "agent_id" in scores else ""
    judged = (
        f"SELECT session_key FROM session_scores{scored_by} GROUP BY session_key "
        f"HAVING MIN({_TIME.format('created_at')}) < ? "
        f"ORDER BY MIN({_TIME.format('created_at')}) DESC, session_key DESC LIMIT {TRACK_SESSIONS}"
    )
    agent = " AND sm.agent_id = ?" if by_agent else ""
    sql = (
        f"SELECT sm.memory_id, {picked} FROM session_memories sm WHERE {_evidence(terms)} "
        f"AND sm.session_key IN ({judged}) AND {_TIME.format('sm.created_at')} < ?{agent} "
        "GROUP BY sm.memory_id"
    )
    return sql, missing


class _Ended(NamedTuple):
    """A source that records a memory's end: its table, the memory id and end-time columns,
    and the condition that makes a row an end."""

    table: str
    id: str
    at: str
    where: str

    def before(self, marks: str) -> str:
        """The ids among `marks`' (an id list of ?s) that ended before the next `?`."""
        return (
            f"SELECT {self.id} FROM {self.table} WHERE {self.id} IN ({marks}) AND {self.where} "
            f"AND {self.at} IS NOT NULL AND {_TIME.format(self.at)} < ?"
        )

    def earliest(self, marks: str) -> str:
        """Each of `marks`' ids that ended, with its earliest end (`_TIME` text)."""
        return (
            f"SELECT {self.id}, MIN({_TIME.format(self.at)}) FROM {self.table} WHERE {self.id} "
            f"IN ({marks}) AND {self.where} AND {self.at} IS NOT NULL GROUP BY {self.id}"
        )


def _ended_sources(con: sqlite3.Connection) -> tuple[list[_Ended], list[str]]:
    """The sources that record a memory's end (a soft delete with its time, a `memory_history`
    deletion, supersession or merge, a superseded knowledge-graph attribute) the store has, and
    the ones it lacks."""
    tables = _tables(con)
    mem = _columns(con, "memories")
    attrs: set[str] = _columns(con, "entity_attributes") if "entity_attributes" in tables else set()
    ends = [("status = 'superseded'", "status"), ("superseded_by IS NOT NULL", "superseded_by")]
    events = ",".join(f"'{e}'" for e in _HISTORY_EVENTS)
    sources: dict[str, _Ended | None] = {
        "memories.deleted_at": _Ended(
            "memories", "id", "deleted_at", "COALESCE(is_deleted, 0) != 0"
        )
        if {"is_deleted", "deleted_at"} <= mem
        else None,
        "memory_history": _Ended(
            "memory_history", "memory_id", "created_at", f"event IN ({events})"
        )
        if "memory_history" in tables
        else None,
        "entity_attributes": _Ended(
            "entity_attributes",
            "memory_id",
            "updated_at",
            f"({' OR '.join(c for c, col in ends if col in attrs)})",
        )
        if {"memory_id", "updated_at"} <= attrs and attrs & {"status", "superseded_by"}
        else None,
    }
    found = [src for src in sources.values() if src is not None]
    return found, [name for name, src in sources.items() if src is None]


def _superseded(
    con: sqlite3.Connection, ids: Sequence[str], before: str
) -> tuple[set[str], list[str]]:
    """Of `ids`, those deleted or superseded before `before` (`_ended_sources`), and the
    sources the store lacks."""
    sources, missing = _ended_sources(con)
    marks = ",".join("?" * len(ids))
    found: set[str] = set()
    for source in sources:
        found.update(str(r[0]) for r in con.execute(source.before(marks), [*ids, before]))
    return found, missing


@dataclass(frozen=True, slots=True, eq=False)
class TrackHistory:
    """What the user's sessions judged before `before` hold of each memory (module docstring):
    per memory id, the six sums of `TrackCounts`; what the store lacked to count them."""

    before: datetime
    rows: dict[str, int]  # memory id -> column of `sums`
    sums: np.ndarray  # (6, m) float64: injected, judged, useful, fts_unseen, ratings, rating_sum
    missing: tuple[str, ...]

    @property
    def mean(self) -> float:
        """μ: the user's mean over every memory's evidence (`user_mean`)."""
        total = self.sums.sum(axis=1, keepdims=True)
        return user_mean(TrackCounts(*total, superseded=np.zeros(1, dtype=bool)))

    def counts(self, memory_ids: Sequence[str], superseded: set[str]) -> TrackCounts:
        """The counts of `memory_ids` (none for a memory without history), with the ids in
        `superseded` flagged."""
        cols = [self.rows.get(str(m), -1) for m in memory_ids]
        padded = np.concatenate([self.sums, np.zeros((6, 1))], axis=1)  # column -1: no history
        picked = padded[:, cols] if cols else np.zeros((6, 0))
        flags = np.array([str(m) in superseded for m in memory_ids], dtype=bool)
        return TrackCounts(*picked, superseded=flags)


def _args(
    con: sqlite3.Connection, at: str, agent_id: str
) -> tuple[set[str], set[str], bool, list[object]]:
    """The columns of `session_memories` and `session_scores`, whether rows are per agent, and
    the aggregate's parameters (the judged sessions' agent and time, the rows' time and agent)."""
    sm, scores = _columns(con, "session_memories"), _columns(con, "session_scores")
    by_agent = "agent_id" in sm
    judged_agent: list[object] = [agent_id] if by_agent and "agent_id" in scores else []
    return sm, scores, by_agent, [*judged_agent, at, at, *([agent_id] if by_agent else [])]


def read_track_history(
    con: sqlite3.Connection, before: datetime, agent_id: str = DEFAULT_AGENT
) -> TrackHistory:
    """Every memory's history in the user's sessions judged before `before` (one aggregate
    query; the hook reads it while Signet works). Read only."""
    tables = _tables(con)
    lacks = tuple(t for t in ("session_memories", "session_scores") if t not in tables)
    if lacks:
        return TrackHistory(before, {}, np.zeros((6, 0)), lacks)
    sm, scores, by_agent, args = _args(con, _time(before), agent_id)
    sql, missing = _counts_sql(sm, scores, by_agent)
    found = con.execute(sql, args).fetchall()
    sums = np.array([r[1:] for r in found], dtype=np.float64).reshape(-1, 6).T
    rows = {str(r[0]): j for j, r in enumerate(found)}
    return TrackHistory(before, rows, np.nan_to_num(sums), tuple(missing))


def read_track_record(
    con: sqlite3.Connection,
    memory_ids: Sequence[str],
    before: datetime,
    *,
    agent_id: str = DEFAULT_AGENT,
    history: TrackHistory | None = None,
) -> TrackRecord:
    """The track records of `memory_ids` for a session of `agent_id` starting at `before`
    (module docstring): the one reader the trainer, the replayed loop and the hook share;
    `history`: the user's history read before at the same time (None: read now). Read only."""
    if history is None:
        history = read_track_history(con, before, agent_id)
    elif history.before != before:
        raise ValueError(f"a history read at {history.before}, not at {before}")
    ids = list(dict.fromkeys(str(m) for m in memory_ids))
    superseded, lacks = _superseded(con, ids, _time(before)) if ids else (set[str](), [])
    counts = history.counts(memory_ids, superseded)
    mean = history.mean
    return TrackRecord(track_record(counts, mean), mean, (*history.missing, *lacks))


# --- many session starts at once (the trainer) --------------------------------------------------


def _superseded_times(
    con: sqlite3.Connection, ids: Sequence[str]
) -> tuple[dict[str, str], list[str]]:
    """Of `ids`, the earliest time (`_TIME` text) each was deleted or superseded by any source
    (`_ended_sources`), and the sources the store lacks: a memory is superseded before a start
    exactly when that time is earlier (`_superseded`'s conditions, the time left open)."""
    sources, missing = _ended_sources(con)
    found: dict[str, str] = {}
    for start in range(0, len(ids), _CHUNK):
        part = list(ids[start : start + _CHUNK])
        for source in sources:
            for mid, at in con.execute(source.earliest(",".join("?" * len(part))), part):
                if at is not None and (str(mid) not in found or str(at) < found[str(mid)]):
                    found[str(mid)] = str(at)
    return found, missing


_CHUNK = 10_000  # ids per IN list (SQLite allows 32,766 parameters)


@dataclass(frozen=True, slots=True, eq=False)
class _Judged:
    """Every session judged so far in `_counts_sql`'s order reversed (oldest judgement first):
    keys and the time of each one's first score (`_TIME` text)."""

    keys: list[str]
    times: list[str]

    def latest(self, at: str) -> list[str]:
        """The keys of the `TRACK_SESSIONS` latest sessions judged before `at`."""
        end = bisect.bisect_left(self.times, at)
        return self.keys[max(0, end - TRACK_SESSIONS) : end]


def _judged(con: sqlite3.Connection, scores: set[str], by_agent: bool, agent: str) -> _Judged:
    scored_by = " WHERE agent_id = ?" if by_agent and "agent_id" in scores else ""
    sql = (
        f"SELECT session_key, MIN({_TIME.format('created_at')}) FROM session_scores{scored_by} "
        "GROUP BY session_key"
    )
    rows = sorted(
        ((str(r[1]), str(r[0])) for r in con.execute(sql, [agent] if scored_by else [])),
    )
    return _Judged([k for _, k in rows], [t for t, _ in rows])


@dataclass(frozen=True, slots=True, eq=False)
class _HistoryRows:
    """The `session_memories` rows of judged sessions, one per row, in the order the per-start
    aggregate sums them (by session key, then row id): per row its memory's position in
    `memories` (sorted: the aggregate's group order), its time as a position in `times` (the
    sorted `_TIME` texts) and the six terms `_counts_sql` sums; per row its session's position
    in `keys` (the sessions in key order)."""

    keys: dict[str, int]  # session key -> its position
    session: np.ndarray  # (r,) int64, ascending: a session's rows are one run
    memory: np.ndarray  # (r,) int64
    memories: np.ndarray  # (m,) str, sorted
    time: np.ndarray  # (r,) int64
    times: np.ndarray  # (t,) str, sorted
    terms: np.ndarray  # (6, r) float64
    names: list[str]  # `memories` as text


def _distinct(x: np.ndarray) -> np.ndarray:
    """The distinct values of a 1-D integer array, ascending (`np.unique` without its
    overhead, which dominates on the few hundred rows a start changes)."""
    x = np.sort(x)
    return x[np.concatenate(([True], x[1:] != x[:-1]))] if x.size else x


def _ranges(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The positions lo[i] .. hi[i] - 1 of every i, one range after the other."""
    sizes = hi - lo
    total = int(sizes.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offsets = np.repeat(lo - (np.cumsum(sizes) - sizes), sizes)
    return np.arange(total, dtype=np.int64) + offsets


# A term of whole numbers whose magnitudes over all rows sum below 2**52 adds and subtracts
# exactly in float64, in any order: every partial sum is a whole number float64 holds.
_EXACT = 2.0**52  # (a margin below 2**53 for the rounding of that sum itself)


@dataclass(frozen=True, slots=True, eq=False)
class _Nonzero:
    """The rows where one term is not 0, grouped by memory (in row order within each):
    a memory's sum of that term over any of its rows is the sum over these alone, bit for bit
    (adding 0 to a sum begun at 0.0 changes nothing)."""

    by_memory: np.ndarray  # (z,) row positions
    memory_lo: np.ndarray  # (m + 1,) each memory's first position in `by_memory`

    @classmethod
    def of(cls, term: np.ndarray, memory: np.ndarray, m: int) -> _Nonzero:
        rows = np.flatnonzero(term != 0)
        rows = rows[np.argsort(memory[rows], kind="stable")]
        return cls(rows, np.searchsorted(memory[rows], np.arange(m + 1)))


@dataclass(slots=True, eq=False)
class _Running:
    """`read_track_history` at one start after another from one `_HistoryRows`, each from the
    last: the rows that start counts (its judged sessions' rows written before it) are found
    from the last start's by the sessions that entered or left and the rows whose time passed.
    Then the counts and the terms of whole numbers (injected, judged, hits, ratings) are
    updated by those rows alone, exact in any order; the other terms (the judge's ratings in
    [0, 1], the agent's in [-1, 1]) of each memory those rows touch are summed again over its
    counted rows in row order from 0.0, as the aggregate sums them. So every sum is the same
    bit for bit, and starts in time order cost the rows that change, not every row of
    `TRACK_SESSIONS` sessions per start."""

    rows: _HistoryRows
    session_lo: np.ndarray  # (k + 1,) each session's first row (a session's rows are one run)
    by_time: np.ndarray  # (r,) the rows in time order
    sorted_time: np.ndarray  # (r,) their times (positions in `rows.times`)
    terms: tuple[np.ndarray, ...]  # the six terms, one contiguous row each
    summed: dict[int, _Nonzero]  # the terms summed again in order (not whole numbers)
    index: dict[str, int]  # memory id -> its position in `rows.memories`
    counted: np.ndarray  # (k,) bool: the sessions counted at the last start
    bound: int  # the last start's time, as a position in `rows.times`
    inside: np.ndarray  # (r,) bool: the rows counted at the last start
    sums: np.ndarray  # (m, 6) float64: each memory's six sums over them
    count: np.ndarray  # (m,) int64: how many of them each memory has

    @classmethod
    def of(cls, rows: _HistoryRows) -> _Running:
        k, m, r = len(rows.keys), rows.memories.size, rows.session.size
        terms = tuple(np.ascontiguousarray(t) for t in rows.terms)
        whole = [bool(np.all(t == np.round(t)) and np.abs(t).sum() < _EXACT) for t in terms]
        by_time = np.argsort(rows.time, kind="stable")
        return cls(
            rows,
            np.searchsorted(rows.session, np.arange(k + 1)),
            by_time,
            rows.time[by_time],
            terms,
            {j: _Nonzero.of(t, rows.memory, m) for j, t in enumerate(terms) if not whole[j]},
            {name: i for i, name in enumerate(rows.names)},
            np.zeros(k, dtype=bool),
            0,
            np.zeros(r, dtype=bool),
            np.zeros((m, 6), dtype=np.float64),
            np.zeros(m, dtype=np.int64),
        )

    def history(
        self, judged: list[str], before: datetime, ids: list[str], missing: tuple[str, ...]
    ) -> TrackHistory:
        """What `read_track_history(con, before)` reads (`judged`: the keys of the sessions
        it counts), its `rows` restricted to the memories `ids`."""
        rows = self.rows
        counted = np.zeros(len(rows.keys), dtype=bool)
        counted[[rows.keys[k] for k in judged if k in rows.keys]] = True
        self._move(counted, int(np.searchsorted(rows.times, _time(before))))
        present = self.count > 0
        col = np.cumsum(present) - 1  # a memory's column among the present ones
        # laid out as `read_track_history`'s (the transpose of one row per memory), so that
        # the user's mean adds them in the same order too
        sums = self.sums[present].T
        found: dict[str, int] = {}
        for m in ids:
            at = self.index.get(m)
            if at is not None and present[at]:
                found[m] = int(col[at])
        return TrackHistory(before, found, np.nan_to_num(sums), missing)

    def _move(self, counted: np.ndarray, bound: int) -> None:
        """Count the rows of the sessions `counted` written before time position `bound`."""
        rows = self.rows
        moved = np.flatnonzero(counted != self.counted)
        lo, hi = sorted((self.bound, bound))
        band = slice(*np.searchsorted(self.sorted_time, [lo, hi]).tolist())
        moved_lo, moved_hi = self.session_lo[moved], self.session_lo[moved + 1]
        if int((moved_hi - moved_lo).sum()) + band.stop - band.start > rows.session.size // 4:
            self._recount(counted, bound)  # a start far from the last: every row anew
            return
        near = np.concatenate([_ranges(moved_lo, moved_hi), self.by_time[band]])
        now = counted[rows.session[near]] & (rows.time[near] < bound)
        flipped = _distinct(near[now != self.inside[near]])
        entered = ~self.inside[flipped]
        self.inside[flipped] = entered
        self.counted, self.bound = counted, bound
        mem = rows.memory[flipped]
        sign = np.where(entered, 1, -1)
        np.add.at(self.count, mem, sign)
        for j, term in enumerate(self.terms):
            if j not in self.summed:
                np.add.at(self.sums[:, j], mem, sign * term[flipped])
        for j, nonzero in self.summed.items():
            self._sum_again(j, nonzero, _distinct(mem[self.terms[j][flipped] != 0]))

    def _sum_again(self, j: int, nonzero: _Nonzero, touched: np.ndarray) -> None:
        """Term `j` of the memories `touched`, summed over their counted rows where it is not 0,
        in row order from 0.0 (bincount adds in order, as SQLite's SUM does)."""
        if touched.size == 0:
            return
        lo, hi = nonzero.memory_lo[touched], nonzero.memory_lo[touched + 1]
        at = nonzero.by_memory[_ranges(lo, hi)]
        keep = self.inside[at]
        local = np.repeat(np.arange(touched.size), hi - lo)[keep]
        term = self.terms[j][at[keep]]
        self.sums[touched, j] = np.bincount(local, weights=term, minlength=touched.size)

    def _recount(self, counted: np.ndarray, bound: int) -> None:
        """`_move` by summing every counted row (in row order, from 0.0)."""
        rows = self.rows
        m = rows.memories.size
        self.counted, self.bound = counted, bound
        self.inside = counted[rows.session] & (rows.time < bound)
        at = np.flatnonzero(self.inside)
        mem = rows.memory[at]
        self.count = np.bincount(mem, minlength=m)
        for j, term in enumerate(self.terms):
            self.sums[:, j] = np.bincount(mem, weights=term[at], minlength=m)


def _factorize(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values sorted, each value's position among them): `np.unique(...,
    return_inverse=True)` of the texts, by a dict of the few distinct ones rather than a sort
    of every row's."""
    codes: dict[str, int] = {}
    first = np.array([codes.setdefault(v, len(codes)) for v in values], dtype=np.int64)
    order = sorted(codes, key=codes.__getitem__)
    by_text = sorted(range(len(order)), key=order.__getitem__)
    rank = np.empty(len(order), dtype=np.int64)
    rank[by_text] = np.arange(len(order), dtype=np.int64)
    return np.asarray([order[i] for i in by_text], dtype=str), rank[first]


def _history_rows(
    con: sqlite3.Connection, keys: Sequence[str], sm: set[str], agent: str
) -> tuple[_HistoryRows, tuple[str, ...]]:
    """The rows of the sessions `keys` with their six terms (`_counts_sql`'s, row by row),
    but for the rows whose terms are all 0 (`_evidence`)."""
    terms, missing = _terms(sm)
    agent_sql = " AND sm.agent_id = ?" if "agent_id" in sm else ""
    keys = sorted(set(keys))
    out: list[tuple[object, ...]] = []
    for start in range(0, len(keys), _CHUNK):
        part = keys[start : start + _CHUNK]
        query = (
            f"SELECT sm.session_key, sm.memory_id, {_TIME.format('sm.created_at')}, "
            f"{', '.join(terms)} FROM session_memories sm "
            f"WHERE sm.session_key IN ({','.join('?' * len(part))}){agent_sql} "
            f"AND {_evidence(terms)} "
            "ORDER BY sm.session_key, sm.rowid"
        )
        out += con.execute(query, [*part, *([agent] if agent_sql else [])]).fetchall()
    sessions: dict[str, int] = {}
    session = np.array([sessions.setdefault(str(r[0]), len(sessions)) for r in out], dtype=np.int64)
    memories, memory = _factorize([str(r[1]) for r in out])
    times, time = _factorize([str(r[2]) for r in out])
    values = np.array([r[3:] for r in out], dtype=np.float64).reshape(-1, 6).T
    rows = _HistoryRows(
        sessions,
        session,
        np.asarray(memory, dtype=np.int64).reshape(-1),
        memories,
        np.asarray(time, dtype=np.int64).reshape(-1),
        times,
        np.ascontiguousarray(values),
        [str(m) for m in memories.tolist()],
    )
    return rows, tuple(missing)


def read_track_records(
    con: sqlite3.Connection,
    starts: Sequence[tuple[Sequence[str], datetime]],
    *,
    agent_id: str = DEFAULT_AGENT,
) -> list[TrackRecord]:
    """`read_track_record(con, ids, before)` for each (ids, before) of `starts`, equal to it bit
    for bit, from one read of the judged sessions' rows (the trainer's samples: hundreds of
    session starts, each of which would aggregate the rows of its 200 judged sessions anew).
    Read only."""
    tables = _tables(con)
    lacks = tuple(t for t in ("session_memories", "session_scores") if t not in tables)
    ids = sorted({str(m) for memory_ids, _ in starts for m in memory_ids})
    earliest, gone = _superseded_times(con, ids) if ids else ({}, [])
    judged = None
    rows: _Running | None = None
    missing: tuple[str, ...] = lacks
    if not lacks:
        sm, scores = _columns(con, "session_memories"), _columns(con, "session_scores")
        judged = _judged(con, scores, "agent_id" in sm, agent_id)
        wanted = {k for _, before in starts for k in judged.latest(_time(before))}
        read, missing = _history_rows(con, sorted(wanted), sm, agent_id)
        rows = _Running.of(read)
    out: list[TrackRecord] = []
    for memory_ids, before in starts:
        at = _time(before)
        uniq = list(dict.fromkeys(str(m) for m in memory_ids))
        if judged is None or rows is None:
            history = TrackHistory(before, {}, np.zeros((6, 0)), lacks)
        else:
            history = rows.history(judged.latest(at), before, uniq, missing)
        superseded = {m for m in uniq if earliest.get(m, at) < at}
        counts = history.counts(memory_ids, superseded)
        lack = (*history.missing, *(gone if uniq else []))
        out.append(TrackRecord(track_record(counts, history.mean), history.mean, lack))
    return out
