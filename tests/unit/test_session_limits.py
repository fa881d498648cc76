"""Intercepts bounded and linear in their input: a long context is analysed piece by piece,
another caller reads its session meanwhile, and a context over the limit is refused at once.
A commit's graph analysis, too, runs while sessions go on."""

from __future__ import annotations

import threading

import pytest

from memory_bank.config import AppConfig, LimitsConfig, SessionConfig
from memory_bank.errors import InputTooLargeError
from memory_bank.graph.analysis import Relationship
from memory_bank.graph.batch import GraphCommit, MemoryInput, analyze_tasks
from memory_bank.graph.storage import GraphStorage
from memory_bank.ingest.graph_step import IngestGraphStep
from memory_bank.session.agents import ClusterDraft
from memory_bank.session.models import PlanRequest, PlanResult
from memory_bank.session.planning import plan_offline
from memory_bank.session.service import SessionService, context_pieces
from tests.support import written_node_ids

PIECE_CHARS = 1_000


class PieceAgents:
    """One cluster per piece; the classification of a chosen piece waits for a signal."""

    def __init__(self, hold_piece: int | None = None) -> None:
        self.pieces: list[str] = []
        self.hold_piece = hold_piece
        self.holding = threading.Event()
        self.release = threading.Event()

    def classify(self, context: str, task_goal: str | None) -> list[ClusterDraft]:
        self.pieces.append(context)
        if len(self.pieces) == self.hold_piece:
            self.holding.set()
            assert self.release.wait(60), "nobody released the held piece"
        number = len(self.pieces)
        return [ClusterDraft(f"k{number}", f"piece {number}", context, [f"piece{number}"])]

    def structure(self, cluster: ClusterDraft) -> str:
        return cluster.content[:200]

    def analyze(self, new, candidates, judge, task_goal=None):
        return []

    def plan(self, request: PlanRequest) -> PlanResult:
        return plan_offline(request)


def paragraphs(count: int) -> str:
    return "\n\n".join(
        f"Paragraph {n} says that the ferry number {n} left the harbour at {n % 12} o'clock "
        f"and reached island {n % 7} after a calm crossing of {n % 5 + 1} hours."
        for n in range(count)
    )


def sessions(tmp_path, embedder, agents, **limits) -> SessionService:
    config = AppConfig(
        session=SessionConfig(analysis_chars=PIECE_CHARS), limits=LimitsConfig(**limits)
    )
    return SessionService(GraphStorage(tmp_path / "store"), config, embedder, lambda _: agents)


def test_context_pieces_are_cut_between_paragraphs_and_keep_every_character():
    context = paragraphs(40)
    pieces = context_pieces(context, PIECE_CHARS)
    assert "".join(pieces) == context
    assert all(len(piece) <= PIECE_CHARS for piece in pieces)
    assert all(piece.startswith("\n\nParagraph") for piece in pieces[1:])
    assert context_pieces("x" * 2500, PIECE_CHARS) == ["x" * 1000, "x" * 1000, "x" * 500]


def test_a_long_context_is_analysed_piece_by_piece(tmp_path, embedder):
    agents = PieceAgents()
    bank = sessions(tmp_path, embedder, agents)
    session = bank.open_session("When did the ferries leave?").doc_id
    context = paragraphs(40)

    result = bank.intercept(session, context)

    assert len(agents.pieces) == len(context_pieces(context, PIECE_CHARS)) > 4
    assert all(len(piece) <= PIECE_CHARS for piece in agents.pieces)
    assert len(result.new_nodes) == len(agents.pieces)
    entry = bank.storage.state.tree.entries[result.entry_id]
    assert entry.text == context  # the raw context is kept whole


def test_another_caller_reads_its_session_while_a_long_intercept_runs(tmp_path, embedder):
    agents = PieceAgents(hold_piece=3)
    bank = sessions(tmp_path, embedder, agents)
    busy = bank.open_session("When did the ferries leave?").doc_id
    other = bank.open_session("Where did the ferries go?").doc_id
    outcome: dict = {}
    worker = threading.Thread(
        target=lambda: outcome.setdefault("result", bank.intercept(busy, paragraphs(40)))
    )
    worker.start()
    try:
        assert agents.holding.wait(120), "the intercept never reached its third piece"
        # The intercept is in the middle of its context: reads do not wait for it.
        reader = threading.Thread(
            target=lambda: outcome.setdefault("read", (bank.insight_doc(other), bank.summary()))
        )
        reader.start()
        reader.join(30)
        assert "read" in outcome, "reading a session waited for another caller's intercept"
    finally:
        agents.release.set()
        worker.join(120)
    assert outcome["result"].new_nodes


def test_a_context_over_the_limit_is_refused_before_any_work(tmp_path, embedder):
    agents = PieceAgents()
    bank = sessions(tmp_path, embedder, agents, max_context_chars=5_000)
    session = bank.open_session("When did the ferries leave?").doc_id
    with pytest.raises(InputTooLargeError, match="limits.max_context_chars"):
        bank.intercept(session, "x" * 5_001)
    assert agents.pieces == []


