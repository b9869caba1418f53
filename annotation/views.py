"""The annotator's pages: my projects → project → item screen (CONTRIBUTING.md, "Thin views" and "htmx screens").

Each view parses input, calls one access function and one service or selector, and renders one
page template; htmx requests get a named partial of the same template ("annotation/stage.html#item").
Every hx-* attribute sits beside a real href/action, so the loop works with JavaScript off:
POST → redirect → GET the next item.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, cast

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotation import selectors, services
from annotation.access import (
    access_assignment,
    access_own_answer,
    access_project,
    access_stage_for_annotator,
    user_roles,
)
from annotation.errors import ApplicationError
from annotation.kinds import get_kind
from annotation.models import Assignment, Item, Role, Stage
from annotation.navigation import (
    is_participant_view,
    items_left,
    project_tabs,
    work_gate,
    work_pending,
)
from annotation.phases import phase_of
from annotation.pipeline import pipeline_svg, project_pipeline_shown
from annotation.practice import PracticeFeedback, practice_feedback
from annotation.web import page

if TYPE_CHECKING:
    from annotation.models import Annotation

#: Reasons offered when skipping an item (the annotator may also type their own).
SKIP_REASONS = (
    "I can't judge this item",
    "The item is broken (garbled text, wrong language)",
    "Offensive or harmful content",
)
#: Form fields of the item screen that are not part of the kind's payload.
META_FIELDS = frozenset({"csrfmiddlewaretoken", "seconds_spent"})
MAX_SECONDS = services.submit.MAX_SECONDS_SPENT


# --- My projects, project -----------------------------------------------------------------


@require_GET
@page
def home(request):
    projects = selectors.home_projects(request.user)
    return render(request, "annotation/home.html", {"projects": projects})


@require_GET
@page
def project_detail(request, slug: str):
    access = access_project(request.user, slug)
    project = access.project
    stages = selectors.project_stages(request.user, access)
    graph = counted_at = None
    if access.holds({Role.RESEARCHER, Role.REVIEWER, Role.ADMIN}):
        pipeline_stages, edges, counted_at = project_pipeline_shown(project)
        graph = pipeline_svg(pipeline_stages, edges)
    return render(
        request,
        "annotation/project.html",
        {
            "project": project,
            "project_tabs": project_tabs(project, access.roles),
            "roles": sorted(access.roles),
            "stages": stages,
            "is_annotator": any(row.progress is not None for row in stages),
            "pipeline_svg": graph,
            "pipeline_counted_at": counted_at,
        },
    )


# --- The item screen ----------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@page
def stage_annotate(request, stage_id: int):
    """The item screen. GET shows the item the annotator holds in this stage, or a start button;
    it never takes an item (a link preview or a prefetch must not lease one). POST leases the
    next item: htmx gets the screen in the response, a plain form is redirected to GET (PRG).
    A work gate (annotation.navigation) may send the annotator elsewhere first."""
    practice_id = str(request.GET.get(PRACTICE_PARAMETER, ""))
    if request.method == "GET" and practice_id.isdigit():
        # After a practice answer sent without JavaScript (PRG): its feedback, before a work
        # gate sends the annotator on (as the htmx answer shows it); Continue meets the gate.
        reached = access_stage_for_annotator(user=request.user, stage_id=stage_id)
        practice = _practice_of(request.user, reached.stage, int(practice_id))
        if practice is not None and reached.current_assignment_id is None:
            return _item_response(request, reached.stage, None, practice=practice)
    gate = work_gate(request, stage_id)
    if gate:
        return _leave_for(request, gate)
    reached = access_stage_for_annotator(user=request.user, stage_id=stage_id)
    stage = reached.stage
    if request.method == "POST":
        assignment = services.assignment_next(annotator=request.user, stage=reached)
        if not request.htmx:
            return redirect("annotation:stage", stage_id=stage.pk)
        return _item_response(request, stage, assignment)
    held = selectors.assignment_held(reached.current_assignment_id, stage)
    return _item_response(request, stage, held, waiting=held is None)


@require_POST
@page
def assignment_submit(request, assignment_id: int):
    assignment = access_assignment(request.user, assignment_id)
    stage = assignment.stage
    data = request.POST.copy()
    for field in META_FIELDS:
        data.pop(field, None)
    seconds_spent, timing = _seconds_spent(request.POST.get("seconds_spent"), assignment)
    kind = get_kind(stage.kind)
    payload = kind.parse_form(data)
    try:
        stored, created = services.annotation_submit(
            assignment_id=assignment.pk,
            annotator=request.user,
            payload=payload,
            seconds_spent=seconds_spent,
            client_info={"via": "htmx" if request.htmx else "form", "timing": timing},
        )
    except ApplicationError as error:
        # Refused because the annotator's session ended elsewhere (a gate knows where to go)?
        gate = work_gate(request, stage.pk) if error.status in (403, 409) else None
        if gate:
            return _leave_for(request, gate)
        return _item_response(request, stage, assignment, error=error, form_data=data)
    if created and assignment.item_stage.item.purpose == Item.Purpose.PRACTICE:
        # A practice answer: its feedback first; "Continue" then asks for the next item.
        if not request.htmx:
            url = reverse("annotation:stage", args=[stage.pk])
            return redirect(f"{url}?{PRACTICE_PARAMETER}={assignment.pk}")
        practice = (assignment, _feedback(kind, assignment, stored.payload))
        return _item_response(request, stage, None, practice=practice)
    notice = None
    if not created and kind.vote(stored.payload) != kind.vote(payload):
        # A second send (back button, a double click) with another answer: say which counts.
        notice = (
            f"Your first answer to {assignment.item_stage.item.external_id} "
            f"({kind.vote(stored.payload)}) was kept: sending the form again does not change "
            "it. To change it, use “Change previous answer” (Backspace) while the item is "
            "undecided."
        )
    return _after_finishing(request, stage, notice=notice)


@require_POST
@page
def assignment_skip(request, assignment_id: int):
    assignment = access_assignment(request.user, assignment_id)
    reason = (request.POST.get("other_reason") or request.POST.get("reason") or "").strip()
    try:
        services.assignment_skip(assignment_id=assignment.pk, annotator=request.user, reason=reason)
    except ApplicationError as error:
        gate = work_gate(request, assignment.stage_id) if error.status in (403, 409) else None
        if gate:
            return _leave_for(request, gate)
        return _item_response(request, assignment.stage, assignment, error=error)
    return _after_finishing(request, assignment.stage)


#: The query parameter of the item screen that shows a practice answer's feedback (its
#: assignment id), after a plain form post.
PRACTICE_PARAMETER = "practice"


def _feedback(kind, assignment: Assignment, answer_payload) -> PracticeFeedback:
    item_stage = assignment.item_stage
    return practice_feedback(
        kind,
        answer_payload=answer_payload,
        gold=item_stage.gold,
        item_payload=item_stage.item.payload or {},
    )


def _practice_of(user, stage: Stage, assignment_id: int):
    """The annotator's own submitted practice answer in ``stage`` with its feedback, or None
    (any other id: the item screen as usual, so ids reveal nothing)."""
    assignment = (
        Assignment.objects.select_related("item_stage__item")
        .filter(
            pk=assignment_id,
            annotator_id=user.pk,
            stage=stage,
            status=Assignment.Status.SUBMITTED,
            item_stage__item__purpose=Item.Purpose.PRACTICE,
        )
        .first()
    )
    answer = assignment.annotations.first() if assignment is not None else None
    if assignment is None or answer is None:
        return None
    return assignment, _feedback(get_kind(stage.kind), assignment, answer.payload)


def _after_finishing(request, stage: Stage, *, notice: str | None = None):
    """After a submit or skip: htmx gets the next item in the same response; a plain form post
    is redirected to the item screen (PRG), which leases the next item. ``notice``: a line for
    the annotator above the next item (a message after the redirect)."""
    gate = work_gate(request, stage.pk)
    if gate:
        return _leave_for(request, gate)
    reached = access_stage_for_annotator(user=request.user, stage_id=stage.pk)
    stage = reached.stage
    assignment = services.assignment_next(annotator=request.user, stage=reached)
    if not request.htmx:
        if notice:
            messages.info(request, notice)
        # The next item is already leased (this is a POST), so GET shows it: one click per item.
        return redirect("annotation:stage", stage_id=stage.pk)
    return _item_response(request, stage, assignment, notice=notice)


# --- Changing an answer -------------------------------------------------------------------


@require_GET
@page
def stage_answers(request, stage_id: int):
    """My recent answers in a stage: the latest ones, each with a link to change it while its
    item is undecided, or the reason it can no longer change."""
    gate = work_gate(request, stage_id)
    if gate:
        return _leave_for(request, gate)
    stage = access_stage_for_annotator(user=request.user, stage_id=stage_id).stage
    answers = selectors.annotator_recent_answers(request.user, stage)
    context = {
        "stage": stage,
        "project": stage.project,
        "answers": answers,
        "limit": selectors.RECENT_ANSWERS,
        "project_tabs": project_tabs(stage.project, user_roles(request.user, stage.project)),
    }
    return render(request, "annotation/answers.html", context)


@require_GET
@page
def stage_answer_last(request, stage_id: int):
    """The Backspace key of the item screen: the change page of the annotator's latest answer
    in the stage (the list when they have none yet)."""
    gate = work_gate(request, stage_id)
    if gate:
        return _leave_for(request, gate)
    stage = access_stage_for_annotator(user=request.user, stage_id=stage_id).stage
    latest = selectors.annotator_latest_answer(request.user, stage)
    if latest is None:
        messages.info(request, "You have no answers in this stage yet.")
        return redirect("annotation:answers", stage_id=stage.pk)
    return redirect("annotation:answer", annotation_id=latest.pk)


@require_http_methods(["GET", "POST"])
@page
def answer_change(request, annotation_id: int):
    """Change one's own answer: GET shows the item with the answer filled in (or why it can no
    longer change); POST stores the change as a new version (services.annotation_revise) and
    goes back to the item screen with "Saved". The URL names the version being replaced, so a
    retried POST stores one version."""
    answer = access_own_answer(request.user, annotation_id)
    stage = answer.item_stage.stage
    # A work gate (a crowd participant whose session ended, say) sends them on from here too.
    gate = work_gate(request, stage.pk)
    if gate:
        return _leave_for(request, gate)
    if request.method == "GET":
        return _change_response(request, answer)
    data = request.POST.copy()
    for field in META_FIELDS:
        data.pop(field, None)
    kind = get_kind(stage.kind)
    payload = kind.parse_form(data)
    seconds_spent, timing = _seconds_spent(request.POST.get("seconds_spent"), _lease_of(answer))
    try:
        stored, created = services.annotation_revise(
            annotation_id=annotation_id,
            annotator=request.user,
            payload=payload,
            seconds_spent=seconds_spent if timing == "client" else None,
            client_info={"via": "change", "timing": timing},
        )
    except ApplicationError as error:
        return _change_response(request, answer, error=error, form_data=data)
    item = answer.item_stage.item.external_id
    vote = kind.vote(stored.payload)
    if created:
        messages.success(request, f"Saved: your answer to {item} is now {vote}.")
    else:
        messages.success(request, f"Saved: your answer to {item} stays {vote}.")
    return redirect("annotation:stage", stage_id=stage.pk)


def _change_response(
    request, answer: Annotation, *, error: ApplicationError | None = None, form_data=None
):
    """The item screen in change mode: the answered item, its form filled with the current
    answer and posting to the change page; the refusal instead of a form once it is decided."""
    from annotation.versions import change_refusal

    item_stage = answer.item_stage
    stage = item_stage.stage
    refusal = change_refusal(answer, item_stage, stage)
    assignment = _lease_of(answer)
    assignment.item_stage, assignment.stage = item_stage, stage
    filled = {
        key: ("1" if value is True else "" if value in (False, None) else str(value))
        if not isinstance(value, list | dict)
        else value
        for key, value in (answer.payload or {}).items()
    }
    return _item_response(
        request,
        stage,
        assignment,
        error=error,
        form_data=form_data if form_data is not None else filled,
        changing={
            "answer": answer,
            "vote": get_kind(stage.kind).vote(answer.payload),
            "refusal": refusal,
            # Backspace again goes one answer further back.
            "earlier": selectors.annotator_latest_answer(request.user, stage, before=answer),
        },
    )


def _lease_of(answer: Annotation) -> Assignment:
    """The lease an annotator's own answer was given under: access_own_answer returns only
    answers that have one (imported history has none)."""
    return cast(Assignment, answer.assignment)


def _leave_for(request, url: str):
    """Send the annotator to a work gate's URL: the whole page, also from an htmx request."""
    if request.htmx:
        return HttpResponseClientRedirect(url)
    return redirect(url)


