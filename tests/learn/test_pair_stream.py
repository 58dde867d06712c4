"""The base trainer's stream (`pairs.read_pair_sessions`): whatever the slice size, many files
and sessions longer than a slice yield the sessions an in-memory read of every file yields, in
order, and the trainer learns the same weights from them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from signet_bench.learn.pairs import (
    INPUT_COLUMNS,
    PAIR_COLUMNS,
    read_pair_sessions,
    train_base,
    write_pairs,
)

SIZES = (3, 40, 1, 7, 12, 2, 25)  # rows per session: shorter and longer than every slice below


def _files(tmp: Path, n_files: int) -> list[Path]:
    """`n_files` pair files of `SIZES` sessions each, numbered alike in every file (session
    numbers are local to a file), labels following similarity."""
    rng = np.random.default_rng(7)
    files = []
    for f in range(n_files):
        parts = []
        for s, n in enumerate(SIZES):
            cols = {c: rng.normal(size=n) for c in PAIR_COLUMNS}
            cols |= {"session": np.full(n, s), "candidate_count": np.full(n, n)}
            cols["label"] = (cols["similarity"] > 0.5).astype(float)
            parts.append(pl.DataFrame(cols).select(PAIR_COLUMNS))
        files.append(write_pairs(pl.concat(parts), tmp / f"pairs{f}.parquet"))
    return files


def _in_memory(files: list[Path]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every session of every file, each file read whole."""
    out = []
    for f in files:
        for _, g in pl.read_parquet(f).group_by("session", maintain_order=True):
            out.append((g.select(INPUT_COLUMNS).to_numpy(), g["label"].to_numpy()))
    return out


@pytest.mark.parametrize("chunk_rows", [1, 5, 39, 41, 90, 1_000_000])
def test_the_stream_yields_every_session_whole_in_order(tmp_path, chunk_rows):
    files = _files(tmp_path, 6)
    want = _in_memory(files)
    got = list(read_pair_sessions(files, chunk_rows=chunk_rows))
    assert [len(y) for _, y in got] == [len(y) for _, y in want] == list(SIZES) * 6
    for (xa, ya), (xb, yb) in zip(got, want, strict=True):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)


def test_the_trainer_learns_the_same_weights_whatever_the_slice(tmp_path):
    files = _files(tmp_path, 6)
    whole = train_base(files, epochs=2, batch_sessions=4, chunk_rows=1_000_000)
    sliced = train_base(files, epochs=2, batch_sessions=4, chunk_rows=5)
    np.testing.assert_array_equal(whole.weights, sliced.weights)
    assert whole.sessions == sliced.sessions == (len(SIZES) - 1) * 6  # one-row sessions skipped
    assert whole.loss_curve[-1] < whole.loss_curve[0]  # it learned something
