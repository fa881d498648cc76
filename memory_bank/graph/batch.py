"""The Query Graph at batch scale: what an ingest's commit does to the graph.

New memories become memory nodes (id = chunk id). Each is analysed against its candidates --
the hybrid top-k of the graph plus their one-hop neighbours, each pair once (the later node
judges the earlier) -- in independent tasks (`analyze_tasks`, fanned out by a `TaskMap`: Ray
tasks under Ray), without the graph lock. The verdicts are then applied in order by the graph's
one writer, those about a node that left the graph or was retired meanwhile (by a session)
dropped:
- conflict: a `Conflict` record; against a memory of an earlier commit it is validated by
  recency at once (the later source holds; the earlier claim stays, superseded, with both
  timestamps); between documents of one commit, which have no order, it stays open;
- merge: a "merge" edge (memory nodes stand for stored files, so near-duplicates are linked,
  not folded into one node);
- related: an edge, and both nodes' keywords updated (`refresh_contexts`).
Pairs are judged in two phases each: related only when neither conflict nor merge.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from memory_bank.graph.analysis import NodeView, Relationship, analyze_offline, two_phase
from memory_bank.graph.graph import QueryGraph, compose_embedding, query_terms
from memory_bank.graph.model import Conflict, GraphNode
from memory_bank.tasks import TaskMap, run_serially

TASKS_PER_CALL = 64  # analysis tasks per fanned-out call


@dataclass
class MemoryInput:
    """A memory being committed, as the graph needs it."""

    chunk_id: str
    summary: str
    context: str
    keywords: list[str]
    vector: np.ndarray
    source: str
    title: str | None
    text: str
    # text -> vector; a huge ingest's are read when first looked into
    sentence_vectors: Mapping[str, np.ndarray] = field(default_factory=dict)
    timestamp: float = 0.0


@dataclass
class GraphCommit:
    """What a store commit changes in the graph."""

    added: list[MemoryInput]
    removed: list[str]  # chunk ids leaving the store
    chunk_ids_after: set[str]  # every chunk id the store holds after the commit


@dataclass
class AnalyzeTask:
    new: NodeView
    candidates: list[NodeView]
    # The views no later task of the step reads: what reading them cached is dropped after
    # this task (a huge commit reads thousands of views, each in a few tasks).
    last_read: frozenset[str] = frozenset()


@dataclass
class BatchOutcome:
    nodes_added: int = 0
    nodes_removed: int = 0
    pairs: int = 0
    related: int = 0
    merges: int = 0
    conflicts: list[str] = field(default_factory=list)  # conflict ids


@dataclass
class SentenceTable:
    """The sentence vectors of every node a step's tasks read. It is one argument shared by
    all the step's calls (a parallel map ships it once, the serial map does not copy it), so
    that each call carries the nodes' texts only.

    A huge file's commit reads hundreds of MB of vectors, often from its journal, so each
    node's rows are copied once into a block of their own, never stacked all together, in
    half precision (a sentence cosine is only compared with one threshold, and half precision
    moves it by about a thousandth), and a node's block is dropped once no task left in this
    process reads it."""

    blocks: dict[str, tuple[dict[str, int], np.ndarray]]  # node id -> (text -> row, rows)

    @classmethod
    def of(cls, views: Iterable[NodeView]) -> SentenceTable:
        blocks: dict[str, tuple[dict[str, int], np.ndarray]] = {}
        for view in views:
            if view.id in blocks:
                continue
            texts = list(view.sentence_vectors)
            vectors = [view.sentence_vectors[text] for text in texts]
            block = np.stack(vectors).astype(np.float16) if vectors else np.zeros((0, 0))
            blocks[view.id] = ({text: row for row, text in enumerate(texts)}, block)
        return cls(blocks)

    def vectors_of(self, node_id: str) -> dict[str, np.ndarray]:
        if node_id not in self.blocks:
            return {}
        rows, block = self.blocks[node_id]
        return {text: block[row] for text, row in rows.items()}

    def release(self, node_id: str) -> None:
        self.blocks.pop(node_id, None)


def analyze_tasks(
    tasks: Sequence[AnalyzeTask],
    sentences: SentenceTable | None = None,
) -> list[list[Relationship]]:
    """Each task's relationships, pair by pair in two phases (a fanned-out unit of work); the
    views' sentence vectors are read from `sentences` when given."""
    if sentences is not None:
        for view in _views(tasks):
            view.sentence_vectors = sentences.vectors_of(view.id)
    results = []
    for task in tasks:
        found = []
        for candidate in task.candidates:
            found.extend(two_phase(analyze_offline, task.new, [candidate]))
        results.append(found)
        for view in _read(task):
            if view.id in task.last_read:
                view.release()
                if sentences is not None:
                    sentences.release(view.id)
    return results


