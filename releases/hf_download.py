"""The release page's "dataset folder" download: the release's ``hf_dataset/`` files, read out of
its archive into a zip of their own (``<slug>-v<n>-dataset/README.md``, ``…/data/…``) — the
folder as ``datasets.load_dataset`` or ``huggingface-cli upload`` takes it. Streamed member by
member into a temporary file (memory: one block), deleted when the response is closed."""

from __future__ import annotations

import shutil
import tempfile
import zipfile

from django.http import FileResponse

from annotation.errors import Conflict
from releases.hf_dataset import FOLDER
from releases.models import Release

CHUNK = 1 << 20


def release_dataset_zip_response(release: Release) -> FileResponse:
    """The dataset folder of a published release as a zip (Parquet stored as it is: already
    compressed). Conflict when the release has none (published before releases held one)."""
    names = [
        entry["name"]
        for entry in (release.manifest or {}).get("files", [])
        if entry["name"].startswith(f"{FOLDER}/")
    ]
    if release.status != Release.Status.PUBLISHED or not release.archive or not names:
        raise Conflict(
            f"v{release.version} has no dataset folder to download"
            + (
                "; publish a new version to have one."
                if release.status == Release.Status.PUBLISHED
                else f": it is {release.get_status_display().lower()}."
            )
        )
    top = f"{release.project.slug}-v{release.version}-dataset"
    wanted = set(names)
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the response
    with (
        release.archive.open("rb") as raw,
        zipfile.ZipFile(raw) as archive,
        zipfile.ZipFile(spool, "w") as out,
    ):
        for member in sorted(archive.namelist()):
            name = member.split("/", 1)[-1]
            if name not in wanted:
                continue
            target = zipfile.ZipInfo(f"{top}/{name[len(FOLDER) + 1 :]}", (1980, 1, 1, 0, 0, 0))
            target.external_attr = 0o644 << 16
            target.compress_type = (
                zipfile.ZIP_STORED if name.endswith(".parquet") else zipfile.ZIP_DEFLATED
            )
            with archive.open(member) as source, out.open(target, "w", force_zip64=True) as sink:
                shutil.copyfileobj(source, sink, CHUNK)
    spool.seek(0)
    return FileResponse(
        spool, as_attachment=True, filename=f"{top}.zip", content_type="application/zip"
    )
