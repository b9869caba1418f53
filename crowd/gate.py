"""Where a participant belongs next: the steps of a study before and after the items; the one
decision of where a participant may work (crowd_verdict), asked by the annotator gate
(annotation.gates: every next, submit, skip and change, through pages and the API alike, in the
write's transaction) and by the pages' work gate (annotation.navigation.register_work_gate:
where to send them).

Both cost nothing for other people: the page gate returns at once unless the session was opened
by a study URL (``SESSION_KEY``); the annotator gate is asked only for people it governs (a flag
the engine reads inside statements it runs anyway)."""

from __future__ import annotations

from typing import Any

from django.db import connection
from django.urls import reverse

from annotation import gates
from annotation.api import quoted
from annotation.gates import AnnotatorGate
from crowd import services
from crowd.models import Participant, Study

#: The session key holding the participant id of a session opened by a study URL.
SESSION_KEY = "crowd_participant"


def work_stage_id(participant: Participant) -> int:
    """The stage the participant works on now: the practice stage until their practice is done
    (when the study has one), then the study's stage."""
    study = participant.study
    if participant.practice_done_at is None and study.practice_stage_id:
        return study.practice_stage_id
    return study.stage_id


def step_url(participant: Participant) -> str | None:
    """The page of a step the participant has not finished (consent, instructions) or the end
    of their session; None while they work on items."""
    token = participant.study.token
    if participant.status != Participant.Status.ACTIVE:
        return reverse("crowd:done", args=[token])
    if participant.consented_at is None:
        return reverse("crowd:consent", args=[token])
    if participant.instructed_at is None:
        return reverse("crowd:instructions", args=[token])
    return None


def session_participant(request) -> Participant | None:
    """The study participant this session belongs to (None for everyone else, at no query).
    Read once per request: the work gate and the progress cap both ask."""
    participant_id = request.session.get(SESSION_KEY)
    if participant_id is None or not request.user.is_authenticated:
        return None
    cached = getattr(request, "_crowd_participant", None)
    if cached is not None and cached.pk == participant_id:
        return cached
    participant = (
        Participant.objects.select_related("study__project", "study__stage")
        .filter(pk=participant_id, user_id=request.user.pk)
        .first()
    )
    request._crowd_participant = participant
    return participant


def next_url(participant: Participant) -> str:
    """Where the participant goes now (after bringing their session up to date)."""
    return step_url(participant) or reverse("annotation:stage", args=[work_stage_id(participant)])


#: The refusals of crowd_verdict, as the services raise them (annotation.gates.GateRefused).
ENDED = "Your session of this study has ended ({status}): nothing was saved."
NOT_STARTED = "Accept the consent and read the instructions of the study first: nothing was saved."
OTHER_STAGE = "This is not your study's stage: nothing was saved."
SEALED = (
    "This answer was given before your session was resumed from another browser without proof "
    "that it is yours: it can no longer be shown or changed. Go on with new items."
)


def crowd_verdict(
    participant: Participant, *, stage_id: int, action: str, answer: Any = None
) -> tuple[str | None, str | None]:
    """The one decision of where a participant may work, asked by the pages (crowd_work_gate:
    where to send them) and by the engine's services inside each write's transaction
    (CrowdGate.check: the refusal). Returns (URL, refusal), both None to carry on. The
    participant must be up to date (services.participant_refresh).

    A participant works only while their session is active, after the consent and the
    instructions, on their current stage (the practice stage, then the study's; a submit, skip
    or change of an item already held may be in either), and never changes an answer sealed by
    a resume without proof (Participant.answers_sealed_at)."""
    url = step_url(participant)
    if url:
        if participant.status != Participant.Status.ACTIVE:
            return url, ENDED.format(status=participant.get_status_display().lower())
        return url, NOT_STARTED
    target = work_stage_id(participant)
    stage_url = reverse("annotation:stage", args=[target])
    study = participant.study
    if action == gates.NEXT and stage_id != target:
        return stage_url, OTHER_STAGE
    if stage_id not in (study.stage_id, study.practice_stage_id):
        return stage_url, OTHER_STAGE
    if action == gates.CHANGE and answer is not None and is_sealed(participant, answer):
        return stage_url, SEALED
    return None, None


