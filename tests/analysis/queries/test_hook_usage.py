"""Prompt-time injections beside session start's: the wrappers' record written by their own
writer into a copy of a current store, read back through the dashboard's queries, each
injection's use decided by the evidence the store keeps for it."""

from __future__ import annotations

import dataclasses
import sqlite3
from pathlib import Path

import polars as pl
import pytest

from signet_bench.analysis.queries import dashboard as dash
from signet_bench.analysis.queries.hook_usage import (
    PROMPT_OPT_IN,
    hook_usage_summary,
    injections_by_hook,
    signet_starts,
    usage_by_hook,
    usage_per_session,
)
from signet_bench.analysis.queries.injections import injection_contrast, injection_table
from signet_bench.analysis.queries.source import open_store
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.store.read import read_sessions
from signet_scorer.workbench import default_workbench
from tests.hook_records import (
    dashboard_reads,
    record_prompt,
    record_start,
    session_rows,
    store_copy,
)

LATER = "2026-04-20T09:41:00.000Z"


def _evidence(store: Path) -> dict[tuple[str, str], tuple[bool, bool]]:
    """Per (session, memory) of the default agent: (Signet injected it, the session used it:
    FTS hits, the agent's rating above 0, or the judge's relevance of at least the label
    function's high-continuity threshold), read with the standard library."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as con:
        rows = con.execute(
            "SELECT session_key, memory_id, was_injected, fts_hit_count, agent_relevance_score,"
            " relevance_score FROM session_memories WHERE agent_id = 'default'"
        ).fetchall()
    high = DEFAULT_CONFIG.high_continuity_threshold
    return {
        (k, m): (bool(w), (f or 0) > 0 or (a or 0) > 0 or (r is not None and r >= high))
        for k, m, w, f, a, r in rows
    }


def _prompt_choice(store: Path, facts: dict) -> tuple[str, list[str], list[str]]:
    """A session with at least two candidates Signet did not inject that the session used, and
    two it did not use: (its key, those used, those unused)."""
    for key in sorted(set(read_sessions(store)["session_key"])):
        rows = [m for m, _, source in session_rows(store, key) if source != "fts_only"]
        fresh = [m for m in rows if not facts[(key, m)][0]]
        hit = [m for m in fresh if facts[(key, m)][1]]
        miss = [m for m in fresh if not facts[(key, m)][1]]
        if len(hit) >= 2 and len(miss) >= 2:
            return key, hit, miss
    raise AssertionError("no session has two used and two unused candidates")


@pytest.fixture(scope="module")
def prompted(bare_current, tmp_path_factory) -> dict:
    """A copy of the bare current store whose record has one session served at its start, two
    prompts of another session (the second repeating a memory of the first, which the writer
    ignores), and a prompt of another agent."""
    store = store_copy(bare_current, tmp_path_factory.mktemp("prompted") / "current.db")
    facts = _evidence(store)
    key, hit, miss = _prompt_choice(store, facts)
    served = next(k for k in sorted(set(read_sessions(store)["session_key"])) if k != key)
    shown = [m for m, _, source in session_rows(store, served) if source != "fts_only"][:4]
    record_start(store, served, shown)
    record_prompt(store, key, [hit[0], miss[0], miss[1]])
    record_prompt(store, key, [hit[1], miss[0]], at=LATER)
    record_prompt(store, served, [hit[0]], agent="another-agent")
    return {
        "store": store,
        "key": key,
        "prompted": [hit[0], miss[0], miss[1], hit[1]],
        "served": served,
        "shown": shown,
        "facts": facts,
    }


def _injections(store: Path, workbench: Path | None) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The wrappers' injections and Signet's own session starts, as the dashboard reads them."""
    con = open_store(store)
    try:
        contrast = injection_contrast(con, workbench=workbench)
        return injections_by_hook(con, workbench), signet_starts(contrast)
    finally:
        con.close()


