"""Stored pages of large stages: counts, the progress series and figures kept by a Celery task
and served with their age, so that no request counts a million annotations or draws with
matplotlib (CONTRIBUTING.md, "Services own the transaction", "Celery tasks").

A stage is *large* once its stored item count reaches ``settings.AGREEMENT_STORED_FROM``.
Below it every page counts and draws live, as before (a few milliseconds on a small stage, and
always exact). For a large stage:

* ``stage_progress_shown`` returns the stored counts (items by state, annotations, annotators,
  resolved values) with the moment they were counted; active leases and paused annotators are
  still read live (a quick, indexed count);
* ``stage_figure_shown`` returns the stored SVG of the stage's own figures, and
  ``stage_progress_series_shown`` the stored series behind the progress figure and progress.csv;
* any of them, finding the stored row older than ``settings.AGREEMENT_STORED_MAX_AGE`` seconds,
  asks for a new one (``rungwise/debounce.py``: one message however many pages ask; a message
  lost with the broker is taken over after ``OVERDUE_SECONDS``): counts, series and the
  progress figure. The agreement refresh stores the page with every figure redrawn right
  after it stores new snapshots (``agreement.services.stage_agreement_refresh``).

So the counts a large stage shows are at most about ``AGREEMENT_STORED_MAX_AGE`` seconds plus
one count old while someone watches the page, whatever changed them (submits, withdrawals,
reopened items); the page says how old they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from agreement import selectors
from agreement.models import StoredStageFigure, StoredStagePage
from agreement.selectors import ProgressSeries, StageProgress
from annotation.models import Stage
from rungwise.debounce import debounce_consume, debounce_request_stored

STORE_TASK = "agreement.tasks.store_stage_page"
#: A request whose message never ran (lost with the broker, a killed worker) is sent again
#: after this many seconds: the pages are the only askers, there is no beat sweep.
OVERDUE_SECONDS = 300.0


def _row(stage_id: int) -> QuerySet[StoredStagePage]:
    return StoredStagePage.objects.filter(pk=stage_id)


# --- Reads ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShownProgress:
    """A stage's progress as a page shows it: counted now (``stored_at`` None) or stored."""

    progress: StageProgress
    stored_at: datetime | None
    #: The stored resolved values (``selectors.resolved_values``) when stored, else None.
    resolved: dict[str, int] | None = None


def _large(counts: dict[str, Any]) -> bool:
    return int(counts.get("items", 0)) >= int(settings.AGREEMENT_STORED_FROM)


def _old(stored_at: datetime | None) -> bool:
    if stored_at is None:
        return True
    return timezone.now() - stored_at > timedelta(seconds=float(settings.AGREEMENT_STORED_MAX_AGE))


def stage_progress_shown(stage: Stage) -> ShownProgress:
    """The stage's progress for its pages: stored for a large stage (asking for a new count
    when the stored one is old), counted now otherwise. A stage that has grown large without a
    stored count is counted now once more, and a stored count is asked for."""
    row = _row(stage.pk).only("counts", "stored_at").first()
    if row is not None and row.stored_at is not None and _large(row.counts):
        if _old(row.stored_at):
            stage_page_store_request(stage_id=stage.pk)
        counts = dict(row.counts)
        return ShownProgress(
            progress=selectors.stage_progress_from(counts, stage),
            stored_at=row.stored_at,
            resolved=dict(counts.get("resolved_values") or {}),
        )
    progress = selectors.stage_progress(stage)
    if progress.items >= int(settings.AGREEMENT_STORED_FROM):
        stage_page_store_request(stage_id=stage.pk)
    return ShownProgress(progress=progress, stored_at=None)


def _stored_large(stage: Stage) -> datetime | None:
    """When the stage's page was stored, if the stage is large and has a stored page (asking
    for a new one when it is old); None when its pages are computed live."""
    found = _row(stage.pk).values_list("counts__items", "stored_at").first()
    if found is None or found[1] is None or not _large({"items": found[0] or 0}):
        return None
    if _old(found[1]):
        stage_page_store_request(stage_id=stage.pk)
    return found[1]


def stage_figure_shown(stage: Stage, plot: str) -> tuple[str, datetime | None]:
    """The SVG of one of the stage's own figures (``agreement.figures.PLOTS``) and when it was
    drawn: the stored one for a large stage, else drawn now (None)."""
    from agreement import figures

    if _stored_large(stage) is not None:
        stored = (
            StoredStageFigure.objects.filter(stage=stage, name=plot)
            .values_list("svg", "stored_at")
            .first()
        )
        if stored is not None:
            return stored[0], stored[1]
    return figures.stage_figure(stage, plot), None


