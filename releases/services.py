"""Releases: publish a version of a project, build its files in a Celery task, never change it.

``release_publish`` reserves the next version number (under a lock on the project row, backed by
the unique (project, version) constraint) and enqueues ``releases.tasks.build_release`` after
commit. ``release_build`` streams the project's finished items (accepted, and rejected-but-kept)
with their resolution in every stage, and their annotations under pseudonyms, into:

* ``items.jsonl`` / ``items.csv`` — one row per item: content, status, and per stage the
  resolved value, status, outcome, vote counts and the share of votes for the decided value;
  names in payloads removed or pseudonymised by the kind's identity rule
  (``releases.identities``), as in every other file of the release;
* ``annotations.jsonl`` / ``annotations.csv`` — one row per annotation, raters as ``R0001``…
  (pseudonyms stable within one release; identities never leave the database);
* the kind's own layout (``releases.layouts``), e.g. ExpliCa's CSV for ratings;
* ``README.md`` — the datasheet (``render_datasheet``): counts of people by role, items in and
  out of every stage, agreement per stage with its CI computed during the build over exactly
  the released items (``_agreement``; its UTC time stated), license, citation;
* ``manifest.json`` and ``SHA256SUMS`` — SHA-256 and size of every file;

zipped deterministically into one archive whose SHA-256 is stored on the Release. A diff against
the previous published version (items added, removed, changed) is stored in ``stats["diff"]``.

Memory stays flat in the number of rows: on PostgreSQL the annotation files are written by one
``COPY (SELECT …) TO STDOUT`` each, for every kind (``copy_export``); on SQLite, and for items,
rows are read in keyset-paginated chunks and written one at a time; the diff keeps one 16-byte
digest per item id. Every CSV cell a spreadsheet would run as a formula is neutralised
(``releases.writers.spreadsheet_safe`` and its SQL spelling).
"""

from __future__ import annotations

import io
import json
import logging
import shutil
import tempfile
import time
import zipfile
from collections import defaultdict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.files import File
from django.db import connection, transaction
from django.db.models import Count, Max, Min, Q
from django.utils import timezone

from annotation import services
from annotation.errors import ApplicationError, Conflict
from annotation.kinds import KINDS
from annotation.kinds.base import payload_path
from annotation.models import Annotation, Item, ItemStage, Project, Resolution, Stage
from imports.core import schema_for_kind
from releases.copy_export import copy_annotations_csv, copy_annotations_jsonl
from releases.datasheet import render_datasheet
from releases.identities import identity_rule, salt_for
from releases.layouts import STANDARD_FILES, LayoutContext, layout_for_kind
from releases.models import Release
from releases.pseudonyms import RaterPseudonyms
from releases.writers import (
    FileEntry,
    Manifest,
    build_zip,
    csv_timestamp,
    iter_jsonl,
    release_diff,
    write_csv,
    write_jsonl,
)

logger = logging.getLogger(__name__)

RELEASED_STATUSES = (Item.Status.ACCEPTED, Item.Status.REJECTED)
ITEM_CHUNK = 2000
ANNOTATION_CHUNK = 10_000
DIFF_IDS_KEPT = 200
ITEM_COLUMNS = ["external_id", "status", "purpose", "group", "source", "version"]
STAGE_FIELDS = ["state", "value", "status", "outcome", "n_annotations", "votes", "agreement",
                "adjudicated"]  # fmt: skip
ANNOTATION_COLUMNS = ["external_id", "stage", "rater", "value", "payload", "seconds_spent",
                      "created_at", "item_version"]  # fmt: skip
#: The agreement figure a datasheet leads with, first found (``stage_agreement``'s metric
#: names): κ for categorical stages, α (interval) for numeric ones.
METRIC_PREFERENCE = ("fleiss_kappa", "cohen_kappa", "krippendorff_alpha_interval",
                     "krippendorff_alpha_nominal", "krippendorff_alpha_ordinal", "icc",
                     "percent_agreement")  # fmt: skip


# --- Publishing ---------------------------------------------------------------------------


