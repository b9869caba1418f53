"""One item's page (admins, researchers and reviewers: studio.access.BROWSE_ROLES) and its
admin actions (admins only): reopen, resolve by hand, release a lease, send back, discard
(annotation.api.items_act), each recorded in the item's history."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.access import ProjectAccess
from annotation.api import ITEM_ACTIONS, items_act
from annotation.errors import ApplicationError, Conflict
from annotation.forms import form_error
from annotation.kinds import KindContext, get_kind
from annotation.models import ItemStage, Role
from annotation.navigation import project_tabs
from annotation.web import page
from studio import selectors
from studio.access import access_project_items, access_project_setup
from studio.item_forms import ItemActionForm

LIVE = (ItemStage.State.OPEN, ItemStage.State.RESOLVING, ItemStage.State.ADJUDICATION)


def _context(request: Any, access: ProjectAccess, item_id: int, **extra: Any) -> dict[str, Any]:
    project = access.project
    history = selectors.item_history(project, item_id, viewer=request.user, roles=access.roles)
    can_act = Role.ADMIN in access.roles
    current = next(
        (row["item_stage"] for row in history["stages"] if row["item_stage"].state in LIVE),
        None,
    )
    return {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        **history,
        "can_act": can_act,
        "actions": ITEM_ACTIONS,
        "current": current,
        "earlier_stages": [
            row["item_stage"].stage
            for row in history["stages"]
            if current is None or row["item_stage"].stage.position < current.stage.position
        ]
        if current is not None
        else [row["item_stage"].stage for row in history["stages"][:-1]],
        "decide_choices": _choices(current) if can_act and current is not None else None,
        **extra,
    }


def _choices(item_stage: ItemStage) -> list[Any] | None:
    """The values a hand decision may take on the item's current stage (None: a number)."""
    kind = get_kind(item_stage.stage.kind)
    return kind.choices(KindContext(stage=item_stage.stage, item_stage=item_stage))


@require_GET
@page
def item_detail(request: Any, slug: str, item_id: int) -> Any:
    access = access_project_items(request.user, slug)
    return render(request, "studio/item.html", _context(request, access, item_id))


@require_POST
@page
def item_act(request: Any, slug: str, item_id: int) -> Any:
    """One admin action on the item; a refusal re-renders the page with the error at the top
    and what was posted, nothing changed."""
    access = access_project_setup(request.user, slug)
    project = access.project
    try:
        numeric = False
        item_stage = (
            ItemStage.objects.filter(item__project=project, item_id=item_id, state__in=LIVE)
            .select_related("stage")
            .order_by("stage__position")
            .first()
        )
        posted_stage = (request.POST.get("stage") or "").strip()
        if posted_stage:
            item_stage = (
                ItemStage.objects.filter(
                    item__project=project, item_id=item_id, stage__slug=posted_stage
                )
                .select_related("stage")
                .first()
            ) or item_stage
        if item_stage is not None:
            numeric = _choices(item_stage) is None
        form = ItemActionForm(request.POST, numeric=numeric)
        if not form.is_valid():
            raise form_error(form)
        data = form.cleaned_data
        report = items_act(
            project,
            [item_id],
            data["action"],
            by=request.user,
            reason=data["reason"],
            stage=data["stage"].strip() or None,
            value=data["value"],
        )
        if report.refused:
            raise Conflict(report.refused[item_id])
    except ApplicationError as error:
        context = _context(
            request, access, item_id, error=error, posted=request.POST, scroll_to="actions"
        )
        return render(request, "studio/item.html", context, status=error.status)
    messages.success(request, f"{ITEM_ACTIONS[data['action']]}: done, and recorded below.")
    return redirect(reverse("studio:item", args=[project.slug, item_id]) + "#history")
