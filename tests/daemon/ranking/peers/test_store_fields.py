"""Tags and last access times read from a real store, project tags, and their alignment with a
session's candidates."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from signet_bench.daemon.ranking.peers.store_fields import (
    last_access_at,
    parse_tags,
    project_tags,
    read_last_accessed,
    read_tags,
)
from signet_bench.store.schema import connect_writer, create_store
from signet_bench.store.write import insert_memories
from tests.daemon.ranking.ranker_contract import PROJECT, START, build_corpus, session


@pytest.mark.parametrize(
    ("text", "tags"),
    [
        ("rust, auth,,  sqlite ", {"rust", "auth", "sqlite"}),
        ('["project:jcode", "rust", " "]', {"project:jcode", "rust"}),
        ("", set()),
        (None, set()),
        ("[not json", set()),
        ('{"a": 1}', {'{"a": 1}'}),
    ],
)
def test_parse_tags(text: str | None, tags: set[str]) -> None:
    assert parse_tags(text) == tags


def _store(tmp_path: Path) -> Path:
    path = tmp_path / "memories.db"
    create_store(path, now=START)
    rows = [
        {"id": "a", "content": "one", "created_at": START - timedelta(days=5), "tags": "x,y"},
        {
            "id": "b",
            "content": "two",
            "created_at": START - timedelta(days=4),
            "last_accessed": START - timedelta(days=1),
            "access_count": 2,
        },
        {"id": "c", "content": "three", "created_at": START - timedelta(days=3), "tags": ""},
    ]
    con = connect_writer(path)
    try:
        insert_memories(con, rows)
    finally:
        con.close()
    return path


def test_read_tags_and_last_accessed(tmp_path: Path) -> None:
    path = _store(tmp_path)
    assert read_tags(path) == {"a": frozenset({"x", "y"})}
    assert read_last_accessed(path) == {"b": (START - timedelta(days=1)).timestamp()}


def test_project_tags() -> None:
    corpus = build_corpus()
    tags = project_tags(corpus)
    assert tags["m-07"] == {f"project:{PROJECT}"} and tags["m-01"] == {"project:beta"}
    assert "m-03" not in tags  # no project


def test_last_access_at_ignores_the_future_and_the_unknown() -> None:
    inputs = session("no_context")  # m-03, m-02, m-07, m-04
    start = inputs.start.timestamp()
    got = last_access_at(inputs, {"m-03": start - 10.0, "m-07": start + 10.0, "zz": start})
    assert got[0] == start - 10.0
    assert np.isnan(got[1:]).all()
    assert np.isnan(last_access_at(inputs, None)).all()
