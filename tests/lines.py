"""Stores of both of Signet's release lines for tests that must pass on a Signet 0.58 store and
on a current (0.145.7) one, made by the project's own commands: a light synthetic user
(`world.synth.build.build_persona_store(..., schema=line)`) after a run of the simulated
daemon's sessions (`replay.loop.simulate`), which writes rows in the store's own shape."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.world.synth.build import build_persona_store

LINE_MEMORIES = 120
LINE_SESSIONS = 30  # past cold start, three trainings, enough for a held-out training


def simulated_store(
    path: Path,
    schema: str,
    *,
    sessions: int = LINE_SESSIONS,
    memories: int = LINE_MEMORIES,
    seed: int = 1,
    scorer: str = "random",
) -> Path:
    """A new light-persona store of release line `schema` ("0.58" or "current") at `path` with
    the first `sessions` sessions of its plan simulated (`scorer` scoring them)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    build_persona_store("light", path, seed=0, n_memories=memories, schema=schema)
    if sessions:
        simulate(path, sessions, SimOptions(scorer=scorer, seed=seed))
    return path


def as_signet_leaves_it(store: Path, out: Path) -> Path:
    """A copy of a simulated store at `out` without the simulator's and the synthesizer's own
    tables (`sim_*`, `synth_*`): what Signet's daemon itself would have left, with no
    predictor state and no session plan beside its rows."""
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(store, out)
    con = sqlite3.connect(out)
    try:
        names = [
            r[0]
            for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            if r[0].startswith(("sim_", "synth_"))
        ]
        for name in names:
            con.execute(f'DROP TABLE "{name}"')
        con.commit()
    finally:
        con.close()
    return out
