"""A LoCoMo conversation's knowledge graph, built by a deterministic rule from its memories
(the store's memories: observations by default; no model): the rows of Signet's graph tables
for one conversation's store.

- **Names.** A word is a name of the conversation when `signet_scorer.signals.query_entities` (the
  rule the entity-match signal reads questions with: a token of two or more characters that
  starts with a capital letter and does not open a sentence) finds it in at least one memory,
  or when it is part of a speaker's name; words of `STOPWORDS` (months, weekdays, pronouns,
  articles, greetings, titles) never are. A word that is capitalised only where it opens a
  sentence ("Painting is ...") is therefore no name, while a known name opening a sentence
  ("Caroline is ...") still counts. A hyphenated suffix in lower case is cut ("Witcher-inspired"
  is "Witcher"), as Signet's entity search (FTS5) splits it off too.
- **Entities.** The two speakers (type 'person', always) and the named things: maximal runs
  of name words separated by plain spaces, joined also across "of" and "of the" ("Grand
  Canyon", "Lord of the Rings"); a speaker's name is never part of a longer run. One entity per
  canonical name (lower case, spaces collapsed, as Signet canonicalises entity names); its
  `name` is its most frequent written form (ties: the first seen), so a single-word name is
  the token `query_entities` returns for a question.
- **Type** of a named thing: a vote over the places it is written. A name opening a
  quotation (maybe after an article: '"The Lean Startup"') votes 'work' (titles are quoted);
  otherwise the word before it votes (skipping "named", "called", "titled", articles and a
  possessive 's; never across a sentence end): a kinship or social word → 'person', a pet
  word → 'animal', a place preposition or travel verb → 'place', a kind of work (book, song,
  movie, game, ...) → 'work' (`TYPE_CUES`). The most voted type (ties in that order) wins when
  at least half of the places voted for it, else 'thing' ("in the LGBTQ community" once in
  twenty mentions makes no place). A guess, recorded as such.
- **Mentions.** One `memory_entity_mentions` row per memory and entity it names (the first
  written form as `mention_text`); confidence 1.0 for a speaker, 0.8 for another name
  (capitalisation is a guess). `entities.mentions` counts the memories naming it.
- **Aspects** group an entity's mentions by conversation session (aspect "session N"); the
  weight is the session's mention count over the entity's busiest session's count, so its
  busiest session weighs 1.0. **Attributes**: one per mention, kind 'attribute', status
  'active', under the aspect of the memory's session, pointing at the memory (its content and
  importance, the mention's confidence).
- **Dependencies** between two entities named in the same memories, both directions, type
  'related_to': with c the memories naming both, strength = c / the memories naming either
  (Jaccard: a speaker named everywhere is weakly tied to a thing named once), confidence =
  c / (c + 1) (one shared memory is a coin flip; each more raises it toward 1). So an edge
  passes a traversal's `confidence × strength ≥ 0.3` only between names that mostly appear
  together.

The rows are `store.graph_write`'s, which writes them. `entities_named_in` finds the entities
a text (a question) names by the same tokens. Pure: no I/O; the same memories give the same
graph, row for row.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import combinations, pairwise
from typing import NamedTuple, Protocol

from signet_bench.store.graph import canonical as canonical_name
from signet_bench.store.graph_write import Aspect, Attribute, Dependency, Entity, Mention
from signet_scorer.signals import query_entities
from signet_scorer.tokenize import tokenize

__all__ = [
    "CONNECTORS",
    "DEPENDENCY_TYPE",
    "MENTION_CONFIDENCE",
    "STOPWORDS",
    "TYPE_CUES",
    "Graph",
    "GraphMemory",
    "NameFound",
    "build_graph",
    "entities_named_in",
    "find_names",
    "name_vocabulary",
]

_MONTHS = "January February March April May June July August September October November December"
_DAYS = "Monday Tuesday Wednesday Thursday Friday Saturday Sunday"
_FUNCTION = (
    "The A An This That These Those It Its He She They We You His Her Hers Their Our Your My Me"
    " Him Them And But Or So If Also Just Not Then There Here What When Where Who Why How"
)
_CHAT = (
    "Hey Hi Hello Oh Wow Yes No Yeah Yep Thanks Thank OK Ok Okay Sure Well Great Cool Dr Mr Mrs Ms"
)


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOPWORDS: frozenset[str] = _words(f"{_MONTHS} {_DAYS} {_FUNCTION} {_CHAT}")
"""Capitalised words that are never names (compared with their case: "US" is not "Us")."""

CONNECTORS: tuple[tuple[str, ...], ...] = (("of",), ("of", "the"))
"""Lower-case words a multiword name may hold between two name words."""

TYPE_CUES: Mapping[str, frozenset[str]] = {
    "person": _words(
        "friend friends buddy pal mom mother dad father sister brother sibling husband wife son"
        " daughter grandma grandmother grandpa grandfather cousin aunt uncle niece nephew"
        " boyfriend girlfriend partner fiance fiancee boss coworker colleague mentor teacher"
        " coach neighbor neighbour roommate author singer artist actor player"
    ),
    "animal": _words(
        "dog dogs cat cats puppy puppies pup kitten kittens pet pets turtle turtles horse bird"
        " hamster rabbit bunny snake"
    ),
    "place": _words("in from to near visited visit visiting around across toward towards"),
    "work": _words(
        "book books novel song songs album movie movies film show series game games play"
        " painting poem podcast band"
    ),
}
"""The word before a name -> the type it votes for; the order breaks ties."""
_ARTICLES = frozenset({"the", "a", "an"})
_CUE_SKIP = _ARTICLES | {"named", "called", "titled", "s"}  # "s": a possessive ("Mel's dog")
_QUOTES = frozenset("'\"\u2018\u201c")
_SENTENCE_END = frozenset(".!?")

MENTION_CONFIDENCE: Mapping[bool, float] = {True: 1.0, False: 0.8}
"""A mention's confidence by whether it names a speaker."""
DEPENDENCY_TYPE = "related_to"
SPEAKER_TYPE = "person"
SPEAKER_DESCRIPTION = "a speaker of the conversation"
OTHER_TYPE = "thing"
ATTRIBUTE_KIND = "attribute"
ATTRIBUTE_STATUS = "active"


