"""Extra slots on a stage: one more (or one fewer) answer wanted per item, for open items and
those opened later — for a plug-in that adds a rater of its own beside the people (a model
rater: llm.services.rater_add)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.db.models.functions import Greatest

from annotation.errors import ApplicationError
from annotation.models import ItemStage, Stage


@transaction.atomic
def stage_slots_add(*, stage: Stage, delta: int) -> int:
    """Add ``delta`` slots to ``stage``: its ``overlap`` (and ``max_overlap`` when set) for items
    opened later, and ``target_count`` of its open item stages. A negative ``delta`` never takes
    a slot below the answers given and leases held (the overlap CHECK constraint). Refused on a
    stage with phases (their slot counts are per phase: annotation.phases). Returns how many
    open item stages changed."""
    locked = Stage.objects.select_for_update().get(pk=stage.pk)
    if locked.phases:
        raise ApplicationError(
            f"Stage {locked.slug!r} works in phases; extra slots cannot be added to it.",
            {"stage": locked.slug},
        )
    if locked.overlap + delta < 1:
        raise ApplicationError(
            f"Stage {locked.slug!r} would have no slot left.", {"overlap": locked.overlap}
        )
    locked.overlap += delta
    if locked.max_overlap:
        locked.max_overlap = max(locked.max_overlap + delta, locked.overlap)
    locked.save(update_fields=["overlap", "max_overlap"])
    stage.overlap, stage.max_overlap = locked.overlap, locked.max_overlap
    return ItemStage.objects.filter(stage=locked, state=ItemStage.State.OPEN).update(
        target_count=Greatest(
            F("target_count") + delta, F("submitted_count") + F("leased_count"), 1
        )
    )
