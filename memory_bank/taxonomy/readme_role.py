"""The `readme` role: a directory's README (seed 000 §3.2).

Offline: the README is composed from what its subtree holds (`readme.compose_readme`: the
extractive summary of the subtree, its key terms, the listing of subdirectories and files).
With a model: `llm.readme_batch` directories per request, the requests overlapped; the model
writes each opening paragraph, the listing stays generated (every file and subdirectory is
always listed). A batch that fails keeps the offline text, counted as a fallback.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel

from memory_bank.errors import LLMError
from memory_bank.llm.seam import LLM, prompt
from memory_bank.taxonomy.planner import memory_count
from memory_bank.taxonomy.readme import compose_readme
from memory_bank.taxonomy.roles import ReadmeRequest

ROLE = "readme"


class _Summary(BaseModel):
    path: str
    summary: str


class _ReadmeReply(BaseModel):
    summaries: list[_Summary]


def readmes(requests: Sequence[ReadmeRequest], llm: LLM | None) -> list[str]:
    """The README text of each request's directory, in request order."""
    if llm is None:
        return [_composed(request) for request in requests]
    size = llm.config.readme_batch
    batches = [list(requests[start : start + size]) for start in range(0, len(requests), size)]
    done = llm.overlapped(lambda batch: _written(batch, llm), batches)
    return [text for batch in done for text in batch]


def _composed(request: ReadmeRequest) -> str:
    return compose_readme(request.node, request.child_dirs, request.files, subtree=request.subtree)


def _written(requests: list[ReadmeRequest], llm: LLM) -> list[str]:
    generated = [_composed(request) for request in requests]
    payload = {
        "directories": [
            {
                "path": request.node.path,
                "description": request.node.description,
                "subdirectories": [
                    {
                        "name": child.name,
                        "description": child.description,
                        "memories": memory_count(child),
                    }
                    for child in request.child_dirs
                ],
                "files": [
                    {"name": entry.name, "title": entry.title, "summary": entry.tldr}
                    for entry in request.files
                ],
            }
            for request in requests
        ]
    }
    paths = [request.node.path for request in requests]

    def check(reply: _ReadmeReply) -> list[str]:
        got = [summary.path for summary in reply.summaries]
        if sorted(got) == sorted(paths):
            return []
        return [f"expected one summary per path {paths}, got {got}"]

    try:
        reply = llm.complete(ROLE, prompt(__package__, ROLE), payload, _ReadmeReply, check=check)
    except LLMError:
        llm.ledger.count(ROLE, "fallbacks")
        return generated
    summaries = {summary.path: " ".join(summary.summary.split()) for summary in reply.summaries}
    texts = []
    for path, text in zip(paths, generated, strict=True):
        lines = text.split("\n")
        summary = summaries.get(path)
        # Keep the title and the generated listing; the model's paragraph replaces the opening.
        texts.append("\n".join([lines[0], "", summary, *lines[3:]]) if summary else text)
    return texts
