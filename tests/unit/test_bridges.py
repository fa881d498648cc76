"""Currency one hop away (`query.bridges`): a question that reaches X through another fact reads
the memory naming X; the answer still states X's current claim, with the replaced one as
history."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig
from memory_bank.graph.model import Conflict
from memory_bank.ingest.executor import LocalExecutor
from memory_bank.query.answering import extractive_answer
from memory_bank.query.bridges import bridges, conflict_subject, names_any
from memory_bank.query.roles import AnswerEvidence, AnswerRequest, ClaimHistory
from memory_bank.schemas import HistoryNote
from memory_bank.text.sentences import split_sentences
from tests.support import stated_as_current

SERIES = (
    "# Charmed\n\nCharmed is an American television series created by Constance M. Burge. "
    "The series Charmed was originally broadcast on The WB from 1998 to 2006."
)
ACTOR = (
    "# Drew Fuller\n\nDrew Fuller is an American actor and former model. He starred as Chris "
    "Halliwell in the series Charmed."
)
UPDATE = "The series Charmed was originally broadcast by UPN, not The WB as earlier reported."


def _conflict(**changes) -> Conflict:
    fields = dict(
        id="c1",
        older="old",
        newer="new",
        description="",
        subject="Charmed",
        attribute="broadcast origin",
        old_value="The WB",
        new_value="UPN",
        old_sentence="The series Charmed was originally broadcast on The WB from 1998 to 2006.",
        new_sentence=UPDATE,
        detected_at=1.0,
        status="resolved",
        current="new",
        resolved_at=2.0,
    )
    fields.update(changes)
    return Conflict(**fields)


def test_a_conflict_is_about_the_names_of_its_new_sentences_subject():
    assert conflict_subject(_conflict()) == ("e:charmed",)
    # "It was created by ...": no name in the new sentence's subject phrase or shared by
    # both sentences: the subject the graph recorded
    pronoun = _conflict(
        old_sentence="It was created by TV executive Reg Watson.",
        new_sentence="It was created by Ian Holmes.",
        old_value="Reg Watson",
        new_value="Ian Holmes",
        subject="Neighbours",
    )
    assert conflict_subject(pronoun) == ("e:neighbours",)


def test_a_bridge_needs_the_asked_kind_and_a_word_of_the_question():
    conflicts = [_conflict()]
    assert bridges("Drew Fuller starred in a series broadcast on which network?", conflicts)
    assert not bridges("When was the series Drew Fuller starred in broadcast?", conflicts)
    assert not bridges("Who created the series Drew Fuller starred in?", conflicts)
    assert bridges("Which network broadcast the series?", [_conflict(status="open")]) == []


def test_a_sentence_names_what_the_bridge_is_about_itself_or_through_its_text():
    assert names_any("He starred as Chris Halliwell in the series Charmed.", ["e:charmed"])
    assert not names_any("He starred in the film Heartbreakers.", ["e:charmed"])
    # "He ..." refers back to what its text is about
    text = "# Trent Reznor\n\nTrent Reznor is a musician. He produced the soundtrack."
    assert names_any("He produced the soundtrack.", ["e:trent reznor"], text)
    assert not names_any("He produced the soundtrack.", ["e:trent reznor"])


def _note() -> HistoryNote:
    return HistoryNote(
        subject="Charmed",
        attribute="broadcast",
        superseded_value="The WB",
        current_value="UPN",
        superseded_text=SERIES.splitlines()[-1],
        current_text=UPDATE,
        superseded_source="charmed.md",
        current_source="update.md",
        recorded_at="2026-01-01T00:00:00Z",
        superseded_at="2026-01-02T00:00:00Z",
        conflict_id="c1",
    )


def _evidence(embedder, text: str, index: int) -> AnswerEvidence:
    sentences = split_sentences(text)
    return AnswerEvidence(
        path=f"m{index}.md",
        text=text,
        index=index,
        sentences=sentences,
        sentence_vectors=np.asarray(embedder.encode(sentences), dtype=np.float32),
    )


def _request(embedder, question: str, text: str) -> AnswerRequest:
    claim = ClaimHistory(
        kind="bridge",
        chunk=7,
        sentence=_note().superseded_text,
        old_value="The WB",
        new_value="UPN",
        current_sentence=UPDATE,
        current_chunk=7,
        current_path="update.md",
        current_vector=np.asarray(embedder.encode([UPDATE])[0], dtype=np.float32),
        note=_note(),
        about=["e:charmed"],
    )
    return AnswerRequest(
        question=question,
        evidence=[_evidence(embedder, text, 3)],
        query_vector=np.asarray(embedder.encode([question])[0], dtype=np.float32),
        claims=[claim],
    )


def test_the_answer_states_the_current_claim_about_what_its_evidence_names(embedder):
    question = "Drew Fuller starred in a series originally broadcast on which network?"

    result = extractive_answer(_request(embedder, question, ACTOR))

    assert "UPN" in result.answer and "The WB" not in stated_as_current(result.answer)
    assert "(previously The WB, until 2026-01-02)" in result.answer
    assert [n.superseded_value for n in result.history] == ["The WB"]
    assert "update.md" in result.sources


def test_evidence_that_does_not_name_it_gets_no_bridge(embedder):
    other = "# Drew Pearson\n\nThe Drew Pearson Show was a television program broadcast on ABC."
    question = "Drew Pearson hosted a show broadcast on which network?"

    result = extractive_answer(_request(embedder, question, other))

    assert "UPN" not in result.answer and result.history == []


@pytest.fixture(scope="module")
def bridged(tmp_path_factory, embedder) -> MemoryBank:
    root = tmp_path_factory.mktemp("bridges")
    (root / "charmed.md").write_text(SERIES, encoding="utf-8")
    (root / "fuller.md").write_text(ACTOR, encoding="utf-8")
    (root / "update.md").write_text(f"# Charmed broadcast history\n\n{UPDATE}\n", encoding="utf-8")
    bank = MemoryBank(
        root / "store", AppConfig(), executor=lambda config: LocalExecutor(config, embedder)
    )
    bank._embedder = embedder
    bank.add(files=[str(root / "charmed.md"), str(root / "fuller.md")])
    bank.add(files=[str(root / "update.md")])
    return bank


def _index(currency, words: str) -> int:
    return next(
        i for i in range(len(currency.corpus.chunk_ids)) if words in currency.corpus.chunk_text(i)
    )


def test_the_graph_offers_the_bridge_only_while_its_current_claim_is_unread(bridged: Path):
    currency = bridged._query_service()._current().agent.currency
    question = "Drew Fuller starred in a series originally broadcast on which network?"
    actor = _index(currency, "Drew Fuller")

    [claim] = currency.bridge_claims([actor], question)

    assert (claim.kind, claim.old_value, claim.new_value) == ("bridge", "The WB", "UPN")
    assert claim.about == ["e:charmed"] and claim.current_sentence.strip() == UPDATE
    assert currency.bridge_claims([actor, _index(currency, "UPN")], question) == []


def test_a_chunk_quoted_for_another_sentence_bridges_to_what_it_names(embedder):
    from memory_bank.query.answer_currency import apply_bridges
    from memory_bank.query.answer_sentences import AnswerSentence, select_sentences
    from memory_bank.query.question import content_terms
    from memory_bank.text.lexicon import search_tokens, stem_words

    question = "Drew Fuller starred in a series that originally broadcast on what station?"
    terms = content_terms(question)
    fuller = [
        'Andrew Alan "Drew" Fuller (born May 19, 1980) is an American actor and former model.',
        'He is best known for his portrayal of Chris Halliwell in the television series "Charmed".',
    ]
    pearson = [
        "The Drew Pearson Show was an American television series originally broadcast on ABC, "
        "a station starring Drew Pearson.",
        "The series ran from 1952 to 1953.",
    ]

    def sentence(chunk: int, number: int, text: str, score: float) -> AnswerSentence:
        vector = np.asarray(embedder.encode([text])[0], dtype=np.float32)
        return AnswerSentence(
            chunk, number, text, vector, score, frozenset(stem_words(search_tokens(text)))
        )

    sentences = [
        sentence(3, 0, fuller[0], 0.9),
        sentence(4, 0, pearson[0], 0.88),
        sentence(4, 1, pearson[1], 0.8),
        sentence(3, 1, fuller[1], 0.3),
    ]
    assert fuller[1] not in [s.text for s in select_sentences(sentences, terms)]
    claims = _request(embedder, question, ACTOR).claims
    texts = {3: "# Drew Fuller\n\n" + " ".join(fuller), 4: " ".join(pearson)}

    kept, history, paths = apply_bridges(sentences, claims, terms, texts)

    assert UPDATE in [s.text for s in kept]
    assert [n.superseded_value for n in history] == ["The WB"] and paths == ["update.md"]
    # A chunk that names nothing of it bridges nothing.
    alone = [s for s in sentences if s.chunk == 4]
    assert apply_bridges(alone, claims, terms, texts)[1] == []
