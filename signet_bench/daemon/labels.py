"""The one label function: per-candidate training/evaluation labels for one session.

Training, comparison and analysis all call `compute_labels` (or a rule set from
`LABEL_RULESETS`), so a label means the same thing everywhere.

Rule set "seed" (docs/specification.md §5.1, §5.2), first matching rule wins:

1. ``deleted_after_injection`` — injected this session and deleted within
   ``deleted_after_injection_hours`` (24 h) of the injection: ``deleted_after_injection_label`` (−0.5).
2. ``superseded`` — ``superseded_label`` (−0.3).
3. ``agent_feedback`` — an agent relevance score is present (docs/specification.md §5.2):
   ``0.7·agent + 0.2·fts_adjustment(hits) + 0.1·continuity``, clamped to [−1, 1], where
   ``fts_adjustment = min(1, fts_overlap_per_hit·hits)`` (0.3 per hit: Signet's per-memory
   ``fts_overlap_score``) and the continuity modifier is the *session* continuity score. If
   the agent did not rate the memory as harmful (agent >= 0) and FTS matched it at least
   ``fts_missed_min_hits`` (2) times, the label is raised to at least
   ``agent_fts_bump_label`` (0.3: "agent may not have noticed its influence"). The formula
   decides, not the addendum's example "scored 0.8 by agent but never FTS-matched: keep 0.8":
   the formula gives 0.7·0.8 + 0 + 0.1·continuity = 0.56–0.66, and only the formula keeps the
   three weights the addendum exposes as config meaningful. What the example illustrates holds
   under the formula: no FTS match is no penalty (its term adds 0, nothing is subtracted).
4. Injected (the continuity path): base = the per-memory judge relevance when present
   (``injected_relevance``, used in high *and* low sessions: the judge rated this very memory);
   otherwise the session continuity score when it is >= ``high_continuity_threshold`` (0.5,
   ``injected_high_session``), else continuity × ``low_session_multiplier`` (0.5,
   ``injected_low_session``). Then: matched by FTS at least once → ``+fts_confirmed_boost``
   (0.1) capped at 1.0 (``+fts_confirmed``); never matched and session continuity <
   ``fts_unmatched_max_continuity`` (0.3) → ``−fts_unmatched_penalty`` (0.1) floored at 0.0
   (``+fts_unmatched``): both signals say "not useful", which makes a true negative, not a
   harmful memory — negative labels stay reserved for explicit harm (rules 1–3).
   Then the edited modifier (below).
5. Not injected:
   - similarity label: cosine(memory, session context) > ``negative_similarity_threshold``
     (0.6) → ``soft_negative_label`` 0.25 (``soft_negative``), else ``true_negative_label`` 0.0
     (``true_negative``; also when the memory has no embedding, cosine NaN);
   - FTS hits >= ``fts_missed_min_hits`` (2): ``max(fts_missed_label 0.6, similarity label)``
     (``fts_missed``);
   - missing context (``missing_context``): the session had ``novel_context_count > 0`` (the
     user re-explained things) *and* this memory is evidence of what was missing — FTS matched
     it at least once, or the judge rated it >= ``high_continuity_threshold``. The label is
     ``max(missing_context_label, min(1, evidence + novel_context_boost))`` where evidence is
     the label from the two rules above, or the judge's rating when higher. So the 0.7 default
     and the +0.1 novel-context boost are one rule: 0.7 is the floor ("0.7 default") and the
     boost only matters when the evidence is already above 0.6 ("or higher when the continuity
     scorer marks them as clearly missing context"), e.g. judge 0.9 → 1.0;
   - then ``access_count > access_count_high`` (10) → ``+access_count_boost`` (0.05), capped at
     1.0 (``+access_boost``), then the edited modifier.

Edited modifier (docs/specification.md §5.3: "Memory edited/updated recently: +0.05 to label", from
``memory_history``): ``edited_recently`` → ``+edited_boost`` (0.05), capped at 1.0
(``+edited_boost``). "Recently" is an in-place update within ``edited_recent_days`` (7, the
specification's own "recent") before the session end (`edited_recently`). It is one of the
specification's "lower weight, supplementary" behavioural signals, so it adjusts rules 4 and 5
(rules 4 and 5) and nothing else: explicit harm (rules 1–2) outranks it (an edited memory that
was then superseded is still outdated), and the addendum's combined label (rule 3) is a closed
formula over the agent's own rating. It is not an inclusion signal on its own.

Current Signet's in-session signals (both default to "none", so a 0.58 store's labels do not
change):

- Recalls (``recall_count``): a recall that brought the memory into the session after it
  started — the prompt-time search or the agent's own ``memory_search`` — recorded once per
  context epoch in ``session_recall_events`` (session start's own claims of what it injected
  are no recall: the loader leaves them out). It is the same evidence as a prompt-time FTS hit, so the rules
  above read the session's *hits* as ``max(fts_hit_count, recall_count)``: the larger count,
  not the sum, because one prompt-time search may record both. Where recalls raised the count,
  the reason carries ``+recalled``.
- Path reward (``path_reward``): the behavioural reward the agent's feedback on a graph path
  records in ``path_feedback_events.reward`` (Signet's own weights: forward citation 1.0,
  update after retrieval 0.5, downstream creation 0.6, dead end −0.15). It says whether the
  session *used* the memory, as the FTS term of the combined label does, so rule 3 adds it to
  that term: ``usage = clamp(fts_adjustment(hits) + path_reward, −1, 1)`` in place of
  ``fts_adjustment(hits)`` (reason ``+path_reward``). Path feedback always comes with the
  agent's rating, so it enters only where rule 3 applies.

What was injected (``was_injected``) is what the agent was shown. On current Signet the
session-start hook may run through the workbench's wrapper, which prints the scorer's choice in
place of Signet's and records it (`store.hook_log`); Signet's ``session_memories.was_injected``
still says what Signet chose. The sample assembly (`learn.samples.shown_candidates`, the one
path of both release lines) therefore reads, per session:

- the wrapper served it (its record holds the scorer's injections for the session key, and
  agent where the store keeps agent ids): exactly the wrapper's memories are injected; the ones
  Signet chose and the wrapper did not show are not injected (labelled by rule 5, so the
  judge's rating of a memory that was not shown is missing-context evidence, not a reward);
- a memory the wrapper injected that has no candidate row of the session (Signet's answer can
  hold memories its candidate recording lacks) was shown all the same: it joins the session's
  candidates as injected, after Signet's start pool, with no judge or agent rating of its own
  (neither can exist without a row), so rule 4 labels it from the session's continuity score
  and any recall that brought it back, like an injected memory the judge did not rate;
- the wrapper failed open (it printed Signet's output) or left no record: Signet's
  ``was_injected``, which is what was shown. Without a record file every label is the store's.

Poisoning guard (docs/specification.md §5.3): FTS hit counts enter only through saturating terms
— rule 4's boost is the same for 1 or 50 hits and capped at 1.0, rule 5 caps FTS-only evidence
at 0.6 (0.7 with novel context) whatever the count, and rule 3's ``fts_adjustment``
saturates at 1.0 (4 hits), so FTS contributes at most 0.2 there (and so does the usage term
with a path reward added). Recalls count as hits and meet the same caps. Stuffing a memory
with frequent words cannot push its label past these caps.

Which candidates enter training (``include``): every candidate with a signal of its own —
injected, matched by FTS or recalled, missing context, superseded, deleted after injection, rated by the
agent — plus negatives sampled from the remaining non-injected candidates at
``negative_sampling_ratio`` (3) negatives per positive (a signal candidate with label > 0).
A candidate the knowledge graph alone brought (source 'ka_traversal') is sampled like any
other: kept out of the negatives, such candidates entered training only through a signal of
their own, mostly a positive one, and the scorer learned that the traversal flag means
"relevant" (docs/concepts.md §3 has the measurements).
Sampling draws without replacement from the pool sorted by memory id, with the given
``np.random.Generator``, so it does not depend on input order.

Reason codes (``reason``) are a base code from the list above, followed by ``+modifier`` codes
(``fts_confirmed``, ``fts_unmatched``, ``access_boost``, ``edited_boost``, ``agent_fts_bump``);
the dashboard splits on ``+``.

Rule set "signet-0.58" (`signet058_labels`) reproduces Signet 0.58.1's Rust trainer
(``data.rs compute_label``) for comparison; see its docstring. It knows neither recalls nor
path rewards (Signet 0.58 records neither). Its one constant that the specification
never names, `SIGNET058_FTS_SINGLE_LABEL`, stays here as Signet's (it is not a tunable of the
specification).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import KW_ONLY, dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig
from signet_bench.daemon.ranking.baseline import SECONDS_PER_DAY

__all__ = [
    "BASE_REASONS",
    "LABEL_RULESETS",
    "MODIFIER_REASONS",
    "SIGNET058_FTS_SINGLE_LABEL",
    "LabelResult",
    "LabelRuleset",
    "SessionLabelInput",
    "compute_labels",
    "edited_recently",
    "fts_adjustment",
    "label_spread",
    "ratings",
    "seed_labels",
    "session_skip_reason",
    "session_trainable",
    "signet058_labels",
]

# Signet 0.58.1 data.rs: a not-injected memory matched by FTS exactly once gets 0.3.
SIGNET058_FTS_SINGLE_LABEL = 0.3
# Float slack for the spread gate: labels 0.5 and 0.6 are 0.1 apart, not 0.0999...
_SPREAD_TOL = 1e-9

BASE_REASONS: tuple[str, ...] = (
    "deleted_after_injection",
    "superseded",
    "agent_feedback",
    "injected_relevance",
    "injected_high_session",
    "injected_low_session",
    "fts_missed",
    "fts_single",  # signet-0.58 only
    "missing_context",
    "soft_negative",
    "true_negative",
)
MODIFIER_REASONS: tuple[str, ...] = (
    "fts_confirmed",
    "fts_unmatched",
    "access_boost",
    "edited_boost",
    "agent_fts_bump",
    "recalled",
    "path_reward",
    "novel_context",  # signet-0.58 only
)


def _float_array(name: str, values: ArrayLike, n: int) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim == 0:
        a = np.full(n, float(a))
    if a.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {a.shape}")
    return a


def _bool_array(name: str, values: ArrayLike, n: int) -> np.ndarray:
    a = np.asarray(values)
    if a.ndim == 0:
        a = np.full(n, bool(a))
    if a.shape != (n,):
        raise ValueError(f"{name}: expected shape ({n},), got {a.shape}")
    return a.astype(bool)


def _int_array(name: str, values: ArrayLike, n: int) -> np.ndarray:
    a = _float_array(name, values, n)
    if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a != np.floor(a)):
        raise ValueError(f"{name}: expected non-negative whole numbers")
    return a.astype(np.int64)


@dataclass(frozen=True, slots=True)
class SessionLabelInput:
    """One session's candidates (parallel arrays) plus the session-level judge outputs.

    Every per-memory field takes any array-like of one value per memory id, or a scalar that
    stands for all of them; the constructor turns them into numpy arrays of the commented dtype
    and rejects other shapes. Absent per-memory values default to NaN (`relevance_score`,
    `agent_relevance_score`, `cosine_to_context`, `deleted_at_hours_after_injection`), zero
    counts, or False (`superseded`, `edited_recently`: see `edited_recently`); `path_reward`
    defaults to NaN (no path feedback).
    """

    memory_ids: np.ndarray  # str, shape (n,)
    was_injected: np.ndarray  # bool
    _: KW_ONLY
    continuity_score: float  # session_scores.score in [0, 1]
    confidence: float = math.nan  # session_scores.confidence, NaN if absent
    novel_context_count: int = 0
    relevance_score: np.ndarray = math.nan  # float, judge's per-memory relevance in [0, 1]
    fts_hit_count: np.ndarray = 0  # int >= 0
    agent_relevance_score: np.ndarray = math.nan  # float in [-1, 1]
    cosine_to_context: np.ndarray = math.nan  # float, NaN if the memory has no embedding
    superseded: np.ndarray = False  # bool
    deleted_at_hours_after_injection: np.ndarray = math.nan  # float, NaN if not deleted
    access_count: np.ndarray = 0  # int >= 0
    edited_recently: np.ndarray = False  # bool
    recall_count: np.ndarray = 0  # int >= 0, recalls that brought it into the session
    path_reward: np.ndarray = math.nan  # float, path feedback's behavioural reward

    def __post_init__(self) -> None:
        n = len(self.memory_ids)
        ids = np.asarray(self.memory_ids, dtype=str)
        if ids.shape != (n,):
            raise ValueError(f"memory_ids: expected a flat sequence, got shape {ids.shape}")
        if len(set(ids.tolist())) != n:
            raise ValueError("memory_ids: duplicate memory id in one session")
        set_ = object.__setattr__
        set_(self, "memory_ids", ids)
        set_(self, "was_injected", _bool_array("was_injected", self.was_injected, n))
        set_(self, "superseded", _bool_array("superseded", self.superseded, n))
        set_(self, "edited_recently", _bool_array("edited_recently", self.edited_recently, n))
        rel = _float_array("relevance_score", self.relevance_score, n)
        # Signet clamps the judge's per-memory relevance to [0, 1] when it writes it.
        set_(self, "relevance_score", np.where(np.isnan(rel), np.nan, np.clip(rel, 0.0, 1.0)))
        agent = _float_array("agent_relevance_score", self.agent_relevance_score, n)
        if np.any(np.isinf(agent)):
            raise ValueError("agent_relevance_score: infinite value")
        set_(self, "agent_relevance_score", np.clip(agent, -1.0, 1.0))
        set_(
            self, "cosine_to_context", _float_array("cosine_to_context", self.cosine_to_context, n)
        )
        set_(
            self,
            "deleted_at_hours_after_injection",
            _float_array(
                "deleted_at_hours_after_injection", self.deleted_at_hours_after_injection, n
            ),
        )
        set_(self, "fts_hit_count", _int_array("fts_hit_count", self.fts_hit_count, n))
        set_(self, "access_count", _int_array("access_count", self.access_count, n))
        set_(self, "recall_count", _int_array("recall_count", self.recall_count, n))
        reward = _float_array("path_reward", self.path_reward, n)
        if np.any(np.isinf(reward)):
            raise ValueError("path_reward: infinite value")
        set_(self, "path_reward", reward)
        c = float(self.continuity_score)
        if not 0.0 <= c <= 1.0:
            raise ValueError(f"continuity_score: {c!r} is not in [0, 1]")
        set_(self, "continuity_score", c)
        set_(self, "confidence", float(self.confidence))
        novel = int(self.novel_context_count)
        if novel < 0:
            raise ValueError(f"novel_context_count: {novel} is negative")
        set_(self, "novel_context_count", novel)

    @classmethod
    def build(
        cls, memory_ids: ArrayLike, was_injected: ArrayLike, **columns: Any
    ) -> SessionLabelInput:
        """The constructor under its older name (same arguments)."""
        return cls(memory_ids, was_injected, **columns)  # type: ignore[arg-type]

    def __len__(self) -> int:
        return len(self.memory_ids)

    @property
    def hits(self) -> np.ndarray:
        """The session's evidence count per memory: FTS hits or recalls, whichever is more."""
        return np.maximum(self.fts_hit_count, self.recall_count)


