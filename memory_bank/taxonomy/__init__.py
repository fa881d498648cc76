"""Offline taxonomy planning: memories + embeddings -> a `DirectoryNode` tree.

`plan_taxonomy` plans in steps that parallelize: `split_top_level` (Ward on document-pulled
vectors, at most `taxonomy.coarse_sample` of them; see `documents` and `coarse`), then `plan_group` /
`plan_subtree` per group (one task each) and `assemble_tree` to graft the groups under the
root.

Directory names come from one pass of `naming` per set of siblings (cohesive key phrases,
distinct among the siblings); see `clustering` for the tree shape and capacity.
`validate_taxonomy` checks a plan (seed 000 §14) and `flat_fallback` gives a valid plan when one
fails.
"""

from memory_bank.taxonomy.coarse import coarse_group_count, split_top_level
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.planner import (
    GroupPlan,
    assemble_tree,
    plan_group,
    plan_subtree,
    plan_taxonomy,
)
from memory_bank.taxonomy.validate import flat_fallback, validate_taxonomy
from memory_bank.text.lexicon import is_valid_name

__all__ = [
    "GroupPlan",
    "TaxonomyItem",
    "assemble_tree",
    "coarse_group_count",
    "flat_fallback",
    "is_valid_name",
    "plan_group",
    "plan_subtree",
    "plan_taxonomy",
    "split_top_level",
    "validate_taxonomy",
]
