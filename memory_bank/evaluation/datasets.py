"""Dataset adapters: write a benchmark's corpus as ordinary source files and read its questions.

Each corpus file is one passage (HotpotQA paragraph), story section (FairytaleQA) or meeting part
(QMSum, a conversation JSON list of {"speaker", "text"} turns), so the pipeline ingests it like
any user's files and the `source` of a retrieved chunk names the gold passage it came from.
File names follow the evidence: `<title-slug>.txt`, `<story>/section_03.txt`,
`<meeting>/turns_0030-0059.json` (inclusive turn ids, so a turn's id is the range start plus its
position in the file).

Nothing here reads QMSum's topic_list: aligning parts to annotated topics would hand the
chunker boundaries that correlate with the gold spans.
"""

from __future__ import annotations

import itertools
import json
import string
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from memory_bank.errors import ConfigError, SourceError
from memory_bank.evaluation.dataset_files import (
    CORPUS_DIR_NAME,
    CORPUS_MARKER_NAME,
    data_root,
    dataset_name,
    fresh_corpus_dir,
    parse_int,
    read_csv,
    read_json,
    single_file,
    slugify,
    unique_name,
    write_text,
)
from memory_bank.evaluation.evidence import (
    DATASET_FORMATS,
    DatasetFormat,
    EvalDataset,
    EvalQuestion,
    EvidenceUnit,
    evidence_needles,
)
from memory_bank.evaluation.metrics import normalize_answer

_YES_NO = {"yes", "no"}
_FAIRYTALEQA_QUESTION_COLUMNS = (
    "question_id",
    "local-or-sum",
    "cor_section",
    "question",
    "ex-or-im1",
    "answer1",
    "answer4",
)


def prepare_dataset(
    dataset_dir: str | Path,
    dataset_format: DatasetFormat,
    work_dir: str | Path,
    *,
    limit: int | None = None,
    max_groups: int | None = None,
    split: str = "val",
    turns_per_part: int = 30,
) -> EvalDataset:
    """Read a dataset, write its corpus to `work_dir/corpus`, and return it with its questions.

    limit: keep this many questions. FairytaleQA and QMSum take them round-robin over stories or
        meetings, so a small limit still spans several documents.
    max_groups: keep only the first N stories (FairytaleQA) or meetings (QMSum), by name.
        HotpotQA always writes its whole paragraph pool (the distractors of every question).
    split: the sub-folder read when `dataset_dir` holds splits (FairytaleQA, QMSum).
    turns_per_part: QMSum meetings are cut into conversation files of this many turns.

    A corpus left by an earlier run (recognized by `corpus.json` beside it) is replaced; any
    other existing directory at that place is an error, never deleted.

    JSONL convention: `dataset_dir` holds `questions.jsonl` and a `corpus/` folder; each line is
    {"question": str, "answers": [str] | str, "evidence_sources": [paths relative to corpus/],
    "id": optional str}. That corpus is used in place (nothing is written to `work_dir`) and
    each evidence source is one whole-source unit.
    """
    if dataset_format not in DATASET_FORMATS:
        expected = ", ".join(DATASET_FORMATS)
        raise ConfigError(f"unknown dataset format {dataset_format!r}; expected one of {expected}")
    for name, value in (
        ("limit", limit),
        ("max_groups", max_groups),
        ("turns_per_part", turns_per_part),
    ):
        if value is not None and value < 1:
            raise ConfigError(f"{name} must be at least 1, got {value}")
    dataset_path = Path(dataset_dir)
    if not dataset_path.is_dir():
        raise ConfigError(f"dataset directory {dataset_path} does not exist")
    if dataset_format == "jsonl":
        return _read_jsonl(dataset_path, limit)

    work_path = Path(work_dir)
    corpus_dir = fresh_corpus_dir(work_path)
    if dataset_format == "hotpotqa":
        dataset = _write_hotpotqa(dataset_path, corpus_dir, limit)
    elif dataset_format == "fairytaleqa":
        dataset = _write_fairytaleqa(dataset_path, corpus_dir, split, limit, max_groups)
    else:
        dataset = _write_qmsum(dataset_path, corpus_dir, split, limit, max_groups, turns_per_part)
    marker = {
        "format": dataset_format,
        "dataset_dir": str(dataset_path.resolve()),
        "files": dataset.source_files,
    }
    (work_path / CORPUS_MARKER_NAME).write_text(
        json.dumps(marker, indent=1) + "\n", encoding="utf-8"
    )
    return dataset


