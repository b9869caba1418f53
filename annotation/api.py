"""The engine's public Python API for plug-ins: every service, selector and rule a workflow app
may call. Plug-ins (ratings, review, graphs, narratives, crowd, studio) import the engine only
through this module and the engine's other public modules (annotation/README.md, "Public
modules"; CONTRIBUTING.md, "Apps and boundaries"); an import-linter contract in pyproject.toml
refuses their imports of the internals (``annotation.services``, ``annotation.sql``,
``annotation.selectors``, ``annotation.resolution``, ``annotation.routing``,
``annotation.phases``, ``annotation.versions``, ``annotation.tasks``, ``annotation.inputs``,
``annotation.management``).

A name here is a promise: its signature and contract (the docstring of the function it names)
change only together with every plug-in that calls it. What a plug-in needs and does not find
here is added here, for every plug-in, rather than imported from an internal module.

Write services (each owns its transaction; CONTRIBUTING.md):

* projects, people, stages, items: ``project_create``, ``membership_add``,
  ``membership_remove``, ``stage_create``, ``stage_update``, ``stage_settings_clean`` (with
  ``STAGE_SETTINGS``, the settings it checks), ``stage_move``, ``stage_remove``, ``stage_slots_add``,
  ``items_create``, ``item_stages_open``, ``item_stages_target_set``
  (annotation/services/stages.py);
* work: ``assignment_next`` (with ``reached_by``: a stage as the next-item search takes it,
  asked once by a caller that leases many times), ``annotation_submit``, ``assignment_skip``, ``item_stage_resolve``,
  ``assignments_release``, ``annotations_withdraw``;
* what plug-ins used to write themselves: ``historic_annotations_import`` (answers given
  elsewhere, with ``HistoricAnnotation`` and ``HistoricResolution``; annotation/services/
  historic.py states its invariants), ``items_discard``, ``items_author_link``,
  ``items_accept`` (items whose work is final, e.g. rated only historically; annotation/
  services/items.py), ``project_settings_update`` (keys merged into ``Project.settings``
  under the project's row lock), ``project_publication_update`` (licence and citation) and
  ``project_archive_set`` (archive / restore; annotation/services/projects.py), ``items_act`` (an admin's
  item actions — reopen, resolve by hand, release a lease, send back, discard — one item or
  many, each recorded as an ``ItemEvent``; returns an ``ItemActionReport``; ``ITEM_ACTIONS``
  names them; annotation/services/item_actions.py); with these no plug-in
  writes an engine row itself (tests/annotation/test_api.py reads every plug-in module);
* side effects and bulk loads: ``enqueue_on_commit``, ``planner_statistics_refresh``.

Reads: ``item_stages_stranded`` and ``stages_stranded`` (items that need more people than can
still take them, with ``StrandedItem`` / ``StrandedStage``; annotation/stranding.py),
``item_display``, ``item_payload_for_annotator``, ``annotations_visible``,
``sees_annotators``, ``votes_final`` (and ``item_stages_with_final_votes``, the same rule as a
queryset filter), ``GOLD_FIELD``; ``phase_of`` (the phase an item stage is
in); ``default_route`` (a stage's route for an outcome when it names none).

Rules and types: ``Decision`` and ``TIE_POLICIES`` (resolution), ``clean_text`` and
``choices_keeping`` (input checks), ``EVERYONE`` (annotation/slots.py: the overlap that means
every annotator), ``quoted`` (a model's columns quoted for a plug-in's hand-written SQL
fragment, e.g. an annotator gate's condition; annotation/sql.py).

Silent gold (annotation/gold.py states the stored shape): ``gold_answers`` (each annotator's
answers to a stage's gold items with ``GoldAnswer.correct``, by ``gold_matches``),
``gold_items``, ``gold_candidates`` (unanimous decisions a researcher may promote) and
``gold_promote`` (annotation/services/gold.py), ``GOLD_SOURCE_FIELD``.
"""

from __future__ import annotations

