"""The researchers' dashboards and the reviewers' adjudication queue (CONTRIBUTING.md, "Thin views" and "htmx screens").

One module for the research pages (about 700 lines): the dashboard, stage, disagreement and
adjudication views share one context builder and page decorator.

Who sees what (checked by access_project before anything is read):

* dashboards, figures, CSV tables, pausing annotators: the project's researchers and admins
  (MONITOR); reviewers and annotators get 403, people outside the project 404;
* the adjudication queue and decisions: reviewers and admins (ADJUDICATE). Reviewers see every
  annotator's vote on the item they decide, pseudonymised per item as "Annotator 1, 2, …" in
  submission order, so that a decision weighs answers rather than people; researchers see
  usernames (they manage the annotators) in the per-annotator table and the disagreement view.

Annotators can reach none of these pages. htmx requests get named partials of the same page
template; every hx-* sits beside a real href or form action.
"""

from __future__ import annotations

import csv
import json
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from agreement import headlines
from agreement import plots as research_plots
from agreement import selectors as research_selectors
from agreement import services as agreement_services
from agreement.models import AgreementRefresh
from annotation import services
from annotation.access import ADJUDICATE, MONITOR, access_project, access_stage
from annotation.errors import ApplicationError, NotFound, PermissionDenied
from annotation.kinds import KindContext, get_kind
from annotation.models import ItemStage, Project, Stage
from annotation.navigation import project_tabs
from annotation.selectors import item_stages_with_final_votes
from annotation.views import page
from releases.writers import csv_timestamp, spreadsheet_safe

PAGE_SIZE = 50
LIVE_REFRESH = "every 30s"


#: The same sign-in and error handling as the annotator pages.
research_page = page


def _base_context(request, project: Project, **extra: Any) -> dict[str, Any]:
    return {"project": project, "project_tabs": project_tabs(project, project.user_roles), **extra}


# --- Project overview ---------------------------------------------------------------------------


@require_GET
@research_page
def dashboard(request, slug: str):
    project = access_project(request.user, slug, MONITOR)
    stages = list(project.stages.order_by("position"))
    latest = research_selectors.latest_snapshots_by_stage(stages)
    # A workflow that computes its stages' reliability itself gives the figure (one source for
    # both pages; agreement.headlines).
    provided = headlines.provided_headlines(project, stages)
    for stage in stages:
        stage.progress = research_selectors.stage_progress(stage)
        stage.latest = latest.get(stage.pk, {})
        stage.headline = provided.get(stage.pk) or next(
            (stage.latest[m] for m in research_selectors.HEADLINE_METRICS if m in stage.latest),
            None,
        )
        stage.kind_label = _kind_label(stage.kind)
    return render(
        request,
        "agreement/dashboard.html",
        _base_context(request, project, stages=stages),
    )


def _kind_label(key: str) -> str:
    try:
        return get_kind(key).label
    except ApplicationError:
        return key


# --- Stage dashboard ----------------------------------------------------------------------------


def _sort_arguments(request) -> tuple[str, bool | None]:
    """The per-annotator table's order: from the query string, or from a form that re-renders
    the table (pause/resume posts the order it was shown in)."""
    source = request.POST if request.method == "POST" else request.GET
    sort = source.get("sort", "majority_agreement")
    if sort not in research_selectors.ANNOTATOR_SORTS:
        sort = "majority_agreement"
    direction = source.get("dir")
    return sort, None if direction not in ("asc", "desc") else direction == "desc"


