"""`signet-bench bench report`: `docs/benchmarks.md` regenerated from the benchmarks' JSON.

Reads every benchmark JSON document in a results folder (`bench <name> --json
DIR/<stem>.json`, stems as in `COMMANDS`), and writes one Markdown page: the machine, the exact
command behind each document, the quality tables (rankers × metrics with 95% bootstrap
intervals, per category, the paired differences), the scheduled trainings over a growing
history (a table per size) and every other benchmark's rows (latency, training). Charts are Altair specs saved as PNG through vl-convert (offline), beside the page.
Pure functions build the text and the chart specs; `write_benchmarks_doc` does the I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from signet_bench.bench.quality import BUDGET_KS, SERVED_CHOICE, SIGNET_CHOICE
from signet_bench.errors import UserError

__all__ = [
    "COMMANDS",
    "RANKER_KINDS",
    "benchmarks_markdown",
    "history_chart",
    "load_results",
    "pivot_markdown",
    "quality_chart",
    "ranker_kind",
    "recall_chart",
    "rows_markdown",
    "worst_case_chart",
    "write_benchmarks_doc",
]

# Seeds no design choice was tuned on (chosen before they were first run; 101-110 were
# looked at while the start below holdoutMinSessions was designed, 111-120 while the
# forward folds and queryMinSessions were, 121-130 while hybridStartEvidence and the
# per-checkpoint held-out sessions were, 131-140 reported the design before the knowledge
# graph, 141-150 the graph's first design and were looked at while the rule that keeps
# graph-only candidates out of the negatives was made, 151-160 reported that design and
# were looked at while the held-out judgement moved from the labels to the ratings, 161-170
# reported that one; that rule was then dropped on `bench train`'s heavy user, seed 0;
# 171-180 reported that design, and heavy 174 and 179 and multi-project 171 and 179 were
# looked at while the held-out gain evidence and the served model's demotion were designed;
# 181-190 reported that design, and heavy 183 and multi-project 185 and 190 were traced for
# the familiar-project rows; 181 and 1000 were looked at while the start of a run was moved
# off a base its user's sessions rank below the free ranker, design seeds 900-904 while that
# base was measured, and 900, 901 and 1000 while the base was made to give way from 5 session
# starts); the personas the worst case is reported for. 1001-1010 were chosen before that
# design was measured; 1001-1006 report it (6 seeds of 3 personas take some 80 min on 2 cores).
UNSEEN_SEEDS = "1001,1002,1003,1004,1005,1006"
UNSEEN_PERSONAS = ("heavy", "drifting", "multi-project")
# 300 sessions: 40-45 min per persona on 2 cores, shared; 171-173 reported the design before
# the held-out gain evidence
UNSEEN_SEEDS_300 = "181,182,183"
GRAPH_PERSONA = "architect"  # the persona with a knowledge graph
COMMANDS: Mapping[str, str] = {
    "quality-locomo": "signet-bench bench quality --dataset locomo "
    "--data ../shared/data/locomo/locomo7.json --json {dir}/quality-locomo.json",
    "quality-locomo-random": "signet-bench bench quality --dataset locomo "
    "--data ../shared/data/locomo/locomo7.json --split random "
    "--json {dir}/quality-locomo-random.json",
    "quality": "signet-bench bench quality --personas heavy,drifting --seeds 11,12,13 "
    "--embedder wordllama --json {dir}/quality.json",
    **{
        f"quality-unseen-{p}": f"signet-bench bench quality --personas {p} "
        f"--seeds {UNSEEN_SEEDS} --checkpoints 10,25,50,100 --no-ablations --embedder wordllama "
        f"--json {{dir}}/quality-unseen-{p}.json"
        for p in UNSEEN_PERSONAS
    },
    **{
        f"quality-unseen-300-{p}": f"signet-bench bench quality --personas {p} "
        f"--seeds {UNSEEN_SEEDS_300} --checkpoints 300 --no-ablations --embedder wordllama "
        f"--json {{dir}}/quality-unseen-300-{p}.json"
        for p in UNSEEN_PERSONAS
    },
    f"quality-{GRAPH_PERSONA}": f"signet-bench bench quality --personas {GRAPH_PERSONA} "
    "--seeds 1,2 --checkpoints 50,100 --ablations structure,effect_graph "
    f"--embedder wordllama --json {{dir}}/quality-{GRAPH_PERSONA}.json",
    "store": "signet-bench bench store --json {dir}/store.json",
    "loop": "signet-bench bench loop --json {dir}/loop.json",
    "train": "signet-bench bench train --json {dir}/train.json",
    "pairs": "signet-bench bench pairs --json {dir}/pairs.json",
    "serve": "signet-bench bench serve --json {dir}/serve.json",
    "hook": "signet-bench bench hook --json {dir}/hook.json",
    "dashboard": "signet-bench bench dashboard --browser --json {dir}/dashboard.json",
}
TITLES = {
    "quality-locomo": "Retrieval quality on LoCoMo",
    "quality-locomo-random": "LoCoMo with a random question split (an experiment, measured "
    "before the held-out gain evidence)",
    "quality": "Ranking quality on a synthetic user (measured before the knowledge graph)",
    **{f"quality-unseen-{p}": f"Worst case over unseen seeds: {p}" for p in UNSEEN_PERSONAS},
    **{f"quality-unseen-300-{p}": f"Unseen seeds after 300 sessions: {p}" for p in UNSEEN_PERSONAS},
    f"quality-{GRAPH_PERSONA}": "What the knowledge graph adds: the architect persona",
    "store": "Store",
    "loop": "Session loop latency",
    "train": "Training",
    "pairs": "The base trainer's stream of pairs",
    "serve": "Serving latency",
    "hook": "Session-start hook overhead",
    "dashboard": "Dashboard on a year of heavy use",
}
LOCOMO_METRICS = ("recall@5", "recall@10", "recall@25", "recall@50", "ndcg@10", "mrr")


def load_results(folder: str | Path) -> dict[str, dict[str, Any]]:
    """File stem -> JSON document (docs/specification.md §12), for every `*.json` of the folder
    (known stems first)."""
    docs = {}
    for path in sorted(Path(folder).glob("*.json")):
        doc = json.loads(path.read_text())
        if isinstance(doc, dict) and isinstance(doc.get("results"), list):
            docs[path.stem] = doc
    order = [s for s in COMMANDS if s in docs] + [s for s in docs if s not in COMMANDS]
    return {s: docs[s] for s in order}


def _cell(row: Mapping[str, Any], scale: float = 1.0) -> str:
    value = f"{row['value'] * scale:.4g}"
    if row.get("ci_low") is None or row.get("ci_high") is None:
        return value
    return f"{value} ({row['ci_low'] * scale:.4g}–{row['ci_high'] * scale:.4g})"


def pivot_markdown(
    rows: Sequence[Mapping[str, Any]], metrics: Sequence[str], scale: float = 1.0
) -> str:
    """A Markdown table: one line per row name (first-seen order), one column per metric, each
    cell `value (ci_low–ci_high)`; names with none of the metrics are left out."""
    cells: dict[str, dict[str, str]] = {}
    for r in rows:
        if r["metric"] in metrics:
            cells.setdefault(r["name"], {})[r["metric"]] = _cell(r, scale)
    head = "| name | " + " | ".join(metrics) + " |"
    rule = "|---|" + "---|" * len(metrics)
    body = [
        f"| {name} | " + " | ".join(c.get(m, "") for m in metrics) + " |"
        for name, c in cells.items()
    ]
    return "\n".join([head, rule, *body])


def rows_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """Every row as a line: name, metric, value (interval), unit, n."""
    lines = ["| name | metric | value (95% CI) | unit | n |", "|---|---|---|---|---|"]
    lines += [
        f"| {r['name']} | {r['metric']} | {_cell(r)} | {r.get('unit', '')} | {r.get('n', '')} |"
        for r in rows
    ]
    return "\n".join(lines)


RANKER_KINDS = ("heuristic", "learned", "experiment")


def ranker_kind(name: str) -> str:
    """A LoCoMo row's kind: a heuristic peer, a learned variant, or an experiment (not a
    result: `bench.locomo.DIAGNOSTIC`), whatever the embedder suffix."""
    # here: `bench report` starts without the benchmarks' modules
    from signet_bench.bench.quality_locomo import DIAGNOSTIC

    stem = name.removesuffix("_minilm")
    if stem in DIAGNOSTIC:
        return "experiment"
    return "learned" if stem.startswith("learned") else "heuristic"


def recall_chart(rows: Sequence[Mapping[str, Any]], metric: str = "recall@10"):
    """An Altair bar chart of `metric` per ranker with its interval as an error bar."""
    # here: `bench report` starts without altair and polars until it draws
    import altair as alt
    import polars as pl

    picked = [r for r in rows if r["metric"] == metric]
    frame = pl.DataFrame(
        {
            "ranker": [r["name"] for r in picked],
            "kind": [ranker_kind(r["name"]) for r in picked],
            "value": [float(r["value"]) for r in picked],
            "low": [float(r.get("ci_low") or r["value"]) for r in picked],
            "high": [float(r.get("ci_high") or r["value"]) for r in picked],
        }
    )
    base = alt.Chart(frame)
    order = [r["name"] for r in sorted(picked, key=lambda r: -float(r["value"]))]
    y = alt.Y("ranker:N", sort=order, title=None)
    color = alt.Color("kind:N", sort=list(RANKER_KINDS), title=None)
    bars = base.mark_bar().encode(x=alt.X("value:Q", title=metric), y=y, color=color)
    errs = base.mark_errorbar().encode(x=alt.X("low:Q", title=metric), x2="high:Q", y=y)
    return (bars + errs).properties(width=420, title=f"{metric}, held-out questions, 95% CI")


_SEED = re.compile(r"(?:^|/)seed_(\d+)/")


def _persona_of(name: str) -> str:
    """The persona prefix of a row name (`heavy/…`, `heavy/seed_7/…`), "" when there is none."""
    head = name.split("/", 1)[0] if "/" in name else ""
    return "" if head.startswith("seed_") else head


def _seed_of(name: str) -> str | None:
    """The seed of a per-seed row (`[persona/]seed_<s>/<a>-<b>`), None for a pooled row."""
    m = _SEED.search(name)
    return m.group(1) if m else None


def _by_n_markdown(
    rows: Sequence[Mapping[str, Any]], metric: str, prefix: str = "", label: str = "name"
) -> str:
    """A Markdown table of `metric`: one line per name (less the persona `prefix`) under the
    heading `label`, one column per checkpoint n."""
    picked = [r for r in rows if r["metric"] == metric and r.get("n") is not None]
    ns = sorted({int(r["n"]) for r in picked})
    cells: dict[str, dict[int, str]] = {}
    for r in picked:
        cells.setdefault(r["name"].removeprefix(prefix), {})[int(r["n"])] = _cell(r)
    head = f"| {label} | " + " | ".join(f"after {n}" for n in ns) + " |"
    rule = "|---|" + "---|" * len(ns)
    body = [f"| {k} | " + " | ".join(c.get(n, "") for n in ns) + " |" for k, c in cells.items()]
    return "\n".join([head, rule, *body])


def quality_chart(rows: Sequence[Mapping[str, Any]]):
    """An Altair line chart of NDCG@10 against the sessions learned from, per ranker and
    persona, with 95% intervals as bands."""
    # here: `bench report` starts without altair and polars until it draws
    import altair as alt
    import polars as pl

    picked = [r for r in rows if r["metric"] == "ndcg@10" and r.get("n") is not None]
    frame = pl.DataFrame(
        {
            "persona": [_persona_of(r["name"]) or "persona" for r in picked],
            "ranker": [r["name"].split("/")[-1] for r in picked],
            "sessions": [int(r["n"]) for r in picked],
            "ndcg": [float(r["value"]) for r in picked],
            "low": [float(r.get("ci_low") or r["value"]) for r in picked],
            "high": [float(r.get("ci_high") or r["value"]) for r in picked],
        }
    )
    x = alt.X("sessions:Q", scale=alt.Scale(type="log", nice=False), title="sessions learned from")
    base = alt.Chart(frame).encode(x=x, color=alt.Color("ranker:N"))
    y = alt.Y("ndcg:Q", scale=alt.Scale(zero=False), title="NDCG@10 vs planted truth")
    lines = base.mark_line(point=True).encode(y=y)
    bands = base.mark_area(opacity=0.15).encode(y="low:Q", y2="high:Q")
    return (
        (bands + lines)
        .properties(width=300, height=220)
        .facet(column=alt.Column("persona:N", title=None))
        .properties(title="Held-out sessions, 95% bootstrap intervals")
    )


WORST_METRIC = "ndcg@10_delta_worst_seed"
SHARE_METRIC = "ndcg@10_delta_share_below"
# what a worst case is of, where the difference's name does not say it
WORST_CASE_NOTES = {
    "served_familiar_only-cosine": " (a counterfactual nothing serves: the served model on the "
    "sessions of a project the history had at least 5 sessions of, cosine on the others; "
    "`bench.quality.familiar_only`)",
}


def _worst_seed(seeds: Sequence[Mapping[str, Any]], worst: Mapping[str, Any]) -> str:
    """`seed <s>: ` for the per-seed row that is the worst one, "" if none matches."""
    hits = [
        _seed_of(r["name"])
        for r in seeds
        if r.get("n") == worst.get("n") and r["value"] == worst["value"]
    ]
    return f"seed {hits[0]}: " if hits else ""


def _worst_case_markdown(rows: Sequence[Mapping[str, Any]], prefix: str) -> list[str]:
    """Per difference and checkpoint: the mean over seeds (pooled paired interval), the worst
    seed (which one, its interval) and the share of seeds below the tolerance."""
    out = []
    for name in dict.fromkeys(r["name"] for r in rows if r["metric"] == WORST_METRIC):
        short = name.removeprefix(prefix)
        seeds = [
            r
            for r in rows
            if r["metric"] == "ndcg@10_delta"
            and _seed_of(r["name"])
            and r["name"].endswith("/" + short)
        ]
        mine = {(r["metric"], int(r["n"])): r for r in rows if r["name"] == name and r.get("n")}
        ns = sorted(n for m, n in mine if m == WORST_METRIC)
        mean = [mine.get(("ndcg@10_delta", n)) for n in ns]
        worst = [mine[WORST_METRIC, n] for n in ns]
        share = [mine.get((SHARE_METRIC, n)) for n in ns]
        lines = {
            "mean over seeds": [_cell(r) if r else "" for r in mean],
            "worst seed": [_worst_seed(seeds, w) + _cell(w) for w in worst],
            "share of seeds below −0.01": [f"{r['value']:.0%}" if r else "" for r in share],
        }
        count = len({_seed_of(r["name"]) for r in seeds})
        out += [
            f"Worst case of `{short}` over {count} seeds{WORST_CASE_NOTES.get(short, '')}:",
            "",
            "| | " + " | ".join(f"after {n}" for n in ns) + " |",
            "|---|" + "---|" * len(ns),
            *(f"| {k} | " + " | ".join(v) + " |" for k, v in lines.items()),
            "",
        ]
    return ["\n".join(out).rstrip()] if out else []


def worst_case_chart(rows: Sequence[Mapping[str, Any]]):
    """An Altair line chart, per persona, of each seed's served − cosine NDCG@10 against the
    sessions learned from, with the −0.01 tolerance as a rule: the worst case at a glance."""
    # here: `bench report` starts without altair and polars until it draws
    import altair as alt
    import polars as pl

    picked = [
        r
        for r in rows
        if r["metric"] == "ndcg@10_delta"
        and _seed_of(r["name"])
        and r["name"].endswith("/predictor_served-cosine")
    ]
    frame = pl.DataFrame(
        {
            "persona": [_persona_of(r["name"]) or "persona" for r in picked],
            "seed": [_seed_of(r["name"]) for r in picked],
            "sessions": [int(r["n"]) for r in picked],
            "delta": [float(r["value"]) for r in picked],
        }
    )
    x = alt.X("sessions:Q", scale=alt.Scale(type="log", nice=False), title="sessions learned from")
    y = alt.Y("delta:Q", title="served − cosine, NDCG@10")
    lines = alt.Chart().mark_line(point=True, opacity=0.7).encode(x=x, y=y, color="seed:N")
    rule = alt.Chart().mark_rule(strokeDash=[4, 4], color="red").encode(y=alt.datum(-0.01))
    return (
        alt.layer(lines, rule, data=frame)
        .properties(width=300, height=220)
        .facet(column=alt.Column("persona:N", title=None))
        .properties(title="Each seed's served model against cosine (dashed: −0.01)")
    )


HISTORY_NAME = "scheduled_training"  # `bench train`'s rows over a growing history
HISTORY_GOALS = {"wall_s": ("wall time (s)", 10.0), "peak_mb": ("peak memory (MB)", 500.0)}
HISTORY_RANKERS = {
    "heldout_ndcg@10": "served model",
    "first_ndcg@10": "model served at the smallest size",
    "cosine_ndcg@10": "cosine",
}


def history_chart(rows: Sequence[Mapping[str, Any]]):
    """Altair charts of one scheduled training per history size: NDCG@10 of the model it
    serves, of the model served at the smallest size and of cosine on the sessions that follow
    (95% intervals), and its wall time and peak memory, each against its goal (dashed)."""
    # here: `bench report` starts without altair and polars until it draws
    import altair as alt
    import polars as pl

    picked = [r for r in rows if r["name"] == HISTORY_NAME and r.get("n") is not None]
    x = alt.X("sessions:Q", scale=alt.Scale(type="log", nice=False), title="sessions of history")
    ranked = [r for r in picked if r["metric"] in HISTORY_RANKERS]
    frame = pl.DataFrame(
        {
            "ranker": [HISTORY_RANKERS[r["metric"]] for r in ranked],
            "sessions": [int(r["n"]) for r in ranked],
            "ndcg": [float(r["value"]) for r in ranked],
            "low": [float(r.get("ci_low") or r["value"]) for r in ranked],
            "high": [float(r.get("ci_high") or r["value"]) for r in ranked],
        }
    )
    base = alt.Chart(frame).encode(x=x, color=alt.Color("ranker:N", title=None))
    title = "NDCG@10 on the next sessions (truth)"
    y = alt.Y("ndcg:Q", scale=alt.Scale(zero=False), title=title)
    errors = base.mark_errorbar().encode(y=alt.Y("low:Q", title=title), y2="high:Q")
    panels = [base.mark_line(point=True).encode(y=y) + errors]
    for metric, (title, goal) in HISTORY_GOALS.items():
        cost = pl.DataFrame(
            {
                "sessions": [int(r["n"]) for r in picked if r["metric"] == metric],
                "value": [float(r["value"]) for r in picked if r["metric"] == metric],
            }
        )
        line = alt.Chart(cost).mark_line(point=True).encode(x=x, y=alt.Y("value:Q", title=title))
        rule = alt.Chart(cost).mark_rule(strokeDash=[4, 4], color="red").encode(y=alt.datum(goal))
        panels.append(line + rule)
    return alt.hconcat(*(p.properties(width=220, height=200) for p in panels)).properties(
        title="One scheduled training per size of a heavy user's history"
    )


def _history_section(rows: Sequence[Mapping[str, Any]], chart: str | None) -> list[str]:
    """The history rows as one table (a line per metric, a column per size) beside their
    chart, then every other row of the document."""
    picked = [r for r in rows if r["name"] == HISTORY_NAME and r.get("n") is not None]
    ns = sorted({int(r["n"]) for r in picked})
    cells: dict[str, dict[int, str]] = {}
    for r in picked:
        cells.setdefault(f"{r['metric']} ({r.get('unit', '')})", {})[int(r["n"])] = _cell(r)
    table = [
        "| metric | " + " | ".join(f"{n:,} sessions" for n in ns) + " |",
        "|---|" + "---|" * len(ns),
        *(f"| {k} | " + " | ".join(c.get(n, "") for n in ns) + " |" for k, c in cells.items()),
    ]
    rest = [r for r in rows if r["name"] != HISTORY_NAME]
    out = [f"![one scheduled training per history size]({chart})"] if chart else []
    out += [
        (
            "One scheduled training per size of a heavy user's history, run as the sidecar "
            "runs it (a child process, one BLAS thread); the model it serves, the model served "
            "after the smallest size's training (`first`: more history against less, on the "
            "same sessions) and cosine are scored on the sessions that follow against the "
            "planted truth:"
        ),
        "\n".join(table),
    ]
    return out + ([rows_markdown(rest)] if rest else [])


def _quality_section(
    rows: Sequence[Mapping[str, Any]], chart: str | None, worst_chart: str | None = None
) -> list[str]:
    out = [f"![NDCG@10 per ranker and checkpoint]({chart})"] if chart else []
    if worst_chart:
        out.append(f"![served minus cosine per seed]({worst_chart})")
    for persona in dict.fromkeys(_persona_of(r["name"]) for r in rows):
        part = [r for r in rows if _persona_of(r["name"]) == persona]
        prefix = f"{persona}/" if persona else ""
        ranked = [r for r in part if "-" not in r["name"].split("/")[-1]]
        pooled = [r for r in part if _seed_of(r["name"]) is None]
        out += [
            f"#### Persona: {persona}" if persona else "#### Persona",
            (
                "NDCG@10 against the planted truth on the 150 held-out sessions that follow "
                "each checkpoint (none trained on by that checkpoint's models):"
            ),
            _by_n_markdown(ranked, "ndcg@10", prefix),
            "Paired differences:",
            _by_n_markdown(pooled, "ndcg@10_delta", prefix),
            *_worst_case_markdown(part, prefix),
            *_familiarity_markdown(pooled, prefix),
            (
                "How much of the truth's within-session variance each planted effect carries "
                "(mean over seeds, min–max), and the ablations (NDCG@10 drop when a route is "
                "removed, offline retrain at the last checkpoint):"
            ),
            pivot_markdown(part, ("variance_share",)),
            pivot_markdown(part, ("ndcg@10_full", "ndcg@10_ablated", "ndcg@10_drop")),
            *_graph_route_markdown(part, prefix),
            *_budget_markdown(pooled, prefix),
        ]
    return out


FAMILIARITY_METRICS = {  # metric -> the heading of its table (the rows share their names)
    "ndcg@10_delta_familiar": "familiar projects",
    "ndcg@10_delta_unfamiliar": "unfamiliar projects",
    "share_unfamiliar": "held-out sessions, share unfamiliar",
}
GRAPH_METRICS = ("recall_top10", "recall_top10_delta", "candidates")


def _metric_tables(
    rows: Sequence[Mapping[str, Any]],
    prefix: str,
    intro: str,
    metrics: Sequence[str] | Mapping[str, str],
) -> list[str]:
    """`intro` and a table per metric (`_by_n_markdown`, headed by the metric's label when
    `metrics` maps them to labels) that some row has (after 300 sessions no held-out session
    is of an unfamiliar project), or nothing when no row has any (a run that did not measure
    them)."""
    labels = metrics if isinstance(metrics, Mapping) else {}
    measured = [m for m in metrics if any(r["metric"] == m for r in rows)]
    if not measured:
        return []
    tables = [_by_n_markdown(rows, m, prefix, labels.get(m, "name")) for m in measured]
    return [intro, *tables]


def _familiarity_markdown(rows: Sequence[Mapping[str, Any]], prefix: str) -> list[str]:
    """The paired differences on the held-out sessions of familiar projects and of the others
    (`bench.quality.familiarity_rows`), and the others' share, per checkpoint."""
    intro = (
        "The same differences on the held-out sessions of a project the history had at "
        "least 5 sessions of by the checkpoint (familiar; `bench.quality.FAMILIAR_SESSIONS`), "
        "on the others (unfamiliar), and the share of the latter:"
    )
    return _metric_tables(rows, prefix, intro, FAMILIARITY_METRICS)


