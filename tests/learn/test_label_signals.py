"""The label signals a store keeps, on both release lines: which sources a store has and how
many sessions each covers (`label_sources`), and current Signet's signals reaching the labels
of `load_samples` (rows written into a copy of a simulated current store)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.labels import fts_adjustment
from signet_bench.learn.samples import (
    LABEL_SOURCES,
    label_sources,
    load_samples,
    read_label_signals,
)
from signet_bench.store.read import SESSION_START_SURFACE, open_readonly, read_sessions

TZ = "Europe/Berlin"  # the light persona's zone
CFG = DEFAULT_CONFIG
CURRENT_ONLY = {"path_feedback_events", "session_recall_events"}


def _sources(store: Path) -> dict[str, dict]:
    con = open_readonly(store)
    try:
        frame = label_sources(read_label_signals(con))
    finally:
        con.close()
    return {row["source"]: row for row in frame.iter_rows(named=True)}


def _distinct_sessions(store: Path, sql: str) -> int:
    """An independent count, straight from SQLite."""
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return con.execute(f"SELECT COUNT(DISTINCT session_key) FROM {sql}").fetchone()[0]
    finally:
        con.close()


def test_label_sources_say_what_each_line_keeps(line_stores):
    """Every source is reported in order; the 0.58 store lacks current Signet's two tables, the
    current store has them (empty: the simulator writes no recall or path feedback); neither
    has the session-start wrapper's record beside its workbench."""
    old, new = _sources(line_stores["0.58"]), _sources(line_stores["current"])
    assert list(old) == list(new) == [name for name, _, _ in LABEL_SOURCES]
    for name, where, _ in LABEL_SOURCES:
        hook = where == "hook_injections.db"
        assert new[name]["present"] != hook and new[name]["where"] == where
        assert old[name]["present"] == (where not in CURRENT_ONLY and not hook)
    for name in ("path feedback", "recall events"):
        assert old[name]["sessions"] == new[name]["sessions"] == 0
        assert old[name]["rows"] == new[name]["rows"] == 0


@pytest.mark.parametrize("line", ["0.58", "current"])
def test_label_sources_count_the_sessions_each_covers(line_stores, line):
    store = line_stores[line]
    got = _sources(store)
    agent = " AND agent_id = 'default'" if line == "current" else ""
    expected = {
        "session scores": f"session_scores WHERE score IS NOT NULL{agent}",
        "judge relevance": f"session_memories WHERE relevance_score IS NOT NULL{agent}",
        "FTS hits": f"session_memories WHERE fts_hit_count > 0{agent}",
        "agent feedback": f"session_memories WHERE agent_relevance_score IS NOT NULL{agent}",
    }
    for name, sql in expected.items():
        assert got[name]["sessions"] == _distinct_sessions(store, sql), name
    assert got["session scores"]["sessions"] == 30
    assert 0 < got["agent feedback"]["sessions"] < got["judge relevance"]["sessions"]


# --- current Signet's signals reach the labels ---------------------------------------------------


def _rows(store: Path, sql: str, *params) -> list[tuple]:
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def _candidates(store: Path, key: str, where: str) -> list[tuple[str, int, float | None]]:
    """(memory id, FTS hits, judge relevance) of the session's start candidates matching
    `where`, by memory id."""
    return _rows(
        store,
        "SELECT memory_id, fts_hit_count, relevance_score FROM session_memories "
        f"WHERE session_key = ? AND source = 'effective' AND {where} ORDER BY memory_id",
        key,
    )


def _write_signals(store: Path, key: str, rel: str, agent: str, path: str, recalled: str) -> None:
    """Into session `key`: a judge rating of 0.05 for `rel`; an agent rating (0.4) with path
    feedback (reward 0.6) for `agent`; path feedback alone (rating -0.5, a dead end) for
    `path`; two recalls (two context epochs) of `recalled`."""
    con = sqlite3.connect(store)
    try:
        where = "WHERE session_key = ? AND memory_id = ?"
        con.execute(f"UPDATE session_memories SET relevance_score = 0.05 {where}", (key, rel))
        con.execute(
            "UPDATE session_memories SET agent_relevance_score = 0.4, agent_feedback_count = 1 "
            + where,
            (key, agent),
        )
        con.executemany(
            "INSERT INTO path_feedback_events (id, agent_id, session_key, memory_id, path_hash, "
            "path_json, rating, reward, created_at) VALUES (?, 'default', ?, ?, 'h', '{}', ?, ?, "
            "'2026-03-01T10:00:00.000Z')",
            [("p1", key, agent, 0.4, 0.6), ("p2", key, path, -0.5, -0.15)],
        )
        con.executemany(
            "INSERT INTO session_recall_events (session_key, agent_id, context_epoch, item_kind, "
            "item_id, surface, mode, score, created_at) VALUES (?, 'default', ?, 'memory', ?, "
            "'prompt', 'hybrid', 0.8, '2026-03-01T10:00:00.000Z')",
            [(key, epoch, recalled) for epoch in (0, 1)],
        )
        con.commit()
    finally:
        con.close()


