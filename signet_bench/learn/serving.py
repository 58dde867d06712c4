"""Which model serves a user: the shipped base (`learn.base`) or the user's own, and why.

Personal ranking with a user's sparse data is won by pooling across users, not by per-user
models, so the base serves by default and the per-user model (trained from the run's start: the
base, or the free ranker it gave way to on this user's sessions, `train.run_start`)
replaces it only when it has shown it is better: on the sessions it did not train on (the
held-out sessions of `learn.holdout`), the lower confidence bound of its paired per-session
NDCG@10 gain must be above zero against the base AND against the strongest free ranker
(cosine, or its hybrid with the lexical signal). The bound is the one-sided `LEVEL` percentile
bootstrap bound of the mean gain (`daemon.metrics.bootstrap_interval`, a fixed seed: the same
sessions give the same verdict). A per-user model equal to the base gains exactly 0 on every
session, so its bound is 0 and it never serves. The base earned its place on other users' data,
not on this one's: where the strongest free ranker leads the base on the same held-out sessions
with a lower bound above zero, that free ranker serves instead of the base (served "free"), so
what serves is never shown worse than the bar every model answers to.

Each hook has its own choice, judged on its own held-out rankings: session start on the held-out
sessions' starts, the user's prompts (`learn.samples.prompt_samples`) on their prompts, each
against the free rankers of its own query (for a prompt: the prompt's cosine and hybrid). One
gate over both let through a model worse at session start, since prompts outnumber session
starts about 15 to 1 (docs/concepts.md §5.1).

The choice and its reason travel as one `ServingChoice`, recorded with the run in the workbench
(`training_runs.serving`: session start's, with the prompt's under `PROMPT_KEY`) and read back
by the dashboard, which says it in one sentence per hook.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from signet_bench.daemon.metrics import bootstrap_interval

__all__ = [
    "LEVEL",
    "PROMPT_KEY",
    "Gain",
    "ServingChoice",
    "choose_served",
    "earned_alpha",
    "gain_over",
    "hook_choices",
    "served_base",
    "served_free_start",
]

LEVEL = 0.95  # one-sided: the gain's 5th bootstrap percentile
PROMPT_KEY = "user_prompt_submit"  # the prompt hook's choice inside a run's serving record
BOOTSTRAP_SEED = 0
Served = Literal["base", "per-user", "free"]
# why: "no-sessions" (nothing to train on yet), "too-few" (too few sessions to learn from),
# "shown-better" / "not-shown" (the held-out bounds decided), "base-below-free" (neither the
# per-user model nor the base is shown as good as the strongest free ranker, which serves),
# "none-held-out" (no held-out ranking of this hook judged it), "free-start" (this user's
# sessions rank the free ranker above the base, so the run started there and the per-user
# model is not shown better than it: `train.run_start`)
Reason = Literal[
    "no-sessions",
    "too-few",
    "shown-better",
    "not-shown",
    "base-below-free",
    "none-held-out",
    "free-start",
]


@dataclass(frozen=True, slots=True)
class Gain:
    """The per-user model's paired held-out NDCG@10 gain over one `rival`: the mean over the
    sessions and its lower confidence bound (`LEVEL`)."""

    rival: str
    mean: float
    lower: float

    @property
    def shown(self) -> bool:
        return math.isfinite(self.lower) and self.lower > 0.0


def gain_over(candidate: np.ndarray, rival: np.ndarray, name: str, level: float = LEVEL) -> Gain:
    """The paired gain of `candidate` over `rival` (per-session NDCG@10, same sessions) and
    its one-sided lower bound at `level`."""
    diff = np.asarray(candidate, dtype=np.float64) - np.asarray(rival, dtype=np.float64)
    diff = diff[np.isfinite(diff)]
    if diff.size == 0:
        return Gain(name, math.nan, math.nan)
    mean = float(diff.mean())
    if level >= 1.0:  # certainty bounds nothing from below
        return Gain(name, mean, -math.inf)
    if not np.any(diff - diff[0]):  # alike on every session: the bound is the value itself
        return Gain(name, mean, float(diff[0]))
    lower = bootstrap_interval(diff, BOOTSTRAP_SEED, level=2.0 * level - 1.0).low
    return Gain(name, mean, float(lower))


@dataclass(frozen=True, slots=True)
class ServingChoice:
    """Which model serves (`served`), why (`reason`), on how many held-out sessions, and the
    per-user model's gain over the base and over the strongest free ranker (None when not
    judged). `needed`: the sessions a run needs to learn (with reason "too-few"). `unit`: what
    was held out, "sessions" (session start) or "prompts" (the prompt hook)."""

    served: Served
    reason: Reason
    sessions: int = 0
    over_base: Gain | None = None
    over_free: Gain | None = None
    needed: int = 0
    level: float = LEVEL
    free_over_base: Gain | None = None  # the strongest free ranker's gain over the base
    unit: str = "sessions"

    @property
    def per_user(self) -> bool:
        return self.served == "per-user"

    def sentence(self) -> str:
        """The choice and its reason in one sentence, with the figures."""
        if self.reason == "no-sessions":
            return "The shipped base serves: no session has been trained on yet."
        if self.reason == "none-held-out":
            return f"The shipped base serves: no held-out {self.unit} judged a model here."
        too_few = (
            f"{self.sessions} trainable sessions are too few to learn from (at least {self.needed})"
        )
        if self.reason == "too-few":
            return f"The shipped base serves: {too_few}."
        if self.reason == "free-start" and self.over_base is None:  # `served_free_start`
            assert self.free_over_base is not None
            lead = self.free_over_base
            return (
                f"The free ranker {lead.rival} serves: this user's session starts rank it above "
                f"the shipped base ({lead.mean:+.3f} NDCG@10 on average), and {too_few}."
            )
        assert self.over_base is not None and self.over_free is not None
        pct = f"{self.level:.0%}"  # one-sided
        start = (
            "the base" if self.over_base.rival == "base" else f"its start, {self.over_base.rival},"
        )
        figures = (
            f"on {self.sessions} held-out {self.unit} it leads {start} by "
            f"{self.over_base.mean:+.3f} NDCG@10 ({pct} lower bound {self.over_base.lower:+.3f}) "
            f"and {self.over_free.rival} by {self.over_free.mean:+.3f} "
            f"(lower bound {self.over_free.lower:+.3f})"
        )
        if self.over_base.rival == self.over_free.rival:  # its start is the strongest free ranker
            figures = (
                f"on {self.sessions} held-out {self.unit} it leads its start, "
                f"{self.over_base.rival}, the strongest free ranker, by "
                f"{self.over_base.mean:+.3f} NDCG@10 ({pct} lower bound {self.over_base.lower:+.3f})"
            )
        if self.per_user:
            return f"This user's own model serves: {figures}."
        if self.reason == "free-start":
            return (
                f"The free ranker {self.over_base.rival} serves: this user's sessions rank it "
                "above the shipped base, and this user's model is not shown better "
                f"({figures})."
            )
        if self.served == "free" and self.free_over_base is not None:
            lead = self.free_over_base
            return (
                f"The free ranker {self.over_free.rival} serves: on {self.sessions} held-out "
                f"{self.unit} it leads the shipped base by {lead.mean:+.3f} NDCG@10 ({pct} lower "
                f"bound {lead.lower:+.3f}), and this user's model is not shown better ({figures})."
            )
        return (
            f"The shipped base serves: this user's model is not shown better ({figures}; both "
            "lower bounds must be above 0)."
        )

    def record(self) -> dict[str, Any]:
        """The choice as plain data (the workbench keeps it as JSON; NaN as null)."""
        out = asdict(self)
        for key in ("over_base", "over_free", "free_over_base"):
            if out[key] is not None:
                out[key] = {k: _finite_or_none(v) for k, v in out[key].items()}
        out["sentence"] = self.sentence()
        return out

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> ServingChoice:
        """The choice `record` wrote."""

        def gain(d: dict[str, Any] | None) -> Gain | None:
            if d is None:
                return None
            return Gain(d["rival"], _nan_if_none(d["mean"]), _nan_if_none(d["lower"]))

        return cls(
            served=data["served"],
            reason=data["reason"],
            sessions=int(data["sessions"]),
            over_base=gain(data.get("over_base")),
            over_free=gain(data.get("over_free")),
            free_over_base=gain(data.get("free_over_base")),
            needed=int(data.get("needed", 0)),
            level=float(data.get("level", LEVEL)),
            unit=str(data.get("unit", "sessions")),
        )


def _finite_or_none(v: Any) -> Any:
    return None if isinstance(v, float) and math.isnan(v) else v


def _nan_if_none(v: Any) -> float:
    return math.nan if v is None else float(v)


def served_base(reason: Reason, sessions: int = 0, needed: int = 0) -> ServingChoice:
    """The base serves without a held-out judgement (`reason`: no sessions, or too few)."""
    return ServingChoice("base", reason, sessions, needed=needed)


def served_free_start(free: str, lead: float, sessions: int, needed: int) -> ServingChoice:
    """The free ranker named `free` serves without a held-out judgement: this user's session
    starts rank it `lead` NDCG@10 above the base (`train.run_start`), and the run has too few
    sessions to learn from."""
    gain = Gain(free, lead, math.nan)
    return ServingChoice("free", "free-start", sessions, needed=needed, free_over_base=gain)


def hook_choices(record: dict[str, Any] | None) -> dict[str, ServingChoice]:
    """A run's serving record (`training_runs.serving`) as each hook's choice: "session_start"
    and, where the run judged prompts, `PROMPT_KEY` (a record written before prompts had their
    own choice holds session start's alone)."""
    if record is None:
        return {}
    out = {"session_start": ServingChoice.from_record(record)}
    if record.get(PROMPT_KEY) is not None:
        out[PROMPT_KEY] = ServingChoice.from_record(record[PROMPT_KEY])
    return out


def choose_served(
    candidate: np.ndarray,
    base: np.ndarray,
    heuristics: dict[str, np.ndarray],
    level: float = LEVEL,
    unit: str = "sessions",
    start: str = "base",
) -> ServingChoice:
    """The per-user model serves only when its gain's lower bound (one-sided, `level`) is
    above 0 against the base and against the strongest free ranker (the best mean of
    `heuristics`); else the base, unless that free ranker's lead over the base has a lower
    bound above 0 (then it serves); all arrays are per held-out session NDCG@10 (module doc).
    `start`: "base", or the free ranker the run started at in its place (`train.run_start`),
    whose NDCG@10 `base` then holds and which serves unless the per-user model is shown
    better ("free-start")."""
    strongest = max(heuristics, key=lambda k: (float(np.mean(heuristics[k])), k))
    over_base = gain_over(candidate, base, start, level)
    over_free = gain_over(candidate, heuristics[strongest], strongest, level)
    shown = over_base.shown and over_free.shown
    free_over_base = (
        None if start != "base" else gain_over(heuristics[strongest], base, "base", level)
    )
    served: Served = "per-user" if shown else "base"
    reason: Reason = "shown-better" if shown else "not-shown"
    if not shown and start != "base":
        served, reason = "free", "free-start"
    elif not shown and free_over_base is not None and free_over_base.shown:
        served, reason = "free", "base-below-free"
    return ServingChoice(
        served,
        reason,
        int(np.asarray(candidate).size),
        over_base,
        over_free,
        level=level,
        free_over_base=free_over_base if reason == "base-below-free" else None,
        unit=unit,
    )


def earned_alpha(model: np.ndarray, baseline: np.ndarray) -> float:
    """The baseline's RRF weight a model has earned against the baseline order on held-out
    sessions (per-session NDCG@10 of each): the share of the sessions the baseline wins, ties
    counting half. It is the daemon's own `1 - success_rate` (docs/specification.md §3.4),
    measured where the model was judged, so a base that beats the baseline on most of its
    held-out sessions gives the baseline little weight from the user's first session on."""
    m, b = np.asarray(model, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    if m.size == 0:
        return 1.0
    return float(np.mean((b > m) + 0.5 * (b == m)))