def _graph_route_markdown(rows: Sequence[Mapping[str, Any]], prefix: str) -> list[str]:
    """The knowledge graph's route into the pool (a store with a graph only): pool recall
    with and without the graph, their paired difference and the pool sizes, per checkpoint,
    pooled over the seeds and per seed."""
    intro = (
        "What the knowledge graph adds to the pool: the share of each held-out session's "
        "10 most relevant live memories (planted truth, relevance above 0) in the pool the "
        "session start built with the graph's traversal, and in the same session start's "
        "pool without the graph (all seeds, then each seed; 95% bootstrap intervals, "
        "paired for the difference), and the mean pool sizes:"
    )
    return _metric_tables(rows, prefix, intro, GRAPH_METRICS)


BUDGET_METRICS = (*(f"relevant_recall@{k}" for k in BUDGET_KS), *(f"tokens@{k}" for k in BUDGET_KS))
BUDGET_GOAL = {  # metric -> the heading of its table (`bench.quality.budget_rows`)
    "relevant_count": "truly relevant memories in the choice",
    "relevant_count_delta": f"served {SERVED_CHOICE} − Signet's {SIGNET_CHOICE}",
    "relevant_count_delta_worst_seed": "the same, worst seed",
    "tokens_delta": f"tokens, served {SERVED_CHOICE} − Signet's {SIGNET_CHOICE}",
}