def is_sealed(participant: Participant, answer: Any) -> bool:
    """Whether an answer was given before the participant's answers were sealed."""
    sealed = participant.answers_sealed_at
    return sealed is not None and answer.created_at < sealed


def crowd_work_gate(request, stage_id: int) -> str | None:
    participant = session_participant(request)
    if participant is None:
        return None
    participant = services.participant_refresh(participant=participant)
    request._crowd_participant = participant  # the refreshed state for the rest of the request
    url, _refusal = crowd_verdict(participant, stage_id=stage_id, action=gates.NEXT)
    return url


class CrowdGate(AnnotatorGate):
    """The annotator gate (annotation.gates) of study participants: every next, submit, skip
    and change of a participant — page, htmx or API — brings their session up to date
    (services.participant_refresh, under the participant's row lock, in the write's
    transaction) and asks crowd_verdict; after a submit the session is brought up to date
    again (quota met: completed; too many failed checks: screened out). The crowd eligibility
    rule (crowd/eligibility.py) applies to participants in every stage of the project."""

    name = "crowd"
    rules = ({"rule": "crowd"},)

    def governs(self, *, annotator: str, project: str) -> str:
        gp, gs = quoted(Participant, "gp"), quoted(Study, "gs")
        return (
            f"EXISTS (SELECT 1 FROM {_table(Participant)} gp"
            f" JOIN {_table(Study)} gs ON {gs.id} = {gp.study_id}"
            f" WHERE {gp.user_id} = {annotator} AND {gs.project_id} = {project})"
        )

    def _participant(self, annotator_id: int, project_id: int) -> Participant | None:
        return (
            Participant.objects.select_related("study__project", "study__stage")
            .filter(user_id=annotator_id, study__project_id=project_id)
            .first()
        )

    def check(self, *, annotator_id, stage, action, answer=None):
        participant = self._participant(annotator_id, stage.project_id)
        if participant is None:
            return None
        participant = services.participant_refresh(participant=participant)
        return crowd_verdict(participant, stage_id=stage.pk, action=action, answer=answer)[1]

    def after_submit(self, *, annotator_id, stage):
        participant = self._participant(annotator_id, stage.project_id)
        if participant is not None:
            services.participant_refresh(participant=participant)

    def sealed_before(self, *, annotator_id, project_id):
        participant = self._participant(annotator_id, project_id)
        return participant.answers_sealed_at if participant is not None else None


def _table(model) -> str:
    return connection.ops.quote_name(model._meta.db_table)


def crowd_participant_view(request) -> bool:
    """A study participant's session sees the work only, no staff chrome (no query for others:
    session_participant answers from the session)."""
    return session_participant(request) is not None


def crowd_progress_cap(request, stage) -> int | None:
    """Items still left for a participant: their practice items, then their quota."""
    participant = session_participant(request)
    if participant is None or participant.status != Participant.Status.ACTIVE:
        return None
    quota_left = participant.study.quota - services.items_done(participant)
    if participant.practice_done_at is None:
        return services.practice_left(participant) + quota_left
    return quota_left


#: What a participant who owes work but got no item is told (crowd_work_pending).
BUSY_MESSAGE = (
    "Your next item is being handed to another participant at this very moment. "
    "Try again in a few seconds."
)
HELD_MESSAGE = (
    "No item is free for you at the moment: other participants hold the remaining ones, and "
    "they come back if their time runs out. Try again in a few minutes; if none comes, message "
    "the researcher through your platform."
)


def crowd_work_pending(request, stage) -> str | None:
    """The item screen found no item for a participant who still owes practice items or items
    of their quota in this stage: never "All done" (they have no code yet) but "try again".
    BUSY_MESSAGE when items with a free slot they never held exist (the candidate search skipped
    them because another transaction held their rows: a practice item or check is shared by
    everyone), HELD_MESSAGE when the stage's remaining slots are all leased or filled."""
    participant = session_participant(request)
    if participant is None or participant.status != Participant.Status.ACTIVE:
        return None
    if stage.pk != work_stage_id(participant) or step_url(participant):
        return None
    practising = participant.practice_done_at is None
    if practising:
        owed = services.practice_left(participant)
    else:
        owed = participant.study.quota - services.items_done(participant)
    if owed <= 0:
        return None
    return (
        BUSY_MESSAGE
        if services.free_items_exist(participant, practice=practising)
        else HELD_MESSAGE
    )
