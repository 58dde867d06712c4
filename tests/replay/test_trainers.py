"""The trainer strategies alone, on a small store the loop has filled: the loop's training
policy as one request, the offline and random scorers, the in-process trainer training,
serving and resuming its model, and the sidecar serving the same model with the same scores."""

from __future__ import annotations

import dataclasses
import json
import math

import duckdb
import numpy as np
import pytest

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.predictor_state import initial_state
from signet_bench.errors import UserError
from signet_bench.learn.base import shipped_base_params
from signet_bench.replay.loop import SimOptions, Simulator
from signet_bench.replay.loop_store import LoopStore
from signet_bench.replay.trainers import (
    InProcessTrainer,
    NoScorer,
    RandomScorer,
    SidecarTrainer,
    TrainingJob,
    make_trainer,
    model_dir,
    model_path,
)
from signet_bench.store.corpus import read_corpus
from signet_bench.store.schema import connect_writer
from signet_bench.world.synth.build import build_persona_store

SESSIONS = 24
CFG = DEFAULT_CONFIG


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    """A store with SESSIONS sessions of the random scorer, and the last one's candidates."""
    db = tmp_path_factory.mktemp("trainers") / "memories.db"
    build_persona_store("light", db, seed=5, n_memories=150)
    sim = Simulator(db, SimOptions(scorer="random", seed=5))
    try:
        sim.loop.run(SESSIONS, keep={SESSIONS - 1})
        inputs, tz = sim.session_inputs(SESSIONS - 1), sim.tz
    finally:
        sim.close()
    return db, inputs, tz


@pytest.fixture
def store(filled):
    db = filled[0]
    con = connect_writer(db)
    yield LoopStore(db, con, read_corpus(con))
    con.close()


def _job(db, tz: str, cfg=CFG, **state) -> TrainingJob:
    st = dataclasses.replace(initial_state(cfg), **state)
    return TrainingJob(store=db, run_id="train-1-x", state=st, cfg=cfg, seed=5, epochs=5, tz=tz)


def test_the_request_follows_the_loops_schedule(tmp_path):
    cfg = CFG.replace(full_retrain_every=3)
    first = _job(tmp_path / "m.db", "UTC", cfg).request(served=False)
    assert (first.mode, first.base_weights, first.protect) == ("finetune", None, False)
    assert (first.db_path, first.out_dir) == (tmp_path / "m.db", model_dir(tmp_path / "m.db"))
    assert (first.epochs, first.seed, first.sample_seed, first.tz) == (5, 5, 5, "UTC")
    job = _job(tmp_path / "m.db", "UTC", cfg, trained=True, model_version=1)
    inc = job.request(served=True)
    assert (inc.mode, inc.epochs, inc.lr_scale) == (
        "incremental",
        cfg.incremental_epochs,
        cfg.incremental_lr_scale,
    )
    assert (inc.base_weights, inc.protect, inc.seed) == (model_path(tmp_path / "m.db"), False, 6)
    warm = _job(
        tmp_path / "m.db", "UTC", cfg, trained=True, model_version=2, cold_start_exited=True
    )
    fresh = warm.request(served=True)
    assert (fresh.mode, fresh.epochs, fresh.protect, fresh.sample_seed) == ("fresh", 5, True, 5)


def test_offline_and_random_scorers(filled):
    _, inputs, _ = filled
    assert NoScorer().scorer(np.random.default_rng(0)) is None
    assert NoScorer().train(_job(filled[0], "UTC")) is None
    scorer = RandomScorer().scorer(np.random.default_rng(1))
    scores = scorer(inputs)
    assert scores.shape == (len(inputs),) and (scores > 0).all()
    assert scores.sum() == pytest.approx(1.0)
    np.testing.assert_array_equal(scores, RandomScorer().scorer(np.random.default_rng(1))(inputs))
    outcome = RandomScorer().train(_job(filled[0], "UTC"))
    assert outcome is not None and outcome.accepted and outcome.log is None


def test_an_unknown_scorer_names_the_choices(store):
    with pytest.raises(UserError, match="--scorer: 'onnx' is not one of none, random, model"):
        make_trainer("onnx", store, CFG, "UTC")


def test_the_in_process_trainer_trains_serves_and_resumes(filled, store):
    db, inputs, tz = filled
    trainer = InProcessTrainer(store, CFG)
    # before any training the shipped base is in place and scores
    assert model_path(db).exists() and trainer.scorer(np.random.default_rng(0)) is not None
    base = shipped_base_params(store.corpus.dim, CFG)
    assert all(np.array_equal(trainer.model[k], base[k]) for k in base)
    outcome = trainer.train(_job(db, tz))
    assert outcome is not None and outcome.accepted and trainer.model is not None
    log = dict(outcome.log or {})
    assert log["id"] == "train-1-x" and log["sample_count"] > 0
    # the log's loss is the run's last epoch loss, +inf when the held-out sessions kept the
    # start and no epoch ran (the workbench keeps the curve)
    with duckdb.connect(str(model_dir(db) / "workbench.duckdb"), read_only=True) as wb:
        row = wb.execute("SELECT loss_curve FROM training_runs WHERE run_id = 'train-1-x'")
        curve = json.loads(row.fetchone()[0])
    assert log["loss"] == (curve[-1] if curve else math.inf)
    assert model_path(db).exists()
    scores = trainer.scorer(np.random.default_rng(0))(inputs)
    assert scores.shape == (len(inputs),) and np.isfinite(scores).all()
    resumed = InProcessTrainer(store, CFG)
    assert resumed.model is not None and resumed.model.keys() == trainer.model.keys()
    for name, value in trainer.model.items():
        np.testing.assert_array_equal(resumed.model[name], value)


def test_the_sidecar_serves_the_model_with_the_same_scores(filled, store):
    db, inputs, tz = filled
    if not model_path(db).exists():
        InProcessTrainer(store, CFG).train(_job(db, tz))
    local = InProcessTrainer(store, CFG)
    sidecar = SidecarTrainer(store, CFG, tz)
    try:
        assert sidecar.name == "sidecar" and sidecar.model is not None
        got = sidecar.scorer(np.random.default_rng(0))(inputs)
    finally:
        sidecar.close()
    want = local.scorer(np.random.default_rng(0))(inputs)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