def _budget_markdown(rows: Sequence[Mapping[str, Any]], prefix: str) -> list[str]:
    """A choice under a budget (`bench.quality.budget_rows`): per checkpoint, each ranker's
    share of the truly relevant memories in its first K and the tokens they take; then the
    served choice of 15 against Signet's own 50 in effective-score order. Nothing for a run
    that did not measure them."""
    picked = [
        {**r, "name": r["name"].removeprefix(prefix)} for r in rows if r["metric"] in BUDGET_METRICS
    ]
    if not picked:
        return []
    out = [
        (
            "A choice, not only an order: the share of each held-out session's truly relevant "
            "memories (its 10 most relevant live ones) in each ranker's first K of the pool, "
            "and the tokens their contents take (a quarter of their length, as Signet "
            "estimates):"
        )
    ]
    for n in sorted({int(r["n"]) for r in picked if r.get("n") is not None}):
        out += [
            f"After {n} sessions:",
            pivot_markdown([r for r in picked if r.get("n") == n], BUDGET_METRICS),
        ]
    intro = (
        f"The budget's goal: the truly relevant memories in the served choice of "
        f"{SERVED_CHOICE} from the pool against Signet's own {SIGNET_CHOICE} in effective-score "
        "order (paired per session; the worst seed's mean):"
    )
    return out + _metric_tables(rows, prefix, intro, BUDGET_GOAL)


