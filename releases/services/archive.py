"""Reading published releases: the rows of a file in a release's archive, its datasheet, and the
diff of one published version against an earlier one (memory one digest per item)."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

from annotation.errors import ApplicationError, Conflict
from releases.models import Release
from releases.writers import (
    release_diff,
)

DIFF_IDS_KEPT = 200


def release_earlier_versions(release: Release) -> list[int]:
    """The published versions before ``release``, newest first: what it can be compared with."""
    return list(
        Release.objects.filter(
            project_id=release.project_id,
            status=Release.Status.PUBLISHED,
            version__lt=release.version,
        )
        .order_by("-version")
        .values_list("version", flat=True)
    )


def release_compare(*, release: Release, against: Any) -> dict[str, Any]:
    """The diff of a published release against an earlier published version of its project
    (``against``: its number, as typed), read from both archives' items.jsonl
    (``release_diff``: memory one digest per item); the same shape as the diff a build stores
    against the previous version, which is returned as stored. ApplicationError naming the
    versions there are otherwise."""
    if release.status != Release.Status.PUBLISHED or not release.archive:
        raise Conflict(f"v{release.version} is not published; only published releases compare.")
    earlier = release_earlier_versions(release)
    text = str(against).strip().lstrip("vV")
    if not text.isdigit() or int(text) not in earlier:
        raise ApplicationError(
            f"Compare v{release.version} with one of its earlier published versions"
            f" ({', '.join(f'v{number}' for number in earlier) or 'there is none'}).",
            {"against": str(against)[:20]},
        )
    stored = (release.stats or {}).get("diff")
    if stored is not None and stored.get("previous_version") == int(text):
        return stored
    previous = Release.objects.get(project_id=release.project_id, version=int(text))
    changes = release_diff(release_archive_rows(previous), release_archive_rows(release))
    return diff_summary(previous.version, changes)


def diff_summary(previous_version: int, changes) -> dict[str, Any]:
    return {
        "previous_version": previous_version,
        "added": len(changes.added),
        "removed": len(changes.removed),
        "changed": len(changes.changed),
        "unchanged": changes.unchanged,
        "ids": {
            "added": changes.added[:DIFF_IDS_KEPT],
            "removed": changes.removed[:DIFF_IDS_KEPT],
            "changed": changes.changed[:DIFF_IDS_KEPT],
        },
    }


def release_archive_rows(release: Release, name: str = "items.jsonl") -> Iterator[dict[str, Any]]:
    """Stream the rows of one JSONL file of a published release from its archive."""
    with release.archive.open("rb") as raw, zipfile.ZipFile(raw) as archive:
        member = next(
            (entry for entry in archive.namelist() if entry.rsplit("/", 1)[-1] == name), None
        )
        if member is None:
            raise ApplicationError(f"v{release.version} has no {name}.")
        with archive.open(member) as handle:
            for line in io.TextIOWrapper(handle, encoding="utf-8"):
                if line.strip():
                    yield json.loads(line)


def release_datasheet(release: Release) -> str:
    """The README.md of a published release, read from its archive."""
    if release.status != Release.Status.PUBLISHED or not release.archive:
        return ""
    with release.archive.open("rb") as raw, zipfile.ZipFile(raw) as archive:
        member = next(
            name for name in archive.namelist() if name.split("/", 1)[-1] == "README.md"
        )  # the datasheet, not the dataset folder's card (hf_dataset/README.md)
        return archive.read(member).decode("utf-8")
