"""The researchers' dashboards and the reviewers' adjudication queue (CONTRIBUTING.md, "Thin views" and "htmx screens").

Each view reads its input with a form (``agreement.forms``), fetches through ``access_*``
(``annotation.access``, ``agreement.access``), calls one selector or service and renders:
what a page shows is gathered by ``agreement.pages``, figures by ``agreement.figures``, CSV
tables by ``agreement.exports``.

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

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.http import HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from agreement import exports, figures, pages, spot_checks, stored
from agreement import selectors as research_selectors
from agreement import services as agreement_services
from agreement.access import access_adjudication_item, access_spot_check_item
from agreement.decisions import may_open_items
from agreement.forms import (
    AdjudicationForm,
    AnnotatorOrderForm,
    AnnotatorPauseForm,
    DisagreementFilterForm,
    KeysetForm,
    SpotCheckForm,
)
from annotation import services
from annotation.access import ADJUDICATE, MONITOR, ProjectAccess, access_project, access_stage
from annotation.errors import ApplicationError, NotFound
from annotation.forms import form_error
from annotation.navigation import project_tabs
from annotation.web import PageRequest, csv_response, page
from rungwise.replica import reads_from_replica

PAGE_SIZE = 50
#: The figures and CSV tables a stage offers (``agreement.figures``, ``agreement.exports``).
PLOTS = figures.PLOTS
CSV_TABLES = exports.CSV_TABLES

#: The same sign-in and error handling as the annotator pages.
research_page = page


def _base_context(access: ProjectAccess, **extra: Any) -> dict[str, Any]:
    """What every research page shows around its content: the project and its tabs (for the
    roles ``access_project`` found), and whether rows link to their items' pages."""
    project = access.project
    return {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "item_links": may_open_items(access.roles),
        **extra,
    }


def _order_form(request: PageRequest) -> AnnotatorOrderForm:
    """The per-annotator table's order: from the query string, or from a form that re-renders
    the table (pause/resume posts the order it was shown in)."""
    return AnnotatorOrderForm(request.POST if request.method == "POST" else request.GET)


# --- Project overview ---------------------------------------------------------------------------


@require_GET
@research_page
@reads_from_replica
def dashboard(request: PageRequest, slug: str) -> HttpResponseBase:
    access = access_project(request.user, slug, MONITOR)
    project = access.project
    stages = pages.dashboard_stages(project)
    context = _base_context(
        access,
        stages=stages,
        any_counted=any(row.counted_at for row in stages),
        stored_max_age=int(settings.AGREEMENT_STORED_MAX_AGE),
    )
    return render(request, "agreement/dashboard.html", context)


# --- Stage dashboard ----------------------------------------------------------------------------


@require_GET
@research_page
@reads_from_replica
def stage_dashboard(request: PageRequest, slug: str, stage_slug: str) -> HttpResponseBase:
    access = access_project(request.user, slug, MONITOR)
    project = access.project
    stage = access_stage(request.user, project, stage_slug)
    order = _order_form(request)
    sort, descending = order.order()
    every = order.every_row()
    part = request.GET.get("part")
    if request.htmx and part == "annotators":
        context = _base_context(
            access,
            **pages.annotators_part(stage, sort=sort, descending=descending, every=every),
        )
        return render(request, "agreement/stage.html#annotators", context)
    if request.htmx and part == "live":
        return render(
            request, "agreement/stage.html#live", _base_context(access, **pages.stage_live(stage))
        )
    context = _base_context(
        access, **pages.stage_page(project, stage, sort=sort, descending=descending, every=every)
    )
    return render(request, "agreement/stage.html", context)


