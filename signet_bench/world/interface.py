"""What a world tells the daemon's loop (`signet_bench.replay.lifecycle`): who starts which
session when, what the user types and how the agent and the continuity judge rate; the worlds
(`world.synth`) implement `World`, the loop drives them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from signet_bench.world.synth.plans import PromptTopic, SessionContext

__all__ = ["Judgement", "Prompt", "SessionView", "World"]


@dataclass(frozen=True, slots=True)
class Prompt:
    """A user prompt of a session, when it was sent, and the agent's feedback after it (memory
    id -> rating in [-1, 1], of memories injected at the start; empty: no feedback); `about`:
    what a synthetic world planted it to be about (None: unknown), for per-prompt truth;
    `rates`: the agent rates what it was shown in this session, so after this prompt it rates
    the memories the session's prompts injected too (`World.rate`)."""

    text: str
    at: datetime
    feedback: Mapping[str, float] = field(default_factory=dict)
    about: PromptTopic | None = None
    rates: bool = False


@dataclass(frozen=True, slots=True)
class SessionView:
    """What the continuity judge is shown of a finished session: its candidates (parallel
    arrays) and, per candidate, whether it was injected, whether a prompt recalled it, whether
    the judge's second pass rates it (the comparison's evaluation pool) and when it was created
    (UTC epoch seconds); the candidates' texts and the user's prompts (empty: not shown)."""

    memory_ids: np.ndarray
    injected: np.ndarray
    recalled: np.ndarray
    pool: np.ndarray
    created_s: np.ndarray
    contents: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Judgement:
    """The judge's verdict on a session: a relevance per `SessionView` candidate (NaN: unrated)
    and Signet's `session_scores` row; `transcript` is what the summary job held (its words are
    the next sessions' start query terms) and `conversation` the session as a person reads it,
    kept in Signet's lossless `session_transcripts` (empty: none)."""

    relevance: np.ndarray
    score: float
    confidence: float
    novel_context_count: int
    memories_used: int
    end: datetime
    reasoning: str
    continuity_reasoning: str
    transcript: str
    conversation: str = ""


class World(Protocol):
    """What happens outside the daemon: who starts which session when, what the user types, how
    the agent and the continuity judge rate. Its random draws come from the session's stream
    (`rng`), so a session replays identically."""

    tz: str  # the user's time zone
    now: datetime  # when the store was made (the plan starts there)

    def plan(self, n: int, seed: int) -> list[SessionContext]:
        """The first `n` sessions of the plan drawn with `seed`."""
        ...

    def prompts(
        self, plan: SessionContext, injected: Sequence[str], rng: np.random.Generator
    ) -> list[Prompt]:
        """The session's prompts, given the memories injected at its start (sorted ids)."""
        ...

    def rate(
        self, plan: SessionContext, shown: Sequence[str], rng: np.random.Generator
    ) -> dict[str, float]:
        """The agent's ratings after a prompt (memory id -> rating in [-1, 1]) of memories the
        session's prompts injected (`shown`, sorted ids), as it rates session start's."""
        ...

    def judge(self, plan: SessionContext, view: SessionView, rng: np.random.Generator) -> Judgement:
        """The continuity judge's verdict on the finished session."""
        ...

    def embed_query(self, text: str) -> np.ndarray | None:
        """The text's embedding by the store's embedder, as the daemon embeds a prompt for
        its vector recall (None: the embedder cannot be reached; the recall is lexical)."""
        ...
