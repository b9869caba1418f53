"""An uploaded export as the readers take it: one Label Studio JSON file, or a Potato output
folder as a zip (or its files uploaded together). The checksum of the upload is the import's
key (``interop.services``: a file imported into a stage once)."""

from __future__ import annotations

import hashlib
import io
import zipfile
from collections.abc import Mapping

from annotation.errors import ApplicationError
from interop.labelstudio import label_studio_read
from interop.potato import potato_read
from interop.sources import SourceExport

#: What an upload may unpack to (a zip bomb stops here, named).
MAX_UNPACKED = 200 * 1024 * 1024
TOOLS = {"label_studio": "Label Studio (JSON export)", "potato": "Potato (annotation output)"}


def checksum(files: Mapping[str, bytes]) -> str:
    """SHA-256 over the files' names and contents, in name order."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return digest.hexdigest()


def unzip(name: str, content: bytes) -> dict[str, bytes]:
    """A zip's files by path (folders left out); ApplicationError for a broken or huge one."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(content))
    except zipfile.BadZipFile:
        raise ApplicationError(f"{name} is not a zip file.", {"file": name}) from None
    if sum(info.file_size for info in archive.infolist()) > MAX_UNPACKED:
        raise ApplicationError(
            f"{name} unpacks to more than {MAX_UNPACKED // 2**20} MB.", {"file": name}
        )
    return {
        info.filename: archive.read(info)
        for info in archive.infolist()
        if not info.is_dir() and not info.filename.startswith("__MACOSX/")
    }


def export_read(tool: str, files: Mapping[str, bytes]) -> tuple[SourceExport, str]:
    """(the export read, its key) from uploaded ``files`` (name → content; a single ``.zip`` is
    unpacked). ApplicationError naming the problems."""
    if tool not in TOOLS:
        raise ApplicationError(f"Unknown tool {tool!r}.", {"tool": tool})
    if not files:
        raise ApplicationError("Choose the export to upload.", {"file": "required"})
    key = f"{tool}:{checksum(files)}"
    if len(files) == 1:
        name, content = next(iter(files.items()))
        if name.lower().endswith(".zip"):
            files = unzip(name, content)
    if tool == "label_studio":
        json_files = [name for name in files if name.lower().endswith(".json")]
        if len(json_files) != 1:
            raise ApplicationError(
                "A Label Studio export is one JSON file (Export → JSON in Label Studio).",
                {"file": "expected one .json file"},
            )
        return label_studio_read(files[json_files[0]], filename=json_files[0]), key
    return potato_read(files, name=", ".join(sorted(files))[:200]), key
