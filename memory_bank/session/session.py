"""`Session`: the adapter an outside agent uses (seed 001 §3.3.1): the Insight Doc, prompt
enhancement, context interception and deep retrieval, over a store's graph keeper.

    bank = MemoryBank("./mem")                # no store there yet: an empty one is made
    session = bank.session("Who runs Acme?")
    prompt = session.enhance_prompt()         # <task>...</task> <memory>...</memory>
    result = session.intercept(tool_output)   # memory made, conflicts found, next task planned
    session.deep_retrieval(node_id)           # the raw contexts behind a memory
    session.close()                           # the graph stays in the store

The keeper may be the in-process `GraphKeeper` or, on Ray, a handle to the store's graph actor
wrapped by `actors.graph.RemoteKeeper`: both offer the same methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from memory_bank.graph.model import Attachment
from memory_bank.session.models import (
    EntryView,
    InsightDoc,
    InterceptResult,
    NodeDetail,
    SessionExport,
    TaskType,
)
from memory_bank.session.planning import should_terminate


class Keeper(Protocol):
    """What a session needs of the graph's holder (`GraphKeeper` or its Ray actor)."""

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
