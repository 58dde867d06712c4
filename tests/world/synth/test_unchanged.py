"""The personas without a knowledge graph build exactly the stores, truth and sessions they did
before graphs existed: every table of a small store of each release line, and the planted
relevance and prompts of its first sessions, hash to the values recorded before the graph was
added (a deliberate change to what those stores hold must record new values here, printed by
running this file as a script)."""

from __future__ import annotations

import hashlib
import sqlite3
import sys
from pathlib import Path

import numpy as np
import pytest

from signet_bench.world.synth.build import build_persona_store
from signet_bench.world.synth.truth import true_relevance, variance_shares
from signet_bench.world.synth.world import SyntheticWorld

SEED, N_MEMORIES, N_SESSIONS, PLAN_SEED = 7, 300, 12, 3

STORE_DIGESTS = {
    ("light", "0.58"): "0e6e2f3b2ca5c98c",
    ("light", "current"): "3365c05096139d87",
    ("heavy", "0.58"): "d0ad14889817b2e3",
    ("heavy", "current"): "b494b83740468393",
    ("drifting", "0.58"): "01d238e04e6304bb",
    ("drifting", "current"): "bf03cad7f5f01cc6",
    ("multi-project", "0.58"): "2e3ee62432b448f2",
    ("multi-project", "current"): "939d1f99bacb8672",
}
"""sha256 (first 16 hex digits) over every ordinary table's name and sorted rows."""

SESSION_DIGESTS = {
    "light": "074362929f05d78f",
    "heavy": "219b5d0b8df3f73b",
    "drifting": "9ca7de23d2caa38e",
    "multi-project": "8c87078507422f77",
}
"""sha256 (first 16 hex digits) over the planted relevance of every memory and the prompts
(text, time, agent ratings) of the first sessions of the 0.58 store."""


def store_digest(path: Path) -> str:
    """A content hash of every ordinary table of a store (FTS shadow tables included, the
    virtual table itself left out), independent of row order."""
    con = sqlite3.connect(path)
    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                " AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name"
            )
        ]
        h = hashlib.sha256()
        for name in names:
            h.update(name.encode())
            for row in sorted(repr(r) for r in con.execute(f'SELECT * FROM "{name}"')):
                h.update(row.encode())
        return h.hexdigest()[:16]
    finally:
        con.close()


def session_digest(path: Path) -> str:
    """A hash of the planted relevance and the prompts of a store's first sessions."""
    world = SyntheticWorld.load(path)
    h = hashlib.sha256()
    for i, plan in enumerate(world.plan(N_SESSIONS, seed=PLAN_SEED)):
        h.update(np.round(true_relevance(world.truth, plan), 10).tobytes())
        rng = np.random.default_rng([PLAN_SEED, i])
        for p in world.prompts(plan, list(world.truth.ids[:5]), rng):
            h.update(repr((p.text, p.at.isoformat(), sorted(p.feedback.items()))).encode())
    return h.hexdigest()[:16]


def _build(root: Path, persona: str, schema: str) -> Path:
    path = root / f"{persona}-{schema}.db"
    build_persona_store(persona, path, seed=SEED, n_memories=N_MEMORIES, schema=schema)
    return path


@pytest.mark.parametrize(("persona", "schema"), sorted(STORE_DIGESTS))
def test_stores_without_a_graph_are_unchanged(tmp_path, persona, schema):
    """Check every table (truth tables included) of a graph-less persona's store is as before."""
    path = _build(tmp_path, persona, schema)
    assert store_digest(path) == STORE_DIGESTS[persona, schema]
    if schema == "0.58":
        assert session_digest(path) == SESSION_DIGESTS[persona]


def test_the_graph_effect_carries_nothing_without_a_graph(tmp_path):
    """Check a graph-less store's truth gives the graph effect no share at all."""
    world = SyntheticWorld.load(_build(tmp_path, "multi-project", "0.58"))
    assert world.truth.graph is None
    assert variance_shares(world.truth, world.plan(4, seed=1))["graph"] == 0.0


if __name__ == "__main__":  # print the values to record after a deliberate change
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        for persona, schema in sorted(STORE_DIGESTS):
            p = _build(Path(d), persona, schema)
            print(persona, schema, store_digest(p), session_digest(p), file=sys.stdout)
