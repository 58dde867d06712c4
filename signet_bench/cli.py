"""`signet-bench ...`: a thin shell over the library. Input problems exit 2 with one message."""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from signet_bench.config import DEFAULT_CONFIG, PredictorConfig, load_config
from signet_bench.errors import UserError
from signet_bench.learn.blas import configure as configure_blas
from signet_bench.store.schema import RELEASE_LINES
from signet_scorer.budget import Budget
from signet_scorer.request import FORMATS, MODES, RequestError, TrainingRequest
from signet_scorer.timestamps import local_tz
from signet_scorer.version import version_line

# Each command imports the layers it runs inside its own function: `--help` and every command
# start without the others' modules (numpy, polars, DuckDB, marimo load only where needed).

__all__ = ["main"]

BENCH_HELP = """benchmarks (each prints a table; --json PATH also writes it as JSON):
  store    synth heavy-persona generation time (s); load 4,000 memories + 768-d
           embeddings (ms, p50/p95); DuckDB aggregate over 1.5M session_memories rows (ms);
           --schema current: on current Signet's tables
  loop     session-start latency on the heavy persona (ms, p50/p95 over 200 starts);
           time to simulate 1,000 sessions (s)
  quality  NDCG@10 against the planted truth on held-out sessions: baseline, cosine, the
           served and offline predictor, the fused injection, the true-label ceiling after
           10/50/100/300 sessions; paired differences; ablations (--ablations NAMES runs only
           those: query, prior, context, project, time, superseded, structure, effect_<effect>);
           the truth's variance shares; on a persona with a knowledge graph (architect) the
           pool recall of each session's 10 most relevant memories with and without the graph
           (pool_recall_graph, pool_recall_nograph, their difference; per seed too); with
           --prompt-time the loop ranks at every prompt too: prompt_<ranker> NDCG@10 and
           relevant_recall@5/10 against each prompt's planted truth, the served model against
           the strongest free ranker of the prompt, and the session's relevant memories session
           start and the prompts reached together (session_start+prompt-session_start)
  train    500 sessions x ~80 candidates x 50 epochs: wall time (s), peak memory (MB);
           then one scheduled training per size of a heavy user's history (--sizes, default
           250,1000,3000,5000; --no-history leaves it out): its wall time (s), peak memory
           (MB), epochs, the gate's verdict, and NDCG@10 of the model it serves and of cosine
           on the next 150 sessions against the planted truth
  pairs    the base trainer's stream of pair Parquet: peak memory (MiB) streaming a file of
           2,000,000 pairs against reading it whole, and the interpreter's alone
  serve    in-process score p50/p99 (ms); JSON-RPC round trip of 80 x 768 p50/p95 (ms);
           process start to first answer (ms); resident memory after 10,000 scores (MB);
           score p99 while train_from_db runs and swaps the model (ms)
  quality --dataset locomo --data PATH [--split chronological|random] [--base FILE]
           [--embedders wordllama,minilm]
           LoCoMo evidence retrieval on held-out questions per ranker (bm25, cosine,
           signet_hybrid, effective, cogmem_v9, cascade, hybrid, lexical, learned,
           learned_base_loco (trained on the other conversations), learned_base_shipped (or
           learned_base_file with --base), learned_finetuned, their *_fused with the best
           heuristic;
           experiments: learned_oracle, learned_pooled, learned_init, learned_without_<signal>
           for each signal): recall@5/10/25/50, ndcg@10, mrr,
           per category (metric[category]), heuristics on every question (*_all), paired
           deltas (a-b, *_delta); rows suffixed _minilm use all-MiniLM-L6-v2 when it is
           installed; held_out_seen_evidence: the held-out questions sharing an evidence turn
           with a training question
  report   docs/benchmarks.md from the JSON in --results (tables, charts, machine, commands)
  dashboard  the dashboard on a year of heavy use (18,750 sessions, 1.5M session_memories):
           each query (ms), first render p50/max (ms), filter change p50/p95 (ms);
           --browser: also the app served as `signet-bench app` serves it, opened 5 times in
           headless Chromium, seconds from navigation to the first drawn chart and to every
           cell done (dashboard_first_chart, dashboard_complete p50/max; marimo_first_chart:
           a one-chart notebook; both dashboard rows also as ratio_p50 to it)
  hook     signet-bench-hook around a stand-in `signet hook session-start` with a trained
           model on a 4,000-memory store, process start included (200 runs each): the
           stand-in, the hook and its overhead with its resident scorer running, the overhead
           cold (no resident: ranked in-process), with no model (fail-open) and with a
           200 ms Signet, p50/p95 (ms); the prompt hook (`user-prompt-submit`) the same way:
           prompt_overhead (resident running), prompt_added, prompt_failopen
"""


_STORE_HELP = "a Signet memories.db (read-only)"
_STORE = {"--db": _STORE_HELP}  # a subcommand's required store
_TZ_HELP = "the user's IANA time zone (default: local)"
_CONFIG_HELP = "Signet agent.yaml with a predictor: block"
_SIM_OPTIONS = (
    "scorer",
    "mode",
    "seed",
    "feedback_share",
    "judge_noise",
    "judge_recency_bias",
    "schema",
)
_SCHEMA_HELP = (
    "the store's release line: 0.58 (Signet 0.58's tables, with the predictor's) or current "
    "(Signet 0.145.7's: agent-scoped sessions, no predictor tables)"
)


