"""ONNX export: the graph computes the numpy forward pass (same logits, scores and rankings) for
every candidate mix and for untrained, trained and imported weights; it is a checked opset-17 /
IR-8 model of standard ops with the documented inputs, outputs and metadata."""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

from signet_bench.cli import main
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.ranking.prefilter import cosine_to
from signet_bench.learn import export
from signet_bench.learn.export import (
    MAX_MODEL_BYTES,
    ExportError,
    build_model,
    convert_model,
    export_model,
    params_from_onnx,
)
from signet_bench.learn.model.checkpoint import (
    CheckpointError,
    CheckpointMeta,
    load_any,
    read_sgpt,
    save_checkpoint,
    write_sgpt,
)
from signet_bench.learn.model.optim import Adam
from signet_bench.learn.model.params import (
    COSINE_WEIGHT_INIT,
    SIGNET_PARAMS,
    extensions_are_neutral,
    init_params,
    layer_norm_is_identity,
    param_shapes,
)
from signet_bench.learn.model.scorer import (
    SessionArrays,
    batch_from_sessions,
    forward,
    loss_and_grads,
)
from signet_scorer import contract
from signet_scorer.contract import FEATURE_SPEC, feature_spec_hash
from signet_scorer.scorer import graph_inputs
from signet_scorer.signals import HYBRID_VECTOR_WEIGHT, hybrid_scores
from signet_scorer.tokenize import token_buckets
from signet_scorer.workbench import prompt_model_file

DIM = DEFAULT_CONFIG.native_dim
DIM_BUCKETS = DEFAULT_CONFIG.hash_buckets
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "deploy",
    "rollback",
    "postgres",
    "index",
    "cache",
    "queue",
    "retry",
    "auth",
]


@dataclass(frozen=True)
class Session:
    """One session's candidates as the model takes them."""

    context: np.ndarray
    emb: np.ndarray
    has: np.ndarray
    tokens: list
    features: np.ndarray
    slot: int
    signals: np.ndarray | None = None  # (n, N_SIGNALS)


def make_session(rng: np.random.Generator, n: int, text_share: float, slot: int = 5) -> Session:
    """n candidates, about `text_share` of them on the text path (one with no tokens at all);
    session-level features set, so the query's time term matters."""
    has = rng.random(n) >= text_share
    emb = rng.normal(size=(n, DIM)).astype(np.float32)
    emb[~has] = 0.0
    tokens = []
    for i in range(n):
        words = rng.choice(WORDS, size=int(rng.integers(1, 30))).tolist()
        tokens.append(None if has[i] else token_buckets(" ".join(words), DIM_BUCKETS))
    text_rows = np.flatnonzero(~has)
    if text_rows.size >= 3:
        tokens[text_rows[-1]] = token_buckets(
            "", DIM_BUCKETS
        )  # a text with no tokens: LN(0) = beta
    feats = rng.normal(size=(n, contract.N_FEATURES)).astype(np.float32)
    feats[:, list(contract.SESSION_FEATURES)] = rng.normal(size=len(contract.SESSION_FEATURES))
    feats[:, 10] = has
    feats[:, 11] = 0.0
    context = (emb[has].mean(axis=0) if has.any() else rng.normal(size=DIM)).astype(np.float32)
    signals = rng.uniform(0.0, 1.0, size=(n, contract.N_SIGNALS)).astype(np.float32)
    signals[rng.random(n) < 0.3] = 0.0  # candidates without evidence
    return Session(context, emb, has, tokens, feats, slot, signals)


def numpy_scores(params: dict, s: Session) -> tuple[np.ndarray, np.ndarray]:
    batch = batch_from_sessions(
        [SessionArrays(s.context, s.emb, s.has, s.tokens, s.features, s.slot, s.signals)],
        dtype=np.float32,
    )
    fwd = forward(params, batch)
    return fwd.logits[0], fwd.probs[0]


def onnx_inputs(s: Session) -> dict[str, np.ndarray]:
    return graph_inputs(s.context, s.emb, s.has, s.tokens, s.features, s.slot, s.signals)


