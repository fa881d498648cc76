"""Dataset adapters on small slices of the real development datasets in ../shared/eval."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from memory_bank.errors import ConfigError, SourceError
from memory_bank.evaluation.dataset_files import development_eval_dir
from memory_bank.evaluation.datasets import prepare_dataset, slugify
from memory_bank.evaluation.evidence import EvalDataset
from memory_bank.evaluation.metrics import Passage

# The datasets are not part of the repository: ../shared/eval beside it, or $MEMORY_BANK_EVAL_DIR.
EVAL_DIR = development_eval_dir(Path(__file__).resolve().parents[2])
pytestmark = pytest.mark.skipif(
    not EVAL_DIR.is_dir(),
    reason=f"development datasets not found at {EVAL_DIR} (set MEMORY_BANK_EVAL_DIR)",
)


def _assert_corpus_written(dataset: EvalDataset) -> None:
    files = [path for path in dataset.corpus_dir.rglob("*") if path.is_file()]
    written = {path.relative_to(dataset.corpus_dir).as_posix() for path in files}
    assert written == set(dataset.source_files)
    for question in dataset.questions:
        assert set(question.gold_sources) <= written
        assert all(
            dataset.units[unit].source in question.gold_sources for unit in question.gold_units
        )


@pytest.fixture(scope="module")
def hotpotqa(tmp_path_factory: pytest.TempPathFactory) -> EvalDataset:
    return prepare_dataset(EVAL_DIR / "hotpotqa", "hotpotqa", tmp_path_factory.mktemp("hotpotqa"))


def test_hotpotqa_writes_one_titled_file_per_paragraph(hotpotqa: EvalDataset) -> None:
    assert hotpotqa.name == "hotpotqa"
    assert len(hotpotqa.questions) == 100
    assert len(hotpotqa.source_files) == 994  # the whole pool, distractors included
    _assert_corpus_written(hotpotqa)
    first = hotpotqa.questions[0]
    assert first.question == "If Gallu is a demon Lilu is what?"
    assert first.gold_sources == ["alu.txt", "lilu-mythology.txt"]
    assert first.gold_units == ["Alû#3", "Lilu (mythology)#0"]
    assert (hotpotqa.corpus_dir / "alu.txt").read_text(encoding="utf-8").startswith("Alû\n\n")


def test_hotpotqa_excludes_yes_no_answers_from_answer_recall(hotpotqa: EvalDataset) -> None:
    yes_no = [
        question for question in hotpotqa.questions if question.answers[0].lower() in {"yes", "no"}
    ]
    assert len(yes_no) == 9
    assert not any(question.answer_scoreable for question in yes_no)
    assert sum(question.answer_scoreable for question in hotpotqa.questions) == 91


def test_hotpotqa_sentence_units_map_from_a_hit(hotpotqa: EvalDataset) -> None:
    gold_file = hotpotqa.corpus_dir / "lilu-mythology.txt"
    whole = gold_file.read_text(encoding="utf-8")
    covered = hotpotqa.units_covered(Passage(str(gold_file), whole))
    assert "Lilu (mythology)#0" in covered
    assert all(unit.startswith("Lilu (mythology)#") for unit in covered)

    first_sentence = hotpotqa.units["Lilu (mythology)#0"].text
    assert first_sentence is not None
    extract = f"Memory: {first_sentence} (and more)"
    assert hotpotqa.units_covered(Passage("lilu-mythology.txt", extract)) == {"Lilu (mythology)#0"}
    # The same words from another source, half a sentence, or no source cover nothing.
    assert hotpotqa.units_covered(Passage("alu.txt", extract)) == set()
    half_sentence = first_sentence[: len(first_sentence) // 2]
    assert hotpotqa.units_covered(Passage("lilu-mythology.txt", half_sentence)) == set()
    assert hotpotqa.units_covered(Passage(None, extract)) == set()


def test_source_keys_accept_absolute_and_corpus_relative_paths(
    hotpotqa: EvalDataset, tmp_path: Path
) -> None:
    assert hotpotqa.source_key(str(hotpotqa.corpus_dir / "alu.txt")) == "alu.txt"
    assert hotpotqa.source_key("alu.txt") == "alu.txt"
    assert hotpotqa.source_key(str(tmp_path / "alu.txt")) is None
    assert hotpotqa.source_key(None) is None


def test_fairytaleqa_writes_sections_and_interleaves_stories(tmp_path: Path) -> None:
    dataset = prepare_dataset(
        EVAL_DIR / "fairytaleqa", "fairytaleqa", tmp_path, limit=3, max_groups=2
    )
    assert dataset.name == "fairytaleqa-val"
    _assert_corpus_written(dataset)
    stories = {source.split("/")[0] for source in dataset.source_files}
    assert stories == {"assipattle-and-the-mester-stoorworm", "bamboo-cutter-moon-child"}
    # Round-robin: question 1 of each story, then question 2 of the first.
    assert [question.qid for question in dataset.questions] == [
        "assipattle-and-the-mester-stoorworm#1",
        "bamboo-cutter-moon-child#1",
        "assipattle-and-the-mester-stoorworm#2",
    ]
    first = dataset.questions[0]
    assert first.gold_sources == ["assipattle-and-the-mester-stoorworm/section_01.txt"]
    assert first.answers == ["a well-to-do farmer"]
    assert first.answer_scoreable and first.kind == "local"
    section_text = (dataset.corpus_dir / first.gold_sources[0]).read_text(encoding="utf-8")
    assert section_text.startswith("Assipattle And The Mester Stoorworm\n\n")
    assert "well-to-do farmer" in section_text
    # A section is one whole-source unit: any returned text of that file covers it.
    passage = Passage(str(dataset.corpus_dir / first.gold_sources[0]), "a few words")
    assert dataset.units_covered(passage) == {"assipattle-and-the-mester-stoorworm#1"}


def test_fairytaleqa_marks_only_explicit_questions_answer_scoreable(tmp_path: Path) -> None:
    dataset = prepare_dataset(
        EVAL_DIR / "fairytaleqa" / "val", "fairytaleqa", tmp_path, max_groups=1
    )
    story = "assipattle-and-the-mester-stoorworm"
    questions_csv = EVAL_DIR / "fairytaleqa" / "val" / "questions" / f"{story}-questions.csv"
    with questions_csv.open(encoding="utf-8") as handle:
        rows = {f"{story}#{row['question_id']}": row for row in csv.DictReader(handle)}
    assert {question.qid for question in dataset.questions} == set(rows)
    for question in dataset.questions:
        assert question.answer_scoreable == (rows[question.qid]["ex-or-im1"] == "explicit")
    multi_section = [question for question in dataset.questions if len(question.gold_sources) > 1]
    assert all(question.kind == "summary" for question in multi_section)


def test_qmsum_writes_conversation_parts_with_recoverable_turn_ids(tmp_path: Path) -> None:
    dataset = prepare_dataset(
        EVAL_DIR / "qmsum", "qmsum", tmp_path, limit=3, max_groups=2, turns_per_part=30
    )
    assert dataset.name == "qmsum-val"
    _assert_corpus_written(dataset)
    qids = [question.qid for question in dataset.questions]
    assert qids == ["Bed002#specific-0", "Bed010#specific-0", "Bed002#specific-1"]
    meeting = json.loads((EVAL_DIR / "qmsum" / "val" / "Bed002.json").read_text(encoding="utf-8"))
    transcript = meeting["meeting_transcripts"]

    part = json.loads(
        (dataset.corpus_dir / "Bed002" / "turns_0030-0059.json").read_text(encoding="utf-8")
    )
    assert len(part) == 30
    assert set(part[0]) == {"speaker", "text"}
    assert part[12] == {"speaker": transcript[42]["speaker"], "text": transcript[42]["content"]}

    # Gold spans [14, 22] and [31, 62] touch parts 0, 1 and 2.
    question = dataset.questions[2]
    assert question.meta["spans"] == [[14, 22], [31, 62]]
    assert question.gold_sources == [
        "Bed002/turns_0000-0029.json",
        "Bed002/turns_0030-0059.json",
        "Bed002/turns_0060-0089.json",
    ]
    assert "Bed002#42" in question.gold_units and "Bed002#23" not in question.gold_units
    assert not question.answer_scoreable

    hit_text = f"{transcript[42]['speaker']}: {transcript[42]['content']}\nGrad E: Yep ."
    covered = dataset.units_covered(Passage("Bed002/turns_0030-0059.json", hit_text))
    assert "Bed002#42" in covered
    assert "Bed002#48" not in covered  # "Well, we can make up aliases ..." was not returned


def test_qmsum_general_queries_carry_no_gold_evidence(tmp_path: Path) -> None:
    dataset = prepare_dataset(EVAL_DIR / "qmsum", "qmsum", tmp_path, max_groups=1)
    general = [question for question in dataset.questions if question.kind == "general"]
    assert len(general) == 1
    assert general[0].gold_sources == [] and general[0].gold_units == []


def test_jsonl_dataset_uses_its_corpus_in_place(tmp_path: Path) -> None:
    corpus = tmp_path / "mine" / "corpus"
    (corpus / "notes").mkdir(parents=True)
    (corpus / "notes" / "a.md").write_text("# A\nAlpha facts.\n", encoding="utf-8")
    (corpus / "b.txt").write_text("Beta facts.\n", encoding="utf-8")
    lines = [
        {
            "question": "What is alpha?",
            "answers": "Alpha facts",
            "evidence_sources": ["./notes/a.md"],
        },
        {
            "id": "q-b",
            "question": "And beta?",
            "answers": [],
            "evidence_sources": ["b.txt", "notes/a.md"],
        },
    ]
    questions_text = "\n".join(map(json.dumps, lines)) + "\n\n"  # a trailing blank line is fine
    (tmp_path / "mine" / "questions.jsonl").write_text(questions_text, encoding="utf-8")
    dataset = prepare_dataset(tmp_path / "mine", "jsonl", tmp_path / "work")
    assert dataset.corpus_dir == corpus
    assert dataset.source_files == ["b.txt", "notes/a.md"]
    assert [question.qid for question in dataset.questions] == ["line-1", "q-b"]
    assert dataset.questions[0].gold_sources == ["notes/a.md"]
    assert dataset.questions[0].answers == ["Alpha facts"]
    assert not dataset.questions[1].answer_scoreable
    assert dataset.units_covered(Passage(str(corpus / "b.txt"), "Beta")) == {"b.txt"}
    assert (
        len(prepare_dataset(tmp_path / "mine", "jsonl", tmp_path / "work", limit=1).questions) == 1
    )

    (tmp_path / "mine" / "questions.jsonl").write_text(
        json.dumps({"question": "?", "evidence_sources": ["missing.txt"]}) + "\n", encoding="utf-8"
    )
    with pytest.raises(SourceError, match="missing.txt"):
        prepare_dataset(tmp_path / "mine", "jsonl", tmp_path / "work")


def test_a_rerun_replaces_its_own_corpus_but_never_a_foreign_directory(tmp_path: Path) -> None:
    first = prepare_dataset(EVAL_DIR / "fairytaleqa", "fairytaleqa", tmp_path / "run", max_groups=2)
    second = prepare_dataset(
        EVAL_DIR / "fairytaleqa", "fairytaleqa", tmp_path / "run", max_groups=1
    )
    assert len(second.source_files) < len(first.source_files)
    _assert_corpus_written(second)

    (tmp_path / "foreign" / "corpus").mkdir(parents=True)
    with pytest.raises(ConfigError, match="not written by the evaluation harness"):
        prepare_dataset(EVAL_DIR / "fairytaleqa", "fairytaleqa", tmp_path / "foreign", max_groups=1)
    with pytest.raises(ConfigError, match="unknown dataset format"):
        prepare_dataset(EVAL_DIR / "fairytaleqa", "narrativeqa", tmp_path / "other")  # type: ignore[arg-type]


def test_slugify_makes_ascii_file_stems() -> None:
    assert slugify("Lilu (mythology)") == "lilu-mythology"
    assert slugify("Mākaha, Hawaii") == "makaha-hawaii"
    assert slugify("?!") == "untitled"
