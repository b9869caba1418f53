"""The pipeline graph's counts (annotation/pipeline.py): the items resolved per stage and
outcome. Counting them joins every resolution of the project to its item stage (about 5 s for
400,000 resolutions under load, benchmarks/pages_scale.py), so a *large* project — one whose
stored count found at least ``settings.PIPELINE_STORED_FROM`` resolutions — is shown from counts
a Celery task stores (``annotation.tasks.store_pipeline_counts``), with the moment they were
counted; a stored count older than ``settings.PIPELINE_STORED_MAX_AGE`` seconds asks for a new
one (``rungwise/debounce.py``: one message however many pages ask; a message lost with the
broker is taken over after ``OVERDUE_SECONDS``). A smaller project is counted on each request
(exact, and quick); one that has grown large without a stored count is counted once more and a
stored count is asked for. The same pattern as a large stage's pages (agreement/stored.py).
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Count, QuerySet
from django.utils import timezone

from annotation.models import Project, Resolution, StoredPipelineCounts
from rungwise.debounce import debounce_consume, debounce_request_stored

STORE_TASK = "annotation.tasks.store_pipeline_counts"
#: A request whose message never ran is sent again after this many seconds (the project home
#: is the only asker: there is no beat sweep).
OVERDUE_SECONDS = 300.0


def _row(project_id: int) -> QuerySet[StoredPipelineCounts]:
    return StoredPipelineCounts.objects.filter(pk=project_id)


def pipeline_counts(project_id: int) -> Counter[tuple[str, str]]:
    """Counted now: {(stage slug, outcome): items resolved}."""
    return Counter(
        {
            (row["item_stage__stage__slug"], row["outcome"]): row["n"]
            for row in Resolution.objects.filter(item_stage__stage__project_id=project_id)
            .values("item_stage__stage__slug", "outcome")
            .annotate(n=Count("pk"))
        }
    )


def pipeline_counts_shown(project: Project) -> tuple[Counter[tuple[str, str]], datetime | None]:
    """The counts the project home shows and when they were counted (None: just now)."""
    row = _row(project.pk).only("counts", "total", "stored_at").first()
    large = int(settings.PIPELINE_STORED_FROM)
    if row is not None and row.stored_at is not None and row.total >= large:
        age = timezone.now() - row.stored_at
        if age > timedelta(seconds=float(settings.PIPELINE_STORED_MAX_AGE)):
            pipeline_counts_store_request(project_id=project.pk)
        return Counter({(slug, outcome): int(n) for slug, outcome, n in row.counts}), (
            row.stored_at
        )
    counted = pipeline_counts(project.pk)
    if sum(counted.values()) >= large:
        pipeline_counts_store_request(project_id=project.pk)
    return counted, None


def pipeline_counts_store_request(*, project_id: int) -> bool:
    """Ask the worker to store the project's counts soon (one message per burst of askers).
    Returns True when this call sent it."""
    return debounce_request_stored(
        StoredPipelineCounts,
        {"project_id": project_id},
        task_name=STORE_TASK,
        args=(project_id,),
        overdue_after=OVERDUE_SECONDS,
        what=f"the pipeline counts of project {project_id}",
    )


def pipeline_counts_store(*, project_id: int) -> bool:
    """Count the project's resolutions per stage and outcome and store them with the moment.
    Returns False when the project is gone. Safe to run twice or concurrently: each run
    stores a complete count; the last one to commit stays."""
    debounce_consume(_row(project_id))
    if not Project.objects.filter(pk=project_id).exists():
        return False
    counted = pipeline_counts(project_id)
    rows = [[slug, outcome, n] for (slug, outcome), n in sorted(counted.items())]
    StoredPipelineCounts.objects.bulk_create(
        [
            StoredPipelineCounts(
                project_id=project_id,
                counts=rows,
                total=sum(counted.values()),
                stored_at=timezone.now(),
            )
        ],
        update_conflicts=True,
        unique_fields=["project"],
        update_fields=["counts", "total", "stored_at"],
    )
    return True
