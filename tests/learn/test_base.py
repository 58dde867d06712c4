"""The shipped base model: its file loads, says what it was trained on and under which licence,
is part of the scorer's distribution, and lands in the scorer's weights."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from signet_bench.bench.synth_pairs import TRAINING_SEEDS
from signet_bench.errors import UserError
from signet_bench.learn.base import (
    SHIPPED_BASE,
    read_base,
    shipped_base,
    shipped_base_alpha,
    shipped_base_params,
    shipped_document,
    write_base,
)
from signet_bench.learn.pairs import INPUT_COLUMNS, BaseModel, base_params
from signet_scorer.contract import FEATURE_SPEC_HASH, SIGNAL_NAMES

ROOT = Path(__file__).resolve().parents[2]


def test_the_shipped_base_loads_with_its_training_data_and_licence():
    base, doc = shipped_base(), shipped_document()
    assert base.columns == INPUT_COLUMNS and np.isfinite(base.weights).all()
    assert doc["feature_spec_hash"] == FEATURE_SPEC_HASH
    assert doc["signal_names"] == list(SIGNAL_NAMES)
    assert "LoCoMo" in doc["training"]["data"] and doc["training"]["questions"] > 0
    # synthetic worlds it learned from, if any, are of training seeds, labelled by the loop
    for synth in (s for s in doc["training"]["sources"] if s["data"].startswith("synthetic")):
        assert "not the planted relevance" in synth["labels"] and synth["sessions"] > 0
        seeds = {int(t) for t in synth["command"].split("--seeds ")[1].split()[0].split(",")}
        assert seeds and seeds <= set(TRAINING_SEEDS)
    # the alpha session start fuses with is the one it earned on held-out sessions
    assert shipped_base_alpha() == doc["alpha"]["value"] < 1.0 and doc["alpha"]["sessions"] > 0
    assert doc["licence"]["name"] == "CC BY-NC 4.0"
    assert "non-commercial" in doc["licence"]["notice"]
    licence = ROOT / "scorer" / "signet_scorer" / "base" / "predictor-base.LICENSE.txt"
    assert "Attribution-NonCommercial 4.0 International" in licence.read_text(encoding="utf-8")
    # the new signals carry weight: the base is more than the hybrid
    assert np.abs(base.signal_weights[3:]).max() > 0


def test_the_shipped_files_are_package_data_of_the_scorer():
    meta = tomllib.loads((ROOT / "scorer" / "pyproject.toml").read_text(encoding="utf-8"))
    data = meta["tool"]["setuptools"]["package-data"]["signet_scorer"]
    assert SHIPPED_BASE in data and SHIPPED_BASE.replace(".json", ".LICENSE.txt") in data


def test_shipped_base_params_are_the_base_in_the_scorer():
    got, want = shipped_base_params(16), base_params(shipped_base(), 16)
    assert got.keys() == want.keys()
    for name in got:
        np.testing.assert_array_equal(got[name], want[name])


def test_a_base_file_round_trips_and_a_missing_column_weighs_zero(tmp_path):
    weights = np.linspace(-1, 1, len(INPUT_COLUMNS))
    base = BaseModel(weights, sessions=3, loss_curve=(0.5, 0.25))
    path = write_base(base, tmp_path / "b.json", {"training": {"data": "x"}, "licence": {}})
    back = read_base(path)
    np.testing.assert_allclose(back.weights, weights, atol=1e-8)
    doc = json.loads(path.read_text(encoding="utf-8"))
    del doc["weights"]["s_length"]
    path.write_text(json.dumps(doc), encoding="utf-8")
    assert read_base(path).weight("s_length") == 0.0


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": "other"}, "not a base file"),
        ({"feature_spec_hash": "0" * 16}, "feature_spec_hash"),
        ({"weights": {"similarity": 1.0, "s_turn_id": 2.0}}, "unknown columns s_turn_id"),
        ({"weights": {"similarity": "high"}}, "field 'weights'"),
    ],
)
def test_a_bad_base_file_is_refused_by_name(tmp_path, change, message):
    base = BaseModel(np.ones(len(INPUT_COLUMNS)), sessions=1, loss_curve=(1.0,))
    path = write_base(base, tmp_path / "b.json", {"training": {}, "licence": {}})
    doc = {**json.loads(path.read_text(encoding="utf-8")), **change}
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(UserError, match=message) as err:
        read_base(path)
    assert str(path) in str(err.value)


def test_a_base_file_needs_its_provenance(tmp_path):
    base = BaseModel(np.ones(len(INPUT_COLUMNS)), sessions=1, loss_curve=(1.0,))
    with pytest.raises(ValueError, match="licence"):
        write_base(base, tmp_path / "b.json", {"training": {}})
