"""docs/benchmarks.md from benchmark JSON: tables with intervals, charts as PNG, commands."""

from __future__ import annotations

import json

import pytest

from signet_bench.analysis.report import Row, write_report
from signet_bench.bench.docs_page import (
    load_results,
    pivot_markdown,
    ranker_kind,
    write_benchmarks_doc,
)


def _rows() -> list[Row]:
    return [
        Row("cosine", "recall@10", 0.56, "recall", 0.52, 0.60, n=500),
        Row("cosine", "ndcg@10", 0.41, "ndcg", 0.38, 0.44, n=500),
        Row("learned", "recall@10", 0.49, "recall", 0.45, 0.53, n=500),
        Row("cosine", "recall@10[temporal]", 0.30, "recall", 0.2, 0.4, n=80),
        Row("learned-cosine", "recall@10_delta", -0.07, "recall", -0.1, -0.04, n=500),
        Row("cosine_minilm", "recall@10", 0.61, "recall", 0.57, 0.65, n=500),
        Row("held_out_seen_evidence", "share", 0.157, "share", n=500),
    ]


def test_pivot_puts_each_metric_in_its_column_with_its_interval():
    table = pivot_markdown([r.to_json() for r in _rows()], ("recall@10", "ndcg@10"))
    lines = table.splitlines()
    assert lines[0] == "| name | recall@10 | ndcg@10 |"
    assert "| cosine | 0.56 (0.52–0.6) | 0.41 (0.38–0.44) |" in lines
    assert "| learned | 0.49 (0.45–0.53) |  |" in lines
    assert not any(line.startswith("| learned-cosine") for line in lines)


def test_report_page_has_machine_commands_tables_and_a_png_chart(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    write_report(results / "quality-locomo.json", "quality", _rows())
    write_report(results / "train.json", "train", [Row("train", "wall", 3.2, "s")])
    (results / "notes.json").write_text(json.dumps({"not": "a bench"}))
    assert list(load_results(results)) == ["quality-locomo", "train"]
    page = write_benchmarks_doc(results, tmp_path / "docs" / "benchmarks.md")
    text = page.read_text()
    assert '"cores"' in text
    assert "signet-bench bench quality --dataset locomo" in text
    assert "| cosine |  | 0.56 (0.52–0.6) |  |  | 0.41 (0.38–0.44) |  |" in text
    assert "learned-cosine | -0.07 (-0.1–-0.04)" in text
    assert "Held-out questions (the later half of each conversation)" in text
    assert "sharing an evidence turn with a training question: 15.7% of 500." in text
    assert "Embedder: all-MiniLM-L6-v2" in text and "| train | wall | 3.2 | s |" in text
    png = tmp_path / "docs" / "benchmarks" / "quality-locomo-recall10.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "(benchmarks/quality-locomo-recall10.png)" in text


def test_no_results_is_a_clear_error(tmp_path):
    with pytest.raises(Exception, match="no benchmark JSON"):
        write_benchmarks_doc(tmp_path, tmp_path / "b.md")


def test_synthetic_quality_gets_checkpoint_columns_per_persona_and_a_curve(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    rows = []
    for persona in ("heavy", "drifting"):
        for n, served in ((10, 0.60), (300, 0.72)):
            rows += [
                Row(f"{persona}/cosine", "ndcg@10", 0.62, "ndcg", 0.6, 0.64, n=n),
                Row(
                    f"{persona}/predictor_served",
                    "ndcg@10",
                    served,
                    "ndcg",
                    served - 0.02,
                    served + 0.02,
                    n=n,
                ),
                Row(
                    f"{persona}/predictor_served-cosine",
                    "ndcg@10_delta",
                    served - 0.62,
                    "ndcg",
                    served - 0.63,
                    served - 0.61,
                    n=n,
                ),
            ]
        rows += [
            Row(f"{persona}/truth_share_global", "variance_share", 0.2, "share", 0.15, 0.25),
            Row(f"{persona}/effect_global", "ndcg@10_drop", 0.03, "ndcg", 0.01, 0.05, n=300),
        ]
    write_report(results / "quality.json", "quality", rows)
    text = write_benchmarks_doc(results, tmp_path / "b.md").read_text()
    assert text.index("#### Persona: heavy") < text.index("#### Persona: drifting")
    heavy = text[text.index("#### Persona: heavy") : text.index("#### Persona: drifting")]
    assert "| name | after 10 | after 300 |" in heavy
    assert "| predictor_served | 0.6 (0.58–0.62) | 0.72 (0.7–0.74) |" in heavy
    assert "| predictor_served-cosine | -0.02 (-0.03–-0.01) | 0.1 (0.09–0.11) |" in heavy
    assert "| heavy/truth_share_global | 0.2 (0.15–0.25) |" in heavy
    assert "| heavy/effect_global |  |  | 0.03 (0.01–0.05) |" in heavy
    png = tmp_path / "b" / "quality-ndcg10.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "(b/quality-ndcg10.png)" in text


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("cosine", "heuristic"),
        ("signet_hybrid_minilm", "heuristic"),
        ("learned_fused", "learned"),
        ("learned_base_minilm", "learned"),
        ("learned_oracle", "experiment"),
        ("learned_pooled_minilm", "experiment"),
    ],
)
def test_locomo_rows_are_coloured_by_kind(name, kind):
    assert ranker_kind(name) == kind


