"""`train`'s two leading lines: which model is served and why, and what the sessions were used
for, with the figures of the run (not a restatement of its gate flags); and the figures the
sidecar reads back."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.learn.explain import served_line, sessions_line, sidecar_fields
from signet_bench.learn.holdout import HoldoutDecision
from signet_bench.learn.publish import Published, StoreTraining
from signet_bench.learn.serving import Gain, ServingChoice
from signet_bench.learn.train import TrainResult
from signet_scorer.request import TrainingRequest


def _result(holdout: HoldoutDecision | None, **changes) -> TrainResult:
    return dataclasses.replace(BASE, holdout=holdout, **changes)


BASE = TrainResult(
    accepted=True,
    gate_reason="passed",
    params=None,
    loss_curve=(0.9, 0.8),
    sample_count=40,
    canary_count=10,
    epochs_run=2,
    steps=6,
    duration_ms=100,
    canary_ndcg=0.6,
    canary_ndcg_before=None,
    canary_ndcg_delta=None,
    canary_score_variance=0.01,
    canary_topk_overlap=None,
    best_epoch=2,
)


def _run(result: TrainResult, sessions: int, tmp_path: Path) -> StoreTraining:
    saved = tmp_path / "model.sbm" if result.accepted else None
    return StoreTraining("run", 3, Published(result, saved), sessions)


def _request(tmp_path: Path, mode: str = "finetune") -> TrainingRequest:
    return TrainingRequest(db_path=tmp_path / "m.db", out_dir=tmp_path, mode=mode)  # type: ignore[arg-type]


TIME = HoldoutDecision(
    method="time",
    sessions=12,
    candidate=0.64,
    served=None,
    heuristics={"cosine": 0.60, "hybrid": 0.55},
    comparator="cosine",
    bar=0.60,
    accepted=True,
    lead_evidence=2.1,
    evidence_needed=1.5,
)


def test_a_time_hold_out_is_apart_from_the_training_sessions(tmp_path):
    run = _run(_result(TIME, sample_count=48), 60, tmp_path)
    line = sessions_line(run, _request(tmp_path))
    assert line.startswith("sessions: 60 trainable, 3 skipped (judged less sure than 0.6")
    assert line.endswith(
        "trained on the 48 older, and judged on the 12 newest, held out (never trained on)"
    )
    choice = ServingChoice(
        "per-user", "shown-better", 12, Gain("base", 0.05, 0.01), Gain("cosine", 0.04, 0.002)
    )
    chosen = _run(_result(TIME, sample_count=48, serving=choice), 60, tmp_path)
    assert served_line(chosen, _request(tmp_path), DEFAULT_CONFIG) == (
        f"served: the model trained now ({tmp_path / 'model.sbm'}). This user's own model "
        "serves: on 12 held-out sessions it leads the base by +0.050 NDCG@10 (95% lower bound "
        "+0.010) and cosine by +0.040 (lower bound +0.002)."
    )


def test_canary_sessions_that_are_also_trained_on_are_said_to_be(tmp_path):
    """Too few sessions to set a canary aside: Signet's rule checks on the training sessions."""
    overlapping = _run(_result(None, sample_count=30, canary_count=30), 30, tmp_path)
    assert sessions_line(overlapping, _request(tmp_path)).endswith(
        "trained on all 30 and checked on the same sessions"
    )
    apart = _run(_result(None, sample_count=40, canary_count=25), 65, tmp_path)
    assert sessions_line(apart, _request(tmp_path)).endswith(
        "trained on 40, checked on the other 25 (the most confidently judged)"
    )


def test_a_rejected_run_says_what_stays_served(tmp_path):
    rejected = dataclasses.replace(TIME, accepted=False, candidate=0.58)
    run = _run(_result(rejected, accepted=False, gate_reason="holdout"), 60, tmp_path)
    assert served_line(run, _request(tmp_path), DEFAULT_CONFIG) == (
        "served: unchanged, no model is saved: the model trained now did not beat plain cosine "
        "similarity convincingly (0.580 vs 0.600 NDCG@10 on 12 held-out sessions, -0.020; a "
        "lead of 2.1 standard errors, 1.5 needed)"
    )
    (tmp_path / "model.sbm").write_bytes(b"an earlier model")
    assert "the model already there stays served" in served_line(
        run, _request(tmp_path), DEFAULT_CONFIG
    )


def test_samples_used_counts_the_sessions_trained_on_once(tmp_path):
    """Forward folds judge sessions the kept model also trained on: Signet's `samples_used`
    is the sessions trained on, not their sum with the judged ones."""
    forward = dataclasses.replace(TIME, method="forward", sessions=24)
    fields = sidecar_fields(_run(_result(forward, sample_count=31), 31, tmp_path))
    assert fields["samples_used"] == 31 and fields["samples_skipped"] == 3
    assert fields["gate_reason"] == "passed" and fields["loss"] == 0.8
