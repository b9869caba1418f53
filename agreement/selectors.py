"""Reads for the researchers' dashboards, the agreement refresh and the adjudication queue; the
votes of a stage (SQL and COPY) are read in ``agreement/votes.py`` and re-exported here.

Annotators never reach anything here: the views that call these selectors fetch the project with
``access_project(..., MONITOR)`` or ``(..., ADJUDICATE)`` first.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db.models import Count, F, Max, Min, Q, QuerySet, Window
from django.db.models.functions import Coalesce, RowNumber, Trunc

from agreement.models import AgreementSnapshot

# The votes of a stage are read in agreement/votes.py; callers keep reading them from here.
from agreement.votes import (  # noqa: F401  re-exported for the callers
    agreement_vote_sql,
    external_rater_key,
    last_phase,
    read_binary_copy,
    stage_categories,
    stage_gold,
    stage_skips,
    stage_votes,
    vote_sql,
)
from annotation.kinds import get_kind
from annotation.models import (
    Annotation,
    Assignment,
    Item,
    ItemStage,
    Membership,
    Project,
    Resolution,
    Role,
    Stage,
)
from annotation.selectors import annotations_visible, item_stages_with_final_votes

#: Metric names of AgreementSnapshot rows and how dashboards label them.
METRIC_LABELS = {
    "fleiss_kappa": "Fleiss' κ",
    "krippendorff_alpha_nominal": "Krippendorff's α (nominal)",
    "krippendorff_alpha_interval": "Krippendorff's α (interval)",
    "krippendorff_alpha_ordinal": "Krippendorff's α (ordinal)",
    "percent_agreement": "Percent agreement",
    "annotator_agreement": "Median annotator agreement with the majority",
}
#: The snapshot metric that holds the per-annotator table of a refresh.
ANNOTATOR_METRIC = "annotator_agreement"
#: Metrics plotted as the stage's headline agreement, in this order.
HEADLINE_METRICS = (
    "fleiss_kappa",
    "krippendorff_alpha_nominal",
    "krippendorff_alpha_interval",
    "krippendorff_alpha_ordinal",
)


# --- Agreement snapshots ----------------------------------------------------------------------------


def latest_snapshots_by_stage(
    stages: Iterable[Stage], *, metrics: Iterable[str] | None = None
) -> dict[int, dict[str, AgreementSnapshot]]:
    """{stage id: {metric: latest snapshot}} of the given stages (only ``metrics``, if given),
    in one query whatever the number of stages.

    The one rule for "the latest snapshot of a metric", which every reader calls: the snapshot
    with the greatest ``computed_at``, ties broken by the greater id. (``computed_at``, not the
    id: a backfill stores past moments after newer rows.) One window query, row_number() over
    (stage, metric), on PostgreSQL and SQLite alike."""
    snapshots = AgreementSnapshot.objects.filter(stage_id__in=[stage.pk for stage in stages])
    if metrics is not None:
        snapshots = snapshots.filter(metric__in=list(metrics))
    latest = snapshots.annotate(
        newest=Window(
            RowNumber(),
            partition_by=[F("stage_id"), F("metric")],
            order_by=[F("computed_at").desc(), F("pk").desc()],
        )
    ).filter(newest=1)
    result: dict[int, dict[str, AgreementSnapshot]] = defaultdict(dict)
    for snapshot in latest:
        result[snapshot.stage_id][snapshot.metric] = snapshot
    return dict(result)


def latest_snapshots(
    stage: Stage, *, metrics: Iterable[str] | None = None
) -> dict[str, AgreementSnapshot]:
    """{metric: the stage's latest snapshot of it} (``latest_snapshots_by_stage``'s rule)."""
    return latest_snapshots_by_stage([stage], metrics=metrics).get(stage.pk, {})


def agreement_history(
    stage: Stage, *, metrics: Iterable[str] | None = None, max_points: int | None = 400
) -> dict[str, list[AgreementSnapshot]]:
    """{metric: snapshots oldest first}. With ``max_points``, long histories are thinned to about
    that many evenly spaced snapshots per metric (always keeping the first and the last)."""
    snapshots = AgreementSnapshot.objects.filter(stage=stage).exclude(metric=ANNOTATOR_METRIC)
    if metrics is not None:
        snapshots = snapshots.filter(metric__in=list(metrics))
    history: dict[str, list[AgreementSnapshot]] = defaultdict(list)
    for snapshot in snapshots.order_by("computed_at", "pk").defer("details"):
        history[snapshot.metric].append(snapshot)
    if max_points:
        for metric, rows in history.items():
            if len(rows) > max_points:
                step = len(rows) / (max_points - 1)
                keep = sorted({min(round(k * step), len(rows) - 1) for k in range(max_points)})
                history[metric] = [rows[k] for k in keep] + (
                    [rows[-1]] if keep[-1] != len(rows) - 1 else []
                )
    return dict(history)


def agreement_history_table(stage: Stage, *, limit: int = 8) -> list[dict[str, Any]]:
    """The latest ``limit`` computations, newest first, one row each:
    {"computed_at", "metrics": {metric: snapshot}, "n_items", "n_annotators", "n_annotations"}."""
    moments = list(
        AgreementSnapshot.objects.filter(stage=stage)
        .exclude(metric=ANNOTATOR_METRIC)
        .values_list("computed_at", flat=True)
        .distinct()
        .order_by("-computed_at")[:limit]
    )
    rows: dict[datetime, dict[str, Any]] = {}
    for snapshot in (
        AgreementSnapshot.objects.filter(stage=stage, computed_at__in=moments)
        .exclude(metric=ANNOTATOR_METRIC)
        .defer("details")
    ):
        row = rows.setdefault(
            snapshot.computed_at,
            {
                "computed_at": snapshot.computed_at,
                "metrics": {},
                "n_items": snapshot.n_items,
                "n_annotators": snapshot.n_annotators,
                "n_annotations": snapshot.n_annotations,
            },
        )
        row["metrics"][snapshot.metric] = snapshot
    return [rows[moment] for moment in sorted(rows, reverse=True)]


def agreement_history_rows(stage: Stage) -> QuerySet[AgreementSnapshot]:
    """Every agreement snapshot of the stage (for the CSV), oldest first."""
    return (
        AgreementSnapshot.objects.filter(stage=stage)
        .exclude(metric=ANNOTATOR_METRIC)
        .order_by("computed_at", "pk")
    )


# --- Progress and throughput ------------------------------------------------------------------------


@dataclass(frozen=True)
class StageProgress:
    items: int
    open: int
    resolving: int
    adjudication: int
    resolved: int
    discarded: int
    annotations: int
    annotators: int
    active_leases: int
    paused_annotators: int

    @property
    def done(self) -> int:
        return self.resolved + self.discarded

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.items) if self.items else 0


def stage_progress(stage: Stage) -> StageProgress:
    """Counts of the stage's items by state, its annotations and annotators (four queries;
    ``agreement.stored`` keeps them for large stages)."""
    return stage_progress_from(stage_counts(stage), stage)


def stage_counts(stage: Stage) -> dict[str, int]:
    """The slow part of ``stage_progress``, as plain numbers (what ``agreement.stored`` keeps):
    the stage's item stages by state and in all, its annotations and their annotators."""
    states = dict(
        ItemStage.objects.filter(stage=stage)
        .values_list("state")
        .annotate(count=Count("pk"))
        .order_by()
    )
    annotation_counts = Annotation.objects.filter(item_stage__stage=stage).aggregate(
        annotations=Count("pk"), annotators=Count("annotator_id", distinct=True)
    )
    return {
        "items": sum(states.values()),
        "open": states.get(ItemStage.State.OPEN, 0),
        "resolving": states.get(ItemStage.State.RESOLVING, 0),
        "adjudication": states.get(ItemStage.State.ADJUDICATION, 0),
        "resolved": states.get(ItemStage.State.RESOLVED, 0),
        "discarded": states.get(ItemStage.State.DISCARDED, 0),
        "annotations": annotation_counts["annotations"],
        "annotators": annotation_counts["annotators"],
    }


