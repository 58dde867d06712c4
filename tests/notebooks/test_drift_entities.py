"""The drift explorer's focal-entity filter: on a store whose sessions name focal entities it
offers them (every session by default) and, with one chosen, every drift view reads only that
entity's sessions; on a store naming none the filter is disabled and says why."""

from __future__ import annotations

import sqlite3

import marimo as mo
import polars as pl

from signet_bench.analysis.queries.drift import ALL_SESSIONS
from tests.notebooks.test_notebooks import _run


def test_every_session_by_default_then_one_entitys(architect):
    db = architect["0.58"]
    _, d = _run("drift", db_path=db)
    entity, focal = d["entity"], d["focal"]
    assert entity.value is None and "data-disabled='false'" in entity.text
    assert d["shown"].equals(d["sessions"])
    project = d["sessions"]["project"][0]
    labels = [k for k, v in entity.options.items() if v == project]
    assert len(labels) == 1 and ALL_SESSIONS in entity.options
    chosen = mo.ui.dropdown(options=entity.options, value=labels[0])
    _, one = _run("drift", db_path=db, entity=chosen, focal=focal)
    keys = set(focal.pairs.filter(pl.col("entity") == project)["session_key"])
    shown = one["shown"]
    assert set(shown["session_key"]) == keys and 0 < shown.height < d["sessions"].height
    assert one["success"]["counted"].sum() == shown["counted"].sum()
    assert one["overall"]["last_n"].max() == shown["n"].max()
    assert set(one["samples"]["session_key"]) <= keys


def test_a_store_naming_no_entity_disables_the_filter(young, tmp_path):
    db = tmp_path / "young.db"
    con = sqlite3.connect(db)
    src = sqlite3.connect(f"file:{young}?mode=ro", uri=True)
    src.backup(con)
    src.close()
    con.execute("UPDATE predictor_comparisons SET focal_entity_name = NULL")
    con.execute("UPDATE session_checkpoints SET focal_entity_names = NULL")
    con.commit()
    con.close()
    _, d = _run("drift", db_path=db)
    entity = d["entity"]
    assert "data-disabled='true'" in entity.text and list(entity.options) == [ALL_SESSIONS]
    assert d["focal"].note.startswith("No session names a focal entity.")
    assert d["shown"].equals(d["sessions"])
