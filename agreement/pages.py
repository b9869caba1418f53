"""What each research page shows, one selector per page (CONTRIBUTING.md, "Thin views"):
agreement/views.py parses the request, fetches through ``access_*``, calls one of these and
renders. Rows are typed results (``DashboardStage``, ``DisagreementRow``, ``QueueRow``), not
attributes attached to model instances.

The caller has checked who may see the page: ``access_project(..., MONITOR)`` for the
dashboards, ``(..., ADJUDICATE)`` and ``agreement.access.access_adjudication_item`` for
adjudication.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from agreement import headlines, sections, selectors, spot_checks, stored
from agreement.decisions import decision_label
from agreement.models import AgreementRefresh
from agreement.selectors import AnnotatorRow, StageProgress
from annotation import keyset
from annotation.errors import ApplicationError
from annotation.kinds import KindContext, get_kind
from annotation.models import ItemStage, Project, Stage

#: How often the stage page's live part reloads itself (an htmx trigger).
LIVE_REFRESH = "every 30s"
#: The headline figures a stage page lists, in order.
STAGE_METRICS = (*selectors.HEADLINE_METRICS, "percent_agreement")


def kind_label(key: str) -> str:
    """A kind's label, or its key when no plug-in registers it any more."""
    try:
        return get_kind(key).label
    except ApplicationError:
        return key


# --- Project overview ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DashboardStage:
    """A row of the project's Agreement tab: a stage, how far it is and its headline figure
    (a workflow's own figure, ``agreement.headlines``, or the latest snapshot of a
    ``HEADLINE_METRICS``)."""

    stage: Stage
    progress: StageProgress
    latest: dict[str, Any]
    headline: Any
    kind_label: str
    #: When the progress was counted, for a large stage (``agreement.stored``); None: now.
    counted_at: Any = None


def dashboard_stages(project: Project) -> list[DashboardStage]:
    """Every stage of the project in pipeline order, with its progress and headline."""
    stages = list(project.stages.order_by("position"))
    latest = selectors.latest_snapshots_by_stage(stages)
    # A workflow that computes its stages' reliability itself gives the figure (one source for
    # both pages; agreement.headlines).
    provided = headlines.provided_headlines(project, stages)
    rows = []
    for stage in stages:
        shown = stored.stage_progress_shown(stage)
        stage_latest = latest.get(stage.pk, {})
        headline = provided.get(stage.pk) or next(
            (stage_latest[m] for m in selectors.HEADLINE_METRICS if m in stage_latest),
            None,
        )
        rows.append(
            DashboardStage(
                stage=stage,
                progress=shown.progress,
                latest=stage_latest,
                headline=headline,
                kind_label=kind_label(stage.kind),
                counted_at=shown.stored_at,
            )
        )
    return rows


# --- Stage dashboard ----------------------------------------------------------------------------

_ANNOTATOR_COLUMNS = (
    ("name", "Annotator", False),
    ("n_annotations", "Annotations", True),
    ("majority_agreement", "Agrees with majority", True),
    ("gold_agreement", "Matches gold", True),
    ("mean_abs_deviation", "Distance to others", True),
    ("median_seconds", "Median time", True),
    ("skip_rate", "Skips", True),
    ("flags", "Flags", False),
)


def annotator_columns(
    sort: str, descending: bool, *, numeric: bool, has_gold: bool
) -> list[dict[str, Any]]:
    """Header cells of the per-annotator table: the link of each toggles or starts its sort."""
    columns = []
    for key, label, is_number in _ANNOTATOR_COLUMNS:
        if key == "mean_abs_deviation" and not numeric or key == "gold_agreement" and not has_gold:
            continue
        if key == sort:
            next_dir = "asc" if descending else "desc"
            aria = "descending" if descending else "ascending"
        else:
            next_dir, aria = selectors.ANNOTATOR_SORTS[key], None
        columns.append(
            {
                "key": key,
                "label": label,
                "numeric": is_number,
                "next_dir": next_dir,
                "aria_sort": aria,
            }
        )
    return columns


