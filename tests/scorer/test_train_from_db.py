"""`train_from_db` through the real sidecar: the trainer and the exporter run as child processes
on the store, the trained model is swapped in atomically and kept on disk, scores keep coming
from the old model meanwhile, and a rejected, killed or crashed run leaves the served model
untouched. The trainer is the sidecar's own child, below its priority, with one BLAS thread."""

from __future__ import annotations

import hashlib
import os
import signal
import time
from pathlib import Path

import pytest

from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.world.synth.build import build_persona_store
from signet_scorer import ScoreQuery, Scorer
from signet_scorer.library import CHILD_NICE, CHILD_THREADS
from tests.scorer.conftest import DIM, request, scores_of


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    """A small synthetic store with 40 scored sessions."""
    path = tmp_path_factory.mktemp("store") / "memories.db"
    build_persona_store("light", path, seed=0, n_memories=150)
    simulate(path, 40, SimOptions(scorer="random", seed=0))
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def start(sidecar, path: Path, *extra: str):
    return sidecar("--model", str(path), "--native-dim", str(DIM), "--tz", "UTC", *extra)


RESULT_KEYS = {
    "accepted",
    "model_version",
    "loss",
    "step",
    "samples_used",
    "samples_skipped",
    "duration_ms",
    "canary_score_variance",
    "canary_topk_stability",
    "gate_reason",
    "checkpoint_saved",
}
WAIT_S = 120.0  # a guard against a hung child, not a measurement


def trainer_pid(s) -> int:
    """The pid of the running trainer, from the status answers (it appears once it runs)."""
    while True:
        training = s.call("status")["result"]["training"]
        assert training is not None, "the training ended before its trainer was seen"
        if training["pid"] is not None:
            return training["pid"]


def wait_for(s, ready, what: str) -> None:
    """Ask the sidecar for its status until `ready()` holds (each answer paces the next look)."""
    deadline = time.monotonic() + WAIT_S
    while not ready():
        assert time.monotonic() < deadline, f"{what}: not seen within {WAIT_S:.0f} s"
        assert s.call("status")["result"]["training"] is not None, f"ended before {what}"


def stat_fields(path: Path) -> list[str]:
    """The fields of a /proc stat file after the command name (index 1 is the parent's pid,
    16 the niceness)."""
    return path.read_text().rsplit(")", 1)[1].split()


def thread_nices(pid: int) -> set[int]:
    """The niceness of every thread of `pid` (a thread that ends while read is skipped)."""
    nices = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            nices.add(int(stat_fields(task / "stat")[16]))
        except FileNotFoundError:
            continue
    return nices


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(x.decode().split("=", 1) for x in raw if b"=" in x)


@pytest.fixture
def canary_judge(tmp_path) -> Path:
    """The specification's canary gates, so a run trains for the epochs it is given (the held-out
    judge may choose the start, which has no loss to report)."""
    path = tmp_path / "canary.yaml"
    path.write_text("predictor:\n  trainingJudge: canary\n")
    return path


def test_a_training_is_swapped_in_and_kept(sidecar, store, canary_judge, tmp_path):
    served = tmp_path / "model.onnx"  # does not exist yet: the server starts untrained
    s = start(sidecar, served, "--train-config", str(canary_judge))
    assert s.call("status")["result"]["trained"] is False
    ckpt = tmp_path / "kept.sbm"
    train = s.call("train_from_db", {"db_path": str(store), "checkpoint_path": str(ckpt)})
    result = train["result"]
    assert result["accepted"] is True and result["checkpoint_saved"] is True
    assert set(result) == RESULT_KEYS | {"checkpoint_path"}
    for key in ("loss", "step", "samples_used", "samples_skipped", "duration_ms"):
        assert result[key] is not None, key
    assert result["model_version"] == 2
    status = s.call("status")["result"]
    assert status["trained"] is True and status["model_version"] == 2
    assert status["training_pairs"] == result["samples_used"]
    assert status["last_trained"] is not None
    assert served.is_file() and ckpt.is_file()
    req = request(seed=1)
    assert scores_of(s.call("score", req)) == Scorer.open(served).score(ScoreQuery(**req)).scores
    s.close()
    again = start(sidecar, served)  # a restart serves the trained model: `trained` stays true
    assert again.call("status")["result"]["model_id"] == status["model_id"]