def stage_progress_from(counts: dict[str, int], stage: Stage) -> StageProgress:
    """``counts`` (``stage_counts``, live or stored) with what is always read live because it
    is quick and changes by the second: the stage's active leases and paused annotators."""
    leases = Assignment.objects.filter(stage=stage, status=Assignment.Status.ACTIVE).count()
    paused = Membership.objects.filter(
        project_id=stage.project_id, role=Role.ANNOTATOR, is_paused=True
    ).count()
    return StageProgress(
        items=counts.get("items", 0),
        open=counts.get("open", 0),
        resolving=counts.get("resolving", 0),
        adjudication=counts.get("adjudication", 0),
        resolved=counts.get("resolved", 0),
        discarded=counts.get("discarded", 0),
        annotations=counts.get("annotations", 0),
        annotators=counts.get("annotators", 0),
        active_leases=leases,
        paused_annotators=paused,
    )


def _bucket_for(span: timedelta) -> tuple[str, timedelta]:
    """A truncation unit giving a readable number of bars for a time span."""
    if span <= timedelta(hours=6):
        return "minute", timedelta(minutes=1)
    if span <= timedelta(days=4):
        return "hour", timedelta(hours=1)
    if span <= timedelta(days=120):
        return "day", timedelta(days=1)
    return "week", timedelta(weeks=1)


