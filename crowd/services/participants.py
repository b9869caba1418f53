"""A participant's session (CONTRIBUTING.md, "Services own the transaction"): the study URL
(``participant_enter``: a place taken under the study's row lock, a resume sealed without
proof), consent and instructions, the refresh after each item (time limit, attention checks,
practice, quota), leaving (leases released, work kept or withdrawn by one rule), the time-out
sweep, and a screen-out decided elsewhere (``participant_screen_out`` and its undo: the quality
app's automatic actions on gold accuracy, quality/services.py)."""

from __future__ import annotations

import logging
import secrets
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Exists, F, OuterRef
from django.utils import timezone

from annotation import api as engine
from annotation import events
from annotation.errors import ApplicationError, Conflict, PermissionDenied
from annotation.kinds import get_kind
from annotation.models import Annotation, Assignment, Item, ItemStage, Role
from crowd.entry import Entry
from crowd.models import Participant, Study

logger = logging.getLogger(__name__)


class Refused(ApplicationError):
    """An entry the study turns away (excluded, full, closed): a page, not a form error."""

    status = 403


# --- Participants -----------------------------------------------------------------------------


def resume_proven(participant: Participant, entry: Entry, *, session_participant_id) -> bool:
    """Whether a resume shows it is the participant who entered, not just someone who knows
    their platform id: Prolific's signed token (verified by crowd.entry.parse_entry), MTurk's
    assignmentId matching the one on record, or the browser session that belongs to this
    participant (``session_participant_id``: crowd.gate.SESSION_KEY of the request)."""
    if session_participant_id == participant.pk:
        return True
    if entry.signed:
        return True
    return (
        participant.study.platform == Study.Platform.MTURK
        and bool(entry.session_id)
        and entry.session_id == participant.session_id
    )


@transaction.atomic
def participant_enter(
    *, study: Study, entry: Entry, session_participant_id: int | None = None
) -> tuple[Participant, bool]:
    """The participant behind ``entry`` (checked by crowd.entry.parse_entry): a known platform
    id resumes (``created`` False); a new one takes a free place. Refused (403) when the id is
    on the study's exclusion list, Conflict (409) when the study is closed or full or its
    project archived.

    A resume without proof (resume_proven) goes on with new items only: the answers given so
    far are sealed (``answers_sealed_at``), never shown or changed again by any session
    (crowd.gate.crowd_verdict, annotation.gates.sealed_before) — the site cannot tell which
    browser is the participant's.

    Locking: the study's row is locked while places are counted and the participant inserted,
    so concurrent entries take places one at a time and never exceed ``places``."""
    locked = Study.objects.select_for_update().get(pk=study.pk)
    if entry.platform_id in locked.excluded:
        raise Refused(
            "You took part in an earlier study of this research, so you cannot take part in "
            "this one. Please return the study on your platform; thank you for your interest."
        )
    known = (
        Participant.objects.select_related("user")
        .filter(study=locked, platform_id=entry.platform_id)
        .first()
    )
    if known is not None:
        if not resume_proven(known, entry, session_participant_id=session_participant_id):
            known.answers_sealed_at = timezone.now()
            known.save(update_fields=["answers_sealed_at"])
        return known, False
    # An archived project is read-only (annotation/access.py): its studies take no one.
    if not locked.is_open or not study.project.is_active:
        raise Conflict(
            "This study is closed and takes no more participants. Thank you for your interest."
        )
    taken = Participant.objects.filter(study=locked, status__in=Participant.PLACE_STATUSES).count()
    if taken >= locked.places:
        raise Conflict(
            "All places of this study are taken. Please return the study on your platform; "
            "thank you for your interest."
        )
    user = get_user_model()(username=f"crowd-{secrets.token_hex(8)}", is_active=True)
    user.set_unusable_password()
    user.save()
    engine.membership_add(project=locked.project, user=user, role=Role.ANNOTATOR)
    now = timezone.now()
    participant = Participant.objects.create(
        study=locked,
        user=user,
        platform_id=entry.platform_id,
        session_id=entry.session_id,
        platform_study_id=entry.platform_study_id,
        turk_submit_to=entry.turk_submit_to,
        started_at=now,
        practice_done_at=now if locked.practice_rule == Study.PracticeRule.NONE else None,
    )
    return participant, True


def _locked_participant(participant: Participant) -> Participant:
    """The participant's row locked, and only theirs (``of``: the study's row is shared by
    everyone; the crowd gate runs this inside every write of a participant, before item stages
    are locked, so locking the study here too would make participants' writes deadlock)."""
    return (
        Participant.objects.select_for_update(of=("self",))
        .select_related("study")
        .get(pk=participant.pk)
    )


