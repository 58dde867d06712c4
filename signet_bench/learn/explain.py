"""What a training run did, in words a user can act on (`signet-bench train`), and as the
figures of Signet's `train_from_db` result (what the sidecar reads back).

Two lines lead: which model is served now and why, and what the store's sessions were used
for. Every figure keeps its meaning: NDCG@10 means against the sessions' judged relevance
(`holdout.judged_relevance`), "held-out" means sessions the judged model never trained on,
and a lead's evidence is in standard errors of the paired per-session lead over the strongest
free ranker (`holdout.lead_evidence`).
"""

from __future__ import annotations

import math
from typing import Any

from signet_bench.config import PredictorConfig
from signet_bench.learn.holdout import HoldoutDecision
from signet_bench.learn.publish import StoreTraining
from signet_bench.learn.train import TrainResult
from signet_scorer.request import TrainingRequest
from signet_scorer.workbench import CHECKPOINT_FILE

__all__ = ["RANKERS", "run_summary", "served_line", "sessions_line", "sidecar_fields"]

# The rankers a verdict names, as a user knows them.
RANKERS = {
    "cosine": "plain cosine similarity",
    "hybrid": "Signet's hybrid ranking (cosine plus keyword match)",
    "served": "the model served before",
    "start": "the untrained start",
}


def _ranker(name: str | None) -> str:
    return RANKERS.get(name or "", name or "a learned model")


def _verdict(d: HoldoutDecision) -> str:
    """The held-out figures of a verdict: the candidate against its bar, and the evidence."""
    text = (
        f"{d.candidate:.3f} vs {d.bar:.3f} NDCG@10 on {d.sessions} held-out sessions, "
        f"{d.candidate - d.bar:+.3f}"
    )
    if d.evidence_needed > 0:
        shown = "no" if math.isnan(d.lead_evidence) else f"{d.lead_evidence:.1f}"
        text += f"; a lead of {shown} standard errors, {d.evidence_needed:g} needed"
    return text


def _rejection(r: TrainResult, cfg: PredictorConfig) -> str:
    """Why the gates refused the model trained now (a predicate: "the model trained now ...")."""
    d = r.holdout
    reasons = {
        "finite_losses": "ended with an infinite or NaN loss or weight",
        "canary_variance": "gives every candidate the same score",
        "canary_topk_overlap": (
            f"changed the canary sessions' top 5 too much (overlap {r.canary_topk_overlap}, "
            f"at least {cfg.canary_min_topk_overlap:g} unless NDCG@10 gains "
            f"{cfg.canary_churn_gain:g})"
        ),
        "canary_ndcg_drop": (
            f"moved the canary NDCG@10 by {r.canary_ndcg_delta or 0.0:+.3f} "
            f"(a drop of at most {cfg.canary_max_ndcg_drop:g} is allowed)"
        ),
    }
    if r.gate_reason == "holdout" and d is not None:
        return f"did not beat {_ranker(d.comparator)} convincingly ({_verdict(d)})"
    return reasons.get(r.gate_reason, f"the {r.gate_reason} gate failed")


def served_line(run: StoreTraining, request: TrainingRequest, cfg: PredictorConfig) -> str:
    """`served: WHAT (where), because WHY` for the run's outcome."""
    r, saved = run.result, run.published.model_path
    if not r.accepted:
        assert request.out_dir is not None
        there = (request.out_dir / CHECKPOINT_FILE).is_file()
        kept = "the model already there stays served" if there else "no model is saved"
        return f"served: unchanged, {kept}: the model trained now {_rejection(r, cfg)}"
    where = f" ({saved})"
    if r.serving is not None:  # the held-out choice between the shipped base and this model
        what = {"per-user": "the model trained now", "base": "the shipped base"}.get(
            r.serving.served, "a free ranker"
        )
        return f"served: {what}{where}. {r.serving.sentence()}"
    return (
        f"served: the model trained now{where}, because it passed Signet's canary checks "
        f"on {r.canary_count} sessions (finite, scores that vary, a stable top 5)"
    )