def _labels(samples, key: str) -> dict[str, float]:
    sample = next(s for s in samples if s.session_key == key)
    return dict(zip(sample.memory_ids.tolist(), sample.labels.tolist(), strict=True))


def _choose(store: Path, samples, continuity: dict[str, float]) -> tuple[str, list, str]:
    """A trainable session (continuity >= 0.3) with three injected memories the agent did not
    rate, that the judge rated and that are neither deleted nor superseded (label >= 0), and a
    candidate not injected, without FTS hits, labelled below a missed memory's 0.6: (key, the
    three rows, that memory)."""
    for sample in samples:
        key = sample.session_key
        old = _labels(samples, key)
        injected = [
            row
            for row in _candidates(store, key, "was_injected = 1 AND agent_relevance_score IS NULL")
            if row[0] in old and old[row[0]] >= 0 and row[2] is not None
        ]
        others = _candidates(store, key, "was_injected = 0 AND fts_hit_count = 0")
        unmissed = [m for m, _, _ in others if old.get(m, 0.0) < CFG.fts_missed_label]
        if continuity[key] >= 0.3 and len(injected) >= 3 and unmissed:
            return key, injected[:3], unmissed[0]
    raise AssertionError("no session of the fixture fits")


def test_current_signals_change_the_labels(line_stores, tmp_path):
    """On a copy of the current store, in one trainable session: a new judge rating sets an
    injected memory's label; an agent rating with a path reward, and path feedback alone (its
    rating standing in for the agent's, its dead end lowering the usage term), give the addendum's
    formula; two recalls make a memory that was not injected a missed one (>= 0.6, and in the
    sample whether or not its negatives drew it before).
    Every other session keeps its labels."""
    store = tmp_path / "current.db"
    shutil.copy(line_stores["current"], store)
    before, _ = load_samples(store, tz=TZ)
    sessions = read_sessions(store)
    continuity = dict(zip(sessions["session_key"], sessions["score"], strict=True))
    key, picked, recalled = _choose(store, before, continuity)
    old, cont = _labels(before, key), continuity[key]
    (rel, rel_hits, rel_old), (agent, agent_hits, _), (path, path_hits, _) = picked
    _write_signals(store, key, rel, agent, path, recalled)
    after, _ = load_samples(store, tz=TZ)
    new = _labels(after, key)

    boost = CFG.fts_confirmed_boost if rel_hits else 0.0
    edited = new[rel] - (0.05 + boost)  # the edit modifier, the same before and after
    assert edited == pytest.approx(0.0) or edited == pytest.approx(CFG.edited_boost)
    assert old[rel] == pytest.approx(min(1.0, min(1.0, rel_old + boost) + edited))
    assert new[agent] == pytest.approx(
        0.7 * 0.4 + 0.2 * min(1.0, float(fts_adjustment(agent_hits)) + 0.6) + 0.1 * cont
    )
    usage = float(fts_adjustment(path_hits)) - 0.15
    assert new[path] == pytest.approx(0.7 * -0.5 + 0.2 * usage + 0.1 * cont)
    assert new[path] < 0 <= old[path]
    assert recalled in new and new[recalled] >= CFG.fts_missed_label
    rest = [s for s in after if s.session_key != key]
    assert len(rest) == len(before) - 1
    for s in rest:
        assert _labels(after, s.session_key) == _labels(before, s.session_key)


def test_session_starts_own_recall_claims_are_no_evidence(line_stores, tmp_path):
    """Current Signet records every memory session start injected as a recall event of the
    session-start surface; those claims are the injection itself, so neither the labels nor
    the label sources change."""
    store = tmp_path / "current.db"
    shutil.copy(line_stores["current"], store)
    before, _ = load_samples(store, tz=TZ)
    con = sqlite3.connect(store)
    try:
        con.execute(
            "INSERT INTO session_recall_events (session_key, agent_id, context_epoch, item_kind,"
            " item_id, surface, mode, created_at) SELECT session_key, 'default', 0, 'memory',"
            f" memory_id, '{SESSION_START_SURFACE}', 'automatic', created_at"
            " FROM session_memories WHERE was_injected = 1"
        )
        con.commit()
        claims = con.execute("SELECT COUNT(*) FROM session_recall_events").fetchone()[0]
    finally:
        con.close()
    assert claims > 0
    after, _ = load_samples(store, tz=TZ)
    assert [s.session_key for s in after] == [s.session_key for s in before]
    for a, b in zip(after, before, strict=True):
        assert a.labels.tolist() == b.labels.tolist()
    assert _sources(store)["recall events"]["sessions"] == 0