def test_the_worst_seed_is_named_per_checkpoint_and_drawn_per_seed(tmp_path):
    """A one-persona run over three seeds: the pooled difference keeps its own line, the worst
    case table names the worst seed and the share below −0.01 at each checkpoint, and a
    per-seed chart is drawn."""
    from types import SimpleNamespace

    import numpy as np

    from signet_bench.bench.quality import worst_seed_rows

    results = tmp_path / "results"
    results.mkdir()
    base = np.random.default_rng(0).uniform(0.3, 0.7, size=30)
    rows = []
    for n, shifts in (
        (10, {101: 0.0, 102: -0.02, 103: 0.01}),
        (50, {101: 0.05, 102: 0.04, 103: 0.03}),
    ):
        runs = [SimpleNamespace(seed=s) for s in shifts]
        per_run = [
            {
                "cosine": base,
                "predictor_served": base + d,
                "predictor_live": base + d,
                "fused_served": base,
                "served_familiar_only": base + d / 2,
            }
            for d in shifts.values()
        ]
        mean = float(np.mean(list(shifts.values())))
        rows.append(
            Row(
                "predictor_served-cosine",
                "ndcg@10_delta",
                mean,
                "ndcg",
                mean - 0.01,
                mean + 0.01,
                n=n,
            )
        )
        rows += worst_seed_rows(runs, per_run, n, "")  # type: ignore[arg-type]
    write_report(results / "quality-unseen.json", "quality", rows)
    text = write_benchmarks_doc(results, tmp_path / "b.md").read_text()
    assert "#### Persona\n" in text and "Persona: seed_" not in text
    assert "| predictor_served-cosine | -0.003333 (-0.01333–0.006667) | 0.04 (0.03–0.05) |" in text
    assert "Worst case of `predictor_served-cosine` over 3 seeds:" in text
    assert "| worst seed | seed 102: -0.02 (-0.02–-0.02) | seed 103: 0.03 (0.03–0.03) |" in text
    assert "| share of seeds below −0.01 | 33% | 0% |" in text
    # the counterfactual's table says what it is
    assert "Worst case of `served_familiar_only-cosine` over 3 seeds (a counterfactual" in text
    png = tmp_path / "b" / "quality-unseen-worst.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "(b/quality-unseen-worst.png)" in text