def _seconds_spent(posted: str | None, assignment: Assignment) -> tuple[float, str]:
    """The time the annotator spent: measured in the browser when the page's script sent it,
    otherwise the time since the lease was created."""
    try:
        value = float(posted) if posted not in (None, "") else None
    except ValueError:
        value = None
    if value is not None and math.isfinite(value) and 0 <= value < MAX_SECONDS:
        return round(value, 3), "client"
    elapsed = (timezone.now() - assignment.created_at).total_seconds()
    return round(min(max(elapsed, 0.0), MAX_SECONDS - 1), 3), "lease"


def _item_response(
    request,
    stage: Stage,
    assignment: Assignment | None,
    *,
    error: ApplicationError | None = None,
    form_data=None,
    waiting: bool = False,
    notice: str | None = None,
    changing: dict | None = None,
    practice: tuple[Assignment, PracticeFeedback] | None = None,
):
    """Render the item screen (the whole page, or its #item partial for htmx). ``changing``:
    the change mode of an answered item ({"answer", "vote", "refusal"}, see _change_response).
    ``practice``: a practice answer just given (its assignment) and its feedback
    (annotation/practice.py), shown with the item instead of the next one."""
    project = stage.project
    kind = get_kind(stage.kind)
    done, left = selectors.annotator_stage_progress(request.user, stage)
    left = items_left(request, stage, left)
    # A 409 (expired lease taken by others, already skipped) leaves nothing to submit here.
    gone = changing is None and error is not None and error.status == 409
    open_statuses = (Assignment.Status.ACTIVE, Assignment.Status.EXPIRED)
    if changing is None and (
        assignment is not None and (gone or assignment.status not in open_statuses)
    ):
        assignment = None
    item = assignment.item_stage.item if assignment is not None else None
    # Nothing held: a "practice first" rule may hold the annotator back; say so, and where to
    # go, instead of a start button that leases nothing and an "All done" beside items left.
    first = (
        selectors.stage_to_finish_first(request.user, stage)
        if assignment is None and changing is None and not gone and practice is None
        else None
    )
    phase = phase_of(stage, assignment.item_stage if assignment is not None else None)
    context = {
        "stage": stage,
        "project": project,
        "assignment": assignment,
        "item": item,
        "display": selectors.item_display(item, stage)
        if item is not None and kind.display_template is None
        else None,
        "display_template": kind.display_template,
        "phase": phase if stage.phases else None,
        "shown": selectors.annotations_shown(assignment) if assignment is not None else [],
        "kind": kind,
        "kind_template": kind.form_template(phase.name if stage.phases else None),
        "config": stage.config,
        "shortcuts": kind.shortcuts(stage.config),
        "done": done,
        "left": left,
        "percent": round(100 * done / (done + left)) if done + left else 100,
        "error": error,
        "gone": gone,
        # Nothing held and items left: a start button (GET never leases).
        "ready": waiting and assignment is None and not gone and left > 0 and first is None,
        "first": first,
        "form_data": form_data or {},
        "skip_reasons": SKIP_REASONS,
        "next_url": reverse("annotation:stage", args=[stage.pk]),
        "notice": notice,
        "changing": changing,
        # A crowd participant (a plug-in says so): the work only, no staff chrome.
        "participant_view": is_participant_view(request),
    }
    if practice is not None:
        # The answered practice item, shown as the item screen shows it, with its feedback.
        practiced = practice[0].item_stage.item
        context.update(kind.context(item=practiced, stage=stage, config=stage.config))
        display = None
        if kind.display_template is None:
            display = selectors.item_display(practiced, stage)
        elif not kind.display_template:
            # The kind's form shows the item (ratings): its text, without the form's own fields.
            display = {**selectors.item_display(practiced, stage), "rest": []}
        context.update(practice=practice[1], item=practiced, ready=False, display=display)
    elif item is not None:
        context.update(kind.context(item=item, stage=stage, config=stage.config))
    elif not context["ready"] and not gone and first is None:
        # Work still owed here (a plug-in says so): wait and try again, never "All done".
        context["pending"] = work_pending(request, stage)
        if not context["pending"]:
            # The done screen leads to the next stage with work for this annotator.
            context["next_stage"] = selectors.next_stage_with_work(request.user, stage)
    status = error.status if error is not None else 200
    if request.htmx:
        return render(request, "annotation/stage.html#item", context, status=status)
    if not context["participant_view"]:
        context["project_tabs"] = project_tabs(project, user_roles(request.user, project))
    return render(request, "annotation/stage.html", context, status=status)