def session_of(path: Path) -> ort.InferenceSession:
    return ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])


def ranking(scores: np.ndarray) -> list[int]:
    return np.lexsort((np.arange(scores.size), -scores)).tolist()


def trained_params(steps: int = 40) -> dict[str, np.ndarray]:
    """Weights after real Adam steps on labelled sessions of varied projects and times, at a
    learning rate high enough to move every parameter block away from its start."""
    rng = np.random.default_rng(7)
    cfg = DEFAULT_CONFIG.replace(learning_rate=2e-2)
    sessions = [make_session(rng, int(rng.integers(5, 25)), 0.3, slot=i % 4) for i in range(8)]
    labels = [rng.uniform(-0.3, 1.0, size=s.has.size) for s in sessions]
    batch = batch_from_sessions(
        [
            SessionArrays(s.context, s.emb, s.has, s.tokens, s.features, s.slot, s.signals, lab)
            for s, lab in zip(sessions, labels, strict=True)
        ]
    )
    params = init_params(cfg)
    opt = Adam(params, cfg)
    for _ in range(steps):
        _, grads = loss_and_grads(params, batch, cfg)
        opt.step(params, grads)
    return params


def sgpt_params(path: Path) -> dict[str, np.ndarray]:
    """A Signet `model.bin` of random Signet weights, written and read back."""
    rng = np.random.default_rng(11)
    shapes = param_shapes()
    write_sgpt(path, {n: rng.normal(0, 0.2, shapes[n]) for n in SIGNET_PARAMS}, flags=1)
    return read_sgpt(path)[0]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, tuple[dict, Path]]:
    """name -> (numpy weights, exported ONNX file): untrained, trained, imported SGPT."""
    root = tmp_path_factory.mktemp("export")
    out = {}
    untrained = init_params()
    save_checkpoint(root / "untrained.sbm", untrained, CheckpointMeta())
    out["untrained"] = (untrained, export_model(root / "untrained.sbm", root / "untrained.onnx"))
    trained = trained_params()
    meta = CheckpointMeta(
        feature_spec_hash=feature_spec_hash(FEATURE_SPEC),
        first_session_at="2026-01-01T08:00:00Z",
        last_session_at="2026-02-01T08:00:00Z",
    )
    (root / "run").mkdir()
    save_checkpoint(root / "run" / "model.sbm", trained, meta)
    out["trained"] = (trained, export_model(root / "run", root / "trained.onnx"))
    imported = sgpt_params(root / "model.bin")
    out["sgpt"] = (imported, export_model(root / "model.bin", root / "sgpt.onnx"))
    return out


CASES = {
    "n1_embedded": (1, 0.0),
    "n1_text": (1, 1.0),
    "all_text": (12, 1.0),
    "mixed": (40, 0.3),
    "all_embedded": (100, 0.0),
}


def case_session(case: str) -> Session:
    n, share = CASES.get(case, (30, 0.2))
    rng = np.random.default_rng(zlib.crc32(case.encode()))
    s = make_session(rng, n, share)
    if case == "superseded":
        feats = s.features.copy()
        feats[3, 11] = 1.0
        return dataclasses.replace(s, features=feats)
    return s


def test_trained_weights_move_every_parameter_block():
    params = trained_params()
    assert not layer_norm_is_identity(params)
    assert not extensions_are_neutral(params)
    start = init_params()
    # project_embeddings shift a session's logits uniformly: the listwise loss never moves them
    moved = [n for n in param_shapes() if not np.allclose(params[n], start[n])]
    assert sorted(moved) == sorted(set(param_shapes()) - {"project_embeddings"})


