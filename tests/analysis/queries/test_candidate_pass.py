"""The candidate pass counts every session's candidate rows as a plain reading of them does:
Signet's injections, the scorer's picks (as many of the session's candidates other than
`fts_only` as Signet injected, in the order of their scores, ties by memory id), the judge's
ratings of each choice, the graph traversal's candidates and a named condition, on stores of
both release lines."""

from __future__ import annotations

import sqlite3
from collections import defaultdict

import pytest

from signet_bench.analysis.queries.candidate_pass import candidate_sessions
from signet_bench.analysis.queries.source import open_store
from signet_scorer.workbench import DEFAULT_AGENT

TRAVERSAL = ("ka_traversal", "ka_traversal_pinned")


def _read_rows(store) -> list[tuple]:
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        columns = {r[1] for r in con.execute("PRAGMA table_info(session_memories)")}
        agent = "agent_id = ?" if "agent_id" in columns else "? IS NOT NULL"
        return con.execute(
            "SELECT session_key, memory_id, source, was_injected, predictor_score,"
            f" relevance_score FROM session_memories WHERE {agent}",
            (DEFAULT_AGENT,),
        ).fetchall()
    finally:
        con.close()


def _expected(rows: list[tuple]) -> dict[str, dict]:
    """Each session's counts, read row by row."""
    by_session: dict[str, list[tuple]] = defaultdict(list)
    for row in rows:
        by_session[row[0]].append(row)
    out = {}
    for key, all_rows in by_session.items():
        kept = [r for r in all_rows if r[2] != "fts_only"]
        chosen = [r for r in kept if r[3]]
        scored = sorted((r for r in kept if r[4] is not None), key=lambda r: (-r[4], r[1]))
        picks = scored[: len(chosen)]
        out[key] = {
            "candidates": len(kept),
            "signet_injected": len(chosen),
            "scorer_picks": len(picks),
            "both_chose": sum(1 for r in picks if r[3]),
            "signet_judged": sum(1 for r in chosen if r[5] is not None),
            "signet_relevance_sum": sum(r[5] for r in chosen if r[5] is not None),
            "scorer_judged": sum(1 for r in picks if r[5] is not None),
            "scorer_relevance_sum": sum(r[5] for r in picks if r[5] is not None),
            "traversal": sum(1 for r in all_rows if r[2] in TRAVERSAL),
            "judged rows": sum(1 for r in all_rows if r[5] is not None),
        }
    return out


def test_the_pass_counts_each_session_as_its_rows_say(line_store):
    expected = _expected(_read_rows(line_store))
    con = open_store(line_store)
    try:
        got = candidate_sessions(con, counted={"judged rows": "relevance_score IS NOT NULL"})
    finally:
        con.close()
    assert got.height == len(expected) > 0
    picked = 0
    for row in got.iter_rows(named=True):
        want = expected[row["session_key"]]
        for column, value in want.items():
            if column.endswith("_sum"):
                assert (row[column] or 0.0) == pytest.approx(value), (row["session_key"], column)
            else:
                assert row[column] == value, (row["session_key"], column)
        picked += want["scorer_picks"]
    assert picked > 0  # the stores' scores rank something