def stage_live(stage: Stage) -> dict[str, Any]:
    """What the stage page's live part shows (its headline figures, progress, figures 1-2 and
    label distribution; the ``live`` partial, polled every ``LIVE_REFRESH``), and nothing of
    the rest: the poll used to build the whole page (the annotator table, the history, the
    sections), about half its CPU (benchmarks/README.md, "Pages at scale")."""
    snapshots = selectors.latest_snapshots(stage)
    shown = stored.stage_progress_shown(stage)
    progress = shown.progress
    headline = [snapshots[metric] for metric in STAGE_METRICS if metric in snapshots]
    latest = headline[0] if headline else None
    refresh = AgreementRefresh.of_stage(stage.pk)
    return {
        "stage": stage,
        "numeric": not get_kind(stage.kind).agreement.categorical,
        "snapshots": snapshots,
        "headline": headline,
        "latest": latest,
        "progress": progress,
        "since_refresh": max(progress.annotations - latest.n_annotations, 0)
        if latest
        else progress.annotations,
        "labels": selectors.label_distribution(stage, snapshots, stored_resolved=shown.resolved),
        # A large stage's counts and figures are stored (agreement.stored): when, or None.
        "counted_at": shown.stored_at,
        "live_refresh": LIVE_REFRESH,
        "stale": refresh.stale,
        "version": _figures_version(refresh, progress),
    }


def _figures_version(refresh: AgreementRefresh, progress: StageProgress) -> str:
    """The version the figures' URLs carry (a new one when they may have changed)."""
    return f"{refresh.computed_changes}-{progress.annotations}-{progress.done}"


def stage_page(
    project: Project, stage: Stage, *, sort: str, descending: bool | None, every: bool = False
) -> dict[str, Any]:
    """The stage dashboard: its live part (``stage_live``), history and the per-annotator
    table in the order ``sort``/``descending`` (None: the column's own)."""
    live = stage_live(stage)
    history = selectors.agreement_history_table(stage)
    history_metrics = [
        metric for metric in STAGE_METRICS if any(metric in row["metrics"] for row in history)
    ]
    return {
        **annotators_part(
            stage, sort=sort, descending=descending, progress=live["progress"], every=every
        ),
        **live,
        "stages": list(project.stages.order_by("position")),
        "history": history,
        "history_metrics": history_metrics,
        "refresh_interval": int(settings.AGREEMENT_REFRESH_INTERVAL),
        # Sections other apps add (agreement.sections): the models against people, say.
        "stage_sections": sections.shown_sections(stage),
    }


#: Rows of the per-annotator table shown until the researcher asks for every one (sorting
#: brings any annotator into them: flags, agreement, speed).
ANNOTATORS_SHOWN = 25


def annotators_part(
    stage: Stage,
    *,
    sort: str,
    descending: bool | None,
    progress: StageProgress | None = None,
    every: bool = False,
) -> dict[str, Any]:
    """What the stage page's per-annotator table (its ``annotators`` partial, redrawn on its
    own when sorted or after a pause) shows: the rows in the order ``sort``/``descending`` (the
    first ``ANNOTATORS_SHOWN`` of them unless ``every``: a table of two hundred rows, each with
    its pause form, is most of a large stage's page), how many there are, the members who did
    nothing yet, and the version its figure's URL carries. ``progress``: the stage's progress
    when the caller has it."""
    if progress is None:
        progress = stored.stage_progress_shown(stage).progress
    rows, annotator_snapshot = selectors.annotator_rows(stage, sort=sort, descending=descending)
    # Members who have done nothing in this stage are listed in one line under the table.
    annotators: list[AnnotatorRow] = [
        row for row in rows if row.quality.get("n_annotations") or row.quality.get("n_decisions")
    ]
    inactive = [row for row in rows if row not in annotators]
    if descending is None:
        descending = selectors.ANNOTATOR_SORTS[sort] == "desc"
    kind = get_kind(stage.kind)
    has_gold = any(row.quality.get("n_gold") for row in annotators)
    refresh = AgreementRefresh.of_stage(stage.pk)
    return {
        "stage": stage,
        "kind_label": kind.label,
        "numeric": not kind.agreement.categorical,
        "annotators": annotators if every else annotators[:ANNOTATORS_SHOWN],
        "annotators_total": len(annotators),
        "every": every,
        "inactive": inactive,
        "has_gold": has_gold,
        "annotator_snapshot": annotator_snapshot,
        "flagged": sum(1 for row in annotators if row.quality.get("flags")),
        "sort": sort,
        "descending": descending,
        "annotator_columns": annotator_columns(
            sort, descending, numeric=not kind.agreement.categorical, has_gold=has_gold
        ),
        "version": _figures_version(refresh, progress),
    }


