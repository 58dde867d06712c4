"""LoCoMo conversations as Signet stores: one store per conversation (one user), its QA items
as labelled question-sessions.

LoCoMo (Maharana et al., ACL 2024; docs/specification.md §1) holds long two-speaker
conversations split into dated sessions, generated per-session observations (facts, each
citing the dialog turn it came from), per-session summaries and QA items whose `evidence` lists
the dialog turns that answer them. The conversion:

- **Memories** are the observations by default (`kinds` may add or choose dialog turns and
  session summaries). Each keeps its source turns (`memories.source_id`, comma-separated dia
  ids; a summary's sources are every turn of its session). Texts that Signet would store as
  one memory (equal content hash) are merged, their sources united.
- **created_at** is the date-time of the memory's session (LoCoMo gives no zone: UTC) plus one
  second per dialog turn of the conversation before the memory's earliest source turn in that
  session (`turn_offsets`), so memories keep the conversation's order as a real store's
  distinct extraction times do; a session summary, and a memory with no source turn in its
  session, take the session's time. The turn ids build this order only; no signal reads them.
- **type and importance** (`memory_type_importance`): a base importance per kind (observation
  0.5, session summary 0.4, dialog turn 0.3: extracted facts matter more than raw talk); text
  stating a plan or decision is a `decision` (+0.2), a like or dislike a `preference`
  (+0.1), anything else a `fact`; dialog turns under 25 characters ("Thanks!") lose 0.2.
- **Embeddings** come from the offline embedder (`world/embed.py`, wordllama by default; any
  registered name, e.g. `minilm` when the optional extra is installed).
- **Queries** are the QA items except category 5 (adversarial: no answer in the conversation).
  The audit's corrections are applied first (`audit_corrections`). Evidence ids are parsed
  leniently ("D8:6; D9:17" is two ids); a malformed id ("D", "D:11:26") or one that names no
  turn of the conversation is reported and dropped, and a question left without evidence is
  reported and skipped. Nothing malformed stops the conversion.
- **Relevance** of a memory to a question: binary, 1 when one of its source turns is in the
  evidence; graded (`GRADED_RELEVANCE`), 2 for such a memory, 1 for a memory of a session
  that holds an evidence turn (the right part of the conversation, not the answer), else 0.
- Each query is **recorded as a session** through the store writers: a `session_scores` row
  (continuity 1.0, confidence 1.0) and one `session_memories` row per live memory, ranked by
  effectiveScore at the question time, `was_injected` = relevant, `relevance_score` = the
  graded relevance / 2 (the judge's rating). Questions are asked one day after the last
  session, one minute apart in QA order. The question texts, categories, evidence and
  embeddings are kept in the store's own tables `locomo_meta` and `locomo_queries`.
- The **knowledge graph** (`world/locomo_graph.py`: the speakers and the named things the
  memories mention, their mentions, per-session aspects, attributes pointing at the memories,
  co-occurrence dependencies) fills the store's graph tables (`store.graph_write`): `entities`,
  `memory_entity_mentions`, `entity_aspects`, `entity_attributes`, and `relations` on a 0.58
  store or `entity_dependencies` on a current one. It adds rows to those tables only, so the
  memories, embeddings, FTS index and recorded sessions are the same with or without it.
"""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from signet_bench.daemon.ranking.baseline import age_days, effective_score, rank_order
from signet_bench.errors import UserError
from signet_bench.store.content import content_hash, storage_content
from signet_bench.store.graph_write import write_graph
from signet_bench.store.schema import new_store
from signet_bench.store.timestamps import format_iso, parse_ts
from signet_bench.store.write import (
    CandidateRow,
    insert_embeddings,
    insert_memories,
    insert_session_score,
    record_session_candidates,
    transaction,
    write_relevance_scores,
)
from signet_bench.world.embed import Embedder
from signet_bench.world.locomo_graph import build_graph

__all__ = [
    "CATEGORIES",
    "GRADED_RELEVANCE",
    "MEMORY_KINDS",
    "SAMPLE_INDEX",
    "Conversation",
    "ConversionResult",
    "LocomoMemory",
    "Problem",
    "Query",
    "audit_corrections",
    "conversation_memories",
    "conversation_queries",
    "convert_locomo",
    "load_audit",
    "load_locomo",
    "memory_type_importance",
    "parse_conversation",
    "read_queries",
    "relevance",
    "split_dia_ids",
    "turn_offsets",
    "write_conversation_store",
]