def test_the_familiar_and_unfamiliar_projects_get_their_own_tables(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    rows = [
        Row("predictor_served-cosine", "ndcg@10_delta", 0.01, "ndcg", 0.0, 0.02, n=50),
        Row("predictor_served-cosine", "ndcg@10_delta_familiar", 0.05, "ndcg", 0.04, 0.06, n=50),
        Row(
            "predictor_served-cosine", "ndcg@10_delta_unfamiliar", -0.08, "ndcg", -0.1, -0.06, n=50
        ),
        Row("held_out", "share_unfamiliar", 0.3, "share", n=50),
    ]
    write_report(results / "quality-unseen.json", "quality", rows)
    text = write_benchmarks_doc(results, tmp_path / "b.md").read_text()
    assert "on the others (unfamiliar)" in text

    def table(heading: str, line: str) -> str:
        return f"| {heading} | after 50 |\n|---|---|\n| {line} |"

    familiar = table("familiar projects", "predictor_served-cosine | 0.05 (0.04–0.06)")
    unfamiliar = table("unfamiliar projects", "predictor_served-cosine | -0.08 (-0.1–-0.06)")
    assert familiar in text and unfamiliar in text
    assert table("held-out sessions, share unfamiliar", "held_out | 0.3") in text
    # a checkpoint with no session of an unfamiliar project: no empty table for them
    write_report(results / "quality-unseen.json", "quality", [*rows[:2], rows[3]])
    text = write_benchmarks_doc(results, tmp_path / "d.md").read_text()
    assert familiar in text and "| unfamiliar projects |" not in text
    plain = results / "quality-unseen.json"
    write_report(plain, "quality", rows[:1])
    assert "(unfamiliar)" not in write_benchmarks_doc(results, tmp_path / "c.md").read_text()


def test_training_over_history_gets_a_table_per_size_and_a_chart(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    rows = [Row("train_500x80x768_50ep", "wall", 12.5, "s", n=1)]
    for n, wall, served in ((250, 6.0, 0.70), (5000, 9.5, 0.74)):
        rows += [
            Row("scheduled_training", "wall_s", wall, "s", n=n),
            Row("scheduled_training", "peak_mb", 300.0, "MB", n=n),
            Row("scheduled_training", "epochs", 50.0, "epochs", n=n),
            Row(
                "scheduled_training",
                "heldout_ndcg@10",
                served,
                "ndcg",
                served - 0.02,
                served + 0.02,
                n=n,
            ),
            Row("scheduled_training", "cosine_ndcg@10", 0.65, "ndcg", 0.63, 0.67, n=n),
        ]
    write_report(results / "train.json", "train", rows)
    text = write_benchmarks_doc(results, tmp_path / "docs" / "benchmarks.md").read_text()
    assert "| metric | 250 sessions | 5,000 sessions |" in text
    assert "| wall_s (s) | 6 | 9.5 |" in text
    assert "| heldout_ndcg@10 (ndcg) | 0.7 (0.68–0.72) | 0.74 (0.72–0.76) |" in text
    assert "| train_500x80x768_50ep | wall | 12.5 | s | 1 |" in text
    png = tmp_path / "docs" / "benchmarks" / "train-history.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "(benchmarks/train-history.png)" in text


def test_the_budgets_tables_per_checkpoint_and_its_goal(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    rows = []
    for n in (10, 100):
        for name, recall in (("cosine", 0.3), ("predictor_served", 0.4)):
            rows += [
                Row(f"heavy/{name}", "ndcg@10", 0.6, "ndcg", 0.5, 0.7, n=n),
                Row(
                    f"heavy/{name}",
                    "relevant_recall@15",
                    recall,
                    "share",
                    recall - 0.1,
                    recall + 0.1,
                    n=n,
                ),
                Row(f"heavy/{name}", "tokens@15", 300.0 + n, "tokens", n=n),
            ]
        rows += [
            Row(
                "heavy/predictor_served@15-baseline@50",
                "relevant_count_delta",
                0.8,
                "memories",
                0.5,
                1.1,
                n=n,
            ),
            Row(
                "heavy/seed_900/predictor_served@15-baseline@50",
                "relevant_count_delta",
                0.6,
                "memories",
                0.2,
                1.0,
                n=n,
            ),
        ]
    write_report(results / "quality-unseen-heavy.json", "quality", rows)
    text = write_benchmarks_doc(results, tmp_path / "b.md").read_text()
    assert "A choice, not only an order" in text
    assert text.count("| name | relevant_recall@10 | relevant_recall@15 |") == 2
    assert "| predictor_served |  | 0.4 (0.3–0.5) |" in text and "|  | 400 |  |  |" in text
    assert "| served 15 − Signet's 50 | after 10 | after 100 |" in text
    assert "| predictor_served@15-baseline@50 | 0.8 (0.5–1.1) | 0.8 (0.5–1.1) |" in text
    assert "seed_900/predictor_served@15" not in text.split("A choice, not only")[1]