def _locomo_section(
    rows: Sequence[Mapping[str, Any]], chart: str | None, held: str = "the later half"
) -> list[str]:
    suffixes = sorted({r["name"].endswith("_minilm") for r in rows})
    out = []
    for minilm in suffixes:
        part = [r for r in rows if r["name"].endswith("_minilm") == minilm and "-" not in r["name"]]
        label = "all-MiniLM-L6-v2" if minilm else "wordllama (offline default)"
        cats = sorted({r["metric"] for r in part if r["metric"].startswith("recall@10[")})
        seen = [r for r in part if r["name"].startswith("held_out_seen_evidence")]
        out += [
            f"#### Embedder: {label}",
            (f"Held-out questions ({held} of each conversation), mean and 95% bootstrap interval:"),
            pivot_markdown(part, LOCOMO_METRICS),
            "Recall@10 per category:",
            pivot_markdown(part, cats),
            "Every question (categories 1–4), the heuristics:",
            pivot_markdown(part, [f"recall@{k}_all" for k in (5, 10, 25, 50)]),
        ]
        out += [
            f"Held-out questions sharing an evidence turn with a training question: "
            f"{r['value']:.1%} of {r.get('n')}."
            for r in seen
        ]
        deltas = [r for r in rows if "-" in r["name"] and r["name"].endswith("_minilm") == minilm]
        out += ["Paired differences, learned minus heuristic:"]
        out += [pivot_markdown(deltas, ("recall@10_delta", "ndcg@10_delta"))]
    if chart:
        out.insert(0, f"![recall@10 per ranker]({chart})")
    return out


