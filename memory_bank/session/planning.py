"""The Insight Doc's offline planning and the prompt enhancement (seed 002 §6.2, §6.3, §12).

Planning is incremental: at most one pending task. The task just carried out is recorded as
completed (a cross-validation or a normal task, successful when it produced memory); a conflict
puts a cross-validation task first; otherwise the task is done when the memory covers the
goal's content terms (GOAL_COVERAGE), and the next task asks for what is still missing. A task
planned MAX_ATTEMPTS times without progress is given up (recorded as failed), so a loop ends.
The session terminates when nothing is pending and every completed task succeeded.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory_bank.session.models import (
    CompletedTask,
    ConflictNotice,
    InsightDoc,
    NodeInfo,
    PlanRequest,
    PlanResult,
    TaskType,
)

GOAL_COVERAGE = 0.75
MAX_ATTEMPTS = 2
CROSS_VALIDATE = "Cross-validate"
FIRST_TASK = "Take in the given context"
MISSING_PREFIX = "Find information on:"


def task_type_of(task: str | None) -> TaskType:
    """Seed 002 §4.2: a pending task that asks for validation is a cross-validation."""
    if task and (task.startswith(CROSS_VALIDATE) or "cross validation" in task.lower()):
        return "cross_validate"
    return "normal"


def plan_offline(request: PlanRequest) -> PlanResult:
    doc = request.insight_doc
    completed = list(doc.completed_tasks)
    if request.intercepted:
        done = doc.pending_tasks[0] if doc.pending_tasks else FIRST_TASK
        succeeded = bool(request.new_nodes) or request.resolved_conflict
        completed.append(
            CompletedTask(
                type=task_type_of(done),
                description=done,
                status="success" if succeeded else "failure",
                context=_knowledge(request.new_nodes, request.resolved_conflict),
            )
        )
    if request.conflict is not None:
        return PlanResult(
            task_goal=doc.task_goal,
            completed_tasks=completed,
            pending_tasks=[cross_validation_task(request.conflict)],
        )
    if request.goal_coverage >= GOAL_COVERAGE or not request.missing_terms:
        return PlanResult(task_goal=doc.task_goal, completed_tasks=completed, pending_tasks=[])
    next_task = f"{MISSING_PREFIX} {', '.join(request.missing_terms[:6])}"
    if sum(1 for task in completed if task.description == next_task) >= MAX_ATTEMPTS:
        return PlanResult(task_goal=doc.task_goal, completed_tasks=completed, pending_tasks=[])
    return PlanResult(task_goal=doc.task_goal, completed_tasks=completed, pending_tasks=[next_task])


def cross_validation_task(conflict: ConflictNotice) -> str:
    ids = ", ".join(conflict.conflicting_node_ids)
    return f"{CROSS_VALIDATE} the conflicting memories {ids}: {conflict.conflict_description}"


def should_terminate(doc: InsightDoc) -> bool:
    """Seed 002 §12: nothing pending and every completed task successful."""
    return not doc.pending_tasks and all(task.status == "success" for task in doc.completed_tasks)


def enhanced_prompt(doc: InsightDoc, memories: Sequence[NodeInfo]) -> str:
    """Seed 002 §6.3: the `<task>` block (goal, completed tasks with their knowledge, the
    pending task) and the `<memory>` block (the memories retrieved for the pending task)."""
    lines = [f"Task goal: {doc.task_goal}", "", "Completed subtasks:"]
    if not doc.completed_tasks:
        lines.append("(none yet)")
    for number, task in enumerate(doc.completed_tasks, start=1):
        lines.append(f"{number}. [{task.type.upper()}] {task.description} - {task.status}")
        if task.context:
            lines.append(f"   Knowledge: {task.context}")
    lines += ["", "Pending task:"]
    lines += [f"{n}. {t}" for n, t in enumerate(doc.pending_tasks, 1)] or [
        "(none: the task is done)"
    ]
    memory_lines: list[str] = []
    for number, node in enumerate(memories, start=1):
        memory_lines += [
            f"Memory {number} (id: {node.id}):",
            f"Topic: {node.context}",
            f"Keywords: {', '.join(node.keywords)}",
            f"Summary: {node.summary}",
            "",
        ]
    memory = "\n".join(memory_lines).strip() if memory_lines else "No relevant memory."
    task = "\n".join(lines)
    return (
        f"<task>\n{task}\n</task>\n\n<memory>\n{memory}\n</memory>\n\n"
        "Call deep_retrieval with a memory id to read the raw context behind it. "
        "Carry out the next step based on the task and the memories above."
    )


def _knowledge(nodes: Sequence[NodeInfo], resolved: bool) -> str:
    """1-2 sentences of what the task brought: the topics of the memories it made."""
    if resolved and nodes:
        return f"Resolved the conflict: {nodes[0].context}"[:300]
    if not nodes:
        return "Nothing new was learned."
    topics = "; ".join(node.context for node in nodes[:3] if node.context)
    return f"Learned about: {topics}"[:300]
