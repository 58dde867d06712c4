"""The caller's side: scores through a real sidecar, fail-open on timeouts, errors and dead or
disabled sidecars, restarts after a crash, and Signet's disable/re-enable policy (3 crashes in an
hour disable the sidecar; it comes back 2 h after the last one)."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from signet_scorer import ScoreQuery, Scorer
from signet_scorer.client import SidecarClient, Supervision, sidecar_command
from tests.scorer.conftest import DIM, request

FAST = Supervision(restart_delay_s=0.05)


class Clock:
    """A clock the test moves by hand (the crash window and the re-enable delay)."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def kill(client: SidecarClient) -> None:
    os.kill(client.state()["pid"], signal.SIGKILL)


def test_scores_through_the_sidecar(golden_onnx):
    req = request(seed=21)
    with SidecarClient.for_model(golden_onnx, DIM) as client:
        assert client.state()["state"] == "running"
        got = client.score(ScoreQuery(**req), timeout_ms=10_000)
        assert got == Scorer.open(golden_onnx).score(ScoreQuery(**req)).scores
        assert client.status()["trained"] is True
        state = client.state()
        assert state["ok"] == 3 and state["fail_open"] == 0  # the start's status, score, status
    assert client.state()["state"] == "stopped"


def test_a_timeout_fails_open_and_the_late_answer_is_dropped(golden_onnx):
    req = request(seed=22)
    # a start may take longer than the default 5 s on a loaded host; this test is about a score
    # that times out, so the sidecar must be running first
    with SidecarClient.for_model(golden_onnx, DIM, timeouts_ms={"status": 60_000}) as client:
        assert client.state()["state"] == "running", client.state()
        pid = client.state()["pid"]
        # a stopped sidecar cannot answer, however fast the host: the score must time out
        os.kill(pid, signal.SIGSTOP)
        try:
            assert client.score(ScoreQuery(**req), timeout_ms=200) is None
        finally:
            os.kill(pid, signal.SIGCONT)
        state = client.state()
        # on failure, say what the sidecar did instead (its state and the end of its stderr)
        why = f"{state} {list(client.stderr_tail)[-5:]}"
        assert state["timeouts"] == 1 and state["fail_open"] == 1, why
        assert "no answer within 200 ms" in state["last_error"]
        # the late score answer arrives after the resume and does not confuse this one
        assert client.status() is not None
        # ok: the start's status and this one; the dropped score answer counts nowhere
        assert client.state()["ok"] == 2 and client.state()["errors"] == 0


def test_an_error_answer_fails_open(golden_onnx):
    with SidecarClient.for_model(golden_onnx, DIM) as client:
        assert client.score(ScoreQuery([0.0] * 3, ["a"]), timeout_ms=10_000) is None
        assert "-32000: query embedding dim mismatch" in client.state()["last_error"]
        assert client.score(ScoreQuery("x", ["a"]), timeout_ms=10_000) is None
        assert "-32602" in client.state()["last_error"]
        assert client.state()["errors"] == 2


def test_a_sidecar_that_never_answers_fails_open():
    silent = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    client = SidecarClient(silent, timeouts_ms={"status": 300})
    try:
        assert client.state()["state"] == "failed"
        assert client.score(ScoreQuery([0.0] * DIM, ["a"])) is None
        assert client.state()["fail_open"] == 1
    finally:
        client.close()


def test_a_sidecar_that_cannot_start_fails_open(tmp_path):
    client = SidecarClient([str(tmp_path / "no-such-binary")])
    assert client.state()["state"] == "failed"
    assert "cannot start" in client.state()["last_error"]
    assert client.status() is None


def test_a_crash_is_followed_by_a_restart(golden_onnx):
    req = request(seed=23)
    with SidecarClient.for_model(golden_onnx, DIM, supervision=FAST) as client:
        first_pid = client.state()["pid"]
        kill(client)
        assert client.wait_for(lambda s: s["crashes"] == 1 and s["state"] == "running", 30)
        state = client.state()
        assert state["restarts"] == 1 and state["pid"] != first_pid
        assert (
            client.score(
                ScoreQuery(
                    req["context_embedding"],
                    req["candidate_ids"],
                    req["candidate_embeddings"],
                    req["candidate_texts"],
                ),
                timeout_ms=10_000,
            )
            is not None
        )


def test_three_crashes_in_an_hour_disable_it_until_two_hours_after_the_last(golden_onnx):
    clock = Clock()
    with SidecarClient.for_model(golden_onnx, DIM, clock=clock, supervision=FAST) as client:
        for n in (1, 2):
            kill(client)
            assert client.wait_for(lambda s, n=n: s["crashes"] == n and s["state"] == "running", 30)
            clock.now += 600  # ten minutes between crashes: all inside the hour
        kill(client)
        assert client.wait_for(lambda s: s["state"] == "disabled", 30)
        assert client.status() is None and client.state()["pid"] is None
        assert client.state()["reenabled_in_s"] == pytest.approx(7_200)
        clock.now += 7_199
        assert client.status() is None  # still disabled
        clock.now += 1
        assert client.status() is not None  # re-enabled and restarted on the next call
        assert client.state()["state"] == "running"


def test_crashes_spread_over_more_than_an_hour_do_not_disable(golden_onnx):
    clock = Clock()
    with SidecarClient.for_model(golden_onnx, DIM, clock=clock, supervision=FAST) as client:
        for n in (1, 2, 3):
            kill(client)
            assert client.wait_for(lambda s, n=n: s["crashes"] == n and s["state"] == "running", 30)
            clock.now += 1_900  # the first crash leaves the window before the third
        assert client.state()["crashes_in_window"] == 2


def test_the_command_is_the_sidecars():
    cmd = sidecar_command("/m/model.bin", 768, python="py", args=["--threads", "2"])
    assert cmd == [
        "py",
        "-m",
        "signet_scorer",
        "--model",
        "/m/model.bin",
        "--native-dim",
        "768",
        "--threads",
        "2",
    ]