def test_scores_are_answered_from_the_old_model_while_a_training_runs(
    sidecar, store, golden_onnx, tmp_path
):
    served = tmp_path / "model.onnx"
    served.write_bytes(golden_onnx.read_bytes())
    s = start(sidecar, served)
    train_id = s.send("train_from_db", {"db_path": str(store), "epochs": 2})
    score_ids = [s.send("score", request(seed=i)) for i in range(5)]
    answers = [s.recv() for _ in range(6)]
    assert [a["id"] for a in answers[:5]] == score_ids  # the scores did not wait
    assert answers[5]["id"] == train_id
    old = Scorer.open(golden_onnx)
    for i, a in enumerate(answers[:5]):
        assert scores_of(a) == old.score(ScoreQuery(**request(seed=i))).scores


def test_a_gate_rejection_leaves_the_served_model_byte_identical(
    sidecar, store, golden_onnx, tmp_path
):
    served = tmp_path / "model.onnx"
    served.write_bytes(golden_onnx.read_bytes())
    before = digest(served)
    config = tmp_path / "agent.yaml"
    config.write_text("predictor:\n  learningRate: 1.0e+30\n")  # diverges: finite-loss gate
    s = start(sidecar, served, "--train-config", str(config))
    req = request(seed=2)
    scores = scores_of(s.call("score", req))
    result = s.call("train_from_db", {"db_path": str(store), "epochs": 1})["result"]
    assert result["accepted"] is False and result["gate_reason"] == "finite_losses"
    assert digest(served) == before
    status = s.call("status")["result"]
    assert status["model_version"] == 1 and status["training_pairs"] == 0
    assert scores_of(s.call("score", req)) == scores


def test_a_killed_trainer_leaves_the_served_model_byte_identical(
    sidecar, store, golden_onnx, tmp_path
):
    served = tmp_path / "model.onnx"
    served.write_bytes(golden_onnx.read_bytes())
    before = digest(served)
    s = start(sidecar, served)
    req = request(seed=3)
    scores = scores_of(s.call("score", req))
    train_id = s.send("train_from_db", {"db_path": str(store), "epochs": 10_000})
    pid = trainer_pid(s)
    busy = s.call("train_from_db", {"db_path": str(store)})["error"]
    assert busy["code"] == -32000 and "in progress" in busy["message"]
    os.kill(pid, signal.SIGKILL)
    resp = s.recv()
    assert resp["id"] == train_id
    assert resp["error"]["code"] == -32000 and "killed by signal 9" in resp["error"]["message"]
    assert digest(served) == before
    assert scores_of(s.call("score", req)) == scores
    assert s.call("status")["result"]["training"] is None


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads /proc (Linux)")
def test_the_trainer_runs_apart_below_the_server_and_its_crash_is_a_training_error(
    sidecar, store, golden_onnx, tmp_path
):
    served = tmp_path / "model.onnx"
    served.write_bytes(golden_onnx.read_bytes())
    s = start(sidecar, served)
    req = request(seed=4)
    scores = scores_of(s.call("score", req))
    train_id = s.send("train_from_db", {"db_path": str(store), "epochs": 10_000})
    pid = trainer_pid(s)
    maps = Path(f"/proc/{pid}/maps")
    wait_for(s, lambda: "_multiarray_umath" in maps.read_text(), "the trainer loading numpy")
    # a process of its own, started by the sidecar, whose every thread runs below the server
    assert pid != s.proc.pid and int(stat_fields(Path(f"/proc/{pid}/stat"))[1]) == s.proc.pid
    server = os.getpriority(os.PRIO_PROCESS, s.proc.pid)
    lower = min(19, server + CHILD_NICE)
    assert os.getpriority(os.PRIO_PROCESS, pid) == lower and (server == 19 or lower > server)
    assert thread_nices(pid) == {lower}
    assert {k: environ(pid).get(k) for k in CHILD_THREADS} == CHILD_THREADS
    assert all(environ(s.proc.pid).get(k) != "1" for k in CHILD_THREADS if k not in os.environ)
    assert scores_of(s.call("score", req)) == scores  # answered while it trains
    os.kill(pid, signal.SIGSEGV)  # a crash mid-training
    resp = s.recv()
    assert resp["id"] == train_id and "result" not in resp
    assert resp["error"]["code"] == -32000
    assert resp["error"]["message"] == "the trainer was killed by signal 11"
    assert s.proc.poll() is None and scores_of(s.call("score", req)) == scores
    status = s.call("status")["result"]
    assert status["training"] is None and status["model_version"] == 1
    assert "the trainer was killed by signal 11" in status["last_error"]