@transaction.atomic
def release_publish(
    *,
    project: Project,
    user: AbstractBaseUser | None,
    notes: str = "",
    version: int | None = None,
) -> Release:
    """Reserve the next version of ``project`` and build it in the background.

    ``version`` (optional) must be the next number: asking for a version already published is a
    409 (releases are immutable), as is publishing while another version is still building. A
    failed build's version is reused by the next publish.
    """
    locked = Project.objects.select_for_update().get(pk=project.pk)
    notes = (notes or "").strip()
    if len(notes) > 5000:
        raise ApplicationError(
            "The notes are too long (5,000 characters at most).", {"notes": 5000}
        )
    releases = Release.objects.filter(project=locked)
    refusal = release_publish_refusal(locked)
    if refusal is not None:
        raise refusal
    last = releases.order_by("-version").first()
    retry = last if last is not None and last.status == Release.Status.FAILED else None
    next_version = release_next_version(locked)
    if version is not None and version != next_version:
        if releases.filter(version=version, status=Release.Status.PUBLISHED).exists():
            raise Conflict(
                f"v{version} of {locked.name} is already published, and a published release "
                f"never changes. Publish v{next_version} instead.",
                {"version": version, "next_version": next_version},
            )
        raise ApplicationError(
            f"The next version of {locked.name} is v{next_version}, not v{version}.",
            {"version": version, "next_version": next_version},
        )
    if retry is not None:
        release = retry
        release.status = Release.Status.BUILDING
        release.notes, release.created_by, release.message = notes, user, ""
        release.created_at, release.started_at, release.attempts = timezone.now(), None, 0
        release.save(
            update_fields=[
                "status",
                "notes",
                "created_by",
                "message",
                "created_at",
                "started_at",
                "attempts",
            ]  # fmt: skip
        )
    else:
        release = Release.objects.create(
            project=locked,
            version=next_version,
            status=Release.Status.BUILDING,
            notes=notes,
            created_by=user if user is not None and user.is_authenticated else None,
        )
    from releases.tasks import build_release

    services.enqueue_on_commit(build_release, release.pk)
    return release


def release_next_version(project: Project) -> int:
    """The number the next publish takes: one after the last version, or the last one again
    when its build failed (a failed version's number is reused)."""
    last = Release.objects.filter(project=project).order_by("-version").first()
    if last is None:
        return 1
    return last.version if last.status == Release.Status.FAILED else last.version + 1


def release_publish_refusal(project: Project) -> ApplicationError | None:
    """Why ``project`` cannot publish now (another version still building, no finished items),
    or None: the one check behind ``release_publish`` and its confirmation page."""
    building = Release.objects.filter(project=project, status=Release.Status.BUILDING).first()
    if building is not None:
        return Conflict(
            f"v{building.version} of {project.name} is still being built; wait until it is "
            f"published or has failed.",
            {"version": building.version},
        )
    if not Item.objects.filter(project=project, status__in=RELEASED_STATUSES).exists():
        return ApplicationError(
            f"{project.name} has no finished items yet (accepted or kept-rejected); a release "
            f"would be empty.",
            {"items": 0},
        )
    return None


def release_publish_preview(project: Project) -> dict[str, Any]:
    """What publishing now would release, for the confirmation page: the version, the items
    by status, the annotations of those items (as ``release_annotation_rows`` selects them),
    the files (the standard ones, and the benchmark layout's as the last published version
    had them), the version its diff is taken against, and ``refusal`` (an ApplicationError)
    when it cannot be published now. Counts are as of this moment; the build reads them again
    in one snapshot."""
    released = Item.objects.filter(project=project, status__in=RELEASED_STATUSES)
    by_status = dict(released.values_list("status").annotate(count=Count("pk")))
    annotations = Annotation.objects.filter(
        item_stage__stage__project=project, item_stage__item__status__in=RELEASED_STATUSES
    ).count()
    previous = (
        Release.objects.filter(project=project, status=Release.Status.PUBLISHED)
        .order_by("-version")
        .first()
    )
    layout_files = []
    if layout_for_kind(project.kind) is not None and previous is not None:
        layout_files = sorted(
            entry["name"]
            for entry in (previous.manifest or {}).get("files", [])
            if entry["name"] not in STANDARD_FILES
        )
    return {
        "version": release_next_version(project),
        "items": sum(by_status.values()),
        "items_by_status": {
            "accepted": by_status.get(Item.Status.ACCEPTED, 0),
            "rejected and kept": by_status.get(Item.Status.REJECTED, 0),
        },
        "annotations": annotations,
        "files": list(STANDARD_FILES),
        "has_layout": layout_for_kind(project.kind) is not None,
        "layout_files": layout_files,
        "previous": previous,
        "refusal": release_publish_refusal(project),
    }


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
    return _diff_summary(previous.version, changes)