CATEGORIES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
ADVERSARIAL = 5
# Position of each sample in the original 10-sample locomo10.json (the audit's question ids).
SAMPLE_INDEX: Mapping[str, int] = {
    f"conv-{n}": i for i, n in enumerate((26, 30, 41, 42, 43, 44, 47, 48, 49, 50))
}
MEMORY_KINDS = ("observation", "turn", "summary")
GRADED_RELEVANCE = {"evidence": 2.0, "same_session": 1.0}
DATE_FORMAT = "%I:%M %p on %d %B, %Y"
_DIA_ID = re.compile(r"^D(\d+):(\d+)$")
_SEPARATORS = re.compile(r"[;,\s]+")
_AUDIT_ID = re.compile(r"^locomo_(\d+)_qa(\d+)$")
_KIND_IMPORTANCE = {"observation": 0.5, "summary": 0.4, "turn": 0.3}
_SHORT_TURN = 25  # characters: a shorter dialog turn carries too little to be a memory
_DECISION = re.compile(
    r"\b(decided|decides|plans?|planning|planned|going to|will|intends?|wants? to|goal)\b",
    re.IGNORECASE,
)
_PREFERENCE = re.compile(
    r"\b(loves?|likes?|enjoys?|prefers?|favou?rite|hates?|dislikes?)\b", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Problem:
    """One input problem that was skipped: which conversation, where, the value, why."""

    sample_id: str
    where: str
    value: str
    reason: str

    def __str__(self) -> str:
        return f"{self.sample_id} {self.where}: {self.value!r}: {self.reason}"


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialog turn."""

    dia_id: str
    session: int
    speaker: str
    text: str


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo sample, parsed: its dated sessions and what each holds."""

    sample_id: str
    speakers: tuple[str, str]
    session_times: Mapping[int, datetime]  # session number -> aware date-time (UTC)
    turns: tuple[Turn, ...]
    observations: tuple[tuple[int, str, str, tuple[str, ...]], ...]  # session, speaker, text, src
    summaries: tuple[tuple[int, str], ...]  # session, text
    qa: tuple[Mapping[str, Any], ...]

    @property
    def dia_ids(self) -> frozenset[str]:
        return frozenset(t.dia_id for t in self.turns)

    @property
    def asked_at(self) -> datetime:
        """When the questions are asked: one day after the last session."""
        return max(self.session_times.values()) + timedelta(days=1)


@dataclass(frozen=True, slots=True)
class LocomoMemory:
    """One memory of a conversation's store."""

    id: str
    kind: str
    content: str
    session: int
    created_at: datetime
    sources: tuple[str, ...]  # dia ids of its source turns
    speaker: str | None
    type: str
    importance: float


@dataclass(frozen=True, slots=True)
class Query:
    """One question: its evidence turns (audit corrections applied) and where it came from."""

    key: str  # the session key
    sample_id: str
    qa_index: int
    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]
    audited: bool  # evidence replaced by the audit's correct_evidence


def split_dia_ids(value: object) -> tuple[list[str], list[str]]:
    """(valid, malformed) dia ids of an evidence or source value: a list, or a string of ids
    separated by commas, semicolons or spaces; valid ids look like `D<session>:<turn>`."""
    items = value if isinstance(value, list | tuple) else [value]
    parts = [p for item in items for p in _SEPARATORS.split(str(item).strip()) if p]
    valid = [p for p in parts if _DIA_ID.match(p)]
    return valid, [p for p in parts if not _DIA_ID.match(p)]


def _session_number(dia_id: str) -> int:
    return int(_DIA_ID.match(dia_id).group(1))  # type: ignore[union-attr]