def candidate_tasks(
    graph: QueryGraph,
    new_nodes: Sequence[GraphNode],
    view: Callable[[str], NodeView],
    k: int,
    prefetch: Callable[[list[str]], object] | None = None,
) -> list[AnalyzeTask]:
    """Add `new_nodes` to the graph, oldest first, each after looking up its candidates (the
    hybrid top-k and their neighbours among the nodes already there): each pair once, the
    later node judging the earlier.

    Each node's view is made once (`prefetch` first gets every node's stored text and
    sentences in one read): a node is a candidate of many, and the tasks of one fanned-out
    call then share one copy of it."""
    pairs: list[tuple[str, list[str]]] = []
    for node in sorted(new_nodes, key=lambda n: (n.timestamp, n.id)):
        found = graph.retrieve(node.embedding, query_terms(node), k)
        graph.add_node(node)
        if found:
            pairs.append((node.id, [other.id for other in found]))
    needed = list(dict.fromkeys(i for new, others in pairs for i in (new, *others)))
    if prefetch is not None and needed:
        prefetch(needed)
    views = {node_id: view(node_id) for node_id in needed}
    return [AnalyzeTask(views[new], [views[i] for i in others]) for new, others in pairs]


AnalyzeCall = Callable[[Sequence[AnalyzeTask], SentenceTable], list[list[Relationship]]]


def run_tasks(
    tasks: Sequence[AnalyzeTask],
    map_calls: TaskMap = run_serially,
    analyze_call: AnalyzeCall = analyze_tasks,
) -> list[list[Relationship]]:
    """Fan the tasks out in groups of TASKS_PER_CALL, each call with the views' texts and
    the one `SentenceTable` of their vectors; results in task order."""
    views = {view.id: view for view in _views(tasks)}
    table = SentenceTable.of(views.values())
    bare = {node_id: replace(view, sentence_vectors={}) for node_id, view in views.items()}
    last_task = {view.id: index for index, task in enumerate(tasks) for view in _read(task)}
    shipped = [
        AnalyzeTask(
            bare[task.new.id],
            [bare[view.id] for view in task.candidates],
            frozenset(view.id for view in _read(task) if last_task[view.id] == index),
        )
        for index, task in enumerate(tasks)
    ]
    groups = [shipped[i : i + TASKS_PER_CALL] for i in range(0, len(shipped), TASKS_PER_CALL)]
    calls = map_calls(analyze_call, [(group, table) for group in groups])
    return [result for group_results in calls for result in group_results]


def _views(tasks: Sequence[AnalyzeTask]) -> list[NodeView]:
    """Every view the tasks hold, each once (a node is a candidate of many)."""
    return list({id(v): v for task in tasks for v in _read(task)}.values())


def _read(task: AnalyzeTask) -> tuple[NodeView, ...]:
    return (task.new, *task.candidates)