@require_POST
@research_page
def stage_refresh(request: PageRequest, slug: str, stage_slug: str) -> HttpResponseBase:
    """Ask for the stage's figures to be recomputed now (from every annotation)."""
    project = access_project(request.user, slug, MONITOR).project
    stage = access_stage(request.user, project, stage_slug)
    agreement_services.stage_agreement_refresh_soon(stage_id=stage.pk)
    messages.success(request, "The figures are being recomputed; they appear within a minute.")
    url = reverse("agreement:stage", args=[project.slug, stage.slug])
    return HttpResponseClientRedirect(url) if request.htmx else redirect(url)


@require_POST
@research_page
def annotator_pause(request: PageRequest, slug: str, user_id: int) -> HttpResponseBase:
    """Pause or resume an annotator (from the per-annotator table of a stage)."""
    access = access_project(request.user, slug, MONITOR)
    project = access.project
    form = AnnotatorPauseForm(request.POST)
    form.is_valid()  # every field has a default: never invalid
    paused = form.cleaned_data["paused"]
    stage_slug = form.cleaned_data["stage"]
    stage = access_stage(request.user, project, stage_slug) if stage_slug else None
    membership = services.membership_set_paused(
        project=project, user_id=user_id, paused=paused, reason=form.cleaned_data["reason"]
    )
    name = membership.user.get_username()
    if request.htmx and stage is not None:
        sort, descending = form.order()
        context = pages.annotators_part(
            stage, sort=sort, descending=descending, every=form.every_row()
        )
        return render(request, "agreement/stage.html#annotators", _base_context(access, **context))
    messages.success(
        request,
        f"{name} is paused: they get no new items in {project.name}."
        if paused
        else f"{name} can annotate again.",
    )
    if stage is not None:
        return redirect(reverse("agreement:stage", args=[project.slug, stage.slug]) + "#annotators")
    return redirect("agreement:dashboard", slug=project.slug)


# --- Figures and CSV tables ---------------------------------------------------------------------


@require_GET
@research_page
@reads_from_replica
def stage_plot(request: PageRequest, slug: str, stage_slug: str, plot: str) -> HttpResponseBase:
    project = access_project(request.user, slug, MONITOR).project
    stage = access_stage(request.user, project, stage_slug)
    if not figures.offers(plot):
        raise NotFound(f"There is no figure {plot!r}.")
    if plot in PLOTS:
        svg, _ = stored.stage_figure_shown(stage, plot)
    else:
        svg = figures.stage_figure(stage, plot)
    response = HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
    response["Cache-Control"] = "private, max-age=30"
    if request.GET.get("download"):
        response["Content-Disposition"] = (
            f'attachment; filename="{project.slug}-{stage.slug}-{plot}.svg"'
        )
    return response


@require_GET
@research_page
def stage_csv(request: PageRequest, slug: str, stage_slug: str, table: str) -> HttpResponseBase:
    project = access_project(request.user, slug, MONITOR).project
    stage = access_stage(request.user, project, stage_slug)
    if not exports.offers(table):
        raise NotFound(f"There is no table {table!r}.")
    sort, descending = _order_form(request).order()
    show = DisagreementFilterForm(request.GET).selected()
    found = exports.stage_table(stage, table, sort=sort, descending=descending, show=show)
    return csv_response(
        f"{project.slug}-{stage.slug}-{table}.csv", found.header, found.rows, lines=found.lines
    )


# --- Disagreements ------------------------------------------------------------------------------


@require_GET
@research_page
@reads_from_replica
def disagreements(request: PageRequest, slug: str, stage_slug: str) -> HttpResponseBase:
    access = access_project(request.user, slug, MONITOR)
    project = access.project
    stage = access_stage(request.user, project, stage_slug)
    show = DisagreementFilterForm(request.GET).selected()
    after, before = KeysetForm(request.GET).cursors()
    context = pages.disagreement_page(
        stage, show=show, after=after, before=before, per_page=PAGE_SIZE
    )
    return render(request, "agreement/disagreements.html", _base_context(access, **context))


# --- Adjudication -------------------------------------------------------------------------------


