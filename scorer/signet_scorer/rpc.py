"""Signet's predictor sidecar protocol (docs/specification.md §8.1): newline-delimited JSON-RPC 2.0
on stdio, one request per line, one response line per request.

Methods `status`, `score`, `train`, `train_from_db` and `save_checkpoint` take Signet's parameter
names and defaults and give its result fields (plus a few of ours). Requests are answered in
order, except `train_from_db`, which runs in the background (child processes) and answers when
done while `score` keeps being answered from the model in use. Error codes: -32700 not JSON,
-32600 not a JSON-RPC 2.0 request, -32601 unknown method, -32602 bad parameter (the message
names the field), -32000 the handler failed or refused the request as Signet's does (with
Signet's message: `scorer.Refused`), -32603 the response could not be written. Nothing a
client sends stops the server; log lines are JSON objects on stderr (and optionally a file).
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO, TextIO, cast

import numpy as np

from signet_scorer import contract as c
from signet_scorer import jsonio
from signet_scorer.library import TrainerError, TrainerOptions, convert, train_step
from signet_scorer.request import TrainingRequest
from signet_scorer.scorer import OnnxModel, ParamError, Refused, Scorer
from signet_scorer.training import (
    ModelFiles,
    copy_atomic,
    parse_train_from_db,
    run_trainer,
    step_inputs,
    target_format,
    write_step_inputs,
)
from signet_scorer.workbench import CHECKPOINT_FILE, SERVED_MODEL_FILE

__all__ = ["LOG_LEVELS", "JsonLog", "RpcError", "Server", "iso_now"]

LATENCY_WINDOW = 4096  # per-method latencies kept for the status percentiles
LOG_LEVELS = {"debug": 10, "info": 20, "warning": 30, "error": 40}


def iso_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class RpcError(Exception):
    """An error response: JSON-RPC code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class JsonLog:
    """Structured log lines (one JSON object each) on stderr and, optionally, appended to a
    file the dashboard reads."""

    def __init__(
        self, stream: TextIO | None = None, path: str | Path | None = None, level: str = "info"
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.path = Path(path) if path else None
        self.level = LOG_LEVELS[level]
        self._lock = threading.Lock()

    def __call__(self, event: str, level: str = "info", **fields: Any) -> None:
        if LOG_LEVELS[level] < self.level:
            return
        line = jsonio.dumps({"ts": iso_now(), "level": level, "event": event, **fields}).decode()
        with self._lock:
            try:
                self.stream.write(line + "\n")
                self.stream.flush()
                if self.path is not None:
                    with self.path.open("a", encoding="utf-8") as f:
                        f.write(line + "\n")
            except (OSError, ValueError):
                pass  # a closed or full log never stops the server


def _percentiles(samples: list[float]) -> dict[str, float | int]:
    if not samples:
        return {"n": 0}
    p50, p95, p99 = np.percentile(np.asarray(samples, dtype=np.float64), [50, 95, 99])
    return {"n": len(samples), "p50": round(p50, 4), "p95": round(p95, 4), "p99": round(p99, 4)}


def _request_id(msg: Mapping[str, Any]) -> Any:
    """The request's id when it is a valid one (string or finite number), else None."""
    rid = msg.get("id")
    if isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool)):
        return rid
    if isinstance(rid, float) and math.isfinite(rid):
        return rid
    return None


