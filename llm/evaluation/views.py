"""The evaluation page under a project (/projects/<slug>/evaluations/): researchers and admins
see every model's figures on a published release beside the release's people — a plot with 95 %
intervals and the table — and download each evaluation as a CSV; admins start, pause, resume
and cancel evaluations. Thin views (CONTRIBUTING.md): access, one service or selector, one page
template (htmx polls its ``runs`` partial while an evaluation is running)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from annotation.access import MANAGE, MONITOR, access_project
from annotation.forms import form_error
from annotation.navigation import project_tabs
from annotation.web import csv_response, page
from llm.access import access_evaluation
from llm.evaluation import selectors, services
from llm.evaluation.forms import EvaluationStartForm
from llm.evaluation.plots import models_vs_people
from llm.models import Run


def _access(request, slug: str, roles) -> tuple[Any, frozenset[str]]:
    """The project and the user's roles in it (annotation.access.ProjectAccess)."""
    access = access_project(request.user, slug, roles)
    return access.project, access.roles


def _release(project, request):
    releases = selectors.evaluable_releases(project)
    wanted = request.GET.get("release", "")
    if wanted.isdigit():
        chosen = releases.filter(version=int(wanted)).first()
        if chosen is not None:
            return releases, chosen
    return releases, releases.first()


@require_GET
@page
def evaluations(request, slug: str):
    project, roles = _access(request, slug, MONITOR)
    releases, release = _release(project, request)
    comparison: dict[str, Any] = (
        selectors.release_comparison(release, request.GET.get("metric"))
        if release is not None
        else {"metrics": [], "metric": "", "groups": [], "series": [], "rows": []}
    )
    runs = selectors.evaluations(project).filter(release=release) if release else []
    context = {
        "project": project,
        "project_tabs": project_tabs(project, roles),
        "is_admin": not roles.isdisjoint(MANAGE),
        "releases": releases,
        "release": release,
        "runs": runs,
        "active": any(run.run.status in (*Run.ACTIVE, Run.Status.PAUSED) for run in runs),
        "comparison": comparison,
        "plot": models_vs_people(comparison["metric"], comparison["groups"], comparison["series"])
        if release is not None
        else "",
        "form": EvaluationStartForm(
            releases=releases,
            endpoints=selectors.endpoints(),
            initial={"release": release},
        ),
    }
    template = "llm/evaluations.html"
    if request.htmx and request.GET.get("partial") == "runs":
        template += "#runs"
    return render(request, template, context)


def _back(project, version: int | None = None):
    url = reverse("llm-evaluation:evaluations", args=[project.slug])
    return redirect(f"{url}?release={version}" if version else url)


@require_POST
@page
def evaluation_start(request, slug: str):
    project, _ = _access(request, slug, MANAGE)
    form = EvaluationStartForm(
        request.POST,
        releases=selectors.evaluable_releases(project),
        endpoints=selectors.endpoints(),
    )
    if not form.is_valid():
        raise form_error(form)
    release = form.cleaned_data["release"]
    evaluation = services.evaluation_start(
        release=release,
        endpoint=form.cleaned_data["endpoint"],
        user=request.user,
        mode=form.cleaned_data["mode"],
    )
    messages.success(
        request,
        f"Evaluation {evaluation.pk} of v{release.version} by {evaluation.endpoint.name} queued.",
    )
    return _back(project, release.version)


@require_POST
@page
def evaluation_control(request, slug: str, evaluation_id: int, action: str):
    project, _ = _access(request, slug, MANAGE)
    evaluation = access_evaluation(request.user, project, evaluation_id)
    services.evaluation_control(evaluation=evaluation, action=action)
    return _back(project, evaluation.release.version)


@require_GET
@page
def evaluation_csv(request, slug: str, evaluation_id: int):
    """The evaluation's figures beside the people's, one row per group and figure
    (spreadsheet-safe: annotation.web.csv_response)."""
    project, _ = _access(request, slug, MONITOR)
    evaluation = access_evaluation(request.user, project, evaluation_id)
    header = ["release", "release_sha256", "endpoint", "model_id", "mode", *services.TABLE_COLUMNS]
    fixed = [
        evaluation.release.version,
        evaluation.release_sha256,
        evaluation.endpoint.name,
        evaluation.endpoint.model,
        evaluation.mode,
    ]
    rows = (
        [*fixed, *(row[column] for column in services.TABLE_COLUMNS)]
        for row in services.evaluation_table(evaluation)
    )
    return csv_response(
        f"{project.slug}-v{evaluation.release.version}-evaluation-{evaluation.pk}.csv",
        header,
        rows,
    )
