"""The quality page of a stage (CONTRIBUTING.md, "Thin views"): the annotators' gold accuracy
with intervals, times, flags and the actions in force, the stage's thresholds, and the
researcher's pause, undo and withdrawal. Researchers and admins of the project (MONITOR);
reviewers and annotators get 403, people outside the project 404 (``access_project``).

Every write is a POST followed by a redirect back to the page (its result as a message); a
refused write re-renders the page with the error above the form it came from."""

from __future__ import annotations

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


@require_POST
@page
def rule_set(request: PageRequest, slug: str, stage_slug: str) -> HttpResponseBase:
    access = access_project(request.user, slug, MONITOR)
    stage = access_stage(request.user, access.project, stage_slug)
    form = RuleForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        services.quality_rule_set(
            stage=stage,
            acts=form.cleaned_data["acts"],
            min_gold=form.cleaned_data["min_gold"],
            min_accuracy=form.cleaned_data["min_accuracy"] / 100,
            withdraw=form.cleaned_data["withdraw"],
        )
    except ApplicationError as error:
        return _render(request, access, stage, error=error, at="rule", status=error.status)
    messages.success(
        request, "The thresholds are saved; they apply from each person's next answer."
    )
    return _back(stage)


@require_POST
@page
def action_take(request: PageRequest, slug: str, stage_slug: str) -> HttpResponseBase:
    access = access_project(request.user, slug, MONITOR)
    stage = access_stage(request.user, access.project, stage_slug)
    form = TakeForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        action = services.quality_action_take(
            stage=stage,
            annotator_id=form.cleaned_data["annotator"],
            by=request.user,
            reason=form.cleaned_data["reason"],
        )
    except ApplicationError as error:
        return _render(request, access, stage, error=error, at="table", status=error.status)
    messages.success(
        request, f"{action.annotator.get_username()}: {action.get_kind_display().lower()}."
    )
    return _back(stage)


@require_POST
@page
def action_undo(request: PageRequest, slug: str, stage_slug: str) -> HttpResponseBase:
    access = access_project(request.user, slug, MONITOR)
    stage = access_stage(request.user, access.project, stage_slug)
    form = ActionForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        action = services.quality_action_undo(
            stage=stage, action_id=form.cleaned_data["action"], by=request.user
        )
    except ApplicationError as error:
        return _render(request, access, stage, error=error, at="table", status=error.status)
    messages.success(request, f"{action.annotator.get_username()} gets this stage's items again.")
    return _back(stage)


@require_POST
@page
def action_withdraw(request: PageRequest, slug: str, stage_slug: str) -> HttpResponseBase:
    access = access_project(request.user, slug, MONITOR)
    stage = access_stage(request.user, access.project, stage_slug)
    form = ActionForm(request.POST)
    try:
        if not form.is_valid():
            raise form_error(form)
        withdrawn = services.quality_action_withdraw(
            stage=stage, action_id=form.cleaned_data["action"], by=request.user
        )
    except ApplicationError as error:
        return _render(request, access, stage, error=error, at="table", status=error.status)
    messages.success(
        request,
        f"{withdrawn} answer{'' if withdrawn == 1 else 's'} withdrawn; answers a decision was "
        "already made with are kept.",
    )
    return _back(stage)