def test_sessions_go_on_while_a_commit_analyses_its_graph(tmp_path, embedder):
    agents = PieceAgents()
    bank = sessions(tmp_path, embedder, agents)
    session = bank.open_session("When did the ferries leave?").doc_id
    analysing, release = threading.Event(), threading.Event()

    def held_analysis(tasks, sentences):
        analysing.set()
        assert release.wait(60), "nobody released the analysis"
        return analyze_tasks(tasks, sentences)

    step = IngestGraphStep(bank.storage, bank.config, embedder.encode, analyze_call=held_analysis)
    texts = [f"The ferry number {n} left the harbour at {n} o'clock." for n in range(3)]
    vectors = embedder.encode(texts)
    added = [
        MemoryInput(f"c{n}", text, "", ["ferry"], vectors[n], "ferries.md", None, text)
        for n, text in enumerate(texts)
    ]
    commit = GraphCommit(added=added, removed=[], chunk_ids_after={item.chunk_id for item in added})
    outcome: dict = {}
    worker = threading.Thread(
        target=lambda: outcome.setdefault("commit", step.prepare_commit(commit))
    )
    worker.start()
    try:
        assert analysing.wait(120), "the commit found nothing to analyse"
        # The analysis is running: an intercept (a change under the graph lock) does not wait.
        reader = threading.Thread(
            target=lambda: outcome.setdefault("intercept", bank.intercept(session, "A ferry left."))
        )
        reader.start()
        reader.join(60)
        assert "intercept" in outcome, "an intercept waited for a commit's graph analysis"
    finally:
        release.set()
        worker.join(120)
    snapshot, _ = outcome["commit"]
    node_ids = written_node_ids(snapshot, tmp_path / "version")
    assert {"c0", "c1", "c2"} <= node_ids
    # The commit's snapshot holds what the intercept did meanwhile, and its own verdicts.
    assert outcome["intercept"].new_nodes[0].id in node_ids


def test_a_verdict_about_a_node_retired_during_the_analysis_is_dropped(tmp_path, embedder):
    storage = GraphStorage(tmp_path / "store")
    analysing, release = threading.Event(), threading.Event()

    def conflicting(tasks, sentences):  # every candidate contradicts, once the retirement is done
        analysing.set()
        assert release.wait(60), "nobody released the analysis"
        return [
            [Relationship(c.id, "conflict", 0.9, "scripted") for c in task.candidates]
            for task in tasks
        ]

    step = IngestGraphStep(storage, AppConfig(), embedder.encode, analyze_call=conflicting)
    texts = ["The ferry left at nine o'clock.", "The ferry left at ten o'clock."]
    vectors = embedder.encode(texts)
    items = [
        MemoryInput(f"c{n}", text, "", ["ferry"], vectors[n], "ferries.md", None, text, {}, n)
        for n, text in enumerate(texts)
    ]
    release.set()  # the first commit has no candidates to analyse
    step.prepare_commit(GraphCommit([items[0]], [], {"c0"}))
    release.clear()
    outcome: dict = {}
    worker = threading.Thread(
        target=lambda: outcome.setdefault(
            "commit", step.prepare_commit(GraphCommit([items[1]], [], {"c0", "c1"}))
        )
    )
    worker.start()
    try:
        assert analysing.wait(120), "the second commit found nothing to analyse"
        with storage.mutating() as state:  # a session merges c0 away meanwhile
            state.graph.retire("c0", "merged", "s-elsewhere", 3.0, "merged by a session")
    finally:
        release.set()
        worker.join(120)
    _, result = outcome["commit"]
    assert result.conflicts == [] and result.pairs == 0
    assert storage.state.graph.conflicts == {}


class RecordingEmbedder:
    """The test session's embedder, recording every text it is asked to embed."""

    def __init__(self, embedder) -> None:
        self.embedder = embedder
        self.texts: list[str] = []

    def encode(self, texts: list[str]):
        self.texts += texts
        return self.embedder.encode(texts)

    def __getattr__(self, name: str):
        return getattr(self.embedder, name)


def test_the_sentences_of_earlier_session_nodes_are_embedded_once(tmp_path, embedder):
    """Each analysis reads its candidates' sentences under the graph lock: the session nodes'
    are kept from when their piece was drafted, not embedded again for every later piece."""
    recording = RecordingEmbedder(embedder)
    bank = sessions(tmp_path, recording, PieceAgents())
    session = bank.open_session("When did the ferries leave?").doc_id
    first = bank.intercept(session, paragraphs(8))
    embedded_before = len(recording.texts)

    second = bank.intercept(session, "The harbour master logs every ferry that leaves.")

    earlier = {
        sentence
        for node in first.new_nodes
        for sentence in bank.deep_retrieval(node.id)[0].text.split("\n\n")
    }
    assert second.new_nodes and earlier
    assert not earlier & set(recording.texts[embedded_before:])
