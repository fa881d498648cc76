"""What the research loop's model steps take and give (seed 003, GAM's ResearchAgent; asked by
`model_loop.LLMResearcher`). Three steps, each one call:
- plan: the question and the memory's abstracts -> a search plan (sub-questions, which tools:
  keyword for exact entities, vector for concepts, page_index for pages the abstracts point at);
- integrate: the question, the evidence found and the running result -> a merged factual
  result with its sources (useful facts kept, off-topic ones dropped);
- reflect: the question and the result -> whether it is enough, and if not 1-5 follow-up
  requests, most important first (built from what was found: bridge entities, missing facts).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from memory_bank.llm.seam import RoleModel

SearchTool = Literal["keyword", "vector", "page_index"]


class ResearchPlanRequest(RoleModel):
    question: str
    abstracts: list[str] = Field(default_factory=list)  # "page i" = abstracts[i]


class SearchPlan(RoleModel):
    info_needs: list[str]  # sub-questions
    tools: list[SearchTool]
    keyword_collection: list[str] = Field(default_factory=list)
    vector_queries: list[str] = Field(default_factory=list)
    page_index: list[int] = Field(default_factory=list)


class Hit(RoleModel):
    page_id: str
    snippet: str
    source: SearchTool
    score: float | None = None


class ResearchIntegrateRequest(RoleModel):
    question: str
    evidence: list[Hit]
    result: str = ""  # the running result so far


class ResearchResult(RoleModel):
    content: str
    sources: list[str] = Field(default_factory=list)  # page ids used


class ReflectRequest(RoleModel):
    question: str
    result: ResearchResult


class ReflectionDecision(RoleModel):
    enough: bool
    new_requests: list[str] = Field(default_factory=list, max_length=5)
