"""The researcher page of a ratings project, its CSV/SVG downloads, and the import pages.

Thin views (CONTRIBUTING.md, "Thin views"): parse input, one access call, one service or selector, render one
page template; htmx requests get its named partials ("ratings/dashboard.html#analysis", …).
Every hx-* control has a real href/action beside it.
"""

from __future__ import annotations

import csv
import re
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.access import MANAGE, MONITOR, ProjectAccess
from annotation.errors import ApplicationError
from annotation.forms import TextField, form_error, parse_bool
from annotation.navigation import project_tabs
from annotation.web import page, spreadsheet_safe
from ratings import report as report_module
from ratings import selectors, services
from ratings.access import (
    access_model_run,
    access_model_run_for_deletion,
    access_ratings_project,
)
from ratings.selectors import RatingsContext

MAX_UPLOAD_BYTES = 50 * 1024 * 1024
PREVIEW_ROWS = 12


def _source(request) -> str:
    source = request.GET.get("source") or "all"
    if source not in selectors.SOURCES:
        raise ApplicationError(
            f"Unknown source {source!r}; use one of {', '.join(selectors.SOURCES)}.",
            {"source": source},
        )
    return source


def _base_context(request, access: ProjectAccess, context: RatingsContext) -> dict:
    project = access.project
    can_manage = access.holds(MANAGE)
    tabs = project_tabs(project, access.roles)
    return {"project": project, "project_tabs": tabs, "ratings": context, "can_manage": can_manage}


# --- The researcher page ----------------------------------------------------------------------


@require_GET
@page
def dashboard(request, slug: str):
    access, context = access_ratings_project(request.user, slug, MONITOR)
    source = _source(request)
    part = request.GET.get("part")
    analysis_only = bool(request.htmx) and part == "analysis"
    # Read once for the progress cards and the data version (stored for a large project:
    # ratings/stored_counts.py).
    shown = selectors.counts_shown(context)
    page_context = {
        **_base_context(request, access, context),
        "source": source,
        "sources": selectors.SOURCES,
        # The analysis partial does not show the progress cards.
        "progress": None if analysis_only else selectors.progress(context, shown=shown),
    }
    version = selectors.data_version(context, None, shown=shown)
    page_context["version"] = version
    if request.htmx and part == "progress":
        response = render(request, "ratings/dashboard.html#progress", page_context)
        if request.GET.get("version") not in (None, "", page_context["version"]):
            # New ratings since the page was drawn: let the analysis reload itself.
            response["HX-Trigger"] = "ratings-data-changed"
        return response
    run = access_model_run(context, request.GET.get("run"))
    # The page never computes the analysis and never writes: it shows the stored one and, when
    # that is missing or stale, says so and polls; its analysis section asks the worker for a
    # new one with a POST (analysis_request: sent by htmx when the section loads, or by its
    # button without JavaScript).
    state = selectors.stored_analysis(
        context,
        source=source,
        run=run,
        version=version if run is None else selectors.data_version(context, run, shown=shown),
        for_page=True,
    )
    runs = selectors.model_runs(context.project)
    page_context.update(
        run=run,
        runs=runs,
        computing=not state.fresh,
        # Asked for once per drawing of the section, not by each of its polls (their trigger
        # is the section itself): one request, and the worker is not raced by its own askers.
        ask=not state.fresh and not (request.htmx and request.htmx.trigger == "analysis"),
        computed_at=state.computed_at,
    )
    if state.analysis is not None:
        page_context.update(_analysis_context(state.analysis, runs))
    if request.htmx and part == "analysis":
        return render(request, "ratings/dashboard.html#analysis", page_context)
    return render(request, "ratings/dashboard.html", page_context)


@require_POST
@page
def analysis_request(request, slug: str):
    """Ask the worker to compute the analysis of the posted selection (``source``, ``run``)
    when it is missing or stale (ratings.services.analysis_refresh_request: one message at a
    time per selection, sent after commit). htmx gets 204 (the polling section shows the
    result); a plain form goes back to the page."""
    context = access_ratings_project(request.user, slug, MONITOR).ratings
    form = AnalysisRequestForm(request.POST)
    if not form.is_valid():
        raise form_error(form)
    source = form.cleaned_data["source"] or "all"
    if source not in selectors.SOURCES:
        raise ApplicationError(
            f"Unknown source {source!r}; use one of {', '.join(selectors.SOURCES)}.",
            {"source": source},
        )
    run = access_model_run(context, form.cleaned_data["run"])
    if not selectors.stored_analysis(context, source=source, run=run, for_page=True).fresh:
        services.analysis_refresh_request(
            project_id=context.project.pk, source=source, run_id=run.pk if run else None
        )
    if request.htmx:
        return HttpResponse(status=204)
    query = urlencode({"source": source, **({"run": run.pk} if run else {})})
    return redirect(f"{reverse('ratings:dashboard', args=[slug])}?{query}")