def sessions_line(run: StoreTraining, request: TrainingRequest) -> str:
    """`sessions: ...`: how many could be trained on, and what each share was used for."""
    r, d, n = run.result, run.result.holdout, run.sessions
    text = (
        f"sessions: {n} trainable, {run.skipped} skipped (judged less sure than "
        f"{request.min_confidence:g}, or no labelled memory)"
    )
    if r.serving is not None and r.serving.reason == "no-sessions":
        return f"{text}; none to train on: the shipped base is put in place"
    if d is not None and d.method == "time":
        return (
            f"{text}; trained on the {r.sample_count} older, and judged on the {d.sessions} "
            "newest, held out (never trained on)"
        )
    if d is not None:
        return (
            f"{text}; judged on the {d.sessions} newest, each by a model trained only on the "
            f"sessions before it; the model kept then trained on all {r.sample_count}"
        )
    if request.mode == "incremental":
        return (
            f"{text}; trained on {r.sample_count} sessions newer than the given model (with "
            f"a replay sample of older ones), checked on {r.canary_count} canary sessions"
        )
    if r.sample_count + r.canary_count > n:  # too few to set any aside
        return f"{text}; trained on all {r.sample_count} and checked on the same sessions"
    return (
        f"{text}; trained on {r.sample_count}, checked on the other {r.canary_count} "
        "(the most confidently judged)"
    )


def _figures(r: TrainResult) -> str:
    """The run's NDCG@10 figures: held out (what is served, each free ranker, the model
    served before) or on the canary."""
    d = r.holdout
    if d is None:
        return (
            f"canary: ndcg@10 {r.canary_ndcg:.4f}, score variance "
            f"{r.canary_score_variance:.3g}, top-5 overlap {r.canary_topk_overlap}"
        )
    rivals = ", ".join(f"{k} {v:.4f}" for k, v in sorted(d.heuristics.items()))
    before = "" if d.served is None else f", model served before {d.served:.4f}"
    return (
        f"held-out ndcg@10: model trained now {d.candidate:.4f}, {rivals}{before}; best "
        f"epoch {r.best_epoch} (0: the start)"
    )


def run_summary(run: StoreTraining, request: TrainingRequest, cfg: PredictorConfig) -> str:
    """What `train` prints: the two leading lines, then the figures behind them."""
    r, saved = run.result, run.published
    curve = ", ".join(f"{x:.4f}" for x in r.loss_curve) or "none"
    stopped = f", stopped: {r.stopped_early}" if r.stopped_early else ""
    lines = [
        served_line(run, request, cfg),
        *([] if r.prompt_serving is None else [f"at prompts: {r.prompt_serving.sentence()}"]),
        sessions_line(run, request),
        (
            f"training: {r.epochs_run} epochs ({r.steps} steps, {r.duration_ms} ms{stopped}); "
            f"loss per epoch: {curve}"
        ),
        _figures(r),
    ]
    if r.accepted and request.checkpoint_path is not None:
        lines.append(
            f"checkpoint: saved {saved.checkpoint}"
            if saved.checkpoint is not None
            else f"checkpoint: not saved: {saved.checkpoint_error}"
        )
    return "\n".join(lines)


def sidecar_fields(run: StoreTraining) -> dict[str, Any]:
    """Signet's `train_from_db` result fields of the run (`samples_used`: the sessions the
    model trained on; nulls for what the run has not), and its gate reason."""
    r, saved = run.result, run.published
    loss = r.loss_curve[-1] if r.loss_curve and math.isfinite(r.loss_curve[-1]) else None
    overlap = r.canary_topk_overlap
    fields: dict[str, Any] = {
        "loss": loss,
        "step": r.steps,
        "samples_used": r.sample_count,
        "samples_skipped": run.skipped,
        "duration_ms": r.duration_ms,
        "canary_score_variance": (
            r.canary_score_variance if math.isfinite(r.canary_score_variance) else None
        ),
        "canary_topk_stability": overlap
        if overlap is not None and math.isfinite(overlap)
        else None,
        "gate_reason": r.gate_reason,
        "checkpoint_saved": saved.checkpoint is not None,
    }
    if saved.checkpoint is not None:
        fields["checkpoint_path"] = str(saved.checkpoint)
    elif saved.checkpoint_error is not None:
        fields["checkpoint_error"] = saved.checkpoint_error
    return fields
