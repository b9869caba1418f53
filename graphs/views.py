"""The Graphs tab of a CARL-GT project (CONTRIBUTING.md, "Thin views"): people's answers scored
the way the paper scores models, per task and graph size; the questions per task; for admins,
d-separation questions generated from an uploaded edge list."""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_GET, require_POST

from annotation.access import MANAGE, MONITOR
from annotation.errors import ApplicationError
from annotation.navigation import project_tabs
from annotation.web import page
from graphs import services
from graphs.access import access_graphs_project

MAX_EDGE_LIST_BYTES = services.MAX_EDGE_LIST_BYTES


def _context(project, **extra):
    return {
        "project": project,
        "project_tabs": project_tabs(project, project.user_roles),
        "scores": services.project_scores(project),
        "agreement": services.project_agreement(project),
        "counts": services.question_counts(project),
        "can_manage": bool(set(MANAGE) & project.user_roles),
        **extra,
    }


@require_GET
@page
def scores(request, slug: str):
    project = access_graphs_project(request.user, slug, MONITOR)
    return render(request, "graphs/scores.html", _context(project))


def _int(raw: str, name: str, low: int, high: int) -> int:
    try:
        value = int(raw)
    except (TypeError, ValueError):
        value = None
    if value is None or not low <= value <= high:
        raise ApplicationError(
            f"{name} is a whole number from {low} to {high} (got {str(raw)[:20]!r}).",
            {name: f"{low}–{high}"},
        )
    return value


@require_POST
@page
def generate(request, slug: str):
    project = access_graphs_project(request.user, slug, MANAGE)
    upload = request.FILES.get("file")
    if upload is None:
        raise ApplicationError(
            "Choose an edge list (CSV cause,effect or JSON).", {"file": "required"}
        )
    if upload.size > MAX_EDGE_LIST_BYTES:
        raise ApplicationError(
            f"An edge list is at most {MAX_EDGE_LIST_BYTES >> 20} MiB.", {"file": upload.name}
        )
    try:
        created = services.dsep_generate(
            project=project,
            data=upload.read(),
            filename=upload.name,
            graph_name=request.POST.get("graph_name", ""),
            max_given=_int(request.POST.get("max_given", "1"), "max_given", 0, services.MAX_GIVEN),
            limit=_int(request.POST.get("limit", "20"), "limit", 1, services.MAX_QUESTIONS),
            seed=_int(request.POST.get("seed", "0"), "seed", 0, 2**31),
        )
    except ApplicationError as error:
        return render(
            request,
            "graphs/scores.html",
            _context(project, error=error, filename=upload.name),
            status=400,
        )
    messages.success(
        request, f"Added {created} d-separation question{pluralize(created)} with their answers."
    )
    return redirect("graphs:scores", slug=project.slug)
