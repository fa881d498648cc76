"""The offline navigation agent: explores the store with its tools and answers with citations.

It follows the exploration guidelines of seed 000 §6.2 without an LLM:

1. read the root README;
2. jump: one hybrid search for candidate chunks (following title links to the documents the
   question and the best hits name, as `search` does), and a grep for each exact entity of the
   question (acronyms, names, numbers, quoted strings);
3. descend the tree with a beam, scoring each child directory by the cosine of the question to
   its README, the question terms its README mentions, and the best search candidate inside it;
   the best child's README is read at each level;
4. read the most promising chunk files until the evidence covers the question or the budget of
   tool calls (`max_iterations`) is spent, then the chunks of documents that the chunks read name
   by title (the second hop of a bridge question);
5. answer extractively (`memory_bank.query.answering`): the best sentences of the chunks read, at
   least one from each (precomputed sentence vectors from `.bank/sentences.parquet`, so nothing
   is embedded per sentence at query time), citing every chunk file read, best first.
   Confidence comes from how close the best evidence is to the question and how many of the
   question's content terms it covers; below NOT_FOUND_THRESHOLD the answer says the memory
   does not hold the information.

The per-question cost is one query embedding, one BM25 pass, one faiss scan, a few greps over a
cached corpus and a handful of file reads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from memory_bank.config import RetrievalConfig
from memory_bank.errors import ToolError
from memory_bank.index.embedding import TextEncoder
from memory_bank.index.hybrid import HybridSearch
from memory_bank.llm.roles import AnswerEvidence, AnswerRequest
from memory_bank.query.answer_sentences import NOT_FOUND_THRESHOLD
from memory_bank.query.answering import extractive_answer
from memory_bank.query.currency import Currency
from memory_bank.query.question import content_terms, question_entities, stem_all, term_coverage
from memory_bank.query.tools import StoreTools
from memory_bank.schemas import ChatResult, DirectoryNode, TrajectoryStep
from memory_bank.store.files import parse_chunk_file, readme_relative_path
from memory_bank.text.lexicon import text_stems
from memory_bank.text.sentences import split_sentences

NOT_FOUND_ANSWER = "The memory does not contain information to answer this question."
MAX_GREPS = 3
MIN_CHUNK_READS = 3  # README reads and greps never eat into this share of the budget
READ_CUTOFF = 0.6  # skip candidates whose search score is below this share of the best one's
MAX_LINK_READS = 2  # after that, chunks of documents named by the chunks read, best first
BEAM_CUTOFF = 0.6  # keep a child in the beam only within this share of the best child's score
# A child directory's score: README cosine, share of question terms in its README, best hybrid
# search score inside its subtree (the search sees every chunk, the README only a summary).
DESCENT_WEIGHTS = (0.5, 0.2, 0.3)
GREP_BONUS = 0.15  # priority per question entity a chunk file contains (up to two)
BEAM_BONUS = 0.05  # priority for the best chunks of the directories the beam ended in


@dataclass
class _Run:
    """The state of one question's exploration."""

    question: str
    budget: int
    calls: int = 0
    steps: list[TrajectoryStep] = field(default_factory=list)
    files_read: list[str] = field(default_factory=list)
    dirs_explored: list[str] = field(default_factory=list)
    evidence: dict[int, frozenset[str]] = field(default_factory=dict)  # stems of each chunk read

    def can_call(self, reserve: int = 0) -> bool:
        return self.calls + 1 + reserve <= self.budget

    def call(self, action: str, target: str = "", detail: str = "") -> None:
        self.calls += 1
        self.steps.append(
            TrajectoryStep(number=self.calls, action=action, target=target, detail=detail)
        )

    def note(self, action: str, target: str = "", detail: str = "") -> None:
        self.steps.append(TrajectoryStep(action=action, target=target, detail=detail))

    def read(self, path: str) -> None:
        _add_unique(self.files_read, path)

    def explore(self, directory: str) -> None:
        _add_unique(self.dirs_explored, directory)


class _Candidate(NamedTuple):
    index: int  # memory index
    priority: float  # search score plus grep and beam bonuses: the reading order
    score: float  # search score (hybrid, with what title links lent)


