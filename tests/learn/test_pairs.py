"""Pair export (numbers only, nothing joinable) and the streaming base trainer."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from signet_bench.bench.train_speed import synthetic_samples
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.model.params import COSINE_WEIGHT_INIT
from signet_bench.learn.pairs import (
    INPUT_COLUMNS,
    PAIR_COLUMNS,
    BaseModel,
    base_params,
    base_scale,
    export_pairs,
    pair_frame,
    read_pair_sessions,
    train_base,
    write_pairs,
)
from signet_bench.world.embed import get_embedder
from signet_bench.world.locomo import convert_locomo
from signet_scorer.contract import FEATURE_NAMES, N_SIGNALS
from tests.world.test_locomo import needs_data, slice_file


@needs_data
def test_export_leaks_no_text_path_or_joinable_id(tmp_path):
    res = convert_locomo(
        slice_file(tmp_path, ("conv-26",)), tmp_path / "stores", get_embedder("wordllama")
    )
    db = res.stores["conv-26"]
    out = tmp_path / "pairs.parquet"
    n = export_pairs(db, out)
    frame = pl.read_parquet(out)
    assert n == frame.height > 0
    assert tuple(frame.columns) == PAIR_COLUMNS
    assert all(dt.is_numeric() for dt in frame.dtypes)  # no text column at all
    con = sqlite3.connect(db)
    secrets = [r[0] for r in con.execute("SELECT content FROM memories")]
    secrets += [r[0] for r in con.execute("SELECT id FROM memories")]
    secrets += [r[0] for r in con.execute("SELECT session_key FROM session_scores")]
    secrets += [r[0] for r in con.execute("SELECT question FROM locomo_queries")]
    con.close()
    secrets += [str(db), db.name, "conv-26", "Caroline", "Melanie"]
    raw = out.read_bytes()
    uncompressed = tmp_path / "plain.parquet"
    frame.write_parquet(uncompressed, compression="uncompressed")
    for blob in (raw, uncompressed.read_bytes()):
        leaked = [s for s in secrets if s.encode() in blob]
        assert leaked == []
    # session numbers are drawn afresh: a second export numbers the sessions differently
    export_pairs(db, tmp_path / "again.parquet")
    again = pl.read_parquet(tmp_path / "again.parquet")
    key = ["label", "similarity", *(f"f_{f}" for f in FEATURE_NAMES)]
    a, b = frame.sort(key), again.sort(key)
    assert a.drop("session").equals(b.drop("session"))  # the same rows...
    assert not a["session"].equals(b["session"])  # ...under other session numbers


def _pairs_files(tmp: Path, n_files: int, sessions: int, seed: int) -> list[Path]:
    samples = synthetic_samples(sessions * n_files, dim=8, seed=seed)
    return [
        write_pairs(
            pair_frame(samples[i::n_files], np.random.default_rng(i)), tmp / f"p{i}.parquet"
        )
        for i in range(n_files)
    ]


def test_sessions_stream_whole_whatever_the_slice_size(tmp_path):
    files = _pairs_files(tmp_path, 2, 6, seed=1)
    whole = list(read_pair_sessions(files, chunk_rows=1_000_000))
    tiny = list(read_pair_sessions(files, chunk_rows=7))  # slices cut sessions apart
    assert len(whole) == len(tiny) == 12
    for (xa, ya), (xb, yb) in zip(whole, tiny, strict=True):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)
        assert xa.shape[1] == len(INPUT_COLUMNS)
    a = train_base(files, epochs=2, chunk_rows=1_000_000)
    b = train_base(files, epochs=2, chunk_rows=7)
    np.testing.assert_allclose(a.weights, b.weights)
    assert a.sessions == 12


def _synthetic_pair_file(tmp: Path, rng: np.random.Generator, name: str) -> Path:
    """Sessions whose label follows similarity and, more weakly, importance."""
    rows = []
    for s in range(60):
        n = 8
        sim = rng.uniform(-0.2, 0.8, n)
        imp = rng.uniform(0, 1, n)
        label = (sim + 0.3 * imp > np.sort(sim + 0.3 * imp)[-3]).astype(float)
        row = {c: np.zeros(n) for c in PAIR_COLUMNS}
        row |= {"session": np.full(n, s), "candidate_count": np.full(n, n)}
        row |= {"baseline_rank": np.arange(n), "label": label, "similarity": sim}
        row["f_importance"] = imp
        rows.append(pl.DataFrame(row))
    return write_pairs(pl.concat(rows), tmp / name)


def test_base_learns_what_the_labels_follow_and_lands_in_the_scorer(tmp_path):
    rng = np.random.default_rng(0)
    files = [_synthetic_pair_file(tmp_path, rng, f"u{i}.parquet") for i in range(3)]
    base = train_base(files, epochs=15, batch_sessions=16)
    imp = FEATURE_NAMES.index("importance")
    assert base.similarity_weight > 1.5  # from 1.0
    assert base.feature_weights[imp] > 0.2
    assert base.loss_curve[-1] < base.loss_curve[0]
    params = base_params(base, native_dim=8)
    d, v = DEFAULT_CONFIG.internal_dim, DEFAULT_CONFIG.value_dim
    scale = base_scale(base)
    if "cosine_weight" in params:
        np.testing.assert_allclose(params["cosine_weight"], [scale * base.similarity_weight])
    else:
        want = scale * base.similarity_weight / np.sqrt(d)
        np.testing.assert_allclose(np.diag(params["q_proj"]), want)
    gate = params["gate_proj"].reshape(-1)
    assert not gate[:v].any()
    np.testing.assert_allclose(gate[v : v + len(FEATURE_NAMES)], scale * base.feature_weights)


@pytest.mark.parametrize(
    ("similarity", "scale"), [(0.5, COSINE_WEIGHT_INIT / 0.5), (6.0, 1.0), (-1.0, 1.0)]
)
def test_base_scale_lifts_a_weak_similarity_weight_to_the_fresh_scorers(similarity, scale):
    rest = np.linspace(-1, 1, len(INPUT_COLUMNS))[1:]
    weights = np.r_[similarity, np.where(rest == 0, 0.5, rest)]  # no zero: the ratios below
    base = BaseModel(weights, sessions=1, loss_curve=(1.0,))
    assert base_scale(base) == pytest.approx(scale)
    params = base_params(base, native_dim=8)
    gate = params["gate_proj"].reshape(-1)[DEFAULT_CONFIG.value_dim :][: len(FEATURE_NAMES)]
    # one positive factor on every weight: the base's ranking is kept
    np.testing.assert_allclose(gate / base.feature_weights, scale)
    if "cosine_weight" in params:
        assert params["cosine_weight"][0] == pytest.approx(scale * similarity)
        np.testing.assert_allclose(params["signal_weights"], scale * base.signal_weights)
        assert base.signal_weights.shape == (N_SIGNALS,) and base.signal_weights.any()


def test_not_a_pair_file_is_refused_by_name(tmp_path):
    bad = tmp_path / "bad.parquet"
    pl.DataFrame({"x": [1.0]}).write_parquet(bad)
    with pytest.raises(Exception, match="bad.parquet: not a pair export"):
        list(read_pair_sessions([bad]))
    with pytest.raises(Exception, match="no pair files"):
        train_base([])


def test_train_base_writes_a_base_file_reproducibly(tmp_path, capsys):
    from signet_bench.cli import main
    from signet_bench.learn.base import read_base

    rng = np.random.default_rng(1)
    files = [str(_synthetic_pair_file(tmp_path, rng, f"u{i}.parquet")) for i in range(2)]
    outs = [tmp_path / "a.json", tmp_path / "b.json"]
    for out in outs:
        assert main(["train-base", "--pairs", *files, "--json", str(out)]) == 0
    first, second = (read_base(p) for p in outs)
    np.testing.assert_array_equal(first.weights, second.weights)
    np.testing.assert_allclose(first.weights, train_base(files).weights, atol=1e-8)
    assert "u0.parquet" in outs[0].read_text(encoding="utf-8")  # its training data, named
    assert main(["train-base", "--json", str(outs[0])]) != 0
    assert "--pairs" in capsys.readouterr().err
