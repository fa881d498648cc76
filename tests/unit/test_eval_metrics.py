"""Metric functions and per-question scoring on hand-made cases with known answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_bank.evaluation.evidence import EvalDataset, EvalQuestion, EvidenceUnit
from memory_bank.evaluation.metrics import (
    Passage,
    all_evidence_at_k,
    answer_in_text,
    answer_token_recall,
    contains_phrase,
    cut_to_budget,
    default_token_counter,
    distinct_sources,
    latency_percentiles,
    normalize_answer,
    recall_at_k,
    truncate_to_tokens,
    unit_recall,
    whitespace_token_count,
)
from memory_bank.evaluation.scoring import passages_from_hits, score_question
from memory_bank.schemas import SearchHit


def test_normalize_answer_drops_case_punctuation_articles_and_extra_spaces() -> None:
    assert normalize_answer("The  Giant's garden!") == "giants garden"
    assert normalize_answer("An apple,\na day") == "apple day"
    assert normalize_answer("“Theodore” — the end") == "theodore end"  # Unicode quotes and dash
    assert normalize_answer("...") == ""


def test_phrase_containment_respects_word_boundaries() -> None:
    assert contains_phrase("the giants garden", "giants garden")
    assert not contains_phrase("giants garden", "giant")
    assert not contains_phrase("anything", "")


def test_answer_in_text_matches_any_gold_answer_after_normalization() -> None:
    text = "Lilu is a Spirit, said the Giant's friend."
    assert answer_in_text(["a demon", "A spirit"], text)
    assert answer_in_text(["the giant's friend"], text)
    assert not answer_in_text(["spirits"], text)


def test_answer_token_recall_is_clipped_unigram_recall() -> None:
    # "the cat sat on the mat" -> cat sat on mat; the text has cat, on, mat.
    assert answer_token_recall("the cat sat on the mat", "A cat on a mat.") == pytest.approx(3 / 4)
    assert answer_token_recall("no no no", "no") == pytest.approx(1 / 3)
    with pytest.raises(ValueError):
        answer_token_recall("the", "anything")


def test_recall_at_k_counts_distinct_sources_and_skips_non_sources() -> None:
    ranked = ["a.txt", "a.txt", None, "b.txt", "c.txt", "d.txt"]
    assert distinct_sources(ranked) == ["a.txt", "b.txt", "c.txt", "d.txt"]
    assert recall_at_k(ranked, ["b.txt", "d.txt"], 2) == 0.5  # top 2 distinct: a, b
    assert recall_at_k(ranked, ["b.txt", "d.txt"], 4) == 1.0
    assert recall_at_k(ranked, ["z.txt"], 5) == 0.0
    assert not all_evidence_at_k(ranked, ["b.txt", "d.txt"], 3)
    assert all_evidence_at_k(ranked, ["b.txt", "d.txt"], 4)
    with pytest.raises(ValueError):
        recall_at_k(ranked, [], 2)
    with pytest.raises(ValueError):
        recall_at_k(ranked, ["a.txt"], 0)


def test_unit_recall_is_the_covered_share_of_gold_units() -> None:
    assert unit_recall({"t#1", "t#9"}, ["t#1", "t#2"]) == 0.5
    with pytest.raises(ValueError):
        unit_recall({"t#1"}, [])


def test_cut_to_budget_keeps_whole_passages_then_truncates_the_last() -> None:
    passages = [
        Passage("a", "one two three"),
        Passage(None, "four five six seven"),
        Passage("c", "eight nine"),
    ]
    kept = cut_to_budget(passages, 5, whitespace_token_count)
    assert kept == [Passage("a", "one two three"), Passage(None, "four five")]
    assert cut_to_budget(passages, 7, whitespace_token_count) == passages[:2]
    assert cut_to_budget(passages, 100, whitespace_token_count) == passages
    assert cut_to_budget(passages, 1, whitespace_token_count) == [Passage("a", "one")]


def test_truncation_works_with_any_token_counter() -> None:
    def count_characters(text: str) -> int:
        return len(text)

    assert truncate_to_tokens("hello world again", 11, count_characters) == "hello world"
    assert truncate_to_tokens("hello world again", 16, count_characters) == "hello world"
    assert truncate_to_tokens("hello world", 4, count_characters) is None
    kept = cut_to_budget([Passage("a", "abcdef"), Passage("b", "xy zzz")], 9, count_characters)
    assert kept == [Passage("a", "abcdef"), Passage("b", "xy")]


def test_budget_cut_with_the_project_tokenizer_stays_within_budget() -> None:
    name, count_tokens = default_token_counter()
    assert name == "cl100k_base"
    text = "The Giant's garden had twelve peach-trees that broke out into delicate blossoms."
    kept = cut_to_budget(
        [Passage("a", text), Passage("b", text)], count_tokens(text) + 5, count_tokens
    )
    assert kept[0] == Passage("a", text)
    assert kept[1].source == "b" and text.startswith(kept[1].text) and kept[1].text != text
    assert sum(count_tokens(passage.text) for passage in kept) <= count_tokens(text) + 5


def test_latency_percentiles_interpolate_like_numpy() -> None:
    assert latency_percentiles([5.0, 1.0, 3.0, 2.0, 4.0]) == {"p50": 3.0, "p95": pytest.approx(4.8)}
    with pytest.raises(ValueError):
        latency_percentiles([])


def _toy_dataset(tmp_path: Path) -> EvalDataset:
    sentences = {
        "paris.txt": ["Paris is the capital of France.", "It lies on the Seine river."],
        "seine.txt": ["The Seine flows into the English Channel at Le Havre."],
        "noise.txt": ["Lyon is known for its food and its silk weaving history."],
    }
    units = {
        f"{source}#{index}": EvidenceUnit(unit_id=f"{source}#{index}", source=source, text=sentence)
        for source, texts in sentences.items()
        for index, sentence in enumerate(texts)
    }
    return EvalDataset(
        name="toy",
        dataset_format="jsonl",
        dataset_dir=tmp_path,
        dataset_files=[],
        corpus_dir=tmp_path / "corpus",
        source_files=sorted(sentences),
        questions=[],
        units=units,
    )


def test_score_question_scores_ranking_budgets_and_answers(tmp_path: Path) -> None:
    dataset = _toy_dataset(tmp_path)
    question = EvalQuestion(
        qid="q1",
        question="Where does the river of the French capital end?",
        answers=["the English Channel"],
        gold_sources=["paris.txt", "seine.txt"],
        gold_units=["paris.txt#1", "seine.txt#0"],
        answer_scoreable=True,
    )
    passages = [
        Passage(
            "noise.txt", "Lyon is known for its food and its silk weaving history."
        ),  # 11 words
        Passage(None, "A summary of French cities."),  # a README: budget, no evidence
        Passage(
            str(tmp_path / "corpus" / "paris.txt"),  # an absolute source path, as ingest records it
            "Paris is the capital of France. It lies on the Seine river.",
        ),
        Passage("seine.txt", "The Seine flows into the English Channel at Le Havre."),
    ]
    result = score_question(
        dataset,
        question,
        passages,
        mode="hybrid",
        latency_seconds=0.25,
        count_tokens=whitespace_token_count,
        budgets=(16, 28, 100),
        ks=(1, 2),
    )
    assert result.retrieved_sources == ["noise.txt", "paris.txt", "seine.txt"]
    assert result.recall_at_k == {1: 0.0, 2: 0.5}
    assert result.all_evidence_at_k == {1: False, 2: False}
    # 16 tokens: noise (11) + README (5). 28: + all of paris (12). 100: everything (38).
    assert result.evidence_recall == {16: 0.0, 28: 0.5, 100: 1.0}
    assert result.answer_recall == {16: False, 28: False, 100: True}
    assert result.context_tokens == {16: 16, 28: 28, 100: 38}
    assert result.answer_match is None


def test_a_truncated_sentence_does_not_count_as_evidence(tmp_path: Path) -> None:
    dataset = _toy_dataset(tmp_path)
    question = EvalQuestion(
        qid="q2",
        question="?",
        answers=["Le Havre"],
        gold_sources=["seine.txt"],
        gold_units=["seine.txt#0"],
        answer_scoreable=True,
    )
    passages = [Passage("seine.txt", "The Seine flows into the English Channel at Le Havre.")]
    result = score_question(
        dataset,
        question,
        passages,
        mode="bm25",
        latency_seconds=0.1,
        count_tokens=whitespace_token_count,
        budgets=(5, 10),
    )
    assert result.evidence_recall == {5: 0.0, 10: 1.0}
    assert result.answer_recall == {5: False, 10: True}


def test_yes_no_questions_get_no_answer_recall_but_agent_answers_are_matched(
    tmp_path: Path,
) -> None:
    dataset = _toy_dataset(tmp_path)
    yes_no = EvalQuestion(
        qid="q3",
        question="Is Paris the capital of France?",
        answers=["yes"],
        gold_sources=["paris.txt"],
        gold_units=["paris.txt#0"],
        answer_scoreable=False,
    )
    passages = [Passage("paris.txt", "yes, Paris is the capital of France.")]
    result = score_question(
        dataset,
        yes_no,
        passages,
        mode="ask",
        latency_seconds=1.0,
        count_tokens=whitespace_token_count,
        budgets=(512,),
        generated_answer="yes",
    )
    assert result.answer_recall == {}
    assert result.answer_match is None
    assert result.evidence_recall == {512: 1.0}

    extractive = yes_no.model_copy(update={"answers": ["Paris"], "answer_scoreable": True})
    result = score_question(
        dataset,
        extractive,
        passages,
        mode="ask",
        latency_seconds=1.0,
        count_tokens=whitespace_token_count,
        budgets=(512,),
        generated_answer="It is Paris.",
    )
    assert result.answer_recall == {512: True}
    assert result.answer_match is True


def test_questions_without_gold_evidence_leave_recall_out(tmp_path: Path) -> None:
    dataset = _toy_dataset(tmp_path)
    general = EvalQuestion(
        qid="q4",
        question="Summarize.",
        answers=["Paris lies on the Seine"],
        gold_sources=[],
        gold_units=[],
        answer_scoreable=False,
    )
    result = score_question(
        dataset,
        general,
        [Passage("paris.txt", "It lies on the Seine river.")],
        mode="tree",
        latency_seconds=0.5,
        count_tokens=whitespace_token_count,
        budgets=(512,),
    )
    assert result.recall_at_k == {}
    assert result.evidence_recall == {}
    assert result.answer_token_recall == {512: pytest.approx(3 / 4)}  # paris lies on seine


def test_passages_from_hits_drop_the_source_of_readme_hits() -> None:
    hits = [
        SearchHit(
            chunk_path="a/x.md",
            chunk_id="d-00000",
            source="/c/x.txt",
            document_id="d",
            score=1.0,
            text="x",
        ),
        SearchHit(
            chunk_path="a/README.md",
            chunk_id="",
            source="",
            document_id="",
            score=0.5,
            text="r",
            kind="readme",
        ),
    ]
    assert passages_from_hits(hits) == [Passage("/c/x.txt", "x"), Passage(None, "r")]
