"""The base ranker trained across a Dask cluster (learn/distributed.py) on pair exports of real
synthetic stores: one lambdarank group per session, a ranker that puts held-out positives first,
its ONNX form scored by onnxruntime as LightGBM scores it, the command, and its refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
import polars as pl
import pytest
from distributed import LocalCluster

from signet_bench.cli import main
from signet_bench.errors import UserError
from signet_bench.learn.distributed import (
    DaskTraining,
    pair_partitions,
    ranker_onnx,
    session_sizes,
    train_dask_ranker,
)
from signet_bench.learn.pairs import INPUT_COLUMNS, export_pairs, write_pairs
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.world.synth.build import build_persona_store

TREES = 30


@pytest.fixture(scope="module")
def pair_files(tmp_path_factory) -> list[Path]:
    """Pair exports of three synthetic users (the last one held out of training)."""
    root = tmp_path_factory.mktemp("dask-pairs")
    files = []
    for seed in range(3):
        db = root / f"user{seed}.db"
        build_persona_store("light", db, seed=seed, n_memories=150)
        simulate(db, 40, SimOptions(scorer="random", seed=seed))
        assert export_pairs(db, root / f"pairs{seed}.parquet") > 0
        files.append(root / f"pairs{seed}.parquet")
    return files


@pytest.fixture(scope="module")
def cluster():
    """A real two-worker Dask cluster in this process, reached by its address like a remote one."""
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, protocol="tcp", dashboard_address=":0"
    ) as c:
        yield c


def _pairwise_accuracy(frame: pl.DataFrame, scores: np.ndarray) -> float:
    """Mean over sessions of the share of (positive, negative) pairs scored in the right order
    (ties half): 0.5 is chance. Positive = label >= 0.5."""
    frame = frame.with_columns(score=pl.Series(scores))
    acc = []
    for _, g in frame.group_by("session"):
        pos = g.filter(pl.col("label") >= 0.5)["score"].to_numpy()[:, None]
        neg = g.filter(pl.col("label") < 0.5)["score"].to_numpy()[None, :]
        if pos.size and neg.size:
            acc.append(float(((pos > neg) + 0.5 * (pos == neg)).mean()))
    assert len(acc) >= 10
    return float(np.mean(acc))


def test_one_group_per_session_one_partition_per_file(pair_files, tmp_path):
    # two files whose session numbers are equal where they meet: still two groups
    a = pl.read_parquet(pair_files[0])
    last = a.filter(pl.col("session") == a["session"].max())
    head = write_pairs(last, tmp_path / "last.parquet")
    tail = write_pairs(last.with_columns(pl.col("label") * 0), tmp_path / "again.parquet")
    files = [*pair_files[:2], head, tail]
    frame = pair_partitions(files)
    assert frame.npartitions == len(files)
    got = frame.map_partitions(session_sizes).compute().tolist()
    want = []
    for f in files:
        sizes = pl.read_parquet(f).group_by("session", maintain_order=True).len()
        want += sizes["len"].to_list()
    assert got == want
    assert len(got) == sum(pl.read_parquet(f)["session"].n_unique() for f in files)


def test_ranker_trained_on_a_cluster_puts_held_out_positives_first(pair_files, cluster):
    train, held_out = pair_files[:2], pl.read_parquet(pair_files[2])
    ranker = train_dask_ranker(
        train, DaskTraining(scheduler=cluster.scheduler_address, n_estimators=TREES)
    )
    frames = [pl.read_parquet(f) for f in train]
    assert ranker.rows == sum(f.height for f in frames)
    assert ranker.sessions == sum(f["session"].n_unique() for f in frames)
    assert ranker.booster.num_trees() == TREES
    x = held_out.select(INPUT_COLUMNS).to_numpy()
    scores = ranker.predict(x)
    assert _pairwise_accuracy(held_out, scores) > 0.65  # chance: 0.5
    # its ONNX form scores as LightGBM does, in onnxruntime
    onnx_scores = ort.InferenceSession(ranker_onnx(ranker.booster).SerializeToString()).run(
        None, {"inputs": x}
    )[0]
    np.testing.assert_allclose(onnx_scores[:, 0], scores, rtol=1e-5, atol=1e-5)


def test_train_base_dask_command_on_a_local_cluster(pair_files, tmp_path, capsys):
    out = tmp_path / "ranker"
    args = ["train-base", "--engine", "dask", "--scheduler", "local", "--trees", "10"]
    assert main([*args, "--pairs", *map(str, pair_files), "--out", str(out)]) == 0
    meta = json.loads((out / "ranker.json").read_text())
    assert meta["files"] == 3 and meta["inputs"] == list(INPUT_COLUMNS)
    assert meta["sessions"] == sum(pl.read_parquet(f)["session"].n_unique() for f in pair_files)
    assert f"ranker: {meta['sessions']} sessions" in capsys.readouterr().out
    assert (out / "ranker.txt").read_text().startswith("tree")
    ort.InferenceSession(str(out / "ranker.onnx"))


def test_bad_pair_files_are_refused_by_name(pair_files, tmp_path, cluster):
    training = DaskTraining(scheduler=cluster.scheduler_address, n_estimators=2)
    bad = tmp_path / "bad.parquet"
    pl.DataFrame({"x": [1.0]}).write_parquet(bad)
    with pytest.raises(UserError, match="bad.parquet: not a pair export"):
        train_dask_ranker([pair_files[0], bad], training)
    mixed = tmp_path / "mixed.parquet"
    pl.read_parquet(pair_files[0]).sort("label").write_parquet(mixed)  # sessions interleaved
    with pytest.raises(UserError, match="mixed.parquet: sessions are not contiguous"):
        train_dask_ranker([mixed], training)
    nan = tmp_path / "nan.parquet"
    frame = pl.read_parquet(pair_files[0])
    frame = frame.with_columns(
        pl.when(pl.int_range(pl.len()) == 3)
        .then(None)
        .otherwise(pl.col("f_importance"))
        .fill_null(float("nan"))
        .alias("f_importance")
    )
    write_pairs(frame, nan)
    with pytest.raises(UserError, match="nan.parquet: row 3: f_importance is not finite"):
        train_dask_ranker([nan], training)
    with pytest.raises(UserError, match="gone.parquet: no such file"):
        train_dask_ranker([pair_files[0], tmp_path / "gone.parquet"], training)
    with pytest.raises(UserError, match="no pair files"):
        train_dask_ranker([], training)


def test_without_the_extra_the_command_says_how_to_install_it(pair_files, tmp_path):
    code = (
        "import sys; sys.modules['lightgbm'] = None\n"  # as if it were not installed
        "from signet_bench.cli import main\n"
        f"sys.exit(main(['train-base', '--engine', 'dask', '--pairs', {str(pair_files[0])!r}, "
        f"'--out', {str(tmp_path)!r}]))"
    )
    run = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True)
    assert run.returncode == 2
    assert "no module 'lightgbm'" in run.stderr
    assert "pip install 'signet-bench[distributed]'" in run.stderr
    assert not list(tmp_path.iterdir())
