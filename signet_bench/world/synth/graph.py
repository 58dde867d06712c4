"""A persona's knowledge graph: the services, shared libraries, people and projects its
memories are about, and how they depend on each other (for a persona with `Persona.graph`).

`plan_graph` is pure and deterministic given the seed, and draws from a random stream of its
own, so the memories are laid out exactly as they would be without a graph. From the persona
and its planned memories it lays out:

- entities: one `project` per persona project, named after it (a session's project finds it
  by name); one service (`system`) per project and topic, its *home*; one library (`tool`) per
  topic, shared by every project on that topic; a few people (`person`), each owning services.
  One library and one person are pinned. Names are single lower-case words of at least four
  letters (people capitalised) that no topic, template or project uses, so a name in a text is
  a mention of that entity and nothing else.
- dependencies: project -> its services, service -> libraries, other services and its owner,
  library -> library. Each is *traversable* (`traversable`: confidence x strength >=
  MIN_DEPENDENCY_STRENGTH and confidence >= MIN_DEPENDENCY_CONFIDENCE, what a one-hop
  traversal follows) or not: too weak, or strong enough but too unsure.
- attachments: a memory is about at most one entity, its *subject* (`SUBJECT_MIX`: the home
  service of its project and topic, the topic's library, that service's owner or the project;
  a global preference now and then a person). It becomes an attribute of the subject's aspect
  for its type, of kind 'constraint' for constraints and a share of decisions (Signet promotes
  decision language to constraints), and its text names the subject (`text.name_entity`),
  now and then also an entity the subject depends on.
- mentions: every memory whose final text names an entity.

A supersession pair shares its subject and aspect; a pair superseded in the graph (mode
'attribute') always has one, and its old attribute is marked 'superseded'. A memory the user
deleted keeps its attribute with status 'deleted'.

The rows are `store.graph_write`'s, which writes them; `WorldGraph.homes` says which sessions
make an entity focal.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from signet_bench.config import DEFAULT_CONFIG
from signet_bench.store.content import content_hash
from signet_bench.store.graph import canonical
from signet_bench.store.graph_write import Aspect, Attribute, Dependency, Entity, Mention
from signet_bench.world.synth.persona import Persona
from signet_bench.world.synth.text import name_entity, tokens

if TYPE_CHECKING:
    from signet_bench.world.synth.memory_spec import MemorySpec

__all__ = [
    "ASPECTS",
    "MIN_DEPENDENCY_CONFIDENCE",
    "MIN_DEPENDENCY_STRENGTH",
    "SUBJECT_MIX",
    "WorldGraph",
    "plan_graph",
    "traversable",
]

MIN_DEPENDENCY_STRENGTH = DEFAULT_CONFIG.min_dependency_strength
"""Signet's `minDependencyStrength` (0.3): a traversal follows an edge when confidence x
strength reaches it (the daemon's own setting, so the world and the traversal agree)."""
MIN_DEPENDENCY_CONFIDENCE = DEFAULT_CONFIG.min_confidence
"""The least confidence (0.5) of an edge a traversal follows (Signet's `minConfidence`)."""

SUBJECT_MIX: dict[str, float] = {"service": 0.34, "library": 0.22, "owner": 0.08, "project": 0.08}
"""What a project memory is about; the remaining 0.28 are about no entity (constraints and
memories superseded in the graph always have a subject)."""
GLOBAL_PERSON_SHARE = 0.1  # global preferences attributed to a person
DECISION_CONSTRAINT_SHARE = 0.35  # decisions whose attribute is promoted to a constraint
DEPENDENCY_MENTION_SHARE = 0.2  # texts that also name an entity their subject depends on
N_PEOPLE = 6

# The chance that an edge is traversable, by kind of edge; the rest are too weak or too unsure.
_P_STRONG = {
    "core": 1.0,  # project -> its first topic's service
    "service": 0.25,  # project -> its other services
    "library": 0.8,  # service -> its topic's library
    "other_library": 0.5,  # service -> the library of another topic of the project
    "call": 0.5,  # service -> another service of the project
    "peer": 0.5,  # service -> the same topic's service in another project
    "owner": 0.5,  # service -> the person who owns it
    "stack": 0.4,  # library -> library
}

ASPECTS: dict[str, str] = {
    "fact": "architecture",
    "decision": "decisions",
    "procedural": "runbook",
    "preference": "conventions",
    "constraint": "rules",
}
"""The aspect of an entity a memory of each type is an attribute of."""

SERVICE_NAMES: tuple[str, ...] = (
    "cartwheel",
    "paylane",
    "ordervault",
    "stockpile",
    "pricebook",
    "gatekeep",
    "sessiond",
    "fleetd",
    "nodewatch",
    "meshgate",
    "buildyard",
    "shipwright",
    "ledgerline",
    "tallyhouse",
    "beacon",
    "lookout",
    "harbor",
    "switchyard",
    "relaybox",
    "signpost",
    "waypoint",
    "quarry",
    "foundry",
    "kiln",
    "lantern",
    "atlas",
    "compass",
    "pipelinr",
)
LIBRARY_NAMES: tuple[str, ...] = (
    "corekit",
    "hashring",
    "retrykit",
    "logline",
    "spanlib",
    "queuekit",
    "chartkit",
    "querykit",
    "gridlib",
    "schemakit",
    "vaultlib",
    "authkit",
    "meshkit",
    "flowkit",
    "docskit",
    "shipkit",
    "podkit",
    "parsekit",
)
PERSON_NAMES: tuple[str, ...] = (
    "Maria",
    "Kenji",
    "Priya",
    "Tomas",
    "Amara",
    "Lukas",
    "Noor",
    "Diego",
)
"""Entity names (a seeded draw from each pool): no topic, template or project uses them."""
_STREAM = 0x6A4F  # the graph's own random stream


@dataclass(frozen=True, slots=True)
class Home:
    """The session project (and focus topic, None for any) that makes an entity a focal
    entity of the session; no project: no session does by its project."""

    project: str | None = None
    topic: str | None = None


@dataclass(frozen=True)
class WorldGraph:
    """A persona's planted knowledge graph and the memory texts that name its entities."""

    entities: tuple[Entity, ...]
    dependencies: tuple[Dependency, ...]
    aspects: tuple[Aspect, ...]
    attributes: tuple[Attribute, ...]
    mentions: tuple[Mention, ...]
    homes: dict[str, Home]  # entity id -> the sessions that make it focal
    subjects: dict[str, tuple[str, str]]  # memory id -> (entity id, kind)
    texts: dict[str, tuple[str, str]]  # memory id -> (content, final content)

    def entity(self, name: str) -> Entity:
        """The entity called `name` (KeyError if none)."""
        for e in self.entities:
            if e.name == name:
                return e
        raise KeyError(f"the graph has no entity {name!r}")


def traversable(strength: float, confidence: float) -> bool:
    """Whether a one-hop traversal follows an edge: confidence x strength >=
    MIN_DEPENDENCY_STRENGTH and confidence >= MIN_DEPENDENCY_CONFIDENCE."""
    return (
        confidence * strength >= MIN_DEPENDENCY_STRENGTH and confidence >= MIN_DEPENDENCY_CONFIDENCE
    )


def _id(*parts: str) -> str:
    """A deterministic row id."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "signet-bench:graph/" + "/".join(parts)))


def _names(pool: Sequence[str], rng: np.random.Generator, n: int) -> list[str]:
    """`n` distinct names from `pool` in a seeded order, numbered once the pool runs out."""
    order = [pool[int(i)] for i in rng.permutation(len(pool))]
    return [
        order[k % len(order)] + ("" if k < len(order) else str(k // len(order) + 1))
        for k in range(n)
    ]


def _entity(
    name: str, entity_type: str, description: str, at: datetime, pinned: bool = False
) -> Entity:
    """An entity row as first laid out: not yet mentioned, dated `at`."""
    return Entity(
        _id("entity", name), name, canonical(name), entity_type, description, 0, at, at, pinned
    )


def _entities(
    persona: Persona, rng: np.random.Generator, start: datetime
) -> tuple[list[Entity], dict[str, Home]]:
    """Projects, one service per project and topic, one library per topic, people; a library
    shared by several projects (if any) and a person pinned. With each one's home (a project's
    is its project, a service's its project and topic, the others have none)."""
    homes = [(p.name, t.name) for p in persona.projects for t in p.topics]
    topics = list(dict.fromkeys(t for _, t in homes))
    services = _names(SERVICE_NAMES, rng, len(homes))
    libraries = _names(LIBRARY_NAMES, rng, len(topics))
    people = _names(PERSON_NAMES, rng, N_PEOPLE)
    shared = [t for t in topics if sum(t == h for _, h in homes) > 1] or topics
    pinned_topic = shared[int(rng.integers(len(shared)))]
    pinned_person = people[int(rng.integers(len(people)))]
    projects = [
        _entity(p.name, "project", f"the {p.name} project", start) for p in persona.projects
    ]
    systems = [
        _entity(s, "system", f"the {t} service of {p}", start)
        for s, (p, t) in zip(services, homes, strict=True)
    ]
    out = [*projects, *systems]
    out += [
        _entity(lib, "tool", f"the shared {t} library", start, pinned=t == pinned_topic)
        for lib, t in zip(libraries, topics, strict=True)
    ]
    out += [
        _entity(n, "person", "a colleague who owns services", start, pinned=n == pinned_person)
        for n in people
    ]
    where = {e.id: Home(e.name) for e in projects}
    where |= {e.id: Home(p, t) for e, (p, t) in zip(systems, homes, strict=True)}
    return out, {e.id: where.get(e.id, Home()) for e in out}


class _Index:
    """Lookups over the entities: project, home service, topic library, owner."""

    def __init__(
        self,
        entities: Sequence[Entity],
        homes: dict[str, Home],
        persona: Persona,
        rng: np.random.Generator,
    ):
        self.by_id = {e.id: e for e in entities}
        self.project = {e.name: e for e in entities if e.entity_type == "project"}
        self.service = {
            (homes[e.id].project, homes[e.id].topic): e
            for e in entities
            if e.entity_type == "system"
        }
        topics = list(dict.fromkeys(t.name for p in persona.projects for t in p.topics))
        libs = [e for e in entities if e.entity_type == "tool"]
        self.library = dict(zip(topics, libs, strict=True))
        self.people = [e for e in entities if e.entity_type == "person"]
        owned = list(self.service)
        order = rng.permutation(len(owned))
        self.owner = {owned[int(k)]: self.people[i % len(self.people)] for i, k in enumerate(order)}


def _edge(
    rng: np.random.Generator, kind: str, source: Entity, target: Entity, dep_type: str
) -> tuple[Entity, Entity, str, float, float, str]:
    """One edge's ends, type, strength and confidence: traversable with the chance of its
    kind; otherwise too weak (confidence x strength below the threshold) or, half the time,
    strong enough but too unsure (confidence below the minimum)."""
    if rng.random() < _P_STRONG[kind]:
        conf, strength = rng.uniform(0.65, 0.95), rng.uniform(0.6, 1.0)
    elif rng.random() < 0.5:
        conf, strength = rng.uniform(0.55, 0.9), rng.uniform(0.05, 0.3)
    else:
        conf, strength = rng.uniform(0.3, 0.45), rng.uniform(0.8, 1.0)
    reason = f"{source.name} {dep_type.replace('_', ' ')} {target.name}"
    return source, target, dep_type, round(float(strength), 3), round(float(conf), 3), reason


def _edges(persona: Persona, ix: _Index, rng: np.random.Generator) -> list[tuple]:
    """Every edge (see the module docstring), in a fixed order."""
    out = []
    for p in persona.projects:
        topics = [t.name for t in p.topics]
        for k, t in enumerate(topics):
            kind = "core" if k == 0 else "service"
            out.append(_edge(rng, kind, ix.project[p.name], ix.service[p.name, t], "requires"))
        for t in topics:
            s = ix.service[p.name, t]
            out.append(_edge(rng, "library", s, ix.library[t], "uses"))
            others = [o for o in topics if o != t]
            if others:
                o = others[int(rng.integers(len(others)))]
                out.append(_edge(rng, "other_library", s, ix.library[o], "uses"))
                c = others[int(rng.integers(len(others)))]
                out.append(_edge(rng, "call", s, ix.service[p.name, c], "requires"))
            peers = [q.name for q in persona.projects if q is not p and (q.name, t) in ix.service]
            if peers:
                q = peers[int(rng.integers(len(peers)))]
                out.append(_edge(rng, "peer", s, ix.service[q, t], "informs"))
            out.append(_edge(rng, "owner", s, ix.owner[p.name, t], "owned_by"))
    libs = list(ix.library.values())
    for lib in libs:
        if len(libs) > 1 and rng.random() < 0.3:
            other = [x for x in libs if x is not lib][int(rng.integers(len(libs) - 1))]
            out.append(_edge(rng, "stack", lib, other, "requires"))
    return out


def _subject_of(spec: MemorySpec, ix: _Index, u: float, v: float, forced: bool) -> Entity | None:
    """A memory's subject (`SUBJECT_MIX`, drawn by `u`; `v` picks a person); `forced`: never
    none."""
    if spec.project is None:
        if forced or u < GLOBAL_PERSON_SHARE:
            return ix.people[int(v * len(ix.people))]
        return None
    home = (spec.project, spec.topic)
    choices = (ix.service[home], ix.library[spec.topic], ix.owner[home], ix.project[spec.project])
    p = np.array([SUBJECT_MIX[k] for k in ("service", "library", "owner", "project")])
    if forced or spec.type == "constraint":
        p = p / p.sum()
    cum = np.cumsum(p)
    if u >= cum[-1]:
        return None
    return choices[min(int(np.searchsorted(cum, u, side="right")), len(choices) - 1)]


def _subjects(
    specs: Sequence[MemorySpec], ix: _Index, rng: np.random.Generator
) -> dict[str, tuple[str, str]]:
    """memory id -> (subject entity id, attribute kind); a replacement row shares its old
    row's subject and kind."""
    old_of = {s.replaced_by: s.id for s in specs if s.replaced_by}
    draws = rng.random((len(specs), 3))  # three fixed draws per memory
    out: dict[str, tuple[str, str]] = {}
    for s, (u, v, w) in zip(specs, draws, strict=True):
        if s.id in old_of:
            if old_of[s.id] in out:
                out[s.id] = out[old_of[s.id]]
            continue
        sub = _subject_of(s, ix, float(u), float(v), forced=s.supersede_mode == "attribute")
        if sub is None:
            continue
        promote = s.type == "decision" and w < DECISION_CONSTRAINT_SHARE
        out[s.id] = (sub.id, "constraint" if s.type == "constraint" or promote else "attribute")
    return out


def _texts(
    specs: Sequence[MemorySpec],
    subjects: dict[str, tuple[str, str]],
    ix: _Index,
    deps: Sequence[Dependency],
    rng: np.random.Generator,
) -> dict[str, tuple[str, str]]:
    """Each attached memory's content and final content naming its subject, and now and then
    an entity the subject depends on; every final content stays unique."""
    targets: dict[str, list[str]] = {}
    for d in deps:
        targets.setdefault(d.source_entity_id, []).append(ix.by_id[d.target_entity_id].name)
    out: dict[str, tuple[str, str]] = {}
    for s, (u, pick) in zip(specs, rng.random((len(specs), 2)), strict=True):
        if s.id not in subjects:
            continue
        e = ix.by_id[subjects[s.id][0]]
        also = targets.get(e.id, [])
        extra = also[int(pick * len(also))] if also and u < DEPENDENCY_MENTION_SHARE else None
        first = name_entity(s.content, e.name, e.entity_type, also=extra)
        final = name_entity(s.final_content or s.content, e.name, e.entity_type, also=extra)
        out[s.id] = (first, final)
    return out


def _check_unique(specs: Sequence[MemorySpec], texts: dict[str, tuple[str, str]]) -> None:
    """Every text a memory row ever holds (as first written, and after an in-place rewrite)
    must stay unique once texts name their entities, as the store's content hashes require."""
    every = []
    for s in specs:
        first, final = texts.get(s.id, (s.content, s.final_content or s.content))
        every += [first] if final == first else [first, final]
    if len({content_hash(t) for t in every}) != len(every):  # pragma: no cover - never seen
        raise ValueError("graph: naming entities made two memory texts identical")


def _mentions(
    specs: Sequence[MemorySpec],
    texts: dict[str, tuple[str, str]],
    subjects: dict[str, tuple[str, str]],
    entities: Sequence[Entity],
) -> list[Mention]:
    """A mention for every entity whose name is a word of a memory's final text."""
    by_word = {e.canonical_name: e for e in entities}
    out = []
    for s in specs:
        final = texts.get(s.id, (s.content, s.final_content or s.content))[1]
        subject = subjects.get(s.id, ("", ""))[0]
        for w in dict.fromkeys(tokens(final)):
            e = by_word.get(w)
            if e is not None:
                conf = 0.95 if e.id == subject else 0.8
                out.append(Mention(s.id, e.id, e.name, conf, s.created))
    return out


def _mentioned(entities: Sequence[Entity], mentions: Sequence[Mention]) -> list[Entity]:
    """Entities with their mention count and created/updated: their first and last mention
    (as laid out, the span's start, if none)."""
    seen: dict[str, list[datetime]] = {}
    for m in mentions:
        seen.setdefault(m.entity_id, []).append(m.created_at)
    return [
        replace(e, mentions=len(seen[e.id]), created_at=min(seen[e.id]), updated_at=max(seen[e.id]))
        if e.id in seen
        else e
        for e in entities
    ]


def _attributes(
    specs: Sequence[MemorySpec],
    subjects: dict[str, tuple[str, str]],
    by_id: dict[str, Entity],
    texts: dict[str, tuple[str, str]],
    rng: np.random.Generator,
) -> tuple[list[Aspect], list[Attribute]]:
    """An aspect per subject and memory type (weights drawn once per aspect) and an attribute
    per attached memory, with its status at the store's reference now."""
    aspects: dict[str, Aspect] = {}
    attrs = []
    for s, (c, w) in zip(specs, rng.random((len(specs), 2)), strict=True):
        if s.id not in subjects:
            continue
        conf = round(0.6 + 0.35 * float(c), 3)
        entity_id, kind = subjects[s.id]
        name = ASPECTS[s.type]
        aid = _id("aspect", by_id[entity_id].name, name)
        if aid not in aspects:  # the weight: the draw of the aspect's first attribute
            weight = round(0.3 + 0.6 * float(w), 3)
            aspects[aid] = Aspect(
                aid, entity_id, name, canonical(name), weight, s.created, s.created
            )
        status, by, updated = "active", None, s.created
        if s.replaced_by and s.stale_since is not None:
            status, by, updated = "superseded", _id("attribute", s.replaced_by), s.stale_since
        elif s.deleted_at is not None:
            status, updated = "deleted", s.deleted_at
        importance = max(s.importance, 0.85) if kind == "constraint" else s.importance
        attrs.append(
            Attribute(
                _id("attribute", s.id),
                aid,
                s.id,
                kind,
                texts[s.id][1],
                importance,
                conf,
                status,
                by,
                s.created,
                updated,
            )
        )
    return list(aspects.values()), attrs


def plan_graph(
    persona: Persona, seed: int, specs: Sequence[MemorySpec], start: datetime
) -> WorldGraph:
    """The knowledge graph of `persona`'s planned memories `specs`, whose span begins at
    `start` (deterministic per seed; `specs` are left unchanged: `WorldGraph.texts` holds the
    texts that name entities)."""
    rng = np.random.default_rng([int(seed), _STREAM])
    laid_out, homes = _entities(persona, rng, start)
    ix = _Index(laid_out, homes, persona, rng)
    edges = [
        Dependency(_id("dependency", a.id, b.id, t), a.id, b.id, t, st, cf, why, start, start)
        for a, b, t, st, cf, why in _edges(persona, ix, rng)
    ]
    subjects = _subjects(specs, ix, rng)
    texts = _texts(specs, subjects, ix, edges, rng)
    _check_unique(specs, texts)
    mentions = _mentions(specs, texts, subjects, list(ix.by_id.values()))
    entities = {e.id: e for e in _mentioned(list(ix.by_id.values()), mentions)}
    deps = [_known(d, entities) for d in edges]
    aspects, attrs = _attributes(specs, subjects, entities, texts, rng)
    return WorldGraph(
        tuple(entities.values()),
        tuple(deps),
        tuple(aspects),
        tuple(attrs),
        tuple(mentions),
        homes,
        subjects,
        texts,
    )


def _known(d: Dependency, entities: dict[str, Entity]) -> Dependency:
    """The edge dated when it is known: once both its ends are."""
    at = max(entities[d.source_entity_id].created_at, entities[d.target_entity_id].created_at)
    return replace(d, created_at=at, updated_at=at)