class AnalysisRequestForm(forms.Form):
    """The selection whose analysis the page asks for (``run`` empty: none)."""

    source = TextField()
    run = TextField()


def _display(frame, limit=None):
    if frame is None:
        return None
    columns, rows = report_module.table_rows(frame, limit=limit)
    columns = [column.replace("_", " ") for column in columns]
    return {"columns": columns, "rows": rows, "total": len(frame)}


CLASS_SECTIONS = (
    ("classes", "All ordered pairs"),
    ("classes_by_subset", "By expected subset"),
    ("classes_by_origin", "By origin"),
    ("classes_by_flag", "By flag"),
)


def _class_table(report) -> dict | None:
    """The label counts as one table in sections (all, by subset, origin, flag), like
    ExpliCa's class table; each section keeps its own CSV download."""
    overall = report.table("classes")
    if overall is None:
        return None
    columns = [str(column) for column in overall.columns]
    sections = []
    for name, title in CLASS_SECTIONS:
        frame = report.table(name)
        if frame is None:
            continue
        if name != "classes" and "all" in frame.index:
            frame = frame.drop(index="all")
        rows = [
            {
                "group": str(group),
                "cells": [int(frame.at[group, column]) for column in frame.columns],
            }
            for group in frame.index
        ]
        sections.append({"name": name, "title": title, "rows": rows})
    return {"columns": columns, "sections": sections}


def _analysis_context(analysis, runs) -> dict:
    report = analysis.report
    run = analysis.run
    query = {"source": analysis.source}
    if run is not None:
        query["run"] = run.pk
    raters = report.table("raters")
    return {
        "analysis": analysis,
        "report": report,
        "run": run,
        "runs": runs,
        "query": query,
        "figures": report.figures,
        "class_table": _class_table(report),
        "reliability": _display(report.table("reliability")),
        "raters": None
        if raters is None
        else {"rows": raters.head(100).to_dict("records"), "total": len(raters)},
        "raters_flagged": int(raters["needs_attention"].sum()) if raters is not None else 0,
        "checks_failed": int(report.table("attention_checks")["failed"].sum())
        if report.table("attention_checks") is not None
        else 0,
        "model_tables": [
            {
                "name": name,
                "title": report_module.TABLE_TITLES[name],
                **_display(report.table(name)),
            }
            for name in ("model_by_class", "model_by_order", "model_by_connective")
            if report.table(name) is not None
        ],
        "confusion": _display(report.table("model_confusion")),
        "plots": analysis.plots,
    }


# --- Downloads --------------------------------------------------------------------------------