def round_robin(groups: Iterable[list[EvalQuestion]]) -> list[EvalQuestion]:
    """Interleave per-document question lists: the first of each, then the second of each, ..."""
    rounds = itertools.zip_longest(*groups)
    return [question for questions in rounds for question in questions if question is not None]


# --- HotpotQA ---------------------------------------------------------------------------------


def _write_hotpotqa(dataset_dir: Path, corpus_dir: Path, limit: int | None) -> EvalDataset:
    corpus_file = single_file(dataset_dir, "*_corpus.json")
    questions_file = single_file(dataset_dir, "*.json", exclude=corpus_file)
    corpus = read_json(corpus_file)
    records = read_json(questions_file)
    if not isinstance(corpus, dict) or not isinstance(records, list):
        raise SourceError(
            str(dataset_dir), "expected a title -> sentences corpus object and a question list"
        )

    taken: set[str] = set()
    source_of_title: dict[str, str] = {}
    units: dict[str, EvidenceUnit] = {}
    for title, sentences in corpus.items():
        source = unique_name(slugify(title), ".txt", taken)
        source_of_title[title] = source
        write_text(corpus_dir / source, f"{title}\n\n{''.join(sentences).strip()}\n")
        for index, sentence in enumerate(sentences):
            if evidence_needles(sentence):
                unit_id = f"{title}#{index}"
                units[unit_id] = EvidenceUnit(unit_id=unit_id, source=source, text=sentence.strip())

    questions = []
    for number, record in enumerate(records[:limit]):
        try:
            questions.append(_hotpotqa_question(record, source_of_title, units))
        except (KeyError, TypeError, ValueError) as exc:
            raise SourceError(
                str(questions_file), f"question {number} is malformed: {exc!r}"
            ) from exc
    return EvalDataset(
        name=dataset_name("hotpotqa", dataset_dir),
        dataset_format="hotpotqa",
        dataset_dir=dataset_dir,
        dataset_files=[questions_file, corpus_file],
        corpus_dir=corpus_dir,
        source_files=sorted(source_of_title.values()),
        questions=questions,
        units=units,
    )


def _hotpotqa_question(
    record: dict[str, Any], source_of_title: dict[str, str], units: dict[str, EvidenceUnit]
) -> EvalQuestion:
    facts = [(str(title), int(index)) for title, index in record["supporting_facts"]]
    titles = list(dict.fromkeys(title for title, _ in facts))
    missing = [title for title in titles if title not in source_of_title]
    if missing:
        raise ValueError(f"supporting titles not in the corpus: {missing}")
    unit_ids = [f"{title}#{index}" for title, index in facts]
    answer = str(record["answer"])
    return EvalQuestion(
        qid=str(record["_id"]),
        question=str(record["question"]),
        answers=[answer],
        gold_sources=[source_of_title[title] for title in titles],
        gold_units=[unit_id for unit_id in dict.fromkeys(unit_ids) if unit_id in units],
        # Comparison questions answered "yes"/"no" would match almost any text.
        answer_scoreable=normalize_answer(answer) not in _YES_NO,
        kind=str(record.get("type", "")),
        meta={"level": record.get("level")},
    )


# --- FairytaleQA ------------------------------------------------------------------------------


def _write_fairytaleqa(
    dataset_dir: Path, corpus_dir: Path, split: str, limit: int | None, max_groups: int | None
) -> EvalDataset:
    root = data_root(dataset_dir, split, lambda folder: (folder / "section-stories").is_dir())
    story_files = sorted((root / "section-stories").glob("*-story.csv"))[:max_groups]
    dataset_files: list[Path] = []
    source_files: list[str] = []
    units: dict[str, EvidenceUnit] = {}
    per_story: list[list[EvalQuestion]] = []
    for story_file in story_files:
        story = story_file.name.removesuffix("-story.csv")
        questions_file = root / "questions" / f"{story}-questions.csv"
        dataset_files += [story_file, questions_file]
        # Story names are not evidence; a title line gives each section the context a real
        # document's heading would.
        title = string.capwords(story.replace("-", " "))
        sources: dict[int, str] = {}
        for row in read_csv(story_file, ("section", "text")):
            number = parse_int(row["section"], story_file)
            source = f"{story}/section_{number:02d}.txt"
            sources[number] = source
            write_text(corpus_dir / source, f"{title}\n\n{row['text'].strip()}\n")
            unit_id = f"{story}#{number}"
            units[unit_id] = EvidenceUnit(unit_id=unit_id, source=source)
        source_files += sorted(sources.values())
        rows = read_csv(questions_file, _FAIRYTALEQA_QUESTION_COLUMNS)
        per_story.append(
            [_fairytaleqa_question(row, story, sources, questions_file) for row in rows]
        )
    return EvalDataset(
        name=dataset_name("fairytaleqa", root),
        dataset_format="fairytaleqa",
        dataset_dir=dataset_dir,
        dataset_files=dataset_files,
        corpus_dir=corpus_dir,
        source_files=sorted(source_files),
        questions=round_robin(per_story)[:limit],
        units=units,
    )


