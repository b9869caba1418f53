"""Writes of crowd studies (CONTRIBUTING.md, "Services own the transaction").

- ``study_create`` / ``study_update``: a study on a stage; its practice items and attention
  checks are raised to every participant (``EVERYONE`` slots, as ratings does). Participants
  need nothing on the stages: the crowd annotator gate (crowd/gate.py) applies the ``crowd``
  eligibility rule (crowd/eligibility.py) to them in every stage of the project.
- ``participant_enter``: the study URL. A new platform id takes a place (the study row locked,
  so concurrent entries never exceed ``places``) and gets a Django user without a password and
  an annotator membership; a known one resumes, and a resume without proof that it is the same
  person seals the answers given so far (``resume_proven``).
- ``participant_consent``, ``participant_instructions_read``: the steps before the items.
- ``participant_refresh``: after each item (the work gate, crowd/apps.py): time limit,
  attention checks (screen-out), practice done, quota met (completed).
- ``participant_leave``: a participant who returned, timed out or was rejected: leases
  released, annotations kept or withdrawn by the study's setting.
- ``participant_screen_out`` / ``participant_screen_out_undo``: a screen-out decided outside the
  study's own checks (the quality app's automatic actions), and taking it back.
- ``participants_time_out``: the beat sweep of sessions past their time limit.
- ``study_sync_request``, ``study_sync_prolific``: submission statuses from Prolific's API (asked
  for after commit, read by the task crowd.tasks.sync_prolific_study).
- ``bonus_payment_create``, ``bonus_payment_send``: bonuses to chosen participants of a
  Prolific study, set up then paid through Prolific's API (the task crowd.tasks.pay_bonus).

The services by concern: ``studies``, ``participants``, ``sync`` (Prolific's statuses and
decisions), ``bonuses``. This module re-exports each one's public names, so callers import
``crowd.services`` as before.
"""

from annotation.errors import ApplicationError
from crowd.services.bonuses import (
    HEADER_NAMES,
    MAX_BONUS,
    MAX_BONUSES,
    bonus_payment_create,
    bonus_payment_send,
    bonus_rows,
)
from crowd.services.participants import (
    LEFT_STATUSES,
    Refused,
    _failed,
    check_failures,
    checks_phrase,
    free_items_exist,
    items_done,
    ordinary_items_left,
    participant_consent,
    participant_enter,
    participant_instructions_read,
    participant_leave,
    participant_refresh,
    participant_screen_out,
    participant_screen_out_undo,
    participants_time_out,
    practice_left,
    resume_proven,
)
from crowd.services.studies import (
    EVERYONE,
    INT_FIELDS,
    STUDY_SETTINGS,
    STUDY_STAGES,
    TEXT_FIELDS,
    study_create,
    study_fields_check,
    study_token_lookup,
    study_update,
)
from crowd.services.sync import (
    DECIDED,
    PROLIFIC_LEAVING,
    study_apply_suggestions,
    study_sync_prolific,
    study_sync_request,
)

# ApplicationError and the attention-check rule ``_failed`` were importable from the one
# module this package replaced; callers (and tests) still find them here.
__all__ = [
    "ApplicationError",
    "_failed",
    "DECIDED",
    "EVERYONE",
    "HEADER_NAMES",
    "INT_FIELDS",
    "LEFT_STATUSES",
    "MAX_BONUS",
    "MAX_BONUSES",
    "PROLIFIC_LEAVING",
    "STUDY_SETTINGS",
    "STUDY_STAGES",
    "TEXT_FIELDS",
    "Refused",
    "bonus_payment_create",
    "bonus_payment_send",
    "bonus_rows",
    "check_failures",
    "checks_phrase",
    "free_items_exist",
    "items_done",
    "ordinary_items_left",
    "participant_consent",
    "participant_enter",
    "participant_instructions_read",
    "participant_leave",
    "participant_refresh",
    "participant_screen_out",
    "participant_screen_out_undo",
    "participants_time_out",
    "practice_left",
    "resume_proven",
    "study_apply_suggestions",
    "study_create",
    "study_fields_check",
    "study_sync_prolific",
    "study_sync_request",
    "study_token_lookup",
    "study_update",
]
