"""The hook benchmark's Signet answer from a store: Signet's baseline order (the session's
project first, then importance x recency) and Signet's date format on each memory's line."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime

from signet_bench.bench.hook_speed import store_answer, store_memories
from signet_bench.store.timestamps import parse_ts
from signet_bench.world.synth.build import build_persona_store
from signet_scorer.hook.inject import find_block
from signet_scorer.hook.prompt import memory_date


def test_memory_dates_are_written_as_signets_locale_date():
    assert memory_date("2026-03-01T12:00:00.000Z") == "Mar 1, 2026"
    assert memory_date("2025-12-24 23:59:59") == "Dec 24, 2025"


def test_the_answer_is_signets_baseline_order_with_its_lines(tmp_path):
    db = tmp_path / "memories.db"
    build_persona_store("light", db, seed=3, n_memories=60)
    now = datetime(2026, 4, 1, tzinfo=UTC)
    mems = store_memories(db, "portfolio", now, 100)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    live = con.execute("SELECT COUNT(*) FROM memories WHERE is_deleted = 0").fetchone()[0]
    project = dict(con.execute("SELECT id, project FROM memories").fetchall())
    con.close()
    assert len(mems) == live and all(parse_ts(m["created_at"]) <= now for m in mems)
    mine = [project[m["id"]] == "portfolio" for m in mems]
    assert mine == sorted(mine, reverse=True) and any(mine) and not all(mine)
    for group in (True, False):
        eff = [m["effective_score"] for m, g in zip(mems, mine, strict=True) if g == group]
        assert eff == sorted(eff, reverse=True)
    answer = store_answer(db, "portfolio", now, 30)
    assert [m["id"] for m in answer["memories"]] == [m["id"] for m in mems[:30]]
    assert find_block(answer["inject"], [m["content"] for m in mems[:30]]) is not None
