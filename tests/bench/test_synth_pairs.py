"""The base's synthetic training data: worlds of training seeds only, labelled by the loop, with
a manifest `train-base --synth` writes into the base file; and the alpha a base earns on
held-out pair files."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from signet_bench.bench.synth_pairs import (
    MANIFEST,
    SynthPairs,
    export_synth_pairs,
    read_manifest,
)
from signet_bench.cli import main
from signet_bench.errors import UserError
from signet_bench.learn.base import UNEARNED_ALPHA, base_alpha, held_out_alpha
from signet_bench.learn.pairs import INPUT_COLUMNS, PAIR_COLUMNS, write_pairs


@pytest.mark.parametrize("seed", [900, 949, 1000, 1234])
def test_a_seed_a_benchmark_may_judge_on_is_refused(seed):
    with pytest.raises(UserError, match=f"--seeds {seed}: the base trains only on .*950-999"):
        SynthPairs(("heavy",), (seed,)).check()


def test_the_export_writes_the_loops_labels_and_its_manifest(tmp_path):
    spec = SynthPairs(("heavy",), (950,), sessions=4, memories=120)
    doc = export_synth_pairs(spec, tmp_path / "out")
    got, files = read_manifest(tmp_path / "out")
    assert got == doc and [f.name for f in files] == ["heavy-950.parquet"]
    assert doc["labels"] == "loop" and "not the planted relevance" in doc["label_rule"]
    frame = pl.read_parquet(files[0])
    assert frame.columns == list(PAIR_COLUMNS) and frame.height == doc["files"][0]["rows"] > 0
    assert frame["session"].n_unique() == doc["files"][0]["sessions"] >= 1
    # the loop's labels: rule values (0, 0.25 soft negatives, ...), not a planted continuum
    assert frame["label"].is_between(-1.0, 1.0).all()


def test_a_directory_without_a_manifest_is_refused_by_name(tmp_path):
    with pytest.raises(UserError, match=f"{MANIFEST}: not a synthetic pair export"):
        read_manifest(tmp_path)


def _pairs(path, rng, baseline_right: bool):
    """A pair file of 12 sessions whose labels follow `similarity`; the baseline rank follows
    the labels (`baseline_right`) or runs against them."""
    parts = []
    for s in range(12):
        n = 8
        sim = rng.permutation(n).astype(float)
        label = (sim >= n - 2).astype(float)
        rank = np.argsort(np.argsort(-sim if baseline_right else sim))
        cols = {c: np.zeros(n) for c in INPUT_COLUMNS} | {"similarity": sim}
        parts.append(
            pl.DataFrame(
                {"session": np.full(n, s), "candidate_count": np.full(n, n)}
                | {"baseline_rank": rank, "label": label}
                | cols
            ).select(PAIR_COLUMNS)
        )
    return write_pairs(pl.concat(parts), path)


@pytest.mark.parametrize(("baseline_right", "alpha"), [(False, 0.0), (True, 0.5)])
def test_held_out_alpha_is_the_share_the_baseline_wins_where_the_base_did_not_train(
    tmp_path, baseline_right, alpha
):
    rng = np.random.default_rng(0)
    files = [_pairs(tmp_path / f"p{i}.parquet", rng, baseline_right) for i in range(3)]
    got = held_out_alpha(files, folds=3, epochs=3)
    # the base learns the similarity weight: it never loses; a perfect baseline ties (half)
    assert got["value"] == pytest.approx(alpha) and got["sessions"] == 36 and got["folds"] == 3
    assert base_alpha({"alpha": got}) == pytest.approx(alpha)
    assert base_alpha({}) == UNEARNED_ALPHA == base_alpha({"alpha": {"value": 2.0}})


def test_train_base_writes_the_synthetic_sources_and_the_earned_alpha(tmp_path, capsys):
    rng = np.random.default_rng(1)
    d = tmp_path / "synth"
    d.mkdir()
    files = [_pairs(d / f"heavy-95{i}.parquet", rng, False) for i in range(2)]
    manifest = {
        "format": "signet-synth-pairs/1",
        "personas": ["heavy"],
        "seeds": [950, 951],
        "sessions": 4,
        "embedder": "topic",
        "scorer": "model",
        "labels": "loop",
        "memories": None,
        "label_rule": "the loop's",
        "files": [
            {"file": f.name, "persona": "heavy", "seed": 950 + i, "sessions": 12, "rows": 96}
            for i, f in enumerate(files)
        ],
    }
    (d / MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    out = tmp_path / "base.json"
    assert main(["train-base", "--synth", str(d), "--epochs", "2", "--json", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    (source,) = doc["training"]["sources"]
    assert "seeds 950, 951" in source["data"] and source["sessions"] == 24
    assert source["labels"] == "the loop's" and "--scorer model" in source["command"]
    assert doc["training"]["command"] == "signet-bench train-base --synth synth --json OUT"
    assert doc["alpha"]["sessions"] == 24 and 0.0 <= doc["alpha"]["value"] <= 1.0
    assert "signet-bench" in doc["licence"]["name"]
    assert "earned on 24 held-out sessions" in capsys.readouterr().out
