"""`signet-bench bench train`: how long one gated training takes and how much memory it needs.

The training set is synthetic and built in memory with the shapes of a real one
(docs/specification.md §4.3): 500 sessions (100 with --quick) of ~80 candidates (normal, sd 10,
clipped to 40..100), 768-d float32 unit embeddings clustered by topic, ~3% text-path candidates (no
embedding, ~25 hash tokens), the 17 features with session-level time columns, 4 projects, and labels
with the spread of real ones (injected 0.2..1 on topical candidates, FTS-missed 0.6, missing-context
0.7, soft negatives 0.25, sampled negatives 0, superseded -0.3). `train_model` then runs once
for 50 epochs (10 with --quick), batch 16, with a time cap of 120 s so that the whole run is
measured even when it is slower than the specification's 30 s cap.

Everything runs in a fresh child process (`python -m signet_bench.bench.train_speed --child`), so the
peak resident set size (`resource.getrusage(RUSAGE_SELF).ru_maxrss`, the kernel's high-water
mark of the process) is that of this training alone: interpreter + numpy + the samples +
training. BLAS settings follow the environment: `signet-bench` leaves the thread count to
OpenBLAS (every core) for this bench (`signet_bench.learn.blas`); the run prints the thread count
and any OPENBLAS_CORETYPE in effect.

Rows (stable names; `<S>` = sessions, `<E>` = epochs, e.g. `train_500x80x768_50ep`):
  train_<S>x80x768_<E>ep  wall          s      one full train_model run (goal <= 10 s, cap 30 s)
                          steps_per_s   1/s    optimizer steps per second
                          sessions_per_s 1/s   session passes (replay included) per second
                          peak_rss      MiB    ru_maxrss of the child (goal <= 500 MB)
                          data_rss      MiB    ru_maxrss before training (interpreter + samples)
                          final_loss    kl     mean listwise loss of the last epoch (sanity)
  train_step_16x80x768    p50 / p95     ms     one loss_and_grads + Adam step on a batch of 16
                                               sessions (3 warm-up steps, 30 timed)
  scheduled_training      wall_s, peak_mb, epochs, heldout_ndcg@10, cosine_ndcg@10, ...: one
                          scheduled training per size of a heavy user's history (n = its
                          sessions; `bench.train_history`); --no-history leaves them out
                          ratio_to_reference  x  its wall_s over this run's train_<S>x80x768_<E>ep
                          wall (goal <= 2 for the full reference)
"""

from __future__ import annotations

import json
import logging
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

import numpy as np

from signet_bench.analysis.report import Row, percentiles
from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.learn.samples import SessionSample
from signet_scorer.features import CandidateInfo, SessionInfo, candidate_features
from signet_scorer.tokenize import project_slot

_log = logging.getLogger(__name__)

__all__ = ["reference_ratios", "synthetic_samples", "train_rows"]

