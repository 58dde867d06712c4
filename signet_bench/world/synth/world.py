"""The synthetic world a replayed daemon runs in: the user, the agent and the continuity judge
of a store built by `synth`, acting on its planted truth.

It answers the lifecycle's `world.interface.World` questions: the session plan (`plans`), the
user's prompts about the session's focus topic with, on a share of sessions, the agent's
ratings of the injected memories after each prompt, and the judge's verdict at the end
(`judge`: what each of them sees and how it errs). In a world with a knowledge graph, the
prompts and the transcript name the entities the session's focus topic makes focal, so a
daemon can find them from what it observes. Its random draws come from the session's
stream, so the same session with the same seed gets the same prompts and ratings.

A session leaves two transcripts. The summary job's is one line (project, focus topic and the
entities it was about): its words are what the next sessions' start query is made of, as the
frequent words of a real transcript would be. The conversation (`text.conversation_text`) is
what a person reads to judge the injected memories: the prompts, and the agent's answers citing
the injected memories the session needed (planted relevance >= `USED_RELEVANCE`); it is built
without a random draw, so it changes no ranking and no other draw.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.world.embed import Embedder, EmbedderError, get_embedder
from signet_bench.world.interface import Judgement, Prompt, SessionView
from signet_bench.world.synth.embedding import TopicEmbedder
from signet_bench.world.synth.judge import (
    AGENT_RATINGS_PER_PROMPT,
    SILENT_NOISE_FACTOR,
    agent_ratings,
    judge_ratings,
    novel_context_count,
)
from signet_bench.world.synth.persona import Persona
from signet_bench.world.synth.plans import (
    PromptTopic,
    SessionContext,
    plan_sessions,
    planned_prompts,
)
from signet_bench.world.synth.text import conversation_text
from signet_bench.world.synth.truth import (
    MemoryTruth,
    load_truth,
    prompt_relevance,
    read_synth_meta,
    true_relevance,
)

__all__ = ["PROMPT_GAP", "SyntheticWorld", "WorldOptions"]

PROMPT_GAP = timedelta(minutes=2)
"""The time between a session's start and its first prompt, and between two prompts."""
USED_RELEVANCE = 0.5
"""An injected memory the judge rates at least this relevant counts as used; the conversation
cites those whose planted relevance is at least this."""


@dataclass(frozen=True, slots=True)
class WorldOptions:
    """How the simulated user, agent and judge behave."""

    feedback_share: float = 0.3  # share of sessions whose agent rates injected memories
    judge_noise: float = 0.1  # sd of the judge's per-memory error
    judge_recency_bias: float = 0.0  # added to the ratings of young memories
    prompts: tuple[int, int] = (10, 20)  # prompts per session, at least and at most
    young_days: float = DEFAULT_CONFIG.drift_recent_days  # younger memories get the bias


