"""Permission-checked fetches of the research pages (CONTRIBUTING.md, "Permission-checked
fetches"): the only way agreement/views.py gets an object a user might not be allowed to see.
Projects and stages come from ``annotation.access`` (``access_project``, ``access_stage``)."""

from __future__ import annotations

from typing import Any

from agreement.selectors import annotated_by
from annotation.errors import NotFound, PermissionDenied
from annotation.models import ItemStage, Project
from annotation.selectors import item_stages_with_final_votes


def access_adjudication_item(user: Any, project: Project, item_stage_id: int) -> ItemStage:
    """An item stage of ``project`` a reviewer may open (the project already fetched with
    ``access_project(user, slug, ADJUDICATE)``): waiting for adjudication, or already decided —
    never one still being annotated (its votes are not final, and showing them would unblind the
    annotators still at work: the same 404 as an unknown id; the engine's rule,
    ``annotation.selectors.item_stages_with_final_votes``) — and never one the reviewer
    annotated (403: nobody judges their own work). Item, stage and resolution come joined."""
    item_stage = (
        item_stages_with_final_votes(ItemStage.objects.filter(pk=item_stage_id))
        .select_related("item", "stage", "resolution")
        .filter(stage__project=project)
        .first()
    )
    if item_stage is None:
        raise NotFound("There is no such item in this project.")
    if annotated_by(item_stage, user):
        raise PermissionDenied(
            "You annotated this item, so another reviewer decides it; it is not in your queue."
        )
    return item_stage


def access_spot_check_item(user: Any, project: Project, item_stage_id: int) -> ItemStage:
    """An item stage of ``project`` drawn for a spot check (``agreement.spot_checks``) or
    already spot-checked, for a reviewer (the project fetched with
    ``access_project(user, slug, ADJUDICATE)``): anything else answers as an unknown id (404),
    one the reviewer annotated is a 403. Item, stage and resolution come joined."""
    from agreement.spot_checks import spot_check_queue

    drawn = spot_check_queue(project).filter(pk=item_stage_id)
    checked = ItemStage.objects.filter(
        pk=item_stage_id, stage__project=project, spot_check__isnull=False
    )
    item_stage = (
        (drawn.first() or checked.select_related("item", "stage", "resolution").first())
        if item_stage_id
        else None
    )
    if item_stage is None:
        raise NotFound("There is no such item in this project's spot checks.")
    if annotated_by(item_stage, user):
        raise PermissionDenied(
            "You annotated this item, so another reviewer checks it; it is not in your queue."
        )
    return item_stage