def _diff_summary(previous_version: int, changes) -> dict[str, Any]:
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


# --- Rows ---------------------------------------------------------------------------------


def _stage_result(state: str, resolution: Mapping[str, Any] | None) -> dict[str, Any]:
    result: dict[str, Any] = {"state": state}
    if resolution is None:
        return result
    votes = dict(sorted((resolution["votes"] or {}).items()))
    total = sum(count for count in votes.values() if isinstance(count, int | float))
    top = max(votes.values()) if votes else None
    result.update(
        value=resolution["value"],
        status=resolution["status"],
        outcome=resolution["outcome"],
        n_annotations=resolution["n_annotations"],
        votes=votes,
        agreement=round(top / total, 6) if total and top is not None else None,
        adjudicated=resolution["status"] == Resolution.Status.ADJUDICATED,
    )
    return result


def release_item_rows(project: Project) -> Iterator[dict[str, Any]]:
    """The released items of a project, in creation order, with their result in every stage.
    Keyset-paginated: two queries per ``ITEM_CHUNK`` items, memory flat in the item count."""
    slugs = dict(Stage.objects.filter(project=project).values_list("pk", "slug"))
    identities, salt = identity_rule(project.kind), salt_for(project)
    # Keyset on the primary key: an index range scan per chunk whatever the project's size
    # (ordering by external_id made the planner re-sort the remaining items for every chunk).
    base = Item.objects.filter(project=project, status__in=RELEASED_STATUSES).order_by("pk")
    last = 0
    while True:
        chunk = list(
            base.filter(pk__gt=last).values_list(
                "pk", "external_id", "status", "purpose", "group", "source", "version", "payload"
            )[:ITEM_CHUNK]
        )
        if not chunk:
            return
        results: dict[int, dict[str, Any]] = defaultdict(dict)
        stage_rows = (
            ItemStage.objects.filter(item_id__in=[row[0] for row in chunk])
            .order_by("stage__position")
            .values_list(
                "item_id",
                "stage_id",
                "state",
                "resolution__pk",
                "resolution__value",
                "resolution__status",
                "resolution__outcome",
                "resolution__n_annotations",
                "resolution__votes",
            )
        )
        for item_id, stage_id, state, res_pk, value, status, outcome, n, votes in stage_rows:
            resolution = (
                None
                if res_pk is None
                else {
                    "value": value,
                    "status": status,
                    "outcome": outcome,
                    "n_annotations": n,
                    "votes": votes,
                }  # fmt: skip
            )
            results[item_id][slugs[stage_id]] = _stage_result(state, resolution)
        for pk, external_id, status, purpose, group, source, version, payload in chunk:
            yield {
                "external_id": external_id,
                "status": status,
                "purpose": purpose,
                "group": group,
                "source": source,
                "version": version,
                "payload": identities.apply(payload, salt),
                "stages": results.get(pk, {}),
            }
        last = chunk[-1][0]


def release_annotation_rows(project: Project) -> Iterator[dict[str, Any]]:
    """Every current annotation of the released items (a changed answer as changed: superseded
    versions are history, not released), in id order, raters as pseudonyms
    (``releases.pseudonyms``: ``R0001`` for people in the order they first appear, ``E0001``
    for imported raters), the vote as the stage's kind declares it (``TaskKind.vote``).

    Keyset-paginated raw SQL (one query per ``ANNOTATION_CHUNK`` rows, memory flat in the row
    count): this is the largest file of a release, and the ORM's per-value conversions would
    halve its speed. The Python writer of annotations.jsonl/.csv on SQLite, and the rows the
    kinds' layouts read; on PostgreSQL the files are written by COPY (``copy_export``) with the
    same rows once parsed."""
    stages = {
        stage.pk: (stage.slug, KINDS.get(stage.kind))
        for stage in Stage.objects.filter(project=project)
    }
    annotation_table = Annotation._meta.db_table
    item_stage_table = ItemStage._meta.db_table
    item_table = Item._meta.db_table
    statuses = list(RELEASED_STATUSES)
    placeholders = ", ".join(["%s"] * len(statuses))
    sql = f"""
        SELECT a.id, i.external_id, s.stage_id, a.annotator_id, a.external_rater, a.payload,
               a.seconds_spent, a.created_at, a.item_version
        FROM {annotation_table} a
        JOIN {item_stage_table} s ON s.id = a.item_stage_id
        JOIN {item_table} i ON i.id = s.item_id
        WHERE s.stage_id IN ({", ".join(["%s"] * len(stages)) or "NULL"})
          AND i.status IN ({placeholders}) AND a.is_current AND a.id > %s
        ORDER BY a.id
        LIMIT %s"""
    loads = json.loads
    pseudonyms = RaterPseudonyms()
    identities, salt = identity_rule(project.kind), salt_for(project)
    last = 0
    while True:
        with connection.cursor() as cursor:
            cursor.execute(sql, [*stages, *statuses, last, ANNOTATION_CHUNK])
            chunk = cursor.fetchall()
        if not chunk:
            return
        for row in chunk:
            _pk, external_id, stage_id, annotator_id, rater, payload, seconds, created, version = (
                row
            )
            if isinstance(payload, str):  # SQLite, and psycopg when Django leaves jsonb as text
                payload = loads(payload)
            slug, kind = stages[stage_id]
            if isinstance(created, str):  # SQLite returns text
                created = datetime.fromisoformat(created)
            yield {
                "external_id": external_id,
                "stage": slug,
                "rater": pseudonyms(annotator_id, rater),
                "value": kind.vote(payload) if kind is not None else payload_path(payload, "value"),
                "payload": identities.apply(payload, salt),
                "seconds_spent": seconds,
                "created_at": csv_timestamp(created),
                "item_version": version,
            }
        last = chunk[-1][0]