class SyntheticWorld:
    """The persona's sessions, prompts and ratings, from the store's planted truth."""

    def __init__(
        self,
        persona: Persona,
        truth: MemoryTruth,
        opts: WorldOptions = WorldOptions(),
        meta: dict[str, str] | None = None,
    ) -> None:
        self.persona, self.truth, self.opts = persona, truth, opts
        self.tz: str = persona.tz
        self.now: datetime = truth.now
        self._index = {m: i for i, m in enumerate(truth.ids)}
        self.meta = meta or {}  # the store's `synth_persona` rows (its embedder)
        self._embedder: Embedder | None | bool = False  # False: not looked up yet

    @classmethod
    def load(
        cls, store: str | Path | sqlite3.Connection, opts: WorldOptions = WorldOptions()
    ) -> SyntheticWorld:
        """The world of a synthetic store (its persona, truth tables and embedder)."""
        persona, truth = load_truth(store)
        return cls(persona, truth, opts, read_synth_meta(store))

    def embed_query(self, text: str) -> np.ndarray | None:
        """The text's embedding by the embedder the store's memories were embedded with
        (`query_embedder`; None without one)."""
        if self._embedder is False:
            self._embedder = query_embedder(self.meta)
        emb = self._embedder
        if not isinstance(emb, Embedder):
            return None
        return np.asarray(emb.embed([text])[0], dtype=np.float32)

    def prompt_relevance(
        self, plan: SessionContext, about: PromptTopic, memory_ids: Sequence[str] | np.ndarray
    ) -> np.ndarray:
        """The planted relevance of `memory_ids` to one prompt of session `plan`
        (`truth.prompt_relevance`)."""
        return prompt_relevance(self.truth, plan, about)[self.positions(memory_ids)]

    def positions(self, memory_ids: Sequence[str] | np.ndarray) -> np.ndarray:
        """Indices of `memory_ids` in the truth (KeyError for an unknown id)."""
        return np.fromiter((self._index[m] for m in memory_ids), dtype=np.int64)

    def relevance(self, plan: SessionContext, memory_ids: Sequence[str] | np.ndarray) -> np.ndarray:
        """The planted relevance of `memory_ids` to session `plan` at its start."""
        return true_relevance(self.truth, plan)[self.positions(memory_ids)]

    def topic_entities(self, plan: SessionContext) -> list[str]:
        """The names of the entities the session's focus topic makes focal (none without a
        knowledge graph): what its prompts and transcript name."""
        graph = self.truth.graph
        return [] if graph is None else graph.topic_names(plan.project, plan.focus_topic)

    def plan(self, n: int, seed: int) -> list[SessionContext]:
        """The first `n` sessions from the store's reference now on (`plans.plan_sessions`)."""
        return plan_sessions(self.persona, n, start=self.now, seed=seed)

    def prompts(
        self, plan: SessionContext, injected: Sequence[str], rng: np.random.Generator
    ) -> list[Prompt]:
        """`prompts` (10-20) prompts about the focus topic, two minutes apart; on a
        `feedback_share` of the sessions, the agent rates up to `AGENT_RATINGS_PER_PROMPT` of
        the `injected` memories after each one (`judge.agent_ratings`)."""
        lo, hi = self.opts.prompts
        n = int(rng.integers(lo, hi + 1))
        rate = rng.random() < self.opts.feedback_share
        truth = true_relevance(self.truth, plan) if rate else None
        shown = np.asarray(injected, dtype=str)
        out = []
        planned = planned_prompts(plan, n, rng, entities=self.topic_entities(plan))
        for j, (text, about) in enumerate(planned):
            feedback = _ratings(truth, shown, self.positions, rng) if truth is not None else {}
            out.append(Prompt(text, plan.start + PROMPT_GAP * (j + 1), feedback, about, rate))
        return out

    def rate(
        self, plan: SessionContext, shown: Sequence[str], rng: np.random.Generator
    ) -> dict[str, float]:
        """The agent's ratings of up to `AGENT_RATINGS_PER_PROMPT` of `shown` (memories the
        session's prompts injected), drawn as `prompts` draws those of session start's."""
        truth = true_relevance(self.truth, plan)
        return _ratings(truth, np.asarray(shown, dtype=str), self.positions, rng)

    def judge(self, plan: SessionContext, view: SessionView, rng: np.random.Generator) -> Judgement:
        """The continuity judge (`judge.judge_ratings`): it rates the memories the transcript
        shows and its second pass's pool, counts the re-explanations it notices
        (`judge.novel_context_count`), and scores the session by the injected memories'
        ratings, with its own noise and confidence."""
        opts = self.opts
        truth = self.relevance(plan, view.memory_ids)
        young = plan.start.timestamp() - view.created_s < opts.young_days * 86400
        rel = judge_ratings(
            truth,
            view.injected,
            view.recalled,
            rng,
            noise=opts.judge_noise,
            pool=view.pool,
            recency_bias=opts.judge_recency_bias,
            young=young,
        )
        inj_rel = rel[view.injected]
        score = float(np.clip(inj_rel.mean() + rng.normal(0, 0.05), 0, 1)) if len(inj_rel) else 0.0
        confidence = float(np.clip(rng.normal(0.75, 0.15), 0.2, 1.0))
        novel = novel_context_count(truth, view.injected, view.recalled, rng)
        used = int(np.count_nonzero(inj_rel >= USED_RELEVANCE))
        n_rated = int(np.count_nonzero(~np.isnan(rel)))
        header = _transcript(plan, self.topic_entities(plan))
        return Judgement(
            relevance=rel,
            score=score,
            confidence=confidence,
            novel_context_count=novel,
            memories_used=used,
            end=plan.start + PROMPT_GAP * (opts.prompts[1] + 2),
            reasoning=f"simulated judge: {used}/{len(inj_rel)} injected memories were relevant",
            continuity_reasoning=f"rated {n_rated} memories (injected, recalled by a prompt, "
            f"or in the evaluation pool); noise sd {opts.judge_noise}, {SILENT_NOISE_FACTOR:g}x "
            f"for those no prompt recalled; recency bias {opts.judge_recency_bias}",
            transcript=header,
            conversation=_conversation(header, view, truth),
        )


def query_embedder(meta: dict[str, str]) -> Embedder | None:
    """The embedder a synthetic store's `synth_persona` rows name: the seeded topic embedder
    at the store's seed and dimension, or a registered one (wordllama); None for any other
    (an Ollama model: it is not reached from the replay) or when it cannot be loaded."""
    name = meta.get("embedder", "")
    if name == TopicEmbedder.name:
        return TopicEmbedder(int(meta.get("seed", 0)), int(meta.get("embedding_dim", 768)))
    if name.startswith("wordllama"):
        try:
            return get_embedder("wordllama")
        except EmbedderError:
            return None
    return None


def _transcript(plan: SessionContext, entities: Sequence[str]) -> str:
    """The session's transcript line: project and focus topic, and the entities it was about."""
    about = f" on {', '.join(entities)}" if entities else ""
    return f"[{plan.project}/{plan.focus_topic}] simulated session{about}"


def _conversation(header: str, view: SessionView, truth: np.ndarray) -> str:
    """The session's conversation (`text.conversation_text`): its prompts, and the injected
    memories it needed, most relevant first (empty when the view has no texts)."""
    if len(view.contents) != len(view.memory_ids):
        return ""
    needed = np.flatnonzero(view.injected & (truth >= USED_RELEVANCE))
    order = needed[np.argsort(-truth[needed], kind="stable")]
    return conversation_text(header, view.prompts, [view.contents[i] for i in order])


def _ratings(
    truth: np.ndarray, shown: np.ndarray, positions, rng: np.random.Generator
) -> dict[str, float]:
    """The agent's ratings of up to `AGENT_RATINGS_PER_PROMPT` of `shown`, drawn at random
    (`judge.agent_ratings` of their planted relevance `truth`, indexed by `positions`)."""
    if not len(shown):
        return {}
    k = min(len(shown), AGENT_RATINGS_PER_PROMPT)
    pick = rng.choice(shown, size=k, replace=False)
    scores = agent_ratings(truth[positions(pick)], rng)
    return {str(m): round(float(s), 3) for m, s in zip(pick, scores, strict=True)}
