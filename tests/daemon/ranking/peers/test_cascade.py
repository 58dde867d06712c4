"""Graph cascade retrieval (docs/specification.md §11.3): the contract, embedding clusters, BFS
decay by hand and the ranker's order on a tiny session."""

from __future__ import annotations

import math

import numpy as np
import pytest

from signet_bench.daemon.candidates import SessionInputs
from signet_bench.daemon.ranking.peers.cascade import (
    CascadeGraph,
    CascadeRanker,
    cascade_scores,
    embedding_clusters,
)
from signet_bench.daemon.ranking.peers.store_fields import project_tags
from signet_bench.daemon.ranking.ranker import Ranker, ranking_order
from tests.daemon.ranking.peers.sessions import tiny_session
from tests.daemon.ranking.ranker_contract import RankerContract, build_corpus


class TestCascadeContract(RankerContract):
    identical_inputs_tie = False  # seeds are the top 10 by (similarity, id): copies can split

    def make_ranker(self) -> Ranker:
        return CascadeRanker()


class TestCascadeWithGraphContract(RankerContract):
    identical_inputs_tie = False

    def make_ranker(self) -> Ranker:
        links = {"m-07": {"m-02": 0.9, "dup-b": 0.4}, "m-02": {"m-08": 1.0}, "m-03": {"m-07": 0.2}}
        return CascadeRanker(
            tags=project_tags(build_corpus()),
            links=links,
            similarity_threshold=0.0,
            cluster_threshold=0.5,
        )


def _unit(deg: float) -> tuple[float, float]:
    return (math.cos(math.radians(deg)), math.sin(math.radians(deg)))


def test_clusters_are_single_linkage_components() -> None:
    emb = np.array([_unit(0), _unit(30), _unit(60), _unit(150), _unit(0), (0.0, 0.0)])
    has = np.array([True, True, True, True, False, True])
    labels = embedding_clusters(emb, has, threshold=math.cos(math.radians(35)))
    # 0-30 and 30-60 are within 35 degrees (0-60 is not): one chain; 150 alone; no embedding and
    # a zero vector join nothing
    assert labels[0] == labels[1] == labels[2] >= 0
    assert labels[3:].tolist() == [-1, -1, -1]


def test_bfs_decays_by_depth() -> None:
    graph = CascadeGraph(
        tags=(
            frozenset("x"),
            frozenset("x"),
            frozenset(),
            frozenset(),
            frozenset("x"),
            frozenset(),
        ),
        clusters=np.array([7, -1, -1, -1, -1, 7]),
        links=({1: 0.5}, {2: 1.0}, {3: 1.0}, {}, {}, {}),
    )
    best = cascade_scores(graph, {0: 0.9}, max_depth=2, decay=0.7)
    # 1: link from the seed, depth 1: 0.5·0.7; 2: link from 1, depth 2: 1.0·0.7²;
    # 3: depth 3, beyond max_depth; 4: shares tag x with the seed: 0.8·0.7²; 5: shares the
    # design's cluster: 0.6·0.7². Memory 1 also shares tag x, but it is scored at its depth, 1.
    expected = [0.9, 0.35, 0.49, -np.inf, 0.392, 0.294]
    np.testing.assert_allclose(best, expected, rtol=1e-12)


def _session() -> SessionInputs:
    """a cos 1, b cos 0.5, c cos 0.1, d cos 0.3, e no embedding, f cos 0.35."""
    return tiny_session(
        ["a", "b", "c", "d", "e", "f"],
        [_unit(0), _unit(60), _unit(84.26), _unit(72.54), (0.0, 0.0), _unit(-69.51)],
        ["one", "two", "three", "four", "five", "six"],
    )


TAGS = {"a": {"t1"}, "c": {"t1"}, "b": {"t2"}, "e": ["t2"]}


def _ids(ranker: CascadeRanker, inputs: SessionInputs) -> list[str]:
    return [str(inputs.memory_ids[i]) for i in ranking_order(ranker, inputs)]


def test_seeds_then_tag_neighbours_then_similarity() -> None:
    inputs = _session()
    ranker = CascadeRanker(tags=TAGS, cluster_threshold=0.99)
    # seeds a (1.0), b (0.5); c and e share their tags: 0.8·0.49 each, c first by similarity;
    # then the unreached by similarity: f 0.35, d 0.3
    assert _ids(ranker, inputs) == ["a", "b", "c", "e", "f", "d"]
    np.testing.assert_allclose(ranker.score(inputs), [1.0, 5 / 6, 4 / 6, 1 / 6, 3 / 6, 2 / 6])


def test_clusters_reach_similar_memories() -> None:
    inputs = _session()
    # b, c and d lie within 0.8 cosine of each other: d joins b's cluster, 0.6·0.49, above f
    assert _ids(CascadeRanker(tags=TAGS), inputs) == ["a", "b", "c", "e", "d", "f"]


def test_one_initial_hit() -> None:
    ranker = CascadeRanker(tags=TAGS, cluster_threshold=0.99, max_initial_hits=1)
    assert _ids(ranker, _session()) == ["a", "c", "b", "f", "d", "e"]


def test_links_carry_their_weight() -> None:
    ranker = CascadeRanker(links={"a": {"d": 1.0}}, cluster_threshold=0.99)
    # d: 1.0·0.7 at depth 1, above the seed b (0.5)
    assert _ids(ranker, _session())[:3] == ["a", "d", "b"]


def test_no_context_ranks_by_id() -> None:
    inputs = tiny_session(["b", "a"], [_unit(0), _unit(10)], ["x", "y"], context=None)
    assert _ids(CascadeRanker(), inputs) == ["a", "b"]


@pytest.mark.parametrize("weight", [1.5, -0.1, float("nan"), "high"])
def test_bad_link_weight_names_the_link(weight: object) -> None:
    with pytest.raises(ValueError, match="cascade link a -> b"):
        CascadeRanker(links={"a": {"b": weight}})  # type: ignore[dict-item]


def test_tags_must_be_collections() -> None:
    with pytest.raises(TypeError, match="cascade tags of a"):
        CascadeRanker(tags={"a": "project:alpha"})