def release_annotations_jsonl(project: Project, path: str | Path) -> FileEntry:
    """Write annotations.jsonl of ``project`` (the rows of ``release_annotation_rows``): on
    PostgreSQL by COPY (``copy_export``, the database's JSON spelling), on SQLite by Python.
    Memory flat either way."""
    if connection.vendor == "postgresql":
        return copy_annotations_jsonl(project, path, statuses=RELEASED_STATUSES)
    return write_jsonl(release_annotation_rows(project), path)


def release_annotations_csv(project: Project, path: str | Path) -> FileEntry:
    """Write annotations.csv of ``project`` (columns ``ANNOTATION_COLUMNS``): on PostgreSQL by
    COPY, on SQLite by ``write_csv`` of ``release_annotation_rows``."""
    if connection.vendor == "postgresql":
        return copy_annotations_csv(
            project, path, statuses=RELEASED_STATUSES, columns=ANNOTATION_COLUMNS
        )
    return write_csv(release_annotation_rows(project), path, columns=ANNOTATION_COLUMNS)


def _payload_keys(project: Project) -> list[str]:
    """Every top-level payload key of the released items (one query), schema fields first."""
    table = Item._meta.db_table
    statuses = list(RELEASED_STATUSES)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"SELECT DISTINCT jsonb_object_keys(payload) FROM {table} "
                f"WHERE project_id = %s AND status = ANY(%s) AND jsonb_typeof(payload) = 'object'",
                [project.pk, statuses],
            )
        else:
            cursor.execute(
                f"SELECT DISTINCT j.key FROM {table}, json_each({table}.payload) AS j "
                f"WHERE project_id = %s AND status IN (%s, %s)",
                [project.pk, *statuses],
            )
        keys = {row[0] for row in cursor.fetchall()}
    keys -= identity_rule(project.kind).removed_keys  # no column for a field never released
    declared = [name for name in schema_for_kind(project.kind).field_names if name in keys]
    return declared + sorted(keys - set(declared))


def item_csv_columns(project: Project, stages: list[Stage]) -> list[str]:
    keys = _payload_keys(project)
    # A key holding a dot would read as a path; keep such payloads whole in one JSON cell.
    payload = ["payload"] if any("." in key for key in keys) else [f"payload.{k}" for k in keys]
    stage_columns = [f"stages.{stage.slug}.{name}" for stage in stages for name in STAGE_FIELDS]
    return ITEM_COLUMNS + payload + stage_columns


# --- Datasheet figures --------------------------------------------------------------------


def _stage_figures(
    project: Project, stages: list[Stage], *, computed_at: datetime
) -> list[dict[str, Any]]:
    counts = {
        row["stage_id"]: row
        for row in ItemStage.objects.filter(stage__project=project)
        .values("stage_id")
        .annotate(
            items_in=Count("pk"),
            items_out=Count(
                "pk",
                filter=Q(state=ItemStage.State.RESOLVED, resolution__outcome="accept"),
            ),
        )
    }
    figures = []
    for stage in stages:
        row = counts.get(stage.pk, {})
        figures.append(
            {
                "name": stage.name,
                "slug": stage.slug,
                "task": stage.kind,
                "overlap": stage.overlap,
                "items_in": row.get("items_in", 0),
                "items_out": row.get("items_out", 0),
                "agreement": _agreement(stage, computed_at=computed_at),
            }
        )
    return figures


