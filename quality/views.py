"""The quality page of a stage (CONTRIBUTING.md, "Thin views"): the annotators' gold accuracy
with intervals, times, flags and the actions in force, the stage's thresholds, and the
researcher's pause, undo and withdrawal. Researchers and admins of the project (MONITOR);
reviewers and annotators get 403, people outside the project 404 (``access_project``).

Every write is a POST followed by a redirect back to the page (its result as a message); a
refused write re-renders the page with the error above the form it came from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.access import MONITOR, access_project, access_stage
from annotation.errors import ApplicationError
from annotation.forms import form_error
from annotation.navigation import project_tabs
from annotation.web import PageRequest, page
from quality import selectors, services
from quality.forms import ActionForm, RuleForm, TakeForm


def _render(
    request: PageRequest,
    access: Any,
    stage: Any,
    *,
    error: Any = None,
    at: str = "",
    status: int = 200,
) -> HttpResponseBase:
    project = access.project
    context = {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "stage": stage,
        "quality": selectors.stage_quality(stage),
        "error": error,
        "error_at": at,
    }
    return render(request, "quality/stage.html", context, status=status)


@require_GET
@page
def stage_quality(request: PageRequest, slug: str, stage_slug: str) -> HttpResponseBase:
    access = access_project(request.user, slug, MONITOR)
    stage = access_stage(request.user, access.project, stage_slug)
    return _render(request, access, stage)


def _back(stage: Any) -> HttpResponseBase:
    return redirect(reverse("quality:stage", args=[stage.project.slug, stage.slug]))


def _post(
    request: PageRequest,
    slug: str,
    stage_slug: str,
    form_class: Any,
    at: str,
    act: Callable[[Any, dict[str, Any]], str],
) -> HttpResponseBase:
    """The shape of every write on the page: the form parsed, ``act(stage, cleaned_data)``
    called (one service; it returns the message to show), then a redirect back to the page;
    a refusal re-renders the page with the error above the form ``at`` names."""
    access = access_project(request.user, slug, MONITOR)
    stage = access_stage(request.user, access.project, stage_slug)
    form = form_class(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        message = act(stage, form.cleaned_data)
    except ApplicationError as error:
        return _render(request, access, stage, error=error, at=at, status=error.status)
    messages.success(request, message)
    return _back(stage)


@require_POST
@page
def rule_set(request: PageRequest, slug: str, stage_slug: str) -> HttpResponseBase:
    def act(stage: Any, data: dict[str, Any]) -> str:
        services.quality_rule_set(
            stage=stage,
            acts=data["acts"],
            min_gold=data["min_gold"],
            min_accuracy=data["min_accuracy"] / 100,
            withdraw=data["withdraw"],
        )
        return "The thresholds are saved; they apply from each person's next answer."

    return _post(request, slug, stage_slug, RuleForm, "rule", act)


@require_POST
@page
def action_take(request: PageRequest, slug: str, stage_slug: str) -> HttpResponseBase:
    def act(stage: Any, data: dict[str, Any]) -> str:
        action = services.quality_action_take(
            stage=stage,
            annotator_id=data["annotator"],
            by=request.user,
            reason=data["reason"],
        )
        return f"{action.annotator.get_username()}: {action.get_kind_display().lower()}."

    return _post(request, slug, stage_slug, TakeForm, "table", act)


@require_POST
@page
def action_undo(request: PageRequest, slug: str, stage_slug: str) -> HttpResponseBase:
    def act(stage: Any, data: dict[str, Any]) -> str:
        action = services.quality_action_undo(
            stage=stage, action_id=data["action"], by=request.user
        )
        return f"{action.annotator.get_username()} gets this stage's items again."

    return _post(request, slug, stage_slug, ActionForm, "table", act)


@require_POST
@page
def action_withdraw(request: PageRequest, slug: str, stage_slug: str) -> HttpResponseBase:
    def act(stage: Any, data: dict[str, Any]) -> str:
        withdrawn = services.quality_action_withdraw(
            stage=stage, action_id=data["action"], by=request.user
        )
        return (
            f"{withdrawn} answer{'' if withdrawn == 1 else 's'} withdrawn; answers a decision "
            "was already made with are kept."
        )

    return _post(request, slug, stage_slug, ActionForm, "table", act)