@dataclass(frozen=True)
class ProgressSeries:
    """Per time bucket (start times, ascending): annotations submitted and items completed
    (resolved or discarded), with the bucket unit."""

    unit: str
    starts: list[datetime]
    annotations: list[int]
    completed: list[int]
    total_items: int

    @property
    def cumulative_annotations(self) -> list[int]:
        return np.cumsum(self.annotations).tolist() if self.annotations else []

    @property
    def cumulative_completed(self) -> list[int]:
        return np.cumsum(self.completed).tolist() if self.completed else []

    def rows(self) -> list[dict[str, Any]]:
        return [
            {
                "bucket_start": start,
                "annotations": annotations,
                "items_completed": completed,
                "cumulative_annotations": total_annotations,
                "cumulative_items_completed": total_completed,
            }
            for start, annotations, completed, total_annotations, total_completed in zip(
                self.starts,
                self.annotations,
                self.completed,
                self.cumulative_annotations,
                self.cumulative_completed,
                strict=True,
            )
        ]


def stage_progress_series(stage: Stage) -> ProgressSeries:
    """Annotations and completed items per time bucket, aggregated in the database (three
    queries: the time span, then one GROUP BY each)."""
    annotations = Annotation.objects.filter(item_stage__stage=stage)
    completed = ItemStage.objects.filter(
        stage=stage,
        state__in=[ItemStage.State.RESOLVED, ItemStage.State.DISCARDED],
        resolved_at__isnull=False,
    )
    total_items = ItemStage.objects.filter(stage=stage).count()
    span = annotations.aggregate(first=Min("created_at"), last=Max("created_at"))
    if span["first"] is None:
        return ProgressSeries("hour", [], [], [], total_items)
    unit, step = _bucket_for(span["last"] - span["first"])
    per_bucket_annotations = dict(
        annotations.annotate(bucket=Trunc("created_at", unit))
        .values_list("bucket")
        .annotate(count=Count("pk"))
        .order_by()
    )
    per_bucket_completed = dict(
        completed.annotate(bucket=Trunc("resolved_at", unit))
        .values_list("bucket")
        .annotate(count=Count("pk"))
        .order_by()
    )
    keys = set(per_bucket_annotations) | set(per_bucket_completed)
    start, end = min(keys), max(keys)
    starts = []
    moment = start
    while moment <= end:
        starts.append(moment)
        # Buckets start at UTC minutes, hours, midnights or Mondays (USE_TZ with UTC, no DST),
        # so adding the fixed step stays on bucket starts.
        moment += step
    return ProgressSeries(
        unit=unit,
        starts=starts,
        annotations=[per_bucket_annotations.get(bucket, 0) for bucket in starts],
        completed=[per_bucket_completed.get(bucket, 0) for bucket in starts],
        total_items=total_items,
    )