def load_locomo(path: str | Path) -> list[dict[str, Any]]:
    """The samples of a LoCoMo JSON file (a list of samples)."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{p}: no such file") from None
    except (OSError, ValueError) as exc:
        raise UserError(f"{p}: not a LoCoMo JSON file ({exc})") from None
    if not isinstance(doc, list) or not all(isinstance(s, dict) for s in doc):
        raise UserError(f"{p}: expected a list of samples")
    for i, s in enumerate(doc):
        missing = [k for k in ("sample_id", "conversation", "qa") if k not in s]
        if missing:
            raise UserError(f"{p}: sample {i} has no {', '.join(missing)}")
    return doc


def _session_times(sample_id: str, conv: Mapping[str, Any], problems: list[Problem]):
    """Session number -> date-time for the sessions that have turns (dates of sessions that
    do not exist are ignored; a session without a readable date is reported)."""
    numbers = sorted(
        int(k.split("_")[1])
        for k, v in conv.items()
        if re.fullmatch(r"session_\d+", k) and isinstance(v, list)
    )
    times: dict[int, datetime] = {}
    for n in numbers:
        raw = conv.get(f"session_{n}_date_time")
        try:
            times[n] = datetime.strptime(str(raw).strip(), DATE_FORMAT).replace(tzinfo=UTC)
        except ValueError:
            problems.append(Problem(sample_id, f"session_{n}_date_time", str(raw), "bad date"))
    return times


def _observations(sample: Mapping[str, Any], times: Mapping[int, datetime], problems: list):
    sid = sample["sample_id"]
    out = []
    for key, by_speaker in (sample.get("observation") or {}).items():
        m = re.fullmatch(r"session_(\d+)_observation", key)
        if not m or int(m.group(1)) not in times:
            continue
        for speaker, facts in by_speaker.items():
            for i, item in enumerate(facts):
                text, src = (item[0], item[1]) if len(item) >= 2 else (item[0], "")
                valid, bad = split_dia_ids(src)
                for b in bad:
                    problems.append(Problem(sid, f"{key} {speaker}[{i}]", b, "malformed source id"))
                out.append((int(m.group(1)), speaker, str(text), tuple(valid)))
    return tuple(out)


def parse_conversation(sample: Mapping[str, Any], problems: list[Problem]) -> Conversation:
    """A sample as a `Conversation`; what cannot be used is appended to `problems`."""
    sid = str(sample["sample_id"])
    conv = sample["conversation"]
    times = _session_times(sid, conv, problems)
    turns = tuple(
        Turn(str(t["dia_id"]), n, str(t.get("speaker", "")), str(t.get("text", "")))
        for n in sorted(times)
        for t in conv[f"session_{n}"]
        if _DIA_ID.match(str(t.get("dia_id", "")))
    )
    summaries = tuple(
        (int(m.group(1)), str(text))
        for key, text in (sample.get("session_summary") or {}).items()
        if (m := re.fullmatch(r"session_(\d+)_summary", key)) and int(m.group(1)) in times
    )
    return Conversation(
        sample_id=sid,
        speakers=(str(conv.get("speaker_a", "")), str(conv.get("speaker_b", ""))),
        session_times=times,
        turns=turns,
        observations=_observations(sample, times, problems),
        summaries=summaries,
        qa=tuple(sample["qa"]),
    )


def memory_type_importance(kind: str, text: str) -> tuple[str, float]:
    """The documented heuristic: (Signet memory type, importance in [0.05, 1])."""
    imp = _KIND_IMPORTANCE[kind]
    if _DECISION.search(text):
        kind_type, imp = "decision", imp + 0.2
    elif _PREFERENCE.search(text):
        kind_type, imp = "preference", imp + 0.1
    else:
        kind_type = "fact"
    if kind == "turn" and len(text.strip()) < _SHORT_TURN:
        imp -= 0.2
    return kind_type, float(min(1.0, max(0.05, imp)))


def turn_offsets(conv: Conversation) -> dict[str, int]:
    """dia id -> its turn's place in the conversation (0-based): the seconds its memories come
    after their session's date-time."""
    return {t.dia_id: i for i, t in enumerate(conv.turns)}


def _created_at(conv: Conversation, session: int, src: Sequence[str], offsets) -> datetime:
    """The session's date-time plus the offset of the earliest source turn of that session
    (none: the session's time)."""
    own = [offsets[d] for d in src if d in offsets and _session_number(d) == session]
    return conv.session_times[session] + timedelta(seconds=min(own, default=0))


