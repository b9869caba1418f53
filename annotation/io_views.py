"""Pages for imports and releases (CONVENTIONS 1 and 8).

Admins upload files and publish releases; researchers and admins read and download releases;
annotators get a 403. Each view: access_project with the roles it needs, one service or
selector, one page template (htmx requests get its named partial). Progress panels poll with
htmx while work runs; every hx-* sits beside a real link or form, so the pages work without JS
(a plain reload shows the same progress).
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from . import imports as import_services
from . import io_selectors
from .access import MANAGE, MONITOR, access_project, access_release
from .api import release_download_response
from .errors import ApplicationError, NotFound
from .importing.pipeline import DUPLICATE_POLICIES
from .importing.readers import FORMATS
from .models import Release
from .navigation import project_tabs, register_project_tab
from .releases import services as release_services
from .views import page, render_error

register_project_tab("Imports", "io:imports", roles=MANAGE, order=60)
register_project_tab("Releases", "io:releases", roles=MONITOR, order=70)

ERRORS_SHOWN = 200
PAGE_SIZE = 25


def _context(request, project, **extra):
    return {
        "project": project,
        "project_tabs": project_tabs(project, project.user_roles),
        "is_admin": "admin" in project.user_roles,
        **extra,
    }


# --- Imports ------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@page
def import_list(request, slug: str):
    """The project's imports, and the upload form (admins)."""
    project = access_project(request.user, slug, MANAGE)
    error = None
    form = {"duplicate_policy": "reject", "layout": "rows", "format": ""}
    if request.method == "POST":
        form.update({key: request.POST.get(key, "") for key in
                     ("duplicate_policy", "layout", "format", "group_field", "purpose_field")})  # fmt: skip
        upload = request.FILES.get("file")
        try:
            if upload is None:
                raise ApplicationError("Choose a file to import.", {"file": "required"})
            batch = import_services.import_batch_create(
                project=project,
                user=request.user,
                fileobj=upload,
                filename=upload.name,
                fmt=form["format"] or None,
                options={key: form[key] for key in
                         ("duplicate_policy", "layout", "group_field", "purpose_field")},
            )  # fmt: skip
            batch = import_services.import_batch_start(batch=batch)
        except ApplicationError as problem:
            error = problem
        else:
            return redirect("io:import", slug=project.slug, batch_id=batch.pk)
    batches = Paginator(io_selectors.import_batches(project), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = _context(
        request,
        project,
        batches=batches,
        error=error,
        form=form,
        formats=FORMATS,
        policies=DUPLICATE_POLICIES,
        inline_max_bytes=import_services.inline_max_bytes(),
    )
    return render(
        request, "annotation/io/imports.html", context, status=error.status if error else 200
    )


@require_GET
@page
def import_detail(request, slug: str, batch_id: int):
    """One import: a live progress bar while it runs, then the errors or the summary."""
    project = access_project(request.user, slug, MANAGE)
    batch = io_selectors.import_batch(project, batch_id)
    if batch is None:
        raise NotFound(f"{project.name} has no import {batch_id}.")
    context = _context(
        request,
        project,
        batch=batch,
        progress=import_services.import_batch_progress(batch),
        errors=import_services.import_batch_errors(batch)[:ERRORS_SHOWN],
    )
    if request.htmx:
        return render(request, "annotation/io/import.html#progress", context)
    return render(request, "annotation/io/import.html", context)


# --- Releases -----------------------------------------------------------------------------


@require_GET
@page
def release_list(request, slug: str):
    project = access_project(request.user, slug, MONITOR)
    releases = Paginator(io_selectors.releases(project), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    return render(
        request, "annotation/io/releases.html", _context(request, project, releases=releases)
    )


@require_POST
@page
def release_publish(request, slug: str):
    project = access_project(request.user, slug, MANAGE)
    try:
        release = release_services.release_publish(
            project=project, user=request.user, notes=request.POST.get("notes", "")
        )
    except ApplicationError as error:
        releases = Paginator(io_selectors.releases(project), PAGE_SIZE).get_page(1)
        context = _context(
            request, project, releases=releases, error=error, notes=request.POST.get("notes", "")
        )
        return render(request, "annotation/io/releases.html", context, status=error.status)
    messages.success(request, f"v{release.version} is being built; this page updates itself.")
    return redirect("io:release", slug=project.slug, version=release.version)


@require_GET
@page
def release_detail(request, slug: str, version: int):
    project = access_project(request.user, slug, MONITOR)
    release = access_release(request.user, project, version)
    context = _context(
        request,
        project,
        release=release,
        datasheet=release_services.release_datasheet(release),
        diff=(release.stats or {}).get("diff"),
        files=(release.manifest or {}).get("files", []),
    )
    if request.htmx:
        return render(request, "annotation/io/release.html#status", context)
    return render(request, "annotation/io/release.html", context)


@require_GET
@page
def release_download(request, slug: str, version: int):
    project = access_project(request.user, slug, MONITOR)
    release = access_release(request.user, project, version)
    if release.status != Release.Status.PUBLISHED:
        return render_error(
            request,
            ApplicationError(
                f"v{release.version} is {release.get_status_display().lower()}; only published "
                f"releases can be downloaded.",
                status=409,
            ),
        )
    return release_download_response(release)
