"""The session mode of the Memory Bank in one process: merges with their cascade, conflicts with
cross-validation, planning, prompt enhancement, the read-only Interaction Tree, persistence
across processes' graphs, and the ReAct loop driven offline."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memory_bank.app.bank import MemoryBank
from memory_bank.config import AppConfig
from memory_bank.graph.analysis import NodeView, Relationship, integrate_offline
from memory_bank.graph.contradictions import Contradiction
from memory_bank.graph.storage import GraphStorage
from memory_bank.session.models import PlanRequest, PlanResult
from memory_bank.session.planning import plan_offline, should_terminate
from memory_bank.session.service import SessionService
from memory_bank.session.session import run_session
from memory_bank.session.topics import ClusterDraft
from memory_bank.store.layout import is_store


class ScriptedAgents:
    """Classification and structure as given; analysis as scripted by node content; the
    offline integration and planning. Records every analysis call."""

    def __init__(self, relations: dict[tuple[str, str], str]) -> None:
        self.relations = relations  # (new tag, candidate tag) -> relationship
        self.calls: list[tuple[str, list[str]]] = []

    def classify(self, context: str, task_goal: str | None) -> list[ClusterDraft]:
        tag, text = context.split(":", 1)
        return [ClusterDraft(tag, f"{tag.strip()} topic", text.strip(), [tag.strip()])]

    def structure(self, cluster: ClusterDraft) -> str:
        return cluster.content

    def analyze(
        self,
        new: NodeView,
        candidates: Sequence[NodeView],
        judge: Sequence[str],
        task_goal: str | None = None,
    ) -> list[Relationship]:
        self.calls.append((new.id, [c.id for c in candidates]))
        found = []
        for candidate in candidates:
            relation = self.relations.get((new.keywords[0], candidate.keywords[0]))
            if relation is not None and relation in judge:
                found.append(Relationship(candidate.id, relation, 0.9, "scripted"))
        return found

    def integrate(self, nodes, neighbours, trigger, validation, contradictions):
        return integrate_offline(nodes, neighbours, trigger, validation, contradictions)

    def plan(self, request: PlanRequest) -> PlanResult:
        return plan_offline(request)


def _sessions(store: Path, embedder, agents=None) -> SessionService:
    return SessionService(
        GraphStorage(store), AppConfig(), embedder, agents=(lambda _: agents) if agents else None
    )


def test_a_merge_inherits_the_edges_updates_the_neighbours_and_cascades(tmp_path, embedder):
    """Seed 001 §3.2.4: A and B merge into H; B's neighbours C and D become H's and are
    updated; H re-enters retrieval without C and D."""
    agents = ScriptedAgents({("B", "C"): "related", ("B", "D"): "related", ("A", "B"): "merge"})
    sessions = _sessions(tmp_path / "store", embedder, agents)
    session = sessions.open_session("What happened in quantum computing from 2020 to 2023?").doc_id
    ids = {}
    for tag, text in [
        ("C", "Quantum entanglement research in 2020 linked distant qubits."),
        ("D", "Quantum algorithm optimisation in 2020 cut circuit depth."),
        ("B", "Quantum computing progress in 2020: larger superconducting processors."),
        ("E", "Classical supercomputers in 2023 still beat quantum machines on most tasks."),
    ]:
        ids[tag] = sessions.intercept(session, f"{tag}: {text}").new_nodes[0].id
    graph = sessions.storage.state.graph
    assert set(graph.nodes[ids["B"]].links) == {ids["C"], ids["D"]}
    contexts_before = {tag: graph.nodes[ids[tag]].context for tag in "CD"}

    result = sessions.intercept(session, "A: IBM quantum chips in 2023 extend the 2020 progress.")

    merged_id = result.merged[0]
    assert result.new_nodes[0].id == merged_id
    merged = graph.nodes[merged_id]
    assert set(merged.links) == {ids["C"], ids["D"]}  # inherited, once each
    event = next(iter(sessions.storage.state.tree.merge_events.values()))
    assert event.new_node_id == merged_id and ids["B"] in event.merged_node_ids
    new_a = next(i for i in event.merged_node_ids if i != ids["B"])
    for old in (new_a, ids["B"]):
        assert graph.nodes[old].status == "merged" and graph.nodes[old].superseded_by == merged_id
        assert old not in graph.nodes[ids["C"]].links
    for tag in "CD":  # the inherited neighbours' context now names the merged node
        assert graph.nodes[ids[tag]].context != contexts_before[tag]
        assert "related to" in graph.nodes[ids[tag]].context
    # The cascade: H analysed again, against candidates other than C and D.
    after_merge = [candidates for node, candidates in agents.calls if node == merged_id]
    assert after_merge and all(ids["C"] not in c and ids["D"] not in c for c in after_merge)
    assert ids["E"] in after_merge[0]
    # The merged node's raw contexts are both intercepted texts.
    texts = [entry.text for entry in sessions.deep_retrieval(merged_id)]
    assert any(t.startswith("A:") for t in texts) and any(t.startswith("B:") for t in texts)


def _entries_digest(sessions: SessionService) -> dict[str, str]:
    return {
        entry_id: hashlib.sha256(
            json.dumps([e.text, e.timestamp, e.metadata], sort_keys=True, default=str).encode()
        ).hexdigest()
        for entry_id, e in sessions.storage.state.tree.entries.items()
    }


def test_a_conflict_puts_cross_validation_first_then_keeps_one_current_node(tmp_path, embedder):
    bank = MemoryBank(tmp_path / "store", AppConfig())
    session = bank.session("Who is the CEO of Acme?")
    assert is_store(tmp_path / "store")  # made empty for the session

    first = session.intercept(
        "Acme Corporation makes anvils and rocket skates. The CEO of Acme is Alice."
    )
    entries_before = _entries_digest(bank.session_service())
    second = session.intercept("The CEO of Acme is Bob, according to the company register.")

    assert [c.old_value for c in second.conflicts] == ["Alice"]
    pending = second.insight_doc.pending_tasks
    assert len(pending) == 1 and pending[0].startswith("Cross-validate")
    assert first.new_nodes[0].id in pending[0] and second.new_nodes[0].id in pending[0]
    assert not second.done
    prompt = session.enhance_prompt()
    assert prompt.startswith("<task>\n") and "</task>\n\n<memory>\n" in prompt
    assert "Cross-validate" in prompt and "Memory 1 (id:" in prompt

    validated = session.intercept("The 2024 annual report confirms that Bob is the CEO of Acme.")

    assert validated.task_type == "cross_validate"
    assert [(c.status, c.current) for c in validated.resolved] == [
        ("resolved", second.new_nodes[0].id)
    ]
    current = bank.session_service().node(validated.new_nodes[0].id)
    assert (
        current.status == "current" and "Bob" in current.summary and "Alice" not in current.summary
    )
    assert {h.summary for h in current.history} >= {
        "Acme Corporation makes anvils and rocket skates. The CEO of Acme is Alice.",
        "The CEO of Acme is Bob, according to the company register.",
    }
    superseded = bank.session_service().node(first.new_nodes[0].id)
    assert superseded.status == "superseded" and superseded.superseded_by == current.id
    assert validated.insight_doc.completed_tasks[-1].type == "cross_validate"
    # Entries are only ever added: those recorded before are exactly as they were.
    entries_after = _entries_digest(bank.session_service())
    assert {k: entries_after[k] for k in entries_before} == entries_before
    assert len(entries_after) == len(entries_before) + 2


@pytest.mark.parametrize(
    ("first", "second", "validation", "held", "replaced"),
    [
        (
            "The Kelby tram line opened in 1904. The line has 14 stops.",
            "The Kelby tram line has 16 stops and a depot at Marsh End.",
            "Timetable notice: the Kelby tram line has 16 stops.",
            "16",
            "14",
        ),
        (
            "The Lark Bridge crosses the Wey. It was finished in 1851.",
            "The Lark Bridge, an iron arch, was finished in 1855.",
            "County records: the Lark Bridge was finished in 1851.",
            "1851",
            "1855",
        ),
        (
            "The Kelby Gazette is edited by Ruth Okoye.",
            "The Kelby Gazette is edited by Martin Hale, who joined from York.",
            "Press register: the Kelby Gazette is edited by Martin Hale.",
            "Martin Hale",
            "Ruth Okoye",
        ),
        (
            "The Kelby tram depot is painted bottle green.",
            "The Kelby tram depot is painted dark red, like the trams.",
            "Depot survey: the Kelby tram depot is painted bottle green.",
            "bottle green",
            "dark red",
        ),
    ],
)
def test_sources_that_disagree_on_a_value_without_a_cue_are_cross_validated(
    tmp_path, embedder, first, second, validation, held, replaced
):
    bank = MemoryBank(tmp_path / "store", AppConfig(), embedder=embedder)
    session = bank.session("What do we know about Kelby?")
    one = session.intercept(first, metadata={"source": "https://a.example.org"})
    two = session.intercept(second, metadata={"source": "https://b.example.net"})

    assert {(c.old_value, c.new_value) for c in two.conflicts} & {
        (held, replaced),
        (replaced, held),
    }
    pending = two.insight_doc.pending_tasks
    assert pending[0].startswith("Cross-validate")
    assert one.new_nodes[0].id in pending[0] and two.new_nodes[0].id in pending[0]

    validated = session.intercept(validation, metadata={"source": "https://c.example.gov"})

    current = bank.session_service().node(validated.new_nodes[0].id)
    assert current.status == "current" and validated.resolved
    assert held in current.summary and replaced not in current.summary
    assert all(any(v in h.summary for h in current.history) for v in (held, replaced))


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("The Kelby tram line has 14 stops.", "The Wey tram line has 16 stops."),
        ("The Kelby tram line has 14 stops.", "The Kelby tram line has 3 depots."),
        ("The Kelby tram depot is painted green.", "The Kelby tram depot is owned by the city."),
        ("The Kelby trams run every 12 minutes.", "The Kelby trams run every 12 minutes, all day."),
        ("In 2010 Kelby had 4,000 residents.", "In 2020 Kelby had 4,600 residents."),
        ("The Kelby trams leave at 6 am on weekdays.", "The Kelby trams leave at 8 am on Sundays."),
    ],
)
def test_sources_that_do_not_disagree_raise_no_conflict(tmp_path, embedder, first, second):
    bank = MemoryBank(tmp_path / "store", AppConfig(), embedder=embedder)
    session = bank.session("What do we know about Kelby?")
    session.intercept(first, metadata={"source": "https://a.example.org"})
    two = session.intercept(second, metadata={"source": "https://b.example.net"})

    assert two.conflicts == []
    assert not any(t.startswith("Cross-validate") for t in two.insight_doc.pending_tasks)


def test_another_process_graph_sees_every_acknowledged_change(tmp_path, embedder):
    store = tmp_path / "store"
    writer = _sessions(store, embedder)
    session = writer.open_session("Where is the Louvre?")
    writer.intercept(session.doc_id, "The Louvre is a museum in Paris, France.")
    reader = _sessions(store, embedder)
    assert reader.insight_doc(session.doc_id).completed_tasks

    later = writer.intercept(session.doc_id, "The Louvre opened as a museum in 1793.")

    assert reader.node(later.new_nodes[0].id).summary == "The Louvre opened as a museum in 1793."
    assert reader.summary().checkpoint == writer.summary().checkpoint


def test_the_termination_rule_and_incremental_planning():
    from memory_bank.session.models import CompletedTask, InsightDoc

    doc = InsightDoc(doc_id="s", task_goal="goal")
    planned = plan_offline(
        PlanRequest(insight_doc=doc, goal_coverage=0.2, missing_terms=["louvre"])
    )
    assert planned.pending_tasks == ["Find information on: louvre"]
    done = InsightDoc(
        doc_id="s",
        task_goal="goal",
        completed_tasks=[
            CompletedTask(type="normal", description="x", status="success", context="y")
        ],
    )
    failed = done.model_copy(
        update={
            "completed_tasks": [
                *done.completed_tasks,
                CompletedTask(type="normal", description="z", status="failure", context=""),
            ]
        }
    )
    assert should_terminate(done) and not should_terminate(failed)


def test_a_closed_session_refuses_intercepts_and_its_graph_serves_later_questions(
    tmp_path, embedder
):
    from memory_bank.errors import SessionError

    bank = MemoryBank(tmp_path / "store", AppConfig())
    bank._embedder = embedder
    session = bank.session("Where is the Louvre?")
    session.intercept("The Louvre is a museum in Paris, France. It opened in 1793.")
    exported = session.close()

    assert not exported.open and exported.nodes and exported.entries
    with pytest.raises(SessionError):
        session.intercept("more")
    assert bank.graph().session_nodes == 1
    [hit] = bank.search("When did the Louvre open?")  # the empty store's only memory
    assert hit.kind == "memory" and "1793" in hit.text and hit.chunk_id == exported.nodes[0].id


def test_the_react_loop_runs_a_session_offline(tmp_path, embedder):
    bank = MemoryBank(tmp_path / "store", AppConfig())
    bank._embedder = embedder
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "louvre.md").write_text("# The Louvre\n\nThe Louvre is a museum in Paris, France.\n")
    bank.add(files=[str(notes)])
    session = bank.session("In which city is the Louvre?")

    run = run_session(session, bank.react_agent(roots=[notes]), max_rounds=3)

    assert "Paris" in run.answer
    assert run.insight_doc.completed_tasks and run.rounds <= 3


def test_a_validation_that_states_a_value_more_precisely_decides_the_conflict():
    old = "The Orley Fair has been held every May since 1958."
    new = "I was seven at the very first Orley Fair, in 1961."

    def view(node_id: str, text: str, at: float) -> NodeView:
        return NodeView(node_id, text, "", [], at, np.zeros(3, dtype=np.float32), text)

    conflict = Contradiction(old, new, "Orley Fair", "first", "1958", "1961", "date")
    nodes = [view("a", old, 1.0), view("b", new, 2.0)]
    minutes = "Minutes of 12 March 1958 approve a fair to be held in May, the first Orley Fair."
    register = "Registered office: Unit 4, Harbour Road Industrial Estate, Dorrington."

    assert integrate_offline(nodes, {}, "conflict", minutes, [conflict]).current == "a"
    place = Contradiction(
        "Its head office is in Dorrington.",
        "Staff work at the head office in Asherby.",
        "",
        "",
        "Dorrington",
        "Asherby",
        "name",
    )
    offices = [view("a", place.old_sentence, 1.0), view("b", place.new_sentence, 2.0)]
    assert integrate_offline(offices, {}, "conflict", register, [place]).current == "a"
    roof = Contradiction(
        "The roof of Orley Chapel is of Welsh slate.",
        "Orley Chapel was re-roofed in copper sheet.",
        "",
        "",
        "Welsh slate",
        "copper sheet",
        "word",
    )
    roofs = [view("a", roof.old_sentence, 1.0), view("b", roof.new_sentence, 2.0)]
    survey = "Orley Chapel: nave roof covered in slate on oak battens. Condition: good."
    assert integrate_offline(roofs, {}, "conflict", survey, [roof]).current == "a"