def _stage_context(request, project: Project, stage: Stage) -> dict[str, Any]:
    snapshots = research_selectors.latest_snapshots(stage)
    progress = research_selectors.stage_progress(stage)
    refresh = AgreementRefresh.of_stage(stage.pk)
    sort, descending = _sort_arguments(request)
    rows, annotator_snapshot = research_selectors.annotator_rows(
        stage, sort=sort, descending=descending
    )
    # Members who have done nothing in this stage are listed in one line under the table.
    annotators = [
        row for row in rows if row.quality.get("n_annotations") or row.quality.get("n_decisions")
    ]
    inactive = [row for row in rows if row not in annotators]
    if descending is None:
        descending = research_selectors.ANNOTATOR_SORTS[sort] == "desc"
    headline = [
        snapshots[metric]
        for metric in (*research_selectors.HEADLINE_METRICS, "percent_agreement")
        if metric in snapshots
    ]
    latest = headline[0] if headline else None
    history = research_selectors.agreement_history_table(stage)
    history_metrics = [
        metric
        for metric in (*research_selectors.HEADLINE_METRICS, "percent_agreement")
        if any(metric in row["metrics"] for row in history)
    ]
    kind = get_kind(stage.kind)
    return _base_context(
        request,
        project,
        stage=stage,
        stages=list(project.stages.order_by("position")),
        kind_label=kind.label,
        numeric=not kind.agreement.categorical,
        snapshots=snapshots,
        headline=headline,
        latest=latest,
        progress=progress,
        since_refresh=max(progress.annotations - latest.n_annotations, 0)
        if latest
        else progress.annotations,
        annotators=annotators,
        inactive=inactive,
        has_gold=any(row.quality.get("n_gold") for row in annotators),
        annotator_snapshot=annotator_snapshot,
        flagged=sum(1 for row in annotators if row.quality.get("flags")),
        sort=sort,
        descending=descending,
        annotator_columns=_annotator_columns(
            sort,
            descending,
            numeric=not kind.agreement.categorical,
            has_gold=any(row.quality.get("n_gold") for row in annotators),
        ),
        labels=research_selectors.label_distribution(stage, snapshots),
        history=history,
        history_metrics=history_metrics,
        version=f"{refresh.computed_changes}-{progress.annotations}-{progress.done}",
        live_refresh=LIVE_REFRESH,
        refresh_interval=int(settings.AGREEMENT_REFRESH_INTERVAL),
        stale=refresh.stale,
    )


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