# --- Per-annotator table ------------------------------------------------------------------------


@dataclass
class AnnotatorRow:
    user_id: int
    name: str
    is_member: bool
    is_paused: bool
    paused_reason: str
    quality: dict[str, Any]

    def get(self, key: str) -> Any:
        if key == "name":
            return self.name.lower()
        if key == "status":
            return (self.is_paused, len(self.quality.get("flags") or ()))
        if key == "flags":
            return len(self.quality.get("flags") or ())
        return self.quality.get(key)


#: Columns the per-annotator table can be sorted by (URL ?sort=...), with the default direction.
ANNOTATOR_SORTS = {
    "name": "asc",
    "n_annotations": "desc",
    "majority_agreement": "asc",
    "gold_agreement": "asc",
    "median_seconds": "asc",
    "skip_rate": "desc",
    "mean_abs_deviation": "desc",
    "flags": "desc",
}


def annotator_rows(
    stage: Stage, *, sort: str = "majority_agreement", descending: bool | None = None
) -> tuple[list[AnnotatorRow], AgreementSnapshot | None]:
    """The per-annotator table of the stage's latest refresh, joined with the live membership
    (pause state) and the annotators' names; annotators who joined since the refresh appear
    with empty figures. Sorted by ``sort`` (missing values last)."""
    snapshot = latest_snapshots(stage, metrics=[ANNOTATOR_METRIC]).get(ANNOTATOR_METRIC)
    records = {
        row["rater"]: row for row in (snapshot.details.get("annotators", []) if snapshot else [])
    }
    memberships = {
        membership.user_id: membership
        for membership in Membership.objects.filter(
            project_id=stage.project_id, role=Role.ANNOTATOR
        )
    }
    user_ids = {key for key in records if key >= 0} | set(memberships)
    names = dict(get_user_model().objects.filter(pk__in=user_ids).values_list("pk", "username"))
    external = _external_names(stage, [key for key in records if key < 0])
    rows = []
    for key in sorted(set(records) | set(memberships)):
        membership = memberships.get(key)
        rows.append(
            AnnotatorRow(
                user_id=key,
                name=names.get(key) or external.get(key) or f"rater {key}",
                is_member=membership is not None,
                is_paused=bool(membership and membership.is_paused),
                paused_reason=membership.paused_reason if membership else "",
                quality=records.get(key, {"flags": []}),
            )
        )
    if sort not in ANNOTATOR_SORTS:
        sort = "majority_agreement"
    if descending is None:
        descending = ANNOTATOR_SORTS[sort] == "desc"
    present = [row for row in rows if row.get(sort) is not None]
    missing = [row for row in rows if row.get(sort) is None]
    present.sort(key=lambda row: (row.get(sort), row.name.lower()), reverse=descending)
    return present + missing, snapshot


def _external_names(stage: Stage, keys: list[int]) -> dict[int, str]:
    if not keys:
        return {}
    names = (
        Annotation.objects.filter(item_stage__stage=stage, annotator__isnull=True)
        .values_list("external_rater", flat=True)
        .distinct()
    )
    wanted = set(keys)
    found = {}
    for name in names:
        key = external_rater_key(name)
        if key in wanted:
            found[key] = name
    return found


# --- Label distribution ---------------------------------------------------------------------------


def resolved_values(stage: Stage) -> dict[str, int]:
    """{JSON text of a decided value: items of the stage decided so} (ties and items without
    enough votes left out)."""
    resolved: Counter[str] = Counter()
    for value, count in (
        Resolution.objects.filter(item_stage__stage=stage)
        .exclude(status__in=[Resolution.Status.NEEDS_ADJUDICATION, Resolution.Status.INSUFFICIENT])
        .values_list("value")
        .annotate(count=Count("pk"))
        .order_by()
    ):
        resolved[json.dumps(value)] += count
    return dict(resolved)


