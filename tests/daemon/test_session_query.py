"""A session's query side (`daemon.session_query`) and the memories' source sessions (`store.corpus`):
the trainer's one read of the summary jobs picks, for every session start, the transcripts the
store's own query picks; a prompt's query is Signet's terms and the names in it."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from signet_bench.daemon.candidates import session_inputs
from signet_bench.daemon.session_query import (
    NO_QUERY,
    SessionQuery,
    StartQueries,
    prompt_query,
    start_query,
)
from signet_bench.store.corpus import memory_source_session, read_corpus
from signet_bench.store.schema import connect_writer, create_store
from signet_bench.store.write import insert_memories, insert_summary_job
from signet_scorer.context import SessionContextVector
from signet_scorer.contract import SIGNAL_NAMES
from signet_scorer.features import SessionInfo
from signet_scorer.signals import signal_column

T0 = datetime(2026, 4, 1, 8, 0, tzinfo=UTC)
WORDS = ("deploy", "cache", "postgres", "rollback", "schema", "index", "queue", "retry")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """30 summary jobs over two projects and none, in both timestamp formats, some not
    completed, several at the same second."""
    db = tmp_path_factory.mktemp("query") / "memories.db"
    create_store(db, now=T0)
    rng = np.random.default_rng(4)
    con = connect_writer(db)
    with con:
        for i in range(30):
            at = T0 + timedelta(minutes=int(rng.integers(0, 600)))
            fmt = "%Y-%m-%dT%H:%M:%S.000Z" if i % 2 else "%Y-%m-%d %H:%M:%S"
            done = i % 7 != 3
            insert_summary_job(
                con,
                f"job-{i:02d}",
                harness="test",
                project=(None, "web", "api")[i % 3],
                transcript=" ".join(rng.choice(WORDS, size=6)),
                created_at=at.strftime(fmt),
                status="completed" if done else "dead",
                completed_at=at.strftime(fmt) if done else None,
            )
    con.close()
    return db


def test_the_trainers_read_picks_what_the_store_query_picks(store):
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        jobs = StartQueries.read(con)
        checked = 0
        for minutes in range(0, 660, 7):
            start = T0 + timedelta(minutes=minutes)
            for project in (None, "web", "api", "none-such"):
                assert jobs.query(project, start) == start_query(con, project, start)
                checked += bool(start_query(con, project, start).terms)
        assert checked > 100
    finally:
        con.close()


def test_a_store_without_summary_jobs_has_no_start_terms(tmp_path):
    db = tmp_path / "bare.db"
    sqlite3.connect(db).close()
    con = sqlite3.connect(db)
    assert StartQueries.read(con).query("web", T0) == NO_QUERY
    con.close()


def test_prompt_query_is_the_recall_terms_and_the_names():
    q = prompt_query("When did Caroline move the postgres index to the new cluster?")
    assert q.terms == ("caroline", "move", "postgres", "index", "cluster")
    assert q.entities == ("Caroline",)
    with pytest.raises(TypeError, match="terms"):
        SessionQuery(terms="deploy")


def test_source_session_is_the_section_else_the_source_id():
    assert memory_source_session("session_3", "D3:1,D3:2") == "session_3"
    assert memory_source_session(None, " sess-9 ") == "sess-9"
    assert memory_source_session("", "") is None and memory_source_session(None, None) is None


def test_the_corpus_reads_source_sessions_and_inputs_carry_them(tmp_path):
    db = tmp_path / "memories.db"
    create_store(db, now=T0)
    rows = [
        {
            "id": f"m{i}",
            "content": f"note {i}",
            "created_at": T0 - timedelta(days=i),
            "source_id": ("a", "b", None)[i % 3],
            "source_section": "sec" if i == 4 else None,
        }
        for i in range(6)
    ]
    con = connect_writer(db)
    with con:
        insert_memories(con, rows)
    con.close()
    corpus = read_corpus(db)
    by_id = dict(zip(corpus.ids, corpus.source_session, strict=True))
    assert by_id == {"m0": "a", "m1": "b", "m2": None, "m3": "a", "m4": "sec", "m5": None}
    rows_ = corpus.rows(["m3", "m2"])
    inputs = session_inputs(
        corpus, rows_, "s", SessionInfo(T0, "UTC", None, None), SessionContextVector(None, "none")
    )
    assert inputs.sources.tolist() == ["a", None]
    # no query and no context: every signal but the hybrid's place (all tied) and length is 0
    assert inputs.query == NO_QUERY
    zero = [n for n in SIGNAL_NAMES if n not in ("hybrid_rank", "length")]
    assert not inputs.signals[:, [signal_column(n) for n in zero]].any()
