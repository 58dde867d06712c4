"""The dashboard on a current store whose session-start hook ran through the wrapper: per
session, what the wrapper injected (its record, written by its own writer) beside what Signet
would have injected, which sessions it served and which it failed open on, and the label
sources naming its record."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from signet_bench.analysis.queries import dashboard as dash
from signet_bench.analysis.queries.derived import label_sources_text
from signet_bench.analysis.queries.injections import (
    HOOK_COLUMNS,
    injection_contrast,
    injection_summary,
    injection_table,
)
from signet_bench.analysis.queries.source import open_store
from signet_bench.store.read import read_sessions
from signet_scorer.workbench import default_workbench
from tests.hook_records import dashboard_reads, record_start, session_rows, store_copy

FAILED = "time budget exceeded (5210 ms > 5000 ms)"


def _memory_outside(store: Path, key: str) -> str:
    """A memory of the store with no candidate row in session `key`."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as con:
        return con.execute(
            "SELECT id FROM memories WHERE id NOT IN"
            " (SELECT memory_id FROM session_memories WHERE session_key = ?) ORDER BY id LIMIT 1",
            (key,),
        ).fetchone()[0]


def _relevance(store: Path, key: str, ids: list[str]) -> list[float]:
    """The judge's ratings of the session's rows among `ids` (those it rated)."""
    with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as con:
        rows = con.execute(
            "SELECT memory_id, relevance_score FROM session_memories WHERE session_key = ?",
            (key,),
        ).fetchall()
    return [r for m, r in rows if m in ids and r is not None]


@pytest.fixture(scope="module")
def hooked(bare_current, tmp_path_factory) -> dict:
    """A copy of the bare current store with the wrapper's record beside its default
    workbench: one session served (two of Signet's injected memories, three of its other
    candidates, one memory outside its rows), one failed open, one served for another agent."""
    store = store_copy(bare_current, tmp_path_factory.mktemp("hooked") / "current.db")
    keys = sorted(set(read_sessions(store)["session_key"]))
    served, failed, other = keys[:3]
    rows = [(m, w) for m, w, source in session_rows(store, served) if source != "fts_only"]
    injected, rest = [m for m, w in rows if w], [m for m, w in rows if not w]
    shown = injected[:2] + rest[:3] + [_memory_outside(store, served)]
    record_start(store, served, shown)
    record_start(store, failed, injected[:3], reason=FAILED)
    record_start(store, other, rest[:4], agent="another-agent")
    return {
        "store": store,
        "served": served,
        "failed": failed,
        "other": other,
        "shown": shown,
        "signet": len(injected),
    }


def _contrast(store: Path, workbench: Path | None):
    con = open_store(store)
    try:
        return injection_contrast(con, workbench=workbench)
    finally:
        con.close()


def test_the_contrast_sets_the_wrappers_injections_beside_signets(hooked):
    store = hooked["store"]
    plain = _contrast(store, None)
    got = _contrast(store, default_workbench(store))
    assert plain["hook"].null_count() == plain.height  # no record named: nothing of it
    signets = [c for c in plain.columns if c.startswith("signet_")]
    assert got.select(signets).equals(plain.select(signets))  # Signet's side as it was
    unserved = got.filter(got["session_key"] != hooked["served"]).drop(*HOOK_COLUMNS)
    assert unserved.equals(
        plain.filter(plain["session_key"] != hooked["served"]).drop(*HOOK_COLUMNS)
    )
    by_key = {r["session_key"]: r for r in got.iter_rows(named=True)}
    row = by_key[hooked["served"]]
    # where it served, the scorer's picks are what the wrapper injected
    assert (row["scorer_picks"], row["both_chose"]) == (row["hook_injected"], row["hook_kept"])
    assert row["scorer_relevance"] == row["hook_relevance"]
    assert row["hook"] == "served" and row["hook_reason"] is None
    assert row["hook_memory_ids"] == hooked["shown"]
    assert (row["hook_injected"], row["hook_kept"], row["hook_outside"]) == (6, 2, 1)
    rated = _relevance(store, hooked["served"], hooked["shown"])
    assert row["hook_judged"] == len(rated)
    assert row["hook_relevance"] == pytest.approx(sum(rated) / len(rated))
    fail = by_key[hooked["failed"]]
    assert (fail["hook"], fail["hook_reason"]) == ("failed open", FAILED)
    assert fail["hook_injected"] is None and fail["hook_memory_ids"] is None
    rest = got.filter(~got["session_key"].is_in([hooked["served"], hooked["failed"]]))
    assert rest.height == got.height - 2 and rest["hook"].null_count() == rest.height
    assert hooked["other"] in rest["session_key"].to_list()  # another agent's record


def test_the_summary_and_table_say_what_the_wrapper_did(hooked):
    store = hooked["store"]
    plain, got = _contrast(store, None), _contrast(store, default_workbench(store))
    text = injection_summary(got)
    n = got.height
    assert text.startswith(  # the scorer's picks, the wrapper's among them, then the wrapper
        f"In the {n} sessions the scorer ranked (1 of them served by the session-start wrapper)"
    )
    assert (
        "The session-start wrapper served 1 of these sessions and failed open on 1 (printing "
        "Signet's own choice). Where it served, it injected 6 memories: 2 of the "
        f"{hooked['signet']} Signet chose, 3 other candidates and 1 outside Signet's "
        "candidates."
    ) in text
    assert "session-start wrapper" not in injection_summary(plain)
    assert not set(HOOK_COLUMNS) & set(injection_table(plain).columns)
    shown = injection_table(got).columns
    assert "hook" in shown and "hook_outside" in shown and "hook_memory_ids" not in shown


def test_the_dashboard_reads_the_record_beside_the_stores_workbench(hooked):
    """Without a workbench named, the dashboard looks beside the store's, as the hook writes:
    its panel frame and the label sources both name the served session."""
    data, details = dashboard_reads(hooked["store"])
    lower = dash.details_view(details, dash.dashboard_view(data))
    served = lower.injections.filter(session_key=hooked["served"])
    assert served["hook"].to_list() == ["served"]
    assert served["hook_memory_ids"].to_list() == [hooked["shown"]]
    hook = details.label_sources.filter(source="hook injections").row(0, named=True)
    assert (hook["present"], hook["sessions"], hook["rows"]) == (True, 1, 6)
    assert "hook injections in 1 session (`hook_injections.db`)" in label_sources_text(
        details.label_sources
    )
