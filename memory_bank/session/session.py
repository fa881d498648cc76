"""`Session`: the adapter an outside agent uses (seed 001 §3.3.1): the Insight Doc, prompt
enhancement, context interception and deep retrieval, over a store's session service.

    bank = MemoryBank("./mem")                # no store there yet: an empty one is made
    session = bank.session("Who runs Acme?")
    prompt = session.enhance_prompt()         # <task>...</task> <memory>...</memory>
    result = session.intercept(tool_output)   # memory made, conflicts found, next task planned
    session.deep_retrieval(node_id)           # the raw contexts behind a memory
    session.close()                           # the graph stays in the store

The keeper may be the in-process `SessionService` or, on Ray, a handle to the store's graph
actor wrapped by `actors.graph.RemoteKeeper`: both offer the same methods.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel

from memory_bank.graph.model import Attachment
from memory_bank.schemas import SearchHit
from memory_bank.session.models import (
    EntryView,
    InsightDoc,
    InterceptResult,
    NodeDetail,
    SessionExport,
    TaskType,
)
from memory_bank.session.planning import should_terminate
from memory_bank.session.react import ReactAgent, Tool, visit_tool


class Keeper(Protocol):
    """What a session needs of the graph's holder (`SessionService` or its Ray actor)."""

    def open_session(self, task_goal: str) -> InsightDoc: ...

    def intercept(
        self,
        session_id: str,
        context: str,
        task_type: TaskType | None = None,
        attachments: Sequence[Attachment] = (),
        metadata: dict[str, Any] | None = None,
    ) -> InterceptResult: ...

    def insight_doc(self, session_id: str) -> InsightDoc: ...

    def enhance_prompt(self, session_id: str) -> str: ...

    def deep_retrieval(self, node_id: str) -> list[EntryView]: ...

    def node(self, node_id: str) -> NodeDetail: ...

    def export(self, session_id: str) -> SessionExport: ...

    def close(self, session_id: str) -> SessionExport: ...


class Session:
    def __init__(self, keeper: Keeper, session_id: str) -> None:
        self.keeper = keeper
        self.session_id = session_id

    @classmethod
    def open(cls, keeper: Keeper, task_goal: str) -> Session:
        return cls(keeper, keeper.open_session(task_goal).doc_id)

    @property
    def insight_doc(self) -> InsightDoc:
        return self.keeper.insight_doc(self.session_id)

    @property
    def done(self) -> bool:
        """The termination rule (seed 002 §12)."""
        return should_terminate(self.insight_doc)

    def intercept(
        self,
        context_text: str,
        task_type: TaskType | None = None,
        attachments: Sequence[tuple[str, str]] = (),
        metadata: dict[str, Any] | None = None,
    ) -> InterceptResult:
        """Turn a finished task's context into memory (or settle the pending conflicts, for a
        cross-validation) and plan the next task. `attachments`: (type, path) pairs."""
        files = tuple(
            Attachment(id=f"a{number}", type=kind, path=path)
            for number, (kind, path) in enumerate(attachments, start=1)
        )
        return self.keeper.intercept(self.session_id, context_text, task_type, files, metadata)

    def enhance_prompt(self) -> str:
        return self.keeper.enhance_prompt(self.session_id)

    def deep_retrieval(self, node_id: str) -> list[EntryView]:
        return self.keeper.deep_retrieval(node_id)

    def memory(self, node_id: str) -> NodeDetail:
        return self.keeper.node(node_id)

    def export(self) -> SessionExport:
        return self.keeper.export(self.session_id)

    def close(self) -> SessionExport:
        return self.keeper.close(self.session_id)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class SessionRun(BaseModel):
    """What `Session.run` ends with."""

    answer: str
    insight_doc: InsightDoc
    rounds: int
    termination: str  # "done" (the termination rule), or the agent's last termination


def session_tools(
    search: Callable[[str], list[SearchHit]],
    keeper: Keeper,
    roots: Sequence[Path],
) -> dict[str, Tool]:
    """The ReAct tools of a session: `search` (the store), `visit` (local files under
    `roots`), `deep_retrieval` (a memory's raw contexts)."""

    def search_tool(arguments: dict[str, Any]) -> str:
        query = arguments.get("query")
        if isinstance(query, list):
            query = " ".join(str(q) for q in query)
        hits = search(str(query or ""))
        if not hits:
            return "No results."
        return "\n\n".join(
            f"[{hit.chunk_path or hit.chunk_id}] {hit.text.strip()[:800]}" for hit in hits
        )

    def deep_retrieval_tool(arguments: dict[str, Any]) -> str:
        entries = keeper.deep_retrieval(str(arguments.get("node_id", "")))
        return json.dumps([entry.model_dump() for entry in entries], ensure_ascii=False)

    return {
        "search": search_tool,
        "visit": visit_tool(roots),
        "deep_retrieval": deep_retrieval_tool,
    }


def run_session(session: Session, agent: ReactAgent, max_rounds: int = 8) -> SessionRun:
    """Seed 002 §11: enhance the prompt, let the agent work, intercept what its tools returned,
    plan; until nothing is pending and every task succeeded, or `max_rounds`."""
    answer, termination = "", "max rounds"
    for round_number in range(1, max_rounds + 1):
        doc = session.insight_doc
        result = agent.run(session.enhance_prompt(), question=doc.task_goal)
        answer = result.prediction
        context = "\n\n".join(result.tool_responses) or result.prediction
        intercepted = session.intercept(context, metadata={"round": round_number})
        termination = result.termination
        if intercepted.done:
            return SessionRun(
                answer=answer,
                insight_doc=intercepted.insight_doc,
                rounds=round_number,
                termination="done",
            )
    return SessionRun(
        answer=answer, insight_doc=session.insight_doc, rounds=max_rounds, termination=termination
    )