def _raw_memories(conv: Conversation, kinds: Sequence[str]):
    """(kind, session, created_at, text, sources, speaker) of every memory before merging."""
    out = []
    offsets = turn_offsets(conv)
    if "observation" in kinds:
        for session, speaker, text, src in conv.observations:
            at = _created_at(conv, session, src, offsets)
            out.append(("observation", session, at, text, src, speaker))
    if "turn" in kinds:
        for t in conv.turns:
            at = _created_at(conv, t.session, (t.dia_id,), offsets)
            out.append(("turn", t.session, at, t.text, (t.dia_id,), t.speaker))
    if "summary" in kinds:
        by_session: dict[int, list[str]] = {}
        for t in conv.turns:
            by_session.setdefault(t.session, []).append(t.dia_id)
        for session, text in conv.summaries:
            src = tuple(by_session.get(session, ()))
            out.append(("summary", session, conv.session_times[session], text, src, None))
    return out


def conversation_memories(
    conv: Conversation, kinds: Sequence[str] = ("observation",)
) -> list[LocomoMemory]:
    """The memories of a conversation (`kinds` from MEMORY_KINDS), equal texts merged."""
    unknown = [k for k in kinds if k not in MEMORY_KINDS]
    if unknown or not kinds:
        raise UserError(f"memory kinds {list(kinds)}: choose from {', '.join(MEMORY_KINDS)}")
    merged: dict[str, dict[str, Any]] = {}
    for kind, session, at, text, src, speaker in _raw_memories(conv, kinds):
        content = storage_content(text)
        if not content:
            continue
        h = content_hash(content)
        if h in merged:
            m = merged[h]
            m["sources"] = tuple(dict.fromkeys((*m["sources"], *src)))
            continue
        mtype, imp = memory_type_importance(kind, content)
        mid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"locomo:{conv.sample_id}:{h}"))
        merged[h] = {
            "id": mid,
            "kind": kind,
            "content": content,
            "session": session,
            "created_at": at,
            "sources": tuple(src),
            "speaker": speaker,
            "type": mtype,
            "importance": imp,
        }
    return [LocomoMemory(**m) for m in merged.values()]