def _agreement(stage: Stage, *, computed_at: datetime) -> dict[str, Any] | None:
    """The stage's agreement over exactly the released items, computed now (inside the build's
    snapshot): the stage's votes (``agreement.selectors.stage_votes``: completed item stages,
    the last phase's annotations) restricted to the item stages of released items, through the
    same figures the agreement app stores (``agreement.stage_statistics.stage_agreement``).
    The preferred metric (METRIC_PREFERENCE) with its CI, the other metrics' values, and when
    and over what it was computed. None when the stage's kind has no agreement figures or no
    released item has votes in it. Never a stored snapshot: those cover other items (open,
    discarded) and another moment."""
    import numpy as np

    from agreement.selectors import stage_votes
    from agreement.stage_statistics import stage_agreement

    votes = stage_votes(stage)
    if not len(votes):
        return None
    released = ItemStage.objects.filter(stage=stage, item__status__in=RELEASED_STATUSES)
    ids = np.fromiter(released.values_list("pk", flat=True).iterator(), dtype=np.int64)
    scoped = votes.only_items(ids)
    if not scoped.voted.any():
        return None
    results = [result for result in stage_agreement(scoped) if result.defined]
    if not results:
        return None
    ranked = sorted(
        results,
        key=lambda r: (
            METRIC_PREFERENCE.index(r.metric) if r.metric in METRIC_PREFERENCE else 99,
            r.metric,
        ),
    )
    chosen = ranked[0].to_dict()
    return {
        "metric": chosen["metric"],
        "value": chosen["value"],
        "ci_low": chosen["ci_low"],
        "ci_high": chosen["ci_high"],
        "ci_level": chosen["confidence"],
        "n_items": chosen["n_items"],
        "n_annotators": chosen["n_raters"] or 0,
        "n_annotations": chosen["n_annotations"],
        "computed_at": csv_timestamp(computed_at.replace(microsecond=0)),
        "scope": "released items",
        "others": {result.metric: result.to_dict()["value"] for result in ranked[1:]},
    }


def _people_by_role(project: Project) -> dict[str, int]:
    annotations = Annotation.objects.filter(item_stage__stage__project=project)
    roles = {
        "annotator": annotations.exclude(annotator=None).values("annotator").distinct().count(),
        "reviewer": Resolution.objects.filter(item_stage__stage__project=project)
        .exclude(decided_by=None)
        .values("decided_by")
        .distinct()
        .count(),
    }
    imported = annotations.exclude(external_rater="").values("external_rater").distinct().count()
    if imported:
        roles["external rater (imported)"] = imported
    return roles


def _default_citation(project: Project, version: int, year: int) -> str:
    key = f"{project.slug.replace('-', '_')}_v{version}"
    return (
        f"@misc{{{key},\n  title = {{{{{project.name}}}, release v{version}}},\n"
        f"  year = {{{year}}},\n  note = {{Built with Rungwise}}\n}}"
    )


def _fields(project: Project, stages: list[Stage]) -> list[dict[str, Any]]:
    fields = [
        {"name": "external_id", "type": "text", "required": True,
         "description": "Identifier of the item in the source data."},
        {"name": "status", "type": "accepted or rejected", "required": True,
         "description": "Outcome of the pipeline (rejected items are kept, flagged)."},
        {"name": "purpose", "type": "regular, practice or attention_check", "required": True,
         "description": "Why the item was shown."},
        {"name": "group", "type": "text", "required": False,
         "description": "Items of one group are variants of one source item."},
        {"name": "version", "type": "a whole number", "required": True,
         "description": "Content version (revisions during the pipeline raise it)."},
    ]  # fmt: skip
    for field in schema_for_kind(project.kind).describe():
        if field["name"] == schema_for_kind(project.kind).external_id_field:
            continue
        fields.append({**field, "name": f"payload.{field['name']}"})
    for stage in stages:
        fields.append(
            {
                "name": f"stages.{stage.slug}.*",
                "type": "object",
                "required": False,
                "description": f"{stage.name}: resolved value, status, outcome, votes and the "
                f"share of votes for the value (agreement).",
            }
        )
    return fields


