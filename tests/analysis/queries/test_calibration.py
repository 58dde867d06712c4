"""The labeler's data: the sample, one session's items, saving (transactional, relabelling
updates, a busy workbench retries), MAE over time, export."""

from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import datetime, timedelta

import duckdb
import polars as pl
import pytest

from signet_bench.analysis.judge_monitor import calibration_mae
from signet_bench.analysis.queries import calibration as cal
from signet_bench.analysis.queries import source
from signet_bench.analysis.queries.sessions import session_frame
from signet_bench.config import DEFAULT_CONFIG


@pytest.fixture()
def workbench(demo, tmp_path):
    """A copy of the demo's workbench, so labels written here stay here."""
    path = tmp_path / "workbench.duckdb"
    shutil.copy(demo.workbench, path)
    return path


def test_sample_takes_recent_confident_unlabelled_sessions(con, demo):
    sessions = session_frame(con)
    labels = cal.read_labels(demo.workbench)
    sample = cal.calibration_sample(sessions, labels)
    assert 0 < sample.height <= DEFAULT_CONFIG.calibration_sample_sessions
    assert (sample["confidence"] >= DEFAULT_CONFIG.calibration_min_confidence).all()
    assert not set(sample["session_key"]) & set(labels["session_key"])
    assert sample["n"].is_sorted(descending=True)
    assert cal.calibration_sample(sessions, labels).equals(sample)  # the same draw


def test_a_partly_labelled_session_stays_in_the_picker_until_finished(con, demo, workbench):
    sessions = session_frame(con)
    first = cal.calibration_sample(sessions, cal.read_labels(workbench), labeler="ann")
    assert (first["labelled"] == 0).all()
    key = first["session_key"][-1]  # the oldest of the draw
    items = cal.label_items(con, key, cal.read_labels(workbench), "ann")
    n = items.height
    assert n >= 3 and first.filter(pl.col("session_key") == key)["injected"][0] == n
    four = dict.fromkeys(items["memory_id"].head(min(4, n - 1)).to_list(), 0.5)
    cal.save_labels(workbench, key, four, items, "ann")
    mine = cal.calibration_sample(sessions, cal.read_labels(workbench), labeler="ann")
    row = mine.row(0, named=True)  # a started session comes first
    assert row["session_key"] == key and row["labelled"] == len(four)
    assert cal.picker_label(row).endswith(f" · {len(four)} of {n} labelled")
    assert cal.picker_label(row).startswith(f"#{row['n']} · {row['project']} · ")
    others = cal.calibration_sample(sessions, cal.read_labels(workbench), labeler="bob")
    assert key not in others["session_key"].to_list()  # another labeler draws untouched ones
    rest = dict.fromkeys(items["memory_id"].to_list(), 1.0)
    cal.save_labels(workbench, key, rest, items, "ann")
    done = cal.calibration_sample(sessions, cal.read_labels(workbench), labeler="ann")
    assert key not in done["session_key"].to_list()  # finished: it leaves the picker


def test_a_workbench_from_before_the_rename_reads_the_same(tmp_path):
    path = tmp_path / "old.duckdb"
    with duckdb.connect(str(path)) as old:
        old.execute(
            "CREATE TABLE predictor_calibration (id TEXT, session_key TEXT, memory_id TEXT,"
            " human_label DOUBLE, scorer_label DOUBLE, delta DOUBLE, labeled_at TIMESTAMP,"
            " labeler TEXT)"
        )
        old.execute(
            "INSERT INTO predictor_calibration VALUES"
            " ('i', 's', 'm', 0.5, 0.75, -0.25, TIMESTAMP '2026-03-01 10:00:00', 'ann')"
        )
    labels = cal.read_labels(path)
    assert labels.columns == cal.read_labels(None).columns
    assert labels.select("human_label", "judge_relevance", "delta").row(0) == (0.5, 0.75, -0.25)
    assert cal.mae_over_time(labels)["mae"].to_list() == [0.25]
    with duckdb.connect(str(path), read_only=True) as con:  # reading renamed nothing
        assert "scorer_label" in {
            r[0] for r in con.execute("DESCRIBE predictor_calibration").fetchall()
        }


def test_the_transcript_shows_the_conversation_the_memories_were_used_in(con, demo):
    labels = cal.read_labels(demo.workbench)
    key = labels["session_key"][0]
    text = cal.transcript_excerpt(con, key)
    job = con.execute(
        "SELECT transcript FROM store.summary_jobs WHERE session_key = ?", [key]
    ).fetchone()[0]
    assert text.startswith(job + "\nuser: ")  # the summary job's line, then the prompts
    assert text.count("\nassistant: ") == text.count("\nuser: ") >= 10
    items = cal.label_items(con, key, labels, labels["labeler"][0])
    mine = labels.filter(pl.col("session_key") == key)
    human = dict(zip(mine["memory_id"], mine["human_label"], strict=True))
    cited = {m for m, c in zip(items["memory_id"], items["content"], strict=True) if c in text}
    assert cited, "the conversation cites the memories the session used"
    assert min(human[m] for m in cited) >= 0.5 > min(human[m] for m in items["memory_id"])
    assert cal.transcript_excerpt(con, "no-such-session").startswith("(no transcript")