def test_bad_train_parameters_name_the_field(sidecar, golden_onnx, store, tmp_path):
    s = start(sidecar, golden_onnx)
    for params, field in [
        ({}, "db_path"),
        ({"db_path": str(store), "epochs": "3"}, "epochs"),
        ({"db_path": str(store), "limit": 0}, "limit"),
        (
            {"db_path": str(store), "checkpoint_path": str(tmp_path / "no" / "m.bin")},
            "checkpoint_path",
        ),
        ({"db_path": str(store), "min_confidence": 1.5}, "min_confidence"),
        ({"db_path": str(store), "mode": "sideways"}, "mode"),
        ({"db_path": str(store), "tz": "Mars/Olympus_Mons"}, "tz"),
        ({"db_path": str(store), "out_dir": str(tmp_path)}, "out_dir"),
        ({"db_path": str(store), "base_weights": str(golden_onnx)}, "base_weights"),
    ]:
        err = s.call("train_from_db", params)["error"]
        assert err["code"] == -32602 and err["message"].startswith(field + ":"), err
    # what Signet's `train_from_db` refuses (-32000): a temperature not above 0, before
    # anything else, and a store its loader cannot open
    for params, message in [
        ({"db_path": str(store), "temperature": 0}, "temperature must be > 0"),
        ({"db_path": str(tmp_path / "none.db"), "temperature": -1}, "temperature must be > 0"),
        ({"db_path": str(tmp_path / "none.db")}, "data load error: db_path: "),
    ]:
        err = s.call("train_from_db", params)["error"]
        assert err["code"] == -32000 and err["message"].startswith(message), err


def test_signets_model_bin_is_kept_beside_the_trained_model(sidecar, store, tmp_path):
    bin_path = tmp_path / "model.bin"  # Signet's default name; no model yet
    s = sidecar("--native-dim", str(DIM), "--checkpoint", str(bin_path), "--tz", "UTC")
    result = s.call("train_from_db", {"db_path": str(store), "checkpoint_path": str(bin_path)})
    result = result["result"]
    assert result["accepted"] is True
    # the trained model uses the layer-norm and query terms SGPT cannot hold: kept as ONNX
    assert result["checkpoint_saved"] is False and "SGPT" in result["checkpoint_error"]
    assert not bin_path.exists() and (tmp_path / "model.onnx").is_file()
    model_id = s.call("status")["result"]["model_id"]
    s.close()
    again = sidecar("--native-dim", str(DIM), "--checkpoint", str(bin_path))
    status = again.call("status")["result"]
    assert status["trained"] is True and status["model_id"] == model_id
    assert status["model_path"] == str(tmp_path / "model.onnx")


def test_temperature_and_min_confidence_reach_the_trainer(sidecar, store, canary_judge, tmp_path):
    """Signet's `temperature` and `min_confidence` change the run the sidecar's trainer makes:
    each request trains fresh weights (a sidecar without a model) on the same store with the
    same seed, so only the changed field can make the results differ."""

    def train(name: str, **change) -> dict:
        (tmp_path / name).mkdir()
        s = start(sidecar, tmp_path / name / "model.onnx", "--train-config", str(canary_judge))
        # the canary judge keeps every epoch it is given, so two report a loss (the held-out
        # judge may keep the start, which has none); the sessions used do not depend on them
        params = {"db_path": str(store), "epochs": 2, "seed": 3, **change}
        return s.call("train_from_db", params)["result"]

    base = train("base")
    hot = train("hot", temperature=2.0)
    sure = train("sure", min_confidence=0.8)
    for run in (base, hot, sure):
        assert run["accepted"] is True, run
    # the loss temperature: the same sessions, another loss
    assert (hot["samples_used"], hot["samples_skipped"]) == (
        base["samples_used"],
        base["samples_skipped"],
    )
    assert hot["loss"] != pytest.approx(base["loss"], rel=1e-3)
    # the confidence threshold: sessions the judge was less sure of are skipped
    assert sure["samples_skipped"] > base["samples_skipped"]
    assert sure["samples_used"] < base["samples_used"]