# --- Building -----------------------------------------------------------------------------


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


#: A build that started this long ago and has not finished is taken to be dead (its worker was
#: killed); the sweep starts it again. Beyond Celery's hard time limit, so never a live build.
STALE_AFTER = timedelta(seconds=getattr(settings, "CELERY_TASK_TIME_LIMIT", 900) + 60)
#: Builds started for one version before the sweep gives up and marks it failed.
MAX_ATTEMPTS = 3


def _claim(release_id: int) -> Release | None:
    """Start a build attempt of a BUILDING release that is not being built (never started, or
    started so long ago that its worker is dead); None when it is not ours to build."""
    with transaction.atomic():
        release = (
            Release.objects.select_for_update(of=("self",))
            .select_related("project")
            .filter(pk=release_id)
            .first()
        )
        if release is None or release.status != Release.Status.BUILDING:
            return None
        now = timezone.now()
        if release.started_at is not None and release.started_at >= now - STALE_AFTER:
            return None  # a live build has it
        release.started_at = now
        release.attempts += 1
        release.save(update_fields=["started_at", "attempts"])
        return release


def releases_stuck(*, now=None, grace_seconds: float | None = None) -> list[int]:
    """BUILDING releases whose build never started within ``grace_seconds`` of publishing (the
    message was lost: broker down, or restarted empty) or started longer than STALE_AFTER ago
    (the worker died)."""
    now = now or timezone.now()
    grace = timedelta(
        seconds=settings.SWEEP_GRACE_SECONDS if grace_seconds is None else grace_seconds
    )
    return list(
        Release.objects.filter(status=Release.Status.BUILDING)
        .filter(
            Q(started_at__isnull=True, created_at__lt=now - grace)
            | Q(started_at__lt=now - STALE_AFTER)
        )
        .values_list("pk", flat=True)
    )


def release_requeue(*, release_id: int, reset_attempts: bool = False) -> Release:
    """Send a stuck build again, or mark it failed after MAX_ATTEMPTS started builds. Also an
    admin's "retry" (``reset_attempts``: a fresh count; a failed release goes back to
    building)."""
    from releases.tasks import build_release

    with transaction.atomic():
        release = Release.objects.select_for_update().get(pk=release_id)
        if release.status == Release.Status.PUBLISHED:
            raise Conflict(f"v{release.version} is published; a published release never changes.")
        if reset_attempts:
            if (
                release.status == Release.Status.BUILDING
                and release.started_at is not None
                and release.started_at >= timezone.now() - STALE_AFTER
            ):
                raise Conflict(
                    f"v{release.version} is being built right now (started "
                    f"{release.started_at:%H:%M:%S} UTC); wait for it to finish or fail."
                )
            if (
                release.status == Release.Status.FAILED
                and Release.objects.filter(
                    project_id=release.project_id, status=Release.Status.BUILDING
                )
                .exclude(pk=release.pk)
                .exists()
            ):
                raise Conflict("Another version of this project is being built; wait for it.")
            release.status, release.attempts, release.message = Release.Status.BUILDING, 0, ""
            release.started_at, release.created_at = None, timezone.now()
            release.save(
                update_fields=["status", "attempts", "message", "started_at", "created_at"]
            )
        elif release.status != Release.Status.BUILDING:
            return release
        elif release.attempts >= MAX_ATTEMPTS:
            release.status = Release.Status.FAILED
            release.message = (
                f"The build was started {release.attempts} times and never finished (is a "
                f"worker running, with enough memory and time? See its log). Retry it from "
                f"the admin, or publish again."
            )
            release.save(update_fields=["status", "message"])
            return release
        services.enqueue_on_commit(build_release, release.pk)
    return release


def release_mark_failed(*, release_id: int, reason: str) -> Release:
    """An admin's decision: a BUILDING release stops here, with their reason (its version is
    reused by the next publish)."""
    with transaction.atomic():
        release = Release.objects.select_for_update().get(pk=release_id)
        if release.status == Release.Status.BUILDING:
            release.status = Release.Status.FAILED
            release.message = reason[:2000]
            release.save(update_fields=["status", "message"])
    return release


