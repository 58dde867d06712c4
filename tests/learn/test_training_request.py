"""The training request: every field changes what the real trainer does. For each field, two
requests that differ in that field alone run `train_store` on a small synthetic store, and the
run, the saved model or the files written differ as the field says; a field added to the
request without such a case fails `test_every_field_has_a_behaviour_case`. Also: the request's
checks name the field, it survives JSON, and its defaults are the config's constants."""

from __future__ import annotations

import dataclasses
import shutil
import sqlite3
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.model.checkpoint import load_any, save_checkpoint
from signet_bench.learn.publish import (
    NothingToTrain,
    StoreTraining,
    request_config,
    scheduled_request,
    train_store,
)
from signet_bench.learn.samples import load_samples
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.store.timestamps import format_iso
from signet_bench.world.synth.build import build_persona_store
from signet_scorer import request as r
from signet_scorer.request import RequestError, TrainingRequest

TZ = "UTC"


def _store(path: Path, seed: int, sessions: int) -> Path:
    build_persona_store("light", path, seed=seed, n_memories=150)
    simulate(path, sessions, SimOptions(scorer="random", seed=seed))
    return path


def _sparse_copy(store: Path, path: Path) -> Path:
    """A copy of `store` whose sessions carry few signals (four injected memories, no FTS hits
    or agent ratings): the label rule then draws its 3:1 sampled negatives from a pool larger
    than it needs, so the negatives' seed decides which candidates a session trains on."""
    shutil.copy(store, path)
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE session_memories SET fts_hit_count = 0, agent_relevance_score = NULL")
        con.execute("UPDATE session_memories SET was_injected = 0 WHERE rank >= 4 OR rank IS NULL")
    con.close()
    return path


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    """The store every case trains on, another user's store, and a sparse copy of the first."""
    root = tmp_path_factory.mktemp("request")
    main = _store(root / "memories.db", 0, 40)
    other = _store(root / "other.db", 1, 25)
    return {"main": main, "other": other, "sparse": _sparse_copy(main, root / "sparse.db")}


