"""Crowd pages (CONTRIBUTING.md, "Thin views"): the participant's path (study URL → consent →
instructions → items on the normal item screen → back to the platform) and the researcher's
Crowd tab (studies, figures, the participants' CSV).

Participant pages need no account: the study URL signs the participant in (a user without a
password, created by crowd.services.participant_enter) and marks the session (crowd.gate).
"""

from __future__ import annotations

from urllib.parse import urlencode

from csp.decorators import csp_replace, csp_update
from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.clickjacking import xframe_options_exempt
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from annotation import api as engine_selectors
from annotation.access import ProjectAccess
from annotation.errors import ApplicationError, NotFound, PermissionDenied
from annotation.forms import form_error
from annotation.navigation import project_tabs
from annotation.web import csv_response, page
from crowd import forms, selectors, services
from crowd.access import access_crowd_project, access_session_participant, access_study
from crowd.entry import BadEntry, parse_entry
from crowd.gate import SESSION_KEY, next_url, session_participant
from crowd.models import Participant, Study
from crowd.prolific import ProlificClient
from crowd.signing import KeySetMissing, audiences

MTURK_FRAME = {"frame-ancestors": list(settings.CROWD_MTURK_SUBMIT_HOSTS)}


def _refused(request, error: ApplicationError, study: Study | None = None):
    return render(
        request, "crowd/refused.html", {"error": error, "study": study}, status=error.status
    )


# --- The participant's path -------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
@xframe_options_exempt
@csp_replace(MTURK_FRAME)  # type: ignore[arg-type]  # django-csp types views without URL arguments
def enter(request, token: str):
    """The study URL. Checks the platform's parameters before writing anything (400 page),
    refuses excluded ids (403) and full or closed studies (409), resumes a known participant,
    and signs a new one in. MTurk's preview shows a sample item and writes nothing; opened
    inside MTurk's frame, the page offers the task in a tab of its own (cookies of a framed
    site are blocked by browsers).

    Someone signed in with an account of their own (not a participant) is asked first
    (crowd/switch.html): continuing signs them out, which only a POST from that page does (its
    CSRF token), so a link followed from elsewhere never ends their session."""
    try:
        study = services.study_token_lookup(token)
    except NotFound as error:
        return _refused(request, error)
    query = request.GET
    if not query:
        participant = session_participant(request)
        if participant is not None and participant.study_id == study.pk:
            return redirect(next_url(services.participant_refresh(participant=participant)))
    try:
        entry = parse_entry(study, query, audience=audiences(request))
    except (BadEntry, KeySetMissing) as error:
        return _refused(request, error, study)
    if entry.preview:
        return _preview(request, study)
    if study.platform == Study.Platform.MTURK and request.headers.get("Sec-Fetch-Dest") == "iframe":
        return render(
            request, "crowd/mturk_frame.html", {"study": study, "url": request.get_full_path()}
        )
    if _signed_in_elsewhere(request):
        if request.method != "POST" or not forms.SwitchForm(request.POST).as_participant():
            return render(
                request,
                "crowd/switch.html",
                {
                    "study": study,
                    "account": request.user.get_username(),
                    "url": request.get_full_path(),
                },
            )
        logout(request)
    current = session_participant(request)
    try:
        participant, _created = services.participant_enter(
            study=study, entry=entry, session_participant_id=current.pk if current else None
        )
    except ApplicationError as error:
        return _refused(request, error, study)
    if request.user.pk != participant.user_id:
        login(request, participant.user, backend="django.contrib.auth.backends.ModelBackend")
    request.session[SESSION_KEY] = participant.pk
    return redirect(next_url(services.participant_refresh(participant=participant)))


def _signed_in_elsewhere(request) -> bool:
    """Whether the browser is signed in with an account that is not a study participant's (a
    researcher's, an annotator's): entering would replace that session."""
    user = request.user
    if not user.is_authenticated:
        return False
    return not selectors.is_participant_account(user.pk)


def _preview(request, study: Study):
    """MTurk's preview: a sample regular item of the stage as the item screen shows it."""
    sample = selectors.preview_item(study)
    display = engine_selectors.item_display(sample, study.stage) if sample else None
    return render(request, "crowd/preview.html", {"study": study, "display": display})


def _participant_or_refuse(request, token: str):
    """The session's participant of this study, or the refusal page to answer with."""
    try:
        return access_session_participant(request, token), None
    except PermissionDenied as error:
        return None, _refused(request, error)


