"""Skip: an annotator gives an item up, with a reason; the slot goes to others and the item
never comes back to them."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation import gates
from annotation.errors import ApplicationError, Conflict
from annotation.inputs import clean_text
from annotation.models import Assignment, ItemStage
from annotation.services.leases import _gate_assignment, _locked_assignment


@transaction.atomic
def assignment_skip(*, assignment_id: int, annotator: User, reason: str) -> Assignment:
    """Give up an item (with a reason): the slot goes to others, and the annotator never gets the
    item again. Skipping twice is harmless."""
    reason = clean_text(reason, field="reason", max_length=300)
    if not reason:
        raise ApplicationError("Say why you skip this item.", {"reason": "required"})
    read = _gate_assignment(assignment_id, annotator, gates.SKIP) or _locked_assignment(
        assignment_id=assignment_id, user=annotator
    )
    assignment = read.assignment
    if assignment.status == Assignment.Status.SUBMITTED:
        raise Conflict("This item is already submitted; it cannot be skipped.")
    if assignment.status == Assignment.Status.SKIPPED:
        return assignment
    if assignment.status == Assignment.Status.ACTIVE:
        ItemStage.objects.filter(pk=assignment.item_stage_id).update(
            leased_count=F("leased_count") - 1
        )
    assignment.status = Assignment.Status.SKIPPED
    assignment.skip_reason = reason
    assignment.finished_at = timezone.now()
    assignment.save(update_fields=["status", "skip_reason", "finished_at"])
    return assignment