from annotation.gold import (
    GOLD_SOURCE_FIELD,
    GoldAnswer,
    gold_answers,
    gold_candidates,
    gold_items,
    gold_matches,
)
from annotation.inputs import choices_keeping, clean_text
from annotation.phases import phase_of
from annotation.resolution import TIE_POLICIES, Decision
from annotation.routing import default_route
from annotation.selectors import (
    GOLD_FIELD,
    annotations_visible,
    item_display,
    item_payload_for_annotator,
    sees_annotators,
    votes_final,
)
from annotation.services import (
    STAGE_SETTINGS,
    annotation_submit,
    annotations_withdraw,
    assignment_next,
    assignments_release,
    enqueue_on_commit,
    item_stage_resolve,
    item_stages_open,
    items_create,
    membership_add,
    membership_remove,
    planner_statistics_refresh,
    project_create,
    stage_create,
    stage_settings_clean,
    stage_update,
)
from annotation.services.gold import gold_promote
from annotation.services.historic import (
    HistoricAnnotation,
    HistoricImportResult,
    HistoricResolution,
    historic_annotations_import,
)
from annotation.services.item_actions import ACTIONS as ITEM_ACTIONS
from annotation.services.item_actions import ItemActionReport, items_act
from annotation.services.items import items_accept, items_author_link, items_discard
from annotation.services.next_item import reached_by
from annotation.services.projects import (
    project_archive_set,
    project_publication_update,
    project_settings_update,
)
from annotation.services.skip import assignment_skip
from annotation.services.slots_add import stage_slots_add
from annotation.services.stages import item_stages_target_set, stage_move, stage_remove
from annotation.slots import EVERYONE
from annotation.sql import quoted
from annotation.stranding import (
    StrandedItem,
    StrandedStage,
    item_stages_stranded,
    stages_stranded,
)
from annotation.versions import item_stages_with_final_votes

__all__ = [
    "EVERYONE",
    "GOLD_FIELD",
    "STAGE_SETTINGS",
    "StrandedItem",
    "StrandedStage",
    "TIE_POLICIES",
    "Decision",
    "HistoricAnnotation",
    "HistoricImportResult",
    "HistoricResolution",
    "ITEM_ACTIONS",
    "ItemActionReport",
    "annotation_submit",
    "annotations_visible",
    "annotations_withdraw",
    "assignment_next",
    "assignment_skip",
    "assignments_release",
    "choices_keeping",
    "clean_text",
    "default_route",
    "enqueue_on_commit",
    "historic_annotations_import",
    "item_display",
    "item_payload_for_annotator",
    "item_stage_resolve",
    "item_stages_open",
    "item_stages_stranded",
    "item_stages_target_set",
    "item_stages_with_final_votes",
    "items_accept",
    "items_act",
    "items_author_link",
    "items_create",
    "items_discard",
    "membership_add",
    "membership_remove",
    "phase_of",
    "planner_statistics_refresh",
    "project_archive_set",
    "project_create",
    "project_publication_update",
    "project_settings_update",
    "quoted",
    "reached_by",
    "sees_annotators",
    "stage_create",
    "stage_move",
    "stage_remove",
    "stage_settings_clean",
    "stage_slots_add",
    "stage_update",
    "stages_stranded",
    "votes_final",
    # Silent gold (annotation/gold.py): the stored shape, the answers, promotion.
    "GOLD_SOURCE_FIELD",
    "GoldAnswer",
    "gold_answers",
    "gold_candidates",
    "gold_items",
    "gold_matches",
    "gold_promote",
]

# A wave of leases and submits in one transaction, for callers whose answers are ready before
# they lease (machine raters; annotation/services/batch.py states the contract).
from annotation.services.batch import Wave, WaveAnswer, annotations_submit_wave  # noqa: E402

__all__ += ["Wave", "WaveAnswer", "annotations_submit_wave"]

# Live stopping: an open item stage stopped early under its row lock, its target closed at the
# answers stored plus the leases held (annotation/services/stages.py states the contract).
from annotation.services.stages import ItemStageStop, item_stage_stop  # noqa: E402

__all__ += ["ItemStageStop", "item_stage_stop"]

# A wave of answers ready before the lease, leased and submitted in one statement (machine
# raters; annotation/services/batch.py states the contract).
from annotation.access import StageForAnnotator  # noqa: E402
from annotation.services.batch import (  # noqa: E402
    ReadyAnswer,
    annotations_submit_ready,
    ready_path_open,
)

__all__ += ["ReadyAnswer", "StageForAnnotator", "annotations_submit_ready", "ready_path_open"]

# The data manager's text search: complete from the moment items commit, indexed after
# (annotation/search.py states the contract).
from annotation.search import items_containing, items_waiting_count  # noqa: E402

__all__ += ["items_containing", "items_waiting_count"]

# Historic answers in bulk on PostgreSQL: the historic import's contract kept by set-based
# statements over a staging table (annotation/services/historic_bulk.py states the contract).
from annotation.services.historic_bulk import (  # noqa: E402
    bulk_work_mem,
    historic_values_import,
    staging_create,
)

__all__ += ["bulk_work_mem", "historic_values_import", "staging_create"]
