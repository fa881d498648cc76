"""What a commit adds to the parts, tree and READMEs to make the new version: its meta, its logs
(re-plans, LLM requests), and which files of the live version it holds unchanged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memory_bank.config import AppConfig
from memory_bank.ingest.commit_change import Change
from memory_bank.ingest.commit_tree import TreePlan
from memory_bank.ingest.work import memory_recipe
from memory_bank.llm.ledger import LedgerSummary
from memory_bank.llm.seam import LLM
from memory_bank.schemas import ReorganizeOperation
from memory_bank.store.files import readme_relative_path
from memory_bank.store.snapshot import StoreSnapshot
from memory_bank.store.writer import meta_extra_from_config
from memory_bank.taxonomy.readme import README_FORMAT

REORGANIZATIONS_FILE = "reorganizations.json"
LEDGER_FILE = "llm_ledger.json"  # every LLM request made for this store, summed per role
KEPT_REORGANIZATIONS = 50


def version_meta(change: Change, plan: TreePlan, config: AppConfig) -> dict[str, Any]:
    """The new version's `.gam_meta.json` beyond what writing computes."""
    recipe = memory_recipe(config)
    if change.before is not None and not change.added.memories:  # a removal keeps the recipe
        recipe = change.before.meta.get("memory_recipe", recipe)
    return {
        **meta_extra_from_config(config),
        "memory_recipe": recipe,
        "readme_format": README_FORMAT,
        "taxonomy": plan.taxonomy,
    }


def bank_logs(
    live: StoreSnapshot | None,
    reorganization: ReorganizeOperation | None,
    ledger: dict[str, Any],
) -> dict[str, Any]:
    """The `.bank/` logs of the new version: the live one's re-plans with this one's (the last
    KEPT_REORGANIZATIONS), and the LLM ledger; an empty log is not written."""
    reorganizations = list(live.bank_json.get(REORGANIZATIONS_FILE, [])) if live else []
    if reorganization is not None:
        reorganizations.append(reorganization.model_dump(mode="json"))
    logs = {
        REORGANIZATIONS_FILE: reorganizations[-KEPT_REORGANIZATIONS:],
        LEDGER_FILE: ledger,
    }
    return {name: value for name, value in logs.items() if value}


def ledger_after(
    live: StoreSnapshot | None, work_usage: dict[str, Any], llm: LLM | None
) -> dict[str, Any]:
    """The store's LLM ledger with this ingest's requests added (`work_usage`: the work before
    the commit; then the commit's own calls so far, not yet taken from `llm`'s ledger). Usage
    that made no request (cache hits only) leaves it as it was, so an unchanged rebuild stays
    a no-op."""
    previous = LedgerSummary.model_validate(live.bank_json.get(LEDGER_FILE, {}) if live else {})
    added = LedgerSummary.model_validate(work_usage or {})
    if llm is not None:
        added.merge(llm.ledger.peek())
    if not added.calls and not any(u.fallbacks for u in added.roles.values()):
        return previous.model_dump(mode="json") if previous.roles else {}
    previous.merge(added)
    return previous.model_dump(mode="json")


def unchanged_files(
    store: Path, before: StoreSnapshot | None, after: StoreSnapshot, stale: list[str]
) -> dict[str, Path]:
    """Files of the live version (`before`, read under the store lock) that `after` holds
    unchanged: a memory equal to the one stored under the same index at the same path, a README
    not composed anew whose text is the same. Most of a store, on a small add."""
    if before is None:
        return {}
    stored = {memory.index: memory for memory in before.parts.memories}
    stored_paths = before.chunk_paths or {}
    after_paths = after.chunk_paths or {}
    unchanged: dict[str, Path] = {}
    for memory in after.parts.memories:
        path = after_paths[memory.index]
        previous = stored.get(memory.index)
        if (
            previous is not None
            and stored_paths.get(memory.index) == path
            and (previous is memory or previous == memory)
        ):
            unchanged[path] = store / path
    stale_paths = set(stale)
    for directory, text in after.readmes.items():
        if directory not in stale_paths and before.readmes.get(directory) == text:
            relative = readme_relative_path(directory)
            unchanged[relative] = store / relative
    return unchanged