def load_audit(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """The entries of audit files (`errors.json` lists of entries with `question_id`)."""
    entries: list[dict[str, Any]] = []
    for path in paths:
        p = Path(path)
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise UserError(f"{p}: not a readable audit file ({exc})") from None
        if not isinstance(doc, list):
            raise UserError(f"{p}: expected a list of audit entries")
        entries += [e for e in doc if isinstance(e, dict)]
    return entries


def audit_corrections(
    entries: Iterable[Mapping[str, Any]],
    samples: Sequence[Mapping[str, Any]],
    problems: list[Problem],
    error_types: Sequence[str] = ("WRONG_CITATION",),
) -> dict[tuple[str, int], tuple[str, ...]]:
    """(sample id, QA index) -> corrected evidence, from the entries of `error_types` whose
    conversation is among `samples`. An entry is matched through `SAMPLE_INDEX` and must quote
    the QA item's question exactly; one that does not is reported and not applied."""
    by_index = {SAMPLE_INDEX[s["sample_id"]]: s for s in samples if s["sample_id"] in SAMPLE_INDEX}
    out: dict[tuple[str, int], tuple[str, ...]] = {}
    for e in entries:
        if e.get("error_type") not in error_types or "correct_evidence" not in e:
            continue
        m = _AUDIT_ID.match(str(e.get("question_id", "")))
        if m is None or int(m.group(1)) not in by_index:
            continue  # an entry for another conversation (or not a QA id): not ours
        sample, qa = by_index[int(m.group(1))], int(m.group(2))
        sid = str(sample["sample_id"])
        if qa >= len(sample["qa"]) or sample["qa"][qa].get("question") != e.get("question"):
            problems.append(
                Problem(
                    sid, f"audit {e['question_id']}", str(e.get("question")), "question differs"
                )
            )
            continue
        out[(sid, qa)] = tuple(str(x) for x in e.get("correct_evidence") or ())
    return out


def conversation_queries(
    conv: Conversation,
    corrections: Mapping[tuple[str, int], tuple[str, ...]],
    problems: list[Problem],
) -> list[Query]:
    """The conversation's questions except the adversarial ones, with usable evidence only."""
    known = conv.dia_ids
    out = []
    for i, qa in enumerate(conv.qa):
        cat = int(qa.get("category", 0))
        if cat == ADVERSARIAL:
            continue
        where = f"qa[{i}]"
        if cat not in CATEGORIES:
            problems.append(Problem(conv.sample_id, where, str(qa.get("category")), "category"))
            continue
        audited = (conv.sample_id, i) in corrections
        raw = corrections[(conv.sample_id, i)] if audited else qa.get("evidence") or []
        valid, bad = split_dia_ids(list(raw))
        problems += [Problem(conv.sample_id, where, b, "malformed evidence id") for b in bad]
        problems += [
            Problem(conv.sample_id, where, v, "evidence names no turn of the conversation")
            for v in valid
            if v not in known
        ]
        evidence = tuple(dict.fromkeys(v for v in valid if v in known))
        if not evidence:
            problems.append(Problem(conv.sample_id, where, str(raw), "no usable evidence"))
            continue
        answer = qa.get("answer", qa.get("adversarial_answer", ""))
        key = f"locomo:{conv.sample_id}:qa{i}"
        out.append(
            Query(
                key,
                conv.sample_id,
                i,
                str(qa.get("question", "")),
                str(answer),
                cat,
                evidence,
                audited,
            )
        )
    return out


def relevance(
    sources: Sequence[Sequence[str]], evidence: Iterable[str], *, graded: bool = False
) -> np.ndarray:
    """Per memory (its source dia ids): 1 when a source turn is in the evidence, else 0; with
    `graded`, 2 for those, 1 for a memory of a session holding an evidence turn, else 0."""
    ev = set(evidence)
    sessions = {_session_number(e) for e in ev}
    out = np.zeros(len(sources), dtype=np.float64)
    for i, src in enumerate(sources):
        if ev.intersection(src):
            out[i] = GRADED_RELEVANCE["evidence"] if graded else 1.0
        elif graded and any(_session_number(s) in sessions for s in src):
            out[i] = GRADED_RELEVANCE["same_session"]
    return out


_LOCOMO_DDL = (
    "CREATE TABLE IF NOT EXISTS locomo_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS locomo_queries (
        session_key TEXT PRIMARY KEY, sample_id TEXT NOT NULL, qa_index INTEGER NOT NULL,
        question TEXT NOT NULL, answer TEXT, category INTEGER NOT NULL, evidence TEXT NOT NULL,
        audited INTEGER NOT NULL, asked_at TEXT NOT NULL, embedding BLOB)""",
)


def _memory_rows(memories: Sequence[LocomoMemory]) -> list[dict[str, Any]]:
    return [
        {
            "id": m.id,
            "type": m.type,
            "content": m.content,
            "importance": m.importance,
            "source_id": ",".join(m.sources),
            "source_type": f"locomo-{m.kind}",
            "source_section": f"session_{m.session}",
            "who": m.speaker or "locomo",
            "created_at": m.created_at,
            "updated_at": m.created_at,
            "extraction_status": "completed",
        }
        for m in memories
    ]


def _record_query(
    con: sqlite3.Connection,
    q: Query,
    at: datetime,
    memories: Sequence[LocomoMemory],
    order: np.ndarray,
    eff: np.ndarray,
) -> None:
    """One question as a scored session: every memory a candidate in effectiveScore order,
    the relevant ones injected, the graded relevance / 2 as the judge's rating."""
    grade = relevance([memories[i].sources for i in order], q.evidence, graded=True) / 2.0
    stamp = format_iso(at)
    rows = [
        CandidateRow(
            memories[i].id,
            "effective",
            float(eff[i]),
            None,
            float(eff[i]),
            r,
            bool(grade[r] == 1.0),
        )
        for r, i in enumerate(order.tolist())
    ]
    record_session_candidates(con, q.key, rows, stamp)
    write_relevance_scores(con, q.key, {memories[i].id: grade[r] for r, i in enumerate(order)})
    insert_session_score(
        con,
        q.key,
        score=1.0,
        confidence=1.0,
        novel_context_count=0,
        created_at=stamp,
        memories_recalled=len(rows),
        memories_used=int((grade == 1.0).sum()),
    )


def _write_queries(con, conv, queries, question_vectors, memories) -> None:
    """The queries' own rows and their recorded sessions."""
    created = np.array([m.created_at.timestamp() for m in memories])
    imp = np.array([m.importance for m in memories])
    ids = np.array([m.id for m in memories])
    base = conv.asked_at
    for q, vec in zip(queries, question_vectors, strict=True):
        at = base + timedelta(minutes=q.qa_index)
        eff = effective_score(imp, age_days(created, at.timestamp()), np.zeros(len(imp), bool))
        con.execute(
            "INSERT INTO locomo_queries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                q.key,
                q.sample_id,
                q.qa_index,
                q.question,
                q.answer,
                q.category,
                json.dumps(list(q.evidence)),
                int(q.audited),
                format_iso(at),
                np.asarray(vec, dtype="<f4").tobytes(),
            ),
        )
        _record_query(con, q, at, memories, rank_order(eff, ids), eff)