def page_machine(docs: Mapping[str, Mapping[str, Any]]) -> tuple[dict[str, Any], list[str]]:
    """The machine every document shares (its fields equal in all), and the distinct
    `platform` strings: the page names its machine once, not once per section."""
    machines = [doc.get("machine", {}) for doc in docs.values()]
    if not machines:
        return {}, []
    shared = {k: v for k, v in machines[0].items() if all(m.get(k) == v for m in machines)}
    hosts = sorted({str(m["platform"]) for m in machines if "platform" in m})
    return shared, hosts


def _hosts_note(hosts: list[str]) -> str:
    """Where the documents come from hosts of one configuration that are not one host."""
    return (
        f"The documents were measured on {len(hosts)} hosts of this configuration "
        f"({', '.join(f'`{h}`' for h in hosts)}): timings compare within a section, where "
        "each comparison is made in one run, and not across sections."
    )


def benchmarks_markdown(
    docs: Mapping[str, Mapping[str, Any]], results_dir: str, charts: Mapping[str, str]
) -> str:
    """The page: machine, commands, one section per document."""
    machine, hosts = page_machine(docs)
    lines = [
        "# Benchmarks",
        "",
        (
            "Generated by `signet-bench bench report` from the JSON in "
            f"`{results_dir}`; do not edit by hand."
        ),
        "",
        "## Machine",
        "",
        "```json",
        json.dumps(machine, indent=2),
        "```",
        *(["", _hosts_note(hosts)] if len(hosts) > 1 else []),
        "",
        "## Commands",
        "",
        "```bash",
        *(COMMANDS.get(s, f"# {s}: command not recorded").format(dir=results_dir) for s in docs),
        f"signet-bench bench report --results {results_dir}",
        "```",
    ]
    for stem, doc in docs.items():
        rows = doc["results"]
        lines += ["", f"## {TITLES.get(stem, stem)}", "", f"`{stem}.json`", ""]
        if stem.startswith("quality-locomo"):
            held = "a random half" if stem.endswith("random") else "the later half"
            section = _locomo_section(rows, charts.get(stem), held)
        elif stem.startswith("quality"):
            section = _quality_section(rows, charts.get(stem), charts.get(f"{stem}:worst"))
        elif any(r["name"] == HISTORY_NAME for r in rows):
            section = _history_section(rows, charts.get(f"{stem}:history"))
        else:
            section = [rows_markdown(rows)]
        lines += [x for s in section for x in (s, "")]
    return "\n".join(lines).rstrip() + "\n"