def test_each_injection_is_used_as_its_sessions_evidence_says(prompted):
    store, facts = prompted["store"], prompted["facts"]
    rows, signet = _injections(store, default_workbench(store))
    prompt = rows.filter(hook="user-prompt-submit")
    assert prompt["session_key"].unique().to_list() == [prompted["key"]]  # not the other agent's
    assert prompt["memory_id"].to_list() == prompted["prompted"]  # the repeat ignored
    assert prompt["invocation_id"].n_unique() == 2
    assert prompt["used"].to_list() == [True, False, False, True]
    served = rows.filter(hook="session-start")
    assert served["session_key"].unique().to_list() == [prompted["served"]]
    assert served["chosen_by"].unique().to_list() == ["scorer"]  # what the wrapper injected
    assert sorted(served["memory_id"]) == sorted(prompted["shown"])
    for row in served.iter_rows(named=True):
        assert row["used"] == facts[(row["session_key"], row["memory_id"])][1]
    expected: dict[str, list[int]] = {}
    for (key, _), (injected, was_used) in facts.items():
        if injected and key != prompted["served"]:  # where Signet's own choice was shown
            counts = expected.setdefault(key, [0, 0])
            counts[0], counts[1] = counts[0] + 1, counts[1] + was_used
    got = {r["session_key"]: [r["injected"], r["used"]] for r in signet.iter_rows(named=True)}
    assert got == expected


def test_the_counts_per_hook_and_per_session(prompted):
    store = prompted["store"]
    rows, signet = _injections(store, default_workbench(store))
    by_hook = usage_by_hook(rows, signet)
    assert by_hook.select("hook", "chosen_by").rows() == [
        ("session-start", "signet"),
        ("session-start", "scorer"),
        ("user-prompt-submit", "scorer"),
    ]
    prompt = by_hook.row(2, named=True)
    assert (prompt["sessions"], prompt["injected"], prompt["used"]) == (1, 4, 2)
    assert prompt["used_share"] == pytest.approx(0.5)
    assert prompt["per_session"] == pytest.approx(4.0)
    own = by_hook.row(0, named=True)
    injected = [u for (k, _), (w, u) in prompted["facts"].items() if w and k != prompted["served"]]
    assert (own["injected"], own["used"]) == (len(injected), sum(injected))
    assert own["sessions"] == signet.height
    served = by_hook.row(1, named=True)
    assert (served["sessions"], served["injected"]) == (1, len(prompted["shown"]))
    per = usage_per_session(rows, signet)
    row = per.filter(session_key=prompted["key"]).row(0, named=True)
    assert (row["prompts"], row["prompt_injected"], row["prompt_used"]) == (2, 4, 2)
    own_used = signet.filter(session_key=prompted["key"])["used"].item()
    assert row["start_used"] == own_used  # session start's, Signet's choice there
    text = hook_usage_summary(by_hook)
    assert "At the prompts, the scorer added 4 memories in 1 session (4.0 per session), 50% " in (
        text
    )
    assert PROMPT_OPT_IN not in text


def test_without_prompt_time_injections_the_dashboard_says_why_and_how(prompted):
    store = prompted["store"]
    rows, signet = _injections(store, None)
    assert rows.height == 0
    text = hook_usage_summary(usage_by_hook(rows, signet))
    assert text.startswith("Session start injected Signet's choice: ")
    assert text.endswith(f"No prompt-time injection is in the hook log: {PROMPT_OPT_IN}.")
    assert "signet-bench-hook user-prompt-submit" in PROMPT_OPT_IN


def test_the_dashboard_sets_the_prompts_beside_session_start(prompted):
    """The lower panels read the record beside the store's workbench: the per-session table
    gains the prompts' counts, and the per-hook comparison follows the sessions in view."""
    data, details = dashboard_reads(prompted["store"])
    lower = dash.details_view(details, dash.dashboard_view(data))
    row = lower.injections.filter(session_key=prompted["key"]).row(0, named=True)
    assert (row["prompts"], row["prompt_injected"], row["prompt_used"]) == (2, 4, 2)
    assert "prompt_used" in injection_table(lower.injections).columns
    assert lower.hooks["hook"].to_list()[-1] == "user-prompt-submit"
    others = pl.col("session_key") != prompted["key"]
    view = dash.dashboard_view(data)
    narrowed = dataclasses.replace(view, sessions=view.sessions.filter(others))
    without = dash.details_view(details, narrowed)
    assert "user-prompt-submit" not in without.hooks["hook"].to_list()
    assert "prompt_used" not in injection_table(without.injections).columns
