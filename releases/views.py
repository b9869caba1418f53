"""Release pages: admins publish; researchers and admins read and download.

Each view: access_project with the roles it needs, one service or selector, one page template
(htmx requests get its named partial). The build panel polls with htmx while the release builds.
"""

from __future__ import annotations

from django.contrib import messages
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation.access import MANAGE, MONITOR, ProjectAccess, access_project
from annotation.errors import ApplicationError
from annotation.navigation import project_tabs
from annotation.web import page, page_of, render_error
from releases import selectors, services
from releases.access import access_release
from releases.downloads import release_download_response, release_file_response
from releases.hf_download import release_dataset_zip_response
from releases.hf_push import hub_dataset_url, release_push_request
from releases.models import Release

PAGE_SIZE = 25


def _context(request, access: ProjectAccess, **extra):
    project = access.project
    return {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "is_admin": access.is_admin,
        **extra,
    }


@require_GET
@page
def release_list(request, slug: str):
    access = access_project(request.user, slug, MONITOR)
    project = access.project
    releases = page_of(request, selectors.releases(project), PAGE_SIZE)
    context = _context(
        request, access, releases=releases, next_version=services.release_next_version(project)
    )
    return render(request, "releases/releases.html", context)


@require_http_methods(["GET", "POST"])
@page
def release_publish(request, slug: str):
    """Publishing takes two steps: the form (or a GET) shows the confirmation page, which
    states what would be published (``services.release_publish_preview``); only its POST, with
    ``confirm`` and the version it showed, publishes."""
    access = access_project(request.user, slug, MANAGE)
    project = access.project
    notes = request.POST.get("notes", "")
    if request.method == "GET" or request.POST.get("confirm") != "publish":
        preview = services.release_publish_preview(project)
        context = _context(request, access, preview=preview, notes=notes)
        return render(request, "releases/publish.html", context)
    try:
        version = int(request.POST.get("version", ""))
    except ValueError:
        raise ApplicationError(
            "Confirm a version to publish.", {"version": request.POST.get("version", "")[:20]}
        ) from None
    try:
        release = services.release_publish(
            project=project, user=request.user, notes=notes, version=version
        )
    except ApplicationError as error:
        preview = services.release_publish_preview(project)
        context = _context(request, access, preview=preview, notes=notes, error=error)
        return render(request, "releases/publish.html", context, status=error.status)
    messages.success(request, f"v{release.version} is being built; this page updates itself.")
    return redirect("releases:release", slug=project.slug, version=release.version)


@require_GET
@page
def release_detail(request, slug: str, version: int):
    access = access_project(request.user, slug, MONITOR)
    project = access.project
    release = access_release(request.user, project, version)
    diff = (release.stats or {}).get("diff")
    against = request.GET.get("against", "")
    if against:
        diff = services.release_compare(release=release, against=against)
    earlier = (
        services.release_earlier_versions(release)
        if release.status == Release.Status.PUBLISHED
        else []
    )
    context = _context(
        request,
        access,
        release=release,
        datasheet=services.release_datasheet(release),
        diff=diff,
        earlier=earlier,
        files=(release.manifest or {}).get("files", []),
        hub_url=hub_dataset_url(release),
    )
    if request.htmx:
        return render(request, "releases/release.html#status", context)
    return render(request, "releases/release.html", context)


@require_POST
@page
def release_retry(request, slug: str, version: int):
    """Send a queued (or failed) build to a worker again: what the stuck-release sweep does,
    without waiting for it (an admin's decision, so the attempts are counted afresh)."""
    project = access_project(request.user, slug, MANAGE).project
    release = access_release(request.user, project, version)
    services.release_requeue(release_id=release.pk, reset_attempts=True)
    messages.success(request, f"v{release.version} was sent to a worker to build again.")
    return redirect("releases:release", slug=project.slug, version=release.version)


@require_GET
@page
def release_download(request, slug: str, version: int):
    """The release's zip; with ``?file=<name>`` one file of it, as its manifest names it (the
    Parquet copies are offered this way on the release page)."""
    project = access_project(request.user, slug, MONITOR).project
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
    name = request.GET.get("file", "")
    if name:
        return release_file_response(release, name[:300])
    return release_download_response(release)


# -- the Hugging Face dataset folder (releases/hf_download.py, releases/hf_push.py) ------------


@require_GET
@page
def release_dataset_download(request, slug: str, version: int):
    """The release's Hugging Face dataset folder as a zip."""
    project = access_project(request.user, slug, MONITOR).project
    release = access_release(request.user, project, version)
    return release_dataset_zip_response(release)


@require_POST
@page
def release_push_hub(request, slug: str, version: int):
    """Push the release's dataset folder to a Hub repository (admins): a worker pushes it; the
    page shows the status. A refused request is shown at the form, in words."""
    access = access_project(request.user, slug, MANAGE)
    project = access.project
    release = access_release(request.user, project, version)
    repo_id = request.POST.get("repo_id", "")[:200]
    try:
        release = release_push_request(release=release, repo_id=repo_id)
    except ApplicationError as error:
        context = _context(
            request,
            access,
            release=release,
            datasheet=services.release_datasheet(release),
            diff=(release.stats or {}).get("diff"),
            earlier=services.release_earlier_versions(release)
            if release.status == Release.Status.PUBLISHED
            else [],
            files=(release.manifest or {}).get("files", []),
            hub_url=hub_dataset_url(release),
            hub_error=error,
            hub_repo_id=repo_id,
        )
        return render(request, "releases/release.html", context, status=error.status)
    messages.success(
        request, f"v{release.version} is being pushed to {release.hub_repo_id}; this page updates."
    )
    return redirect("releases:release", slug=project.slug, version=release.version)
