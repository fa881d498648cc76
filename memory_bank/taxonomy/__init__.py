"""Offline taxonomy planning: memories + embeddings -> a `DirectoryNode` tree.

Small corpora (up to `TaxonomyConfig.coarse_threshold` memories) are planned in one call with
`plan_taxonomy`. Larger ones are planned hierarchically, so no step needs every memory at once:
`sample_rows` + `fit_coarse` (k-means on a sample), `assign_coarse` (batchable),
`merge_small_groups`, then `plan_group` / `plan_subtree` per group (one task each) and
`assemble_tree` to graft the groups under the root. `plan_taxonomy` itself runs that path
sequentially above the threshold.

Directory names come from c-TF-IDF terms of each group versus its siblings; see
`clustering` for the tree shape and capacity. `validate_taxonomy` checks a plan (seed 000 §14)
and `flat_fallback` gives a valid plan when one fails.
"""

from memory_bank.taxonomy.coarse import (
    CoarseModel,
    assign_coarse,
    coarse_group_count,
    fit_coarse,
    merge_small_groups,
    sample_rows,
)
from memory_bank.taxonomy.items import TaxonomyItem
from memory_bank.taxonomy.planner import (
    GroupPlan,
    GroupSummary,
    assemble_tree,
    plan_group,
    plan_subtree,
    plan_taxonomy,
)
from memory_bank.taxonomy.validate import flat_fallback, validate_taxonomy
from memory_bank.text.lexicon import is_valid_name

__all__ = [
    "CoarseModel",
    "GroupPlan",
    "GroupSummary",
    "TaxonomyItem",
    "assemble_tree",
    "assign_coarse",
    "coarse_group_count",
    "fit_coarse",
    "flat_fallback",
    "is_valid_name",
    "merge_small_groups",
    "plan_group",
    "plan_subtree",
    "plan_taxonomy",
    "sample_rows",
    "validate_taxonomy",
]