def release_build(*, release_id: int) -> Release:
    """Build the files of a BUILDING release and publish it. Safe to run twice: a release
    already published or failed is returned untouched, and the final write re-checks the status
    under a row lock, so two concurrent builds publish once."""
    release = _claim(release_id)
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
def _one_snapshot() -> Iterator[None]:
    """Every read inside sees the database as of one moment, so that annotation going on during
    a build lands in all of a release's files or in none. PostgreSQL: one REPEATABLE READ,
    READ ONLY transaction (writers are not blocked). SQLite: one transaction (its writers wait
    for the build; the embedded default is for demos and small studies). Inside an outer
    transaction (tests) the outer one's snapshot is used as it is."""
    if connection.in_atomic_block:
        yield
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def _build(release: Release, workdir: Path) -> Release:
    with _one_snapshot():
        prefix, zip_path, archive, manifest, stats = _write_files(release, workdir)
    return _publish_built(release, prefix, zip_path, archive, manifest, stats)


def _release_name(path: Path, files: Path) -> str | None:
    """A layout file's name in the release: its path under the release folder, sub-folders
    included ("D1/D1_L1.json"); None when it lies outside."""
    try:
        return (files / path).resolve().relative_to(files.resolve()).as_posix()
    except ValueError:
        return None


def _write_files(release: Release, workdir: Path):
    """Write every file of the release into ``workdir`` and zip them (all reads here: see
    _one_snapshot)."""
    started = time.monotonic()
    project = release.project
    stages = list(Stage.objects.filter(project=project).order_by("position"))
    prefix = f"{project.slug}-v{release.version}"
    files = workdir / prefix
    files.mkdir()
    manifest = Manifest()
    items = manifest.add(write_jsonl(release_item_rows(project), files / "items.jsonl"))
    manifest.add(
        write_csv(
            release_item_rows(project),
            files / "items.csv",
            columns=item_csv_columns(project, stages),
        )
    )
    annotations = manifest.add(release_annotations_jsonl(project, files / "annotations.jsonl"))
    manifest.add(release_annotations_csv(project, files / "annotations.csv"))
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
            path = files / entry.name if entry else Path(produced)
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
    diff = None
    previous = _previous(release)
    if previous is not None and previous.archive:
        changes = release_diff(release_archive_rows(previous), iter_jsonl(files / "items.jsonl"))
        diff = _diff_summary(previous.version, changes)
    now = timezone.now()
    stage_figures = _stage_figures(project, stages, computed_at=now)
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
    datasheet = render_datasheet(
        {
            "name": project.name,
            "version": f"v{release.version}",
            "description": description.strip(),
            "created_at": now,
            "license": project.license,
            "citation": project.citation or _default_citation(project, release.version, now.year),
            "annotators_by_role": _people_by_role(project),
            "stages": stage_figures,
            "fields": _fields(project, stages),
            "files": manifest.to_dict()["files"],
            "items": items.rows,
        }
    )
    (files / "README.md").write_text(datasheet, encoding="utf-8")
    manifest.add_file(files / "README.md")
    sums = files / "SHA256SUMS"
    sums.write_text(manifest.sha256sums(), encoding="utf-8")
    manifest_entry = manifest.write(files / "manifest.json")
    members = {f"{prefix}/{name}": files / name for name in manifest.entries}
    members[f"{prefix}/manifest.json"] = files / "manifest.json"
    members[f"{prefix}/SHA256SUMS"] = sums
    zip_path = workdir / f"{prefix}.zip"
    archive = build_zip(members, zip_path)
    by_status = dict(
        Item.objects.filter(project=project, status__in=RELEASED_STATUSES)
        .values_list("status")
        .annotate(count=Count("pk"))
    )
    stats = {
        "items": items.rows,
        "annotations": annotations.rows,
        "items_by_status": by_status,
        "stages": stage_figures,
        "people_by_role": _people_by_role(project),
        "diff": diff,
        "build_seconds": round(time.monotonic() - started, 3),
        "bytes": archive.bytes,
        "manifest_sha256": manifest_entry.sha256,
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
            # snapshot; the current attempt publishes (tests/releases/test_sweeps.py).
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
        return locked


def release_datasheet(release: Release) -> str:
    """The README.md of a published release, read from its archive."""
    if release.status != Release.Status.PUBLISHED or not release.archive:
        return ""
    with release.archive.open("rb") as raw, zipfile.ZipFile(raw) as archive:
        member = next(name for name in archive.namelist() if name.endswith("/README.md"))
        return archive.read(member).decode("utf-8")
