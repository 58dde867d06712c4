"""`signet-bench train`: a gated training on a store's sessions, recorded in workbench.duckdb;
a rejected model exits 1 and keeps the previous one; `--base-weights` fine-tunes an own-format
or a Signet SGPT checkpoint."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from signet_bench.cli import main
from signet_bench.learn.base import shipped_base_params
from signet_bench.learn.holdout import free_ranker_params
from signet_bench.learn.model.checkpoint import (
    FLAG_PRETRAINED_BASE,
    load_any,
    load_checkpoint,
    read_sgpt,
    write_sgpt,
)
from signet_bench.learn.model.params import (
    EXTENSION_PARAMS,
    SIGNET_PARAMS,
    neutral_extensions,
    signet_init_params,
)
from signet_bench.learn.samples import load_samples
from signet_bench.learn.train import canary_metrics, split_canary
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.store.corpus import read_corpus
from signet_bench.store.workbench import open_workbench
from signet_bench.world.synth.build import build_persona_store

TZ = "Europe/Berlin"


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "memories.db"
    build_persona_store("light", path, seed=0, n_memories=150)
    simulate(path, 40, SimOptions(scorer="random", seed=0))
    return path


@pytest.fixture(scope="module")
def canary(db):
    samples, _ = load_samples(db, tz=TZ, seed=0)
    return split_canary(samples)[1]


@pytest.fixture(scope="module")
def trained_model(db, tmp_path_factory) -> Path:
    """A model trained by the command itself (own format)."""
    out = tmp_path_factory.mktemp("base")
    assert _train(db, out, "--epochs", "5") == 0
    return out / "model.sbm"


@pytest.fixture
def tiny_lr(tmp_path) -> Path:
    """An agent.yaml whose learning rate is so small that one epoch keeps the weights (and so
    every gate) where they were: isolates the loading/saving of a base from the gates."""
    path = tmp_path / "agent.yaml"
    path.write_text("predictor:\n  learningRate: 1.0e-9\n  trainingJudge: canary\n")
    return path


@pytest.fixture
def canary_judge(tmp_path) -> Path:
    """An agent.yaml with the specification's canary gates (what Signet 0.58 judges a training
    by)."""
    path = tmp_path / "canary.yaml"
    path.write_text("predictor:\n  trainingJudge: canary\n")
    return path


def _train(db: Path, out: Path, *extra: str) -> int:
    return main(["train", "--db", str(db), "--out", str(out), "--tz", TZ, *extra])


def _runs(out: Path) -> list[dict]:
    with open_workbench(out / "workbench.duckdb") as con:
        cur = con.execute(
            "SELECT gate_passed, gate_reason, model_path, sample_count, epochs, canary_ndcg, "
            "canary_ndcg_delta, canary_topk_overlap, holdout, serving FROM training_runs "
            "ORDER BY started_at"
        )
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def _models(out: Path) -> list[dict]:
    with open_workbench(out / "workbench.duckdb") as con:
        cur = con.execute("SELECT path, is_pretrained_base, is_finetuned FROM models")
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(directory: Path) -> dict[str, str]:
    return {p.name: _digest(p) for p in directory.iterdir() if p.is_file()}


def _poison(monkeypatch) -> None:
    """Make every training set carry one NaN label (training reads its samples through
    `publish.load_samples`, so patching that name reaches it)."""
    import signet_bench.learn.publish as publish_mod

    real = publish_mod.load_samples

    def poisoned(*args, **kwargs):
        got, skipped = real(*args, **kwargs)
        labels = got[0].labels.copy()
        labels[0] = np.nan
        return [dataclasses.replace(got[0], labels=labels), *got[1:]], skipped

    monkeypatch.setattr(publish_mod, "load_samples", poisoned)


def test_train_saves_a_gated_model_and_records_the_run(db, tmp_path, capsys):
    before = _files(db.parent)
    out = tmp_path / "out"
    # any held-out lead serves the run here: the evidence it needs is tested below
    config = tmp_path / "agent.yaml"
    config.write_text("predictor:\n  holdoutGainEvidence: 0\n  servingConfidence: 0.5\n")
    assert _train(db, out, "--epochs", "3", "--config", str(config)) == 0
    text = capsys.readouterr().out
    served, sessions, *_ = text.splitlines()
    # the run serves its own model only where shown better than the shipped base and cosine
    # (tests/learn/test_serving.py); either way the line names what serves and the figures
    (run,) = _runs(out)
    serving = json.loads(run["serving"])["served"]
    per_user = serving == "per-user"
    what = {"per-user": "the model trained now", "base": "the shipped base"}.get(
        serving, "a free ranker"
    )
    assert served.startswith(f"served: {what} ({out / 'model.sbm'}). ")
    # the run's start: the shipped base, or the free ranker it gave way to on these sessions
    choice = json.loads(run["serving"])
    rival, strongest = choice["over_base"]["rival"], choice["over_free"]["rival"]
    if rival == strongest:  # its start is the strongest free ranker: named once
        assert f"leads its start, {rival}, the strongest free ranker, by " in served
    else:
        start = "the base" if rival == "base" else f"its start, {rival},"
        assert f"leads {start} by " in served and f" and {strongest} by " in served
    params, meta = load_any(out / "model.sbm")
    assert meta.native_dim == 768 and not meta.is_finetuned
    assert all(np.isfinite(v).all() for v in params.values())
    assert run["gate_passed"] is True
    assert run["gate_reason"] == {"per-user": "passed"}.get(serving, serving)
    assert run["model_path"] == str(out / "model.sbm")
    # judged on sessions it never trained on; the held-out sessions chose the epoch. Forward
    # folds: the judged sessions are also among the ones the kept model trained on, and the
    # line says so (not "N train + M canary" as if they were apart)
    holdout_sessions = json.loads(run["holdout"])["sessions"]
    assert sessions.startswith("sessions: ") and " trainable, " in sessions
    assert (
        f"judged on the {holdout_sessions} newest, each by a model trained only on the sessions "
        f"before it; the model kept then trained on all {run['sample_count']}"
    ) in sessions
    assert run["epochs"] <= 3 and run["sample_count"] > 0
    assert run["canary_ndcg_delta"] is None  # no previous model to compare with
    holdout = json.loads(run["holdout"])
    assert holdout["accepted"] is per_user and holdout["comparator"] == "cosine"
    assert json.loads(run["serving"]) == holdout["serving"]
    assert holdout["bar"] == holdout["heuristics"]["cosine"]
    (model,) = _models(out)
    assert model["is_finetuned"] is False
    # the store is only read (see tests/test_samples.py for the WAL files a reader may add)
    after = _files(db.parent)
    assert after[db.name] == before[db.name]
    assert set(after) - set(before) <= {f"{db.name}-wal", f"{db.name}-shm"}


def test_nan_label_exits_1_records_the_gate_and_keeps_the_previous_model(
    db, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "out"
    assert _train(db, out, "--epochs", "2") == 0
    kept = _digest(out / "model.sbm")
    capsys.readouterr()

    _poison(monkeypatch)
    assert _train(db, out, "--epochs", "2") == 1
    text = capsys.readouterr().out
    assert text.startswith(
        "served: unchanged, the model already there stays served: the model trained now "
        "ended with an infinite or NaN loss or weight"
    )
    assert _digest(out / "model.sbm") == kept
    first, second = _runs(out)
    assert first["gate_passed"] is True
    assert second["gate_passed"] is False
    assert second["gate_reason"] == "finite_losses"
    assert second["model_path"] is None
    assert len(_models(out)) == 1


def test_nan_label_on_a_fresh_out_dir_writes_no_model(db, tmp_path, monkeypatch):
    _poison(monkeypatch)
    out = tmp_path / "out"
    assert _train(db, out, "--epochs", "1") == 1
    assert not (out / "model.sbm").exists()
    (run,) = _runs(out)
    assert (run["gate_passed"], run["gate_reason"]) == (False, "finite_losses")
    assert _models(out) == []


def test_too_little_data_puts_the_shipped_base_in_place(tmp_path, capsys):
    """No trainable session yet: the shipped base, for the store's embedding dim, becomes the
    served model (the hook serves from the first session), and the run says why; with a model
    there already, too little data exits 2 and changes nothing."""
    young = tmp_path / "young.db"
    build_persona_store("light", young, seed=2, n_memories=80)
    simulate(young, 1, SimOptions(scorer="random", seed=2))
    out = tmp_path / "out"
    assert _train(young, out) == 0
    served = capsys.readouterr().out.splitlines()[0]
    assert served == (
        f"served: the shipped base ({out / 'model.sbm'}). The shipped base serves: no session "
        "has been trained on yet."
    )
    params, meta = load_checkpoint(out / "model.sbm")
    base = shipped_base_params(read_corpus(young).dim)
    assert meta.is_pretrained_base and meta.native_dim == read_corpus(young).dim
    assert set(params) == set(base) and all(np.array_equal(params[k], base[k]) for k in base)
    (run,) = _runs(out)
    assert run["gate_passed"] is True and run["gate_reason"] == "base"
    assert json.loads(run["serving"])["reason"] == "no-sessions"
    before = _files(out)
    assert _train(young, out) == 2
    assert "need at least 2" in capsys.readouterr().err
    assert _files(out) == before


def test_base_weights_own_format_is_the_model_the_gates_protect(
    db, trained_model, canary, canary_judge, tmp_path
):
    """The specification's gates: training starts from the base, whose canary NDCG is the reference
    of the drop gate (the exit code follows the gates either way)."""
    base, _ = load_any(trained_model)
    out = tmp_path / "out"
    code = _train(
        db,
        out,
        "--epochs",
        "1",
        "--base-weights",
        str(trained_model),
        "--config",
        str(canary_judge),
    )
    (run,) = _runs(out)
    assert code == (0 if run["gate_passed"] else 1)
    assert run["canary_ndcg_delta"] is not None and run["canary_topk_overlap"] is not None
    before = run["canary_ndcg"] - run["canary_ndcg_delta"]
    assert before == pytest.approx(canary_metrics(base, canary).ndcg, abs=1e-9)


def test_base_weights_own_format_fine_tunes(db, trained_model, tiny_lr, tmp_path):
    base, _ = load_any(trained_model)
    out = tmp_path / "out"
    code = _train(
        db, out, "--epochs", "1", "--base-weights", str(trained_model), "--config", str(tiny_lr)
    )
    assert code == 0
    tuned, meta = load_any(out / "model.sbm")
    assert meta.is_finetuned
    assert tuned.keys() == base.keys()
    for k in base:
        np.testing.assert_allclose(tuned[k], base[k], atol=1e-6, err_msg=k)
    assert any(not np.array_equal(tuned[k], base[k]) for k in base)  # it did train
    (run,) = _runs(out)
    assert run["gate_passed"] is True and run["canary_topk_overlap"] == pytest.approx(1.0)
    (model,) = _models(out)
    assert model["is_finetuned"] is True


def test_base_weights_sgpt_fine_tunes(db, trained_model, canary, tiny_lr, tmp_path):
    """A Signet model.bin: Signet's seven matrices (here: those of a trained model), no layer
    norm affines and no query terms (SGPT has no place for them)."""
    trained, _ = load_any(trained_model)
    signet = {k: trained[k] for k in SIGNET_PARAMS} | neutral_extensions()
    sgpt = tmp_path / "model.bin"
    write_sgpt(sgpt, signet, flags=FLAG_PRETRAINED_BASE)
    base, meta = read_sgpt(sgpt)
    assert meta.source_format == "sgpt" and meta.is_pretrained_base

    out = tmp_path / "out"
    code = _train(db, out, "--epochs", "1", "--base-weights", str(sgpt), "--config", str(tiny_lr))
    assert code == 0
    tuned, tuned_meta = load_any(out / "model.sbm")
    assert tuned_meta.is_finetuned and tuned_meta.source_format == "signet-bench"
    for k in SIGNET_PARAMS:
        np.testing.assert_allclose(tuned[k], base[k], atol=1e-6, err_msg=k)
    for k in EXTENSION_PARAMS:  # our terms start neutral and stay close to it
        np.testing.assert_allclose(tuned[k], base[k], atol=1e-6, err_msg=k)
    (run,) = _runs(out)
    before = run["canary_ndcg"] - run["canary_ndcg_delta"]
    assert before == pytest.approx(canary_metrics(base, canary).ndcg, abs=1e-9)


def test_base_weights_of_another_dimension_exit_2(db, tmp_path, capsys):
    sgpt = tmp_path / "small.bin"
    write_sgpt(sgpt, signet_init_params(native_dim=32))
    code = _train(db, tmp_path / "out", "--base-weights", str(sgpt))
    assert code == 2
    err = capsys.readouterr().err
    assert "native_dim 32" in err and "768" in err
    assert not (tmp_path / "out" / "model.sbm").exists()


def test_base_weights_that_are_not_a_checkpoint_exit_2(db, tmp_path, capsys):
    bogus = tmp_path / "model.bin"
    bogus.write_bytes(b"not a model at all")
    assert _train(db, tmp_path / "out", "--base-weights", str(bogus)) == 2
    assert "not a model checkpoint" in capsys.readouterr().err


def test_a_first_run_not_shown_better_serves_its_start(db, tmp_path, capsys):
    """The fixture store's session starts rank cosine above the shipped base, so the run
    starts there (`train.run_start`) and serves it when its own model is not shown better."""
    out = tmp_path / "out"
    config = tmp_path / "agent.yaml"
    config.write_text("predictor:\n  servingConfidence: 1\n")  # no bound is above 0
    assert _train(db, out, "--epochs", "2", "--config", str(config)) == 0
    text = capsys.readouterr().out
    served = text.splitlines()[0]
    assert served.startswith(
        f"served: a free ranker ({out / 'model.sbm'}). The free ranker cosine serves: this "
        "user's sessions rank it above the shipped base, and this user's model is not shown "
        "better (on "
    )
    (run,) = _runs(out)
    assert run["gate_passed"] is True and run["gate_reason"] == "free"
    holdout = json.loads(run["holdout"])
    assert holdout["accepted"] is False
    assert (holdout["serving"]["served"], holdout["serving"]["reason"]) == ("free", "free-start")
    params, meta = load_any(out / "model.sbm")
    assert not meta.is_pretrained_base
    cosine = free_ranker_params("cosine", meta.native_dim)
    assert all(np.array_equal(params[k], cosine[k]) for k in cosine)
