"""Building a release's files in one database snapshot and publishing them (see the package
docstring for the files). A build starts by claiming the release (``releases.services.jobs``);
the final write re-checks the status and the attempt under a row lock, so two concurrent builds
publish once and a superseded attempt's files are discarded."""

from __future__ import annotations

import logging
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from django.core.files import File
from django.db import connection, transaction
from django.db.models import Count, Max, Min
from django.utils import timezone

from annotation import events
from annotation.errors import ApplicationError
from annotation.models import Annotation, Item, Stage
from releases.datasheet import render_datasheet
from releases.hf_card import write_dataset_card
from releases.hf_dataset import dataset_layout_for_kind, dataset_summary, write_dataset_folder
from releases.layouts import STANDARD_FILES, LayoutContext, layout_for_kind
from releases.models import Release
from releases.services.archive import diff_summary, release_archive_rows
from releases.services.figures import (
    datasheet_fields,
    default_citation,
    people_by_role,
    stage_figures,
)
from releases.services.jobs import release_claim
from releases.services.publish import release_content_fingerprint
from releases.services.rows import (
    RELEASED_STATUSES,
    release_annotation_files,
    release_annotation_rows,
    release_item_files,
    release_item_rows,
)
from releases.sinks import Deflated
from releases.writers import FileEntry, Manifest, iter_jsonl, release_diff
from releases.zip_assembly import assemble_zip

logger = logging.getLogger(__name__)
_T = TypeVar("_T")


def _previous(release: Release) -> Release | None:
    return (
        Release.objects.filter(
            project_id=release.project_id,
            status=Release.Status.PUBLISHED,
            version__lt=release.version,
        )
        .order_by("-version")
        .first()
    )


def release_build(*, release_id: int) -> Release:
    """Build the files of a BUILDING release and publish it. Safe to run twice: a release
    already published or failed is returned untouched, and the final write re-checks the status
    under a row lock, so two concurrent builds publish once."""
    release = release_claim(release_id)
    if release is None:
        found = Release.objects.filter(pk=release_id).first()
        if found is None:
            raise ApplicationError(f"There is no release {release_id}.", status=404)
        return found
    workdir = Path(tempfile.mkdtemp(prefix=f"release-{release.pk}-"))
    try:
        return _build(release, workdir)
    except Exception as error:
        logger.exception("release %s failed", release.pk)
        message = (
            error.message
            if isinstance(error, ApplicationError)
            else (f"The build stopped on an internal error ({type(error).__name__}: {error}).")
        )
        # Only while this attempt is still the current one (see _publish_built).
        Release.objects.filter(
            pk=release.pk, status=Release.Status.BUILDING, started_at=release.started_at
        ).update(status=Release.Status.FAILED, message=message[:2000])
        release.refresh_from_db()
        return release
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def _one_snapshot() -> Iterator[str | None]:
    """Every read inside sees the database as of one moment, so that annotation going on during
    a build lands in all of a release's files or in none. PostgreSQL: one REPEATABLE READ,
    READ ONLY transaction (writers are not blocked), whose snapshot is exported: its id is
    yielded, for a second connection to read the same moment (``_in_snapshot``). SQLite: one
    transaction (its writers wait for the build; the embedded default is for demos and small
    studies). Inside an outer transaction (tests) the outer one's snapshot is used as it is,
    and nothing is exported (None: what it holds is not visible to another connection)."""
    if connection.in_atomic_block:
        yield None
        return
    with transaction.atomic():
        snapshot = None
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                cursor.execute("SELECT pg_export_snapshot()")
                snapshot = cursor.fetchone()[0]
        yield snapshot


_SNAPSHOT_ID = re.compile(r"^[0-9A-F]+-[0-9A-F]+-[0-9]+$", re.IGNORECASE)