def _command(
    sub: argparse._SubParsersAction,
    name: str,
    func: Callable[[argparse.Namespace], int],
    help_text: str,
    *,
    required: Mapping[str, str] | None = None,
    **parser_kw,
) -> argparse.ArgumentParser:
    """A subcommand running `func`, with its required options first (`required`: each flag
    and its help)."""
    p = sub.add_parser(name, help=help_text, **parser_kw)
    for flag, flag_help in (required or {}).items():
        p.add_argument(flag, required=True, help=flag_help)
    p.set_defaults(func=func)
    return p


def _cmd_synth(args: argparse.Namespace) -> int:
    from signet_bench.world.synth.build import build_persona_store

    summary = build_persona_store(
        args.persona,
        args.out,
        seed=args.seed,
        n_memories=args.memories,
        embedder=args.embedder,
        schema=args.schema,
    )
    print(summary)
    return 0


def _bench_rows(args: argparse.Namespace) -> list:
    """Run the named benchmark with the parsed options; its rows."""
    if args.name == "store":
        from signet_bench.bench.store_speed import store_rows

        return store_rows(quick=args.quick, seed=args.seed, schema=args.schema)
    if args.name == "loop":
        from signet_bench.bench.loop_speed import loop_rows

        return loop_rows(args.persona, quick=args.quick, seed=args.seed)
    if args.name == "train":
        from signet_bench.bench.train_speed import train_rows

        return train_rows(
            quick=args.quick,
            seed=args.seed,
            history=args.history,
            sizes=args.sizes,
            config=args.config,
        )
    if args.name == "pairs":
        from signet_bench.bench.pair_stream import pair_stream_rows

        return pair_stream_rows(quick=args.quick, seed=args.seed)
    if args.name == "serve":
        from signet_bench.bench.serve_speed import serve_rows

        return serve_rows(quick=args.quick, seed=args.seed)
    if args.name == "dashboard":
        from signet_bench.bench.dashboard_speed import dashboard_rows

        return dashboard_rows(quick=args.quick, seed=args.seed, browser=args.browser)
    if args.name == "hook":
        from signet_bench.bench.hook_speed import hook_rows

        return hook_rows(quick=args.quick, seed=args.seed)
    if args.dataset == "locomo":
        from signet_bench.bench.quality_locomo import LocomoRun, locomo_rows

        if not args.data:
            raise UserError("bench quality --dataset locomo needs --data PATH (LoCoMo JSON)")
        run = LocomoRun(seed=args.seed, quick=args.quick, graded=args.graded, split=args.split)
        return locomo_rows(args.data, run, base=args.base, embedders=args.embedders)
    from signet_bench.bench.quality import RunScope, quality_rows

    personas = args.personas or [args.persona]
    seeds = args.seeds or [args.seed]
    if args.checkpoints is not None and (not args.checkpoints or min(args.checkpoints) < 1):
        raise UserError(f"--checkpoints: positive session counts, got {args.checkpoints}")
    return quality_rows(
        personas,
        seeds=seeds,
        quick=args.quick,
        embedder=args.embedder,
        ablations=_ablations(args.ablations),
        cfg=load_config(args.config),
        checkpoints=args.checkpoints,
        scope=RunScope(args.memories, args.prompt_time),
    )


def _ablations(text: str) -> bool | list[str]:
    """`--ablations`: "all" (True), "none" (`--no-ablations`: False) or a list of names, each
    one `bench quality` knows (else a UserError naming the valid ones)."""
    from signet_bench.bench.quality import ablation_selection

    if text in ("all", "none"):
        return text == "all"
    names = _names(text)
    try:
        ablation_selection(names)
    except ValueError as err:
        raise UserError(f"--ablations: {err}") from err
    return names


def _names(text: str) -> list[str]:
    """A comma-separated list (empty items dropped)."""
    return [t.strip() for t in text.split(",") if t.strip()]


def _ints(text: str) -> list[int]:
    """A comma-separated list of whole numbers."""
    try:
        return [int(t) for t in _names(text)]
    except ValueError:
        msg = f"expected whole numbers like 11,12,13, got {text!r}"
        raise argparse.ArgumentTypeError(msg) from None


def _int_ranges(text: str) -> list[int]:
    """A comma-separated list of whole numbers and inclusive ranges, e.g. 950-959,970."""
    out: list[int] = []
    for part in _names(text):
        lo, sep, hi = part.partition("-")
        try:
            out.extend(range(int(lo), int(hi) + 1) if sep else [int(part)])
        except ValueError:
            msg = f"expected whole numbers or ranges like 950-959,970, got {text!r}"
            raise argparse.ArgumentTypeError(msg) from None
    return out