@pytest.mark.parametrize("weights", ["untrained", "trained", "sgpt"])
@pytest.mark.parametrize("case", [*CASES, "superseded"])
def test_onnx_matches_numpy_forward(models, weights, case):
    params, path = models[weights]
    s = case_session(case)
    logits, scores = session_of(path).run(["logits", "scores"], onnx_inputs(s))
    # the float32 reference: the very weights the graph holds, computed in float32
    ref_logits, ref_scores = numpy_scores({k: v.astype(np.float32) for k, v in params.items()}, s)
    np.testing.assert_allclose(scores, ref_scores, rtol=1e-5, atol=1e-6)
    # a logit is a sum of terms several times its size: float32 rounding scales with them
    scale = max(1.0, float(np.abs(ref_logits).max()))
    np.testing.assert_allclose(logits, ref_logits, rtol=1e-5, atol=1e-6 * scale)
    # and the float64 training weights: same numbers to float32 precision, same ranking
    _, scores64 = numpy_scores(params, s)
    np.testing.assert_allclose(scores, scores64, rtol=1e-4, atol=1e-6)
    assert ranking(scores) == ranking(scores64) == ranking(ref_scores)


def test_superseded_feature_changes_the_score(models):
    params, path = models["trained"]
    s = case_session("mixed")
    feats = s.features.copy()
    feats[3, 11] = 1.0
    flagged = dataclasses.replace(s, features=feats)
    sess = session_of(path)
    before = sess.run(["logits"], onnx_inputs(s))[0]
    after = sess.run(["logits"], onnx_inputs(flagged))[0]
    w_superseded = params["gate_proj"][0, DEFAULT_CONFIG.value_dim + 11]
    np.testing.assert_allclose(after[3] - before[3], w_superseded, rtol=1e-4, atol=1e-6)


def test_cosine_weight_moves_the_logits_by_the_cosine(models, tmp_path):
    """The graph's cosine term: w_cos · cosine(context, embedding) on the embedded path, 0 on
    the text path and for a zero embedding."""
    params, _ = models["trained"]
    s = case_session("mixed")
    emb = s.emb.copy()
    emb[int(np.flatnonzero(s.has)[0])] = 0.0  # a zero vector flagged as embedded
    s = dataclasses.replace(s, emb=emb)
    moved = {**params, "cosine_weight": params["cosine_weight"] + 0.75}
    logits = []
    for name, weights in (("a", params), ("b", moved)):
        path = tmp_path / f"{name}.onnx"
        path.write_bytes(export.model_bytes(weights, CheckpointMeta()))
        logits.append(session_of(path).run(["logits"], onnx_inputs(s))[0])
    expected = np.zeros(s.has.size)
    expected[s.has] = 0.75 * cosine_to(s.context, s.emb[s.has])
    assert (expected[s.has] == 0.0).sum() == 1
    np.testing.assert_allclose(logits[1] - logits[0], expected, rtol=1e-4, atol=1e-5)


def test_untrained_graph_ranks_by_the_hybrid(models):
    """A fresh model's graph ranks every candidate as 0.7·cosine(context, memory) +
    0.3·lexical does (`hybrid_scores`), and as cosine alone without signals."""
    _, path = models["untrained"]
    for case in ("mixed", "all_embedded", "superseded"):
        s = case_session(case)
        cos = np.zeros(s.has.size)
        cos[s.has] = cosine_to(s.context, s.emb[s.has])
        for signals in (s.signals, None):
            lexical = np.zeros(s.has.size) if signals is None else signals[:, 0]
            run = dataclasses.replace(s, signals=signals)
            scores = session_of(path).run(["scores"], onnx_inputs(run))[0]
            hybrid = hybrid_scores(cos, lexical)
            assert ranking(scores) == ranking(hybrid)
            z = np.exp(COSINE_WEIGHT_INIT / HYBRID_VECTOR_WEIGHT * hybrid)
            np.testing.assert_allclose(scores, z / z.sum(), rtol=1e-5)


def test_signal_weights_move_the_logits_by_the_signals(models, tmp_path):
    """The graph's signal term: candidate_signals · w_sig, on both paths."""
    params, _ = models["trained"]
    s = case_session("mixed")
    delta = np.linspace(-0.5, 1.5, contract.N_SIGNALS)
    moved = {**params, "signal_weights": params["signal_weights"] + delta}
    logits = []
    for name, weights in (("a", params), ("b", moved)):
        path = tmp_path / f"{name}.onnx"
        path.write_bytes(export.model_bytes(weights, CheckpointMeta()))
        logits.append(session_of(path).run(["logits"], onnx_inputs(s))[0])
    np.testing.assert_allclose(logits[1] - logits[0], s.signals @ delta, rtol=1e-4, atol=1e-5)