def stage_progress_series_shown(stage: Stage) -> ProgressSeries:
    """The progress series (progress.csv): the stored one for a large stage, else read now."""
    if _stored_large(stage) is not None:
        stored = _row(stage.pk).values_list("progress", flat=True).first()
        if stored:
            return series_from_json(stored)
    return selectors.stage_progress_series(stage)


def disagreement_count_shown(stage: Stage, show: str) -> tuple[int, datetime | None]:
    """How many item stages the disagreement list ``show`` has, and when they were counted:
    the stored count of a large stage (``selectors.disagreement_counts``, asking for a new one
    when it is old or was stored without it), else counted now (None)."""
    found = (
        _row(stage.pk).values_list("counts__items", "counts__disagreements", "stored_at").first()
    )
    if found is not None and found[2] is not None and _large({"items": found[0] or 0}):
        stored = found[1] if isinstance(found[1], dict) else None
        if stored is None or _old(found[2]):
            stage_page_store_request(stage_id=stage.pk)
        if stored is not None and show in stored:
            return int(stored[show]), found[2]
    return selectors.disagreement_items(stage, show=show).order_by().count(), None


def series_to_json(series: ProgressSeries) -> dict[str, Any]:
    return {
        "unit": series.unit,
        "starts": [start.isoformat() for start in series.starts],
        "annotations": list(series.annotations),
        "completed": list(series.completed),
        "total_items": series.total_items,
    }


def series_from_json(data: dict[str, Any]) -> ProgressSeries:
    starts = [parse_datetime(text) for text in data.get("starts", [])]
    return ProgressSeries(
        unit=data.get("unit", "hour"),
        starts=[start for start in starts if start is not None],
        annotations=[int(n) for n in data.get("annotations", [])],
        completed=[int(n) for n in data.get("completed", [])],
        total_items=int(data.get("total_items", 0)),
    )


# --- Writes -----------------------------------------------------------------------------------


def stage_page_store_request(*, stage_id: int) -> bool:
    """Ask the worker to store the stage's page soon (one message per burst of askers).
    Returns True when this call sent it."""
    return debounce_request_stored(
        StoredStagePage,
        {"stage_id": stage_id},
        task_name=STORE_TASK,
        args=(stage_id,),
        overdue_after=OVERDUE_SECONDS,
        what=f"the stored page of stage {stage_id}",
    )


#: The figure drawn from the annotations themselves (the progress series); the others are
#: drawn from the agreement refresh's snapshots and change only with them.
LIVE_FIGURES = ("progress",)


def stage_page_store(*, stage_id: int, redraw: bool = False) -> bool:
    """Count the stage, read its progress series, draw its progress figure and store them
    with one moment (``StoredStagePage``, ``StoredStageFigure``); the figures drawn from the
    agreement snapshots (agreement over time, per annotator) are drawn too when ``redraw``
    (the agreement refresh stored new snapshots) or when they were never stored. Returns
    False when the stage is gone. Safe to run twice or concurrently: each run stores a
    complete, current page; the last one to commit stays."""
    from agreement import figures

    debounce_consume(_row(stage_id))
    stage = Stage.objects.select_related("project").filter(pk=stage_id).first()
    if stage is None:
        return False
    counts: dict[str, Any] = dict(selectors.stage_counts(stage))
    counts["resolved_values"] = selectors.resolved_values(stage)
    counts["disagreements"] = selectors.disagreement_counts(stage)
    series = selectors.stage_progress_series(stage)
    have = set(StoredStageFigure.objects.filter(stage=stage).values_list("name", flat=True))
    names = [plot for plot in figures.PLOTS if redraw or plot in LIVE_FIGURES or plot not in have]
    drawn = {plot: figures.stage_figure(stage, plot, progress_series=series) for plot in names}
    now = timezone.now()
    with transaction.atomic():
        if not _row(stage_id).update(counts=counts, progress=series_to_json(series), stored_at=now):
            StoredStagePage.objects.bulk_create(
                [
                    StoredStagePage(
                        stage_id=stage_id,
                        counts=counts,
                        progress=series_to_json(series),
                        stored_at=now,
                    )
                ],
                update_conflicts=True,
                unique_fields=["stage"],
                update_fields=["counts", "progress", "stored_at"],
            )
        StoredStageFigure.objects.bulk_create(
            [
                StoredStageFigure(stage_id=stage_id, name=plot, svg=svg, stored_at=now)
                for plot, svg in drawn.items()
            ],
            update_conflicts=True,
            unique_fields=["stage", "name"],
            update_fields=["svg", "stored_at"],
        )
    return True
