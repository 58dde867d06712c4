"""`python -m signet_scorer --model PATH --native-dim D`: the JSON-RPC sidecar on stdio.

Launchable exactly as Signet's daemon launches its predictor (`--native-dim N --checkpoint
PATH`): PATH may be an ONNX export, a workbench checkpoint, Signet's SGPT `model.bin`, or not
exist yet (the server starts untrained and says so in `status`). Unknown flags are logged and
ignored, so a newer daemon's extra flags do not stop the sidecar.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
from collections.abc import Sequence
from typing import BinaryIO

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows
    fcntl = None

from signet_scorer.library import TrainerOptions
from signet_scorer.rpc import LOG_LEVELS, JsonLog, Server
from signet_scorer.training import ModelFiles
from signet_scorer.version import version_line

__all__ = ["build_parser", "main"]

PIPE_BYTES = 1 << 20


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m signet_scorer",
        description="Signet predictor sidecar: newline-delimited JSON-RPC 2.0 on stdio.",
    )
    p.add_argument("--model", help="model to serve: .onnx, a workbench checkpoint or model.bin")
    p.add_argument("--checkpoint", help="Signet's flag; the model path when --model is absent")
    p.add_argument("--native-dim", type=int, default=None, help="embedding dims (Signet's flag)")
    p.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads")
    p.add_argument("--log-file", default=None, help="also append the JSON log lines here")
    p.add_argument("--log-level", default="info", choices=list(LOG_LEVELS))
    p.add_argument("--tz", default=None, help="the user's IANA time zone, for train_from_db")
    p.add_argument("--train-config", default=None, help="agent.yaml passed to the trainer")
    p.add_argument("--train-timeout", type=float, default=600.0, help="seconds per training")
    p.add_argument(
        "--train-arg", action="append", default=[], help="extra `signet-bench train` argument"
    )
    p.add_argument("--version", action="version", version=version_line("signet-bench-predictor"))
    return p


def _stdin() -> BinaryIO:
    """stdin with a 1 MiB buffer and, on Linux, a 1 MiB pipe: a 1.3 MB score request then
    arrives in ~20 reads instead of ~160."""
    if fcntl is not None:
        with contextlib.suppress(AttributeError, OSError):  # F_SETPIPE_SZ is Linux's
            fcntl.fcntl(sys.stdin.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    return open(sys.stdin.fileno(), "rb", buffering=PIPE_BYTES, closefd=False)


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> int:
    args, unknown = build_parser().parse_known_args(argv)
    log = JsonLog(path=args.log_file, level=args.log_level)
    path = args.model or args.checkpoint
    if not path:
        log("no_model_path", "error", message="give --model PATH (or Signet's --checkpoint PATH)")
        return 2
    if unknown:
        log("ignored_flags", "warning", flags=unknown)
    signal.signal(signal.SIGTERM, _stop)
    trainer = TrainerOptions(
        tz=args.tz,
        config=args.train_config,
        extra_args=tuple(args.train_arg),
        timeout_s=args.train_timeout,
    )
    server = Server(
        ModelFiles.for_path(path),
        args.native_dim,
        out=sys.stdout.buffer,
        log=log,
        threads=max(1, args.threads),
        trainer=trainer,
    )
    try:
        return server.serve(_stdin())
    except (KeyboardInterrupt, SystemExit):
        server.shutdown()
        return 0


if __name__ == "__main__":
    sys.exit(main())
