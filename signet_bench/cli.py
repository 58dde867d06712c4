"""`signet-bench ...`: a thin shell over the library. Input problems exit 2 with one message."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from signet_bench.errors import UserError

__all__ = ["main"]

BENCH_HELP = """benchmarks (each prints a table; --json PATH writes DESIGN §10 JSON):
  store    synth heavy-persona generation time (s); load 4,000 memories + 768-d
           embeddings (ms, p50/p95); DuckDB aggregate over 1.5M session_memories rows (ms)
  loop     session-start latency on the heavy persona (ms, p50/p95 over 200 starts);
           time to simulate 1,000 sessions (s)
  quality  NDCG@10 against true relevance: baseline vs predictor after 10/50/100/300
           scored sessions, plus feature-group ablations
  train    500 sessions x ~80 candidates x 50 epochs: wall time (s), peak memory (MB)
"""


def _cmd_synth(args: argparse.Namespace) -> int:
    from signet_bench.synth.build import build_persona_store

    summary = build_persona_store(
        args.persona, args.out, seed=args.seed, n_memories=args.memories, embedder=args.embedder
    )
    print(summary)
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    import importlib

    module = importlib.import_module(f"signet_bench.bench.{args.name}")
    return int(module.run(args) or 0)


def _add_synth(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("synth", help="write a synthetic user's store with planted relevance")
    p.add_argument(
        "--persona", required=True, choices=["light", "heavy", "drifting", "multi-project"]
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
    p.set_defaults(func=_cmd_synth)


def _add_bench(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench",
        help="run a benchmark",
        epilog=BENCH_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("name", choices=["store", "loop", "quality", "train"])
    p.add_argument("--json", default=None, help="also write the results as JSON to this path")
    p.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    p.add_argument("--dataset", default="synth", choices=["synth"])
    p.add_argument("--persona", default="heavy")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_cmd_bench)


# Each later command registers itself here: (adder) -> None.
_ADDERS: list[Callable[[argparse._SubParsersAction], None]] = [_add_synth, _add_bench]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="signet-bench", description="Workbench for Signet's predictive memory scorer."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for add in _ADDERS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UserError as exc:
        print(f"signet-bench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("signet-bench: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
