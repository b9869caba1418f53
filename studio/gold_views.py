"""A stage's silent gold page (annotation/gold.py): the stage's gold items with how annotators
answered them, and the unanimous decisions a researcher may confirm as gold
(annotation.api.gold_candidates → gold_promote). For the project's admins and researchers
(studio.access.GOLD_ROLES), the roles that see gold answers; a refusal comes back at the top
of the page, nothing changed."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from annotation.access import ProjectAccess
from annotation.api import gold_answers, gold_candidates, gold_items, gold_promote
from annotation.errors import ApplicationError
from annotation.forms import form_error
from annotation.models import Stage
from annotation.navigation import project_tabs
from annotation.web import page
from studio.access import access_stage_gold
from studio.item_forms import GoldPromoteForm


def _context(access: ProjectAccess, stage: Stage, **extra: Any) -> dict[str, Any]:
    answers = gold_answers(stage=stage)
    by_item: dict[int, list[bool | None]] = {}
    for answer in answers:
        by_item.setdefault(answer.item_stage_id, []).append(answer.correct)
    items = [
        {
            "item_stage": item_stage,
            "answers": len(by_item.get(item_stage.pk, [])),
            "correct": sum(1 for correct in by_item.get(item_stage.pk, []) if correct),
        }
        for item_stage in gold_items(stage=stage)
    ]
    return {
        "project": access.project,
        "project_tabs": project_tabs(access.project, access.roles),
        "stage": stage,
        "items": items,
        "answers": len(answers),
        "correct": sum(1 for answer in answers if answer.correct),
        "candidates": gold_candidates(stage=stage),
        **extra,
    }


@require_http_methods(["GET", "POST"])
@page
def stage_gold(request: Any, slug: str, stage_id: int) -> Any:
    """GET: the page. POST: make the ticked decisions gold items of the stage."""
    access, stage = access_stage_gold(request.user, slug, stage_id)
    if request.method == "POST":
        form = GoldPromoteForm(request.POST)
        try:
            if not form.is_valid():
                raise form_error(form)
            created = gold_promote(
                stage=stage, resolution_ids=form.cleaned_data["resolution"], by=request.user
            )
        except ApplicationError as error:
            context = _context(
                access, stage, error=error, posted=request.POST.getlist("resolution")
            )
            return render(request, "studio/gold.html", context, status=error.status)
        messages.success(
            request,
            f"{len(created)} gold item{'' if len(created) == 1 else 's'} added to {stage.name}.",
        )
        return redirect(reverse("studio:stage_gold", args=[access.project.slug, stage.pk]))
    return render(request, "studio/gold.html", _context(access, stage))
