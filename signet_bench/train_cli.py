"""`signet-bench train`: train on a store's scored sessions, gate, save, record the run.

The store is only read; the model goes to `OUT/model.sbm` and the run to `OUT/workbench.duckdb`.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

from signet_bench.errors import UserError
from signet_bench.timestamps import format_iso

__all__ = ["train_command"]


def train_command(args: argparse.Namespace) -> int:
    """Run one gated training on `args.db` and report; exit 1 when a gate rejects the model."""
    from signet_bench.cli import _config, _local_tz
    from signet_bench.features import FEATURE_SPEC
    from signet_bench.model.checkpoint import CheckpointMeta, load_any, save_checkpoint
    from signet_bench.model.params import feature_spec_hash
    from signet_bench.samples import load_samples
    from signet_bench.store.workbench import open_workbench, record_model, record_training_run
    from signet_bench.train import run_record, train_model

    cfg = _config(args)
    tz = args.tz or _local_tz()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    samples, skipped = load_samples(args.db, tz=tz, cfg=cfg, limit=args.limit, seed=args.seed)
    if len(samples) < 2:
        raise UserError(
            f"{args.db}: {len(samples)} trainable sessions (confidence >= "
            f"{cfg.min_scorer_confidence}, candidates with labels); {skipped} skipped — "
            "need at least 2"
        )
    base = None
    base_meta = None
    if args.base_weights:
        base, base_meta = load_any(args.base_weights)
        dim = int(samples[0].context.shape[0])
        if base_meta.native_dim != dim:
            raise UserError(
                f"{args.base_weights}: native_dim {base_meta.native_dim} does not match the "
                f"store's embeddings ({dim})"
            )
    started = datetime.now(UTC)
    result = train_model(
        samples,
        base,
        cfg=cfg,
        epochs=args.epochs,
        seed=args.seed,
        previous_is_trained=base is not None,
        progress=sys.stderr.isatty(),
    )
    model_path = out / "model.sbm"
    if result.accepted:
        meta = CheckpointMeta.from_config(
            cfg,
            int(samples[0].context.shape[0]),
            feature_spec_hash=feature_spec_hash(FEATURE_SPEC),
            first_session_at=format_iso(samples[0].start),
            last_session_at=format_iso(samples[-1].start),
            metrics={
                "canary_ndcg": result.canary_ndcg,
                "final_loss": result.loss_curve[-1],
            },
            is_finetuned=base is not None,
        )
        save_checkpoint(model_path, result.params, meta)
    run_id = str(uuid.uuid4())
    with open_workbench(out / "workbench.duckdb") as wb:
        record_training_run(
            wb,
            run_record(
                result,
                run_id=run_id,
                store_path=str(Path(args.db).resolve()),
                started_at=started,
                model_path=str(model_path),
            ),
        )
        if result.accepted:
            record_model(
                wb,
                {
                    "model_id": run_id,
                    "path": str(model_path),
                    "created_at": datetime.now(UTC),
                    "feature_spec_hash": feature_spec_hash(FEATURE_SPEC),
                    "is_pretrained_base": False,
                    "is_finetuned": base is not None,
                    "metrics": json.dumps({"canary_ndcg": result.canary_ndcg}),
                },
            )
    curve = ", ".join(f"{x:.4f}" for x in result.loss_curve)
    print(
        f"samples: {result.sample_count} train + {result.canary_count} canary "
        f"({skipped} sessions skipped)\n"
        f"epochs: {result.epochs_run} ({result.steps} steps, {result.duration_ms} ms"
        f"{', stopped: ' + result.stopped_early if result.stopped_early else ''})\n"
        f"loss per epoch: {curve}\n"
        f"canary: ndcg@10 {result.canary_ndcg:.4f}, score variance "
        f"{result.canary_score_variance:.3g}, top-5 overlap {result.canary_topk_overlap}\n"
        f"gates: {result.gates} -> {'accepted' if result.accepted else 'REJECTED: '}"
        f"{'' if result.accepted else result.gate_reason}\n"
        + (f"model: {model_path}" if result.accepted else "model: previous model kept")
    )
    return 0 if result.accepted else 1
