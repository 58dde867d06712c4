"""BM25 over the candidates through FTS5: the contract, FTS5's formula by hand, and the same
numbers as the store's own `memories_fts`."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest

from signet_bench.daemon.ranking.fts import fts_search
from signet_bench.daemon.ranking.peers.bm25 import BM25Ranker, candidate_bm25
from signet_bench.daemon.ranking.ranker import Ranker
from signet_bench.store.corpus import read_corpus
from signet_bench.store.schema import connect_writer, create_store
from signet_bench.store.write import insert_memories
from signet_scorer.terms import recall_terms
from tests.daemon.ranking.ranker_contract import START, RankerContract, make_session

QUERY = "which sqlite vector index fits the token budget?"
DOCS = ["apple banana", "apple cherry cherry", "banana date", "date egg fig", "grape"]


class TestBM25Contract(RankerContract):
    def make_ranker(self) -> Ranker:
        return BM25Ranker(query=QUERY)


def _fts5_term(tf: int, dl: int, avgdl: float, df: int, n: int) -> float:
    """One term of FTS5's bm25 (k1 = 1.2, b = 0.75, idf = ln((N − df + 0.5)/(df + 0.5)))."""
    idf = math.log((n - df + 0.5) / (df + 0.5))
    return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))


def test_fts5_bm25_by_hand() -> None:
    avgdl = 11 / 5  # 2 + 3 + 2 + 3 + 1 tokens over 5 documents
    doc1 = _fts5_term(1, 2, avgdl, df=2, n=5)  # apple
    doc2 = _fts5_term(1, 3, avgdl, df=2, n=5) + _fts5_term(2, 3, avgdl, df=1, n=5)  # + cherry
    scores = candidate_bm25(DOCS, "apple cherry")
    np.testing.assert_allclose(scores, [doc1 / doc2, 1.0, 0.0, 0.0, 0.0], rtol=1e-12)


def test_statistics_are_the_candidates() -> None:
    """Adding a document without the term changes N and avgdl, so the ratio moves."""
    base = candidate_bm25(DOCS, "apple cherry")[0]
    more = candidate_bm25([*DOCS, "kiwi lime mango papaya"], "apple cherry")[0]
    assert more != pytest.approx(base)


@pytest.mark.parametrize("query", ["", "the and of it", "12 345", "?!"])
def test_a_query_without_terms_scores_nothing(query: str) -> None:
    assert recall_terms(query) == []
    assert candidate_bm25(DOCS, query).tolist() == [0.0] * len(DOCS)


def test_importance_filter_leaves_out_low_and_null_importance() -> None:
    imp = np.array([0.2, np.nan, 0.9, 0.3, 0.5])
    docs = ["apple pie", "apple tart", "apple cake crumble", "apple", "pear"]
    kept = candidate_bm25(docs, "apple", imp, importance_min=0.3)
    assert kept[0] == 0.0 and kept[1] == 0.0 and kept[4] == 0.0
    assert kept[3] == 1.0  # shortest matching document among those kept
    assert 0.0 < kept[2] < 1.0
    unfiltered = candidate_bm25(docs, "apple")
    assert (unfiltered[:4] > 0).all()


def test_same_numbers_as_the_stores_own_index(tmp_path: Path) -> None:
    path = tmp_path / "memories.db"
    create_store(path, now=START)
    texts = [
        "sqlite wal mode keeps readers going",
        "vector index over cosine distance",
        "the token budget is two thousand characters",
        "sqlite vector extension vec0",
        "rust daemon hooks",
        "budget for the onnx sidecar",
    ]
    rows = [
        {"id": f"s-{i}", "content": t, "created_at": START - timedelta(days=i + 1)}
        for i, t in enumerate(texts)
    ]
    con = connect_writer(path)
    try:
        insert_memories(con, rows)
        hits = dict(fts_search(con, recall_terms(QUERY), limit=100, importance_min=0.0))
    finally:
        con.close()
    corpus = read_corpus(path)
    inputs = make_session(corpus, list(corpus.ids), context=None)
    scores = BM25Ranker(query=QUERY).score(inputs)
    expected = [hits.get(str(m), 0.0) for m in inputs.memory_ids]
    np.testing.assert_allclose(scores, expected, rtol=1e-12)
    assert sum(s > 0 for s in expected) >= 3