@require_GET
@research_page
def adjudication_queue(request: PageRequest, slug: str) -> HttpResponseBase:
    access = access_project(request.user, slug, ADJUDICATE)
    project = access.project
    after, before = KeysetForm(request.GET).cursors()
    context = pages.adjudication_queue_page(
        project, reviewer=request.user, after=after, before=before, per_page=PAGE_SIZE
    )
    return render(request, "agreement/adjudication_queue.html", _base_context(access, **context))


@require_http_methods(["GET", "POST"])
@research_page
def adjudicate(request: PageRequest, slug: str, item_stage_id: int) -> HttpResponseBase:
    access = access_project(request.user, slug, ADJUDICATE)
    project = access.project
    item_stage = access_adjudication_item(request.user, project, item_stage_id)
    template = "agreement/adjudicate.html#decision" if request.htmx else "agreement/adjudicate.html"
    if request.method == "GET":
        context = pages.adjudication_page(project, item_stage, reviewer=request.user)
        return render(request, template, _base_context(access, **context))
    form = AdjudicationForm(request.POST, numeric=pages.decision_is_numeric(item_stage))
    try:
        if not form.is_valid():
            raise form_error(form)
        value = form.cleaned_data["value"]
        services.item_stage_adjudicate(
            item_stage_id=item_stage.pk,
            reviewer=request.user,
            value=value,
            reason=form.cleaned_data["reason"],
        )
    except ApplicationError as error:
        context = pages.adjudication_page(project, item_stage, reviewer=request.user)
        context.update(
            error=error,
            posted_value=request.POST.get("value", ""),
            posted_reason=request.POST.get("reason", ""),
        )
        return render(request, template, _base_context(access, **context), status=error.status)
    following = pages.next_to_decide(project, reviewer=request.user, after=item_stage)
    summary = research_selectors.item_summary(item_stage.item)
    messages.success(request, f"Decided {item_stage.item.external_id} ({summary[:60]}): {value}.")
    if following is None:
        url = reverse("agreement:adjudication", args=[project.slug])
    else:
        url = reverse("agreement:adjudicate", args=[project.slug, following.pk])
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


@require_http_methods(["GET", "POST"])
@research_page
def spot_check(request: PageRequest, slug: str, item_stage_id: int) -> HttpResponseBase:
    """A settled item drawn for a spot check: its votes and decision; the reviewer confirms it
    or overturns it with a value and a reason (``agreement.spot_checks``)."""
    access = access_project(request.user, slug, ADJUDICATE)
    project = access.project
    item_stage = access_spot_check_item(request.user, project, item_stage_id)
    if request.method == "GET":
        context = pages.spot_check_page(project, item_stage, reviewer=request.user)
        return render(request, "agreement/spot_check.html", _base_context(access, **context))
    form = SpotCheckForm(request.POST, numeric=pages.decision_is_numeric(item_stage))
    try:
        if not form.is_valid():
            raise form_error(form)
        check = spot_checks.spot_check_record(
            item_stage_id=item_stage.pk,
            reviewer=request.user,
            overturn=form.cleaned_data["overturn"],
            value=form.cleaned_data["value"],
            reason=form.cleaned_data["reason"],
        )
    except ApplicationError as error:
        context = pages.spot_check_page(project, item_stage, reviewer=request.user)
        context.update(
            error=error,
            posted_value=request.POST.get("value", ""),
            posted_reason=request.POST.get("reason", ""),
        )
        return render(
            request,
            "agreement/spot_check.html",
            _base_context(access, **context),
            status=error.status,
        )
    verdict = "confirmed" if check.verdict == check.Verdict.CONFIRMED else "overturned"
    messages.success(request, f"Spot check of {item_stage.item.external_id}: {verdict}.")
    following = spot_checks.spot_check_queue(project, reviewer=request.user).first()
    if following is None:
        return redirect("agreement:adjudication", slug=project.slug)
    return redirect("agreement:spot_check", slug=project.slug, item_stage_id=following.pk)