def test_items_are_the_injected_memories_with_earlier_labels(con, demo):
    labels = cal.read_labels(demo.workbench)
    key = labels["session_key"][0]
    labeler = labels["labeler"][0]
    items = cal.label_items(con, key, labels, labeler)
    injected = con.execute(
        "SELECT COUNT(*) FROM store.session_memories WHERE session_key = ? AND was_injected = 1",
        [key],
    ).fetchone()[0]
    assert items.height == injected and items["rank"].is_sorted()
    mine = labels.filter(pl.col("session_key") == key)
    assert items["human_label"].drop_nulls().len() == mine.height
    assert cal.label_items(con, key, labels, "someone else")["human_label"].null_count() == injected


def test_saving_then_relabelling_updates_the_row(con, demo, workbench):
    sessions = session_frame(con)
    key = cal.calibration_sample(sessions, cal.read_labels(workbench))["session_key"][0]
    items = cal.label_items(con, key, cal.read_labels(workbench), "tester")
    first, second = items["memory_id"][0], items["memory_id"][1]
    before = cal.read_labels(workbench).height
    n = cal.save_labels(workbench, key, {first: 1.0, second: None}, items, "tester")
    assert n == 1
    after = cal.read_labels(workbench)
    row = after.filter((pl.col("session_key") == key) & (pl.col("memory_id") == first))
    assert after.height == before + 1 and row["human_label"].to_list() == [1.0]
    assert row["delta"][0] == pytest.approx(1.0 - items["judge_relevance"][0])
    cal.save_labels(workbench, key, {first: 0.25}, items, "tester")
    again = cal.read_labels(workbench)
    row = again.filter((pl.col("session_key") == key) & (pl.col("memory_id") == first))
    assert again.height == after.height and row["human_label"].to_list() == [0.25]
    with pytest.raises(ValueError, match="not injected"):
        cal.save_labels(workbench, key, {"no-such-memory": 1.0}, items, "tester")


