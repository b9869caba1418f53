"""The CausalT5k page of a project (CONTRIBUTING.md, "Thin views"): the validation figures (the
filtering cascade beside the paper's, the scorers' agreement), the normalisation report of the
last import, and the same report as a CSV download (formula-injection safe)."""

from __future__ import annotations

from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_GET, require_POST

from agreement.sections import project_sections
from annotation.access import MANAGE, MONITOR, ProjectAccess, access_workflow_project
from annotation.errors import ApplicationError
from annotation.navigation import project_tabs
from annotation.web import csv_response, page
from llm.generation import generation_form, generation_start_from_form
from review.causalt5k import blind, figures, floor, historic, plots, services
from review.causalt5k.report import CSV_COLUMNS, iter_csv_rows


def _project(request, slug, roles=MONITOR) -> ProjectAccess:
    return access_workflow_project(
        request.user, slug, workflow=services.WORKFLOW, label="CausalT5k", roles=roles
    )


@require_GET
@page
def report(request, slug: str):
    access = _project(request, slug)
    project = access.project
    record = services.latest_import(project)
    cascade = figures.cascade(project)
    return render(
        request,
        "review/causalt5k/report.html",
        {
            "project": project,
            "project_tabs": project_tabs(project, access.roles),
            "record": record,
            "report": services.report_summary(record.report) if record else None,
            "cascade": cascade,
            "cascade_svg": plots.cascade_svg(cascade["steps"]),
            "scores": figures.score_agreement(project),
            "threshold": (project.settings or {}).get("neardup_threshold"),
            "historic": historic.historic_summary(project),
            "blind": blind.blind_accuracy(project),
            "blind_progress": blind.blind_progress(project),
            "has_blind": project.stages.filter(kind=blind.BLIND_KIND).exists(),
            "can_manage": access.holds(MANAGE),
            "stage_sections": project_sections(project.stages.order_by("position")),
        },
    )


@require_GET
@page
def report_csv(request, slug: str):
    project = _project(request, slug).project
    record = services.latest_import(project)
    if record is None:
        raise ApplicationError("Nothing has been imported yet.", {"project": slug})
    return csv_response(
        f"{project.slug}-normalisation.csv", CSV_COLUMNS, iter_csv_rows(record.report)
    )


@require_POST
@page
def blind_sample_open(request, slug: str):
    """Open a seeded sample of kept cases in the blind answer stage (admins)."""
    project = _project(request, slug, MANAGE).project
    raw = request.POST.get("sample", "100")
    try:
        sample = int(raw)
    except ValueError:
        raise ApplicationError(
            f"The sample is a whole number of cases (got {raw[:20]!r}).", {"sample": raw[:20]}
        ) from None
    opened = blind.blind_open(project=project, sample=sample, seed=sample)
    from django.contrib import messages

    messages.success(
        request, f"Opened {opened} kept case{pluralize(opened)} in the blind answer stage."
    )
    return redirect("causalt5k:report", slug=project.slug)


@require_GET
@page
def human_floor(request, slug: str):
    """The trap × domain grid of human-written shares, cells below the floor flagged
    (``?threshold=0.3&basis=known`` change the floor and the basis; review.causalt5k.floor)."""
    access = _project(request, slug)
    project = access.project
    figures = floor.human_floor(
        project, threshold=request.GET.get("threshold"), basis=request.GET.get("basis")
    )
    return render(
        request,
        "review/causalt5k/human_floor.html",
        {
            "project": project,
            "project_tabs": project_tabs(project, access.roles),
            "floor": figures,
            "percent": round(100 * figures["settings"]["threshold"], 1),
            "can_manage": access.holds(MANAGE),
            "generation": generation_form(project, "ct5k_expansion"),
        },
    )


@require_GET
@page
def human_floor_csv(request, slug: str):
    project = _project(request, slug).project
    figures = floor.human_floor(
        project, threshold=request.GET.get("threshold"), basis=request.GET.get("basis")
    )
    return csv_response(
        f"{project.slug}-human-floor.csv", floor.CSV_COLUMNS, floor.csv_rows(figures)
    )


@require_POST
@page
def expand(request, slug: str):
    """Start a generation run expanding the kept seeds (admins; review.causalt5k.expansion)."""
    project = _project(request, slug, MANAGE).project
    run = generation_start_from_form(
        project=project, generator="ct5k_expansion", data=request.POST, by=request.user
    )
    from django.contrib import messages

    messages.success(
        request, f"Generation run {run.pk} started: candidates go to validation, within the floor."
    )
    return redirect("causalt5k:human_floor", slug=project.slug)
