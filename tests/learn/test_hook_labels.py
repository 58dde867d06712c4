"""Labels describe what was shown: in a session the session-start wrapper served, its record
(`hook_injections.db`, written by the wrapper's own writer) replaces Signet's `was_injected`;
a session it failed open on, another agent's record, or no record keep the store's labels; the
label sources count the sessions it served. On copies of the simulated stores of both lines."""

from __future__ import annotations

import math
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.publish import _hook_workbench
from signet_bench.learn.samples import (
    label_sources,
    load_samples,
    read_label_signals,
    signals_frame,
)
from signet_bench.store.corpus import read_corpus
from signet_bench.store.read import open_readonly, read_sessions
from tests.hook_records import record_start, session_rows, store_copy

TZ = "Europe/Berlin"  # the light persona's zone
CFG = DEFAULT_CONFIG
FAILED = "the inject text has no memories block as Signet writes it"


def _labels(samples, key: str) -> dict[str, float]:
    sample = next(s for s in samples if s.session_key == key)
    return dict(zip(sample.memory_ids.tolist(), sample.labels.tolist(), strict=True))


def _by_session(samples) -> dict[str, dict[str, float]]:
    return {s.session_key: _labels(samples, s.session_key) for s in samples}


def _start_rows(store: Path, key: str) -> tuple[list[str], list[str]]:
    """(Signet's injected, its other start-pool candidates) of a session, by rank."""
    rows = [(m, w) for m, w, source in session_rows(store, key) if source != "fts_only"]
    return [m for m, w in rows if w], [m for m, w in rows if not w]


def _plain_memory(store: Path, outside: set[str]) -> str:
    """A memory with an embedding that was never edited, superseded or deleted, not in
    `outside`: its label as an injected memory follows from the session's continuity alone."""
    corpus = read_corpus(store)
    for row, mid in enumerate(corpus.ids.tolist()):
        plain = (
            corpus.has_embedding[row]
            and math.isnan(corpus.superseded_at[row])
            and math.isnan(corpus.deleted_at[row])
            and len(corpus.edited_at[row]) == 0
        )
        if plain and mid not in outside:
            return mid
    raise AssertionError("no plain memory in the fixture")


def _injected_label(continuity: float) -> float:
    """Rule 4 for an injected memory nobody rated, never matched by FTS or recalled."""
    base = continuity if continuity >= CFG.high_continuity_threshold else continuity * 0.5
    if continuity < CFG.fts_unmatched_max_continuity:
        base = max(CFG.true_negative_label, base - CFG.fts_unmatched_penalty)
    return base


def _as_store_says(store: Path, key: str, shown: list[str]) -> None:
    """Signet's own rows of session `key` set to say that `shown` were injected."""
    marks = ",".join("?" * len(shown))
    with sqlite3.connect(store) as con:
        con.execute(
            f"UPDATE session_memories SET was_injected = (memory_id IN ({marks}))"
            " WHERE session_key = ?",
            (*shown, key),
        )


@pytest.fixture(scope="module")
def current(line_stores, tmp_path_factory) -> tuple[Path, list]:
    """A copy of the current store with no record, and its samples."""
    store = store_copy(line_stores["current"], tmp_path_factory.mktemp("plain") / "current.db")
    return store, load_samples(store, tz=TZ)[0]


def test_a_served_session_is_labelled_by_what_the_wrapper_showed(current, tmp_path):
    """Served: exactly the wrapper's memories are injected, as if Signet's rows said so (a
    copy whose rows do gives the same label to every memory both samples hold); a memory it
    injected outside Signet's rows is labelled from the session's continuity. Failed open,
    another agent's served session and every other session keep their labels."""
    plain, before = current
    store = store_copy(plain, tmp_path / "hooked" / "current.db")
    served, failed, other = (s.session_key for s in before[:3])
    injected, rest = _start_rows(store, served)
    extra = _plain_memory(store, {m for m, _, _ in session_rows(store, served)})
    shown = injected[:2] + rest[:3] + [extra]
    record_start(store, served, shown)
    record_start(store, failed, _start_rows(store, failed)[1][:4], reason=FAILED)
    record_start(store, other, _start_rows(store, other)[1][:4], agent="another-agent")

    after, _ = load_samples(store, tz=TZ)
    reference = store_copy(plain, tmp_path / "reference" / "current.db")
    _as_store_says(reference, served, shown)
    expected = _labels(load_samples(reference, tz=TZ)[0], served)

    old, new = _labels(before, served), _labels(after, served)
    assert set(shown) <= set(new)  # every memory shown carries a signal
    common = set(new) & set(expected)
    assert common >= set(shown) - {extra} and extra not in expected
    assert {m: new[m] for m in common} == pytest.approx({m: expected[m] for m in common})
    assert any(new[m] != old.get(m) for m in rest[:3] + injected[2:])
    continuity = read_sessions(store).filter(session_key=served)["score"][0]
    assert new[extra] == pytest.approx(_injected_label(continuity))
    untouched = _by_session(after)
    del untouched[served]
    assert untouched == {k: v for k, v in _by_session(before).items() if k != served}
    assert failed in untouched and other in untouched


