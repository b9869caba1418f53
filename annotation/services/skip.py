"""Skip: an annotator gives an item up, with a reason; the slot goes to others and the item
never comes back to them."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from annotation import gates
from annotation.errors import ApplicationError, Conflict
from annotation.inputs import clean_text
from annotation.models import Assignment
from annotation.services.leases import (
    _gate_assignment,
    _locked_assignment,
    _resolve_closed_by_release,
    _slots_give_back,
)


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
    now = timezone.now()
    if assignment.status == Assignment.Status.ACTIVE:
        # The slot goes back, or, on an item stage stopped early, goes with the lease.
        _slots_give_back(assignment.item_stage_id, 1, now=now)
        _resolve_closed_by_release([assignment.item_stage_id], now)
    assignment.status = Assignment.Status.SKIPPED
    assignment.skip_reason = reason
    assignment.finished_at = now
    assignment.save(update_fields=["status", "skip_reason", "finished_at"])
    return assignment
