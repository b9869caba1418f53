"""The interop page (CONTRIBUTING.md, "Thin views"; the project's admins): upload a Label
Studio or Potato export into an inactive stage, and download the project as Label Studio
tasks."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import StreamingHttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotation.access import ProjectAccess
from annotation.errors import ApplicationError
from annotation.forms import form_error
from annotation.navigation import project_tabs
from annotation.web import page
from interop import selectors, services
from interop.access import access_interop_project, access_interop_stage
from interop.forms import InteropImportForm
from interop.uploads import export_read


def _context(access: ProjectAccess, **extra: Any) -> dict[str, Any]:
    return {
        "project": access.project,
        "project_tabs": project_tabs(access.project, access.roles),
        "stages": selectors.import_stages(access.project),
        **extra,
    }


@require_http_methods(["GET", "POST"])
@page
def interop_import(request, slug: str):
    """The upload form (POST imports, then back here with what was written)."""
    access = access_interop_project(request.user, slug)
    project = access.project
    stages = selectors.import_stages(project)
    if request.method == "POST":
        form = InteropImportForm(request.POST, request.FILES, stages=stages)
        try:
            if not form.is_valid():
                raise form_error(form)
            stage = access_interop_stage(project, form.cleaned_data["stage"])
            export, key = export_read(form.cleaned_data["tool"], form.files_read())
            result = services.interop_import(
                project=project,
                stage=stage,
                export=export,
                field=form.cleaned_data["field"] or None,
                key=key,
            )
        except ApplicationError as error:
            problems = (error.extra or {}).get("problems") or []
            context = _context(access, error=error, problems=problems, posted=request.POST)
            return render(request, "interop/import.html", context, status=error.status)
        messages.success(request, services.result_summary(result))
        return redirect("interop:import", slug=project.slug)
    return render(request, "interop/import.html", _context(access, posted={}))


@require_GET
@page
def label_studio_export(request, slug: str):
    """The project's items and decisions as Label Studio tasks (a JSON download, streamed)."""
    access = access_interop_project(request.user, slug)
    response = StreamingHttpResponse(
        selectors.label_studio_json(access.project), content_type="application/json"
    )
    response["Content-Disposition"] = (
        f'attachment; filename="{access.project.slug}-label-studio.json"'
    )
    return response
