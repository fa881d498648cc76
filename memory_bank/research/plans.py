"""The research loop's typed steps: what a round plans, finds and concludes (seed 003's
SearchPlan, hits, running result and ReflectionDecision, as plain data).

Offline, the plan of the first round is the question itself (keyword and vector search at once)
plus one keyword search per exact entity the question names; the plans of later rounds are
built by reflection from what was found: a bridge entity read in a relevant passage, with the
question's residual terms (those no evidence covers yet).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from memory_bank.query.question import question_entities
from memory_bank.research.entities import names_in_question
from memory_bank.text.lexicon import KEY_TERM_STOPWORDS, QUESTION_WORDS, search_tokens, stem_words

SearchTool = Literal["keyword", "vector", "hybrid", "page"]
# A follow-up query adds at most this many residual words to its bridge entity.
MAX_RESIDUAL_WORDS = 6


@dataclass(frozen=True)
class ResearchQuery:
    """One search a plan runs.

    `referrer` is the memory index of the passage whose text gave the query (a bridge entity
    read there); None for queries made from the question. `referrer` passages lend their score
    to what the query finds (`EvidencePool.offer_chain`).
    """

    text: str
    tool: SearchTool
    reason: str
    referrer: int | None = None
    subject: str = ""  # the name it searches for, if any (not proposed again once searched)


@dataclass
class SearchPlan:
    """What one round looks for: sub-questions (info needs) and the searches that serve them."""

    info_needs: list[str]
    queries: list[ResearchQuery]


@dataclass(frozen=True)
class Bridge:
    """A name read in a relevant passage that the question does not contain."""

    name: str
    referrer: int  # memory index of the passage it was read in
    sentence: str
    score: float  # the relevance of that sentence to the question


@dataclass
class Reflection:
    """Is the evidence enough? If not, what is missing (seed 003's ReflectionDecision)."""

    enough: bool
    covered: list[str]  # question terms (stems) the leading evidence contains
    missing: list[str]  # question words whose stems it lacks: the question's residual
    bridges: list[Bridge] = field(default_factory=list)
    reason: str = ""


def question_plan(question: str) -> SearchPlan:
    """The first round: the question (hybrid) and each exact entity it names (keyword)."""
    entities = names_in_question(question, question_entities(question))
    queries = [ResearchQuery(question, "hybrid", "the question")]
    queries += [
        ResearchQuery(entity, "keyword", "an entity the question names", subject=entity)
        for entity in entities
    ]
    needs = [question] + [f"What is {entity}?" for entity in entities]
    return SearchPlan(info_needs=needs, queries=queries)


def residual_words(question: str, missing_stems: list[str]) -> list[str]:
    """The question's words (surface forms, first occurrence) whose stems are missing."""
    wanted = set(missing_stems)
    words = [word for word in search_tokens(question) if word not in QUESTION_WORDS]
    chosen = [word for word, stem in zip(words, stem_words(words), strict=True) if stem in wanted]
    return list(dict.fromkeys(chosen))[:MAX_RESIDUAL_WORDS]


def follow_up_plan(question: str, reflection: Reflection, max_queries: int) -> SearchPlan:
    """The next round: each bridge entity (best first) with the question's residual words."""
    residual = " ".join(residual_words(question, reflection.missing))
    queries = []
    needs = []
    for bridge in reflection.bridges[:max_queries]:
        text = f"{bridge.name} {residual}".strip()
        queries.append(
            ResearchQuery(
                text,
                "hybrid",
                f"bridge {bridge.name!r}",
                referrer=bridge.referrer,
                subject=bridge.name,
            )
        )
        needs.append(f"{bridge.name}: {residual}" if residual else f"What is {bridge.name}?")
    return SearchPlan(info_needs=needs, queries=queries)


def question_terms(question: str) -> list[str]:
    """The question's topical terms (stems) the coverage test looks for: its search words
    without question words and without function and filler words ("one", "name", "first")."""
    words = [
        word
        for word in search_tokens(question)
        if word not in QUESTION_WORDS and word not in KEY_TERM_STOPWORDS
    ]
    return list(dict.fromkeys(stem_words(words)))