class GraphMemory(Protocol):
    """What the graph reads of a memory (`locomo.LocomoMemory` has it)."""

    @property
    def id(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def session(self) -> int: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def importance(self) -> float: ...


@dataclass(frozen=True)
class Graph:
    """One conversation's graph rows, in a fixed order; `speakers`: the ids of the entities
    that are its speakers."""

    entities: tuple[Entity, ...]
    mentions: tuple[Mention, ...]
    aspects: tuple[Aspect, ...]
    attributes: tuple[Attribute, ...]
    dependencies: tuple[Dependency, ...]
    speakers: tuple[str, ...]


class NameFound(NamedTuple):
    """A name written in a text: as written, whether it is a speaker's, the type its cue
    word votes for (None without one)."""

    text: str
    speaker: bool
    cue: str | None


def _base(token: str) -> str:
    """A token without a lower-case hyphenated suffix ("Witcher-inspired" -> "Witcher")."""
    parts = token.split("-")
    keep = [parts[0]]
    for part in parts[1:]:
        if not part or not part[0].isupper():
            break
        keep.append(part)
    return "-".join(keep)


def _is_name_word(word: str) -> bool:
    return len(word) >= 2 and word[0].isupper() and word not in STOPWORDS


def name_vocabulary(texts: Iterable[str], speakers: Sequence[str]) -> frozenset[str]:
    """The conversation's name words: what `query_entities` finds in any of `texts` (cut of
    lower-case hyphenated suffixes), plus the words of the speakers' names, minus STOPWORDS."""
    words = {_base(t) for text in texts for t in query_entities(text)}
    words |= {t for s in speakers for t in tokenize(s)}
    return frozenset(w for w in words if _is_name_word(w))


class _Token(NamedTuple):
    word: str  # the token, its lower-case hyphenated suffix cut
    cut: bool  # a suffix was cut (a name run ends there)
    start: int
    end: int  # end of `word` in the text


def _tokens(text: str) -> list[_Token]:
    """The text's tokens (`signet_scorer.tokenize`) with their places in it."""
    out, pos = [], 0
    for tok in tokenize(text):
        start = text.index(tok, pos)
        word = _base(tok)
        out.append(_Token(word, word != tok, start, start + len(word)))
        pos = start + len(tok)
    return out


def _spaced(text: str, a: _Token, b: _Token) -> bool:
    """`a` and `b` are separated by whitespace alone (and `a` was not cut)."""
    gap = text[a.end : b.start]
    return not a.cut and bool(gap) and gap.isspace()


def _speaker_at(text: str, toks: list[_Token], i: int, speakers: Sequence[tuple[str, ...]]) -> int:
    """The length of the speaker name written at token i (0 if none)."""
    for words in speakers:
        k = len(words)
        seq = toks[i : i + k]
        if [t.word for t in seq] == list(words) and all(
            _spaced(text, a, b) for a, b in pairwise(seq)
        ):
            return k
    return 0


def _extend(
    text: str,
    toks: list[_Token],
    j: int,
    vocab: frozenset[str],
    speakers: Sequence[tuple[str, ...]],
) -> int:
    """The index of the next name word joined to the run ending at token j (-1 if none)."""
    for conn in ((), *CONNECTORS):
        k = j + 1 + len(conn)
        if k >= len(toks) or [t.word for t in toks[j + 1 : k]] != list(conn):
            continue
        spaced = all(_spaced(text, toks[m], toks[m + 1]) for m in range(j, k))
        if spaced and toks[k].word in vocab and not _speaker_at(text, toks, k, speakers):
            return k
    return -1


def _opens_quote(text: str, toks: list[_Token], i: int) -> bool:
    """Token i opens a quotation, maybe after an article ("'Becoming Nicole'", '"The Lean
    Startup"'): how titles are written."""
    j = i
    while j > 0 and toks[j - 1].word.lower() in _ARTICLES:
        if not text[toks[j - 1].end : toks[j].start].isspace():
            break
        j -= 1
    before = text[toks[j - 1].end if j else 0 : toks[j].start].strip()
    return before[-1:] in _QUOTES


def _cue(text: str, toks: list[_Token], i: int) -> str | None:
    """The type the text before token i votes for: 'work' when it opens a quotation, else by
    the word before it (`TYPE_CUES`, skipping `_CUE_SKIP`, never across a sentence end)."""
    if _opens_quote(text, toks, i):
        return "work"
    j = i - 1
    while j >= 0:
        if _SENTENCE_END & set(text[toks[j].end : toks[j + 1].start]):
            return None
        word = toks[j].word.lower()
        if word not in _CUE_SKIP:
            return next((kind for kind, cues in TYPE_CUES.items() if word in cues), None)
        j -= 1
    return None


def find_names(text: str, vocab: frozenset[str], speakers: Sequence[str]) -> list[NameFound]:
    """The names written in `text`, in order: speakers' names, and runs of `vocab` words
    (joined by spaces, "of" or "of the")."""
    toks = _tokens(text)
    words = [tuple(tokenize(s)) for s in speakers if tokenize(s)]
    found: list[NameFound] = []
    i = 0
    while i < len(toks):
        k = _speaker_at(text, toks, i, words)
        if k:
            found.append(NameFound(" ".join(t.word for t in toks[i : i + k]), True, None))
            i += k
            continue
        if toks[i].word not in vocab:
            i += 1
            continue
        end = i
        while (nxt := _extend(text, toks, end, vocab, words)) >= 0:
            end = nxt
        written = " ".join(t.word for t in toks[i : end + 1])
        found.append(NameFound(written, False, _cue(text, toks, i)))
        i = end + 1
    return found


def _uid(sample_id: str, *parts: object) -> str:
    return str(
        uuid.uuid5(uuid.NAMESPACE_URL, f"locomo:{sample_id}:graph:" + "/".join(map(str, parts)))
    )


def _entity_type(votes: Counter, written: int) -> str:
    """The most voted type (ties in `TYPE_CUES` order) when it has votes from at least half
    of the `written` mentions, else 'thing'."""
    kinds = list(TYPE_CUES)
    top = max(kinds, key=lambda kind: (votes[kind], -kinds.index(kind)))
    return top if votes[top] and 2 * votes[top] >= written else OTHER_TYPE


class _Seen:
    """What the mentions say about one canonical name while the memories are read."""

    def __init__(self, speaker: bool) -> None:
        self.speaker = speaker
        self.forms: Counter = Counter()
        self.votes: Counter = Counter()
        self.memories: list[GraphMemory] = []


def _read_mentions(memories: Sequence[GraphMemory], speakers: Sequence[str]):
    """canonical name -> `_Seen`, and per memory the canonical names it mentions with the
    first written form, in order."""
    vocab = name_vocabulary((m.content for m in memories), speakers)
    seen: dict[str, _Seen] = {canonical_name(s): _Seen(True) for s in speakers if s.strip()}
    per_memory: list[dict[str, str]] = []
    for m in memories:
        named: dict[str, str] = {}
        for found in find_names(m.content, vocab, speakers):
            key = canonical_name(found.text)
            info = seen.setdefault(key, _Seen(found.speaker))
            info.forms[found.text] += 1
            if found.cue:
                info.votes[found.cue] += 1
            if key not in named:
                named[key] = found.text
                info.memories.append(m)
        per_memory.append(named)
    return seen, per_memory


def _entities(sample_id, seen, speakers, memories) -> dict[str, Entity]:
    """canonical name -> Entity: speakers first (in the given order), then by first mention."""
    first = min((m.created_at for m in memories), default=None)
    written = {canonical_name(s): s.strip() for s in speakers if s.strip()}
    out: dict[str, Entity] = {}
    for key, info in seen.items():
        times = [m.created_at for m in info.memories] or [first]
        if times[0] is None:
            continue  # a speaker of a conversation without memories
        if info.speaker:
            name, kind, about = written[key], SPEAKER_TYPE, SPEAKER_DESCRIPTION
        else:
            name, kind = _most_common(info.forms), _entity_type(info.votes, info.forms.total())
            about = None
        out[key] = Entity(
            _uid(sample_id, "entity", key),
            name,
            key,
            kind,
            about,
            len(info.memories),
            min(times),
            max(times),
        )
    return out


def _span(memories: Sequence[GraphMemory]) -> tuple[datetime, datetime]:
    """The earliest and the latest created_at of some memories (the rows' created and updated
    times: memories of one session differ by their turns' seconds)."""
    times = [m.created_at for m in memories]
    return min(times), max(times)


def _most_common(forms: Counter) -> str:
    """The most frequent written form; ties: the first seen (Counter keeps insertion order)."""
    top = max(forms.values())
    return next(f for f, n in forms.items() if n == top)


def _aspects_and_attributes(sample_id, entities, seen):
    """One aspect per entity and session, one attribute per mention."""
    aspects: list[Aspect] = []
    attributes: list[Attribute] = []
    for key, entity in entities.items():
        by_session: dict[int, list[GraphMemory]] = {}
        for m in seen[key].memories:
            by_session.setdefault(m.session, []).append(m)
        busiest = max((len(v) for v in by_session.values()), default=1)
        for session in sorted(by_session):
            ms = by_session[session]
            aid = _uid(sample_id, "aspect", key, session)
            name, weight = f"session {session}", len(ms) / busiest
            aspects.append(Aspect(aid, entity.id, name, name, weight, *_span(ms)))
            attributes += [
                Attribute(
                    _uid(sample_id, "attribute", key, m.id),
                    aid,
                    m.id,
                    ATTRIBUTE_KIND,
                    m.content,
                    importance=float(m.importance),
                    confidence=MENTION_CONFIDENCE[seen[key].speaker],
                    status=ATTRIBUTE_STATUS,
                    superseded_by=None,
                    created_at=m.created_at,
                    updated_at=m.created_at,
                )
                for m in ms
            ]
    return aspects, attributes


def _dependencies(sample_id, entities, seen, per_memory, memories) -> list[Dependency]:
    """Both directions of every pair of entities named in a common memory (module docstring)."""
    together: dict[tuple[str, str], list[GraphMemory]] = {}
    order = {key: n for n, key in enumerate(entities)}
    for m, named in zip(memories, per_memory, strict=True):
        keys = sorted((k for k in named if k in entities), key=order.__getitem__)
        for a, b in combinations(keys, 2):
            together.setdefault((a, b), []).append(m)
    out: list[Dependency] = []
    for (a, b), ms in together.items():
        c = len(ms)
        union = len(seen[a].memories) + len(seen[b].memories) - c
        reason = f"named together in {c} of the {union} memories naming either"
        for src, dst in ((a, b), (b, a)):
            out.append(
                Dependency(
                    _uid(sample_id, "dependency", src, dst),
                    entities[src].id,
                    entities[dst].id,
                    DEPENDENCY_TYPE,
                    strength=c / union,
                    confidence=c / (c + 1),
                    reason=reason,
                    created_at=_span(ms)[0],
                    updated_at=_span(ms)[1],
                    co_occurrences=c,
                )
            )
    return out


def build_graph(sample_id: str, speakers: Sequence[str], memories: Sequence[GraphMemory]) -> Graph:
    """The graph of one conversation (module docstring) from its memories, in their order."""
    seen, per_memory = _read_mentions(memories, speakers)
    entities = _entities(sample_id, seen, speakers, memories)
    mentions = [
        Mention(m.id, entities[key].id, text, MENTION_CONFIDENCE[seen[key].speaker], m.created_at)
        for m, named in zip(memories, per_memory, strict=True)
        for key, text in named.items()
    ]
    aspects, attributes = _aspects_and_attributes(sample_id, entities, seen)
    deps = _dependencies(sample_id, entities, seen, per_memory, memories)
    speakers = tuple(entities[key].id for key in entities if seen[key].speaker)
    return Graph(
        tuple(entities.values()),
        tuple(mentions),
        tuple(aspects),
        tuple(attributes),
        tuple(deps),
        speakers,
    )


def entities_named_in(text: str, entities: Iterable[Entity]) -> list[Entity]:
    """The entities `text` names: the tokens of an entity's canonical name occur in a row
    among the text's tokens (case folded, lower-case hyphenated suffixes cut), the first of
    them capitalised in the text. How a question's terms find the graph's entities."""
    toks = [t.word for t in _tokens(text or "")]
    lower = [t.lower() for t in toks]
    out = []
    for e in entities:
        name = tokenize(e.canonical_name)
        k = len(name)
        if k and any(
            lower[i : i + k] == name and toks[i][:1].isupper() for i in range(len(toks) - k + 1)
        ):
            out.append(e)
    return out


def evidence_named(
    graph: Graph, question: str, evidence_memory_ids: Iterable[str], *, speakers: bool = True
) -> bool:
    """Whether one of the evidence memories mentions an entity the question names
    (`entities_named_in`; without `speakers`, only the named things count): whether a
    traversal from the question's names could reach its answer in one step."""
    named = {
        e.id
        for e in entities_named_in(question, graph.entities)
        if speakers or e.id not in graph.speakers
    }
    evidence = set(evidence_memory_ids)
    return any(m.entity_id in named and m.memory_id in evidence for m in graph.mentions)
