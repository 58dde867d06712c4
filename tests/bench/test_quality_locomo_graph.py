"""The LoCoMo bench's knowledge-graph route on hand-made conversations: a question names a
thing whose only other mention is old evidence, which the pool's baseline order reaches only
through the graph's traversal; without a graph every row is what it was."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from signet_bench.bench.quality_locomo import (
    GRAPH_RANKERS,
    SERVED,
    LocomoRun,
    evaluate_queries,
    locomo_rows,
    read_conversation,
    speaker_entities,
)
from signet_bench.config import DEFAULT_CONFIG
from signet_bench.daemon.ranking.ranker import EffectiveScoreRanker
from signet_bench.store.graph import read_graph
from signet_bench.world.embed import get_embedder
from signet_bench.world.locomo import (
    DATE_FORMAT,
    conversation_memories,
    conversation_queries,
    convert_locomo,
    parse_conversation,
    write_conversation_store,
)

SESSIONS = 12
ACTIVITIES_A = (
    "went hiking in the hills with friends",
    "baked bread for the neighbours",
    "started learning to play the violin",
    "painted a sunset over the lake",
    "ran a long race in the rain",
    "planted tomatoes in the garden",
    "read a novel about sailors",
    "fixed an old bicycle",
    "cooked a spicy curry for dinner",
    "visited an art museum downtown",
    "walked the puppy along the river last week",
)
ACTIVITIES_B = (
    "moved to a new apartment",
    "joined a pottery class",
    "bought a used car",
    "learned to knit a scarf",
    "watched a meteor shower",
    "repaired the kitchen sink",
    "sang in a choir concert",
    "went fishing at dawn",
    "adopted a vegetarian diet",
    "built a bookshelf",
    "cleaned out the garage",
    "travelled by train to the coast",
)
# (question, evidence, category): the last names the thing, its evidence the oldest memory
# and the newest one; answerable last, so it is held out
QUESTIONS = (
    ("What did {b} join?", ("D2:2",), 4),
    ("What did {a} bake?", ("D3:1",), 4),
    ("What did {b} buy?", ("D3:2",), 4),
    ("What instrument did {a} learn?", ("D4:1",), 4),
    ("What did {a} paint?", ("D5:1",), 4),
    ("What did {a} plant?", ("D7:1",), 4),
    ("What did {a} fix?", ("D9:1",), 4),
    ("What did {a} cook for dinner?", ("D10:1",), 4),
    ("What did {a} visit downtown?", ("D11:1",), 4),
    ("What kind of animal is {thing}, and where was it walked?", ("D1:1", "D12:1"), 1),
)


def conversation(sample_id: str, a: str, b: str, thing: str) -> dict:
    """A LoCoMo sample: twelve sessions ten days apart, one observation per speaker each; the
    thing is named once, in the first session."""
    facts_a = (f"adopted a puppy named {thing} from the shelter", *ACTIVITIES_A)
    conv: dict = {"speaker_a": a, "speaker_b": b}
    observation = {}
    for n in range(1, SESSIONS + 1):
        when = datetime(2023, 1, 1, 10, 0) + timedelta(days=10 * n)
        conv[f"session_{n}_date_time"] = when.strftime(DATE_FORMAT)
        conv[f"session_{n}"] = [
            {"speaker": a, "dia_id": f"D{n}:1", "text": f"Guess what, I {facts_a[n - 1]}."},
            {"speaker": b, "dia_id": f"D{n}:2", "text": f"Nice! I {ACTIVITIES_B[n - 1]}."},
        ]
        observation[f"session_{n}_observation"] = {
            a: [[f"{a} {facts_a[n - 1]}.", f"D{n}:1"]],
            b: [[f"{b} {ACTIVITIES_B[n - 1]}.", f"D{n}:2"]],
        }
    qa = [
        {
            "question": q.format(a=a, b=b, thing=thing),
            "answer": "-",
            "evidence": list(ev),
            "category": cat,
        }
        for q, ev, cat in QUESTIONS
    ]
    return {"sample_id": sample_id, "conversation": conv, "observation": observation, "qa": qa}


@pytest.fixture(scope="module")
def hand_data(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("locomo-graph")
    samples = [
        conversation("hand-1", "Ava", "Ben", "Biscuit"),
        conversation("hand-2", "Cleo", "Dev", "Pepper"),
    ]
    path = tmp / "hand.json"
    path.write_text(json.dumps(samples))
    return path


@pytest.fixture(scope="module")
def hand_store(hand_data, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("stores")
    return convert_locomo(hand_data, out, get_embedder("wordllama")).stores["hand-1"]


def _pool(data, graph: bool, positions):
    inputs = data.graph_inputs if graph else data.inputs
    return evaluate_queries(
        data, positions, lambda d, i: EffectiveScoreRanker().score(inputs[i])
    ).values["recall@10"]


def test_the_named_thing_brings_its_old_evidence_to_the_head_of_the_pool(hand_store):
    data = read_conversation(hand_store, DEFAULT_CONFIG, seed=0)
    assert data.has_graph
    named = len(QUESTIONS) - 1
    without, with_graph = _pool(data, False, [named])[0], _pool(data, True, [named])[0]
    assert without == 0.5  # only the newest evidence is among the pool's first ten
    assert with_graph == 1.0 > without
    joined = data.graph_inputs[named]
    evidence_row = next(r for r, c in enumerate(data.covers) if "D1:1" in c)
    k = int(np.flatnonzero(joined.rows == evidence_row)[0])
    # it joined as a traversal candidate, with its undecayed importance as its score
    assert joined.graph.is_traversal.tolist() == [i == k for i in range(len(joined))]
    assert joined.effective_score[k] == pytest.approx(data.corpus.importance[evidence_row])
    assert joined.effective_score[k] == joined.effective_score.max()
    sample = data.graph_samples[data.queries[named].key]
    assert sample is not None and sample.baseline_rank[k] == 0


def test_questions_naming_only_speakers_keep_their_pool(hand_store):
    data = read_conversation(hand_store, DEFAULT_CONFIG, seed=0)
    for plain, joined in zip(data.inputs[:-1], data.graph_inputs[:-1], strict=True):
        np.testing.assert_array_equal(joined.effective_score, plain.effective_score)
        assert not joined.graph.is_traversal.any()
    # with the speakers focal, a question naming one walks the speaker's memories
    speakers = read_conversation(hand_store, DEFAULT_CONFIG, seed=0, speakers=True)
    assert any(
        x.graph.is_traversal.any() or (x.effective_score != y.effective_score).any()
        for x, y in zip(speakers.graph_inputs, speakers.inputs, strict=True)
    )


def test_the_graph_gives_every_candidate_its_structure_and_leaves_the_plain_inputs_alone(
    hand_store,
):
    data = read_conversation(hand_store, DEFAULT_CONFIG, seed=0)
    plain = read_conversation(hand_store, DEFAULT_CONFIG, seed=0, graph=False)
    assert not plain.has_graph and not plain.graph_samples
    for a, b in zip(data.inputs, plain.inputs, strict=True):
        np.testing.assert_array_equal(a.features, b.features)
        np.testing.assert_array_equal(a.effective_score, b.effective_score)
    slots = data.graph_inputs[0].graph.entity_slot
    assert (slots >= 0).all()  # every memory names a speaker: each has a primary attribute
    assert not data.inputs[0].features[:, 12:].any()
    assert data.graph_inputs[0].features[:, 12].any()


def test_the_speakers_are_the_entities_mentioned_at_a_speakers_confidence(hand_store):
    graph = read_graph(hand_store)
    names = sorted(str(graph.entity_name[e]) for e in speaker_entities(graph))
    assert names == ["Ava", "Ben"]


def test_a_store_without_a_graph_gives_no_graph_inputs(hand_data, tmp_path):
    doc = json.loads(hand_data.read_text())[0]
    conv = parse_conversation(doc, [])
    store = write_conversation_store(
        tmp_path / "plain.db",
        conv,
        conversation_memories(conv),
        conversation_queries(conv, {}, []),
        get_embedder("wordllama"),
        graph=False,
    )
    data = read_conversation(store, DEFAULT_CONFIG, seed=0)
    assert not data.has_graph and not data.graph_inputs


def test_graph_rows_raise_pool_recall_and_leave_every_other_row_unchanged(hand_data):
    rows = locomo_rows(hand_data, LocomoRun(seed=1, quick=True), embedders=["wordllama"])
    plain = locomo_rows(
        hand_data, LocomoRun(seed=1, quick=True, graph=False), embedders=["wordllama"]
    )
    graph_names = {*GRAPH_RANKERS, "held_out_graph_reached"}
    ours = [r for r in rows if r.name.split("-")[0] in graph_names]
    assert [repr(r) for r in rows if r not in ours] == [repr(r) for r in plain]
    value = {(r.name, r.metric): r for r in ours}
    assert value[("pool", "recall@10")].value < value[("pool_graph", "recall@10")].value
    effective = next(r for r in plain if (r.name, r.metric) == ("effective", "recall@10"))
    assert value[("pool", "recall@10")].value == effective.value  # the pool is the baseline
    delta = value[("pool_graph-pool", "recall@10_delta")]
    assert delta.value > 0 and delta.n == value[("pool", "recall@10")].n
    # held out: the named question of each conversation, one of five
    assert value[("held_out_graph_reached", "share")].value == pytest.approx(0.2)
    assert value[("pool_graph-pool", "recall@10_delta[graph]")].value == pytest.approx(0.5)
    assert value[("pool_graph-pool", "recall@10_delta[graph]")].n == 2
    for other in (SERVED, "signet_hybrid", "cosine"):
        assert (f"{SERVED}_graph-{other}", "recall@10_delta") in value
