"""Import pages (admins): upload a file, watch its progress, read every bad row.

Each view: access_project with the roles it needs, one service or selector, one page template
(htmx requests get its named partial). The progress panel polls with htmx while work runs; every
hx-* sits beside a real link or form, so the pages work without JS.
"""

from __future__ import annotations

from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from annotation.access import MANAGE, ProjectAccess, access_project
from annotation.errors import ApplicationError, NotFound
from annotation.navigation import project_tabs
from annotation.web import csv_response, page, page_of
from annotation.workflows import WORKFLOWS
from imports import selectors, services
from imports.core.pipeline import DUPLICATE_POLICIES
from imports.core.readers import FORMATS

ERRORS_SHOWN = 200
PAGE_SIZE = 25


def _context(request, access: ProjectAccess, **extra):
    project = access.project
    return {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "is_admin": access.is_admin,
        **extra,
    }


@require_http_methods(["GET", "POST"])
@page
def import_list(request, slug: str):
    """The project's imports, and the upload form (admins)."""
    access = access_project(request.user, slug, MANAGE)
    project = access.project
    error = None
    form = {"duplicate_policy": "reject", "layout": "rows", "format": ""}
    if request.method == "POST":
        form.update({key: request.POST.get(key, "") for key in
                     ("duplicate_policy", "layout", "format", "group_field", "purpose_field",
                      "gold_field")})  # fmt: skip
        upload = request.FILES.get("file")
        try:
            if upload is None:
                raise ApplicationError("Choose a file to import.", {"file": "required"})
            batch = services.import_batch_create(
                project=project,
                user=request.user,
                fileobj=upload,
                filename=upload.name,
                fmt=form["format"] or None,
                options={key: form[key] for key in
                         ("duplicate_policy", "layout", "group_field", "purpose_field",
                          "gold_field")},
            )  # fmt: skip
            batch = services.import_batch_start(batch=batch)
        except ApplicationError as problem:
            error = problem
        else:
            return redirect("imports:import", slug=project.slug, batch_id=batch.pk)
    batches = page_of(request, selectors.import_batches(project), PAGE_SIZE)
    schema = services.import_schema(project, "rows")
    workflow = WORKFLOWS.get(project.kind)
    context = _context(
        request,
        access,
        columns=schema.describe(),
        schema_name=schema.name,
        schema_description=schema.description,
        workflow=workflow,
        own_files=[
            {"label": label, "url": reverse(url_name, args=[project.slug])}
            for label, url_name in (workflow.import_pages if workflow else ())
        ],
        shown=services.shown_fields(project) if schema.name == "generic" else (),
        batches=batches,
        error=error,
        form=form,
        formats=FORMATS,
        policies=DUPLICATE_POLICIES,
        inline_max_bytes=services.inline_max_bytes(),
    )
    return render(request, "imports/imports.html", context, status=error.status if error else 200)


@require_GET
@page
def import_detail(request, slug: str, batch_id: int):
    """One import: a live progress bar while it runs, then the errors or the summary."""
    access = access_project(request.user, slug, MANAGE)
    project = access.project
    batch = selectors.import_batch(project, batch_id)
    if batch is None:
        raise NotFound(f"{project.name} has no import {batch_id}.")
    context = _context(
        request,
        access,
        batch=batch,
        progress=services.import_batch_progress(batch),
        errors=services.import_batch_errors(batch)[:ERRORS_SHOWN],
    )
    if request.htmx:
        return render(request, "imports/import.html#progress", context)
    return render(request, "imports/import.html", context)


@require_GET
@page
def sample_file(request, slug: str):
    """A CSV with the columns this project's import takes and two rows that import cleanly
    (``services.sample_rows``), through the spreadsheet-safe CSV helper."""
    project = access_project(request.user, slug, MANAGE).project
    columns, rows = services.sample_rows(project)
    return csv_response(f"{project.slug}-sample.csv", columns, rows)


SAMPLE_FORMATS = {"csv", "jsonl"}


@require_GET
@page
def schema_sample(request, slug: str, schema: str, fmt: str):
    """Two sample rows of a registered schema (a workflow's own import page offers it: ratings'
    pairs and ratings, CARL-GT's questions, CausalNarratives' lines), as CSV through the
    spreadsheet-safe CSV helper or as JSON Lines; they pass every check the schema declares."""
    project = access_project(request.user, slug, MANAGE).project
    found = selectors.registered_schema(schema)
    if found is None or fmt not in SAMPLE_FORMATS:
        raise NotFound(f"No sample file {schema}.{fmt}.")
    filename = f"{project.slug}-{found.name.replace('.', '-')}-sample.{fmt}"
    if fmt == "csv":
        columns, rows = selectors.schema_sample_table(found)
        return csv_response(filename, columns, rows)
    response = HttpResponse(
        selectors.schema_sample_lines(found), content_type="application/x-ndjson; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
