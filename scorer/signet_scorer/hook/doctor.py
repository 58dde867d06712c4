"""`signet-bench-hook [OPTIONS] doctor [--json]`: what the session-start hook would use, why,
and whether its scorer serves.

It reads the options and variables as the hook does (`config.setting_sources`: an option, else
its variable, else `SIGNET_PATH` for the store, else the default) and says, for the store, the
workbench, the model and `signet`, where each is and whether it is there; whether the model
loads and ranks the latest session of the store by the hook's own ranking
(`signet_scorer.hook.rank.rerank`); whether the resident scorer runs; the last session starts of the
hook's log (served with the scorer's order, or failed open and why); and one verdict line: the
scorer is serving, or what to do next, with the command. Exit 0 when the hook would inject the
scorer's order at the next session start, 1 when it would keep Signet's. A bad setting is
reported, never raised: it is one of the reasons the hook keeps Signet's output.

Not on the session start's path: this loads numpy and onnxruntime to score, and writes nothing
(the store and the log are opened read-only, and no resident is started).
"""

from __future__ import annotations

import json
import shlex
import shutil
import sqlite3
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from signet_scorer.hook.config import (
    DEFAULT_DB,
    DOCTOR,
    OPTIONS,
    SESSION_START,
    USER_PROMPT_SUBMIT,
    HookConfig,
    read_command,
    scan_argv,
    setting_sources,
)
from signet_scorer.hook.opening import failure_text, open_scorer, open_store_for
from signet_scorer.hook.resident_link import resident_status
from signet_scorer.timestamps import parse_utc
from signet_scorer.workbench import CHECKPOINT_FILE, MODEL_DIR_SUFFIX, SERVED_MODEL_FILE

__all__ = [
    "LAST_INVOCATIONS",
    "diagnose",
    "doctor_args",
    "doctor_command",
    "last_invocations",
    "latest_session",
    "render",
    "train_command",
    "train_target",
]

LAST_INVOCATIONS = 5  # the hook log's rows shown
PATHS = ("db", "workbench", "model", "signet")
_NAMES = {
    "db": "store",
    "workbench": "workbench",
    "model": "model",
    "signet": "signet",
    "limit": "limit",
    "max_tokens": "tokens",
    "budget_ms": "budget",
    "tz": "time zone",
    "resident": "resident",
    "idle_s": "idle",
    "max_chars": "prompt chars",
}
_TIME = "REPLACE(REPLACE({}, 'T', ' '), 'Z', '')"  # both of Signet's time formats, as text