def write_conversation_store(
    path: str | Path,
    conv: Conversation,
    memories: Sequence[LocomoMemory],
    queries: Sequence[Query],
    embedder: Embedder,
    *,
    schema: str = "0.58",
    graph: bool = True,
) -> Path:
    """A new store of release line `schema` at `path` (never overwritten) holding the
    memories with their embeddings, the queries as recorded sessions and (with `graph`) the
    conversation's knowledge graph."""
    p = Path(path)
    if p.exists():
        raise UserError(f"{p}: already exists; refusing to overwrite a store")
    vectors = embedder.embed([m.content for m in memories])
    qvec = embedder.embed([q.question for q in queries])
    with new_store(p, now=conv.asked_at, schema=schema) as con, transaction(con):
        for ddl in _LOCOMO_DDL:
            con.execute(ddl)
        meta = {
            "sample_id": conv.sample_id,
            "embedder": embedder.name,
            "embedding_dim": str(embedder.dim),
            "asked_at": format_iso(conv.asked_at),
        }
        con.executemany("INSERT OR REPLACE INTO locomo_meta VALUES (?, ?)", meta.items())
        insert_memories(con, _memory_rows(memories))
        insert_embeddings(con, [m.id for m in memories], vectors, embedder.name)
        _write_queries(con, conv, queries, qvec, memories)
        if graph:
            write_graph(con, build_graph(conv.sample_id, conv.speakers, memories))
    return p


@dataclass(frozen=True)
class ConversionResult:
    """What `convert_locomo` wrote and what it skipped."""

    stores: dict[str, Path]  # sample id -> store
    memories: dict[str, int]
    queries: dict[str, int]
    problems: list[Problem] = field(default_factory=list)

    def summary(self) -> str:
        lines = [
            f"{sid}: {self.memories[sid]} memories, {self.queries[sid]} queries -> {path}"
            for sid, path in self.stores.items()
        ]
        lines.append(f"{len(self.problems)} problems (skipped):")
        return "\n".join(lines + [f"  {p}" for p in self.problems])


def convert_locomo(
    data: str | Path,
    out_dir: str | Path,
    embedder: Embedder,
    *,
    kinds: Sequence[str] = ("observation",),
    audit: Sequence[str | Path] = (),
    samples: Sequence[str] | None = None,
    schema: str = "0.58",
) -> ConversionResult:
    """Every conversation of `data` (or the `samples` named) as `out_dir/<sample id>.db`, a
    store of release line `schema`."""
    docs = load_locomo(data)
    if samples is not None:
        docs = [d for d in docs if d["sample_id"] in set(samples)]
    problems: list[Problem] = []
    corrections = audit_corrections(load_audit(audit), docs, problems)
    stores, n_mem, n_q = {}, {}, {}
    for doc in docs:
        conv = parse_conversation(doc, problems)
        memories = conversation_memories(conv, kinds)
        queries = conversation_queries(conv, corrections, problems)
        sid = conv.sample_id
        stores[sid] = write_conversation_store(
            Path(out_dir) / f"{sid}.db", conv, memories, queries, embedder, schema=schema
        )
        n_mem[sid], n_q[sid] = len(memories), len(queries)
    return ConversionResult(stores, n_mem, n_q, problems)


def read_queries(con: sqlite3.Connection) -> list[tuple[Query, datetime, np.ndarray]]:
    """The store's queries with their time and question embedding, in QA order."""
    rows = con.execute(
        "SELECT session_key, sample_id, qa_index, question, answer, category, evidence,"
        " audited, asked_at, embedding FROM locomo_queries ORDER BY qa_index"
    ).fetchall()
    return [
        (
            Query(
                r[0],
                r[1],
                int(r[2]),
                r[3],
                r[4] or "",
                int(r[5]),
                tuple(json.loads(r[6])),
                bool(r[7]),
            ),
            parse_ts(r[8]),
            np.frombuffer(r[9], dtype="<f4").astype(np.float32),
        )
        for r in rows
    ]
