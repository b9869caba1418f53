"""Writes of the annotation engine, one module per part of the work; everything public is
re-exported here, so callers write ``from annotation import services`` and
``services.annotation_submit(...)``. Each public service owns its transaction
(CONTRIBUTING.md, "Services own the transaction").

- ``common``: side effects after commit (enqueue_on_commit), planner statistics, a bulk
  write's foreign keys checked once (foreign_keys_checked_once);
- ``setup``: projects, memberships and people, stages (settings checked together), items and
  revisions, the slot-counter repair;
- the annotator's work, one module per step: ``next_item`` (the candidate search and the
  lease: the hot path's first half), ``submit`` (its second half), ``skip``, ``revise``
  (changing one's answer), and ``leases`` (expiry, release and deletion of leases, the locked
  read of an assignment that submit and skip start from);
- ``outcomes``: resolution, phases, routes, adjudication.
"""

from annotation.services.common import (
    enqueue_on_commit,
    foreign_keys_checked_once,
    may_skip_row_checks,
    planner_statistics_refresh,
    row_locked_for_key_share,
)
from annotation.services.leases import assignments_delete, leases_reclaim_expired
from annotation.services.next_item import assignment_next
from annotation.services.outcomes import (
    item_stage_adjudicate,
    item_stage_resolve,
    item_stages_unresolved,
)
from annotation.services.revise import annotation_revise
from annotation.services.setup import (
    STAGE_SETTINGS,
    annotations_withdraw,
    assignments_release,
    item_revise,
    item_stage_counters_repair,
    item_stages_open,
    items_create,
    items_with_open_work,
    membership_add,
    membership_remove,
    membership_set_paused,
    project_create,
    stage_create,
    stage_settings_clean,
    stage_update,
    user_remove,
)
from annotation.services.skip import assignment_skip
from annotation.services.submit import annotation_submit

__all__ = [
    "STAGE_SETTINGS",
    "annotation_revise",
    "annotation_submit",
    "annotations_withdraw",
    "assignments_delete",
    "assignments_release",
    "assignment_next",
    "assignment_skip",
    "enqueue_on_commit",
    "foreign_keys_checked_once",
    "item_revise",
    "item_stage_adjudicate",
    "item_stage_counters_repair",
    "item_stage_resolve",
    "item_stages_open",
    "item_stages_unresolved",
    "items_create",
    "items_with_open_work",
    "leases_reclaim_expired",
    "membership_add",
    "membership_remove",
    "membership_set_paused",
    "may_skip_row_checks",
    "row_locked_for_key_share",
    "planner_statistics_refresh",
    "project_create",
    "stage_create",
    "stage_settings_clean",
    "stage_update",
    "user_remove",
]