# --- Disagreements ------------------------------------------------------------------------------


#: The disagreement list gives each rater a column when the page's items have at most this
#: many raters between them; beyond, each item lists its own votes with their raters' names.
#: A page of a stage of 200 annotators had 150 rater columns, nearly every cell empty: 470-540
#: kB of HTML and three quarters of the request's CPU (benchmarks/README.md, "Pages at
#: scale"). The CSV keeps one column per rater.
RATER_COLUMNS = 12


@dataclass(frozen=True)
class DisagreementRow:
    """An item of the disagreement list: its summary and its votes, either one cell per
    rater column (None where the rater did not vote; ``cells``, in the order of the page's
    rater columns) or, without rater columns, the votes cast as (rater's name, vote) by name
    (``votes``)."""

    item_stage: ItemStage
    summary: str
    cells: list[Any]
    #: The decision in words, naming the policy that made it (``agreement.decisions``).
    decision: str
    votes: list[tuple[str, Any]] = field(default_factory=list)


def disagreement_page(
    stage: Stage, *, show: str, after: str | None, before: str | None, per_page: int
) -> dict[str, Any]:
    """The disagreement list: the keyset page (``annotation.keyset``) of
    ``selectors.disagreement_items(stage, show=show)`` next to cursor ``after`` / ``before``
    (else the first), each row with every rater's vote, and how many items the list has
    (stored with its age on a large stage: ``stored.disagreement_count_shown``). The votes
    are in one column per rater up to ``RATER_COLUMNS`` raters on the page, else listed per
    item (``rater_columns`` false)."""
    count, counted_at = stored.disagreement_count_shown(stage, show)
    # A sparse filter with few rows (by the count, stored or live) reads its candidates first:
    # walking the stage's index would pass every item stage that does not match.
    listed = selectors.disagreement_items(stage, show=show, few=count <= selectors.FEW_LISTED)
    page = keyset.keyset_page(
        listed, key=selectors.DECIDED_AT, per_page=per_page, after=after, before=before
    )
    item_stages = list(page.rows)
    votes, raters = selectors.votes_by_item(item_stages, stage)
    rater_columns = len(raters) <= RATER_COLUMNS
    kind = get_kind(stage.kind)
    rows = []
    for item_stage in item_stages:
        cast = votes.get(item_stage.pk, {})
        rows.append(
            DisagreementRow(
                item_stage=item_stage,
                summary=selectors.item_summary(item_stage.item),
                cells=[cast.get(rater) for rater, _ in raters] if rater_columns else [],
                decision=decision_label(getattr(item_stage, "resolution", None)),
                votes=[] if rater_columns else [(n, cast[r]) for r, n in raters if r in cast],
            )
        )
    return {
        "stage": stage,
        "page": page,
        "count": count,
        "counted_at": counted_at,
        "rows": rows,
        "raters": raters,
        "rater_columns": rater_columns,
        "show": show,
        "filters": selectors.DISAGREEMENT_FILTERS,
        "categories": kind.categories(stage.config) or [],
        "numeric": not kind.agreement.categorical,
    }


# --- Adjudication -------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueueRow:
    """An item waiting for a reviewer: its summary and the vote tally, most votes first, as
    (value, count, colour index: the value's place among the kind's categories, 0 if none)."""

    item_stage: ItemStage
    summary: str
    tally: list[tuple[Any, int, int]]
    #: Why it waits, naming the policy (``agreement.decisions``).
    decision: str = ""


def queue_row(item_stage: ItemStage) -> QueueRow:
    resolution = getattr(item_stage, "resolution", None)
    categories = [
        str(c) for c in (get_kind(item_stage.stage.kind).categories(item_stage.stage.config) or [])
    ]
    tally = [
        (value, count, categories.index(value) % 6 + 1 if value in categories else 0)
        for value, count in sorted(
            (resolution.votes if resolution else {}).items(), key=lambda pair: -pair[1]
        )
    ]
    return QueueRow(
        item_stage=item_stage,
        summary=selectors.item_summary(item_stage.item),
        tally=tally,
        decision=decision_label(resolution),
    )


#: How many spot checks the queue page lists (the count is complete).
SPOT_CHECKS_LISTED = 20