@transaction.atomic
def participant_consent(*, participant: Participant, accepted: bool) -> Participant:
    """Accepting the consent text opens the instructions; declining ends the session
    (returned, with the reason) and takes nothing further."""
    locked = _locked_participant(participant)
    if locked.status != Participant.Status.ACTIVE or locked.consented_at is not None:
        return locked
    if accepted:
        locked.consented_at = timezone.now()
        locked.save(update_fields=["consented_at"])
        return locked
    return _leave(locked, Participant.Status.RETURNED, "declined the consent")


@transaction.atomic
def participant_instructions_read(*, participant: Participant) -> Participant:
    locked = _locked_participant(participant)
    if locked.consented_at is None:
        raise PermissionDenied("Accept the consent first.")
    if locked.instructed_at is None:
        locked.instructed_at = timezone.now()
        locked.save(update_fields=["instructed_at"])
    return locked


def _failed(
    kind: Any, annotation_payload: Mapping[str, Any], gold: Any, item_payload: Mapping
) -> bool | None:
    """Whether an attention-check answer misses its gold: ``ItemStage.gold`` (a value, or
    {"min", "max"} for numbers), else the item's ``expected_min``/``expected_max`` (ratings);
    None when the item has no gold."""
    vote = kind.vote(annotation_payload)
    if isinstance(gold, Mapping) and ("min" in gold or "max" in gold):
        low, high = gold.get("min"), gold.get("max")
    elif gold is not None:
        return vote != gold
    elif "expected_min" in item_payload or "expected_max" in item_payload:
        low, high = item_payload.get("expected_min"), item_payload.get("expected_max")
    else:
        return None
    if not isinstance(vote, (int, float)) or isinstance(vote, bool):
        return True
    return (low is not None and vote < float(low)) or (high is not None and vote > float(high))


def checks_phrase(count: int) -> str:
    return f"{count} attention check{'' if count == 1 else 's'}"


def check_failures(participant: Participant) -> int:
    """How many attention checks of the study's stage the participant failed."""
    study = participant.study
    kind = get_kind(study.stage.kind)
    rows = Annotation.objects.filter(
        annotator_id=participant.user_id,
        item_stage__stage_id=study.stage_id,
        item_stage__item__purpose=Item.Purpose.ATTENTION_CHECK,
    ).values_list("payload", "item_stage__gold", "item_stage__item__payload")
    return sum(1 for payload, gold, item in rows if _failed(kind, payload, gold, item or {}))


def items_done(participant: Participant) -> int:
    """Items the participant submitted in the study's stage (practice items not counted)."""
    return (
        Annotation.objects.filter(
            annotator_id=participant.user_id, item_stage__stage_id=participant.study.stage_id
        )
        .exclude(item_stage__item__purpose=Item.Purpose.PRACTICE)
        .count()
    )


def practice_left(participant: Participant) -> int:
    """Practice items the participant has not handled yet (answered, or skipped: a skipped item
    is never offered again, so waiting for it would keep the participant out forever)."""
    study = participant.study
    stage_id = study.practice_stage_id or study.stage_id
    total = ItemStage.objects.filter(stage_id=stage_id, item__purpose=Item.Purpose.PRACTICE).count()
    handled = Assignment.objects.filter(
        annotator_id=participant.user_id,
        stage_id=stage_id,
        item_stage__item__purpose=Item.Purpose.PRACTICE,
        status__in=(Assignment.Status.SUBMITTED, Assignment.Status.SKIPPED),
    ).count()
    return max(total - handled, 0)


def free_items_exist(participant: Participant, *, practice: bool) -> bool:
    """Whether an open item of the participant's current work (practice items, or the study's
    other items) has a free slot and was never held by them: what the candidate search would
    hand out, were its row not locked at this moment. Silent gold items (annotation/gold.py)
    are not work: the engine hands one only between ordinary items, so a free one is no sign
    that an item is coming (and which one is left is never told)."""
    study = participant.study
    stage_id = (study.practice_stage_id or study.stage_id) if practice else study.stage_id
    items = ItemStage.objects.filter(
        stage_id=stage_id,
        state=ItemStage.State.OPEN,
        submitted_count__lt=F("target_count") - F("leased_count"),
    ).exclude(assignments__annotator_id=participant.user_id)
    if practice:
        items = items.filter(item__purpose=Item.Purpose.PRACTICE)
    else:
        items = items.exclude(item__purpose__in=(Item.Purpose.PRACTICE, Item.Purpose.GOLD))
    return items.exists()