def _in_snapshot(snapshot: str, work: Callable[[], _T]) -> _T:
    """Run ``work`` on this thread's own connection, in a transaction that reads the exported
    ``snapshot`` (PostgreSQL's ``SET TRANSACTION SNAPSHOT``: the same moment as the build's
    own transaction, which stays open meanwhile); the connection is closed after."""
    if not _SNAPSHOT_ID.match(snapshot):  # it is inlined: SET takes no parameters
        raise ValueError(f"not a snapshot id: {snapshot!r}")
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cursor.execute(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
            return work()
    finally:
        connection.close()


def _build(release: Release, workdir: Path) -> Release:
    with _one_snapshot() as snapshot:
        prefix, zip_path, archive, manifest, stats = _write_files(release, workdir, snapshot)
    return _publish_built(release, prefix, zip_path, archive, manifest, stats)


def _release_name(path: Path, files: Path) -> str | None:
    """A layout file's name in the release: its path under the release folder, sub-folders
    included ("D1/D1_L1.json"); None when it lies outside."""
    try:
        return (files / path).resolve().relative_to(files.resolve()).as_posix()
    except ValueError:
        return None


def _write_files(release: Release, workdir: Path, snapshot: str | None = None):
    """Write every file of the release into ``workdir`` and zip them (all reads here: see
    _one_snapshot). With an exported ``snapshot`` the annotation files (PostgreSQL's work) are
    written on a second connection while this one writes the item files (Python's work)."""
    started = time.monotonic()
    project = release.project
    stages = list(Stage.objects.filter(project=project).order_by("position"))
    prefix = f"{project.slug}-v{release.version}"
    files = workdir / prefix
    files.mkdir()
    manifest = Manifest()
    if snapshot is None:
        item_files = release_item_files(project, stages, files)
        annotation_files = release_annotation_files(project, files)
    else:
        with ThreadPoolExecutor(1, thread_name_prefix="release-annotations") as pool:
            pending = pool.submit(
                _in_snapshot, snapshot, lambda: release_annotation_files(project, files)
            )
            item_files = release_item_files(project, stages, files)
            annotation_files = pending.result()
    for written in item_files.entries + annotation_files.entries:
        manifest.add(written)
    items, annotations = item_files.entries[0], annotation_files.entries[0]
    deflated = {**item_files.deflated, **annotation_files.deflated}
    layout = layout_for_kind(project.kind)
    if layout is not None:
        context = LayoutContext(
            project=project,
            version=release.version,
            out_dir=files,
            items=lambda: release_item_rows(project),
            annotations=lambda: release_annotation_rows(project),
        )
        for produced in layout(context):
            entry = produced if isinstance(produced, FileEntry) else None
            path = files / produced.name if isinstance(produced, FileEntry) else Path(produced)
            name = _release_name(path, files)
            if name is None or name in STANDARD_FILES or not path.is_file():
                raise ApplicationError(
                    f"The {project.kind} layout produced {str(produced)[-80:]!r}, which is not a "
                    f"new file in the release folder."
                )
            if entry is not None:
                manifest.add(entry)
            else:
                manifest.add_file(path, name=name)
    # The Hugging Face dataset folder, from the files written so far (releases/hf_dataset.py).
    dataset = write_dataset_folder(files, dataset_layout_for_kind(project.kind))
    for entry in dataset.entries:
        manifest.add(entry)
    diff = None
    previous = _previous(release)
    if previous is not None and previous.archive:
        changes = release_diff(release_archive_rows(previous), iter_jsonl(files / "items.jsonl"))
        diff = diff_summary(previous.version, changes)
    now = timezone.now()
    figures = stage_figures(project, stages, computed_at=now)
    span = Annotation.objects.filter(item_stage__stage__project=project).aggregate(
        first=Min("created_at"), last=Max("created_at")
    )
    description = (project.description or "").strip()
    if span["first"] is not None:
        description += (
            f"\n\nAnnotations collected from {span['first']:%Y-%m-%d} to {span['last']:%Y-%m-%d}."
        )
    if release.notes:
        description += f"\n\nRelease notes: {release.notes}"
    if diff is not None:
        description += (
            f"\n\nChanges since v{diff['previous_version']}: {diff['added']:,} items added, "
            f"{diff['removed']:,} removed, {diff['changed']:,} changed."
        )
    sheet = {
        "name": project.name,
        "version": f"v{release.version}",
        "description": description.strip(),
        "created_at": now,
        "license": project.license,
        "citation": project.citation or default_citation(project, release.version, now.year),
        "annotators_by_role": people_by_role(project),
        "stages": figures,
        "fields": datasheet_fields(project, stages),
        "files": manifest.to_dict()["files"],
        "items": items.rows,
    }
    datasheet = render_datasheet(sheet)
    (files / "README.md").write_text(datasheet, encoding="utf-8")
    manifest.add_file(files / "README.md")
    if dataset.configs:
        manifest.add(write_dataset_card(files, dataset, sheet, datasheet))
    sums = files / "SHA256SUMS"
    sums.write_text(manifest.sha256sums(), encoding="utf-8")
    manifest_entry = manifest.write(files / "manifest.json")
    members: dict[str, Deflated | Path] = {
        f"{prefix}/{name}": deflated.get(name, files / name) for name in manifest.entries
    }
    members[f"{prefix}/manifest.json"] = files / "manifest.json"
    members[f"{prefix}/SHA256SUMS"] = sums
    zip_path = workdir / f"{prefix}.zip"
    archive = assemble_zip(members, zip_path)
    by_status = dict(
        Item.objects.filter(project=project, status__in=RELEASED_STATUSES)
        .values_list("status")
        .annotate(count=Count("pk"))
    )
    stats = {
        "content": release_content_fingerprint(project),
        "items": items.rows,
        "annotations": annotations.rows,
        "items_by_status": by_status,
        "stages": figures,
        "people_by_role": people_by_role(project),
        "diff": diff,
        "build_seconds": round(time.monotonic() - started, 3),
        "bytes": archive.bytes,
        "manifest_sha256": manifest_entry.sha256,
        "dataset": dataset_summary(dataset),
    }
    return prefix, zip_path, archive, manifest, stats


def _publish_built(release: Release, prefix: str, zip_path: Path, archive, manifest, stats):
    with transaction.atomic():
        locked = Release.objects.select_for_update().get(pk=release.pk)
        if locked.status != Release.Status.BUILDING:
            return locked  # another build finished first
        if locked.started_at != release.started_at:
            # Superseded: this attempt was taken for dead (or given up and published again)
            # and another one has claimed the version since. Its files are the older
            # snapshot; the current attempt publishes (tests/releases/test_services_sweeps.py).
            logger.warning("release %s: a superseded build attempt finished; discarded", locked.pk)
            return locked
        with open(zip_path, "rb") as handle:
            locked.archive.save(f"{prefix}.zip", File(handle, name=f"{prefix}.zip"), save=False)
        locked.sha256 = archive.sha256
        locked.manifest = manifest.to_dict()
        locked.stats = stats
        locked.status = Release.Status.PUBLISHED
        locked.published_at = timezone.now()
        locked.message = ""
        locked.save(
            update_fields=[
                "archive",
                "sha256",
                "manifest",
                "stats",
                "status",
                "published_at",
                "message",
            ]  # fmt: skip
        )
        events.project_event(
            "release.published",
            project_id=locked.project_id,
            data={
                "release": {
                    "id": locked.pk,
                    "version": locked.version,
                    "sha256": locked.sha256,
                    "published_at": locked.published_at.isoformat(),
                }
            },
        )
        return locked