def _filename(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", "-".join(part for part in parts if part)).strip("-")


@require_GET
@page
def table_csv(request, slug: str, table: str):
    context = access_ratings_project(request.user, slug, MONITOR).ratings
    if table not in report_module.TABLE_TITLES:
        raise Http404("There is no such table.")
    source = _source(request)
    run = access_model_run(context, request.GET.get("run"))
    analysis = selectors.analysis(context, source=source, run=run)
    frame = analysis.report.table(table)
    if frame is None:
        raise ApplicationError(
            f"The {report_module.TABLE_TITLES[table].lower()} table is empty for this selection.",
            status=404,
        )
    if table.startswith("classes"):
        frame = frame.reset_index()
    # Pair ids, origins, subsets and rater names come from uploaded files: text cells a
    # spreadsheet would run as formulas are written inert (numbers are left as they are).
    frame = frame.copy()
    for column in frame.select_dtypes(exclude=["number", "bool"]).columns:
        frame[column] = frame[column].map(
            lambda value: spreadsheet_safe(value) if isinstance(value, str) else value
        )
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    name = _filename(context.project.slug, table, source, run.name if run else "")
    response["Content-Disposition"] = f'attachment; filename="{name}.csv"'
    frame.to_csv(response, index=False, quoting=csv.QUOTE_MINIMAL, lineterminator="\n")
    return response


@require_GET
@page
def plot_svg(request, slug: str, name: str):
    context = access_ratings_project(request.user, slug, MONITOR).ratings
    source = _source(request)
    run = access_model_run(context, request.GET.get("run"))
    analysis = selectors.analysis(context, source=source, run=run)
    svg = analysis.plots.get(name)
    if svg is None:
        raise Http404("There is no such plot for this selection.")
    document = (
        '<?xml version="1.0" encoding="utf-8"?>\n'
        + svg.replace("<svg ", '<svg xmlns="http://www.w3.org/2000/svg" ', 1)
        if 'xmlns="http://www.w3.org/2000/svg"' not in svg
        else svg
    )
    response = HttpResponse(document, content_type="image/svg+xml")
    response["Content-Disposition"] = (
        f'attachment; filename="{_filename(context.project.slug, name, source)}.svg"'
    )
    return response


# --- Model runs -------------------------------------------------------------------------------


def _upload(request, field: str = "file"):
    upload = request.FILES.get(field)
    if upload is None:
        raise ApplicationError("Choose a file to upload.", {field: "required"})
    if upload.size > MAX_UPLOAD_BYTES:
        raise ApplicationError(
            f"The file is {upload.size / 1e6:.1f} MB; at most {MAX_UPLOAD_BYTES // 10**6} MB.",
            {field: "too large"},
        )
    # The upload itself (in memory or a temporary file), read by the services as a stream.
    return upload.name, upload


@require_POST
@page
def model_run_upload(request, slug: str):
    access, context = access_ratings_project(request.user, slug, MONITOR)
    dashboard_url = reverse("ratings:dashboard", args=[slug])
    try:
        filename, content = _upload(request)
        run = services.model_run_import(
            project=context.project,
            name=request.POST.get("name") or filename.rsplit(".", 1)[0],
            content=content,
            filename=filename,
            user=request.user,
        )
    except ApplicationError as error:
        return render(
            request,
            "ratings/model_upload.html",
            {
                **_base_context(request, access, context),
                "error": error,
                "name": request.POST.get("name", ""),
            },
            status=error.status,
        )
    messages.success(
        request,
        f"Model run “{run.name}” stored: {run.n_answers} answers, {run.n_no_answer} without an answer.",
    )
    return redirect(f"{dashboard_url}?source={_source(request)}&run={run.pk}#models")


@require_http_methods(["GET"])
@page
def model_run_form(request, slug: str):
    access, context = access_ratings_project(request.user, slug, MONITOR)
    return render(request, "ratings/model_upload.html", _base_context(request, access, context))


@require_POST
@page
def model_run_delete(request, slug: str, run_id: int):
    access, context = access_ratings_project(request.user, slug, MONITOR)
    run = access_model_run_for_deletion(access, context, run_id, request.user)
    services.model_run_delete(project=context.project, run_id=run.pk)
    messages.success(request, f"Model run “{run.name}” deleted.")
    return redirect("ratings:dashboard", slug=slug)


# --- Imports ----------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@page
def import_page(request, slug: str):
    """Upload a pairs file or a historic ratings file (project admins)."""
    access, context = access_ratings_project(request.user, slug, MANAGE)
    page_context = {
        **_base_context(request, access, context),
        "connectives": context.connective_set.connectives,
        "scale": context.scale,
        "sample": selectors.pair_sample(context),
        "progress": selectors.progress(context),
        "batches": selectors.import_batches(context.project),
    }
    if request.method == "GET":
        return render(request, "ratings/import.html", page_context)
    what = request.POST.get("what", "pairs")
    try:
        filename, content = _upload(request)
        if what == "ratings":
            count = services.historic_ratings_import(
                project=context.project,
                content=content,
                filename=filename,
                user=request.user,
                allow_duplicate_file=parse_bool(request.POST.get("allow_duplicate_file")),
            )
            messages.success(
                request, f"Imported {count:,} rating{pluralize(count)} from {filename}."
            )
        elif what == "pairs":
            result = services.pairs_import(
                project=context.project,
                content=content,
                filename=filename,
                user=request.user,
                open_for_rating=parse_bool(request.POST.get("open_for_rating", "on")),
            )
            messages.success(
                request,
                f"Imported {result.pairs:,} pair{pluralize(result.pairs)} as "
                f"{result.items:,} item{pluralize(result.items)}"
                + (
                    f", {result.practice_items} practice item{pluralize(result.practice_items)}"
                    if result.practice_items
                    else ""
                )
                + (
                    f", {result.attention_checks} attention "
                    f"check{pluralize(result.attention_checks)}"
                    if result.attention_checks
                    else ""
                )
                + f" from {filename}.",
            )
        else:
            raise ApplicationError("Choose what the file holds: pairs or ratings.", {"what": what})
    except ApplicationError as error:
        page_context.update(
            error=error,
            what=what,
            row_errors=error.extra.get("errors") if isinstance(error.extra, dict) else None,
            error_count=error.extra.get("error_count") if isinstance(error.extra, dict) else None,
        )
        return render(request, "ratings/import.html", page_context, status=error.status)
    return redirect("ratings:import", slug=slug)