def _annotator_columns(
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
            next_dir, aria = research_selectors.ANNOTATOR_SORTS[key], None
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


@require_GET
@research_page
def stage_dashboard(request, slug: str, stage_slug: str):
    project = access_project(request.user, slug, MONITOR)
    stage = access_stage(request.user, project, stage_slug)
    context = _stage_context(request, project, stage)
    part = request.GET.get("part")
    if request.htmx and part in ("live", "annotators"):
        return render(request, f"agreement/stage.html#{part}", context)
    return render(request, "agreement/stage.html", context)


@require_POST
@research_page
def stage_refresh(request, slug: str, stage_slug: str):
    """Ask for the stage's figures to be recomputed now (from every annotation)."""
    project = access_project(request.user, slug, MONITOR)
    stage = access_stage(request.user, project, stage_slug)
    agreement_services.stage_agreement_refresh_soon(stage_id=stage.pk)
    messages.success(request, "The figures are being recomputed; they appear within a minute.")
    url = reverse("agreement:stage", args=[project.slug, stage.slug])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@require_POST
@research_page
def annotator_pause(request, slug: str, user_id: int):
    """Pause or resume an annotator (from the per-annotator table of a stage)."""
    project = access_project(request.user, slug, MONITOR)
    paused = request.POST.get("paused") == "1"
    stage_slug = request.POST.get("stage", "")
    stage = access_stage(request.user, project, stage_slug) if stage_slug else None
    membership = services.membership_set_paused(
        project=project, user_id=user_id, paused=paused, reason=request.POST.get("reason", "")
    )
    name = membership.user.get_username()
    if request.htmx and stage is not None:
        return render(
            request,
            "agreement/stage.html#annotators",
            _stage_context(request, project, stage),
        )
    messages.success(
        request,
        f"{name} is paused: they get no new items in {project.name}."
        if paused
        else f"{name} can annotate again.",
    )
    if stage is not None:
        return redirect(reverse("agreement:stage", args=[project.slug, stage.slug]) + "#annotators")
    return redirect("agreement:dashboard", slug=project.slug)


# --- Figures ------------------------------------------------------------------------------------

PLOTS = ("agreement", "progress", "annotators")


@require_GET
@research_page
def stage_plot(request, slug: str, stage_slug: str, plot: str):
    project = access_project(request.user, slug, MONITOR)
    stage = access_stage(request.user, project, stage_slug)
    if plot not in PLOTS:
        raise NotFound(f"There is no figure {plot!r}.")
    if plot == "agreement":
        history = research_selectors.agreement_history(
            stage, metrics=research_selectors.HEADLINE_METRICS
        )
        series = [
            research_plots.Series(
                label=research_selectors.METRIC_LABELS.get(metric, metric),
                times=[row.computed_at for row in rows],
                values=[row.value for row in rows],
                lows=[row.ci_low for row in rows],
                highs=[row.ci_high for row in rows],
            )
            for metric in research_selectors.HEADLINE_METRICS
            if (rows := history.get(metric))
        ]
        svg = research_plots.agreement_over_time(series)
    elif plot == "progress":
        progress = research_selectors.stage_progress_series(stage)
        svg = research_plots.progress_over_time(
            progress.starts,
            progress.annotations,
            progress.cumulative_completed,
            progress.total_items,
            progress.unit,
        )
    else:
        rows, _ = research_selectors.annotator_rows(
            stage, sort="majority_agreement", descending=True
        )
        points = []
        agree = compared = 0
        for row in rows:
            quality = row.quality
            if not quality.get("n_compared"):
                continue
            low, high = research_plots.wilson_interval(quality["n_agree"], quality["n_compared"])
            points.append(
                research_plots.AnnotatorPoint(
                    label=row.name,
                    rate=quality["majority_agreement"],
                    low=low,
                    high=high,
                    flagged=bool(quality.get("flags")),
                )
            )
            agree += quality["n_agree"]
            compared += quality["n_compared"]
        svg = research_plots.annotator_agreement(points, agree / compared if compared else None)
    response = HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
    response["Cache-Control"] = "private, max-age=30"
    if request.GET.get("download"):
        response["Content-Disposition"] = (
            f'attachment; filename="{project.slug}-{stage.slug}-{plot}.svg"'
        )
    return response


# --- CSV tables ---------------------------------------------------------------------------------


class _Echo:
    def write(self, value: str) -> str:
        return value


def _csv_cell(value: Any) -> Any:
    """None as an empty cell; text made inert for spreadsheets (``spreadsheet_safe``);
    timestamps in ISO 8601, UTC, with the offset (``csv_timestamp``); numbers and booleans as
    they are."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        return csv_timestamp(value)
    if isinstance(value, str):
        return spreadsheet_safe(value)
    return value


def csv_response(filename: str, header: list[str], rows) -> StreamingHttpResponse:
    """A streamed CSV download: a BOM (spreadsheet programs then read UTF-8), the header, then
    the rows, every text cell made safe to open in a spreadsheet."""
    writer = csv.writer(_Echo())

    def lines():
        yield "\ufeff" + writer.writerow(header)
        for row in rows:
            yield writer.writerow([_csv_cell(value) for value in row])

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


CSV_TABLES = ("agreement", "annotators", "labels", "progress", "disagreements")


@require_GET
@research_page
def stage_csv(request, slug: str, stage_slug: str, table: str):
    project = access_project(request.user, slug, MONITOR)
    stage = access_stage(request.user, project, stage_slug)
    if table not in CSV_TABLES:
        raise NotFound(f"There is no table {table!r}.")
    filename = f"{project.slug}-{stage.slug}-{table}.csv"
    if table == "agreement":
        header = [
            "computed_at",
            "metric",
            "value",
            "ci_low",
            "ci_high",
            "se",
            "ci_method",
            "n_items",
            "n_annotators",
            "n_annotations",
        ]
        rows = (
            [
                snapshot.computed_at,
                snapshot.metric,
                snapshot.value,
                snapshot.ci_low,
                snapshot.ci_high,
                snapshot.details.get("se"),
                snapshot.details.get("ci_method"),
                snapshot.n_items,
                snapshot.n_annotators,
                snapshot.n_annotations,
            ]
            for snapshot in research_selectors.agreement_history_rows(stage).iterator(
                chunk_size=2000
            )
        )
        return csv_response(filename, header, rows)
    if table == "annotators":
        sort, descending = _sort_arguments(request)
        annotators, _ = research_selectors.annotator_rows(stage, sort=sort, descending=descending)
        fields = [
            "n_annotations",
            "n_votes",
            "n_compared",
            "n_agree",
            "majority_agreement",
            "n_gold",
            "n_gold_agree",
            "gold_agreement",
            "median_seconds",
            "n_skipped",
            "n_decisions",
            "skip_rate",
            "mean_abs_deviation",
        ]
        header = ["user_id", "annotator", "paused", *fields, "flags"]
        rows = (
            [
                row.user_id,
                row.name,
                row.is_paused,
                *[row.quality.get(field) for field in fields],
                "; ".join(row.quality.get("flags") or []),
            ]
            for row in annotators
        )
        return csv_response(filename, header, rows)
    if table == "labels":
        snapshots = research_selectors.latest_snapshots(stage)
        header = ["value", "votes", "share", "resolved_items", "resolved_share", "kappa", "kappa_z"]
        rows = (
            [
                row["value"],
                row["votes"],
                row["share"],
                row["resolved"],
                row["resolved_share"],
                row["kappa"],
                row["kappa_z"],
            ]
            for row in research_selectors.label_distribution(stage, snapshots)
        )
        return csv_response(filename, header, rows)
    if table == "progress":
        series = research_selectors.stage_progress_series(stage)
        header = [
            "bucket_start",
            "bucket",
            "annotations",
            "items_completed",
            "cumulative_annotations",
            "cumulative_items_completed",
        ]
        rows = (
            [
                row["bucket_start"],
                series.unit,
                row["annotations"],
                row["items_completed"],
                row["cumulative_annotations"],
                row["cumulative_items_completed"],
            ]
            for row in series.rows()
        )
        return csv_response(filename, header, rows)
    show = _show_argument(request)
    header = [
        "item_stage_id",
        "external_id",
        "item",
        "resolution_status",
        "resolved_value",
        "decided_by",
        "reason",
        "annotator",
        "vote",
        "comment",
        "seconds_spent",
    ]
    return csv_response(filename, header, _disagreement_csv_rows(stage, show))


def _disagreement_csv_rows(stage: Stage, show: str):
    """One row per (item, annotator): the long format analysis scripts expect."""
    item_stages = research_selectors.disagreement_items(stage, show=show)
    paginator = Paginator(item_stages, 500)
    for number in paginator.page_range:
        page = list(paginator.page(number).object_list)
        votes, raters = research_selectors.votes_by_item(page, stage)
        names = dict(raters)
        for item_stage in page:
            resolution = item_stage.resolution
            decided_by = resolution.decided_by.get_username() if resolution.decided_by else ""
            for rater, vote in votes.get(item_stage.pk, {}).items():
                yield [
                    item_stage.pk,
                    item_stage.item.external_id,
                    research_selectors.item_summary(item_stage.item),
                    resolution.status,
                    json.dumps(resolution.value, ensure_ascii=False)
                    if not isinstance(resolution.value, str)
                    else resolution.value,
                    decided_by,
                    resolution.reason,
                    names.get(rater, rater),
                    vote["value"] if isinstance(vote["value"], str) else json.dumps(vote["value"]),
                    vote["comment"],
                    vote["seconds"],
                ]


# --- Disagreements ------------------------------------------------------------------------------


def _show_argument(request) -> str:
    show = request.GET.get("show", "split")
    return show if show in research_selectors.DISAGREEMENT_FILTERS else "split"


@require_GET
@research_page
def disagreements(request, slug: str, stage_slug: str):
    project = access_project(request.user, slug, MONITOR)
    stage = access_stage(request.user, project, stage_slug)
    show = _show_argument(request)
    paginator = Paginator(research_selectors.disagreement_items(stage, show=show), PAGE_SIZE)
    page = paginator.get_page(request.GET.get("page"))
    rows = list(page.object_list)
    votes, raters = research_selectors.votes_by_item(rows, stage)
    kind = get_kind(stage.kind)
    categories = kind.categories(stage.config) or []
    for item_stage in rows:
        item_stage.summary = research_selectors.item_summary(item_stage.item)
        item_stage.cells = [votes.get(item_stage.pk, {}).get(rater) for rater, _ in raters]
    return render(
        request,
        "agreement/disagreements.html",
        _base_context(
            request,
            project,
            stage=stage,
            page=page,
            rows=rows,
            raters=raters,
            show=show,
            filters=research_selectors.DISAGREEMENT_FILTERS,
            categories=categories,
            numeric=not kind.agreement.categorical,
        ),
    )


# --- Adjudication -------------------------------------------------------------------------------


@require_GET
@research_page
def adjudication_queue(request, slug: str):
    project = access_project(request.user, slug, ADJUDICATE)
    paginator = Paginator(
        research_selectors.adjudication_queue(project, reviewer=request.user), PAGE_SIZE
    )
    page = paginator.get_page(request.GET.get("page"))
    rows = list(page.object_list)
    for item_stage in rows:
        item_stage.summary = research_selectors.item_summary(item_stage.item)
        resolution = getattr(item_stage, "resolution", None)
        categories = [
            str(c)
            for c in (get_kind(item_stage.stage.kind).categories(item_stage.stage.config) or [])
        ]
        item_stage.tally = [
            (value, count, categories.index(value) % 6 + 1 if value in categories else 0)
            for value, count in sorted(
                (resolution.votes if resolution else {}).items(), key=lambda pair: -pair[1]
            )
        ]
    return render(
        request,
        "agreement/adjudication_queue.html",
        _base_context(
            request,
            project,
            page=page,
            rows=rows,
            waiting=paginator.count,
            recent=research_selectors.adjudication_recent(project),
        ),
    )


def _adjudication_item(user, project: Project, item_stage_id: int) -> ItemStage:
    """An item stage a reviewer may open: waiting for adjudication, or already decided — never
    one still being annotated (its votes are not final, and showing them would unblind the
    annotators still at work: the same 404 as an unknown id; the engine's rule,
    annotation.selectors.item_stages_with_final_votes) — and never one the reviewer
    annotated (403: nobody judges their own work)."""
    item_stage = (
        item_stages_with_final_votes(ItemStage.objects.filter(pk=item_stage_id))
        .select_related("item", "stage", "resolution")
        .filter(stage__project=project)
        .first()
    )
    if item_stage is None:
        raise NotFound("There is no such item in this project.")
    if research_selectors.annotated_by(item_stage, user):
        raise PermissionDenied(
            "You annotated this item, so another reviewer decides it; it is not in your queue."
        )
    return item_stage


def _adjudication_context(
    request, project: Project, item_stage: ItemStage, **extra: Any
) -> dict[str, Any]:
    stage = item_stage.stage
    kind = get_kind(stage.kind)
    votes = research_selectors.adjudication_votes(item_stage)
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
    queue = research_selectors.adjudication_queue(project, reviewer=request.user)
    position = (
        queue.filter(completed_at__lt=item_stage.completed_at).count() + 1
        if item_stage.completed_at
        else None
    )
    return _base_context(
        request,
        project,
        item_stage=item_stage,
        stage=stage,
        item=item_stage.item,
        fields=research_selectors.item_fields(item_stage.item),
        votes=votes,
        choices=choices,
        numeric=categories is None,
        adjudication_template=kind.adjudication_template,
        display_template=kind.display_template,
        waiting=queue.count(),
        position=position,
        resolution=getattr(item_stage, "resolution", None),
        decided=item_stage.state != ItemStage.State.ADJUDICATION,
        **extra,
    )


def _parse_decision(raw: str, numeric: bool) -> Any:
    raw = (raw or "").strip()
    if not raw:
        raise ApplicationError("Choose the decided value.", {"value": "required"})
    if not numeric:
        return raw
    try:
        number = float(raw)
    except ValueError:
        raise ApplicationError(
            f"The decision must be a number (got {raw!r}).", {"value": "a number"}
        ) from None
    return int(number) if number.is_integer() else number


@require_http_methods(["GET", "POST"])
@research_page
def adjudicate(request, slug: str, item_stage_id: int):
    project = access_project(request.user, slug, ADJUDICATE)
    item_stage = _adjudication_item(request.user, project, item_stage_id)
    template = "agreement/adjudicate.html"
    if request.method == "GET":
        context = _adjudication_context(request, project, item_stage)
        return render(request, f"{template}#decision" if request.htmx else template, context)
    context = KindContext(stage=item_stage.stage, item_stage=item_stage)
    numeric = get_kind(item_stage.stage.kind).choices(context) is None
    reason = request.POST.get("reason", "")
    try:
        value = _parse_decision(request.POST.get("value", ""), numeric)
        services.item_stage_adjudicate(
            item_stage_id=item_stage.pk, reviewer=request.user, value=value, reason=reason
        )
    except ApplicationError as error:
        context = _adjudication_context(
            request,
            project,
            item_stage,
            error=error,
            posted_value=request.POST.get("value", ""),
            posted_reason=reason,
        )
        return render(
            request,
            f"{template}#decision" if request.htmx else template,
            context,
            status=error.status,
        )
    following = (
        research_selectors.adjudication_queue(project, reviewer=request.user)
        .exclude(pk=item_stage.pk)
        .first()
    )
    summary = research_selectors.item_summary(item_stage.item)
    messages.success(request, f"Decided {item_stage.item.external_id} ({summary[:60]}): {value}.")
    if following is None:
        url = reverse("agreement:adjudication", args=[project.slug])
    else:
        url = reverse("agreement:adjudicate", args=[project.slug, following.pk])
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)