@pytest.fixture(scope="module")
def base(stores, tmp_path_factory) -> Path:
    """A trained model whose training range ends at the store's middle session, so an
    incremental run has newer sessions to train on."""
    out = tmp_path_factory.mktemp("base")
    run = train_store(TrainingRequest(stores["main"], out, epochs=2, tz=TZ), cfg=CANARY_JUDGE)
    assert run.result.accepted
    params, meta = load_any(run.published.model_path)
    samples, _ = load_samples(stores["main"], tz=TZ)
    middle = format_iso(samples[len(samples) // 2].start)
    path = out / "base.sbm"
    save_checkpoint(path, params, meta.replace(last_session_at=middle))
    return path


@dataclass(frozen=True, slots=True)
class Outcome:
    """One run: its request, what train_store returned (or the exception it raised), and the
    weights it saved."""

    request: TrainingRequest
    run: StoreTraining | None
    error: Exception | None
    params: dict[str, np.ndarray] | None

    @property
    def result(self):
        assert self.run is not None, self.error
        return self.run.result


# The specification's canary gates, so each field's effect is seen without the held-out epoch choice
# (tests/learn/test_train_holdout.py covers that judge).
CANARY_JUDGE = DEFAULT_CONFIG.replace(training_judge="canary")


def _train(request: TrainingRequest) -> Outcome:
    try:
        run = train_store(request, cfg=CANARY_JUDGE)
    except NothingToTrain as exc:
        return Outcome(request, None, exc, None)
    params = load_any(run.published.model_path)[0] if run.result.accepted else None
    return Outcome(request, run, None, params)


def _distance(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> float:
    names = ("down_proj", "q_proj", "k_proj", "v_proj", "gate_proj")
    return float(sum(np.abs(a[n] - b[n]).sum() for n in names))


def _base_params(o: Outcome) -> dict[str, np.ndarray]:
    return load_any(o.request.base_weights)[0]


def _weights_differ(a: Outcome, b: Outcome) -> None:
    assert _distance(a.params, b.params) > 0


def _loss_differs(a: Outcome, b: Outcome) -> None:
    assert a.result.sample_count == b.result.sample_count
    assert a.result.loss_curve[0] != pytest.approx(b.result.loss_curve[0], rel=1e-6)


def _other_candidates(a: Outcome, b: Outcome) -> None:
    assert a.result.sample_count == b.result.sample_count
    assert a.result.loss_curve != b.result.loss_curve
    seeds = (a.request.negatives_seed, b.request.negatives_seed)
    assert seeds == (0, 7) and a.request.seed == b.request.seed


def _other_store(a: Outcome, b: Outcome) -> None:
    assert a.run.skipped + a.result.sample_count != b.run.skipped + b.result.sample_count


def _own_folder(a: Outcome, b: Outcome) -> None:
    for o in (a, b):
        saved = o.run.published.model_path
        assert saved == o.request.out_dir / "model.sbm"
        assert saved.is_file() and (o.request.out_dir / "workbench.duckdb").is_file()
    assert a.run.published.model_path != b.run.published.model_path


def _incremental_trains_the_newer_sessions(a: Outcome, b: Outcome) -> None:
    assert b.result.sample_count < a.result.sample_count
    assert b.result.canary_count == a.result.canary_count


def _fresh_starts_from_fresh_weights(a: Outcome, b: Outcome) -> None:
    assert b.result.loss_curve[0] > a.result.loss_curve[0]  # an untrained start
    assert load_any(a.run.published.model_path)[1].is_finetuned
    assert not load_any(b.run.published.model_path)[1].is_finetuned


def _base_is_the_start_and_the_reference(a: Outcome, b: Outcome) -> None:
    assert a.result.canary_ndcg_delta is None and b.result.canary_ndcg_delta is not None
    assert b.result.loss_curve[0] < a.result.loss_curve[0]  # a trained start


def _protect_applies_the_stability_gates(a: Outcome, b: Outcome) -> None:
    assert "canary_topk_overlap" not in a.result.gates
    assert "canary_topk_overlap" in b.result.gates


def _epochs(a: Outcome, b: Outcome) -> None:
    assert (a.result.epochs_run, b.result.epochs_run) == (1, 3)
    assert b.result.steps == 3 * a.result.steps


def _lr_scale(a: Outcome, b: Outcome) -> None:
    base = _base_params(a)
    assert _distance(b.params, base) < 0.1 * _distance(a.params, base)


def _min_confidence(a: Outcome, b: Outcome) -> None:
    assert b.run.skipped > a.run.skipped
    assert b.result.sample_count < a.result.sample_count


def _limit(a: Outcome, b: Outcome) -> None:
    assert b.result.sample_count == 10 < a.result.sample_count


def _time_cap(a: Outcome, b: Outcome) -> None:
    assert (a.result.epochs_run, a.result.stopped_early) == (2, None)
    assert (b.result.epochs_run, b.result.steps, b.result.stopped_early) == (1, 1, "time-cap")


def _checkpoint_written(a: Outcome, b: Outcome) -> None:
    assert a.run.published.checkpoint is None
    written = b.run.published.checkpoint
    assert written == b.request.checkpoint_path and written.is_file()
    back, _ = load_any(written)
    assert all(np.array_equal(back[k], b.params[k]) for k in back)


def _checkpoint_format(a: Outcome, b: Outcome) -> None:
    assert zipfile.is_zipfile(a.run.published.checkpoint)  # by suffix: the workbench's own format
    assert not zipfile.is_zipfile(b.run.published.checkpoint)
    assert b.run.published.checkpoint.read_bytes()[:1] == b"\x08"  # an ONNX protobuf


Check = Callable[[Outcome, Outcome], None]
# From the base model, with the stability gates off, so that both runs are accepted and their
# weights can be compared.
BASE = {"base_weights": "base", "protect": False}
# (field, changes of run a, changes of run b, what must differ); paths are filled per test.
CASES: list[tuple[str, dict, dict, Check]] = [
    ("db_path", {}, {"db_path": "other"}, _other_store),
    ("out_dir", {}, {}, _own_folder),
    ("mode", BASE, {**BASE, "mode": "incremental"}, _incremental_trains_the_newer_sessions),
    ("mode", BASE, {**BASE, "mode": "fresh"}, _fresh_starts_from_fresh_weights),
    ("base_weights", {}, {"base_weights": "base"}, _base_is_the_start_and_the_reference),
    ("protect", BASE, {**BASE, "protect": True}, _protect_applies_the_stability_gates),
    ("epochs", {"epochs": 1}, {"epochs": 3}, _epochs),
    ("lr_scale", BASE, {**BASE, "lr_scale": 0.01}, _lr_scale),
    ("temperature", {}, {"temperature": 2.0}, _loss_differs),
    ("min_confidence", {}, {"min_confidence": 0.8}, _min_confidence),
    ("limit", {}, {"limit": 10}, _limit),
    ("seed", {}, {"seed": 1}, _weights_differ),
    (
        "sample_seed",
        {"db_path": "sparse"},
        {"db_path": "sparse", "sample_seed": 7},
        _other_candidates,
    ),
    ("time_cap_s", {}, {"time_cap_s": 1e-9}, _time_cap),
    ("tz", {}, {"tz": "Asia/Tokyo"}, _loss_differs),
    ("checkpoint_path", {}, {"checkpoint_path": "model.ckpt"}, _checkpoint_written),
    (
        "checkpoint_format",
        {"checkpoint_path": "model.ckpt"},
        {"checkpoint_path": "model.ckpt", "checkpoint_format": "onnx"},
        _checkpoint_format,
    ),
]


def _request(root: Path, stores: dict[str, Path], base: Path, changes: dict) -> TrainingRequest:
    """The common request (2 epochs in UTC) with `changes`; a store's or the base's name
    stands for it, another bare file name for a file in the run's folder."""
    named = {**stores, "base": base}
    values = {"db_path": stores["main"], "out_dir": root, "epochs": 2, "tz": TZ, **changes}
    for key in ("db_path", "base_weights", "checkpoint_path"):
        if isinstance(values.get(key), str):
            values[key] = named.get(values[key], root / str(values[key]))
    return TrainingRequest(**values)


@pytest.mark.parametrize(
    ("field", "a", "b", "check"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)]
)
def test_each_field_changes_the_training(stores, base, tmp_path, field, a, b, check):
    first = _request(tmp_path / "a", stores, base, a)
    second = _request(tmp_path / "b", stores, base, b)
    differ = {
        f.name
        for f in dataclasses.fields(TrainingRequest)
        if getattr(first, f.name) != getattr(second, f.name)
    }
    assert field in differ and differ <= {field, "out_dir", "checkpoint_path"}, differ
    check(_train(first), _train(second))


def test_every_field_has_a_behaviour_case():
    assert {c[0] for c in CASES} == {f.name for f in dataclasses.fields(TrainingRequest)}


def test_bad_values_name_the_field(tmp_path):
    for changes, field in [
        ({"epochs": 0}, "epochs"),
        ({"epochs": True}, "epochs"),
        ({"lr_scale": float("nan")}, "lr_scale"),
        ({"temperature": 0.0}, "temperature"),
        ({"min_confidence": 1.01}, "min_confidence"),
        ({"limit": 2.5}, "limit"),
        ({"seed": -1}, "seed"),
        ({"sample_seed": "7"}, "sample_seed"),
        ({"time_cap_s": 0}, "time_cap_s"),
        ({"tz": "Nowhere/Place"}, "tz"),
        ({"mode": "both"}, "mode"),
        ({"protect": 1}, "protect"),
        ({"base_weights": "base.sbm"}, "base_weights"),
        ({"checkpoint_format": "onnx"}, "checkpoint_format"),
        (
            {"checkpoint_path": tmp_path / "m.bin", "checkpoint_format": "pickle"},
            "checkpoint_format",
        ),
    ]:
        with pytest.raises(RequestError) as err:
            TrainingRequest(tmp_path / "m.db", **changes)
        assert err.value.field == field and str(err.value).startswith(f"{field}: ")


def test_json_round_trip_and_strict_reading(tmp_path):
    req = TrainingRequest(
        tmp_path / "m.db",
        tmp_path / "out",
        mode="incremental",
        base_weights=tmp_path / "b.bin",
        protect=False,
        epochs=7,
        lr_scale=0.25,
        temperature=0.7,
        min_confidence=0.65,
        limit=99,
        seed=5,
        sample_seed=6,
        time_cap_s=12.5,
        tz="Europe/Berlin",
        checkpoint_path=tmp_path / "c.onnx",
        checkpoint_format="onnx",
    )
    assert TrainingRequest.from_json(req.to_json()) == req
    assert req.replace(epochs=8).epochs == 8 and req.epochs == 7
    with pytest.raises(RequestError, match="^learning_rate: "):
        TrainingRequest.from_dict({**req.to_dict(), "learning_rate": 1.0})
    with pytest.raises(RequestError, match="^db_path: "):
        TrainingRequest.from_dict({"epochs": 3})
    with pytest.raises(RequestError, match="^request: not valid JSON"):
        TrainingRequest.from_json("{not json")
    assert "out_dir" not in req.rpc_params() and "base_weights" not in req.rpc_params()


def test_defaults_are_the_configs():
    """The request's defaults and the config's training constants are one set of numbers;
    a request built from the default config is the default request."""
    cfg = DEFAULT_CONFIG
    names = {
        "FULL_EPOCHS": "full_training_epochs",
        "INCREMENTAL_EPOCHS": "incremental_epochs",
        "INCREMENTAL_LR_SCALE": "incremental_lr_scale",
        "LOSS_TEMPERATURE": "loss_temperature",
        "MIN_CONFIDENCE": "min_scorer_confidence",
        "TIME_CAP_S": "max_training_seconds",
    }
    assert {k: getattr(r, k) for k in names} == {k: getattr(cfg, v) for k, v in names.items()}
    plain = TrainingRequest(Path("m.db"), Path("out"))
    assert scheduled_request("m.db", "out") == plain
    assert request_config(cfg, plain) == cfg
    incremental = scheduled_request("m.db", "out", mode="incremental")
    assert (incremental.epochs, incremental.lr_scale) == (r.INCREMENTAL_EPOCHS, 0.1)