def _fairytaleqa_question(
    row: dict[str, str], story: str, sources: dict[int, str], path: Path
) -> EvalQuestion:
    sections = [parse_int(part, path) for part in row["cor_section"].split(",") if part.strip()]
    if not sections or any(number not in sources for number in sections):
        reason = f"question {row['question_id']}: cor_section {row['cor_section']!r} names no known section"
        raise SourceError(str(path), reason)
    # The benchmark scores against answer1 and answer4 (two annotators), taking the better one.
    answers = list(
        dict.fromkeys(answer for key in ("answer1", "answer4") if (answer := row[key].strip()))
    )
    return EvalQuestion(
        qid=f"{story}#{row['question_id']}",
        question=row["question"].strip(),
        answers=answers,
        gold_sources=[sources[number] for number in sections],
        gold_units=[f"{story}#{number}" for number in sections],
        # The benchmark's explicit questions have answers quoted from the text; implicit ones not.
        answer_scoreable=row["ex-or-im1"].strip() == "explicit" and bool(answers),
        kind=row["local-or-sum"].strip(),
        meta={
            "story": story,
            "attributes": [
                value
                for key in ("attribute1", "attribute2")
                if (value := (row.get(key) or "").strip())
            ],
            "answer_kinds": [row["ex-or-im1"].strip(), (row.get("ex-or-im2") or "").strip()],
        },
    )


# --- QMSum ------------------------------------------------------------------------------------


def _write_qmsum(
    dataset_dir: Path,
    corpus_dir: Path,
    split: str,
    limit: int | None,
    max_groups: int | None,
    turns_per_part: int,
) -> EvalDataset:
    root = data_root(dataset_dir, split, lambda folder: any(folder.glob("*.json")))
    meeting_files = sorted(root.glob("*.json"))[:max_groups]
    source_files: list[str] = []
    units: dict[str, EvidenceUnit] = {}
    per_meeting: list[list[EvalQuestion]] = []
    for meeting_file in meeting_files:
        meeting = meeting_file.stem
        record = read_json(meeting_file)
        try:
            turns = [
                (str(turn["speaker"]), str(turn["content"]))
                for turn in record["meeting_transcripts"]
            ]
            part_sources = _write_meeting_parts(meeting, turns, corpus_dir, turns_per_part, units)
            questions = [
                _qmsum_specific_question(
                    meeting, number, query, part_sources, turns_per_part, len(turns), units
                )
                for number, query in enumerate(record["specific_query_list"])
            ]
            questions += [
                EvalQuestion(
                    qid=f"{meeting}#general-{number}",
                    question=str(query["query"]),
                    answers=[str(query["answer"])],
                    gold_sources=[],  # whole-meeting summaries: no evidence span to recall
                    gold_units=[],
                    answer_scoreable=False,
                    kind="general",
                    meta={"meeting": meeting},
                )
                for number, query in enumerate(record.get("general_query_list", []))
            ]
        except (KeyError, TypeError, ValueError) as exc:
            raise SourceError(str(meeting_file), f"malformed QMSum meeting: {exc!r}") from exc
        source_files += part_sources
        per_meeting.append(questions)
    return EvalDataset(
        name=dataset_name("qmsum", root),
        dataset_format="qmsum",
        dataset_dir=dataset_dir,
        dataset_files=meeting_files,
        corpus_dir=corpus_dir,
        source_files=sorted(source_files),
        questions=round_robin(per_meeting)[:limit],
        units=units,
    )


