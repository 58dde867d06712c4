"""Focal entities end to end: the loop records them on a store with a knowledge graph, the
comparison reporting slices by them, and the drift explorer's filter narrows its sessions to
one entity's (its stretches then hold that many of the entity's own sessions)."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from signet_bench.analysis.queries import drift
from signet_bench.analysis.queries.derived import line_sessions
from signet_bench.analysis.queries.entities import focal_entities
from signet_bench.analysis.queries.sessions import entity_slices, project_slices
from signet_bench.analysis.queries.slices import slices_text, store_slices
from signet_bench.analysis.queries.source import open_store
from signet_bench.store.schema import RELEASE_LINES
from tests.analysis.queries.stores import ARCHITECT_SESSIONS

# --- the filter, on frames made by hand ---------------------------------------------------------

# a: sessions 1, 2, 4; b: 2, 5; c: 6 (session 3 names none)
PAIRS = pl.DataFrame(
    [("s1", "a"), ("s2", "a"), ("s2", "b"), ("s4", "a"), ("s5", "b"), ("s6", "c")],
    schema=["session_key", "entity"],
    orient="row",
)


def _sessions(n: int = 6) -> pl.DataFrame:
    """`n` sessions shaped like `session_frame`'s columns the drift views read: each counted,
    the predictor winning the even-numbered ones."""
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    return pl.DataFrame(
        {
            "n": list(range(1, n + 1)),
            "session_key": [f"s{i}" for i in range(1, n + 1)],
            "project": ["p"] * n,
            "started_at": [t0 + timedelta(days=i) for i in range(n)],
            "counted": [True] * n,
            "predictor_won": [i % 2 == 0 for i in range(1, n + 1)],
            "margin": [0.1 if i % 2 == 0 else -0.1 for i in range(1, n + 1)],
        }
    )


def test_the_choices_are_all_then_entities_by_sessions():
    assert drift.entity_options(PAIRS) == {
        "all": None,
        "a (3 sessions)": "a",
        "b (2 sessions)": "b",
        "c (1 session)": "c",
    }
    assert drift.entity_options(PAIRS.clear()) == {drift.ALL_SESSIONS: None}


def test_the_filter_keeps_an_entitys_sessions_with_their_numbers():
    sessions = _sessions()
    assert drift.sessions_of_entity(sessions, PAIRS, None).equals(sessions)
    assert drift.sessions_of_entity(sessions, PAIRS, "a")["n"].to_list() == [1, 2, 4]
    assert drift.sessions_of_entity(sessions, PAIRS, "b")["session_key"].to_list() == ["s2", "s5"]
    with pytest.raises(ValueError, match="focal entity 'zzz': no session names it"):
        drift.sessions_of_entity(sessions, PAIRS, "zzz")


def test_a_filtered_stretch_holds_window_of_the_entitys_sessions():
    of_a = drift.sessions_of_entity(_sessions(), PAIRS, "a")  # sessions 1, 2, 4
    success = drift.success_by_window(of_a, 2)
    assert success["last_n"].to_list() == [2, 4]  # (1, 2) and (4), labelled by the loop's n
    assert success["counted"].to_list() == [2, 1]
    assert success["win_rate"].to_list() == [0.5, 1.0]
    judged = pl.DataFrame(  # one young and one old judged memory per session
        {
            "session_key": [f"s{i}" for i in range(1, 7) for _ in range(2)],
            "relevance": [0.9, 0.1] * 6,
            "age_days": [1.0, 60.0] * 6,
        }
    )
    signal = drift.drift_by_window(judged, of_a, 2)
    assert signal["recent"].to_list() == [2, 1] and signal["old"].to_list() == [2, 1]
    assert signal["drift"].to_list() == pytest.approx([0.8, 0.8])


# --- a simulated store with a knowledge graph ---------------------------------------------------


@pytest.mark.parametrize("line", RELEASE_LINES)
def test_the_loop_names_each_sessions_focal_entities(architect, line):
    """Every session's checkpoint names its focal entities (the project's entity first, then the
    pinned ones); on a 0.58 store its comparison names the project's entity too. Sliced by
    entity, a pinned entity holds every session and a project's entity the project's."""
    db = architect[line]
    con = open_store(db)
    try:
        focal = focal_entities(con)
        sessions = line_sessions(con, db)
        pinned = set(con.sql("SELECT name FROM store.entities WHERE pinned = 1").pl()["name"])
    finally:
        con.close()
    assert sessions.height == ARCHITECT_SESSIONS and pinned
    via = {"comparison", "checkpoint"} if line == "0.58" else {"checkpoint"}
    assert set(focal.pairs["via"]) == via
    assert focal.pairs["session_key"].n_unique() == ARCHITECT_SESSIONS
    if line == "0.58":
        named = sessions.select("focal_entity_name", "project")
        assert named["focal_entity_name"].to_list() == named["project"].to_list()
    slices = entity_slices(sessions, focal.pairs)
    everywhere = slices.filter(pl.col("entity").is_in(list(pinned)))
    assert set(everywhere["entity"]) == pinned
    assert (everywhere["sessions"] == ARCHITECT_SESSIONS).all()
    of_projects = slices.filter(~pl.col("entity").is_in(list(pinned)))
    assert of_projects.rename({"entity": "project"}).equals(project_slices(sessions))


def test_a_checkpoint_lists_the_primary_entity_first(architect):
    con = sqlite3.connect(f"file:{architect['current']}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT project, focal_entity_names FROM session_checkpoints").fetchall()
    finally:
        con.close()
    assert len(rows) == ARCHITECT_SESSIONS
    assert all(json.loads(names)[0] == project for project, names in rows)


def test_the_command_lines_summary_has_the_entity_slice(architect, young, tmp_path):
    """The entity slice is printed where the store names focal entities, and left out where
    none does."""
    text = slices_text(store_slices(architect["0.58"]))
    assert "success by project" in text and "success by focal entity" in text
    assert "Focal entities as the store names them, from the comparison in 12 sessions" in text
    plain = tmp_path / "young.db"
    con = sqlite3.connect(plain)
    src = sqlite3.connect(f"file:{young}?mode=ro", uri=True)
    src.backup(con)
    src.close()
    con.execute("UPDATE predictor_comparisons SET focal_entity_name = NULL")
    con.execute("UPDATE session_checkpoints SET focal_entity_names = NULL")
    con.commit()
    con.close()
    text = slices_text(store_slices(plain))
    assert "success by project" in text and "focal entity" not in text