@dataclass(frozen=True, slots=True)
class LabelResult:
    """Per-candidate labels in [−1, 1], reason codes, and the training-inclusion mask."""

    labels: np.ndarray  # float64, shape (n,)
    reason: np.ndarray  # str, shape (n,): base code + "+modifier" codes
    include: np.ndarray  # bool, shape (n,)
    ruleset: str


class LabelRuleset(Protocol):
    """A label rule set: same call shape as `seed_labels`."""

    def __call__(
        self,
        inp: SessionLabelInput,
        cfg: PredictorConfig = ...,
        *,
        rng: np.random.Generator | None = ...,
    ) -> LabelResult: ...


def fts_adjustment(
    hits: int | np.ndarray, cfg: PredictorConfig = DEFAULT_CONFIG
) -> np.ndarray | float:
    """The FTS adjustment for one memory (docs/specification.md §5.2): min(1, 0.3·hits), Signet's
    fts_overlap_score."""
    return np.minimum(1.0, cfg.fts_overlap_per_hit * np.asarray(hits, dtype=np.float64))


def edited_recently(
    edited_at: Sequence[np.ndarray], at_epoch: float, cfg: PredictorConfig = DEFAULT_CONFIG
) -> np.ndarray:
    """Per memory: an in-place update (``memory_history.event = 'updated'``, epoch seconds in
    ``edited_at[i]``) within ``edited_recent_days`` up to ``at_epoch`` (both ends included).

    Pass the session end: edits made during the session count, later ones never do, so a
    replay labels a session the same whenever it runs."""
    at = float(at_epoch)
    since = at - cfg.edited_recent_days * SECONDS_PER_DAY
    out = np.zeros(len(edited_at), dtype=bool)
    for i, times in enumerate(edited_at):
        if len(times):  # most memories were never edited
            t = np.asarray(times, dtype=np.float64)
            out[i] = bool(np.any((t >= since) & (t <= at)))
    return out


