"""The track record read from real stores (`signet_scorer.track_record.read_track_record`) on a
0.58 and a current store the simulated daemon wrote: a session's values do not change when
anything at or after its start is added, changed or deleted (evidence just before it does),
`access_count` alone changes nothing, a memory without history gets exactly the user's mean, a
store without the tables says so, and the trainer's samples, the replayed loop and the hook's
ranking carry the same values."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from signet_bench.learn.samples import load_samples
from signet_bench.replay.loop import SimOptions, Simulator
from signet_bench.store.corpus import read_corpus
from signet_bench.store.timestamps import format_iso, parse_ts
from signet_bench.world.synth.build import build_persona_store
from signet_scorer import track_record
from signet_scorer.hook.rank import HookSession, RankError, session_query
from signet_scorer.signals import signal_column
from signet_scorer.track_record import TRACK_SESSIONS, read_track_record, read_track_records

SESSIONS = 24
COL = signal_column("track_record")
TIME = "SUBSTR(REPLACE(REPLACE({}, 'T', ' '), 'Z', '') || '.000', 1, 23)"


@pytest.fixture(scope="module", params=["0.58", "current"])
def world(request, tmp_path_factory):
    """(store, the loop's kept session inputs) of a heavy user after SESSIONS sessions."""
    path = tmp_path_factory.mktemp(f"track-{request.param}") / "memories.db"
    build_persona_store("heavy", path, seed=5, n_memories=400, schema=request.param)
    sim = Simulator(path, SimOptions(scorer="none", seed=5, feedback_share=0.5))
    try:
        sim.loop.run(SESSIONS, keep=range(SESSIONS))
        kept = [sim.session_inputs(i) for i in range(SESSIONS)]
    finally:
        sim.close()
    return path, kept


def _ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _starts(path: Path) -> list[tuple[str, datetime]]:
    con = _ro(path)
    try:
        sql = "SELECT session_key, MIN(created_at) FROM session_memories GROUP BY 1 ORDER BY 2, 1"
        return [(k, parse_ts(t)) for k, t in con.execute(sql)]
    finally:
        con.close()


def _ids(con: sqlite3.Connection) -> list[str]:
    """Every memory ever a candidate, and ten that never were."""
    seen = [r[0] for r in con.execute("SELECT DISTINCT memory_id FROM session_memories ORDER BY 1")]
    sql = "SELECT id FROM memories WHERE id NOT IN (SELECT memory_id FROM session_memories)"
    return seen + [r[0] for r in con.execute(sql + " ORDER BY id LIMIT 10")]


# deleted, or superseded in the knowledge graph, by now
_GONE = (
    "SELECT (SELECT COALESCE(is_deleted, 0) FROM memories WHERE id = ?1) OR EXISTS (SELECT 1 "
    "FROM entity_attributes WHERE memory_id = ?1 AND (status = 'superseded' "
    "OR superseded_by IS NOT NULL))"
)


def _copy(path: Path, to: Path) -> sqlite3.Connection:
    """A writable copy of the store (SQLite's backup: the WAL's pages included)."""
    src, dst = _ro(path), sqlite3.connect(to)
    src.backup(dst)
    src.close()
    return dst


def _columns(con: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in con.execute(f"PRAGMA table_info({table})")}


def _add_session(con: sqlite3.Connection, ids: list[str], at: datetime, key: str) -> None:
    """A session at `at`, judged at `at`, in which every memory was injected and judged useful,
    hit by search and rated well."""
    stamp = format_iso(at)
    con.executemany(
        "INSERT INTO session_memories (id, session_key, memory_id, source, final_score, rank, "
        "was_injected, relevance_score, fts_hit_count, agent_relevance_score, "
        "agent_feedback_count, created_at) VALUES (?, ?, ?, 'effective', 1, ?, 1, 1, 4, 1, 3, ?)",
        [(f"{key}-{i}", key, m, i, stamp) for i, m in enumerate(ids)],
    )
    con.execute(
        "INSERT INTO session_scores (id, session_key, score, created_at) VALUES (?, ?, 1, ?)",
        [f"{key}-score", key, stamp],
    )


def _rewrite_from(con: sqlite3.Connection, ids: list[str], start: datetime) -> None:
    """Add, change and delete everything written at or after `start` (and the rows of every
    session judged at or after it), and raise every memory's access count; what was deleted or
    superseded before `start` stays so (moving its time would change the past)."""
    at = format_iso(start).replace("T", " ").replace("Z", "")
    late = f"{TIME.format('created_at')} >= ?"
    judged_late = (
        "SELECT session_key FROM session_scores GROUP BY session_key "
        f"HAVING MIN({TIME.format('created_at')}) >= ?"
    )
    con.execute(
        "UPDATE session_memories SET relevance_score = 1 - COALESCE(relevance_score, 0), "
        "fts_hit_count = fts_hit_count + 3, agent_relevance_score = -1, agent_feedback_count = 5, "
        f"was_injected = 1 - was_injected WHERE {late} OR session_key IN ({judged_late})",
        [at, at],
    )
    con.execute(f"UPDATE session_scores SET score = 1 - score WHERE {late}", [at])
    con.execute(
        f"DELETE FROM session_memories WHERE {late} AND session_key IN "
        "(SELECT session_key FROM session_memories ORDER BY created_at DESC LIMIT 40)",
        [at],
    )
    _add_session(con, ids, start, "late-at-start")
    _add_session(con, ids, start + timedelta(hours=2), "late-after")
    half = ids[::2]
    marks = ",".join("?" * len(half))
    con.execute(
        "UPDATE memories SET is_deleted = 1, deleted_at = ? "
        f"WHERE id IN ({marks}) AND COALESCE(is_deleted, 0) = 0",
        [format_iso(start), *half],
    )
    con.executemany(
        "INSERT INTO memory_history (id, memory_id, event, changed_by, created_at) "
        "VALUES (?, ?, 'deleted', 'user', ?)",
        [(f"late-{m}", m, format_iso(start)) for m in half],
    )
    attrs = _columns(con, "entity_attributes")
    if {"status", "updated_at"} <= attrs:
        still = " AND superseded_by IS NULL" if "superseded_by" in attrs else ""
        con.execute(
            "UPDATE entity_attributes SET status = 'superseded', updated_at = ? "
            f"WHERE memory_id IN ({marks}) AND COALESCE(status, 'active') != 'superseded'{still}",
            [format_iso(start), *half],
        )
    con.execute("UPDATE memories SET access_count = access_count + 1000")
    con.commit()


def _scored_session(path: Path) -> tuple[str, datetime]:
    """A session two thirds into the store: a history before it and sessions after it."""
    starts = _starts(path)
    return starts[2 * len(starts) // 3]


def test_nothing_at_or_after_the_start_changes_a_track_record(world, tmp_path):
    path, _ = world
    _, start = _scored_session(path)
    con = _ro(path)
    ids = _ids(con)
    before = read_track_record(con, ids, start)
    con.close()
    assert before.missing == ()
    assert np.unique(before.values).size > 10  # the history tells memories apart
    copy = _copy(path, tmp_path / "changed.db")
    try:
        _rewrite_from(copy, ids, start)
        after = read_track_record(copy, ids, start)
    finally:
        copy.close()
    np.testing.assert_array_equal(after.values, before.values)
    assert after.mean == before.mean


def test_evidence_just_before_the_start_counts(world, tmp_path):
    """The control of the test above: the same session written a second earlier does count."""
    path, _ = world
    _, start = _scored_session(path)
    con = _ro(path)
    ids = _ids(con)
    before = read_track_record(con, ids, start)
    con.close()
    copy = _copy(path, tmp_path / "earlier.db")
    try:
        _add_session(copy, ids, start - timedelta(seconds=1), "just-before")
        copy.commit()
        after = read_track_record(copy, ids, start)
    finally:
        copy.close()
    assert (after.values > before.values).all() and after.mean > before.mean


def test_access_count_alone_changes_nothing(world, tmp_path):
    path, _ = world
    _, start = _scored_session(path)
    con = _ro(path)
    ids = _ids(con)
    before = read_track_record(con, ids, start)
    con.close()
    copy = _copy(path, tmp_path / "accessed.db")
    try:
        copy.execute(
            "UPDATE memories SET access_count = access_count * 7 + 50, last_accessed = ?",
            [format_iso(start - timedelta(days=1))],
        )
        copy.commit()
        after = read_track_record(copy, ids, start)
    finally:
        copy.close()
    np.testing.assert_array_equal(after.values, before.values)


def test_a_memory_without_history_gets_the_users_mean(world):
    path, _ = world
    _, start = _scored_session(path)
    con = _ro(path)
    try:
        never = _ids(con)[-10:]  # never a candidate
        live = [m for m in never if not con.execute(_GONE, [m]).fetchone()[0]]
        got = read_track_record(con, live, start)
    finally:
        con.close()
    assert 0.0 < got.mean < 1.0 and len(live) >= 5
    np.testing.assert_array_equal(got.values, np.full(len(live), got.mean, dtype=np.float32))


def test_a_store_without_the_tables_says_so(world, tmp_path):
    path, _ = world
    _, start = _scored_session(path)
    copy = _copy(path, tmp_path / "bare.db")
    try:
        copy.execute("DROP TABLE session_scores")
        got = read_track_record(copy, ["a", "b"], start)
    finally:
        copy.close()
    assert got.missing == ("session_scores",)
    np.testing.assert_array_equal(got.values, np.full(2, 0.5, dtype=np.float32))


def test_the_loop_scored_with_the_readers_values(world):
    """The replayed loop's session inputs carry the reader's values at each session's start
    (read now, after every later session was written: the no-leakage rule end to end)."""
    path, kept = world
    con = _ro(path)
    try:
        varied = 0
        for inputs in kept:
            expected = read_track_record(con, inputs.memory_ids.tolist(), inputs.start).values
            np.testing.assert_array_equal(inputs.signals[:, COL], expected)
            varied += int(np.unique(expected).size > 1)
    finally:
        con.close()
    assert varied >= SESSIONS // 2


def test_the_trainers_samples_and_the_hook_agree(world):
    """For each trained session, the hook's score query for it (its recorded pool, at its
    start) carries the sample's track records, memory by memory."""
    path, _ = world
    samples, _ = load_samples(path, tz="UTC")
    assert len(samples) >= SESSIONS // 2
    dim = read_corpus(path).embeddings.shape[1]
    con = _ro(path)
    compared = 0
    try:
        for s in samples:
            session = HookSession(s.start, "UTC", s.project, s.session_key, "default")
            try:
                query, _ = session_query(con, session, [], dim=dim, slots=32)
            except RankError:
                continue
            track = np.asarray(query.candidate_track_record)
            hook = dict(zip(query.candidate_ids, track, strict=True))
            np.testing.assert_array_equal(
                s.signals[:, COL], [hook[m] for m in s.memory_ids.tolist()]
            )
            compared += int(np.unique(s.signals[:, COL]).size > 1)
    finally:
        con.close()
    assert compared >= len(samples) // 2


@pytest.mark.parametrize("sessions", [TRACK_SESSIONS, 5])
def test_many_starts_at_once_equal_each_start_read_alone(world, sessions, monkeypatch):
    """`read_track_records` (the trainer's one read for every session start of a training)
    gives each start exactly what `read_track_record` gives it alone: values bit for bit, the
    user's mean, what the store lacks; also when each start counts only its 5 latest judged
    sessions (so the judged window slides across the starts)."""
    monkeypatch.setattr(track_record, "TRACK_SESSIONS", sessions)
    path, _ = world
    con = _ro(path)
    try:
        everything = _ids(con)
        cands = dict(
            con.execute(
                "SELECT session_key, GROUP_CONCAT(memory_id) FROM session_memories GROUP BY 1"
            )
        )
        starts = [(cands[k].split(",") + everything[-3:], at) for k, at in _starts(path)]
        starts += [(everything, at + timedelta(minutes=1)) for _, at in _starts(path)[::5]]
        starts.append(([], starts[-1][1]))
        bulk = read_track_records(con, starts)
        alone = [read_track_record(con, ids, at) for ids, at in starts]
    finally:
        con.close()
    assert len(bulk) == len(starts) > SESSIONS
    for got, want in zip(bulk, alone, strict=True):
        assert got.values.dtype == want.values.dtype
        assert got.values.tobytes() == want.values.tobytes()
        assert got.mean == want.mean and got.missing == want.missing
    # the starts differ: the comparison is not between constants
    assert len({r.mean for r in alone}) > 3
