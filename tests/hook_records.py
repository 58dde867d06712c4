"""The wrappers' record for tests: session starts and prompts written into a store's
`hook_injections.db` by the wrapper's own writer (`signet_scorer.hook.log.record_invocation`), as it
records a session it served (the scorer's choice) or one it failed open on (Signet's answer as
printed), and the memories it added at a prompt, beside the store's default workbench; and the
dashboard's reads of it (`dashboard_reads`)."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from signet_bench.analysis.queries import dashboard as dash
from signet_bench.analysis.queries.source import open_store
from signet_bench.store.hook_log import hook_log_path
from signet_bench.store.read import read_sessions
from signet_scorer.hook.config import USER_PROMPT_SUBMIT
from signet_scorer.hook.log import record_invocation
from signet_scorer.workbench import default_workbench

AT = "2026-04-20T09:30:00.123Z"


def dashboard_reads(store: Path) -> tuple[dash.DashboardData, dash.DashboardDetails]:
    """What the dashboard reads of `store` with no workbench named (the record beside the
    store's default workbench, as the hook writes it): its upper and its lower panels' data."""
    con = open_store(store)
    try:
        return dash.load_dashboard(con, store, None), dash.load_details(con, store, None)
    finally:
        con.close()


def store_copy(store: Path, out: Path) -> Path:
    """A copy of a shared (read-only) store at `out`, its default workbench's folder free of a
    record."""
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(store, out)
    assert not hook_log_path(default_workbench(out)).exists()
    return out


def record_start(
    store: Path,
    key: str,
    memory_ids: Sequence[str],
    *,
    reason: str | None = None,
    agent: str = "default",
    project: str | None = None,
) -> int:
    """One session start of `key` in the record beside `store`'s default workbench: served
    (`reason` None: the scorer's order of `memory_ids` was injected) or failed open (Signet's
    answer, `memory_ids`, printed for `reason`), naming `project`. Returns the invocation's
    id."""
    served = reason is None
    invocation = {
        "at": AT,
        "session_key": key,
        "agent_id": agent,
        "harness": "claude-code",
        "project": project,
        "output": "plain",
        "outcome": "scorer" if served else "signet",
        "reason": reason,
        "model_path": "/models/model.onnx",
        "model_version": "v1",
        "pool": len(memory_ids) + 10 if served else None,
        "injected": len(memory_ids),
        "context_rule": "previous-session" if served else None,
        "signet_exit": 0,
        "duration_ms": 80.0,
    }
    rows = [
        {
            "session_key": key,
            "agent_id": agent,
            "memory_id": m,
            "rank": rank,
            "signet_rank": len(memory_ids) + 1 - rank if served else rank,
            "score": 1.0 / (rank + 1) if served else None,
            "chosen_by": "scorer" if served else "signet",
            "model_version": "v1",
            "injected_at": AT,
        }
        for rank, m in enumerate(memory_ids, 1)
    ]
    return record_invocation(hook_log_path(default_workbench(store)), invocation, rows)


def record_prompt(
    store: Path, key: str, memory_ids: Sequence[str], *, at: str = AT, agent: str = "default"
) -> int:
    """One prompt of session `key` at which the user-prompt-submit wrapper added `memory_ids`
    (the scorer's order), in the record beside `store`'s default workbench. Returns the
    invocation's id."""
    invocation = {
        "at": at,
        "session_key": key,
        "agent_id": agent,
        "harness": "claude-code",
        "project": None,
        "output": "plain",
        "outcome": "scorer",
        "reason": None,
        "model_path": "/models/model.onnx",
        "model_version": "v1",
        "pool": len(memory_ids) + 10,
        "injected": len(memory_ids),
        "context_rule": "prompt",
        "signet_exit": 0,
        "duration_ms": 40.0,
        "hook": USER_PROMPT_SUBMIT,
    }
    rows = [
        {
            "session_key": key,
            "agent_id": agent,
            "memory_id": m,
            "rank": rank,
            "signet_rank": rank,  # NOT NULL in the log; Signet injects no memory at a prompt
            "score": 1.0 / (rank + 1),
            "chosen_by": "scorer",
            "model_version": "v1",
            "injected_at": at,
        }
        for rank, m in enumerate(memory_ids, 1)
    ]
    return record_invocation(hook_log_path(default_workbench(store)), invocation, rows)


def session_rows(store: Path, key: str) -> list[tuple[str, bool, str]]:
    """(memory id, was_injected, source) of a session's candidate rows, by rank."""
    con = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    try:
        rows = con.execute(
            "SELECT memory_id, was_injected, source FROM session_memories"
            " WHERE session_key = ? ORDER BY source = 'fts_only', rank, memory_id",
            (key,),
        ).fetchall()
    finally:
        con.close()
    return [(m, bool(w), s) for m, w, s in rows]


def served_and_failed(store: Path, out: Path) -> tuple[Path, str, str, list[str]]:
    """A copy of `store` at `out` whose record has its first session served (the wrapper
    injected its first five candidate rows) and its second failed open: (the copy, the served
    key, the failed key, what was injected)."""
    copy = store_copy(store, out)
    served, failed = read_sessions(copy).sort("created_at")["session_key"].head(2)
    shown = [m for m, _, _ in session_rows(copy, served)][:5]
    record_start(copy, served, shown)
    record_start(copy, failed, shown[:2], reason="no model at /models/model.onnx")
    return copy, served, failed, shown