def write_benchmarks_doc(results_dir: str | Path, out: str | Path) -> Path:
    """Write `out` (Markdown) and its charts (PNG, in `<out stem>/` beside it)."""
    docs = load_results(results_dir)
    if not docs:
        raise UserError(f"{results_dir}: no benchmark JSON (run `signet-bench bench ... --json`)")
    page = Path(out)
    img_dir = page.parent / page.stem
    img_dir.mkdir(parents=True, exist_ok=True)
    charts = {}
    for stem, doc in docs.items():
        if stem.startswith("quality-locomo"):
            png = img_dir / f"{stem}-recall10.png"
            recall_chart(doc["results"]).save(str(png), format="png")
            charts[stem] = f"{img_dir.name}/{png.name}"
        elif stem.startswith("quality"):
            png = img_dir / f"{stem}-ndcg10.png"
            quality_chart(doc["results"]).save(str(png), format="png")
            charts[stem] = f"{img_dir.name}/{png.name}"
            if any(r["metric"] == WORST_METRIC for r in doc["results"]):
                png = img_dir / f"{stem}-worst.png"
                worst_case_chart(doc["results"]).save(str(png), format="png")
                charts[f"{stem}:worst"] = f"{img_dir.name}/{png.name}"
        elif any(r["name"] == HISTORY_NAME for r in doc["results"]):
            png = img_dir / f"{stem}-history.png"
            history_chart(doc["results"]).save(str(png), format="png")
            charts[f"{stem}:history"] = f"{img_dir.name}/{png.name}"
    page.write_text(benchmarks_markdown(docs, str(results_dir), charts))
    return page