def test_the_record_is_found_beside_the_workbench(current, tmp_path):
    """The record counts where the labels look for it: beside the store's default workbench (a
    path or an open connection to the store), or beside the workbench named; a record
    anywhere else leaves every label as the store has it."""
    plain, before = current
    store = store_copy(plain, tmp_path / "store" / "current.db")
    elsewhere = store_copy(plain, tmp_path / "elsewhere" / "current.db")
    key = before[0].session_key
    shown = _start_rows(store, key)[1][:5]
    record_start(elsewhere, key, shown)  # beside the other copy's default workbench
    assert _by_session(load_samples(store, tz=TZ)[0]) == _by_session(before)
    named, _ = load_samples(store, tz=TZ, workbench=tmp_path / "elsewhere" / "workbench.duckdb")
    assert _labels(named, key) != _labels(before, key)
    record_start(store, key, shown)
    con = open_readonly(store)
    try:
        through_connection, _ = load_samples(con, tz=TZ)
    finally:
        con.close()
    assert _by_session(through_connection) == _by_session(named)
    # a training publishing to a folder reads the record the wrapper kept there, if any
    assert _hook_workbench(tmp_path / "elsewhere") == tmp_path / "elsewhere" / "workbench.duckdb"
    assert _hook_workbench(tmp_path / "nothing-recorded") is None


def _hook_source(store: Path) -> dict:
    con = open_readonly(store)
    try:
        frame = label_sources(read_label_signals(con))
    finally:
        con.close()
    return frame.filter(source="hook injections").row(0, named=True)


@pytest.mark.parametrize("line", ["current", "0.58"])
def test_label_sources_count_the_sessions_the_wrapper_served(line_stores, tmp_path, line):
    """Only served sessions count, with the memories it injected there. A current store keys
    sessions per agent, so another agent's record is not this agent's; a 0.58 store keeps no
    agent ids, so a key's first recorded agent decides (here one that failed open)."""
    store = store_copy(line_stores[line], tmp_path / line / "store.db")
    assert _hook_source(store) | {"what": ""} == {
        "source": "hook injections",
        "where": "hook_injections.db",
        "what": "",
        "present": False,
        "sessions": 0,
        "rows": 0,
    }
    keys = sorted({m for m in read_sessions(store)["session_key"]})
    ids = [m for m, _, _ in session_rows(store, keys[0])][:4]
    record_start(store, keys[0], ids)
    record_start(store, keys[1], ids[:2], reason=FAILED)
    record_start(store, keys[1], ids[:3], agent="another-agent")
    record_start(store, keys[2], ids[:3], agent="another-agent")
    got = _hook_source(store)
    assert got["present"]
    # current: keys[0] only; 0.58: keys[0] and keys[2] (keys[1]'s first agent failed open)
    expected = (1, 4) if line == "current" else (2, 7)
    assert (got["sessions"], got["rows"]) == expected


def test_failed_open_rows_never_mark_memories(current, tmp_path):
    """A session the wrapper failed open on, whose printed answer (Signet's) lists memories
    Signet's rows do not mark as injected, keeps Signet's rows: the candidates the labels read
    are marked injected exactly as the store marks them."""
    plain, before = current
    store = store_copy(plain, tmp_path / "failed" / "current.db")
    key = before[1].session_key
    injected, rest = _start_rows(store, key)
    record_start(store, key, rest[:6], reason=FAILED)
    con = open_readonly(store)
    try:
        signals = read_label_signals(con)
    finally:
        con.close()
    assert signals.hook.height == 0
    rows = signals_frame(signals).filter(session_key=key, source="effective")
    marked = set(np.asarray(rows.filter(was_injected=True)["memory_id"]).tolist())
    assert marked == set(injected)
