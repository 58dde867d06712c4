"""TopicEmbedder: deterministic, unit rows, topic-clustered."""

from __future__ import annotations

import numpy as np
import pytest

from signet_bench.world.embed import Embedder
from signet_bench.world.synth.embedding import TopicEmbedder, topic_separation_auc
from signet_bench.world.synth.text import memory_text
from signet_bench.world.synth.vocab import TOPICS


def _texts(topic: str, n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [memory_text("fact", TOPICS[topic], "proj", rng)[0] for _ in range(n)]


def test_implements_the_embedder_protocol_with_unit_float32_rows():
    e = TopicEmbedder(0, dim=64)
    assert isinstance(e, Embedder)
    assert e.name == "synth-topic" and e.dim == 64
    v = e.embed(["Use pgbouncer for the replica.", "", "zzqx unknownword", "the a to"])
    assert v.shape == (4, 64) and v.dtype == np.float32
    norms = np.linalg.norm(v, axis=1)
    assert np.allclose(norms[[0, 2, 3]], 1.0, atol=1e-5)
    assert norms[1] == 0.0


def test_same_text_same_vector_regardless_of_batch_or_instance():
    a, b = TopicEmbedder(7), TopicEmbedder(7)
    texts = ["a brand new word: flibbertigibbet in redis", "tabs over spaces"]
    batch = a.embed(texts)
    alone = b.embed(texts[::-1])[::-1]
    assert np.array_equal(batch, alone)


def test_different_seed_gives_different_vectors():
    t = ["Decided to use redis for the ttl."]
    assert not np.allclose(TopicEmbedder(1).embed(t), TopicEmbedder(2).embed(t))


def test_memories_cluster_by_topic():
    e = TopicEmbedder(0)
    a = e.embed(_texts("postgres", 30, 0))
    b = e.embed(_texts("postgres", 30, 1))
    c = e.embed(_texts("ios", 30, 2))
    same = float((a @ b.T).mean())
    other = float((a @ c.T).mean())
    assert same > 0.6 and other < 0.15


def test_a_prompt_lands_near_its_topics_memories():
    e = TopicEmbedder(3)
    mems = {t: e.embed(_texts(t, 10, i)).mean(axis=0) for i, t in enumerate(("caching", "docs"))}
    q = e.embed(["why does the ttl eviction in redis fail after we flush the keyspace?"])[0]
    assert q @ mems["caching"] > q @ mems["docs"] + 0.3


def test_generic_words_barely_move_a_sentence():
    e = TopicEmbedder(0)
    bare, padded = e.embed(["redis ttl eviction", "the redis ttl and the eviction for us"])
    assert float(bare @ padded) > 0.95


def test_heavy_sized_batch_is_embedded_in_one_call():
    e = TopicEmbedder(0)
    texts = [t for name in TOPICS for t in _texts(name, 130, 9)]  # > 4,000 texts, several chunks
    v = e.embed(texts)
    assert v.shape == (len(texts), 768)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(v[-5:], e.embed(texts[-5:]))


def test_topic_separation_auc_reads_how_plainly_the_topic_shows():
    rng = np.random.default_rng(0)
    project = np.array(["a"] * 60 + ["b"] * 60 + [""] * 10, dtype=object)
    topic = np.array((["x"] * 30 + ["y"] * 30) * 2 + ["g"] * 10, dtype=object)
    centres = {(p, t): rng.standard_normal(16) for p in "ab" for t in "xy"}
    centres[("", "g")] = rng.standard_normal(16)
    clustered = np.stack(
        [
            centres[(p, t)] + 0.05 * rng.standard_normal(16)
            for p, t in zip(project, topic, strict=True)
        ]
    )
    noise = rng.standard_normal((130, 16))
    assert topic_separation_auc(clustered, project, topic, pairs=20_000) > 0.99
    assert abs(topic_separation_auc(noise, project, topic, pairs=20_000) - 0.5) < 0.05
    e = TopicEmbedder(0)
    texts = _texts("postgres", 40, 0) + _texts("ios", 40, 1)
    vecs = e.embed(texts)
    proj = np.array(["p"] * 40 + ["q"] * 40, dtype=object)
    assert topic_separation_auc(vecs, proj, np.array(["postgres"] * 40 + ["ios"] * 40)) > 0.99
    with pytest.raises(ValueError, match="other-project"):
        topic_separation_auc(noise[:60], project[:60], topic[:60])