def _cmd_bench(args: argparse.Namespace) -> int:
    import logging

    from signet_bench.analysis.report import render_table, write_report

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout, force=True)
    if args.name == "report":
        from signet_bench.bench.docs_page import write_benchmarks_doc

        print(f"wrote {write_benchmarks_doc(args.results, args.out or 'docs/benchmarks.md')}")
        return 0
    rows = _bench_rows(args)
    print(render_table(args.name, rows))
    if args.json:
        write_report(args.json, args.name, rows)
        print(f"wrote {args.json}")
    return 0


def _add_synth(sub: argparse._SubParsersAction) -> None:
    p = _command(sub, "synth", _cmd_synth, "write a synthetic user's store with planted relevance")
    p.add_argument(
        "--persona",
        required=True,
        choices=["light", "heavy", "drifting", "multi-project", "architect"],
    )
    p.add_argument("--out", required=True, help="path of the new memories.db (must not exist)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--memories", type=int, default=None, help="override the persona's size")
    p.add_argument(
        "--embedder",
        default="topic",
        choices=["topic", "wordllama"],
        help="topic: fast 768-d topic-vector generator (default); wordllama: 256-d offline model",
    )
    p.add_argument("--schema", default="0.58", choices=RELEASE_LINES, help=_SCHEMA_HELP)


def _add_bench_locomo(p: argparse.ArgumentParser) -> None:
    """`bench quality --dataset locomo`'s options."""
    p.add_argument("--dataset", default="synth", choices=["synth", "locomo"])
    p.add_argument("--data", default=None, help="locomo: the LoCoMo JSON or a folder of stores")
    p.add_argument("--graded", action="store_true", help="locomo: graded relevance for NDCG")
    p.add_argument(
        "--base",
        default=None,
        type=Path,
        help="locomo: a base file to judge (rows learned_base_file; default: the shipped base, "
        "rows learned_base_shipped)",
    )
    p.add_argument(
        "--split",
        default="chronological",
        choices=["chronological", "random"],
        help="locomo: held-out questions (chronological: the later half; random: an experiment)",
    )
    p.add_argument(
        "--embedders",
        default=None,
        type=lambda text: [x.strip() for x in text.split(",") if x.strip()],
        help="locomo: the embedders to convert with, e.g. minilm or wordllama,minilm (default: "
        "wordllama, and minilm when its optional packages are installed)",
    )


def _add_bench(sub: argparse._SubParsersAction) -> None:
    p = _command(
        sub,
        "bench",
        _cmd_bench,
        "run a benchmark",
        epilog=BENCH_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "name",
        choices=[
            "store",
            "loop",
            "quality",
            "train",
            "pairs",
            "serve",
            "report",
            "dashboard",
            "hook",
        ],
    )
    p.add_argument("--json", default=None, help="also write the results as JSON to this path")
    p.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    p.add_argument(
        "--browser",
        action="store_true",
        help="dashboard: also the first chart and the whole page in Chromium",
    )
    _add_bench_locomo(p)
    p.add_argument("--results", default="bench-results", help="report: folder of bench JSON")
    p.add_argument("--out", default=None, help="report: the page (default docs/benchmarks.md)")
    p.add_argument("--persona", default="heavy")
    p.add_argument("--seed", type=int, default=0)
    _add_bench_runs(p)


def _add_bench_runs(p: argparse.ArgumentParser) -> None:
    """The options of `bench quality`, `bench train` and `bench store`."""
    p.add_argument(
        "--personas", type=_names, default=None, help="quality: several, e.g. heavy,drifting"
    )
    p.add_argument("--seeds", type=_ints, default=None, help="quality: several, e.g. 11,12,13")
    p.add_argument(
        "--checkpoints",
        type=_ints,
        default=None,
        help="quality: session counts to judge at (default 10,25,50,100,300)",
    )
    p.add_argument(
        "--embedder",
        default="wordllama",
        choices=["topic", "wordllama"],
        help="quality: the synthetic stores' embedder (topic: fast, but its vectors give a "
        "memory's topic away)",
    )
    p.add_argument(
        "--ablations",
        nargs="?",
        const="all",
        default="all",
        metavar="NAMES",
        help="quality: the ablations to run (default all; or a comma-separated list, e.g. "
        "structure,effect_graph)",
    )
    p.add_argument(
        "--no-ablations",
        dest="ablations",
        action="store_const",
        const="none",
        help="quality: no ablations",
    )
    p.add_argument(
        "--memories", type=int, default=None, help="quality: resize the personas' stores"
    )
    p.add_argument(
        "--prompt-time",
        action="store_true",
        help="quality: the loop also ranks and injects at every prompt, and the prompts are "
        "judged (rows prompt_*, session_start+prompt)",
    )
    p.add_argument(
        "--config", default=None, help="quality, train: agent.yaml with a predictor: block"
    )
    p.add_argument(
        "--history",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="train: also one scheduled training per history size",
    )
    p.add_argument(
        "--sizes",
        type=_ints,
        default=None,
        help="train: sessions of history to train at (default 250,1000,3000,5000)",
    )
    p.add_argument(
        "--schema", default="0.58", choices=RELEASE_LINES, help="store: the stores' release line"
    )