def test_reference_evaluator_agrees_with_onnxruntime(models):
    _, path = models["trained"]
    inputs = onnx_inputs(case_session("mixed"))
    ref = ReferenceEvaluator(str(path)).run(None, inputs)
    got = session_of(path).run(None, inputs)
    for a, b in zip(ref, got, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_graph_contract(models):
    _, path = models["trained"]
    assert path.stat().st_size <= MAX_MODEL_BYTES
    model = onnx.load(str(path))
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == contract.IR_VERSION == 8
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    assert all(n.domain == "" and onnx.defs.has(n.op_type, "") for n in model.graph.node)
    inputs = [i.name for i in model.graph.input]
    assert inputs == [*contract.GRAPH_INPUTS, *contract.OPTIONAL_GRAPH_INPUTS]
    assert [o.name for o in model.graph.output] == list(contract.GRAPH_OUTPUTS)
    assert all(i.doc_string for i in model.graph.input)
    dims = {
        i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
        for i in model.graph.input
    }
    assert dims["candidate_embeddings"] == ["n_candidates", DIM]
    assert dims["token_buckets"] == ["n_candidates", "n_tokens"]
    assert dims["candidate_features"] == ["n_candidates", 17]
    assert dims["candidate_signals"] == ["n_candidates", contract.N_SIGNALS]


def test_every_parameter_is_an_initializer_of_its_own_name(models):
    params, path = models["trained"]
    inits = {t.name: t for t in onnx.load(str(path)).graph.initializer}
    for name, shape in param_shapes().items():
        assert tuple(inits[name].dims) == shape
        np.testing.assert_array_equal(
            onnx.numpy_helper.to_array(inits[name]), params[name].astype(np.float32)
        )


def test_a_parameter_the_graph_does_not_use_fails_the_export(monkeypatch):
    shapes = param_shapes()
    monkeypatch.setattr(
        export, "param_shapes", lambda cfg: {**shapes, "new_bias": (DEFAULT_CONFIG.internal_dim,)}
    )
    params = {**init_params(), "new_bias": np.zeros(DEFAULT_CONFIG.internal_dim)}
    with pytest.raises(ExportError, match="does not use parameter.*new_bias"):
        build_model(params, CheckpointMeta())


def test_missing_or_misshapen_parameters_are_refused():
    params = init_params()
    del params["query_time"]
    with pytest.raises(ExportError, match="missing parameters \\['query_time'\\]"):
        build_model(params, CheckpointMeta())
    params = init_params()
    params["v_proj"] = params["v_proj"][:, :10]
    with pytest.raises(ExportError, match="'v_proj' has shape"):
        build_model(params, CheckpointMeta())


def test_metadata(models):
    params, path = models["trained"]
    meta = session_of(path).get_modelmeta().custom_metadata_map
    assert set(meta) == set(contract.META_KEYS)
    assert meta["feature_spec_hash"] == contract.FEATURE_SPEC_HASH
    assert meta["native_dim"] == str(DIM)
    assert meta["training_first_session"] == "2026-01-01T08:00:00Z"
    assert meta["training_last_session"] == "2026-02-01T08:00:00Z"
    assert meta["label_policy"] == "seed"
    assert meta["model_version"] == export.weights_digest(params)
    assert meta["trained_at"].endswith("Z")
    sgpt_meta = session_of(models["sgpt"][1]).get_modelmeta().custom_metadata_map
    assert sgpt_meta["feature_spec_hash"] == "unknown"
    assert sgpt_meta["label_policy"] == "signet-0.58"
    assert sgpt_meta["source_format"] == "sgpt"


def test_model_version_follows_the_weights():
    a, b = init_params(), init_params()
    assert export.weights_digest(a) == export.weights_digest(b)
    b["gate_proj"][0, 0] += 0.01
    assert export.weights_digest(a) != export.weights_digest(b)


def test_onnx_round_trips_to_checkpoints(models, tmp_path):
    params, path = models["trained"]
    back, meta = params_from_onnx(path)
    for name in param_shapes():
        np.testing.assert_array_equal(back[name], params[name].astype(np.float32))
    assert meta.feature_spec_hash == contract.FEATURE_SPEC_HASH
    own = convert_model(path, tmp_path / "again.sbm")
    np.testing.assert_array_equal(load_any(own)[0]["query_time"], back["query_time"])
    with pytest.raises(CheckpointError, match="SGPT has no place"):
        convert_model(path, tmp_path / "model.bin")


@pytest.mark.parametrize("name", ["cosine_weight", "signal_weights"])
def test_a_graph_without_one_of_our_weights_reads_it_as_zero(models, tmp_path, name):
    """A graph exported before the cosine or the signal term existed had no such initializer:
    its weights come back with the neutral value, the forward pass it computed."""
    params, path = models["trained"]
    model = onnx.load(str(path))
    kept = [t for t in model.graph.initializer if t.name != name]
    del model.graph.initializer[:]
    model.graph.initializer.extend(kept)
    old = tmp_path / "old.onnx"
    onnx.save(model, str(old))
    back, _ = params_from_onnx(old)
    assert not back[name].any() and back[name].shape == params[name].shape
    np.testing.assert_array_equal(back["q_proj"], params["q_proj"].astype(np.float32))


def test_sgpt_round_trip_through_the_command(models, tmp_path, capsys):
    params, _ = models["sgpt"]
    src = tmp_path / "in.bin"
    write_sgpt(src, params)
    assert main(["export", "--model", str(src), "--out", str(tmp_path / "m.onnx")]) == 0
    assert (
        main(["export", "--model", str(tmp_path / "m.onnx"), "--out", str(tmp_path / "b.bin")]) == 0
    )
    again = read_sgpt(tmp_path / "b.bin")[0]
    for name in SIGNET_PARAMS:
        np.testing.assert_array_equal(again[name], params[name].astype(np.float32))
    assert "wrote" in capsys.readouterr().out


def test_bad_inputs_name_the_file(tmp_path, capsys):
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"\x08\x01garbage")
    assert main(["export", "--model", str(junk), "--out", str(tmp_path / "x.sbm")]) == 2
    assert str(junk) in capsys.readouterr().err
    assert (
        main(["export", "--model", str(tmp_path / "none"), "--out", str(tmp_path / "x.onnx")]) == 2
    )
    assert "no such model file" in capsys.readouterr().err


def test_export_writes_the_prompt_hooks_model_beside_and_never_leaves_a_stale_one(tmp_path):
    """`signet-bench export` of a folder whose training chose a model for the prompts writes it
    beside the exported one (`model.prompt.onnx`), with its own weights; exported from a folder
    without one, a prompt model left beside the output is removed."""
    start, prompt = init_params(seed=1), trained_params(steps=5)
    src = tmp_path / "trained"
    src.mkdir()
    save_checkpoint(src / "model.sbm", start, CheckpointMeta())
    save_checkpoint(prompt_model_file(src / "model.sbm"), prompt, CheckpointMeta())
    out = tmp_path / "hook" / "model.onnx"
    out.parent.mkdir()
    assert main(["export", "--model", str(src), "--out", str(out)]) == 0
    own = prompt_model_file(out)
    assert own.name == "model.prompt.onnx" and own.is_file()
    for path, want in ((out, start), (own, prompt)):
        got, _ = params_from_onnx(path)
        for k, v in want.items():
            np.testing.assert_allclose(got[k], v, rtol=1e-6, atol=1e-7)
    prompt_model_file(src / "model.sbm").unlink()
    assert main(["export", "--model", str(src), "--out", str(out)]) == 0
    assert out.is_file() and not own.exists()