def doctor_args(argv: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """(the tokens before the command, the arguments after `doctor`) when the command is
    `doctor` (as the hook reads its command line, `config.read_command`), else None."""
    name, rest = scan_argv(argv)[1:3]
    if name != DOCTOR:
        return None
    return list(argv[: len(argv) - len(rest) - 1]), rest


# --- the settings -------------------------------------------------------------------------------


def _field_of(setting: str) -> str | None:
    """The configuration field a problem's setting (an option or its variable) sets."""
    return next((f for name, (f, var) in OPTIONS.items() if setting in (name, var)), None)


def _settings(
    options: Sequence[str], env: Mapping[str, str]
) -> tuple[HookConfig, list[dict[str, Any]], list[str]]:
    """The configuration a session start with these options would run with (a bad setting
    left at its default, by `config.read_command`, the one home of the checks), one row per
    setting (field, text, source, problem) and the problems that are no setting's (unknown
    options, stray words)."""
    command = read_command([*options, SESSION_START], env)
    problems: dict[str, str] = {}
    unknown: list[str] = []
    for problem in command.problems:
        field = _field_of(problem.setting)
        if field is None:
            unknown.append(str(problem))
        else:
            problems.setdefault(field, str(problem))
    given = {field: text for field, (_, _, text) in scan_argv(options)[0].items()}
    sources = setting_sources(given, env)
    rows: list[dict[str, Any]] = [
        {"field": f, "text": text, "source": source, "problem": problems.get(f)}
        for f, (text, source) in sources.items()
    ]
    return command.config, rows, unknown


def _why(row: Mapping[str, Any], cfg: HookConfig) -> str:
    """Where a setting came from, in words."""
    field, source = row["field"], row["source"]
    if source == "SIGNET_PATH":
        return "$SIGNET_PATH/memory/memories.db (SIGNET_PATH is set)"
    if source.startswith("--"):
        return f"from {source}"
    if source != "default":
        return f"from ${source}"
    db = Path(cfg.db)
    if field == "db":
        return f"the default, Signet's {DEFAULT_DB}"
    if field == "workbench":
        if Path(cfg.workbench).parent.name == db.name + MODEL_DIR_SUFFIX:
            return "the default: the store's <db>.predictor/workbench.duckdb, which exists"
        return "the default: beside the store, as there is no <db>.predictor/workbench.duckdb"
    if field == "model":
        return f"the default: {SERVED_MODEL_FILE} beside the workbench"
    if field == "signet":
        return "the default: `signet` on PATH"
    return "the default"


# --- the checks ---------------------------------------------------------------------------------


def _count(con: sqlite3.Connection, sql: str) -> int | None:
    try:
        return int(con.execute(sql).fetchone()[0])
    except sqlite3.Error:
        return None


def _check_store(db: Path) -> tuple[dict[str, Any], sqlite3.Connection | None]:
    """Whether the store is there and is Signet's, and what it holds; its connection
    (read-only) when it is."""
    out: dict[str, Any] = {"path": str(db), "exists": db.is_file()}
    if not out["exists"]:
        out["problem"] = f"no Signet store at {db}"
        return out, None
    con, why = open_store_for(db, 2.0)
    if con is None:
        out["problem"] = why
        return out, None
    out["memories"] = _count(con, "SELECT COUNT(*) FROM memories")
    if out["memories"] is None:
        con.close()
        out["problem"] = f"{db} is not a Signet store (it has no memories table)"
        return out, None
    out["sessions"] = _count(con, "SELECT COUNT(DISTINCT session_key) FROM session_memories")
    out["scored_sessions"] = _count(
        con, "SELECT COUNT(DISTINCT session_key) FROM session_scores WHERE score IS NOT NULL"
    )
    return out, con


def latest_session(con: sqlite3.Connection) -> dict[str, Any] | None:
    """The store's latest session start (by its candidates' rows): its key, agent, start,
    project (from its score, when it has one) and the memories it injected, in Signet's order
    (all its start candidates when it injected none); None when the store records none."""
    cols = {r[1] for r in con.execute("PRAGMA table_info(session_memories)")}
    agent = "agent_id" if "agent_id" in cols else "'default'"
    row = con.execute(
        f"SELECT session_key, {agent}, MIN({_TIME.format('created_at')}) FROM session_memories "
        f"GROUP BY session_key, {agent} ORDER BY MAX({_TIME.format('created_at')}) DESC, "
        "session_key DESC LIMIT 1"
    ).fetchone()
    if row is None:
        return None
    key, agent_id, start = row
    where = f"session_key = ? AND {agent} = ? AND memory_id IN (SELECT id FROM memories)"
    order = "ORDER BY rank, memory_id"
    ids = [
        r[0]
        for r in con.execute(
            f"SELECT memory_id FROM session_memories WHERE {where} AND was_injected = 1 {order}",
            [key, agent_id],
        )
    ]
    if not ids:
        ids = [
            r[0]
            for r in con.execute(
                f"SELECT memory_id FROM session_memories WHERE {where} AND source != 'fts_only' "
                f"{order}",
                [key, agent_id],
            )
        ]
    try:
        project = con.execute(
            "SELECT project FROM session_scores WHERE session_key = ? AND project IS NOT NULL "
            "LIMIT 1",
            [key],
        ).fetchone()
    except sqlite3.Error:
        project = None
    return {
        "session_key": key,
        "agent_id": agent_id,
        "start": start,
        "ids": ids,
        "project": project[0] if project else None,
    }


def _check_model(path: Path) -> tuple[dict[str, Any], Any]:
    """Whether the model is there and loads as the hook loads it; the scorer when it does."""
    out: dict[str, Any] = {"path": str(path), "exists": path.is_file()}
    if not out["exists"]:
        out["problem"] = f"no model at {path}"
        return out, None
    started = time.perf_counter()
    try:
        scorer, why = open_scorer(path)
    except Exception as exc:  # noqa: BLE001 - the hook fails open on it; doctor names it
        scorer, why = None, failure_text(exc)
    out["load_ms"] = round((time.perf_counter() - started) * 1000.0, 1)
    if scorer is None:
        out["problem"] = f"the model at {path} does not load: {why}"
        return out, None
    out["model_version"] = scorer.info.model_version or None
    return out, scorer


def _check_scoring(con: sqlite3.Connection, scorer: Any, cfg: HookConfig) -> dict[str, Any]:
    """The hook's ranking of the store's latest session, timed."""
    # here: numpy loads with the ranking, so a broken numpy is this check's finding, not a crash
    from signet_scorer.hook.rank import HookSession, rerank

    try:
        session = latest_session(con)
    except sqlite3.Error as exc:
        return {"problem": f"the store's sessions cannot be read: {exc}"}
    if session is None or not session["ids"]:
        return {"session_key": None}
    out = {k: session[k] for k in ("session_key", "agent_id", "project", "start")}
    out["memories"] = len(session["ids"])
    hook_session = HookSession(
        now=parse_utc(session["start"]),
        tz=cfg.zone(),
        project=session["project"],
        session_key=session["session_key"],
        agent_id=session["agent_id"],
    )
    started = time.perf_counter()
    try:
        ranking = rerank(con, scorer, hook_session, session["ids"], cfg.limit)
    except Exception as exc:  # noqa: BLE001 - the hook fails open on it; doctor names it
        out["problem"] = f"the model does not rank session {session['session_key']}: " + (
            failure_text(exc)
        )
        return out
    out["ms"] = round((time.perf_counter() - started) * 1000.0, 1)
    out.update(
        pool=ranking.pool,
        injected=len(ranking.order),
        context_rule=ranking.context_rule,
        moved=sum(i != r for r, i in enumerate(ranking.order)),
    )
    return out


def _check_resident(cfg: HookConfig) -> dict[str, Any]:
    if cfg.resident == "off":
        return {"mode": "off"}

    try:
        return {"mode": cfg.resident, **resident_status(cfg.files)}
    except OSError as exc:
        return {"mode": cfg.resident, "running": False, "why": str(exc)}


def last_invocations(log: Path, n: int = LAST_INVOCATIONS) -> list[dict[str, Any]]:
    """The hook log's last `n` invocations, newest first (read-only; none without a log)."""
    if not log.is_file():
        return []
    cols = (
        "at",
        "session_key",
        "harness",
        "project",
        "outcome",
        "reason",
        "model_version",
        "pool",
        "injected",
        "signet_exit",
        "duration_ms",
    )
    con = sqlite3.connect(log.resolve().as_uri() + "?mode=ro", uri=True, timeout=1.0)
    try:
        has_hook = any(r[1] == "hook" for r in con.execute("PRAGMA table_info(hook_invocations)"))
        hook = "COALESCE(hook, 'session-start')" if has_hook else "'session-start'"
        rows = con.execute(
            f"SELECT {', '.join(cols)}, {hook} FROM hook_invocations ORDER BY id DESC LIMIT ?",
            [n],
        ).fetchall()
    finally:
        con.close()
    return [dict(zip((*cols, "hook"), r, strict=True)) for r in rows]


def _check_log(cfg: HookConfig) -> dict[str, Any]:
    log = Path(cfg.log)
    out: dict[str, Any] = {"path": str(log), "folder_exists": log.parent.is_dir()}
    try:
        out["invocations"] = last_invocations(log)
    except sqlite3.Error as exc:
        out.update(invocations=[], problem=f"the hook log {log} cannot be read: {exc}")
    return out


def _which(signet: str) -> str | None:
    found = shutil.which(signet)
    return str(Path(found).resolve()) if found else None


# --- the verdict --------------------------------------------------------------------------------


def train_target(cfg: HookConfig, rows: Sequence[Mapping[str, Any]]) -> tuple[Path, Path]:
    """(the folder to train into, the model to export) so that the hook finds the model: the
    store's `<db>.predictor` folder (the default workbench once it exists) unless the workbench
    or the model is given."""
    source = {r["field"]: r["source"] for r in rows}
    db, model = Path(cfg.db), Path(cfg.model)
    if source["model"] == source["workbench"] == "default":
        folder = db.with_name(db.name + MODEL_DIR_SUFFIX)
        return folder, folder / SERVED_MODEL_FILE
    return model.parent, model


def train_command(cfg: HookConfig, rows: Sequence[Mapping[str, Any]]) -> str:
    """The commands that train and export a model where the hook looks for it."""
    folder, model = train_target(cfg, rows)
    return (
        f"signet-bench train --db {_arg(cfg.db)} --out {_arg(folder)} && "
        f"signet-bench export --model {_arg(folder / CHECKPOINT_FILE)} --out {_arg(model)}"
    )


def _arg(path: str | Path) -> str:

    return shlex.quote(str(path))


def _blocker(report: dict[str, Any], cfg: HookConfig) -> str | None:
    """The first thing that keeps the hook from injecting the scorer's order, and what to do
    about it; None when nothing does."""
    bad = [r for r in report["settings"] if r["problem"]]
    if report["unknown"]:
        return (
            f"remove what signet-bench-hook does not know from its options "
            f"({report['unknown'][0]}): while it is there, the hook prints Signet's output "
            "unchanged"
        )
    if bad:
        return (
            f"fix {bad[0]['problem']}: while a setting is bad, the hook prints Signet's "
            "output unchanged"
        )
    store, model = report["store"], report["model"]
    scoring: dict[str, Any] = report.get("scoring") or {}
    if report["signet"]["found"] is None:
        return (
            f"`{cfg.signet}` is not found: install Signet, or give its path with "
            "--signet PATH (the harness's PATH must find it too)"
        )
    if not store["exists"]:
        return (
            f"{store['problem']}: give the store with --db PATH, or set SIGNET_PATH "
            "to the folder Signet keeps (~/.agents by default)"
        )
    if store.get("problem"):
        return f"{store['problem']}: give Signet's memories.db with --db PATH"
    train = train_command(cfg, report["settings"])
    if not model["exists"]:
        if not store.get("scored_sessions"):
            return (
                f"{model['problem']}, and the store has no scored session to train "
                f"on yet: use Signet (a session is scored when it ends), then {train}"
            )
        folder, target = train_target(cfg, report["settings"])
        if target != Path(cfg.model):
            return (
                f"{model['problem']}: train one into {folder}, the hook's workbench and model "
                f"folder once it exists: {train}"
            )
        return f"{model['problem']}: train one where the hook looks: {train}"
    if model.get("problem"):
        return f"{model['problem']}: train and export it again: {train}"
    if scoring.get("problem"):
        return f"{scoring['problem']} (the hook keeps Signet's order)"
    return None


def _verdict(report: dict[str, Any], cfg: HookConfig) -> tuple[bool, str]:
    """(whether the hook would inject the scorer's order, the verdict line)."""
    blocker = _blocker(report, cfg)
    if blocker is not None:
        return False, blocker
    invocations = report["log"]["invocations"]
    if not invocations:
        return True, (
            "the scorer is ready: no session start has come through signet-bench-hook "
            "with these settings yet (install it in the harness's hook settings)"
        )
    starts = [i for i in invocations if i.get("hook", SESSION_START) == SESSION_START]
    if not starts:
        return True, "the scorer is ready: the log's last invocations are prompts only"
    last = starts[0]
    if last["outcome"] != "scorer":
        return True, (
            f"the scorer is ready, but the last session start ({last['at']}) kept "
            f"Signet's order: {last['reason']}"
        )
    return True, "the scorer is serving"


def diagnose(argv: Sequence[str], env: Mapping[str, str]) -> dict[str, Any]:
    """doctor's report: settings, store, workbench, model, signet, scoring, resident, log and
    verdict (`serving`, `verdict`), as plain data."""
    options = (doctor_args(argv) or ([], []))[0]
    cfg, rows, unknown = _settings(options, env)
    relative = {f for f in PATHS[:3] if not Path(getattr(cfg, f)).is_absolute()}
    cfg = cfg._replace(**{f: str(Path(getattr(cfg, f)).absolute()) for f in relative})
    for row in rows:
        row["why"] = _why(row, cfg)
        row["value"] = str(getattr(cfg, row["field"]))
        if row["field"] in relative and row["text"] is not None:
            row["note"] = (
                "a relative path: the hook reads it from the harness's working "
                "directory, which is the project's; give an absolute one"
            )
    report: dict[str, Any] = {"settings": rows, "unknown": unknown}
    store, con = _check_store(Path(cfg.db))
    wb = Path(cfg.workbench)
    report.update(
        store=store,
        workbench={"path": str(wb), "exists": wb.is_file(), "folder_exists": wb.parent.is_dir()},
    )
    report["signet"] = {"command": cfg.signet, "found": _which(cfg.signet)}
    try:
        report["model"], scorer = _check_model(Path(cfg.model))
        if con is not None and scorer is not None:
            report["scoring"] = _check_scoring(con, scorer, cfg)
    finally:
        if con is not None:
            con.close()
    report["resident"] = _check_resident(cfg)
    report["log"] = _check_log(cfg)
    report["serving"], report["verdict"] = _verdict(report, cfg)
    return report


# --- the report for a person --------------------------------------------------------------------


def _there(exists: bool) -> str:
    return "exists" if exists else "does not exist"


def _store_line(store: Mapping[str, Any]) -> str:
    if store.get("problem"):
        return store["problem"]
    counts = [f"{store['memories']:,} memories"]
    if store.get("sessions") is not None:
        counts.append(
            f"{store['sessions']:,} sessions ({store.get('scored_sessions') or 0:,} scored)"
        )
    return "opens read-only: " + ", ".join(counts)


def _model_line(model: Mapping[str, Any]) -> str:
    if model.get("problem"):
        return model["problem"]
    version = model.get("model_version") or "unversioned"
    return f"loads in {model['load_ms']:g} ms (version {version})"


def _scoring_line(s: Mapping[str, Any] | None) -> str:
    if s is None:
        return "not tried (needs the store and the model)"
    if s.get("problem"):
        return s["problem"]
    if s.get("session_key") is None:
        return "the store records no session start yet: nothing to score"
    where = f", project {s['project']}" if s.get("project") else ""
    return (
        f"scored {s['memories']} memories of session {s['session_key']} ({s['start']}"
        f"{where}) in {s['ms']:g} ms: a pool of {s['pool']}, {s['moved']} of them placed "
        f"otherwise than by Signet, context: {s['context_rule']}"
    )


def _resident_line(r: Mapping[str, Any], has_model: bool) -> str:
    if r["mode"] == "off":
        return "off (--resident off): each session start ranks in the hook's own process"
    if not r.get("running"):
        if not has_model:
            return "not running (none is started while there is no model)"
        return "not running: the next session start ranks in the hook's own process and starts it"
    if not r.get("answering"):
        return f"pid {r.get('pid')} holds its lock but does not answer: {r.get('why')}"
    models = ", ".join(str(m.get("model_version") or m.get("path")) for m in r.get("models", []))
    return (
        f"running (pid {r['pid']}, up {r['uptime_s']:.0f} s, {r['requests']} requests, "
        f"models: {models or 'none loaded yet'})"
    )


def _invocation_line(inv: Mapping[str, Any]) -> str:
    who = " ".join(str(inv[k]) for k in ("harness", "project") if inv.get(k))
    key = inv["session_key"] or "(no session key)"
    prompt = inv.get("hook") == USER_PROMPT_SUBMIT
    if inv["outcome"] == "scorer":
        what = (
            f"served: the scorer's {'memories for the prompt' if prompt else 'order'}, "
            f"{inv['injected']} of {inv['pool']} memories "
            f"(model {inv['model_version'] or 'unversioned'})"
        )
    else:
        what = f"failed open (Signet's output): {inv['reason']}"
    ms = "" if inv["duration_ms"] is None else f", {inv['duration_ms']:.0f} ms"
    return f"  {inv['at']}  {key}  {who}{' prompt' if prompt else ''}: {what}{ms}"


def _value(field: str, row: Mapping[str, Any]) -> str:
    """A setting's value with its unit."""
    if row["problem"]:
        return row["text"]
    if field == "tz" and not row["text"]:
        return "the machine's"
    unit = {"budget_ms": " ms", "idle_s": " s"}.get(field)
    return f"{float(row['value']):g}{unit}" if unit else row["value"]


def render(report: Mapping[str, Any]) -> str:
    """The report as text for a person."""
    rows = {r["field"]: r for r in report["settings"]}
    lines: list[str] = []
    for field in PATHS:
        r = rows[field]
        lines.append(f"{_NAMES[field] + ':':<11}{r['value']}")
        lines.append(f"{'':11}({r['why']})")
        if r["problem"]:
            lines.append(f"{'':11}BAD: {r['problem']}")
        if r.get("note"):
            lines.append(f"{'':11}NOTE: {r['note']}")
        if field == "db":
            lines.append(f"{'':11}{_store_line(report['store'])}")
        elif field == "workbench":
            wb = report["workbench"]
            lines.append(
                f"{'':11}{_there(wb['exists'])}; the model and the hook log live beside "
                f"it, in {Path(wb['path']).parent} ({_there(wb['folder_exists'])})"
            )
        elif field == "model":
            lines.append(f"{'':11}{_model_line(report['model'])}")
        else:
            found = report["signet"]["found"]
            lines.append(f"{'':11}{'found: ' + found if found else 'not found'}")
    others = [r for f, r in rows.items() if f not in PATHS]
    said = [f"{_NAMES[r['field']]} {_value(r['field'], r)} ({r['source']})" for r in others]
    lines.append(f"{'settings:':<11}" + ", ".join(said))
    lines += [f"{'':11}BAD: {r['problem']}" for r in others if r["problem"]]
    if report["unknown"]:
        lines += [f"{'':11}BAD: {u}" for u in report["unknown"]]
    lines.append(f"{'scoring:':<11}{_scoring_line(report.get('scoring'))}")
    has_model = report["model"]["exists"]
    lines.append(f"{'resident:':<11}{_resident_line(report['resident'], has_model)}")
    log = report["log"]
    invs = log["invocations"]
    if log.get("problem"):
        lines.append(f"{'log:':<11}{log['problem']}")
    elif invs:
        kinds = {i.get("hook", SESSION_START) for i in invs}
        what = "session starts" if kinds == {SESSION_START} else "invocations (prompts marked)"
        lines.append(f"{'log:':<11}{log['path']}: the last {len(invs)} {what}, newest first")
        lines += [_invocation_line(i) for i in invs]
    elif not log["folder_exists"]:
        lines.append(
            f"{'log:':<11}none: the hook records session starts in {log['path']} only "
            "when its folder exists"
        )
    else:
        lines.append(f"{'log:':<11}no session start recorded yet in {log['path']}")
    lines.append(f"{'verdict:':<11}{report['verdict']}")
    return "\n".join(lines) + "\n"


def doctor_command(argv: Sequence[str], env: Mapping[str, str]) -> int | None:
    """`doctor`: print the report (as JSON with `--json`) and return 0 when the scorer would
    serve, 1 when not (2: doctor's own arguments are wrong); None when `argv` is not a doctor
    command."""
    parsed = doctor_args(argv)
    if parsed is None:
        return None
    rest = parsed[1]
    if rest not in ([], ["--json"]):
        sys.stderr.write(f"signet-bench-hook: doctor takes only --json, got {rest!r}\n")
        return 2
    report = diagnose(argv, env)
    text = json.dumps(report, indent=2, default=str) + "\n" if rest else render(report)
    sys.stdout.write(text)
    return 0 if report["serving"] else 1