def _cmd_simulate(args: argparse.Namespace) -> int:
    from signet_bench.daemon.ranking.prompt_time import PromptLimits
    from signet_bench.replay.loop import SimOptions, simulate

    chosen = {name: getattr(args, name) for name in _SIM_OPTIONS}
    given = (args.inject_k, args.inject_tokens) != (None, None)
    choice = Budget(args.inject_k, args.inject_tokens) if given else None
    opts = SimOptions(
        **chosen,
        train_epochs=args.epochs,
        progress=sys.stderr.isatty(),
        choice=choice,
        prompt_time=PromptLimits() if args.prompt_time else None,
    )
    report = simulate(args.db, args.sessions, opts, load_config(args.config))
    print(report.summary())
    print(_slices(args.db))
    return 0


def _slices(db: str | Path) -> str:
    """The store's success by project and focal entity (read once the loop has closed it)."""
    from signet_bench.analysis.queries.slices import slices_text, store_slices

    return slices_text(store_slices(db))


def _add_simulate(sub: argparse._SubParsersAction) -> None:
    help_text = "run the daemon's session loop on a synthetic store (resumable, idempotent)"
    required = {"--db": "a store made by `synth`"}
    p = _command(sub, "simulate", _cmd_simulate, help_text, required=required)
    p.add_argument("--sessions", type=int, required=True, help="run sessions 0..N-1 of the plan")
    p.add_argument("--scorer", default="random", choices=["none", "random", "model", "sidecar"])
    p.add_argument(
        "--mode",
        default="ours",
        choices=["ours", "signet-0.58"],
        help="ours: pre-filter by effective score and context similarity, fuse, diversify; "
        "signet-0.58: the real daemon's pool (rank replay)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--feedback-share", type=float, default=0.3, help="sessions with agent ratings")
    p.add_argument("--judge-noise", type=float, default=0.1)
    p.add_argument("--judge-recency-bias", type=float, default=0.0)
    p.add_argument(
        "--epochs",
        type=int,
        default=DEFAULT_CONFIG.full_training_epochs,
        help="epochs per full training (scorer=model)",
    )
    p.add_argument(
        "--schema",
        default=None,
        choices=RELEASE_LINES,
        help="the release line the store must be (default: whichever it is; the loop writes "
        "rows in the store's own shape, and no predictor tables on a current store)",
    )
    p.add_argument(
        "--inject-k",
        type=_count,
        default=None,
        metavar="K",
        help="inject the best K of the pool (with --inject-tokens: within that many tokens) in "
        "place of the 2,000-character budget (default: the character budget)",
    )
    p.add_argument(
        "--inject-tokens",
        type=_count,
        default=None,
        metavar="N",
        help="inject the best memories within N tokens (a quarter of their length)",
    )
    p.add_argument(
        "--prompt-time",
        action="store_true",
        help="also rank and inject at every prompt (Signet 0.58's prompt budget: 5 memories in "
        "500 characters), recorded in the hook log beside the loop's workbench",
    )
    p.add_argument("--config", default=None, help=_CONFIG_HELP)


def _count(text: str) -> int:
    """A whole number >= 0."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return value


def _training_request(args: argparse.Namespace, cfg: PredictorConfig) -> TrainingRequest:
    """The request of `train`'s flags: the `--request` file's, or the schedule `cfg` sets for
    the mode; every flag given on the command line replaces its field."""
    from signet_bench.learn.publish import scheduled_request

    given = {name: getattr(args, name) for name in _REQUEST_FLAGS}
    given = {name: value for name, value in given.items() if value is not None}
    if args.request is not None:
        try:
            text = Path(args.request).read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"{args.request}: cannot read the request ({exc.strerror})") from None
        request = TrainingRequest.from_json(text)
    elif "db_path" in given and "out_dir" in given:
        request = scheduled_request(
            given["db_path"], given["out_dir"], cfg, mode=given.get("mode", "finetune")
        )
    else:
        raise UserError("train: give --db PATH and --out DIR, or --request FILE")
    return request.replace(**given)


def _cmd_train(args: argparse.Namespace) -> int:
    """One gated training on a store; exit 1 when a gate rejects the model."""
    from signet_bench.learn.explain import run_summary, sidecar_fields
    from signet_bench.learn.publish import request_config, train_store

    cfg = load_config(args.config)
    request = _training_request(args, cfg)
    run = train_store(request, cfg=cfg, progress=sys.stderr.isatty())
    if args.summary is not None:
        from signet_scorer.atomic import atomic_write_bytes
        from signet_scorer.jsonio import dumps

        atomic_write_bytes(Path(args.summary), dumps(sidecar_fields(run)))
    print(run_summary(run, request, request_config(cfg, request)))
    return 0 if run.result.accepted else 1


# `train`'s flags that set a request field (their dest is the field's name).
_REQUEST_FLAGS = (
    "db_path",
    "out_dir",
    "mode",
    "base_weights",
    "protect",
    "epochs",
    "lr_scale",
    "temperature",
    "min_confidence",
    "limit",
    "seed",
    "sample_seed",
    "time_cap_s",
    "tz",
    "checkpoint_path",
    "checkpoint_format",
)


def _add_train_policy(p: argparse.ArgumentParser) -> None:
    """`train`'s flags of the training policy (unset: the request file's or the schedule's)."""
    mode = p.add_mutually_exclusive_group()
    mode.add_argument(
        "--mode",
        choices=MODES,
        default=None,
        help="finetune: the base (if any) on every session (default); incremental, fresh: below",
    )
    mode.add_argument(
        "--incremental",
        dest="mode",
        action="store_const",
        const="incremental",
        help="fine-tune the base on the sessions newer than it, plus a replay sample of older "
        "ones, at a tenth of the learning rate",
    )
    mode.add_argument(
        "--fresh",
        dest="mode",
        action="store_const",
        const="fresh",
        help="retrain from fresh weights on every session; the base is only what the gates "
        "compare with (the loop's default schedule)",
    )
    p.add_argument(
        "--protect",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="apply the stability gates to the base (default: when a base is given)",
    )
    p.add_argument("--epochs", type=int, default=None, help="default: the mode's schedule")
    p.add_argument("--lr-scale", type=float, default=None, help="times the learning rate")
    p.add_argument("--temperature", type=float, default=None, help="the loss temperature")
    p.add_argument(
        "--min-confidence", type=float, default=None, help="skip sessions judged less sure"
    )
    p.add_argument("--limit", type=int, default=None, help="newest N scored sessions (5000)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--sample-seed", type=int, default=None, help="negatives' seed (default --seed)")
    p.add_argument(
        "--time-cap", dest="time_cap_s", metavar="SECONDS", type=float, help="training's cap"
    )
    p.add_argument("--tz", default=None, help=_TZ_HELP)