def apply_verdicts(
    graph: QueryGraph,
    tasks: Sequence[AnalyzeTask],
    results: Sequence[list[Relationship]],
    encode: Callable[[list[str]], np.ndarray] | None,
    now: float,
    outcome: BatchOutcome,
    new_ids: Sequence[str] | None = None,
) -> None:
    """Apply analysed relationships to the graph (see the module docstring)."""
    keyword_updates: dict[str, list[str]] = {}
    batch_ids = set(new_ids) if new_ids is not None else {task.new.id for task in tasks}
    for task, relationships in zip(tasks, results, strict=True):
        new_id = task.new.id
        by_id = {view.id: view for view in task.candidates}
        for relationship in relationships:
            other = relationship.existing_node_id
            if not (_current(graph, new_id) and _current(graph, other)):
                continue  # gone or retired while the analysis ran (it runs without the lock)
            outcome.pairs += 1
            if relationship.relationship == "conflict":
                conflict = conflict_record(task.new, by_id[other], relationship, now)
                if graph.conflict_between(conflict.older, conflict.newer) is None:
                    graph.add_conflict(conflict)
                    # Only a later commit is a later source: documents committed together
                    # have no order, so their conflict stays open (for a validation).
                    if conflict.older not in batch_ids:
                        graph.resolve_conflict(
                            conflict.id, conflict.newer, now, "the later source holds"
                        )
                    outcome.conflicts.append(conflict.id)
            elif relationship.relationship == "merge":
                if graph.add_edge(new_id, other, "merge"):
                    outcome.merges += 1
            elif relationship.relationship == "related":
                if graph.add_edge(new_id, other, "related"):
                    outcome.related += 1
                if relationship.keywords_update_new:
                    keyword_updates[new_id] = relationship.keywords_update_new
                if relationship.keywords_update_existing:
                    keyword_updates[other] = relationship.keywords_update_existing
    refresh_contexts(
        graph,
        {i: (graph.nodes[i].context, k) for i, k in keyword_updates.items() if i in graph.nodes},
        encode,
        now,
    )


def _current(graph: QueryGraph, node_id: str) -> bool:
    node = graph.nodes.get(node_id)
    return node is not None and node.is_current


def refresh_contexts(
    graph: QueryGraph,
    updates: dict[str, tuple[str, list[str]]],
    encode: Callable[[list[str]], np.ndarray] | None,
    now: float,
) -> None:
    """New contexts and keywords for several nodes; the vectors of those whose context
    changed are recomputed in one encode.

    Keywords alone do not move a node's vector: they are terms for the lexical half of
    retrieval, and those a related node lends are words the node's own text already holds,
    so its vector already reads them. Re-embedding each neighbour for them would cost a model
    pass per neighbour, making a small add's cost grow with its neighbourhood."""
    recontextualized = {
        node_id: (context, keywords)
        for node_id, (context, keywords) in updates.items()
        if graph.nodes[node_id].context != context
    }
    texts = [context_text(context, keywords) for context, keywords in recontextualized.values()]
    vectors = encode(texts) if encode is not None and texts else [None] * len(texts)
    vector_of = dict(zip(recontextualized, vectors, strict=True))
    for node_id, (context, keywords) in updates.items():
        graph.update_context(node_id, context, keywords, vector_of.get(node_id), now)


def context_text(context: str, keywords: Sequence[str]) -> str:
    return f"{context}. {', '.join(keywords)}".strip(". ")


def conflict_record(
    new: NodeView,
    other: NodeView,
    relationship: Relationship,
    now: float,
    session_id: str | None = None,
) -> Conflict:
    older, newer = (
        (other, new) if (other.timestamp, other.id) <= (new.timestamp, new.id) else (new, other)
    )
    first = relationship.contradictions[0] if relationship.contradictions else None
    return Conflict(
        id="c-" + uuid.uuid4().hex[:16],
        older=older.id,
        newer=newer.id,
        description=relationship.conflict_description or relationship.reasoning,
        subject=first.subject if first else "",
        attribute=first.attribute if first else "",
        old_value=first.old_value if first else "",
        new_value=first.new_value if first else "",
        old_sentence=first.old_sentence if first else "",
        new_sentence=first.new_sentence if first else "",
        detected_at=now,
        session_id=session_id,
    )


def memory_node(
    node_id: str,
    summary: str,
    context: str,
    keywords: Sequence[str],
    vector: np.ndarray,
    timestamp: float,
    source: str,
) -> GraphNode:
    """The node of a stored memory: its vector is the memory's own until its context changes."""
    vector = np.asarray(vector, dtype=np.float32)
    return GraphNode(
        id=node_id,
        kind="memory",
        summary=summary,
        context=context,
        keywords=list(keywords),
        timestamp=timestamp,
        embedding=compose_embedding(vector, None),
        summary_vector=vector,
        source=source,
    )