_HOLD = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("held", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


def _hold(path, seconds: float) -> subprocess.Popen:
    """Another process holding the workbench read-write (as the trainer does)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    return proc


def test_a_busy_workbench_is_retried_and_reported(con, workbench, monkeypatch):
    key = cal.calibration_sample(session_frame(con), cal.read_labels(workbench))["session_key"][0]
    items = cal.label_items(con, key, cal.read_labels(workbench), "tester")
    memory = items["memory_id"][0]
    waits: list[int] = []
    holder = _hold(workbench, 1.0)
    n = cal.save_labels(workbench, key, {memory: 0.5}, items, "tester", on_wait=waits.append)
    holder.wait()
    assert n == 1 and waits and waits[0] == 1  # it waited, then wrote
    monkeypatch.setattr(source, "BUSY_ATTEMPTS", 2)
    monkeypatch.setattr(source, "BUSY_WAIT_S", 0.01)
    holder = _hold(workbench, 30.0)
    try:
        with pytest.raises(source.WorkbenchBusy, match="busy"):
            cal.save_labels(workbench, key, {memory: 0.75}, items, "tester")
    finally:
        holder.kill()
        holder.wait()
    mine = (pl.col("session_key") == key) & (pl.col("memory_id") == memory)
    row = cal.read_labels(workbench).filter(mine & (pl.col("labeler") == "tester"))
    assert row["human_label"].to_list() == [0.5]  # the refused save changed nothing


def test_mae_per_day_and_running():
    day = datetime(2026, 3, 1)
    labels = pl.DataFrame(
        {
            "session_key": ["a", "a", "b", "b"],
            "memory_id": ["m1", "m2", "m3", "m4"],
            "human_label": [1.0, 0.0, 1.0, 0.5],
            "judge_relevance": [0.9, 0.1, 0.2, 0.6],
            "labeler": ["h"] * 4,
            "labeled_at": [day, day, day + timedelta(days=1), day + timedelta(days=1)],
        }
    )
    mae = cal.mae_over_time(labels)
    assert mae["labels"].to_list() == [2, 2]
    assert mae["mae"].to_list() == pytest.approx([0.1, 0.45])
    running = calibration_mae(
        labels["human_label"].to_numpy(), labels["judge_relevance"].to_numpy()
    )
    assert mae["running_mae"][-1] == pytest.approx(running)
    assert mae["flagged"].to_list() == [False, running > DEFAULT_CONFIG.calibration_mae_threshold]
    assert cal.mae_over_time(labels.head(0)).height == 0


def test_export_writes_every_label(demo, tmp_path):
    out = cal.export_labels(demo.workbench, tmp_path / "labels.parquet")
    assert pl.read_parquet(out).equals(cal.read_labels(demo.workbench))


def test_keys_give_the_levels_in_order_and_name_every_action():
    assert list(cal.LABEL_KEYS) == ["1", "2", "3", "4", "5"]
    assert tuple(cal.LABEL_KEYS.values()) == cal.LABEL_LEVELS == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert len(set(cal.KEYS)) == len(cal.KEYS)  # no key does two things
    assert cal.KEY_NAMES["3"] == "0.50 somewhat" and set(cal.KEY_NAMES) < set(cal.KEYS)
    assert {cal.KEY_NAMES["s"], cal.KEY_NAMES["b"]} == {"skip", "back"}


def _type(cursor: cal.LabelCursor, keys: str | list[str]) -> cal.LabelCursor:
    for key in keys:
        cursor = cal.press(cursor, key)
    return cursor


def test_the_cursor_starts_on_the_first_memory_without_a_label():
    assert cal.start_cursor(["a", "b", "c"], [None, None, None]).position == 0
    cursor = cal.start_cursor(["a", "b", "c"], [0.5, None, 1.0])
    assert cursor.position == 1 and cursor.given is None and not cursor.done
    assert cal.progress_text(cursor) == "2 of 3 · 2 labelled"
    assert cal.start_cursor(["a"], [0.25]).done  # all labelled: the summary
    with pytest.raises(ValueError, match="3 memories but 2 labels"):
        cal.start_cursor(["a", "b", "c"], [None, None])


def test_a_level_key_labels_the_memory_shown_and_moves_on():
    cursor = cal.press(cal.start_cursor(["a", "b", "c"], [None, 0.5, None]), "4")
    assert cursor.labels == (0.75, 0.5, None) and cursor.position == 1
    assert cursor.given == cal.Given(0, 0.75, None)
    assert cal.given_label(cursor) == {"a": 0.75}
    relabelled = cal.press(cursor, "1")  # the next memory, labelled before: replaced
    assert relabelled.labels == (0.75, 0.0, None)
    assert relabelled.given == cal.Given(1, 0.0, 0.5)


def test_skip_and_back_move_without_labelling():
    start = cal.start_cursor(["a", "b", "c"], [None, None, None])
    cursor = _type(start, ["5", "s"])
    assert cursor.position == 2 and cursor.labels == (1.0, None, None)
    assert cursor.given is None and cal.given_label(cursor) == {}
    assert cal.progress_text(cursor) == "3 of 3 · 1 labelled"
    assert _type(cursor, ["b"]).position == 1
    assert _type(cursor, ["Backspace", "ArrowLeft"]).position == 0
    assert _type(start, ["ArrowLeft", "b"]).position == 0  # never before the first
    back_then_relabel = _type(cursor, ["b", "b", "2"])
    assert back_then_relabel.labels == (0.25, None, None) and back_then_relabel.position == 1
    assert back_then_relabel.given == cal.Given(0, 0.25, 1.0)


def test_past_the_last_memory_only_back_acts():
    done = _type(cal.start_cursor(["a", "b"], [None, None]), ["3", "ArrowRight"])
    assert done.done and cal.progress_text(done) == "All 2 seen · 1 labelled, 1 without a label"
    assert _type(done, ["s", "3", "ArrowRight"]).position == 2
    assert _type(done, ["3"]).given is None and _type(done, ["3"]).labels == done.labels
    assert _type(done, ["b"]).position == 1
    with pytest.raises(ValueError, match="no labeler action for key 'x'"):
        cal.press(done, "x")


def test_a_label_whose_save_failed_is_taken_back():
    cursor = _type(cal.start_cursor(["a", "b", "c"], [None, 0.5, None]), ["3", "2"])
    reverted = cal.revert_given(cursor)  # saving b's 0.25 failed
    assert reverted.labels == (0.5, 0.5, None) and reverted.position == 1
    assert reverted.given is None and reverted.unsaved == cal.Given(1, 0.25, 0.5)
    assert cal.revert_given(reverted) == reverted  # nothing left to take back
    again = cal.press(reverted, "2")
    assert again.unsaved is None and cal.given_label(again) == {"b": 0.25}


def test_reading_never_locks_the_workbench(demo):
    cal.read_labels(demo.workbench)
    with duckdb.connect(str(demo.workbench)) as con:  # read-write right after: not locked
        assert con.execute("SELECT COUNT(*) FROM predictor_calibration").fetchone()[0] > 0
