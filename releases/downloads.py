"""The downloads of a release: its archive, shared by the release page and the API, and one file
of it (``?file=items.parquet`` on the release page's download link)."""

from __future__ import annotations

import zipfile
from collections.abc import Iterator

from django.http import FileResponse, StreamingHttpResponse
from django.utils.http import content_disposition_header

from annotation.errors import ApplicationError, Conflict
from releases.models import Release

CHUNK = 1 << 20
#: The media type of each file a release holds, by suffix (anything else: bytes).
CONTENT_TYPES = {
    ".parquet": "application/vnd.apache.parquet",
    ".jsonl": "application/jsonl",
    ".csv": "text/csv; charset=utf-8",
    ".json": "application/json",
    ".md": "text/markdown; charset=utf-8",
}


def _published(release: Release) -> None:
    if release.status != Release.Status.PUBLISHED or not release.archive:
        raise Conflict(
            f"v{release.version} is {release.get_status_display().lower()}; only published "
            f"releases can be downloaded.",
            {"status": release.status},
        )


def release_download_response(release: Release) -> FileResponse:
    """Stream a published release's zip (constant memory), with its SHA-256 in a header."""
    _published(release)
    response = FileResponse(
        release.archive.open("rb"),
        as_attachment=True,
        filename=f"{release.project.slug}-v{release.version}.zip",
        content_type="application/zip",
    )
    response["X-Checksum-SHA256"] = release.sha256
    return response


def _member(release: Release, name: str) -> Iterator[bytes]:
    """The bytes of the archive's file ``name`` (under the archive's one top folder)."""
    with release.archive.open("rb") as raw, zipfile.ZipFile(raw) as archive:
        member = next(entry for entry in archive.namelist() if entry.split("/", 1)[-1] == name)
        with archive.open(member) as handle:
            while chunk := handle.read(CHUNK):
                yield chunk


def release_file_response(release: Release, name: str) -> StreamingHttpResponse:
    """Stream one file of a published release, read out of its archive (constant memory),
    named as in its manifest (``items.parquet``, ``D1/D1_L1.json``), with its SHA-256 and size
    from the manifest. A name the manifest does not list is a 404 naming the files there are."""
    _published(release)
    files = {entry["name"]: entry for entry in (release.manifest or {}).get("files", [])}
    entry = files.get(name)
    if entry is None:
        raise ApplicationError(
            f"v{release.version} has no file {name[:80]!r}; its files: {', '.join(sorted(files))}.",
            {"file": name[:80]},
            status=404,
        )
    suffix = "." + name.rsplit(".", 1)[-1] if "." in name else ""
    response = StreamingHttpResponse(
        _member(release, name),
        content_type=CONTENT_TYPES.get(suffix, "application/octet-stream"),
    )
    filename = f"{release.project.slug}-v{release.version}-{name.replace('/', '-')}"
    response["Content-Disposition"] = content_disposition_header(True, filename)
    response["Content-Length"] = str(entry["bytes"])
    response["X-Checksum-SHA256"] = entry["sha256"]
    return response
