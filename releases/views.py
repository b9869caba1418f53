"""Release pages: admins publish; researchers and admins read and download.

Each view: access_project with the roles it needs, one service or selector, one page template
(htmx requests get its named partial). The build panel polls with htmx while the release builds.
"""

from __future__ import annotations

from django.contrib import messages
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotation.access import MANAGE, MONITOR, access_project
from annotation.errors import ApplicationError
from annotation.navigation import project_tabs, register_project_tab
from annotation.views import page, render_error
from releases import selectors, services
from releases.access import access_release
from releases.downloads import release_download_response
from releases.models import Release

register_project_tab("Releases", "releases:releases", roles=MONITOR, order=70)

PAGE_SIZE = 25


def _context(request, project, **extra):
    return {
        "project": project,
        "project_tabs": project_tabs(project, project.user_roles),
        "is_admin": "admin" in project.user_roles,
        **extra,
    }


@require_GET
@page
def release_list(request, slug: str):
    project = access_project(request.user, slug, MONITOR)
    releases = Paginator(selectors.releases(project), PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "releases/releases.html", _context(request, project, releases=releases))


@require_POST
@page
def release_publish(request, slug: str):
    project = access_project(request.user, slug, MANAGE)
    try:
        release = services.release_publish(
            project=project, user=request.user, notes=request.POST.get("notes", "")
        )
    except ApplicationError as error:
        releases = Paginator(selectors.releases(project), PAGE_SIZE).get_page(1)
        context = _context(
            request, project, releases=releases, error=error, notes=request.POST.get("notes", "")
        )
        return render(request, "releases/releases.html", context, status=error.status)
    messages.success(request, f"v{release.version} is being built; this page updates itself.")
    return redirect("releases:release", slug=project.slug, version=release.version)


@require_GET
@page
def release_detail(request, slug: str, version: int):
    project = access_project(request.user, slug, MONITOR)
    release = access_release(request.user, project, version)
    context = _context(
        request,
        project,
        release=release,
        datasheet=services.release_datasheet(release),
        diff=(release.stats or {}).get("diff"),
        files=(release.manifest or {}).get("files", []),
    )
    if request.htmx:
        return render(request, "releases/release.html#status", context)
    return render(request, "releases/release.html", context)


@require_POST
@page
def release_retry(request, slug: str, version: int):
    """Send a queued (or failed) build to a worker again: what the stuck-release sweep does,
    without waiting for it (an admin's decision, so the attempts are counted afresh)."""
    project = access_project(request.user, slug, MANAGE)
    release = access_release(request.user, project, version)
    services.release_requeue(release_id=release.pk, reset_attempts=True)
    messages.success(request, f"v{release.version} was sent to a worker to build again.")
    return redirect("releases:release", slug=project.slug, version=release.version)


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