def adjudication_queue_page(
    project: Project, *, reviewer: Any, after: str | None, before: str | None, per_page: int
) -> dict[str, Any]:
    """The reviewer's queue: the keyset page (``annotation.keyset``) of
    ``selectors.adjudication_queue`` next to cursor ``after`` / ``before`` (else the first),
    how many items wait (``selectors.adjudication_waiting``), the latest decisions, and
    beside them the spot checks drawn for ``reviewer`` (``agreement.spot_checks``) with the
    latest verdicts."""
    queue = selectors.adjudication_queue(project, reviewer=reviewer)
    page = keyset.keyset_page(
        queue,
        key=selectors.WAITING_SINCE,
        per_page=per_page,
        after=after,
        before=before,
        descending=False,
    )
    waiting = selectors.adjudication_waiting(project, reviewer=reviewer)
    spot = spot_checks.spot_check_queue(project, reviewer=reviewer)
    return {
        "spot_rows": [queue_row(item_stage) for item_stage in spot[:SPOT_CHECKS_LISTED]],
        "spot_waiting": spot.count(),
        "spot_recent": list(spot_checks.spot_checks_recent(project)),
        "spot_rates": [
            (stage, spot_checks.spot_check_rate(stage))
            for stage in project.stages.order_by("position")
            if spot_checks.spot_check_rate(stage)
        ],
        "page": page,
        "rows": [queue_row(item_stage) for item_stage in page.rows],
        "waiting": waiting,
        "recent": [
            (resolution, decision_label(resolution))
            for resolution in selectors.adjudication_recent(project)
        ],
    }


def decision_is_numeric(item_stage: ItemStage) -> bool:
    """Whether a decision on the item is a number: its kind offers no choices for it."""
    context = KindContext(stage=item_stage.stage, item_stage=item_stage)
    return get_kind(item_stage.stage.kind).choices(context) is None


def adjudication_page(project: Project, item_stage: ItemStage, *, reviewer: Any) -> dict[str, Any]:
    """One item to decide: its fields, every annotator's vote (pseudonymised), the choices with
    their vote counts, and its place in ``reviewer``'s queue."""
    stage = item_stage.stage
    kind = get_kind(stage.kind)
    votes = selectors.adjudication_votes(item_stage)
    counts: dict[str, int] = {}
    for row in votes:
        if row["value"] is not None:
            key = row["value"] if isinstance(row["value"], str) else json.dumps(row["value"])
            counts[key] = counts.get(key, 0) + 1
    categories = kind.choices(KindContext(stage=stage, item_stage=item_stage))
    choices = [
        {
            "value": category,
            "votes": counts.get(category if isinstance(category, str) else json.dumps(category), 0),
        }
        for category in (categories or [])
    ]
    queue = selectors.adjudication_queue(project, reviewer=reviewer)
    position = (
        queue.filter(completed_at__lt=item_stage.completed_at).count() + 1
        if item_stage.completed_at
        else None
    )
    return {
        "item_stage": item_stage,
        "stage": stage,
        "item": item_stage.item,
        "fields": selectors.item_fields(item_stage.item),
        "votes": votes,
        "choices": choices,
        "numeric": categories is None,
        "adjudication_template": kind.adjudication_template,
        "display_template": kind.display_template,
        "waiting": queue.count(),
        "position": position,
        "resolution": getattr(item_stage, "resolution", None),
        "decision": decision_label(getattr(item_stage, "resolution", None)),
        "decided": item_stage.state != ItemStage.State.ADJUDICATION,
    }


def next_to_decide(project: Project, *, reviewer: Any, after: ItemStage) -> ItemStage | None:
    """The oldest item in ``reviewer``'s queue other than ``after`` (just decided)."""
    return selectors.adjudication_queue(project, reviewer=reviewer).exclude(pk=after.pk).first()


def spot_check_page(project: Project, item_stage: ItemStage, *, reviewer: Any) -> dict[str, Any]:
    """One item drawn for a spot check: what the adjudication page shows (the item, the votes,
    the choices), the decision being checked, and the verdict when it is already checked."""
    context = adjudication_page(project, item_stage, reviewer=reviewer)
    check = getattr(item_stage, "spot_check", None) if item_stage.pk else None
    context.update(
        check=check,
        spot_waiting=spot_checks.spot_check_queue(project, reviewer=reviewer).count(),
        rate=spot_checks.spot_check_rate(item_stage.stage),
    )
    return context