def _add_train(sub: argparse._SubParsersAction) -> None:
    help_text = "train the scorer on a store's scored sessions (the store is only read)"
    p = _command(sub, "train", _cmd_train, help_text)
    p.add_argument("--db", dest="db_path", metavar="PATH", type=Path, help=_STORE_HELP)
    p.add_argument(
        "--out",
        dest="out_dir",
        metavar="DIR",
        type=Path,
        help="directory for the model and workbench.duckdb",
    )
    p.add_argument(
        "--request",
        metavar="FILE",
        help="a training request as JSON (what the sidecar passes); flags override its fields",
    )
    p.add_argument(
        "--base-weights", metavar="FILE", type=Path, help="start from this model (any format)"
    )
    _add_train_policy(p)
    p.add_argument(
        "--checkpoint",
        dest="checkpoint_path",
        metavar="PATH",
        type=Path,
        help="also write an accepted model here",
    )
    p.add_argument(
        "--checkpoint-format",
        choices=FORMATS,
        default=None,
        help="its format (default: from the suffix: .onnx, .bin SGPT, else own)",
    )
    p.add_argument("--config", default=None, help=_CONFIG_HELP)
    p.add_argument(
        "--summary",
        metavar="FILE",
        default=None,
        help="also write the run's figures as JSON (Signet's train_from_db result fields)",
    )


def _cmd_train_step(args: argparse.Namespace) -> int:
    """Signet's `train` method for the sidecar: prints {"loss", "steps"} as JSON."""
    import json

    from signet_bench.learn.step import train_step

    done = train_step(args.model, args.inputs, args.out, args.state)
    print(json.dumps({"loss": done.loss, "steps": done.steps}))
    return 0


def _add_train_step(sub: argparse._SubParsersAction) -> None:
    """The sidecar's command, not a person's: `signet_scorer.library.train_step` runs it for
    Signet's one-step `train` method, with the state folder of the previous step if any."""
    help_text = "one listwise step on a model's weights (the sidecar's `train` method)"
    required = {
        "--model": "the weights (any model format)",
        "--inputs": "the session's arrays (.npz)",
        "--out": "folder for the new weights, state and graph",
    }
    p = _command(sub, "train-step", _cmd_train_step, help_text, required=required)
    p.add_argument("--state", default=None, help="the folder of the previous step, if any")


def _cmd_skew(args: argparse.Namespace) -> int:
    import polars as pl

    from signet_bench.analysis.skew import skew_report

    report = skew_report(args.db, tz=args.tz or local_tz())
    with pl.Config(tbl_rows=30, tbl_cols=10, float_precision=4):
        print(report)
    return 0


def _add_skew(sub: argparse._SubParsersAction) -> None:
    help_text = "feature skew: our features vs Signet 0.58's training and inference conventions"
    p = _command(sub, "skew", _cmd_skew, help_text, required=_STORE)
    p.add_argument("--tz", default=None, help=_TZ_HELP)


def _cmd_demo(args: argparse.Namespace) -> int:
    import polars as pl

    from signet_bench.app.demo import DemoProgress, run_demo

    demo = run_demo(args.out or "out", args.sessions, progress=DemoProgress())
    print(f"demo store: {demo.store}")
    print(demo.report.summary())
    print(_slices(demo.store))
    if demo.blocks.height:
        print("judge-scored NDCG@10 per block of 20 sessions:")
        with pl.Config(tbl_rows=50):
            print(demo.blocks)
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from signet_bench.learn.export import convert_with_prompt_model

    for out in convert_with_prompt_model(args.model, args.out, flags=args.flags, fmt=args.format):
        print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0


