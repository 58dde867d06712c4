"""The feature definitions against a committed golden record: a tiny Signet store
(fixtures/golden_features/memories.db) and the features of every candidate of its trainable
sessions, made under a recorded FEATURE_SPEC hash. A definition change without a spec change
fails here; a spec change fails until the fixture is regenerated on purpose."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from signet_bench.learn.samples import load_samples
from signet_scorer.contract import FEATURE_NAMES, FEATURE_SPEC, N_FEATURES, feature_spec_hash
from signet_scorer.features import feature_index

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "golden_features"
REGENERATE = ".venv/bin/python fixtures/golden_features/generate.py"
TOLERANCE = 1e-6


@pytest.fixture(scope="module")
def golden() -> dict:
    return json.loads((FIXTURE / "expected.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def loaded(tmp_path_factory, golden):
    """Samples of a copy of the fixture store (the committed file is never opened)."""
    store = tmp_path_factory.mktemp("golden") / "memories.db"
    shutil.copyfile(FIXTURE / "memories.db", store)
    return load_samples(store, tz=golden["tz"])


def _generator() -> ModuleType:
    """The fixture's generator script as a module (registered, as its dataclasses need)."""
    name = "golden_features_generate"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, FIXTURE / "generate.py")
        assert spec is not None and spec.loader is not None
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def _require_current_spec(golden: dict) -> None:
    made, now = golden["feature_spec_hash"], feature_spec_hash(FEATURE_SPEC)
    if made != now:
        pytest.fail(
            f"FEATURE_SPEC changed (hash {now}); the golden features were made under {made} "
            f"({golden['feature_spec']!r}). Regenerate the fixture with `{REGENERATE}`, review "
            "the diff of fixtures/golden_features/expected.json and commit it with the store."
        )


def _mismatches(expected: dict[str, dict], got: dict[str, tuple[list[str], np.ndarray]]) -> list:
    """Every (session, memory, feature) whose value differs from the golden one by more than
    the tolerance, as readable lines."""
    lines = []
    for key, cands in expected.items():
        ids, feats = got[key]
        row_of = {m: i for i, m in enumerate(ids)}
        for mid, values in cands.items():
            for name, value in values.items():
                v = float(feats[row_of[mid], feature_index(name)])
                if not abs(v - value) <= TOLERANCE:
                    lines.append(f"{key} {mid} {name}: now {v!r}, golden {value!r}")
    return lines


def _fail_on(lines: list[str]) -> None:
    if lines:
        pytest.fail(
            "feature values changed but FEATURE_SPEC did not. If the change is intended, "
            "change FEATURE_SPEC (checkpoints record its hash) and regenerate the fixture with "
            f"`{REGENERATE}`; otherwise it is a regression:\n  " + "\n  ".join(lines)
        )


def test_golden_record_is_complete(golden):
    _require_current_spec(golden)
    assert golden["feature_names"] == list(FEATURE_NAMES)
    assert len(golden["sessions"]) >= 3
    for cands in golden["sessions"].values():
        assert len(cands) >= 2
        assert all(list(values) == golden["feature_names"] for values in cands.values())


def test_sample_assembly_reproduces_golden_features(golden, loaded):
    _require_current_spec(golden)
    samples, _skipped = loaded
    by_key = {s.session_key: s for s in samples}
    assert set(by_key) == set(golden["sessions"]), (
        "the trainable sessions of the fixture changed (sample assembly or label gates, not the "
        f"feature values): now {sorted(by_key)}, golden {sorted(golden['sessions'])}"
    )
    got = {}
    for key, cands in golden["sessions"].items():
        s = by_key[key]
        assert s.features.shape == (len(s.memory_ids), N_FEATURES)
        assert sorted(s.memory_ids.tolist()) == sorted(cands), f"{key}: the candidate set changed"
        got[key] = (s.memory_ids.tolist(), s.features)
    _fail_on(_mismatches(golden["sessions"], got))


def test_generator_reproduces_golden_features(golden):
    """The generator's declared inputs through `candidate_features` alone (no store reading)
    give the committed record: pins the definitions even when sample assembly is changing."""
    _require_current_spec(golden)
    record = _generator().expected_features()
    assert record["feature_spec_hash"] == golden["feature_spec_hash"]
    assert record["sessions"].keys() == golden["sessions"].keys()
    got = {}
    for key, cands in record["sessions"].items():
        assert cands.keys() == golden["sessions"][key].keys(), f"{key}: the candidate set changed"
        ids = list(cands)
        feats = np.array([[cands[m][n] for n in FEATURE_NAMES] for m in ids])
        got[key] = (ids, feats)
    _fail_on(_mismatches(golden["sessions"], got))


def test_changed_spec_asks_for_regeneration(golden):
    stale = {**golden, "feature_spec_hash": "0" * 16}
    with pytest.raises(pytest.fail.Exception, match="Regenerate the fixture"):
        _require_current_spec(stale)


def test_changed_value_is_reported_by_name(golden):
    key, cands = next(iter(golden["sessions"].items()))
    mid = next(iter(cands))
    ids = list(cands)
    feats = np.array([[cands[m][n] for n in FEATURE_NAMES] for m in ids])
    feats[ids.index(mid), feature_index("usage")] += 1e-3
    lines = _mismatches({key: cands}, {key: (ids, feats)})
    assert len(lines) == 1 and lines[0].startswith(f"{key} {mid} usage:")


def test_samples_carry_the_ratings_a_held_out_judgement_uses(loaded):
    """Per candidate, the agent's rating where it gave one, else the judge's relevance (the
    fixture's sessions as the generator writes them), NaN unrated."""
    samples, _skipped = loaded
    gen = _generator()
    by_key = {s.session_key: s for s in samples}
    for session in gen.SESSIONS:
        sample = by_key.get(session.key)
        if sample is None:
            continue
        judge = {c.memory_id: c.relevance for c in session.cands if c.relevance is not None}
        want = {**judge, **dict(session.agent)}
        got = dict(zip(sample.memory_ids.tolist(), sample.rated.tolist(), strict=True))
        assert {m: v for m, v in got.items() if not np.isnan(v)} == pytest.approx(want)