@require_http_methods(["GET", "POST"])
@xframe_options_exempt
def consent(request, token: str):
    participant, refusal = _participant_or_refuse(request, token)
    if refusal:
        return refusal
    if request.method == "POST":
        form = forms.ConsentForm(request.POST)
        if not form.is_valid():
            error = form_error(form)
            context = {"participant": participant, "study": participant.study, "error": error}
            return render(request, "crowd/consent.html", context, status=error.status)
        participant = services.participant_consent(
            participant=participant, accepted=form.accepted()
        )
        return redirect(next_url(participant))
    if participant.consented_at is not None or participant.status != Participant.Status.ACTIVE:
        return redirect(next_url(participant))
    return render(
        request, "crowd/consent.html", {"participant": participant, "study": participant.study}
    )


@require_http_methods(["GET", "POST"])
@xframe_options_exempt
def instructions(request, token: str):
    participant, refusal = _participant_or_refuse(request, token)
    if refusal:
        return refusal
    if request.method == "POST":
        try:
            participant = services.participant_instructions_read(participant=participant)
        except ApplicationError as error:
            return _refused(request, error, participant.study)
        return redirect(next_url(services.participant_refresh(participant=participant)))
    if participant.consented_at is None or participant.instructed_at is not None:
        return redirect(next_url(participant))
    study = participant.study
    context = {
        "participant": participant,
        "study": study,
        "has_practice": selectors.study_has_practice(study),
        "has_checks": selectors.study_has_checks(study),
    }
    return render(request, "crowd/instructions.html", context)


@require_GET
def work(request, token: str):
    participant, refusal = _participant_or_refuse(request, token)
    if refusal:
        return refusal
    return redirect(next_url(services.participant_refresh(participant=participant)))


@require_GET
@xframe_options_exempt
@csp_update({"form-action": list(settings.CROWD_MTURK_SUBMIT_HOSTS)})  # type: ignore[arg-type]  # as above
def done(request, token: str):
    """The end of a session. Every page shows the participant's code (completion or screen-out)
    when there is one; Prolific participants are sent back with it a moment later (a refresh
    and a link, so the code stays in view if that fails); MTurk workers' assignment is submitted
    by an auto-submitting form; a plain link shows the code only."""
    participant, refusal = _participant_or_refuse(request, token)
    if refusal:
        return refusal
    participant = services.participant_refresh(participant=participant)
    study = participant.study
    if participant.status == Participant.Status.ACTIVE:
        return redirect(next_url(participant))
    codes: dict[str, str] = {
        Participant.Status.COMPLETED: study.completion_code,
        Participant.Status.SCREENED_OUT: study.screenout_code,
    }
    code = codes.get(participant.status, "")
    context = {"participant": participant, "study": study, "code": code}
    if participant.status in (Participant.Status.COMPLETED, Participant.Status.SCREENED_OUT):
        if study.platform == Study.Platform.PROLIFIC and code:
            # A page, not a bare redirect: it shows the code and goes on to Prolific by itself
            # (crowd/done.html), so a redirect that fails (Prolific unreachable, a blocked
            # refresh) never leaves the participant without their code.
            context["return_url"] = f"{settings.PROLIFIC_COMPLETE_URL}?{urlencode({'cc': code})}"
        if study.platform == Study.Platform.MTURK and participant.turk_submit_to:
            context["submit_url"] = f"{participant.turk_submit_to}/mturk/externalSubmit"
    return render(request, "crowd/done.html", context)


# --- The researcher's Crowd tab ---------------------------------------------------------------


def _tab_context(request, access: ProjectAccess, **extra):
    project = access.project
    return {
        "project": project,
        "project_tabs": project_tabs(project, access.roles),
        "stages": selectors.project_stages(project),
        "platforms": Study.Platform.choices,
        "practice_rules": Study.PracticeRule.choices,
        "on_return_choices": Study.OnReturn.choices,
        **extra,
    }


@require_http_methods(["GET", "POST"])
@page
def studies(request, slug: str):
    access = access_crowd_project(request.user, slug)
    project = access.project
    if request.method == "POST":
        form = forms.StudyForm(request.POST, creating=True)
        try:
            if not form.is_valid():
                raise form_error(form)
            stages = form.stages()
            study = services.study_create(
                project=project,
                stage=stages["stage"] or "",
                practice_stage=stages["practice_stage"],
                **form.settings(),
            )
        except ApplicationError as error:
            context = _tab_context(
                request,
                access,
                studies=selectors.project_studies(project),
                error=error,
                posted=request.POST,
            )
            return render(request, "crowd/studies.html", context, status=error.status)
        messages.success(request, f"Created the study {study.name}. Give its URL to your platform.")
        return redirect("crowd:study", slug=project.slug, study_id=study.pk)
    context = _tab_context(request, access, studies=selectors.project_studies(project))
    return render(request, "crowd/studies.html", context)


def _entry_url(request, study: Study) -> str:
    base = request.build_absolute_uri(reverse("crowd:enter", args=[study.token]))
    if study.platform == Study.Platform.PROLIFIC:
        return (
            base
            + "?PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
        )
    if study.platform == Study.Platform.LINK:
        return base + "?pid=…"
    return base


