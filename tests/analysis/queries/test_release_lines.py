"""The dashboard's data on both release lines: comparisons recomputed by the workbench on a
current store (which keeps none), the status of a Signet that runs no predictor, the default
agent's rows only, focal entities from what a store holds, Signet's injections against the
scorer's picks, and the label sources statement."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from signet_bench.analysis.queries import dashboard as dash
from signet_bench.analysis.queries import sessions as s
from signet_bench.analysis.queries.derived import derived_frames, label_sources_text
from signet_bench.analysis.queries.entities import focal_entities
from signet_bench.analysis.queries.injections import injection_contrast, injection_summary
from signet_bench.analysis.queries.source import open_store
from signet_bench.replay.comparison_log import store_comparisons
from signet_bench.store.read import read_comparisons


@contextmanager
def _duck(store: Path) -> Iterator:
    con = open_store(store)
    try:
        yield con
    finally:
        con.close()


def _load(store: Path) -> dash.DashboardData:
    with _duck(store) as con:
        return dash.load_dashboard(con, store, None)


def _details(store: Path) -> dash.DashboardDetails:
    with _duck(store) as con:
        return dash.load_details(con, store, None)


@pytest.fixture(scope="module")
def bare(bare_current) -> dash.DashboardData:
    return _load(bare_current)


def test_derived_frames_are_the_store_comparisons_of_each_line(line_stores):
    """The child computes what `store_comparisons` gives: the 0.58 store's own rows, the current
    store's recomputed ones (equal to them: the same simulated sessions)."""
    old, new = (derived_frames(line_stores[line]) for line in ("0.58", "current"))
    assert old.comparisons.equals(read_comparisons(line_stores["0.58"]))
    assert new.comparisons.equals(store_comparisons(line_stores["current"]))
    assert read_comparisons(line_stores["current"]).height == 0  # the current store keeps none
    cols = ["session_key", "predictor_ndcg", "baseline_ndcg", "success_rate", "ema_updated"]
    assert_frame_equal(
        new.comparisons.select(cols).sort("session_key"),
        old.comparisons.select(cols).sort("session_key"),
    )
    assert old.label_sources["source"].to_list() == new.label_sources["source"].to_list()
    only = derived_frames(line_stores["current"], frames=("label_sources",))
    assert only.comparisons is None and only.label_sources.equals(new.label_sources)
    with pytest.raises(ValueError, match="frames: some of comparisons, label_sources"):
        derived_frames(line_stores["current"], frames=("sessions",))


def test_a_current_store_without_predictor_state_is_judged_offline(bare):
    """No cold-start dead end: the sessions carry the recomputed comparisons and EMA, the
    status is offline (comparing from the first session) and the verdict weighs them."""
    view = dash.dashboard_view(bare)
    assert bare.line == "current" and bare.state is None
    assert view.status.mode == "offline" and view.status.comparing
    assert not view.status.cold_start_exited and view.status.blockers == ()
    assert view.status_line.startswith("[predictor: none in this Signet")
    assert view.health.status == "offline"
    counted = view.sessions.filter(pl.col("counted"))
    assert counted.height >= 20 and view.sessions["success_rate"].null_count() == 0
    text, tone = dash.verdict(view)
    # no free ranker recorded and no served model beside it: the baseline's margin is told,
    # never as helping, with the next step
    assert tone in ("neutral", "warn") and "helping" not in text
    assert text.startswith("Not measured against a free ranker") and "Judged offline" in text
    assert f"Against Signet's baseline over the last {counted.height} judged sessions" in text
    assert f"`signet-bench train --db {bare.db} --out {bare.db}.predictor`" in text


def test_the_simulated_current_store_keeps_its_state(line_stores):
    """With the simulator's state beside it, a current store is shown as that daemon ran:
    active, its comparisons the recomputed ones."""
    data = _load(line_stores["current"])
    view = dash.dashboard_view(data)
    assert view.status.mode == "active" and view.status.line == "current"
    expected = store_comparisons(line_stores["current"])
    got = view.sessions.sort("session_key")
    assert (
        got["predictor_ndcg"].to_list() == expected.sort("session_key")["predictor_ndcg"].to_list()
    )


def test_a_0_58_store_reads_its_own_comparisons(line_stores):
    data = _load(line_stores["0.58"])
    view = dash.dashboard_view(data)
    assert data.line == "0.58" and view.status.mode == "active"
    assert view.sessions.filter(pl.col("counted")).height >= 20
    assert "Not kept by this store: path feedback, recall events." in label_sources_text(
        _details(line_stores["0.58"]).label_sources
    )


def test_sessions_of_other_agents_are_left_out(line_stores, tmp_path):
    """A second agent's rows under the same session keys change nothing the dashboard shows."""
    store = tmp_path / "two-agents.db"
    shutil.copy(line_stores["current"], store)
    con = sqlite3.connect(store)
    try:
        cols = [r[1] for r in con.execute("PRAGMA table_info(session_memories)")]
        rest = ", ".join(c for c in cols if c not in ("id", "agent_id", "was_injected"))
        con.execute(
            f"INSERT INTO session_memories (id, agent_id, was_injected, {rest}) "
            f"SELECT 'other-' || id, 'other', 1, {rest} FROM session_memories"
        )
        cols = [r[1] for r in con.execute("PRAGMA table_info(session_scores)")]
        rest = ", ".join(c for c in cols if c not in ("id", "agent_id", "confidence"))
        con.execute(
            f"INSERT INTO session_scores (id, agent_id, confidence, {rest}) "
            f"SELECT 'other-' || id, 'other', 0.0, {rest} FROM session_scores"
        )
        con.commit()
    finally:
        con.close()
    one, two = _load(line_stores["current"]), _load(store)
    keep = ["session_key", "candidates", "injected", "confidence", "predictor_ndcg", "counted"]
    assert two.sessions.select(keep).equals(one.sessions.select(keep))
    assert _details(store).injections.equals(_details(line_stores["current"]).injections)


