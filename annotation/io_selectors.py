"""Reads behind the I/O pages and the REST API: imports, releases, items, stages, agreement.

Callers fetch the project with ``access_project`` first; these functions only read.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q, QuerySet

from .models import AgreementSnapshot, ImportBatch, Item, ItemStage, Project, Release, Stage


def import_batches(project: Project) -> QuerySet[ImportBatch]:
    return (
        ImportBatch.objects.filter(project=project)
        .select_related("created_by")
        .order_by("-created_at", "-pk")
    )


def import_batch(project: Project, batch_id: int) -> ImportBatch | None:
    return import_batches(project).filter(pk=batch_id).first()


def releases(project: Project) -> QuerySet[Release]:
    return Release.objects.filter(project=project).select_related("created_by").order_by("-version")


def project_items(project: Project, *, status: str | None = None) -> QuerySet[Item]:
    items = Item.objects.filter(project=project).order_by("pk")
    if status:
        items = items.filter(status=status)
    return items


def item_stage_results(item: Item) -> list[dict[str, Any]]:
    rows = (
        ItemStage.objects.filter(item=item)
        .select_related("stage", "resolution")
        .order_by("stage__position")
    )
    results = []
    for row in rows:
        resolution = getattr(row, "resolution", None)
        results.append(
            {
                "stage": row.stage.slug,
                "state": row.state,
                "submitted_count": row.submitted_count,
                "target_count": row.target_count,
                "resolution": None
                if resolution is None
                else {
                    "value": resolution.value,
                    "status": resolution.status,
                    "outcome": resolution.outcome,
                    "votes": resolution.votes,
                },
            }
        )
    return results


def project_stages(project: Project) -> QuerySet[Stage]:
    """Stages with item counts by state (one query)."""
    return (
        Stage.objects.filter(project=project)
        .annotate(
            items_total=Count("item_stages"),
            items_open=Count("item_stages", filter=Q(item_stages__state=ItemStage.State.OPEN)),
            items_resolved=Count(
                "item_stages", filter=Q(item_stages__state=ItemStage.State.RESOLVED)
            ),
        )
        .order_by("position")
    )


def latest_agreement(project: Project) -> list[AgreementSnapshot]:
    """The latest snapshot of every (stage, metric) of a project, by stage position then metric.
    Reads the snapshot table's (stage, metric, computed_at) index with DISTINCT ON on PostgreSQL."""
    snapshots = AgreementSnapshot.objects.filter(stage__project=project).select_related("stage")
    from django.db import connection

    if connection.vendor == "postgresql":
        latest = list(
            snapshots.order_by("stage_id", "metric", "-computed_at", "-pk").distinct(
                "stage_id", "metric"
            )
        )
    else:
        chosen: dict[tuple[int, str], AgreementSnapshot] = {}
        for snapshot in snapshots.order_by("computed_at", "pk"):
            chosen[(snapshot.stage_id, snapshot.metric)] = snapshot
        latest = list(chosen.values())
    return sorted(latest, key=lambda snapshot: (snapshot.stage.position, snapshot.metric))