def _deleted_after_injection(inp: SessionLabelInput, cfg: PredictorConfig) -> np.ndarray:
    h = inp.deleted_at_hours_after_injection
    with np.errstate(invalid="ignore"):
        return inp.was_injected & (h >= 0.0) & (h <= cfg.deleted_after_injection_hours)


def _injected_base(rel: float, cont: float, cfg: PredictorConfig) -> tuple[float, str]:
    """An injected memory's label before FTS adjustments (both rule sets): the judge's
    per-memory relevance, else the session's own base (`_session_base`)."""
    if not math.isnan(rel):
        return rel, "injected_relevance"
    return _session_base(cont, cfg)


def _session_base(cont: float, cfg: PredictorConfig) -> tuple[float, str]:
    """An injected memory's label without a judged relevance: the session's continuity,
    scaled down in a low session."""
    if cont >= cfg.high_continuity_threshold:
        return cont, "injected_high_session"
    return cont * cfg.low_session_multiplier, "injected_low_session"


def _least(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """Python's `min(a, b)` element by element (b only where it is below a)."""
    return np.where(np.less(b, a), b, a)


def _most(a: np.ndarray | float, b: np.ndarray | float) -> np.ndarray:
    """Python's `max(a, b)` element by element (b only where it is above a)."""
    return np.where(np.greater(b, a), b, a)


class _Reasons:
    """Per-candidate reason codes built up rule by rule: a base code, then "+modifier"s."""

    def __init__(self, n: int) -> None:
        self.codes: list[str] = [""] * n

    def set(self, where: np.ndarray, code: str) -> None:
        for i in np.flatnonzero(where).tolist():
            self.codes[i] = code

    def add(self, where: np.ndarray, code: str) -> None:
        for i in np.flatnonzero(where).tolist():
            self.codes[i] += code


@dataclass(frozen=True, slots=True)
class _Rules:
    """What every seed rule reads: the session's inputs, its FTS evidence (`inp.hits`, computed
    once), the config, and the reason codes the rules write."""

    inp: SessionLabelInput
    hits: np.ndarray
    cfg: PredictorConfig
    reasons: _Reasons


def _agent_rule(at: _Rules, rows: np.ndarray) -> np.ndarray:
    """Rule 3 (docs/specification.md §5.2) for the candidates `rows`: the agent's rating blended
    with the session's usage evidence (FTS hits, plus a path reward when there is one) and its
    continuity."""
    inp, hits, cfg, reasons = at.inp, at.hits, at.cfg, at.reasons
    agent = inp.agent_relevance_score
    reward = inp.path_reward
    usage = np.asarray(fts_adjustment(hits, cfg), dtype=np.float64)
    rewarded = ~np.isnan(reward)
    usage = np.where(rewarded, _least(1.0, _most(-1.0, usage + reward)), usage)
    reasons.set(rows, "agent_feedback")
    reasons.add(rows & rewarded, "+path_reward")
    label = (
        cfg.feedback_weight * agent
        + cfg.fts_weight * usage
        + cfg.continuity_weight * inp.continuity_score
    )
    bump = cfg.agent_fts_bump_label
    bumped = (agent >= 0.0) & (hits >= cfg.fts_missed_min_hits) & (label < bump)
    label = np.where(bumped, bump, label)
    reasons.add(rows & bumped, "+agent_fts_bump")
    return _least(1.0, _most(-1.0, label))


def _injected_rule(at: _Rules, rows: np.ndarray) -> np.ndarray:
    """An injected candidate's label (for the candidates `rows`): its base (`_injected_base`),
    confirmed by an FTS hit or, in a low session, penalised without one."""
    inp, hits, cfg, reasons = at.inp, at.hits, at.cfg, at.reasons
    rel, cont = inp.relevance_score, inp.continuity_score
    judged = ~np.isnan(rel)
    base, code = _session_base(cont, cfg)
    label = np.where(judged, rel, base)
    reasons.set(rows & judged, "injected_relevance")
    reasons.set(rows & ~judged, code)
    hit = hits > 0
    label = np.where(hit, _least(1.0, label + cfg.fts_confirmed_boost), label)
    reasons.add(rows & hit, "+fts_confirmed")
    if cont < cfg.fts_unmatched_max_continuity:
        missed = ~hit
        label = np.where(
            missed, _most(cfg.true_negative_label, label - cfg.fts_unmatched_penalty), label
        )
        reasons.add(rows & missed, "+fts_unmatched")
    return label


def _other_rule(at: _Rules, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A candidate that was not injected (for the candidates `rows`): a soft or true negative by
    its cosine to the context, raised when a search found it or when it is missing context;
    (labels, missing-context flags)."""
    inp, hits, cfg, reasons = at.inp, at.hits, at.cfg, at.reasons
    soft = inp.cosine_to_context > cfg.negative_similarity_threshold  # NaN: no embedding
    label = np.where(soft, float(cfg.soft_negative_label), float(cfg.true_negative_label))
    reasons.set(rows & soft, "soft_negative")
    reasons.set(rows & ~soft, "true_negative")
    found = hits >= cfg.fts_missed_min_hits
    label = np.where(found, _most(cfg.fts_missed_label, label), label)
    reasons.set(rows & found, "fts_missed")
    rel = inp.relevance_score
    judged_missing = ~np.isnan(rel) & (rel >= cfg.high_continuity_threshold)
    missing = (inp.novel_context_count > 0) & ((hits > 0) | judged_missing)
    evidence = np.where(judged_missing, _most(label, rel), label)
    raised = _most(cfg.missing_context_label, _least(1.0, evidence + cfg.novel_context_boost))
    label = np.where(missing, raised, label)
    reasons.set(rows & missing, "missing_context")
    accessed = inp.access_count > cfg.access_count_high
    label = np.where(accessed, _least(1.0, label + cfg.access_count_boost), label)
    reasons.add(rows & accessed, "+access_boost")
    return label, missing


def _finish(
    inp: SessionLabelInput,
    labels: np.ndarray,
    reasons: list[str],
    signal: np.ndarray,
    cfg: PredictorConfig,
    rng: np.random.Generator | None,
    ruleset: str,
) -> LabelResult:
    include = signal.copy()
    pool = np.flatnonzero(~signal)
    n_pos = int(np.count_nonzero(signal & (labels > 0.0)))
    n_neg = min(len(pool), cfg.negative_sampling_ratio * n_pos)
    if n_neg > 0:
        pool = pool[np.argsort(inp.memory_ids[pool], kind="stable")]
        gen = rng if rng is not None else np.random.default_rng(0)
        include[gen.choice(pool, size=n_neg, replace=False)] = True
    return LabelResult(
        labels=np.clip(labels, -1.0, 1.0),
        reason=np.asarray(reasons, dtype=str),
        include=include,
        ruleset=ruleset,
    )


def seed_labels(
    inp: SessionLabelInput,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    *,
    rng: np.random.Generator | None = None,
) -> LabelResult:
    """Labels under docs/specification.md §5.1-§5.3 (the default rule set; see the module
    docstring).

    ``rng`` draws the 3:1 sampled negatives; ``None`` means ``np.random.default_rng(0)``.
    """
    n = len(inp)
    deleted = _deleted_after_injection(inp, cfg)
    hits = inp.hits
    reasons = _Reasons(n)
    # each candidate takes the first rule that applies to it, in the specification's order
    superseded = ~deleted & inp.superseded
    rated = ~deleted & ~inp.superseded & ~np.isnan(inp.agent_relevance_score)
    injected = ~deleted & ~inp.superseded & ~rated & inp.was_injected
    other = ~deleted & ~inp.superseded & ~rated & ~inp.was_injected
    reasons.set(deleted, "deleted_after_injection")
    reasons.set(superseded, "superseded")
    labels = np.zeros(n, dtype=np.float64)
    labels[deleted] = cfg.deleted_after_injection_label
    labels[superseded] = cfg.superseded_label
    rules = _Rules(inp, hits, cfg, reasons)
    labels[rated] = _agent_rule(rules, rated)[rated]
    late = np.zeros(n, dtype=np.float64)
    late[injected] = _injected_rule(rules, injected)[injected]
    rest, missing = _other_rule(rules, other)
    late[other] = rest[other]
    missing &= other
    edited = (injected | other) & inp.edited_recently
    late = np.where(edited, _least(1.0, late + cfg.edited_boost), late)
    reasons.add(edited, "+edited_boost")
    labels[injected | other] = late[injected | other]
    reasons.add(~deleted & ~inp.superseded & (inp.recall_count > inp.fts_hit_count), "+recalled")
    signal = (
        inp.was_injected
        | (hits > 0)
        | missing
        | inp.superseded
        | deleted
        | ~np.isnan(inp.agent_relevance_score)
    )
    return _finish(inp, labels, reasons.codes, signal, cfg, rng, "seed")


def signet058_labels(
    inp: SessionLabelInput,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    *,
    rng: np.random.Generator | None = None,  # unused: same signature as seed_labels
) -> LabelResult:
    """Labels as Signet 0.58.1's Rust trainer computes them (docs/specification.md §5.4).

    Superseded or deleted (Signet's ``is_deleted`` proxy) → −0.3. Injected: base = judge
    relevance if present, else continuity if >= 0.5, else continuity·0.5; FTS > 0 → +0.1 (cap 1),
    else continuity < 0.3 → −0.1 (floor 0). Not injected: FTS >= 2 → 0.6, FTS = 1 → 0.3, else 0;
    +0.1 (cap 1) if novel_context_count > 0 and FTS > 0; +0.05 (cap 1) if access_count > 10.
    No cosine soft negatives, no agent feedback, no deletion rule; every candidate is included
    (Signet trains on the whole candidate list).
    """
    n = len(inp)
    labels = np.zeros(n, dtype=np.float64)
    reasons: list[str] = []
    cont = inp.continuity_score
    gone = inp.superseded | ~np.isnan(inp.deleted_at_hours_after_injection)
    for i in range(n):
        hits = int(inp.fts_hit_count[i])
        rel = float(inp.relevance_score[i])
        if gone[i]:
            label, reason = cfg.superseded_label, "superseded"
        elif inp.was_injected[i]:
            label, reason = _injected_base(rel, cont, cfg)
            if hits > 0:
                label = min(1.0, label + cfg.fts_confirmed_boost)
                reason += "+fts_confirmed"
            elif cont < cfg.fts_unmatched_max_continuity:
                label = max(0.0, label - cfg.fts_unmatched_penalty)
                reason += "+fts_unmatched"
        else:
            if hits >= cfg.fts_missed_min_hits:
                label, reason = cfg.fts_missed_label, "fts_missed"
            elif hits == 1:
                label, reason = SIGNET058_FTS_SINGLE_LABEL, "fts_single"
            else:
                label, reason = 0.0, "true_negative"
            if inp.novel_context_count > 0 and hits > 0:
                label = min(1.0, label + cfg.novel_context_boost)
                reason += "+novel_context"
            if inp.access_count[i] > cfg.access_count_high and label < 1.0:
                label = min(1.0, label + cfg.access_count_boost)
                reason += "+access_boost"
        labels[i] = label
        reasons.append(reason)
    return LabelResult(
        labels=np.clip(labels, -1.0, 1.0),
        reason=np.asarray(reasons, dtype=str),
        include=np.ones(n, dtype=bool),
        ruleset="signet-0.58",
    )


LABEL_RULESETS: dict[str, LabelRuleset] = {
    "seed": seed_labels,
    "signet-0.58": signet058_labels,
}


def compute_labels(
    inp: SessionLabelInput,
    cfg: PredictorConfig = DEFAULT_CONFIG,
    *,
    ruleset: str = "seed",
    rng: np.random.Generator | None = None,
) -> LabelResult:
    """Labels under a named rule set from `LABEL_RULESETS` (default: the seed rules)."""
    try:
        fn = LABEL_RULESETS[ruleset]
    except KeyError:
        known = ", ".join(sorted(LABEL_RULESETS))
        raise ValueError(f"unknown label rule set {ruleset!r} (known: {known})") from None
    return fn(inp, cfg, rng=rng)


def ratings(inp: SessionLabelInput) -> np.ndarray:
    """Per candidate, the relevance someone rated it: the agent's rating where it gave one
    (negatives are "not relevant": 0), the continuity judge's per-memory relevance otherwise,
    NaN unrated. What a held-out judgement scores rankers against (`learn.holdout`): unlike the
    labels, no rule of it comes from keyword matches, which a lexical ranker predicts by
    construction."""
    agent = np.clip(inp.agent_relevance_score, 0.0, 1.0)
    return np.where(np.isnan(agent), inp.relevance_score, agent)


def label_spread(labels: ArrayLike) -> float:
    """max − min of a session's labels (NaN ignored); 0.0 for fewer than two labels."""
    a = np.asarray(labels, dtype=np.float64)
    a = a[~np.isnan(a)]
    return float(a.max() - a.min()) if a.size >= 2 else 0.0


def session_skip_reason(
    confidence: float, labels: ArrayLike, cfg: PredictorConfig = DEFAULT_CONFIG
) -> str | None:
    """Why a session gives no training step (None if it does): confidence gate or flat labels.

    docs/specification.md §5.5: sessions with judge confidence < ``min_scorer_confidence`` (0.6; NaN
    = absent) are excluded from training, and so are sessions whose per-memory labels lie within
    ``low_label_spread`` (0.1) of each other: the judge was not sure about the ordering.
    Pass the labels that enter training (``labels[include]``).
    """
    c = float(confidence)
    if math.isnan(c) or c < cfg.min_scorer_confidence:
        return f"confidence {c:.3g} < {cfg.min_scorer_confidence:g}"
    spread = label_spread(labels)
    if spread < cfg.low_label_spread - _SPREAD_TOL:
        return f"label spread {spread:.3g} < {cfg.low_label_spread:g}"
    return None


def session_trainable(
    confidence: float, labels: ArrayLike, cfg: PredictorConfig = DEFAULT_CONFIG
) -> bool:
    """True if the session passes the confidence gate and the low-label-spread gate."""
    return session_skip_reason(confidence, labels, cfg) is None
