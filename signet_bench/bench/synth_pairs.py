"""The base model's synthetic training data: pair exports (`learn.pairs`) of synthetic worlds
that no benchmark reports (`TRAINING_SEEDS`), as a user's store would give them.

Each world is a persona's store built with a training seed and run through the daemon loop
(`replay.loop.Simulator`) for `sessions` sessions with the scorer `scorer` (default "none":
Signet alone injects, as on the stores of users who have not installed the scorer, so the
data owes nothing to an earlier base). Its trainable sessions are read back as the trainer
reads any store (`learn.samples.load_samples`), so the labels are the loop's own label
function on the store's rows (`daemon.labels`: the judge's and the agent's ratings, FTS hits,
similarity), never the persona's planted relevance: a user's store has no planted truth.
`labels="truth"` replaces them with the planted relevance at each session's start, for the
ceiling experiment only (what perfect labels would give the base); its manifest says so and
`train-base` names it in the base file's `training` record.

`export_synth_pairs` writes one Parquet file per world and a manifest (`MANIFEST`) that
`train-base --synth DIR` reads into the base file's training record.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.errors import UserError
from signet_bench.learn.pairs import pair_frame, write_pairs
from signet_bench.learn.samples import SessionSample, load_samples
from signet_bench.replay.loop import SimOptions, Simulator
from signet_bench.world.synth.build import build_persona_store
from signet_bench.world.synth.persona import get_persona
from signet_bench.world.synth.truth import true_relevance

__all__ = [
    "MANIFEST",
    "SYNTH_FORMAT",
    "TRAINING_SEEDS",
    "SynthPairs",
    "export_synth_pairs",
    "read_manifest",
    "synth_training_record",
    "write_manifest",
]

_log = logging.getLogger(__name__)

SYNTH_FORMAT = "signet-synth-pairs/1"
MANIFEST = "manifest.json"
# the seeds whose worlds may train the base: none of them is reported by a benchmark (design
# seeds 900-909, reported seeds 1000 and above)
TRAINING_SEEDS = range(950, 1000)
DEFAULT_SESSIONS = 60
Labels = Literal["loop", "truth"]
LABEL_TEXT = {
    "loop": "the loop's label function on the store's rows (daemon.labels, as load_samples "
    "reads any store: judge and agent ratings, FTS hits, similarity), not the planted relevance",
    "truth": "the persona's planted relevance at each session's start (ceiling experiment only)",
}


@dataclass(frozen=True, slots=True)
class SynthPairs:
    """Which synthetic worlds to export and how: personas × seeds (each in `TRAINING_SEEDS`),
    `sessions` loop sessions each, the store's embedder, the loop's scorer and the labels;
    `memories` resizes the personas' stores (None: their own size)."""

    personas: tuple[str, ...]
    seeds: tuple[int, ...]
    sessions: int = DEFAULT_SESSIONS
    embedder: str = "topic"
    scorer: str = "none"
    labels: Labels = "loop"
    memories: int | None = None

    def check(self) -> None:
        """A clear error for a seed a benchmark may report or judge on, or a bad count."""
        bad = [s for s in self.seeds if s not in TRAINING_SEEDS]
        if bad:
            raise UserError(
                f"--seeds {', '.join(map(str, bad))}: the base trains only on worlds of seeds "
                f"{TRAINING_SEEDS.start}-{TRAINING_SEEDS.stop - 1}, which no benchmark reports"
            )
        if self.sessions < 2:
            raise UserError(f"--sessions {self.sessions}: at least 2")
        if self.labels not in LABEL_TEXT:
            raise UserError(f"--labels {self.labels!r}: one of {', '.join(LABEL_TEXT)}")
        for p in self.personas:
            get_persona(p)  # a clear error for an unknown persona


def _truth_labelled(sim: Simulator, samples: list[SessionSample]) -> list[SessionSample]:
    """`samples` with every label replaced by the planted relevance at the session's start."""
    plan = {c.session_key: c for c in sim.plan(len(sim.done()))}
    out = []
    for s in samples:
        rel = true_relevance(sim.truth, plan[s.session_key])
        rows = sim.truth.positions(s.memory_ids.astype(str))
        out.append(dataclasses.replace(s, labels=rel[rows].astype(s.labels.dtype), rated=None))
    return out


