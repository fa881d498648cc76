"""The offline navigation policy: explores the store with its tools and answers with citations.

A policy of the agent loop (`llm.agent`): it decides each tool call from what the earlier ones
gave, following the exploration guidelines of seed 000 §6.2 without an LLM:

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

from typing import NamedTuple

import numpy as np

from memory_bank.config import RetrievalConfig
from memory_bank.index.embedding import TextEncoder
from memory_bank.index.hybrid import HybridSearch
from memory_bank.llm.agent import Described, Observation, Policy, Run
from memory_bank.llm.seam import ToolCall
from memory_bank.query.answer_sentences import NOT_FOUND_THRESHOLD
from memory_bank.query.answering import extractive_answer
from memory_bank.query.question import content_terms, question_entities, term_coverage
from memory_bank.query.roles import AnswerRequest, memory_evidence
from memory_bank.query.toolbox import StoreToolbox
from memory_bank.schemas import ChatResult, DirectoryNode
from memory_bank.store.files import parse_chunk_file, readme_relative_path
from memory_bank.store.tables import directory_of
from memory_bank.text.lexicon import stem_words, text_stems
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


class _Candidate(NamedTuple):
    index: int  # memory index
    priority: float  # search score plus grep and beam bonuses: the reading order
    score: float  # search score (hybrid, with what title links lent)


class DescentPolicy:
    """One question's exploration (see the module docstring for the strategy)."""

    def __init__(
        self,
        question: str,
        run: Run,
        toolbox: StoreToolbox,
        search: HybridSearch,
        config: RetrievalConfig,
        readme_stems: list[frozenset[str]],
        embedder: TextEncoder | None = None,
    ) -> None:
        """`readme_stems`: the stems of every directory's README, by directory position."""
        self.question = question
        self.run = run
        self.toolbox = toolbox
        self.tools = toolbox.tools
        self.currency = toolbox.currency
        self.search = search
        self.corpus = search.corpus
        self.embedder = embedder or search.embedder
        self.config = config
        self._readme_stems = readme_stems
        self.evidence: dict[int, frozenset[str]] = {}  # stems of each chunk read

    def decide(self) -> Policy[ChatResult]:
        """The tool calls for the question, then the answer."""
        question, run = self.question, self.run
        terms = content_terms(question)
        yield from self._read_root()
        if self.corpus.num_chunks == 0:
            run.note("stop", detail="the store holds no memories")
            return self._not_found("the store is empty")
        if not run.can_call():
            return self._not_found(
                f"stopped at max_iterations={run.budget} before reading any memory"
            )
        searched = yield Described(ToolCall("search", {"query": question}), self._found_detail)
        found, query_vector, bm25_scores = searched.value
        grep_counts = yield from self._grep_entities(question_entities(question))
        leaves = yield from self._descend(query_vector, terms, self._best_by_directory(found))
        ranked = self._rank_candidates(query_vector, bm25_scores, found, grep_counts, leaves)
        read = yield from self._read_chunks(ranked, terms)
        return self._answer(read, query_vector)

    # --- exploration steps ------------------------------------------------------------------

    def _read_root(self) -> Policy[None]:
        self.toolbox.explore("/")
        yield Described(
            ToolCall("cat", {"path": "README.md"}),
            lambda seen: f"({len(seen.value.splitlines())} lines)" if seen.ok else "-> missing",
        )

    def _found_detail(self, searched: Observation) -> str:
        found = searched.value.candidates
        best = f", best {self.corpus.chunk_path(found[0][0])} ({found[0][1]:.2f})" if found else ""
        return f"(hybrid) -> {len(found)} candidates{best}"

    def _grep_entities(self, entities: list[str]) -> Policy[dict[int, int]]:
        """Grep each entity (within the budget); count, per chunk, the entities it contains."""
        counts: dict[int, int] = {}
        for entity in entities[:MAX_GREPS]:
            if not self.run.can_call(reserve=MIN_CHUNK_READS):
                break
            grepped = yield Described(
                ToolCall("grep", {"pattern": entity, "whole_word": True}),
                lambda seen: _files_detail(len(self._memory_files(seen))),
            )
            for path in self._memory_files(grepped):
                index = self.corpus.index_of_path(path)
                counts[index] = counts.get(index, 0) + 1
        return counts

    def _memory_files(self, grepped: Observation) -> list[str]:
        """The memory files a grep found, in path order."""
        matches = grepped.value if grepped.ok else []
        return sorted({m.file for m in matches if self.corpus.index_of_path(m.file) is not None})

    def _descend(
        self, query_vector: np.ndarray, terms: list[str], best_found: dict[str, float]
    ) -> Policy[list[DirectoryNode]]:
        """Beam descent from the root; returns the directories the beam ends in."""
        directories = self.corpus.directories()
        readme_stems = self._readme_stems
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
            # The best child stays when every score is below zero (a question unlike every
            # README), where the relative cutoff `best * BEAM_CUTOFF` lies above `best`.
            frontier = [
                item for item in scored[: self.config.beam_width] if item[1] >= best * BEAM_CUTOFF
            ] or scored[:1]
            for node, score in frontier:
                if node.path not in previous:
                    self.run.note("descend", node.path, f"(score {score:.2f})")
                    self.toolbox.explore(node.path)
            top = frontier[0][0]
            if top.path not in previous and self.run.can_call(reserve=MIN_CHUNK_READS):
                yield Described(ToolCall("cat", {"path": readme_relative_path(top.path)}), "")
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

    def _read_chunks(self, ranked: list[_Candidate], terms: list[str]) -> Policy[dict[int, str]]:
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
            if not self.run.can_call():
                self.run.note("stop", detail=f"budget of {self.run.budget} tool calls spent")
                return read
            if read and candidate.score < best_score * READ_CUTOFF:
                continue
            if (yield from self._read(candidate, read, covered, terms)):
                return read
        for candidate in self._linked_candidates(read, ranked)[:MAX_LINK_READS]:
            if not self.run.can_call():
                break
            self.run.note("follow_link", self.corpus.chunk_path(candidate.index))
            if (yield from self._read(candidate, read, covered, terms)):
                break
        return read

    def _read(
        self, candidate: _Candidate, read: dict[int, str], covered: set[str], terms: list[str]
    ) -> Policy[bool]:
        """Read one chunk file; True when the evidence now covers every question term."""
        path = self.corpus.chunk_path(candidate.index)
        seen = yield Described(
            ToolCall("cat", {"path": path}), f"(priority {candidate.priority:.2f})"
        )
        if not seen.ok:
            return False
        _, read[candidate.index] = parse_chunk_file(seen.value)
        self.toolbox.explore(directory_of(path))
        evidence = self._evidence_stems(candidate.index, read[candidate.index])
        covered.update(term for term in terms if term in evidence)
        if len(read) >= 2 and len(covered) == len(terms):
            self.run.note("stop", detail="evidence covers every question term")
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

    def _answer(self, read: dict[int, str], query_vector: np.ndarray) -> ChatResult:
        request = AnswerRequest(
            question=self.question,
            evidence=[
                memory_evidence(
                    self.corpus, index, text, sentences=self._chunk_sentences(index, text)
                )
                for index, text in read.items()
            ],
            query_vector=query_vector,
            claims=self.currency.claims(read, self.question, query_vector)
            if self.currency is not None
            else [],
        )
        result = extractive_answer(request)
        for path in result.sources[len(read) :]:  # current claims of memories not read
            self.run.note("current", path, "states the claim that replaced one read")
            self.toolbox.read(path)
        if not result.found:
            if result.notes:
                return self._not_found(result.notes)
            closest = ", ".join(self.toolbox.files_read[-2:])
            return self._not_found(f"closest material read: {closest}", result.confidence)
        # Every chunk read is cited, best first: each was read because it ranked near the top, and
        # the chunk that matches the question may not hold the sentence that answers it (a bridge).
        final = self.tools.answer(result.answer, result.confidence, result.sources)
        self.run.note(
            "answer",
            detail=f"{result.notes} from {len(result.sources)} files (confidence {final.confidence:.2f})",
        )
        answered = self._result(
            final.text, final.sources, final.confidence, f"{self.run.calls} tool calls"
        )
        answered.history = result.history
        return answered

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

    def _evidence_stems(self, index: int, memory_text: str) -> frozenset[str]:
        if index not in self.evidence:
            texts, _ = self.corpus.chunk_sentences(index)
            self.evidence[index] = text_stems(" ".join(texts) or memory_text)
        return self.evidence[index]

    def _best_by_directory(self, found: list[tuple[int, float]]) -> dict[str, float]:
        """The best search score inside each directory's subtree (directories with a hit only)."""
        best: dict[str, float] = {}
        for index, score in found:
            directory = directory_of(self.corpus.chunk_path(index))
            while directory != "/":
                best[directory] = max(best.get(directory, 0.0), score)
                directory = directory.rsplit("/", 1)[0] or "/"
        return best

    def _not_found(self, reason: str, confidence: float = 0.0) -> ChatResult:
        self.run.note("answer", detail=f"not found ({reason})")
        return self._result(
            NOT_FOUND_ANSWER, [], min(confidence, NOT_FOUND_THRESHOLD - 0.01), reason
        )

    def _result(self, answer: str, sources: list[str], confidence: float, notes: str) -> ChatResult:
        return ChatResult(
            question=self.question,
            answer=answer,
            sources=sources,
            confidence=round(max(confidence, 0.0), 3),
            files_read=self.toolbox.files_read,
            dirs_explored=self.toolbox.dirs_explored,
            trajectory=self.run.trajectory,
            steps=self.run.steps,
            notes=notes,
        )


def readme_stems(search: HybridSearch) -> list[frozenset[str]]:
    """The stems of every directory's README, by directory position (a store's, once)."""
    return [frozenset(stem_words(terms)) for terms in search.corpus.directories().readme_terms]


def _files_detail(count: int) -> str:
    return f"-> {count} file{'s' if count != 1 else ''}"
