"""Writes of ratings projects, one module per concern, all re-exported here so callers write
``from ratings import services`` and ``services.pairs_import(...)``:

- ``ratings/project_setup.py``: creating a ratings project, its stages (described there) and the
  helpers the writes share;
- ``ratings/pairs.py``: sentence pairs and their items, attention checks, practice items;
- ``ratings/historic.py``: historic ratings, through the engine's historic import;
- ``ratings/model_runs.py``: model answers;
- ``ratings/explica_import.py``: ExpliCa's released files in one call;
- ``ratings/stopping.py``: live stopping (its setting and its run);
- here: the stored analysis of the ratings page and its debounced refresh.

Every import is checked completely before anything is written, and written in one transaction:
a file with any bad row (reported with its line and field) leaves the project as it was.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import F
from django.utils import timezone

from annotation.models import Project
from ratings.explica_import import ExplicaImportResult, explica_import
from ratings.historic import HISTORIC_OPTIONS, historic_ratings_create, historic_ratings_import
from ratings.model_runs import model_run_create, model_run_delete, model_run_import
from ratings.models import ModelRun, RatingsSetup
from ratings.pairs import PairsImportResult, pairs_create, pairs_import
from ratings.project_setup import (
    ATTENTION_GROUP,
    BULK_BATCH,
    DEFAULT_GUIDELINES,
    EVERYONE,
    label_rule_from_json,
    ratings_project_create,
)
from ratings.stopping import StoppingRun, stopping_run, stopping_set

__all__ = [
    "ATTENTION_GROUP",
    "BULK_BATCH",
    "DEFAULT_GUIDELINES",
    "EVERYONE",
    "HISTORIC_OPTIONS",
    "STALE_QUEUE_SECONDS",
    "ExplicaImportResult",
    "PairsImportResult",
    "analyses_data_changed",
    "analyses_item_stages_resolved",
    "analysis_refresh",
    "analysis_refresh_request",
    "explica_import",
    "historic_ratings_create",
    "historic_ratings_import",
    "label_rule_from_json",
    "model_run_create",
    "model_run_delete",
    "model_run_import",
    "pairs_create",
    "pairs_import",
    "ratings_project_create",
    # Live stopping (ratings/stopping.py).
    "StoppingRun",
    "stopping_run",
    "stopping_set",
]


# --- The stored analysis ------------------------------------------------------------------------
#
# The researcher page never computes its analysis (about 1–2 s for ExpliCa's 72,000 ratings): a
# Celery task does, when the data change, and the page serves the stored result
# (models.StoredAnalysis). Changes reach here three ways: the engine's resolution event
# (annotation.events.on_item_stages_resolved, registered in apps.py), this module's imports, and
# the page itself, which finds its stored result stale after submissions that resolved nothing
# (the engine has no per-submission event) and asks for a refresh. Debounce: whoever sets
# queued_at from NULL sends the one message, RATINGS_ANALYSIS_DELAY seconds later, so a burst of
# submissions or resolutions is computed once; the task clears queued_at before it reads, so a
# change during the computation queues the next one. A mark older than STALE_QUEUE_SECONDS
# (message lost with the broker or a killed worker) is taken over by the next request.

STALE_QUEUE_SECONDS = 300


def analysis_refresh_request(
    *, project_id: int, source: str = "all", run_id: int | None = None
) -> bool:
    """Ask for the analysis of (source, run) to be recomputed soon; returns True when this call
    sent the message (False when one is already on its way). Sent after commit; a broker
    failure is logged and the mark cleared, so the next page load asks again."""
    from django.conf import settings

    from ratings.models import StoredAnalysis
    from rungwise.debounce import debounce_request

    row, _ = StoredAnalysis.objects.get_or_create(
        project_id=project_id,
        source=source,
        run_key=run_id or 0,
        defaults={"run_id": run_id},
    )
    return debounce_request(
        StoredAnalysis.objects.filter(pk=row.pk),
        task_name="ratings.tasks.refresh_analysis",
        args=(project_id, source, run_id),
        countdown=float(getattr(settings, "RATINGS_ANALYSIS_DELAY", 2)),
        overdue_after=STALE_QUEUE_SECONDS,
        what=f"the ratings analysis of project {project_id}",
    )


def analyses_data_changed(*, project_id: int, imported: bool = True) -> int:
    """The project's ratings changed: refresh every analysis the page has shown (each source and
    model run once viewed) and the three sources without a model run (the page's default and
    the two the Agreement page shows). ``imported`` (pairs or historic ratings written): also
    count a large project's import-determined counts again (ratings/stored_counts.py), first,
    so that the analyses' new data version is readable when they are stored; answers collected
    here (``imported=False``) do not change those counts. Returns how many analysis messages
    were sent."""
    from ratings.models import StoredAnalysis, StoredRatingsCounts
    from ratings.selectors import SOURCES
    from ratings.stored_counts import project_counts_store_request

    # Only a project that has been large has the row (stored_counts.project_counts_shown
    # makes it); a smaller one is counted on each request anyway.
    if imported and StoredRatingsCounts.objects.filter(pk=project_id).exists():
        project_counts_store_request(project_id=project_id)

    selections = {(source, None) for source in SOURCES} | {
        (source, run_id)
        for source, run_id in StoredAnalysis.objects.filter(project_id=project_id).values_list(
            "source", "run_id"
        )
    }
    return sum(
        analysis_refresh_request(project_id=project_id, source=source, run_id=run_id)
        for source, run_id in sorted(selections, key=lambda pair: (pair[0], pair[1] or 0))
    )


def analyses_item_stages_resolved(item_stage_ids: Iterable[int]) -> None:
    """Listener of annotation.events.on_item_stages_resolved: refresh the analyses of the
    ratings projects whose rating stage these item stages belong to."""
    project_ids = set(
        RatingsSetup.objects.filter(
            rating_stage__item_stages__pk__in=list(item_stage_ids)
        ).values_list("project_id", flat=True)
    )
    for project_id in sorted(project_ids):
        analyses_data_changed(project_id=project_id, imported=False)


def analysis_refresh(*, project_id: int, source: str, run_id: int | None) -> bool:
    """Compute and store the analysis of (source, run) unless the stored one is already fresh.
    Returns True when it computed. Safe to run twice: the second run finds the version current
    and stores nothing; a project, run or setup that is gone is a no-op."""
    import time

    from ratings import selectors
    from ratings.models import StoredAnalysis
    from rungwise.debounce import debounce_consume

    # Whatever happens next, the message that brought us here is consumed: changes from now
    # on queue the next refresh.
    debounce_consume(
        StoredAnalysis.objects.filter(project_id=project_id, source=source, run_key=run_id or 0)
    )
    project = Project.objects.filter(pk=project_id).first()
    context = selectors.ratings_context(project) if project is not None else None
    if context is None or source not in selectors.SOURCES:
        return False
    run = None
    if run_id:
        run = ModelRun.objects.filter(project=project, pk=run_id).first()
        if run is None:
            return False
    version = selectors.data_version(context, run)
    current = StoredAnalysis.objects.filter(
        project=project, source=source, run_key=run_id or 0, version=version
    ).exclude(content=None)
    if current.exists():
        return False
    started = time.perf_counter()
    result = selectors.compute_analysis(context, source=source, run=run)
    content = selectors.analysis_for_storage(result)
    page = selectors.analysis_for_storage(result, page=True)
    row, _ = StoredAnalysis.objects.get_or_create(
        project=project, source=source, run_key=run_id or 0, defaults={"run": run}
    )
    StoredAnalysis.objects.filter(pk=row.pk).update(
        run=run,
        version=version,
        content=content,
        page=page,
        computed_at=timezone.now(),
        compute_seconds=round(time.perf_counter() - started, 3),
        computations=F("computations") + 1,
    )
    return True
