"""The peer set as the bench uses it: names, query handling, and the Ranker protocol."""

from __future__ import annotations

import pytest

from signet_bench.daemon.ranking.peers import peer_rankers
from signet_bench.daemon.ranking.peers.bm25 import BM25Ranker
from signet_bench.daemon.ranking.peers.cogmem_v9 import CogMemV9Ranker
from signet_bench.daemon.ranking.peers.query import for_query
from signet_bench.daemon.ranking.peers.signet_hybrid import SignetHybridRanker
from signet_bench.daemon.ranking.ranker import CosineRanker, Ranker
from tests.daemon.ranking.ranker_contract import session

NAMES = ["bm25", "cosine", "signet_hybrid", "effective", "cogmem_v9", "cascade"]


def test_peer_names_and_protocol() -> None:
    rankers = peer_rankers("sqlite budget")
    assert [r.name for r in rankers] == NAMES
    assert all(isinstance(r, Ranker) for r in rankers)


def test_for_query_sets_the_keyword_rankers_only() -> None:
    inputs = session("text_only")
    for ranker in peer_rankers():
        moved = for_query(ranker, "sqlite budget")
        if isinstance(ranker, BM25Ranker | SignetHybridRanker | CogMemV9Ranker):
            assert moved is not ranker and moved.query == "sqlite budget"
            assert type(moved) is type(ranker) and moved.name == ranker.name
        else:
            assert moved is ranker
    with_query = for_query(BM25Ranker(), "sqlite budget").score(inputs)
    assert BM25Ranker().score(inputs).tolist() == [0.0] * len(inputs)
    assert with_query.max() == 1.0


def test_cosine_is_the_shared_ranker() -> None:
    assert isinstance(peer_rankers()[1], CosineRanker)


def test_query_must_be_text() -> None:
    with pytest.raises(TypeError, match="BM25Ranker.query: expected str"):
        BM25Ranker(query=["sqlite"])  # type: ignore[arg-type]