def _write_meeting_parts(
    meeting: str,
    turns: list[tuple[str, str]],
    corpus_dir: Path,
    turns_per_part: int,
    units: dict[str, EvidenceUnit],
) -> list[str]:
    """Write one conversation file per `turns_per_part` turns; returns their sources in order."""
    part_sources = []
    for start in range(0, len(turns), turns_per_part):
        part = turns[start : start + turns_per_part]
        source = f"{meeting}/turns_{start:04d}-{start + len(part) - 1:04d}.json"
        part_sources.append(source)
        conversation = [{"speaker": speaker, "text": text} for speaker, text in part]
        write_text(
            corpus_dir / source, json.dumps(conversation, ensure_ascii=False, indent=1) + "\n"
        )
        for turn_id, (_, text) in enumerate(part, start=start):
            if evidence_needles(text):
                unit_id = f"{meeting}#{turn_id}"
                units[unit_id] = EvidenceUnit(unit_id=unit_id, source=source, text=text)
    return part_sources


def _qmsum_specific_question(
    meeting: str,
    number: int,
    query: dict[str, Any],
    part_sources: list[str],
    turns_per_part: int,
    turn_count: int,
    units: dict[str, EvidenceUnit],
) -> EvalQuestion:
    spans = [(int(start), int(end)) for start, end in query["relevant_text_span"]]
    if any(not 0 <= start <= end < turn_count for start, end in spans):
        raise ValueError(f"query {number}: turn span {spans} outside 0..{turn_count - 1}")
    turn_ids = sorted({turn for start, end in spans for turn in range(start, end + 1)})
    return EvalQuestion(
        qid=f"{meeting}#specific-{number}",
        question=str(query["query"]),
        answers=[str(query["answer"])],
        gold_sources=list(dict.fromkeys(part_sources[turn // turns_per_part] for turn in turn_ids)),
        gold_units=[unit_id for turn in turn_ids if (unit_id := f"{meeting}#{turn}") in units],
        answer_scoreable=False,  # abstractive summaries: only token recall applies
        kind="specific",
        meta={"meeting": meeting, "spans": [list(span) for span in spans]},
    )


# --- generic JSONL ----------------------------------------------------------------------------


def _read_jsonl(dataset_dir: Path, limit: int | None) -> EvalDataset:
    questions_file = dataset_dir / "questions.jsonl"
    corpus_dir = dataset_dir / CORPUS_DIR_NAME
    if not questions_file.is_file() or not corpus_dir.is_dir():
        raise ConfigError(
            f"a JSONL dataset needs {questions_file} and a {corpus_dir}/ folder beside it"
        )
    corpus_files = sorted(
        path
        for path in corpus_dir.rglob("*")
        if path.is_file()
        and not any(part.startswith(".") for part in path.relative_to(corpus_dir).parts)
    )
    source_files = [path.relative_to(corpus_dir).as_posix() for path in corpus_files]
    known = set(source_files)
    questions: list[EvalQuestion] = []
    lines = questions_file.read_text(encoding="utf-8").splitlines()
    for line_number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        if limit is not None and len(questions) >= limit:
            break
        try:
            record = json.loads(line)
            answers = record.get("answers", [])
            answers = [answers] if isinstance(answers, str) else [str(answer) for answer in answers]
            evidence = [
                PurePosixPath(str(source)).as_posix()
                for source in record.get("evidence_sources", [])
            ]
            question = str(record["question"])
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise SourceError(
                str(questions_file), f"line {line_number} is malformed: {exc!r}"
            ) from exc
        unknown = [source for source in evidence if source not in known]
        if unknown:
            reason = f"line {line_number}: evidence not in {corpus_dir}: {unknown}"
            raise SourceError(str(questions_file), reason)
        questions.append(
            EvalQuestion(
                qid=str(record.get("id", f"line-{line_number}")),
                question=question,
                answers=answers,
                gold_sources=list(dict.fromkeys(evidence)),
                gold_units=list(dict.fromkeys(evidence)),
                answer_scoreable=bool(answers),
            )
        )
    units = {
        source: EvidenceUnit(unit_id=source, source=source)
        for question in questions
        for source in question.gold_sources
    }
    return EvalDataset(
        name=dataset_name("jsonl", dataset_dir),
        dataset_format="jsonl",
        dataset_dir=dataset_dir,
        dataset_files=[questions_file, *corpus_files],
        corpus_dir=corpus_dir,
        source_files=source_files,
        questions=questions,
        units=units,
    )