def label_distribution(
    stage: Stage,
    snapshots: dict[str, AgreementSnapshot],
    *,
    stored_resolved: dict[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Per value: votes and share (from the latest refresh), resolved items with that value
    (``resolved_values``: live, or ``stored_resolved`` when ``agreement.stored`` keeps them),
    and the per-category κ of the latest Fleiss snapshot."""
    primary = next((snapshots[metric] for metric in HEADLINE_METRICS if metric in snapshots), None)
    distribution = primary.details.get("vote_distribution", []) if primary else []
    kappa_rows = {}
    if "fleiss_kappa" in snapshots:
        kappa_rows = {
            json.dumps(row["category"]): row
            for row in snapshots["fleiss_kappa"].details.get("per_category", [])
        }
    resolved = Counter(resolved_values(stage) if stored_resolved is None else stored_resolved)
    total_resolved = sum(resolved.values())
    rows = []
    for entry in distribution:
        key = json.dumps(entry["value"])
        kappa = kappa_rows.get(key, {})
        rows.append(
            {
                "value": entry["value"],
                "votes": entry["votes"],
                "share": entry["share"],
                "resolved": resolved.get(key, 0),
                "resolved_share": (resolved.get(key, 0) / total_resolved)
                if total_resolved
                else None,
                "kappa": kappa.get("kappa"),
                "kappa_z": kappa.get("z"),
                "kappa_note": kappa.get("note"),
            }
        )
    return rows


# --- Disagreements ------------------------------------------------------------------------------

#: Filters of the disagreement drill-down (URL ?show=...).
DISAGREEMENT_FILTERS = {
    "split": "Any disagreement",
    "ties": "Ties and items sent to a reviewer",
    "adjudicated": "Decided by a reviewer",
    "all": "All resolved items",
}


#: When an item stage's votes became final: decided (``resolved_at``), else the last vote
#: (``completed_at``: waiting for a reviewer); never NULL. The disagreement list's order, walked
#: by the index ``item_stage_decided_idx`` (annotation/models.py, which spells the same
#: expression).
DECIDED_AT = "decided_at"


def decided_at(item_stage: str = "") -> Coalesce:
    """The expression of ``DECIDED_AT`` on the item stage the path ``item_stage`` leads to
    (``"item_stage__"`` from an annotation; empty on the item stage itself)."""
    return Coalesce(
        f"{item_stage}resolved_at", f"{item_stage}completed_at", f"{item_stage}opened_at"
    )


def disagreement_items(
    stage: Stage, *, show: str = "split", few: bool = False
) -> QuerySet[ItemStage]:
    """Item stages of the stage whose votes were not unanimous (or per ``show``), newest
    decision first (``DECIDED_AT``, annotated, then the id), with item and resolution joined.
    Page it with ``annotation.keyset.keyset_page(…, key=DECIDED_AT)``: the stage's index walks
    that order, so a page never sorts or counts the stage's rows.

    ``few``: the caller expects few rows (at most ``FEW_LISTED``, by their count) of a sparse
    filter (``SPARSE_STATUSES``): the candidates' ids are read first from the resolutions'
    partial index (``disagreement_candidates``) and the page sorts those, instead of walking
    the stage's index past every item stage that does not match (all of them, when none
    does). The rows are the same either way (the filter's rule still applies)."""
    # Never work in progress: an item open again (one more vote asked, or a route sent it
    # back) is not listed until its votes are final, so no vote is read while others still
    # cast or change theirs (the engine's rule, item_stages_with_final_votes).
    item_stages = (
        item_stages_with_final_votes(
            ItemStage.objects.filter(stage=stage, resolution__isnull=False)
        )
        .select_related("item", "resolution", "resolution__decided_by")
        .annotate(**{DECIDED_AT: decided_at()})
    )
    chosen = disagreement_filter(show)
    if chosen is not None:
        item_stages = item_stages.filter(chosen)
    if few and show in SPARSE_STATUSES:
        item_stages = item_stages.filter(pk__in=disagreement_candidates(stage, show))
    return item_stages.order_by(f"-{DECIDED_AT}", "-pk")


#: The filters that list few of a stage's item stages, by the resolution statuses they read
#: (``disagreement_filter``); the partial index ``resolution_rare_status_idx``
#: (annotation/models.py) holds exactly these resolutions.
SPARSE_STATUSES = {
    "ties": [Resolution.Status.TIE, Resolution.Status.NEEDS_ADJUDICATION],
    "adjudicated": [Resolution.Status.ADJUDICATED],
}
#: Up to how many listed item stages a sparse filter reads its candidates' ids first.
FEW_LISTED = 5000


def disagreement_candidates(stage: Stage, show: str) -> list[int]:
    """Ids of the stage's item stages that the sparse filter ``show`` (``SPARSE_STATUSES``)
    may list: a superset, which ``disagreement_filter`` narrows. Read from the resolutions'
    partial index (and, for ties, the item stages waiting for a reviewer, by the (stage,
    state) index), never by walking the stage's item stages."""
    ids = set(
        Resolution.objects.filter(
            status__in=SPARSE_STATUSES[show], item_stage__stage=stage
        ).values_list("item_stage_id", flat=True)
    )
    if show == "ties":
        ids.update(
            ItemStage.objects.filter(stage=stage, state=ItemStage.State.ADJUDICATION).values_list(
                "pk", flat=True
            )
        )
    return sorted(ids)


def disagreement_filter(show: str) -> Q | None:
    """Which of a stage's listed item stages ``show`` keeps (``DISAGREEMENT_FILTERS``; an
    unknown key is "split"), None for all of them: the one rule of the list, its CSV and
    their counts (``disagreement_counts``)."""
    if show == "all":
        return None
    if show == "ties":
        return Q(
            resolution__status__in=[Resolution.Status.TIE, Resolution.Status.NEEDS_ADJUDICATION]
        ) | Q(state=ItemStage.State.ADJUDICATION)
    if show == "adjudicated":
        return Q(resolution__status=Resolution.Status.ADJUDICATED)
    return ~Q(resolution__status=Resolution.Status.UNANIMOUS)


def disagreement_counts(stage: Stage) -> dict[str, int]:
    """How many item stages each disagreement filter lists ({show: count}, every key of
    ``DISAGREEMENT_FILTERS``), in one aggregate over the stage's listed item stages."""
    listed = item_stages_with_final_votes(
        ItemStage.objects.filter(stage=stage, resolution__isnull=False)
    )
    counted = listed.aggregate(
        **{
            show: Count("pk", filter=chosen)
            if (chosen := disagreement_filter(show))
            else Count("pk")
            for show in DISAGREEMENT_FILTERS
        }
    )
    return {show: int(counted[show] or 0) for show in DISAGREEMENT_FILTERS}


def votes_by_item(
    item_stages: Iterable[ItemStage], stage: Stage
) -> tuple[dict[int, dict[int, dict[str, Any]]], list[tuple[int, str]]]:
    """For a page of item stages: {item stage id: {rater key: {"value", "comment", "seconds"}}}
    and the raters who voted on any of them as (key, name), by name. One query for the
    annotations, one for the names."""
    kind = get_kind(stage.kind)
    ids = [item_stage.pk for item_stage in item_stages]
    votes: dict[int, dict[int, dict[str, Any]]] = defaultdict(dict)
    names: dict[int, str] = {}
    for item_stage_id, annotator_id, rater_name, username, payload, seconds in (
        annotations_visible(Annotation.objects.filter(item_stage_id__in=ids), None)
        .values_list(
            "item_stage_id",
            "annotator_id",
            "external_rater",
            "annotator__username",
            "payload",
            "seconds_spent",
        )
        .order_by("pk")
    ):
        key = annotator_id if annotator_id is not None else external_rater_key(rater_name)
        names[key] = username or rater_name or f"rater {key}"
        votes[item_stage_id][key] = {
            "value": kind.vote(payload),
            "comment": (payload or {}).get("comment") or "",
            "seconds": seconds,
        }
    raters = sorted(names.items(), key=lambda pair: pair[1].lower())
    return dict(votes), raters


#: The payload fields ``item_summary`` shows, the first that holds text (after a sentence pair).
SUMMARY_FIELDS = ("text", "sentence", "question", "context", "scenario")
#: How much of a payload's JSON ``item_summary`` shows when no field of it is text.
SUMMARY_JSON_LENGTH = 300


def item_summary(item: Item) -> str:
    """A one-line rendering of an item's payload for tables: "a → b" of a sentence pair
    (``sentence_a``, ``sentence_b``), else the first of ``SUMMARY_FIELDS`` that is text, else
    the payload's JSON cut at ``SUMMARY_JSON_LENGTH`` characters; values as ``json_text``
    spells them. ``agreement.disagreements_sql`` spells the same in SQL."""
    payload = item.payload or {}
    if "sentence_a" in payload and "sentence_b" in payload:
        return f"{json_text(payload['sentence_a'])} → {json_text(payload['sentence_b'])}"
    for key in SUMMARY_FIELDS:
        if isinstance(payload.get(key), str):
            return payload[key]
    return json_text(payload)[:SUMMARY_JSON_LENGTH]


def json_text(value: Any) -> str:
    """A JSON value as a table cell shows it: a string as it is, anything else as JSON text as
    PostgreSQL spells jsonb (``", "`` and ``": "`` between parts, keys of an object shorter
    first and then by their UTF-8 bytes, text unescaped but for what JSON must escape), so the
    cells Python writes equal those PostgreSQL writes (``agreement.disagreements_sql``). Numbers
    are Python's spelling (``1.5``); PostgreSQL keeps a number's own digits (``1.50``)."""
    if isinstance(value, str):
        return value
    return json.dumps(_jsonb_ordered(value), ensure_ascii=False)


def _jsonb_ordered(value: Any) -> Any:
    # jsonb keeps an object's keys shorter first, then by their bytes (PostgreSQL's
    # jsonb ordering); objects read from jsonb columns already are, those built in Python
    # (a kind's structured vote) may not be.
    if isinstance(value, dict):
        ordered = sorted(value, key=lambda key: (len(key.encode()), key.encode()))
        return {key: _jsonb_ordered(value[key]) for key in ordered}
    if isinstance(value, list):
        return [_jsonb_ordered(part) for part in value]
    return value


def item_fields(item: Item) -> list[tuple[str, str]]:
    """The payload's fields for a full item view (the `gold` bookkeeping field left out)."""
    fields = []
    for key, value in (item.payload or {}).items():
        if key == "gold":
            continue
        fields.append(
            (
                key.replace("_", " "),
                value if isinstance(value, str) else json.dumps(value, ensure_ascii=False),
            )
        )
    return fields


# --- Adjudication ---------------------------------------------------------------------------------


#: Since when an item stage has waited for a reviewer (its last vote; never NULL): the
#: adjudication queue's order, walked by the index ``item_stage_adjudication_idx``
#: (annotation/models.py, which spells the same expression).
WAITING_SINCE = "waiting_since"


def adjudication_queue(project: Project, *, reviewer: Any = None) -> QuerySet[ItemStage]:
    """Item stages of the project waiting for a reviewer, oldest first (``WAITING_SINCE``,
    annotated, then the id); with ``reviewer``, without those the reviewer annotated (nobody
    judges their own work). Page it with ``annotation.keyset.keyset_page(…,
    key=WAITING_SINCE, descending=False)``."""
    queue = ItemStage.objects.filter(stage__project=project, state=ItemStage.State.ADJUDICATION)
    if reviewer is not None:
        queue = queue.exclude(annotations__annotator=reviewer)
    return (
        queue.select_related("item", "stage", "resolution")
        .annotate(**{WAITING_SINCE: Coalesce("completed_at", "opened_at")})
        .order_by(WAITING_SINCE, "pk")
    )


def adjudication_waiting(project: Project, *, reviewer: Any = None) -> int:
    """How many items ``adjudication_queue(project, reviewer=reviewer)`` holds. A reviewer who
    annotated nothing in the project (the usual case) waits for every item the project sends
    to a reviewer: counted from the item stages' state index alone, without looking for the
    reviewer's votes item by item."""
    # The stages' ids, not a join on the project: with the join the planner walks every item
    # stage of the project looking for the reviewer's votes (seconds at 300,000 items); with
    # the ids it reads the reviewer's own votes from the annotator index.
    stage_ids = list(project.stages.values_list("pk", flat=True))
    if (
        reviewer is not None
        and not Annotation.objects.filter(
            annotator=reviewer, item_stage__stage_id__in=stage_ids
        ).exists()
    ):
        reviewer = None
    return adjudication_queue(project, reviewer=reviewer).order_by().count()


def annotated_by(item_stage: ItemStage, user: Any) -> bool:
    """Whether `user` annotated this item stage (in any round or phase)."""
    return item_stage.annotations.filter(annotator=user).exists()


def adjudication_recent(project: Project, limit: int = 10) -> QuerySet[Resolution]:
    """The project's latest reviewer decisions, with who decided."""
    return (
        Resolution.objects.filter(
            item_stage__stage__project=project, status=Resolution.Status.ADJUDICATED
        )
        .select_related("item_stage__item", "item_stage__stage", "decided_by")
        .order_by("-computed_at")[:limit]
    )


def adjudication_votes(item_stage: ItemStage) -> list[dict[str, Any]]:
    """The votes on an item stage for its reviewer, in submission order, pseudonymised as
    "Annotator 1, 2, …" so that the decision weighs the answers, not who gave them: the
    current round's, and on a stage with phases its last phase's (the ones the policy counts;
    the earlier phases' work is the kind's to show, e.g. the edits being voted on)."""
    kind = get_kind(item_stage.stage.kind)
    annotations = annotations_visible(
        Annotation.objects.filter(item_stage=item_stage, round=item_stage.round), None
    )
    phase = last_phase(item_stage.stage)
    if phase is not None:
        annotations = annotations.filter(phase=phase)
    rows = []
    for number, (payload, seconds, created_at) in enumerate(
        annotations.order_by("created_at", "pk").values_list(
            "payload", "seconds_spent", "created_at"
        ),
        start=1,
    ):
        rows.append(
            {
                "label": f"Annotator {number}",
                "value": kind.vote(payload),
                "comment": (payload or {}).get("comment") or "",
                "seconds": seconds,
                "created_at": created_at,
            }
        )
    return rows


def reviewer_projects(user: User) -> list[Project]:
    """Projects where the user may adjudicate, each with `waiting` (items in the queue)."""
    projects = Project.objects.filter(is_active=True)
    if not user.is_superuser:
        projects = projects.filter(
            memberships__user=user, memberships__role__in=[Role.REVIEWER, Role.ADMIN]
        )
    return list(
        projects.distinct().annotate(
            waiting=Count(
                "stages__item_stages",
                filter=Q(stages__item_stages__state=ItemStage.State.ADJUDICATION),
            )
        )
    )


def latest_agreement(project: Project) -> list[AgreementSnapshot]:
    """The latest snapshot of every (stage, metric) of a project (``latest_snapshots_by_stage``'s
    rule), by stage position then metric."""
    stages = {stage.pk: stage for stage in Stage.objects.filter(project=project)}
    latest = latest_snapshots_by_stage(stages.values())
    snapshots = []
    for stage_id, by_metric in latest.items():
        for snapshot in by_metric.values():
            snapshot.stage = stages[stage_id]
            snapshots.append(snapshot)
    return sorted(snapshots, key=lambda snapshot: (snapshot.stage.position, snapshot.metric))