def ordinary_items_left(participant: Participant) -> bool:
    """Whether an item of the study's stage other than practice and silent gold items is still
    the participant's to answer: one they hold now, or one they never held in its item stage's
    current round and phase (which the candidate search may hand them now or later, when slots
    free up). False means the engine has nothing more for them but, at most, gold items
    (annotation/gold.py) — which come only between ordinary items, so a quota counting them
    may be out of reach."""
    handled = Assignment.objects.filter(
        item_stage_id=OuterRef("pk"),
        annotator_id=participant.user_id,
        round=OuterRef("round"),
        phase=OuterRef("phase"),
    ).exclude(status=Assignment.Status.ACTIVE)
    return (
        ItemStage.objects.filter(stage_id=participant.study.stage_id)
        .exclude(item__purpose__in=(Item.Purpose.PRACTICE, Item.Purpose.GOLD))
        .exclude(Exists(handled))
        .exists()
    )


@transaction.atomic
def participant_refresh(*, participant: Participant, now: Any = None) -> Participant:
    """Bring a participant's session up to date after an item: past the time limit → timed
    out; more failed attention checks than allowed → screened out; practice handled → real
    items; quota met, or after some work nothing left for them but silent gold items
    (ordinary_items_left) → completed. Ended sessions release their leases."""
    locked = _locked_participant(participant)
    if locked.status != Participant.Status.ACTIVE:
        return locked
    study = locked.study
    now = now or timezone.now()
    if now > locked.started_at + timedelta(minutes=study.time_limit_minutes):
        return _leave(locked, Participant.Status.TIMED_OUT, "time limit passed")
    if locked.consented_at is None or locked.instructed_at is None:
        return locked
    failures = check_failures(locked)
    if failures > study.max_check_failures:
        return _leave(locked, Participant.Status.SCREENED_OUT, f"failed {checks_phrase(failures)}")
    if locked.practice_done_at is None:
        if practice_left(locked):
            return locked
        locked.practice_done_at = now
        locked.save(update_fields=["practice_done_at"])
    done = items_done(locked)
    quota_met = done >= study.quota
    # Nothing but silent gold left after some work: the quota counts gold answers, yet a gold
    # item comes only between ordinary items, so without one left the quota can be out of
    # reach for good (a stage with no items yet keeps its participants waiting, as before).
    if quota_met or (done > 0 and not ordinary_items_left(locked)):
        locked.status = Participant.Status.COMPLETED
        locked.finished_at = now
        locked.save(update_fields=["status", "finished_at"])
        _announce_end(locked)
        engine.assignments_release(
            annotator_id=locked.user_id,
            project=study.project,
            reason="quota met" if quota_met else "no items left",
        )
    return locked


#: Statuses of a participant who left without finishing: their leases go back, their place
#: reopens, and the study's ``on_return`` decides whether their annotations stay.
LEFT_STATUSES = (
    Participant.Status.RETURNED,
    Participant.Status.TIMED_OUT,
    Participant.Status.REJECTED,
)


def _withdraws(participant: Participant, status: str) -> bool:
    """The withdrawal rule, in one place: a participant who leaves as returned, timed out or
    rejected — wherever that is learnt (declined consent, the time limit here, Prolific's
    sync, the researcher's rejection) — has their annotations withdrawn when the study says
    ``withdraw`` at that moment, once (a participant already withdrawn keeps what is left;
    changing the setting later changes nothing for people who already left). Completed and
    screened-out participants keep their work."""
    return (
        status in LEFT_STATUSES
        and participant.study.on_return == Study.OnReturn.WITHDRAW
        and participant.withdrawn_at is None
    )


def _leave(participant: Participant, status: str, reason: str) -> Participant:
    """End a locked participant's session: status, reason, leases released, annotations
    withdrawn by the rule (_withdraws). The caller holds the participant's row lock and a
    transaction."""
    study = participant.study
    withdraw = _withdraws(participant, status)
    participant.status = status
    participant.reason = reason[:300]
    participant.finished_at = participant.finished_at or timezone.now()
    fields = ["status", "reason", "finished_at"]
    if withdraw:
        withdrawn, _ = engine.annotations_withdraw(
            annotator_id=participant.user_id, project=study.project, reason=f"crowd: {reason}"
        )
        participant.withdrawn += withdrawn
        participant.withdrawn_at = timezone.now()
        fields += ["withdrawn", "withdrawn_at"]
    else:
        engine.assignments_release(
            annotator_id=participant.user_id, project=study.project, reason=f"crowd: {reason}"
        )
    participant.save(update_fields=fields)
    _announce_end(participant)
    return participant