_EXPORT_HELP = "export a model to ONNX (or convert between .onnx, .sbm and Signet's .bin)"


def _add_export(sub: argparse._SubParsersAction) -> None:
    required = {
        "--model": "model.sbm or its folder, model.bin, or .onnx",
        "--out": ".onnx: graph; .bin: SGPT; else own checkpoint",
    }
    p = _command(sub, "export", _cmd_export, _EXPORT_HELP, required=required)
    p.add_argument("--flags", type=int, default=0, help="SGPT flag bits (1 base, 2 fine-tuned)")
    p.add_argument("--format", choices=FORMATS, default=None, help="default: from --out's suffix")


def _cmd_serve(args: argparse.Namespace) -> int:
    from signet_scorer.__main__ import main as serve

    return serve(args.rest)


def _add_serve(sub: argparse._SubParsersAction) -> None:
    help_text = "the predictor sidecar on stdio (same as `python -m signet_scorer`; see its --help)"
    p = _command(sub, "serve", _cmd_serve, help_text, add_help=False)
    p.add_argument("rest", nargs=argparse.REMAINDER)


def _add_demo(sub: argparse._SubParsersAction) -> None:
    p = _command(sub, "demo", _cmd_demo, "build the demo store, run the loop on it and summarise")
    p.add_argument("--out", default=None, help="where to keep the demo store (default: ./out)")
    p.add_argument(
        "--sessions", type=int, default=None, help="the plan's length on the first run (120)"
    )


def _cmd_locomo(args: argparse.Namespace) -> int:
    import signet_bench.world.minilm  # noqa: F401  (registers the optional embedder)
    from signet_bench.world.embed import get_embedder
    from signet_bench.world.locomo import convert_locomo

    result = convert_locomo(
        args.data, args.out, get_embedder(args.embedder), kinds=args.kinds, audit=args.audit
    )
    print(result.summary())
    return 0


def _add_locomo(sub: argparse._SubParsersAction) -> None:
    help_text = "LoCoMo conversations as Signet stores, one per conversation, questions as sessions"
    required = {
        "--data": "the LoCoMo JSON (read in place)",
        "--out": "folder for <sample_id>.db (must not exist)",
    }
    p = _command(sub, "locomo", _cmd_locomo, help_text, required=required)
    p.add_argument("--embedder", default="wordllama", help="wordllama (default) or minilm")
    p.add_argument(
        "--kinds", nargs="+", default=["observation"], choices=["observation", "turn", "summary"]
    )
    p.add_argument("--audit", nargs="*", default=[], help="audit errors.json file(s) to apply")


def _cmd_export_pairs(args: argparse.Namespace) -> int:
    from signet_bench.learn.pairs import export_pairs

    print(f"wrote {export_pairs(args.db, args.out, tz=args.tz or local_tz())} rows to {args.out}")
    return 0


def _add_export_pairs(sub: argparse._SubParsersAction) -> None:
    help_text = "anonymized training pairs (features and labels only) of a store, as Parquet"
    required = {**_STORE, "--out": "pairs.parquet"}
    p = _command(sub, "export-pairs", _cmd_export_pairs, help_text, required=required)
    p.add_argument("--tz", default=None, help=_TZ_HELP)


def _cmd_export_synth_pairs(args: argparse.Namespace) -> int:
    import logging

    from signet_bench.bench.synth_pairs import SynthPairs, export_synth_pairs

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    spec = SynthPairs(
        tuple(args.personas),
        tuple(args.seeds),
        embedder=args.embedder,
        scorer=args.scorer,
        labels=args.labels,
    )
    if args.sessions is not None:
        spec = dataclasses.replace(spec, sessions=args.sessions)
    doc = export_synth_pairs(spec, args.out)
    rows = sum(f["rows"] for f in doc["files"])
    print(f"wrote {len(doc['files'])} pair files ({rows} rows) and the manifest to {args.out}")
    return 0


def _add_export_synth_pairs(sub: argparse._SubParsersAction) -> None:
    help_text = (
        "the base's synthetic training data: pair exports of synthetic worlds of training seeds "
        "(950-999, which no benchmark reports) run through the loop, labelled by the loop "
        "(train-base --synth DIR)"
    )
    required = {"--out": "directory for the pair files and manifest.json"}
    p = _command(sub, "export-synth-pairs", _cmd_export_synth_pairs, help_text, required=required)
    p.add_argument(
        "--personas", type=_names, default=["heavy", "drifting", "multi-project"], help="e.g. heavy"
    )
    p.add_argument("--seeds", type=_int_ranges, default=list(range(950, 960)), help="950-959")
    # no default read from bench.synth_pairs here: importing it (the loop, the synthetic
    # worlds) would cost every command's start-up, `train` included
    p.add_argument(
        "--sessions", type=int, help="loop sessions per world (default: SynthPairs.sessions)"
    )
    p.add_argument("--embedder", default="topic", help="the stores' embedder")
    p.add_argument("--scorer", default="none", help="the loop's scorer (none: Signet alone)")
    p.add_argument(
        "--labels",
        choices=["loop", "truth"],
        default="loop",
        help="loop: the store's labels, as a user's; truth: the planted relevance (ceiling only)",
    )


