"""The synthetic world alone: given a plan and what the session injected and showed, it answers
the same prompts, ratings and verdict for the same random stream; the agent rates only
injected memories, and only on its share of the sessions; the judge rates what it was shown,
from the planted truth, with its noise and its recency bias."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest

from signet_bench.world.interface import SessionView
from signet_bench.world.synth.build import build_persona_store
from signet_bench.world.synth.judge import AGENT_RATINGS_PER_PROMPT
from signet_bench.world.synth.plans import plan_sessions
from signet_bench.world.synth.truth import true_relevance
from signet_bench.world.synth.world import PROMPT_GAP, SyntheticWorld, WorldOptions

N_VIEW = 40


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    db = tmp_path_factory.mktemp("world") / "memories.db"
    build_persona_store("light", db, seed=3, n_memories=150)
    return db


def _world(store, **opts) -> SyntheticWorld:
    return SyntheticWorld.load(store, WorldOptions(**opts))


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, 0])


def _view(world: SyntheticWorld, created_s: np.ndarray | None = None) -> SessionView:
    """The first N_VIEW memories: 0-9 injected, 5-14 recalled, 30-34 in the second pass."""
    ids = np.asarray(world.truth.ids[:N_VIEW], dtype=str)
    at = np.arange(N_VIEW)
    created = world.truth.created_s[:N_VIEW] if created_s is None else created_s
    return SessionView(ids, at < 10, (at >= 5) & (at < 15), (at >= 30) & (at < 35), created)


def test_the_plan_is_the_personas_from_the_stores_now(store):
    world = _world(store)
    plan = world.plan(12, seed=5)
    assert plan == world.plan(12, seed=5) != world.plan(12, seed=6)
    assert plan == plan_sessions(world.persona, 12, start=world.truth.now, seed=5)
    assert world.tz == world.persona.tz and world.now == world.truth.now


def test_prompts_are_the_same_for_the_same_stream(store):
    world = _world(store, feedback_share=1.0)
    plan = world.plan(3, seed=1)[2]
    injected = [str(m) for m in world.truth.ids[:8]]
    a = world.prompts(plan, injected, _rng(1))
    assert a == world.prompts(plan, injected, _rng(1))
    assert a != world.prompts(plan, injected, _rng(2))
    assert 10 <= len(a) <= 20
    assert [p.at for p in a] == [plan.start + PROMPT_GAP * (j + 1) for j in range(len(a))]


def test_the_agent_rates_some_injected_memories_on_its_share_of_sessions(store):
    plan = _world(store).plan(1, seed=1)[0]
    injected = [str(m) for m in _world(store).truth.ids[:8]]
    rating = _world(store, feedback_share=1.0).prompts(plan, injected, _rng(4))
    for p in rating:
        assert len(p.feedback) == AGENT_RATINGS_PER_PROMPT
        assert set(p.feedback) <= set(injected)
        assert all(-1.0 <= v <= 1.0 for v in p.feedback.values())
    assert len({m for p in rating for m in p.feedback}) > AGENT_RATINGS_PER_PROMPT
    silent = _world(store, feedback_share=0.0).prompts(plan, injected, _rng(4))
    assert not any(p.feedback for p in silent)
    assert [p.text for p in silent] == [p.text for p in rating]  # same texts, no ratings
    few = _world(store, feedback_share=1.0).prompts(plan, injected[:2], _rng(4))
    assert all(sorted(p.feedback) == sorted(injected[:2]) for p in few)
    assert not any(p.feedback for p in _world(store, feedback_share=1.0).prompts(plan, [], _rng(4)))


def test_the_judge_rates_what_it_was_shown_from_the_truth(store):
    world = _world(store, judge_noise=0.0)
    plan = world.plan(1, seed=2)[0]
    view = _view(world, created_s=np.full(N_VIEW, plan.start.timestamp() - 30 * 86400))
    verdict = world.judge(plan, view, _rng(0))
    truth = true_relevance(world.truth, plan)[:N_VIEW]
    shown = view.injected | view.recalled | view.pool
    assert np.isnan(verdict.relevance[~shown]).all()
    np.testing.assert_allclose(verdict.relevance[shown], np.clip(truth[shown], 0, 1))
    assert verdict.memories_used == int((verdict.relevance[view.injected] >= 0.5).sum())
    assert verdict.end == plan.start + PROMPT_GAP * (20 + 2)
    assert 0.0 <= verdict.score <= 1.0 and 0.2 <= verdict.confidence <= 1.0
    assert verdict.transcript == f"[{plan.project}/{plan.focus_topic}] simulated session"
    np.testing.assert_allclose(world.relevance(plan, view.memory_ids), truth)
    with pytest.raises(KeyError):
        world.positions(["no-such-memory"])


def test_the_judge_favours_young_memories_by_its_recency_bias(store):
    world = _world(store, judge_noise=0.0, judge_recency_bias=0.2)
    plan = world.plan(1, seed=2)[0]
    start = plan.start.timestamp()
    created = np.where(np.arange(N_VIEW) % 2 == 0, start - 86400, start - 30 * 86400)
    verdict = world.judge(plan, _view(world, created), _rng(0))
    truth = true_relevance(world.truth, plan)[:N_VIEW]
    young = created > start - world.opts.young_days * 86400
    shown = ~np.isnan(verdict.relevance)
    bias = np.where(young, 0.2, 0.0)
    np.testing.assert_allclose(verdict.relevance[shown], np.clip(truth + bias, 0, 1)[shown])


def test_the_verdict_is_the_same_for_the_same_stream(store):
    world = _world(store)
    plan = world.plan(1, seed=2)[0]
    a, b = (world.judge(plan, _view(world), _rng(9)) for _ in range(2))
    np.testing.assert_array_equal(a.relevance, b.relevance)
    assert (a.score, a.confidence, a.novel_context_count) == (
        b.score,
        b.confidence,
        b.novel_context_count,
    )
    c = world.judge(plan, _view(world), _rng(10))
    assert not np.array_equal(a.relevance, c.relevance, equal_nan=True)
    assert a.end - plan.start == timedelta(minutes=2 * 22)


def test_the_conversation_cites_the_injected_memories_the_session_needed(store):
    from signet_bench.world.synth.text import CITING_ANSWERS, PLAIN_ANSWERS

    world = _world(store)
    plan = world.plan(1, seed=2)[0]
    base = _view(world)
    contents = tuple(f"Memory {i}: the note numbered {i}." for i in range(N_VIEW))
    prompts = tuple(p.text for p in world.prompts(plan, [], _rng(3)))
    view = SessionView(
        *(getattr(base, f) for f in ("memory_ids", "injected", "recalled", "pool", "created_s")),
        contents=contents,
        prompts=prompts,
    )
    verdict = world.judge(plan, view, _rng(0))
    again = world.judge(plan, view, _rng(1))  # another stream: the same conversation
    assert verdict.conversation == again.conversation
    truth = true_relevance(world.truth, plan)[:N_VIEW]
    needed = {i for i in range(N_VIEW) if base.injected[i] and truth[i] >= 0.5}
    assert 0 < len(needed) < int(base.injected.sum())
    lines = verdict.conversation.splitlines()
    assert lines[0] == verdict.transcript  # the summary job's line opens it
    assert [x.removeprefix("user: ") for x in lines[1::2]] == list(prompts)
    answers = lines[2::2]
    assert all(a.startswith("assistant: ") for a in answers) and len(answers) == len(prompts)
    cited = {i for i in range(N_VIEW) if contents[i] in verdict.conversation}
    assert cited == needed  # every needed injected memory once, nothing else
    assert sum(verdict.conversation.count(contents[i]) for i in cited) == len(needed)
    openers = {t.split("{m}")[0] for t in CITING_ANSWERS} | set(PLAIN_ANSWERS)
    assert all(any(a[len("assistant: ") :].startswith(o) for o in openers) for a in answers)
    assert world.judge(plan, base, _rng(0)).conversation == ""  # no texts shown: none