class NavigationAgent:
    """Answers questions about one store (see the module docstring for the strategy)."""

    def __init__(
        self,
        tools: StoreTools,
        search: HybridSearch,
        embedder: TextEncoder | None = None,
        config: RetrievalConfig | None = None,
    ) -> None:
        self.tools = tools
        self.search = search
        self.corpus = search.corpus
        self.embedder = embedder or search.embedder
        self.config = config or search.config
        self._readme_stems: list[frozenset[str]] | None = None
        # What is current (`query.currency`): set by the query service when the store has a
        # Query Graph; the answer then states current claims, the replaced ones as history.
        self.currency: Currency | None = None

    def request(
        self, question: str, max_iterations: int | None = None, system_prompt: str | None = None
    ) -> ChatResult:
        """Explore the store for `question` with at most `max_iterations` tool calls and answer.
        `system_prompt` is accepted for the common contract; this agent has no model to tell."""
        if not question.strip():
            raise ToolError("the question must not be empty")
        budget = self.config.max_iterations if max_iterations is None else max_iterations
        if budget < 1:
            raise ToolError(f"max_iterations must be at least 1, got {budget}")
        run = _Run(question, budget)
        terms = content_terms(question)
        self._read_root(run)
        if self.corpus.num_chunks == 0:
            run.note("stop", detail="the store holds no memories")
            return self._not_found(run, "the store is empty")
        if not run.can_call():
            return self._not_found(
                run, f"stopped at max_iterations={run.budget} before reading any memory"
            )

        query_vector = self.search.encode_query(question)
        bm25_scores = self.search.bm25_scores(question)
        found = self.search.hybrid_candidates(question, query_vector, bm25_scores=bm25_scores)
        best = f", best {self.corpus.chunk_path(found[0][0])} ({found[0][1]:.2f})" if found else ""
        run.call("search", question, f"(hybrid) -> {len(found)} candidates{best}")
        grep_counts = self._grep_entities(run, question_entities(question))
        leaves = self._descend(run, query_vector, terms, self._best_by_directory(found))
        ranked = self._rank_candidates(query_vector, bm25_scores, found, grep_counts, leaves)
        read = self._read_chunks(run, ranked, terms)
        return self._answer(run, read, query_vector, terms)

    # --- exploration steps ------------------------------------------------------------------

    def _read_root(self, run: _Run) -> None:
        run.explore("/")
        try:
            overview = self.tools.cat("README.md")
        except ToolError:
            run.call("cat", "README.md", "-> missing")
            return
        run.call("cat", "README.md", f"({len(overview.splitlines())} lines)")
        run.read("README.md")

    def _grep_entities(self, run: _Run, entities: list[str]) -> dict[int, int]:
        """Grep each entity (within the budget); count, per chunk, the entities it contains."""
        counts: dict[int, int] = {}
        for entity in entities[:MAX_GREPS]:
            if not run.can_call(reserve=MIN_CHUNK_READS):
                break
            files = sorted(
                {
                    match.file
                    for match in self.tools.grep(entity, whole_word=True)
                    if self.corpus.index_of_path(match.file) is not None
                }
            )
            run.call("grep", entity, f"-> {len(files)} file{'s' if len(files) != 1 else ''}")
            for path in files:
                index = self.corpus.index_of_path(path)
                counts[index] = counts.get(index, 0) + 1
        return counts

    def _descend(
        self,
        run: _Run,
        query_vector: np.ndarray,
        terms: list[str],
        best_found: dict[str, float],
    ) -> list[DirectoryNode]:
        """Beam descent from the root; returns the directories the beam ends in."""
        directories = self.corpus.directories()
        readme_stems = self._directory_stems()
        frontier: list[tuple[DirectoryNode, float]] = [(self.corpus.tree(), 1.0)]
        while any(node.children for node, _ in frontier):
            scored = [(node, score) for node, score in frontier if not node.children]
            for node, _ in frontier:
                for child in node.children:
                    position = directories.position[child.path]
                    cosine_weight, terms_weight, found_weight = DESCENT_WEIGHTS
                    score = (
                        cosine_weight * float(directories.vectors[position] @ query_vector)
                        + terms_weight * term_coverage(terms, readme_stems[position])
                        + found_weight * best_found.get(child.path, 0.0)
                    )
                    scored.append((child, score))
            scored.sort(key=lambda item: (-item[1], item[0].path))
            best = scored[0][1]
            previous = {node.path for node, _ in frontier}
            frontier = [
                item for item in scored[: self.config.beam_width] if item[1] >= best * BEAM_CUTOFF
            ]
            for node, score in frontier:
                if node.path not in previous:
                    run.note("descend", node.path, f"(score {score:.2f})")
                    run.explore(node.path)
            top = frontier[0][0]
            if top.path not in previous and run.can_call(reserve=MIN_CHUNK_READS):
                readme = readme_relative_path(top.path)
                self.tools.cat(readme)
                run.call("cat", readme)
                run.read(readme)
        return [node for node, _ in frontier]

    def _rank_candidates(
        self,
        query_vector: np.ndarray,
        bm25_scores: np.ndarray,
        found: list[tuple[int, float]],
        grep_counts: dict[int, int],
        leaves: list[DirectoryNode],
    ) -> list[_Candidate]:
        """Chunks worth reading, best first: search hits, grep hits and the beam's best chunks."""
        directories = self.corpus.directories()
        in_beam: set[int] = set()
        for leaf in leaves:
            if leaf.path == "/":  # a store whose memories all sit at the root
                members = list(range(self.corpus.num_chunks))
            else:
                members = directories.subtree_chunks[directories.position[leaf.path]]
            cosines = self.search.cosines(query_vector, members)
            in_beam.update(members[int(j)] for j in np.argsort(-cosines, kind="stable")[:2])
        # Search hits keep their search score, which includes what title links lent them;
        # grep and beam finds outside the search's top get their own hybrid score.
        searched = dict(found[: 2 * self.config.top_k])
        others = sorted((set(grep_counts) | in_beam) - set(searched))
        other_scores = self.search.hybrid_scores(bm25_scores, query_vector, others)
        scores = searched | {
            index: float(score) for index, score in zip(others, other_scores, strict=True)
        }
        ranked = [
            _Candidate(
                index,
                score
                + GREP_BONUS * min(grep_counts.get(index, 0), 2)
                + (BEAM_BONUS if index in in_beam else 0.0),
                score,
            )
            for index, score in scores.items()
        ]
        return sorted(ranked, key=lambda candidate: (-candidate.priority, candidate.index))

    def _read_chunks(self, run: _Run, ranked: list[_Candidate], terms: list[str]) -> dict[int, str]:
        """Read chunk files best first until the evidence covers the question or the budget ends,
        then follow the title links of what was read (the second hop of a bridge question).

        Candidates whose search score is far below the best one's are skipped: the grep and beam
        bonuses order the reading but do not raise that bar.
        Returns the memory text of each file read, by memory index, in reading order.
        """
        read: dict[int, str] = {}
        covered: set[str] = set()
        best_score = max((candidate.score for candidate in ranked), default=0.0)
        for candidate in ranked:
            if not run.can_call():
                run.note("stop", detail=f"budget of {run.budget} tool calls spent")
                return read
            if read and candidate.score < best_score * READ_CUTOFF:
                continue
            if self._read(run, candidate, read, covered, terms):
                return read
        for candidate in self._linked_candidates(read, ranked)[:MAX_LINK_READS]:
            if not run.can_call():
                break
            run.note("follow_link", self.corpus.chunk_path(candidate.index))
            if self._read(run, candidate, read, covered, terms):
                break
        return read

    def _read(
        self,
        run: _Run,
        candidate: _Candidate,
        read: dict[int, str],
        covered: set[str],
        terms: list[str],
    ) -> bool:
        """Read one chunk file; True when the evidence now covers every question term."""
        path = self.corpus.chunk_path(candidate.index)
        _, read[candidate.index] = parse_chunk_file(self.tools.cat(path))
        run.call("cat", path, f"(priority {candidate.priority:.2f})")
        run.read(path)
        run.explore(_directory_of(path))
        evidence = self._evidence_stems(run, candidate.index, read[candidate.index])
        covered.update(term for term in terms if term in evidence)
        if len(read) >= 2 and len(covered) == len(terms):
            run.note("stop", detail="evidence covers every question term")
            return True
        return False

    def _linked_candidates(
        self, read: dict[int, str], ranked: list[_Candidate]
    ) -> list[_Candidate]:
        """The best unread candidate of each document that a chunk read names by its title."""
        graph = self.corpus.link_graph()
        named = frozenset().union(*(graph.named_by_chunk(index) for index in read))
        linked: dict[str, _Candidate] = {}
        for candidate in ranked:  # best first
            document = graph.document_of(candidate.index)
            if document in named and document not in linked and candidate.index not in read:
                linked[document] = candidate
        return sorted(linked.values(), key=lambda candidate: (-candidate.score, candidate.index))

    # --- the answer -------------------------------------------------------------------------

    def _answer(
        self, run: _Run, read: dict[int, str], query_vector: np.ndarray, terms: list[str]
    ) -> ChatResult:
        request = AnswerRequest(
            question=run.question,
            evidence=[self._evidence(index, memory_text) for index, memory_text in read.items()],
            query_vector=query_vector,
            claims=self.currency.claims(read, run.question, query_vector)
            if self.currency is not None
            else [],
        )
        result = extractive_answer(request)
        for path in result.sources[len(read) :]:  # current claims of memories not read
            run.note("current", path, "states the claim that replaced one read")
            run.read(path)
        if not result.found:
            if result.notes:
                return self._not_found(run, result.notes)
            closest = ", ".join(run.files_read[-2:])
            return self._not_found(run, f"closest material read: {closest}", result.confidence)
        # Every chunk read is cited, best first: each was read because it ranked near the top, and
        # the chunk that matches the question may not hold the sentence that answers it (a bridge).
        final = self.tools.answer(result.answer, result.confidence, result.sources)
        run.note(
            "answer",
            detail=f"{result.notes} from {len(result.sources)} files (confidence {final.confidence:.2f})",
        )
        answered = self._result(
            run, final.text, final.sources, final.confidence, f"{run.calls} tool calls"
        )
        answered.history = result.history
        return answered

    def _evidence(self, index: int, memory_text: str) -> AnswerEvidence:
        """A chunk read, with what the extractive answer needs: its sentences and vectors."""
        texts, vectors = self._chunk_sentences(index, memory_text)
        return AnswerEvidence(
            path=self.corpus.chunk_path(index),
            text=memory_text,
            index=index,
            vector=self.corpus.memory_vectors()[index],
            sentences=texts,
            sentence_vectors=vectors if texts else None,
        )

    def _chunk_sentences(self, index: int, memory_text: str) -> tuple[list[str], np.ndarray]:
        """The chunk's stored sentences and vectors (the raw text behind the memory); a store
        without them falls back to embedding the sentences of the memory text that was read."""
        texts, vectors = self.corpus.chunk_sentences(index)
        if texts:
            return texts, vectors
        texts = split_sentences(memory_text)
        if not texts or self.embedder is None:
            return [], np.zeros((0, 0), dtype=np.float32)
        return texts, np.asarray(self.embedder.encode(texts), dtype=np.float32)

    def _evidence_stems(self, run: _Run, index: int, memory_text: str) -> frozenset[str]:
        if index not in run.evidence:
            texts, _ = self.corpus.chunk_sentences(index)
            run.evidence[index] = text_stems(" ".join(texts) or memory_text)
        return run.evidence[index]

    def _directory_stems(self) -> list[frozenset[str]]:
        if self._readme_stems is None:
            self._readme_stems = [
                stem_all(terms) for terms in self.corpus.directories().readme_terms
            ]
        return self._readme_stems

    def _best_by_directory(self, found: list[tuple[int, float]]) -> dict[str, float]:
        """The best search score inside each directory's subtree (directories with a hit only)."""
        best: dict[str, float] = {}
        for index, score in found:
            directory = _directory_of(self.corpus.chunk_path(index))
            while directory != "/":
                best[directory] = max(best.get(directory, 0.0), score)
                directory = directory.rsplit("/", 1)[0] or "/"
        return best

    def _not_found(self, run: _Run, reason: str, confidence: float = 0.0) -> ChatResult:
        run.note("answer", detail=f"not found ({reason})")
        return self._result(
            run, NOT_FOUND_ANSWER, [], min(confidence, NOT_FOUND_THRESHOLD - 0.01), reason
        )

    def _result(
        self, run: _Run, answer: str, sources: list[str], confidence: float, notes: str
    ) -> ChatResult:
        return ChatResult(
            question=run.question,
            answer=answer,
            sources=sources,
            confidence=round(max(confidence, 0.0), 3),
            files_read=run.files_read,
            dirs_explored=run.dirs_explored,
            trajectory="\n".join(step.render() for step in run.steps),
            steps=run.steps,
            notes=notes,
        )


def _directory_of(chunk_path: str) -> str:
    """Tree directory of a store-relative file path: "a/b/x.md" -> "/a/b", "x.md" -> "/"."""
    parent, _, _ = chunk_path.rpartition("/")
    return f"/{parent}"


def _add_unique(items: list[str], item: str) -> None:
    if item not in items:
        items.append(item)