def _train_base_dask(args: argparse.Namespace) -> int:
    """`train-base --engine dask`: the lambdarank ranker trained across a Dask cluster."""
    from signet_bench.learn.distributed import (
        DaskTraining,
        require_extra,
        save_ranker,
        train_dask_ranker,
    )

    require_extra()
    training = DaskTraining(scheduler=args.scheduler, n_estimators=args.trees, seed=args.seed)
    ranker = train_dask_ranker(args.pairs, training)
    paths = save_ranker(ranker, args.out)
    print(
        f"ranker: {ranker.sessions} sessions, {ranker.rows} rows in {ranker.files} files "
        f"-> {paths['txt']}, {paths['onnx']}"
    )
    return 0


def _base_sources(args: argparse.Namespace, tmp: Path) -> tuple[list[Path], list[dict]]:
    """`train-base`'s pair files and each source's training record, in this order (the trainer's
    shuffles start from it): the synthetic exports (`export-synth-pairs`), the LoCoMo file's
    questions and any other pair files."""
    from signet_bench.bench.quality_locomo import locomo_pairs
    from signet_bench.bench.synth_pairs import read_manifest, synth_training_record

    files: list[Path] = []
    records: list[dict] = []
    for directory in args.synth or ():
        doc, got = read_manifest(directory)
        files += got
        records.append(synth_training_record(doc, directory))
    if args.locomo is not None:
        got, record = locomo_pairs(args.locomo, tmp, seed=args.seed)
        files += got
        records.append(record)
    if args.pairs:
        files += [Path(p) for p in args.pairs]
        names = ", ".join(Path(p).name for p in args.pairs)
        records.append({"data": f"pair exports {names}"})
    return files, records


def _provenance(args: argparse.Namespace, records: list[dict], alpha: dict) -> dict:
    """The base file's `training`, `licence` and `alpha` records."""
    from signet_bench.bench.quality_locomo import LOCOMO_LICENCE

    command = ["signet-bench train-base"]
    command += [f"--locomo {Path(args.locomo).name}"] if args.locomo else []
    command += [f"--synth {' '.join(Path(d).name for d in args.synth)}"] if args.synth else []
    command += [f"--pairs {' '.join(Path(p).name for p in args.pairs)}"] if args.pairs else []
    training = {
        "data": "; ".join(r["data"] for r in records),
        **next(({"questions": r["questions"]} for r in records if "questions" in r), {}),
        "sources": records,
        "seed": args.seed,
        "command": " ".join([*command, "--json OUT"]),
    }
    if args.locomo:
        licence = dict(LOCOMO_LICENCE)
        if args.synth:
            licence["synthetic"] = "the synthetic worlds are generated by signet-bench itself"
    elif args.synth and not args.pairs:
        licence = {"name": "that of signet-bench (its own synthetic worlds)"}
    else:
        licence = {"name": "that of the stores the pair exports came from"}
    return {"training": training, "licence": licence, "alpha": alpha}


def _cmd_train_base(args: argparse.Namespace) -> int:
    import tempfile

    from signet_bench.learn.base import held_out_alpha, write_base
    from signet_bench.learn.pairs import BASE_EPOCHS, save_base, train_base

    if args.engine == "dask":
        return _train_base_dask(args)
    if args.pairs is None and args.locomo is None and args.synth is None:
        raise UserError("train-base: give --locomo FILE, --synth DIR... and/or --pairs FILE...")
    if args.out is None and args.json is None:
        raise UserError("train-base: give --out DIR (model.sbm) and/or --json FILE (base file)")
    epochs = args.epochs or BASE_EPOCHS
    with tempfile.TemporaryDirectory(prefix="train-base-") as tmp:
        files, records = _base_sources(args, Path(tmp))
        base = train_base(files, epochs=epochs, seed=args.seed)
        alpha = held_out_alpha(files, seed=args.seed, epochs=epochs) if args.json else {}
    print(f"base: {base.sessions} sessions, loss {base.loss_curve[-1]:.4f}")
    if args.out is not None:
        print(f"  -> {save_base(base, args.out, args.native_dim)}")
    if args.json is not None:
        path = write_base(base, args.json, _provenance(args, records, alpha))
        licence = Path(args.locomo).parent / "LICENSE.txt" if args.locomo else None
        if licence is not None and licence.is_file():
            shutil.copyfile(licence, path.with_suffix(".LICENSE.txt"))
        print(f"  alpha {alpha['value']:.3f} earned on {alpha['sessions']} held-out sessions")
        print(f"  -> {path}")
    return 0


