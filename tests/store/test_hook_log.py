"""The session-start hook's injection log: written by `signet_scorer.hook.log` (append-only, one
transaction per invocation, injections idempotent per session key and agent), read by
`store.hook_log` as frames with UTC times, and per session: served or failed open."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

import pytest

from signet_bench.store.hook_log import (
    hook_log_path,
    hook_record,
    hook_sessions,
    prompt_injections,
    read_hook_injections,
    read_hook_invocations,
    served_injections,
)
from signet_scorer.hook.config import SESSION_START, USER_PROMPT_SUBMIT
from signet_scorer.hook.log import (
    INJECTION_COLUMNS,
    INVOCATION_COLUMNS,
    LOG_DDL,
    InjectionLog,
    record_invocation,
)


def _invocation(
    key: str, outcome: str = "scorer", reason: str | None = None, agent: str = "default"
) -> dict:
    return {
        "at": "2026-04-20T09:30:00.123Z",
        "session_key": key,
        "agent_id": agent,
        "harness": "claude-code",
        "project": "/p",
        "output": "plain",
        "outcome": outcome,
        "reason": reason,
        "model_path": "/m/model.onnx",
        "model_version": "abc",
        "pool": 3,
        "injected": 2,
        "context_rule": "previous-session",
        "signet_exit": 0,
        "duration_ms": 12.5,
    }


def _rows(
    key: str, ids: list[str], chosen_by: str = "scorer", agent: str = "default"
) -> list[dict]:
    return [
        {
            "session_key": key,
            "agent_id": agent,
            "memory_id": m,
            "rank": r,
            "signet_rank": 3 - r,
            "score": None if chosen_by == "signet" else 0.5 / r,
            "chosen_by": chosen_by,
            "model_version": "abc",
            "injected_at": "2026-04-20T09:30:00.123Z",
        }
        for r, m in enumerate(ids, 1)
    ]


def test_a_workbench_without_the_log_reads_as_empty_frames(tmp_path):
    wb = tmp_path / "workbench.duckdb"
    assert hook_log_path(wb) == tmp_path / "hook_injections.db"
    inv, inj = read_hook_invocations(wb), read_hook_injections(wb)
    assert inv.height == inj.height == 0
    assert inv.columns == ["id", *INVOCATION_COLUMNS] and inj.columns == list(INJECTION_COLUMNS)


def test_invocations_append_and_injections_keep_the_first_per_session(tmp_path):
    wb = tmp_path / "workbench.duckdb"
    log = hook_log_path(wb)
    first = record_invocation(log, _invocation("s1"), _rows("s1", ["a", "b"]))
    second = record_invocation(log, _invocation("s1", "signet", "no memories"), _rows("s1", ["c"]))
    record_invocation(log, _invocation("", "signet", "no key"), _rows("", ["d"], "signet"))
    inv = read_hook_invocations(wb)
    assert inv["id"].to_list() == [first, second, second + 1]
    assert inv["outcome"].to_list() == ["scorer", "signet", "signet"]
    assert inv["at"][0] == datetime(2026, 4, 20, 9, 30, 0, 123000, tzinfo=UTC)
    inj = read_hook_injections(wb)
    assert inj["memory_id"].to_list() == ["a", "b"]  # the stub's row and the keyless one: none
    assert inj["invocation_id"].unique().to_list() == [first]
    assert inj["score"].to_list() == [0.5, 0.25]


def test_a_write_that_fails_leaves_nothing_behind(tmp_path):
    log = hook_log_path(tmp_path / "workbench.duckdb")
    record_invocation(log, _invocation("s0"), _rows("s0", ["a"]))
    bad = _rows("s2", ["a", "b"])
    bad[1]["memory_id"] = None  # NOT NULL
    with pytest.raises(sqlite3.IntegrityError):
        record_invocation(log, _invocation("s2"), bad)
    inv = read_hook_invocations(tmp_path / "workbench.duckdb")
    assert inv["session_key"].to_list() == ["s0"]
    assert read_hook_injections(tmp_path / "workbench.duckdb")["session_key"].to_list() == ["s0"]


def test_sessions_served_or_failed_open(tmp_path):
    """Per session key: served when its recorded injections are the scorer's (a later stub
    that failed open does not undo it), failed open with its first invocation's reason
    otherwise (with Signet's answer recorded as printed, or nothing when Signet printed
    none); keyless invocations belong to no session."""
    wb = tmp_path / "workbench.duckdb"
    log = hook_log_path(wb)
    record_invocation(log, _invocation("s1"), _rows("s1", ["a", "b"]))
    record_invocation(log, _invocation("s1", "signet", "signet's answer has no memories"), [])
    record_invocation(log, _invocation("s2", "signet", "no model"), _rows("s2", ["c"], "signet"))
    record_invocation(log, _invocation("s3", "signet", "signet printed nothing"), [])
    record_invocation(log, _invocation("", "signet", "no key"), [])
    record_invocation(log, _invocation("s4", agent="other"), _rows("s4", ["d"], agent="other"))
    record = hook_record(wb)
    assert record.present and not hook_record(tmp_path / "none" / "workbench.duckdb").present
    got = hook_sessions(record).select("session_key", "served", "reason", "invocations", "injected")
    assert got.rows() == [
        ("s1", True, None, 2, 2),
        ("s2", False, "no model", 1, 1),
        ("s3", False, "signet printed nothing", 1, 0),
    ]
    shown = served_injections(record)
    assert shown.select("session_key", "memory_id", "rank").rows() == [
        ("s1", "a", 1),
        ("s1", "b", 2),
    ]
    assert served_injections(hook_record(wb, "other"))["memory_id"].to_list() == ["d"]


def test_without_agent_ids_a_keys_first_agent_decides(tmp_path):
    """For a store that keeps no agent ids, each key's rows are those of the agent whose
    invocation came first."""
    wb = tmp_path / "workbench.duckdb"
    log = hook_log_path(wb)
    record_invocation(log, _invocation("s1", "signet", "no model", agent="x"), [])
    record_invocation(log, _invocation("s1", agent="y"), _rows("s1", ["a"], agent="y"))
    record_invocation(log, _invocation("s2", agent="y"), _rows("s2", ["b"], agent="y"))
    record = hook_record(wb, None)
    assert hook_sessions(record).select("session_key", "served").rows() == [
        ("s1", False),
        ("s2", True),
    ]
    assert served_injections(record)["memory_id"].to_list() == ["b"]


def test_prompt_injections_add_to_the_session_and_never_repeat_a_memory(tmp_path):
    wb = tmp_path / "workbench.duckdb"
    log = hook_log_path(wb)
    record_invocation(log, _invocation("s1"), _rows("s1", ["a", "b"]))
    prompt = {**_invocation("s1"), "hook": USER_PROMPT_SUBMIT}
    p1 = record_invocation(log, prompt, _rows("s1", ["b", "c"]))
    p2 = record_invocation(log, prompt, _rows("s1", ["c", "d"]))
    record = hook_record(wb)
    assert read_hook_invocations(wb)["hook"].to_list() == [SESSION_START, *[USER_PROMPT_SUBMIT] * 2]
    # the session start's own view is unchanged by its prompts
    assert served_injections(record)["memory_id"].to_list() == ["a", "b"]
    assert hook_sessions(record)["invocations"].to_list() == [1]
    added = prompt_injections(record)
    assert added.select("invocation_id", "memory_id").rows() == [(p1, "c"), (p2, "d")]


def test_a_log_written_before_hooks_were_named_reads_as_session_start(tmp_path):
    wb = tmp_path / "workbench.duckdb"
    log = hook_log_path(wb)
    con = sqlite3.connect(log)
    old = [
        d.replace(",\n        hook TEXT NOT NULL DEFAULT 'session-start')", ")") for d in LOG_DDL
    ]
    assert "hook TEXT" not in old[0]
    for ddl in old:
        con.execute(ddl)
    columns = [c for c in INVOCATION_COLUMNS if c != "hook"]
    values = _invocation("s1")
    con.execute(
        f"INSERT INTO hook_invocations ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
        [values[c] for c in columns],
    )
    con.commit()
    con.close()
    assert read_hook_invocations(wb)["hook"].to_list() == [SESSION_START]
    record_invocation(log, {**_invocation("s2"), "hook": USER_PROMPT_SUBMIT}, _rows("s2", ["x"]))
    assert read_hook_invocations(wb)["hook"].to_list() == [SESSION_START, USER_PROMPT_SUBMIT]


def test_a_prompt_row_that_breaks_the_log_s_rules_fails_loudly(tmp_path):
    log = hook_log_path(tmp_path / "workbench.duckdb")
    bad = [{**_rows("s1", ["a"])[0], "signet_rank": None}]
    with pytest.raises(sqlite3.IntegrityError):  # only a memory already held is skipped
        record_invocation(log, {**_invocation("s1"), "hook": USER_PROMPT_SUBMIT}, bad)
    assert read_hook_invocations(tmp_path / "workbench.duckdb").height == 0  # rolled back


def test_a_record_written_once_is_not_written_again_by_the_hook_that_could_not_tell(tmp_path):
    """A hook whose resident scorer stopped answering writes its record itself with `once`:
    when the resident did write it (the same session key, agent, time and duration), nothing is
    added; otherwise it is written."""
    log = InjectionLog(hook_log_path(tmp_path / "workbench.duckdb"))
    try:
        first = log.record(_invocation("s1"), _rows("s1", ["a", "b"]))
        assert log.record(_invocation("s1"), _rows("s1", ["a", "b"]), once=True) == first
        later = {**_invocation("s1"), "duration_ms": 13.0}
        assert log.record(later, _rows("s1", ["a"]), once=True) != first
        count = log.con.execute("SELECT COUNT(*) FROM hook_invocations").fetchone()[0]
        rows = log.con.execute("SELECT COUNT(*) FROM hook_injections").fetchone()[0]
    finally:
        log.close()
    assert (count, rows) == (2, 2)
