"""Where a participant belongs next: the steps of a study before and after the items, and the
work gate (annotation.navigation.register_work_gate) that keeps the item screen in step.

The gate costs nothing for other people: it returns at once unless the session was opened by a
study URL (``SESSION_KEY``)."""

from __future__ import annotations

from django.urls import reverse

from crowd import services
from crowd.models import Participant

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


def crowd_work_gate(request, stage_id: int) -> str | None:
    participant = session_participant(request)
    if participant is None:
        return None
    participant = services.participant_refresh(participant=participant)
    request._crowd_participant = participant  # the refreshed state for the rest of the request
    url = step_url(participant)
    if url:
        return url
    target = work_stage_id(participant)
    if stage_id != target:
        return reverse("annotation:stage", args=[target])
    return None


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