def _announce_end(participant: Participant) -> None:
    """The project event of a session that ended completed or screened out
    (annotation/events.py, "Project events"); the participant by our id, never the platform's."""
    kinds: dict[str, str] = {
        Participant.Status.COMPLETED: "crowd.participant_completed",
        Participant.Status.SCREENED_OUT: "crowd.participant_screened_out",
    }
    kind = kinds.get(participant.status)
    if kind is None:
        return
    study = participant.study
    events.project_event(
        kind,
        project_id=study.project_id,
        data={
            "participant": {"id": participant.pk, "status": participant.status},
            "study": {"id": study.pk, "name": study.name},
            "reason": participant.reason,
        },
    )


@transaction.atomic
def participant_leave(*, participant: Participant, status: str, reason: str) -> Participant:
    """A participant who returned, timed out or was rejected on their platform: their leases
    go back, and their annotations are withdrawn by the rule (_withdraws). Leaving again in
    the same status changes nothing."""
    if status not in LEFT_STATUSES:
        raise ApplicationError(f"A participant cannot leave as {status!r}.", {"status": status})
    locked = _locked_participant(participant)
    if locked.status == status:
        return locked
    return _leave(locked, status, reason)


def participants_time_out(*, now: Any = None, limit: int = 1000) -> int:
    """Active participants past their study's time limit: timed out, leases released (one
    transaction each). Safe to run concurrently with the participants themselves."""
    now = now or timezone.now()
    count = 0
    active = (
        Participant.objects.filter(status=Participant.Status.ACTIVE)
        .select_related("study")
        .order_by("started_at")
        .values_list("pk", "started_at", "study__time_limit_minutes")[:limit]
    )
    for pk, started_at, minutes in active:
        if now <= started_at + timedelta(minutes=minutes):
            continue
        with transaction.atomic():
            locked = _locked_participant(Participant(pk=pk))
            if locked.status == Participant.Status.ACTIVE:
                _leave(locked, Participant.Status.TIMED_OUT, "time limit passed")
                count += 1
    return count


# --- A screen-out decided outside the study's own checks --------------------------------------


def _participant_of(annotator_id: int, project: Any) -> Participant | None:
    return (
        Participant.objects.select_for_update(of=("self",))
        .select_related("study")
        .filter(user_id=annotator_id, study__project=project)
        .first()
    )


@transaction.atomic
def participant_screen_out(
    *, annotator_id: int, project: Any, reason: str, withdraw: bool = False
) -> Participant | None:
    """Screen out the study participant behind ``annotator_id`` in ``project`` for ``reason``
    (a sentence the researcher reads; the study page suggests rejecting them with it): the
    session ends as screened out (their platform gets the screen-out code), leases go back.
    Their annotations stay unless ``withdraw`` (the engine's one withdrawal rule,
    ``annotation.api.annotations_withdraw``: answers on item stages still open are taken back,
    the rest kept). Returns None for someone who is not a participant of a study of the
    project; a participant whose session already ended keeps their status (only ``withdraw``
    still applies). Locks the participant's row, as every write of a participant does."""
    locked = _participant_of(annotator_id, project)
    if locked is None:
        return None
    fields: list[str] = []
    if locked.status == Participant.Status.ACTIVE:
        locked.status = Participant.Status.SCREENED_OUT
        locked.reason = reason[:300]
        locked.finished_at = timezone.now()
        fields += ["status", "reason", "finished_at"]
        _announce_end(locked)
        engine.assignments_release(
            annotator_id=locked.user_id,
            project=locked.study.project,
            reason=f"screened out: {reason}",
        )
    if withdraw:
        withdrawn, _ = engine.annotations_withdraw(
            annotator_id=locked.user_id,
            project=locked.study.project,
            reason=f"screened out: {reason}",
        )
        locked.withdrawn += withdrawn
        locked.withdrawn_at = timezone.now()
        fields += ["withdrawn", "withdrawn_at"]
    if fields:
        locked.save(update_fields=fields)
    return locked


@transaction.atomic
def participant_screen_out_undo(
    *, annotator_id: int, project: Any, reason: str
) -> Participant | None:
    """Take back a screen-out made by ``participant_screen_out`` with ``reason``: the session is
    active again (the same link resumes it, within the study's time limit) and the study page
    no longer suggests a rejection. A participant screened out for anything else (failed
    attention checks, which the next refresh would find again) or who has left since is left as
    they are. Withdrawn answers stay withdrawn (they were deleted). Returns the participant, or
    None for someone who is not one."""
    locked = _participant_of(annotator_id, project)
    if locked is None:
        return None
    if locked.status == Participant.Status.SCREENED_OUT and locked.reason == reason[:300]:
        locked.status = Participant.Status.ACTIVE
        locked.reason = ""
        locked.finished_at = None
        locked.save(update_fields=["status", "reason", "finished_at"])
    return locked