def world_samples(
    persona: str, seed: int, spec: SynthPairs, tmp: Path, cfg: PredictorConfig = DEFAULT_CONFIG
) -> list[SessionSample]:
    """One world's trainable sessions after `spec.sessions` loop sessions, labelled as
    `spec.labels` says."""
    path = tmp / f"{persona}-{seed}.db"
    build_persona_store(persona, path, seed=seed, embedder=spec.embedder, n_memories=spec.memories)
    sim = Simulator(path, SimOptions(scorer=spec.scorer, seed=seed), cfg)
    try:
        sim.loop.run(spec.sessions)
        samples, _ = load_samples(sim.con, corpus=sim.corpus, tz=sim.tz, cfg=cfg, seed=seed)
        return _truth_labelled(sim, samples) if spec.labels == "truth" else samples
    finally:
        sim.close()


def export_synth_pairs(
    spec: SynthPairs, out_dir: str | Path, cfg: PredictorConfig = DEFAULT_CONFIG
) -> dict[str, Any]:
    """Write `<persona>-<seed>.parquet` per world and the manifest into `out_dir`; the
    manifest."""
    spec.check()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="synth-pairs-") as tmp:
        for persona in spec.personas:
            for seed in spec.seeds:
                t0 = time.perf_counter()
                samples = world_samples(persona, seed, spec, Path(tmp), cfg)
                frame = pair_frame(samples, np.random.default_rng([seed, len(files)]))
                name = f"{persona}-{seed}.parquet"
                write_pairs(frame, out / name)
                files.append(
                    {"file": name, "persona": persona, "seed": seed, "sessions": len(samples)}
                    | {"rows": frame.height}
                )
                write_manifest(spec, out, files)  # what is done so far is usable as it is
                _log.info(
                    f"  [{persona} seed {seed}] {len(samples)} trainable sessions, "
                    f"{frame.height} pairs in {time.perf_counter() - t0:.1f} s"
                )
    return write_manifest(spec, out, files)


def write_manifest(spec: SynthPairs, out: Path, files: list[dict[str, Any]]) -> dict[str, Any]:
    """The manifest of the worlds in `files` (personas and seeds: those written)."""
    manifest = {
        "format": SYNTH_FORMAT,
        **dataclasses.asdict(spec),
        "personas": sorted({f["persona"] for f in files}, key=spec.personas.index),
        "seeds": sorted({int(f["seed"]) for f in files}),
        "label_rule": LABEL_TEXT[spec.labels],
        "files": files,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest


def read_manifest(directory: str | Path) -> tuple[dict[str, Any], list[Path]]:
    """A synthetic export's manifest and its pair files (a clear error for anything else)."""
    d = Path(directory)
    path = d / MANIFEST
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: not a synthetic pair export's manifest ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != SYNTH_FORMAT:
        raise UserError(f"{path}: not a synthetic pair export (format {SYNTH_FORMAT} expected)")
    files = [d / f["file"] for f in doc.get("files", [])]
    missing = [str(f) for f in files if not f.is_file()]
    if missing or not files:
        raise UserError(f"{path}: pair files missing: {', '.join(missing) or 'none listed'}")
    return doc, files


def synth_training_record(doc: dict[str, Any], directory: str | Path) -> dict[str, Any]:
    """What a base trained on a synthetic export says of that data (its `training` record)."""
    seeds: Sequence[int] = doc["seeds"]
    return {
        "data": f"synthetic worlds of personas {', '.join(doc['personas'])}, seeds "
        f"{', '.join(map(str, seeds))} (no benchmark reports them), {doc['sessions']} loop "
        f"sessions each (scorer {doc['scorer']}), embedder {doc['embedder']}",
        "sessions": sum(int(f["sessions"]) for f in doc["files"]),
        "labels": doc["label_rule"],
        "command": f"signet-bench export-synth-pairs --personas {','.join(doc['personas'])} "
        f"--seeds {','.join(map(str, seeds))} --sessions {doc['sessions']} "
        f"--embedder {doc['embedder']} --scorer {doc['scorer']} --labels {doc['labels']} "
        f"--out {Path(directory).name}",
    }
