"""The download of a release's archive, shared by the release page and the API."""

from __future__ import annotations

from django.http import FileResponse

from annotation.errors import Conflict
from releases.models import Release


def release_download_response(release: Release) -> FileResponse:
    """Stream a published release's zip (constant memory), with its SHA-256 in a header."""
    if release.status != Release.Status.PUBLISHED or not release.archive:
        raise Conflict(
            f"v{release.version} is {release.get_status_display().lower()}; only published "
            f"releases can be downloaded.",
            {"status": release.status},
        )
    response = FileResponse(
        release.archive.open("rb"),
        as_attachment=True,
        filename=f"{release.project.slug}-v{release.version}.zip",
        content_type="application/zip",
    )
    response["X-Checksum-SHA256"] = release.sha256
    return response