def test_focal_entities_from_checkpoints_and_traversal(line_stores, tmp_path):
    """The loop's checkpoints name each session's focal entities; a store whose sessions name
    none says what it holds; a checkpoint naming focal entities and a candidate reached by
    graph traversal that mentions one make them the sessions' focal entities."""
    with _duck(line_stores["current"]) as con:
        recorded = focal_entities(con)
        checkpoints = con.sql("SELECT COUNT(*) FROM store.session_checkpoints").fetchone()[0]
    assert set(recorded.pairs["via"]) == {"checkpoint"}
    assert recorded.pairs["session_key"].n_unique() == checkpoints > 0
    store = tmp_path / "graph.db"
    shutil.copy(line_stores["current"], store)
    con = sqlite3.connect(store)
    con.execute("UPDATE session_checkpoints SET focal_entity_ids = NULL, focal_entity_names = NULL")
    con.commit()
    con.close()
    with _duck(store) as con:
        none = focal_entities(con)
    assert none.pairs.height == 0
    assert none.note.startswith("No session names a focal entity. The store holds 2 entities")
    con = sqlite3.connect(store)
    try:
        memory, entity = con.execute(
            "SELECT mem.memory_id, e.name FROM memory_entity_mentions mem"
            " JOIN entities e ON e.id = mem.entity_id ORDER BY mem.memory_id LIMIT 1"
        ).fetchone()
        first, second = (
            r[0]
            for r in con.execute(
                "SELECT session_key FROM session_memories WHERE memory_id = ?"
                " ORDER BY session_key LIMIT 2",
                (memory,),
            )
        )
        con.execute(
            'UPDATE session_checkpoints SET focal_entity_names = \'["portfolio", "user"]\''
            " WHERE session_key = ?",
            (first,),
        )
        con.execute(  # session start reached it by graph traversal
            "UPDATE session_memories SET source = 'ka_traversal'"
            " WHERE session_key = ? AND memory_id = ?",
            (second, memory),
        )
        con.commit()
    finally:
        con.close()
    with _duck(store) as con:
        found = focal_entities(con)
    pairs = set(found.pairs.select("session_key", "entity", "via").iter_rows())
    assert pairs == {
        (first, "portfolio", "checkpoint"),
        (first, "user", "checkpoint"),
        (second, entity, "graph traversal"),
    }
    assert found.note == (
        "Focal entities as the store names them, from the checkpoints in 1 session and "
        "the graph traversal's candidates in 1 session."
    )
    sessions = _load(store).sessions
    slices = s.entity_slices(sessions, found.pairs)
    assert slices["sessions"].sum() == 3 and set(slices["entity"]) == {"portfolio", "user", entity}


def test_injections_against_the_scorers_picks(line_stores, tmp_path):
    """Per session, the scorer's picks are as many of the start candidates as Signet injected,
    in the order of their scores; without scores, the summary says the scorer ranked none."""
    store = line_stores["current"]
    with _duck(store) as con:
        contrast = injection_contrast(con)
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        key = contrast["session_key"][0]
        rows = con.execute(
            "SELECT memory_id, was_injected, predictor_score FROM session_memories"
            " WHERE session_key = ? AND source <> 'fts_only'",
            (key,),
        ).fetchall()
    finally:
        con.close()
    injected = {m for m, inj, _ in rows if inj}
    ranked = sorted((r for r in rows if r[2] is not None), key=lambda r: (-r[2], r[0]))
    picks = {m for m, _, _ in ranked[: len(injected)]}
    got = contrast.row(0, named=True)
    assert (got["signet_injected"], got["scorer_picks"]) == (len(injected), len(picks))
    assert got["both_chose"] == len(injected & picks)
    assert injection_summary(contrast).startswith(f"In the {contrast.height} sessions the scorer")
    unscored = tmp_path / "unscored.db"
    shutil.copy(store, unscored)
    with sqlite3.connect(unscored) as con:
        con.execute("UPDATE session_memories SET predictor_score = NULL, predictor_rank = NULL")
    with _duck(unscored) as duck:
        none = injection_contrast(duck)
    assert none["scorer_picks"].sum() == 0
    assert injection_summary(none).startswith("The scorer ranked none of these sessions")


def test_no_scorer_scores_is_said_plainly(bare_current, tmp_path):
    """A current store as Signet writes it (no predictor scores) and no model: the verdict
    says there is nothing to judge yet and the one thing to do, with its command."""
    store = tmp_path / "unscored.db"
    shutil.copy(bare_current, store)
    with sqlite3.connect(store) as con:
        con.execute("UPDATE session_memories SET predictor_score = NULL, predictor_rank = NULL")
    view = dash.dashboard_view(_load(store))
    assert view.status.mode == "offline"
    text, tone = dash.verdict(view)
    assert text.startswith("Nothing to judge yet. Next: train the scorer on the store's ")
    assert text.endswith(f"`signet-bench train --db {store} --out {store}.predictor`.")
    assert tone == "neutral"