class Server:
    """One sidecar: the model in use, its files, counters, and the request handlers."""

    def __init__(
        self,
        files: ModelFiles,
        native_dim: int | None,
        *,
        out: BinaryIO,
        log: JsonLog | None = None,
        threads: int = 1,
        trainer: TrainerOptions | None = None,
    ) -> None:
        self.files = files
        self.out = out
        self.log = log or JsonLog()
        self.threads = threads
        self.trainer = trainer or TrainerOptions()
        self.started = time.monotonic()
        self.model_version = 1
        self.training_pairs = 0
        self.last_trained: str | None = None
        self.last_error: str | None = None
        self.requests = 0
        self.errors = 0
        self.training: dict[str, Any] | None = None
        self._write_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._stats_lock = threading.Lock()
        self._latency: dict[str, deque[float]] = {}
        self._step_dir: Path | None = None  # the weights and optimizer state `train` moved
        self._steps = 0
        self._workdir: Path | None = None
        self._thread: threading.Thread | None = None
        self.source = files.load_path()
        self.scorer = Scorer.open(self.source, native_dim=native_dim, threads=threads)
        info = self.scorer.info
        self.native_dim = native_dim if native_dim is not None else (info and info.native_dim)
        if info is not None:
            self.last_trained = info.metadata.get("trained_at") or None
        self.handlers: dict[str, Callable[[dict[str, Any]], Any]] = {
            "status": self.status,
            "score": self.score,
            "train": self.train,
            "save_checkpoint": self.save_checkpoint,
        }
        self.log(
            "start",
            model=str(self.source),
            trained=self.scorer.ready,
            reason=self.scorer.reason,
            json=jsonio.PARSER,
        )

    # --- transport ------------------------------------------------------------------------------

    def serve(self, inp: BinaryIO) -> int:
        """Answer requests from `inp` until it closes; returns the exit code (0)."""
        while True:
            line = inp.readline(c.MAX_LINE_BYTES + 1)
            if not line:
                break
            if len(line) > c.MAX_LINE_BYTES and not line.endswith(b"\n"):
                while (chunk := inp.readline(1 << 20)) and not chunk.endswith(b"\n"):
                    pass
                self._error(
                    None,
                    "invalid",
                    time.perf_counter(),
                    RpcError(
                        c.ErrorCode.INVALID_REQUEST, f"request line over {c.MAX_LINE_BYTES} bytes"
                    ),
                )
                continue
            if line.strip():
                self.handle(line)
        self.shutdown()
        return 0

    def handle(self, line: bytes) -> None:
        """Answer one request line (train_from_db answers later, from its own thread)."""
        t0 = time.perf_counter()
        rid, method = None, "invalid"
        try:
            rid, method, params = self._parse(line)
            if method == "train_from_db":
                self._start_training(rid, params, t0)
                return
            self._respond(rid, method, t0, result=self.handlers[method](params))
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error response
            self._error(rid, method, t0, exc)

    def _parse(self, line: bytes) -> tuple[Any, str, dict[str, Any]]:
        try:
            msg = jsonio.loads(line)
        except jsonio.DecodeError as exc:
            raise RpcError(c.ErrorCode.PARSE_ERROR, f"invalid JSON: {str(exc)[:200]}") from None
        if not isinstance(msg, dict):
            what = (
                "batch requests are not supported"
                if isinstance(msg, list)
                else "a request must be a JSON object"
            )
            raise RpcError(c.ErrorCode.INVALID_REQUEST, what)
        msg = cast("dict[str, Any]", msg)  # a JSON object: text keys
        rid = _request_id(msg)
        if msg.get("jsonrpc") != "2.0":
            raise _Invalid(rid, "jsonrpc must be '2.0'")  # Signet's message
        if rid is None:
            raise _Invalid(rid, "id must be a string or a number")
        method = msg.get("method")
        if not isinstance(method, str):
            raise _Invalid(rid, "method must be a string")
        if method not in c.METHODS:
            raise _Invalid(rid, "method not found", c.ErrorCode.METHOD_NOT_FOUND)  # Signet's
        params = msg.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise _Invalid(rid, "params: must be an object", c.ErrorCode.INVALID_PARAMS, method)
        return rid, method, cast("dict[str, Any]", params)

    def _write(self, payload: dict[str, Any]) -> None:
        try:
            data = jsonio.dumps(payload)
        except (TypeError, ValueError) as exc:
            err = {"code": c.ErrorCode.INTERNAL_ERROR, "message": f"cannot serialize: {exc}"}
            data = jsonio.dumps({"jsonrpc": "2.0", "id": payload.get("id"), "error": err})
        with self._write_lock:
            try:
                self.out.write(data + b"\n")
                self.out.flush()
            except (OSError, ValueError) as exc:
                self.log("write_failed", "error", error=str(exc))

    def _respond(self, rid: Any, method: str, t0: float, *, result: Any) -> None:
        self._write({"jsonrpc": "2.0", "id": rid, "result": result})
        self._record(method, t0)

    def _error(self, rid: Any, method: str, t0: float, exc: BaseException) -> None:
        if isinstance(exc, _Invalid):
            rid, method = exc.rid, exc.method or method
        fault = False  # the server's own failure (kept as `last_error`), not a bad request
        if isinstance(exc, RpcError):
            code, message = exc.code, exc.message
            fault = code in (c.ErrorCode.SERVER_ERROR, c.ErrorCode.INTERNAL_ERROR)
        elif isinstance(exc, ParamError):
            code, message = c.ErrorCode.INVALID_PARAMS, str(exc)
        elif isinstance(exc, Refused):  # refused as Signet refuses it, with its message
            code, message = c.ErrorCode.SERVER_ERROR, str(exc)
        else:
            code, message = c.ErrorCode.SERVER_ERROR, str(exc)[:500] or type(exc).__name__
            fault = True
            if not isinstance(exc, TrainerError | RuntimeError | OSError):
                self.log("handler_failed", "error", method=method, trace=traceback.format_exc())
        self.errors += 1
        if fault:
            self.last_error = f"{iso_now()} {method}: {message}"
        self.log("error", "warning", method=method, id=rid, code=code, message=message[:300])
        self._write({"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}})
        self._record(method, t0)

    def _record(self, method: str, t0: float) -> None:
        ms = (time.perf_counter() - t0) * 1000.0
        with self._stats_lock:
            self.requests += 1
            self._latency.setdefault(method, deque(maxlen=LATENCY_WINDOW)).append(ms)

    def _latencies(self) -> dict[str, dict[str, float | int]]:
        with self._stats_lock:
            samples = {m: list(s) for m, s in self._latency.items()}
        return {m: _percentiles(s) for m, s in samples.items()}

    # --- methods --------------------------------------------------------------------------------

    def status(self, params: dict[str, Any]) -> dict[str, Any]:
        """Signet's status fields, then ours (model file, feature spec, latencies, errors)."""
        scorer = self.scorer
        info = scorer.info
        meta = info.metadata if info is not None else {}
        training = self.training
        return {
            "trained": scorer.ready,
            "training_pairs": self.training_pairs,
            "model_version": self.model_version,
            "last_trained": self.last_trained,
            "native_dimensions": self.native_dim,
            "feature_dimensions": c.N_FEATURES,
            "model_path": str(self.source),
            "model_format": info.kind if info else None,
            "model_id": meta.get("model_version"),
            "not_trained_reason": scorer.reason,
            "feature_spec_hash": meta.get("feature_spec_hash"),
            "serving_feature_spec_hash": c.FEATURE_SPEC_HASH,
            "feature_spec_matches": meta.get("feature_spec_hash") == c.FEATURE_SPEC_HASH,
            "label_policy": meta.get("label_policy"),
            "training_range": [
                meta.get("training_first_session") or None,
                meta.get("training_last_session") or None,
            ],
            "training": dict(training) if training else None,
            "latency_ms": self._latencies(),
            "requests": self.requests,
            "errors": self.errors,
            "last_error": self.last_error,
            "uptime_s": round(time.monotonic() - self.started, 3),
            "json_parser": jsonio.PARSER,
        }

    def score(self, params: dict[str, Any]) -> dict[str, Any]:
        scorer = self.scorer  # one reference: a swap during this call does not mix models
        try:
            ranked = scorer.score_request(params)
        except (ParamError, Refused):
            raise
        except RuntimeError as exc:
            raise RpcError(c.ErrorCode.SERVER_ERROR, str(exc)) from None
        return {"scores": [{"id": i, "score": s} for i, s in ranked]}

    def train(self, params: dict[str, Any]) -> dict[str, Any]:
        """Signet's `train`: one step on the served weights (by the library's `train-step` in
        a child process, which keeps the optimizer state between calls), swapped in at once."""
        with self._state_lock:
            if self.training is not None:
                raise RpcError(c.ErrorCode.SERVER_ERROR, "a train_from_db run is in progress")
            model = self.scorer.model
            if model is None:
                raise RpcError(c.ErrorCode.SERVER_ERROR, f"no model loaded: {self.scorer.reason}")
            arrays = step_inputs(params, model.info)
            out = Path(tempfile.mkdtemp(prefix="signet-serving-step-"))
            try:
                inputs = write_step_inputs(out / "inputs.npz", arrays)
                done = train_step(self._params_file(), self._step_dir, inputs, out, self.trainer)
                data = (out / SERVED_MODEL_FILE).read_bytes()
                new = OnnxModel.load(self.source, threads=self.threads, data=data)
            except BaseException:
                shutil.rmtree(out, ignore_errors=True)
                raise
            self._set_step_dir(out)
            self._steps = int(done["steps"])
            self._swap(new, pairs=len(params["labels"]))
            return {"loss": float(done["loss"]), "step": self._steps}

    def _set_step_dir(self, step_dir: Path | None) -> None:
        """Keep the newest step's files (None: forget them, the steps start over)."""
        old, self._step_dir = self._step_dir, step_dir
        if step_dir is None:
            self._steps = 0
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)

    def save_checkpoint(self, params: dict[str, Any]) -> dict[str, Any]:
        """Write the model in use to `path`, in the format the path asks for (converted by
        the library's `export` in a child process)."""
        path = params.get("path")
        if not isinstance(path, str) or not path or "\x00" in path:
            raise ParamError("path", "must be a file path (a non-empty string)")
        flags = params.get("flags", 0) or 0
        if isinstance(flags, bool) or not isinstance(flags, int) or not 0 <= flags < 2**32:
            raise ParamError("flags", "must be a whole number in [0, 2**32)")
        target = Path(path).expanduser()
        if not target.parent.is_dir():
            raise ParamError("path", f"{target.parent}: no such directory")
        with self._state_lock:
            if self.scorer.model is None:
                raise RpcError(c.ErrorCode.SERVER_ERROR, f"no model loaded: {self.scorer.reason}")
            fmt = target_format(target)
            convert(self._params_file(), target, fmt, self.trainer, flags=flags)
        self.log("checkpoint_saved", path=str(target), format=fmt)
        return {"saved": True}

    # --- train_from_db --------------------------------------------------------------------------

    def _start_training(self, rid: Any, params: dict[str, Any], t0: float) -> None:
        req = parse_train_from_db(params, tz=self.trainer.tz)
        with self._state_lock:
            if self.training is not None:
                raise RpcError(c.ErrorCode.SERVER_ERROR, "a training run is already in progress")
            self.training = {"started_at": iso_now(), "db_path": str(req.db_path), "pid": None}
        self._thread = threading.Thread(
            target=self._training_job, args=(rid, req, t0), name="train_from_db", daemon=True
        )
        self._thread.start()

    def _training_job(self, rid: Any, req: TrainingRequest, t0: float) -> None:
        try:
            result = self._train_from_db(req)
            self._respond(rid, "train_from_db", t0, result=result)
        except Exception as exc:  # noqa: BLE001 - reported as an error response
            self._error(rid, "train_from_db", t0, exc)
        finally:
            with self._state_lock:
                self.training = None

    def _set_pid(self, pid: int | None) -> None:
        if self.training is not None:
            self.training["pid"] = pid

    def _train_from_db(self, req: TrainingRequest) -> dict[str, Any]:
        workdir = Path(tempfile.mkdtemp(prefix="signet-serving-train-"))
        self.log("training_started", db_path=str(req.db_path), workdir=str(workdir))
        try:
            req = req.replace(out_dir=workdir, base_weights=self._base_weights())
            outcome = run_trainer(req, self.trainer, self._set_pid)
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        result = {**outcome.summary, "accepted": outcome.accepted}
        if not outcome.accepted:
            shutil.rmtree(workdir, ignore_errors=True)
            self.log("training_rejected", gate=outcome.summary.get("gate_reason"))
            return {**result, "model_version": self.model_version}
        onnx, sbm = outcome.model_onnx, outcome.model_sbm
        assert onnx is not None and sbm is not None  # an accepted run wrote both
        try:
            new = OnnxModel.load(onnx, threads=self.threads, native_dim=self.native_dim)
            fmt = target_format(self.files.store)
            self.files.store.parent.mkdir(parents=True, exist_ok=True)
            copy_atomic(onnx if fmt == "onnx" else sbm, self.files.store)
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        with self._state_lock:
            self._set_step_dir(None)
            old, self._workdir = self._workdir, workdir
            self.source = self.files.store
            self._swap(new, pairs=result.get("samples_used") or 0)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
        self.log("model_swapped", model_version=self.model_version, path=str(self.files.store))
        return {**result, "model_version": self.model_version}

    def _base_weights(self) -> Path | None:
        """The file of the model in use (any format; the trainer reads them all), or None."""
        return None if self.scorer.model is None else self._params_file()

    def _params_file(self) -> Path:
        """The file holding the weights in use: the last `train` step's, else the last
        trainer's checkpoint, else the served file."""
        if self._step_dir is not None:
            return self._step_dir / CHECKPOINT_FILE
        if self._workdir is not None and (self._workdir / CHECKPOINT_FILE).is_file():
            return self._workdir / CHECKPOINT_FILE
        return self.source

    def _swap(self, model: OnnxModel, *, pairs: int) -> None:
        self.scorer = Scorer(model)
        self.model_version += 1
        self.training_pairs += int(pairs)
        self.last_trained = iso_now()

    def shutdown(self) -> None:
        """Stop a running trainer, wait briefly for its thread, then remove the work folders
        (the served model's files are copies kept elsewhere)."""
        training = self.training
        if training and training.get("pid"):
            with contextlib.suppress(OSError):
                os.kill(training["pid"], signal.SIGTERM)
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._thread is None or not self._thread.is_alive():
            for folder in (self._step_dir, self._workdir):
                if folder is not None:
                    shutil.rmtree(folder, ignore_errors=True)
        self.log("stop", requests=self.requests, errors=self.errors)


class _Invalid(RpcError):
    """An invalid request whose id (and method) are known, so the response can carry them."""

    def __init__(
        self,
        rid: Any,
        message: str,
        code: int = c.ErrorCode.INVALID_REQUEST,
        method: str | None = None,
    ) -> None:
        super().__init__(code, message)
        self.rid = rid
        self.method = method