@require_http_methods(["GET", "POST"])
@page
def study_detail(request, slug: str, study_id: int):
    access = access_crowd_project(request.user, slug)
    project = access.project
    study = access_study(project, study_id)
    error = None
    if request.method == "POST":
        form = forms.StudyForm(request.POST, creating=False)
        try:
            if not form.is_valid():
                raise form_error(form)
            study = services.study_update(study=study, **form.settings())
        except ApplicationError as failure:
            error = failure
        else:
            messages.success(request, "Study saved.")
            return redirect("crowd:study", slug=project.slug, study_id=study.pk)
    return _study_page(request, access, study, error=error)


def _study_page(
    request, access: ProjectAccess, study: Study, *, error=None, bonus_error=None, posted=None
):
    """The study page; ``error``: a refused settings change, ``bonus_error``: a refused bonus
    payment (shown at its form, with what was typed: ``posted``)."""
    rows = selectors.participant_rows(study)
    for row in rows:
        row["bonus"] = (posted or {}).get(f"bonus-{row['participant'].pk}", "")
    can_pay = (
        bool(settings.PROLIFIC_TOKEN)
        and study.platform == Study.Platform.PROLIFIC
        and bool(study.platform_study_id)
    )
    context = _tab_context(
        request,
        access,
        study=study,
        rows=rows,
        summary=selectors.study_summary(study, rows),
        entry_url=_entry_url(request, study),
        error=error,
        can_sync=bool(settings.PROLIFIC_TOKEN) and study.platform == Study.Platform.PROLIFIC,
        rejection_message=REJECTION_MESSAGE,
        jwt_param=settings.PROLIFIC_JWT_PARAM,
        bonus_payments=selectors.bonus_payments(study),
        can_pay=can_pay,
        bonus_error=bonus_error,
        max_bonus=services.MAX_BONUS,
        posted=posted or {},
    )
    failure = error or bonus_error
    return render(request, "crowd/study.html", context, status=failure.status if failure else 200)


@require_GET
@page
def study_csv(request, slug: str, study_id: int):
    project = access_crowd_project(request.user, slug).project
    study = access_study(project, study_id)
    header, rows = selectors.participants_csv(study)
    return csv_response(f"{project.slug}-study-{study.pk}-participants.csv", header, rows)


@require_POST
@page
def study_sync(request, slug: str, study_id: int):
    project = access_crowd_project(request.user, slug).project
    study = access_study(project, study_id)
    services.study_sync_request(study=study)
    messages.info(request, "Syncing with Prolific: reload this page in a moment.")
    return redirect("crowd:study", slug=project.slug, study_id=study.pk)


#: The rejection message offered on the study page (Prolific wants at least 100 characters).
REJECTION_MESSAGE = (
    "Thank you for taking part. We could not accept this submission: your answers did not pass "
    "the study's quality checks (attention checks, or answers given faster than the items can "
    "be read), as the instructions explained."
)


@require_POST
@page
def study_decide(request, slug: str, study_id: int):
    """Send the suggested approvals and rejections to Prolific (see study_apply_suggestions)."""
    project = access_crowd_project(request.user, slug).project
    study = access_study(project, study_id)
    form = forms.DecideForm(request.POST)
    if not form.is_valid():
        raise form_error(form)
    counts = services.study_apply_suggestions(
        study=study,
        client=ProlificClient(),
        message=form.cleaned_data["message"] or REJECTION_MESSAGE,
    )
    messages.success(
        request,
        f"Sent to Prolific: {counts['approved']} approved, {counts['rejected']} rejected"
        f" ({counts['skipped']} already decided).",
    )
    return redirect("crowd:study", slug=project.slug, study_id=study.pk)


@require_POST
@page
def study_bonus(request, slug: str, study_id: int):
    """Pay bonuses to chosen participants: the amounts typed in the participant table and the
    lines of a ``participant id,amount`` CSV (typed or uploaded); sent to Prolific by a task
    (see crowd.services.bonus_payment_create). Bad input re-renders the page naming the line
    or participant, and nothing is written."""
    access = access_crowd_project(request.user, slug)
    project = access.project
    study = access_study(project, study_id)
    form = forms.BonusForm(request.POST, request.FILES)
    try:
        if not form.is_valid():
            raise form_error(form)
        payment = services.bonus_payment_create(
            study=study,
            requested_by=request.user,
            amounts=form.amounts(),
            csv_text=form.csv_text(),
        )
    except ApplicationError as error:
        return _study_page(request, access, study, bonus_error=error, posted=request.POST)
    count = len(payment.bonuses)
    messages.success(
        request,
        f"Paying {count} bonus{'es' if count != 1 else ''} ({payment.total} in total) "
        "through Prolific: their status is below.",
    )
    return redirect("crowd:study", slug=project.slug, study_id=study.pk)
