"""The CausalT5k page of a project (CONTRIBUTING.md, "Thin views"): the validation figures (the
filtering cascade beside the paper's, the scorers' agreement), the normalisation report of the
last import, and the same report as a CSV download (formula-injection safe)."""

from __future__ import annotations

from django.shortcuts import render
from django.views.decorators.http import require_GET

from agreement.views import csv_response
from annotation.access import MONITOR, access_project
from annotation.errors import ApplicationError
from annotation.navigation import project_tabs
from annotation.views import page
from review.causalt5k import figures, plots, services
from review.causalt5k.normalise import CSV_COLUMNS, iter_csv_rows


def _project(request, slug):
    project = access_project(request.user, slug, MONITOR)
    if project.kind != services.WORKFLOW:
        raise ApplicationError(f"{project.name} is not a CausalT5k project.", {"project": slug})
    return project


@require_GET
@page
def report(request, slug: str):
    project = _project(request, slug)
    record = services.latest_import(project)
    cascade = figures.cascade(project)
    return render(
        request,
        "review/causalt5k/report.html",
        {
            "project": project,
            "project_tabs": project_tabs(project, project.user_roles),
            "record": record,
            "report": services.report_summary(record.report) if record else None,
            "cascade": cascade,
            "cascade_svg": plots.cascade_svg(cascade["steps"]),
            "scores": figures.score_agreement(project),
            "threshold": (project.settings or {}).get("neardup_threshold"),
        },
    )


@require_GET
@page
def report_csv(request, slug: str):
    project = _project(request, slug)
    record = services.latest_import(project)
    if record is None:
        raise ApplicationError("Nothing has been imported yet.", {"project": slug})
    return csv_response(
        f"{project.slug}-normalisation.csv", CSV_COLUMNS, iter_csv_rows(record.report)
    )
