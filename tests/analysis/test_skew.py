"""Feature skew (signet_bench.analysis.skew) on a simulated store: our features against Signet 0.58's
training and inference conventions, each difference where the reference says it is."""

from __future__ import annotations

from pathlib import Path
from zoneinfo import ZoneInfo

import numpy as np
import pytest

from signet_bench.analysis.skew import feature_triples, skew_report
from signet_bench.replay.loop import SimOptions, simulate
from signet_bench.store.read import open_readonly
from signet_bench.store.schema import create_store
from signet_bench.store.timestamps import parse_ts
from signet_bench.world.synth.build import build_persona_store
from signet_scorer.contract import FEATURE_NAMES

TZ = "Europe/Berlin"  # the light persona's zone
SAME_EVERYWHERE = (
    "importance",
    "usage",
    "has_embedding",
    "entity_slot",
    "aspect_slot",
    "is_constraint",
    "structural_density",
    "is_traversal",
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("skew") / "light.db"
    build_persona_store("light", db, seed=4, n_memories=200)
    simulate(db, 40, SimOptions(scorer="random", seed=0))
    return db


@pytest.fixture(scope="module")
def report(store: Path):
    rep = skew_report(store, tz=TZ)
    return {r["feature"]: r for r in rep.iter_rows(named=True)}


def _candidate_rows(db: Path) -> list[tuple[str, str, str]]:
    """(session_key, memory_id, session start) of every start candidate of a scored session."""
    con = open_readonly(db)
    try:
        return con.execute(
            "SELECT sm.session_key, sm.memory_id, s.started_at FROM session_memories sm "
            "JOIN sim_sessions s ON s.session_key = sm.session_key "
            "JOIN session_scores sc ON sc.session_key = sm.session_key "
            "WHERE sm.source <> 'fts_only'"
        ).fetchall()
    finally:
        con.close()


def test_one_row_per_feature_over_every_candidate(store: Path, report):
    assert list(report) == list(FEATURE_NAMES)
    n = len(_candidate_rows(store))
    assert n > 1000
    assert {r["rows"] for r in report.values()} == {n}
    ours, train, infer = feature_triples(store, tz=TZ)
    assert ours.shape == train.shape == infer.shape == (n, len(FEATURE_NAMES))


def test_features_computed_alike_do_not_differ(report):
    for name in SAME_EVERYWHERE:
        r = report[name]
        assert r["train_share_differs"] == 0.0 and r["infer_share_differs"] == 0.0, name
        assert r["train_mean_abs_diff"] == 0.0 and r["infer_mean_abs_diff"] == 0.0, name


def test_inference_skew(store: Path, report):
    # local time with minutes and age at session start: as ours
    for name in ("recency", "tod_sin", "tod_cos", "moy_sin", "moy_cos"):
        assert report[name]["infer_share_differs"] == 0.0, name
    # JavaScript's Sunday = 0: the weekday angle is one day off on every row; a Thursday is 3
    # from Monday and 4 from Sunday, and cos(2π·3/7) = cos(2π·4/7), so only its cosine agrees
    rows = _candidate_rows(store)
    zone = ZoneInfo(TZ)
    thursday = np.mean([parse_ts(r[2]).astimezone(zone).weekday() == 3 for r in rows])
    assert report["dow_sin"]["infer_share_differs"] == 1.0
    assert report["dow_cos"]["infer_share_differs"] == pytest.approx(1.0 - thursday, abs=1e-9)
    assert 0 < thursday < 1
    # a global gap since the last session-end checkpoint, not the project's previous start
    assert report["session_gap"]["infer_share_differs"] > 0.5


def test_training_skew(report):
    # age from the session's end, integer UTC hour at the end
    assert report["recency"]["train_share_differs"] == 1.0
    assert report["recency"]["train_mean_abs_diff"] > 0
    assert report["tod_sin"]["train_share_differs"] > 0.95
    assert report["tod_cos"]["train_share_differs"] > 0.95


def test_superseded_is_lost_on_both_signet_paths(store: Path, report):
    """Candidates whose knowledge-graph attribute was superseded before the session: ours says
    superseded, Signet's inference always 0 and its trainer only knows soft deletes."""
    con = open_readonly(store)
    try:
        stale = {
            r[0]
            for r in con.execute(
                "SELECT memory_id FROM entity_attributes WHERE status = 'superseded'"
            )
        }
    finally:
        con.close()
    rows = _candidate_rows(store)
    share = sum(m in stale for _, m, _ in rows) / len(rows)
    assert share > 0
    assert report["superseded"]["infer_share_differs"] == pytest.approx(share, abs=1e-12)
    assert report["superseded"]["train_share_differs"] == pytest.approx(share, abs=1e-12)


def test_max_sessions_keeps_the_newest(store: Path):
    rows = _candidate_rows(store)
    starts = sorted({(parse_ts(r[2]), r[0]) for r in rows})
    newest = {k for _, k in starts[-5:]}
    rep = skew_report(store, tz=TZ, max_sessions=5)
    assert set(rep["rows"].to_list()) == {sum(r[0] in newest for r in rows)}


def test_store_without_sessions(tmp_path: Path):
    db = create_store(tmp_path / "empty.db")
    rep = skew_report(db)
    assert rep.height == len(FEATURE_NAMES)
    assert set(rep["rows"].to_list()) == {0}
    assert rep["train_share_differs"].sum() == 0 and rep["infer_share_differs"].sum() == 0
