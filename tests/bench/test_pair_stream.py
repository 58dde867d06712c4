"""`bench pairs`: each read runs in its own interpreter over the same file and sees all of it
(the memory figures themselves are the benchmark's, never a test's)."""

from __future__ import annotations

from signet_bench.bench.pair_stream import (
    MODES,
    QUICK_ROWS,
    SESSION_ROWS,
    _child,
    _write,
    pair_stream_rows,
)


def test_each_read_sees_the_whole_file(tmp_path):
    path = _write(tmp_path / "pairs.parquet", 1_000, seed=0)
    assert _child("stream", str(path))["seen"] == 1_000 // SESSION_ROWS
    assert _child("whole", str(path))["seen"] == 1_000
    assert _child("import", str(path))["seen"] == 0


def test_the_rows_name_every_read():
    rows = pair_stream_rows(quick=True)
    assert {r.name for r in rows} == {f"pairs_{QUICK_ROWS}rows"}
    assert [r.metric for r in rows] == [*(f"{m}_rss" for m in MODES), "stream_wall", "file_size"]
    assert all(r.value > 0 for r in rows)
