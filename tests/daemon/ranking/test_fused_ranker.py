"""The fused ranker: what session start injects from, as a ranker of its own."""

from __future__ import annotations

import numpy as np

from signet_bench.daemon.candidates import session_inputs
from signet_bench.daemon.ranking.ranker import (
    CosineRanker,
    EffectiveScoreRanker,
    FusedRanker,
    ranking_order,
)
from signet_bench.daemon.ranking.session_start import Learned, session_start
from signet_bench.store.corpus import Corpus
from signet_scorer.features import SessionInfo
from tests.daemon.ranking.ranker_contract import START, RankerContract, session


class TestFusedRanker(RankerContract):
    # RRF fuses ranks, and ranks break ties by id: identical candidates get different fused
    # scores, still in id order.
    identical_inputs_tie = False

    def make_ranker(self):
        return FusedRanker(CosineRanker(), alpha=0.4)


def test_alpha_one_is_the_baseline_order():
    """Check that with the baseline's full weight the fused order is the baseline order."""
    inputs = session("mixed")
    fused = FusedRanker(CosineRanker(), alpha=1.0)
    assert (
        ranking_order(fused, inputs).tolist()
        == ranking_order(EffectiveScoreRanker(), inputs).tolist()
    )


def test_equals_the_final_scores_of_session_start():
    """Check the ranker reproduces session start's final (post-diversity) scores for the pool
    it built, with the same predictor and alpha."""
    rng = np.random.default_rng(3)
    n, d = 300, 8
    emb = rng.standard_normal((n, d)).astype(np.float32)
    emb[:40] = emb[0] + 0.05 * rng.standard_normal((40, d)).astype(np.float32)  # near-duplicates
    corpus = Corpus.from_arrays(
        [f"m{i:03d}" for i in range(n)],
        START.timestamp() - rng.uniform(0, 40, n) * 86_400,
        rng.uniform(0.2, 1.0, n),
        emb,
        contents=["some memory text"] * n,
    )
    predictor = CosineRanker()
    seen = []

    def scores(rows, ctx):
        seen.append(
            session_inputs(
                corpus,
                rows,
                "s",
                SessionInfo(START, "UTC", None, None),
                ctx,
            )
        )
        return predictor.score(seen[-1])

    res = session_start(
        corpus, START.timestamp(), previous_used=["m001"], learned=Learned(scores, 0.3)
    )
    assert res.predictor_used and res.diversity_adjusted > 0
    fused = FusedRanker(predictor, alpha=0.3).score(seen[0])
    np.testing.assert_allclose(fused, res.final_score, rtol=1e-12)