def _add_train_base(sub: argparse._SubParsersAction) -> None:
    help_text = (
        "train a base model on pair exports (streamed) or on a LoCoMo file, for --base-weights "
        "(--out) or as a base file (--json; the shipped one: --locomo locomo7.json --json "
        "scorer/signet_scorer/base/predictor-base.json; --synth adds the worlds "
        "export-synth-pairs makes, which the shipped base leaves out: docs/user-guide.md)"
    )
    p = _command(sub, "train-base", _cmd_train_base, help_text)
    p.add_argument("--pairs", nargs="+", default=None, help="pairs.parquet files")
    p.add_argument("--locomo", default=None, help="a LoCoMo JSON: every question of it")
    p.add_argument(
        "--synth", nargs="+", default=None, help="export-synth-pairs directories (manifest.json)"
    )
    p.add_argument("--out", default=None, help="directory for model.sbm (dask: ranker.*)")
    p.add_argument("--json", default=None, help="the base file (weights, training, licence)")
    p.add_argument("--native-dim", type=int, default=768, help="the users' embedding dimension")
    p.add_argument("--epochs", type=int, default=None, help="default: the trainer's")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--engine",
        choices=["linear", "dask"],
        default="linear",
        help="linear: the streamed base on this machine; dask: a LightGBM lambdarank ranker "
        "trained across a Dask cluster (the `distributed` extra)",
    )
    p.add_argument(
        "--scheduler",
        default="local",
        help="dask: the scheduler's address (tcp://host:8786), or local (an in-process cluster)",
    )
    p.add_argument("--trees", type=int, default=100, help="dask: boosting rounds")


def _port(text: str) -> int:
    """`--port`: a whole number (its range is `check_port`'s)."""
    try:
        return int(text)
    except ValueError:
        raise UserError(f"--port {text}: not a TCP port (1 to 65535)") from None


def _cmd_app(args: argparse.Namespace) -> int:
    """Serve a notebook with `marimo run` (building the demo first when no --db is given) once
    the port, the store and the workbench are checked; says where once it listens."""
    from pathlib import Path

    from signet_bench.app.demo import DEFAULT_DEMO_DIR, DemoProgress, demo_paths, run_demo
    from signet_bench.app.launch import check_port, check_store, run_app, run_command

    port = _port(args.port)
    check_port(args.host, port)
    db = Path(args.db) if args.db else None
    workbench = Path(args.workbench) if args.workbench else None
    if db is None:
        demo = run_demo(args.demo_dir or DEFAULT_DEMO_DIR, progress=DemoProgress())
        db, bench_dir = demo.store, demo_paths(demo.store.parent).bench_dir
    else:
        bench_dir = Path(args.bench_dir) if args.bench_dir else None
    check_store(db, workbench)
    cmd = run_command(
        args.notebook,
        db,
        workbench=workbench,
        bench_dir=bench_dir,
        host=args.host,
        port=port,
        headless=args.headless,
        token_password_file=Path(args.token_password_file) if args.token_password_file else None,
    )
    url = f"http://{args.host}:{port}"

    def announce() -> None:
        print(f"serving {args.notebook} on {url} (store: {db})", flush=True)

    return run_app(cmd, args.host, port, announce)


def _add_app(sub: argparse._SubParsersAction) -> None:
    help_text = "serve the dashboard (or another notebook) as an app; default: on the demo"
    p = _command(sub, "app", _cmd_app, help_text)
    p.add_argument(
        "notebook",
        nargs="?",
        default="dashboard",
        choices=["dashboard", "calibration", "drift", "bench", "all"],
    )
    p.add_argument("--db", default=None, help="a Signet memories.db (default: the demo's)")
    p.add_argument("--workbench", default=None, help="workbench.duckdb (default: the store's)")
    p.add_argument("--bench-dir", default=None, help="folder of bench JSON files")
    p.add_argument("--demo-dir", default=None, help="where the demo is built (default: ./out)")
    p.add_argument("--host", default="127.0.0.1", help="other than loopback needs a password")
    p.add_argument("--port", default="2718", help="1 to 65535, free (default 2718)")
    p.add_argument("--token-password-file", default=None, help="file holding the password")
    p.add_argument("--headless", action="store_true", help="do not open a browser")


# Each command registers itself here: (adder) -> None.
_ADDERS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_demo,
    _add_app,
    _add_synth,
    _add_simulate,
    _add_train,
    _add_train_step,
    _add_skew,
    _add_export,
    _add_serve,
    _add_bench,
    _add_locomo,
    _add_export_pairs,
    _add_export_synth_pairs,
    _add_train_base,
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="signet-bench", description="Workbench for Signet's predictive memory scorer."
    )
    parser.add_argument(
        "--version", action="version", version=version_line("signet-bench", "signet-bench")
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in _ADDERS:
        add(sub)
    return parser


def _trains(args: argparse.Namespace) -> bool:
    """Whether the command is training-bound (it gets every core for BLAS)."""
    return args.func is _cmd_train or (
        args.func is _cmd_bench and args.name in ("train", "quality")
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    configure_blas(all_cores=_trains(args))
    try:
        return int(args.func(args) or 0)
    except (UserError, RequestError) as exc:
        print(f"signet-bench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("signet-bench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