BENCH = "train"
FULL = (500, 50)
QUICK = (100, 10)
MEAN_CANDIDATES = 80
TEXT_SHARE = 0.03
TIME_CAP_S = 120.0
STEP_BATCH = 16
STEP_WARMUP, STEP_REPEATS = 3, 30
_PROJECTS = ("signetai", "ooide", "ledgerly", "homelab")
_TOPICS = 24


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _pool(
    rng: np.random.Generator, centers: np.ndarray, topic: int, n: int, text_share: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """A session's candidates and context: (candidate topics, unit embeddings with zero rows on
    the text path, has-embedding flags, context); a third of the pool is on the session's
    topic, the rest from any topic."""
    dim = centers.shape[1]
    cand_topic = np.where(rng.random(n) < 0.33, topic, rng.integers(_TOPICS, size=n))
    emb = _unit(centers[cand_topic] + 0.9 * rng.normal(size=(n, dim)) / np.sqrt(dim) * 8)
    has = rng.random(n) >= text_share
    emb[~has] = 0.0
    context = _unit(centers[topic] + 0.5 * rng.normal(size=dim) / np.sqrt(dim) * 8)
    return cand_topic, emb, has, context


def _labels(
    rng: np.random.Generator, cand_topic: np.ndarray, topic: int, topic_project: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(labels, superseded flags) with the spread of real labels (see the module docstring):
    the most relevant quarter injected, then soft negatives, FTS-missed, missing-context."""
    n = cand_topic.size
    same_topic = cand_topic == topic
    same_proj = topic_project[cand_topic] == topic_project[topic]
    rel = 0.8 * same_topic + 0.15 * same_proj + rng.normal(0, 0.15, n)
    labels = np.zeros(n)
    order = np.argsort(-rel)
    inj = order[: max(2, n // 4)]
    labels[inj] = np.clip(rel[inj], 0.2, 1.0)
    kind = rng.random(n)
    rest = np.ones(n, bool)
    rest[inj] = False
    labels[rest & (kind < 0.10) & same_topic] = 0.25
    labels[rest & (kind > 0.96)] = 0.6
    labels[rest & (kind > 0.985)] = 0.7
    superseded = rng.random(n) < 0.03
    labels[superseded] = -0.3
    return labels, superseded


def _features(
    rng: np.random.Generator, start: datetime, has: np.ndarray, superseded: np.ndarray
) -> np.ndarray:
    """The candidates' features by the one definition (`candidate_features`, UTC) from drawn
    ages (0..120 days), importances, access counts, a session gap and constraint flags."""
    n = has.size
    start_s = start.timestamp()
    age_days = rng.uniform(0, 120, n)
    importance = rng.uniform(0.2, 1.0, n)
    access_count = rng.poisson(3, n)
    previous_start = start - timedelta(days=float(rng.exponential(0.3)))
    is_constraint = rng.random(n) < 0.01
    candidates = CandidateInfo(
        created_at=start_s - age_days * 86_400.0,
        importance=importance,
        access_count=access_count,
        has_embedding=has,
        superseded_at=np.where(superseded, start_s - 1, np.nan),
        is_constraint=is_constraint,
    )
    return candidate_features(candidates, SessionInfo(start, "UTC", None, previous_start))


def synthetic_samples(
    n_sessions: int,
    *,
    dim: int = 768,
    mean_candidates: int = MEAN_CANDIDATES,
    text_share: float = TEXT_SHARE,
    seed: int = 0,
    cfg: PredictorConfig = DEFAULT_CONFIG,
) -> list[SessionSample]:
    """`n_sessions` training samples with realistic shapes and label spread (see the module
    docstring). Each session is generated on its own, so no large temporary is made."""
    rng = np.random.default_rng([seed, 0x7EA1])
    centers = _unit(rng.normal(size=(_TOPICS, dim)))
    topic_project = np.arange(_TOPICS) % len(_PROJECTS)
    t0 = datetime(2026, 1, 5, 8, 0, tzinfo=UTC)
    out: list[SessionSample] = []
    for s in range(n_sessions):
        start = t0 + timedelta(hours=2.0 * s + float(rng.uniform(0, 1)))
        topic = int(rng.integers(_TOPICS))
        proj = _PROJECTS[topic_project[topic]]
        n = int(np.clip(round(rng.normal(mean_candidates, 10)), 40, 100))
        cand_topic, emb, has, context = _pool(rng, centers, topic, n, text_share)
        labels, superseded = _labels(rng, cand_topic, topic, topic_project)
        feats = _features(rng, start, has, superseded)
        tokens = tuple(
            rng.integers(0, cfg.hash_buckets, size=int(rng.integers(8, 40))) for _ in range(n)
        )
        out.append(
            SessionSample(
                session_key=f"bench-{s:05d}",
                start=start,
                project=proj,
                confidence=float(rng.uniform(0.6, 1.0)),
                continuity=float(rng.uniform(0.0, 1.0)),
                memory_ids=np.asarray([f"m{s:05d}-{j:03d}" for j in range(n)], dtype=object),
                context=context,
                cand_emb=emb,
                has_emb=has,
                tokens=tokens,
                features=feats,
                project_slot=project_slot(proj, cfg.project_slots),
                labels=labels,
                baseline_rank=np.arange(n, dtype=np.int64),
            )
        )
    return out


def _rss_mib() -> float:
    """The process's peak resident set size so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _child(n_sessions: int, epochs: int, seed: int) -> dict:
    """The measured run (in a fresh process): build, warm up, train once, time single steps."""
    # here: the measured process's peak memory counts only what it runs
    from signet_bench.learn.model.optim import Adam
    from signet_bench.learn.model.params import init_params
    from signet_bench.learn.model.scorer import loss_and_grads
    from signet_bench.learn.train import TrainOptions, to_batch, train_model

    samples = synthetic_samples(n_sessions, seed=seed)
    data_rss = _rss_mib()
    # warm-up: BLAS, code paths and allocator, on a small set
    train_model(samples[:24], None, epochs=1, seed=seed)
    t0 = time.perf_counter()
    res = train_model(
        samples, None, epochs=epochs, seed=seed, options=TrainOptions(time_cap_s=TIME_CAP_S)
    )
    wall = time.perf_counter() - t0
    peak_rss = _rss_mib()

    params = init_params(native_dim=samples[0].context.shape[0])
    opt = Adam(params)
    batch = to_batch(samples[:STEP_BATCH])
    step_ms = []
    for i in range(STEP_WARMUP + STEP_REPEATS):
        t = time.perf_counter()
        _, grads = loss_and_grads(params, batch)
        opt.step(params, grads)
        if i >= STEP_WARMUP:
            step_ms.append((time.perf_counter() - t) * 1000.0)
    n_cand = np.array([len(s) for s in samples])
    text = sum(int((~s.has_emb).sum()) for s in samples)
    n_replay = round(16 * DEFAULT_CONFIG.replay_share)
    # every training session once per epoch, plus the replay sessions mixed into each step
    passes = res.epochs_run * res.sample_count + res.steps * n_replay
    return {
        "wall_s": wall,
        "duration_ms": res.duration_ms,
        "steps": res.steps,
        "session_passes": passes,
        "epochs_run": res.epochs_run,
        "stopped_early": res.stopped_early,
        "accepted": res.accepted,
        "gate_reason": res.gate_reason,
        "loss_first": res.loss_curve[0] if res.loss_curve else float("nan"),
        "loss_last": res.loss_curve[-1] if res.loss_curve else float("nan"),
        "train_sessions": res.sample_count,
        "canary_sessions": res.canary_count,
        "data_rss_mib": data_rss,
        "peak_rss_mib": peak_rss,
        "step_ms": step_ms,
        "mean_candidates": float(n_cand.mean()),
        "text_share": text / float(n_cand.sum()),
    }


def measure(n_sessions: int, epochs: int, seed: int = 0) -> dict:
    """Run `_child` in a fresh interpreter and return its measurements."""
    cmd = [
        sys.executable,
        "-m",
        "signet_bench.bench.train_speed",
        "--child",
        json.dumps({"sessions": n_sessions, "epochs": epochs, "seed": seed}),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"bench train child failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def rows_from(m: dict, n_sessions: int, epochs: int) -> list[Row]:
    """The report rows of one measurement."""
    name = f"train_{n_sessions}x{MEAN_CANDIDATES}x768_{epochs}ep"
    wall = float(m["wall_s"])
    full = n_sessions == FULL[0] and epochs == FULL[1]
    rows = [
        Row(name, "wall", wall, "s", n=1, goal="<= 10 s (cap 30 s)" if full else None),
        Row(name, "steps_per_s", m["steps"] / wall, "1/s", n=m["steps"]),
        Row(name, "sessions_per_s", m["session_passes"] / wall, "1/s", n=m["session_passes"]),
        Row(name, "peak_rss", m["peak_rss_mib"], "MiB", n=1, goal="<= 500 MB" if full else None),
        Row(name, "data_rss", m["data_rss_mib"], "MiB", n=1),
        Row(name, "final_loss", m["loss_last"], "kl", n=m["epochs_run"]),
    ]
    for metric, value in percentiles(m["step_ms"], (50, 95)).items():
        rows.append(
            Row(
                f"train_step_{STEP_BATCH}x{MEAN_CANDIDATES}x768",
                metric,
                value,
                "ms",
                n=STEP_REPEATS,
            )
        )
    return rows


def train_rows(
    *,
    quick: bool = False,
    seed: int = 0,
    history: bool = True,
    sizes: Sequence[int] | None = None,
    config: str | None = None,
) -> list[Row]:
    """Measure one training run in a child process, then (with `history`) one scheduled
    training per history size (`bench.train_history`); the rows (progress goes to `log`)."""
    rows = _synthetic_rows(quick=quick, seed=seed)
    if history:
        # here: the measured process imports this module; its peak memory counts only what it runs
        from signet_bench.bench.train_history import history_rows

        _log.info("bench train over history: heavy persona, one scheduled training per size ...")
        rows += reference_ratios(
            rows, history_rows(quick=quick, seed=seed, sizes=sizes, config=config)
        )
    return rows


def reference_ratios(reference: Sequence[Row], history: Sequence[Row]) -> list[Row]:
    """`history` with, after each size's wall time, its ratio to the reference training's
    wall time of the same run (`reference`: its rows), the goal's measure."""
    ref = next(r for r in reference if r.name.startswith("train_") and r.metric == "wall")
    full = ref.name == f"train_{FULL[0]}x{MEAN_CANDIDATES}x768_{FULL[1]}ep"
    out: list[Row] = []
    for r in history:
        out.append(r)
        if r.metric == "wall_s":
            ratio = r.value / ref.value
            out.append(
                Row(r.name, "ratio_to_reference", ratio, "x", n=r.n, goal="<= 2" if full else None)
            )
    return out


def _synthetic_rows(*, quick: bool, seed: int) -> list[Row]:
    """One training on synthetic samples, in a child process: its rows."""
    n_sessions, epochs = QUICK if quick else FULL
    _log.info(
        f"bench train: {n_sessions} sessions x ~{MEAN_CANDIDATES} candidates x {epochs} epochs "
        f"(fresh child process; time cap {TIME_CAP_S:.0f} s) ..."
    )
    threads = os.environ.get("OPENBLAS_NUM_THREADS", f"OpenBLAS default ({os.cpu_count()} cores)")
    kernel = os.environ.get("OPENBLAS_CORETYPE", "chosen by OpenBLAS")
    _log.info(f"  BLAS threads: {threads}; kernels: {kernel}")
    m = measure(n_sessions, epochs, seed)
    _log.info(
        f"  {m['train_sessions']} train + {m['canary_sessions']} canary sessions, "
        f"{m['mean_candidates']:.1f} candidates/session, text path {m['text_share']:.1%}; "
        f"{m['epochs_run']} epochs, {m['steps']} steps"
        f"{', stopped: ' + m['stopped_early'] if m['stopped_early'] else ''}; "
        f"loss {m['loss_first']:.4f} -> {m['loss_last']:.4f}; gates: {m['gate_reason']}"
    )
    return rows_from(m, n_sessions, epochs)


def _main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--child":
        spec = json.loads(argv[1])
        print(json.dumps(_child(int(spec["sessions"]), int(spec["epochs"]), int(spec["seed"]))))
        return 0
    print("usage: python -m signet_bench.bench.train_speed --child JSON", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
