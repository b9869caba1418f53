"""Writes of crowd studies (CONTRIBUTING.md, "Services own the transaction").

- ``study_create`` / ``study_update``: a study on a stage; its practice items and attention
  checks are raised to every participant (``EVERYONE`` slots, as ratings does). Participants
  need nothing on the stages: the crowd annotator gate (crowd/gate.py) applies the ``crowd``
  eligibility rule (crowd/eligibility.py) to them in every stage of the project.
- ``participant_enter``: the study URL. A new platform id takes a place (the study row locked,
  so concurrent entries never exceed ``places``) and gets a Django user without a password and
  an annotator membership; a known one resumes, and a resume without proof that it is the same
  person seals the answers given so far (``resume_proven``).
- ``participant_consent``, ``participant_instructions_read``: the steps before the items.
- ``participant_refresh``: after each item (the work gate, crowd/apps.py): time limit,
  attention checks (screen-out), practice done, quota met (completed).
- ``participant_leave``: a participant who returned, timed out or was rejected: leases
  released, annotations kept or withdrawn by the study's setting.
- ``participants_time_out``: the beat sweep of sessions past their time limit.
- ``study_sync_prolific``: submission statuses from Prolific's API.
- ``bonus_payment_create``, ``bonus_payment_send``: bonuses to chosen participants of a
  Prolific study, set up then paid through Prolific's API (the task crowd.tasks.pay_bonus).
"""

from __future__ import annotations

import csv
import io
import logging
import math
import secrets
from collections.abc import Iterable, Mapping
from datetime import timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from annotation import api as engine
from annotation.api import (
    EVERYONE,
    clean_text,
)
from annotation.errors import ApplicationError, Conflict, NotFound, PermissionDenied
from annotation.kinds import get_kind
from annotation.models import Annotation, Assignment, Item, ItemStage, Project, Role, Stage
from crowd.entry import Entry
from crowd.models import BonusPayment, Participant, Study

logger = logging.getLogger(__name__)


#: Study fields a researcher edits, with their parsers.
TEXT_FIELDS = {
    "name": 200,
    "platform_study_id": 100,
    "consent_text": 20_000,
    "instructions": 20_000,
    "completion_code": 64,
    "screenout_code": 64,
    "excluded_ids": 200_000,
}
INT_FIELDS = ("places", "quota", "time_limit_minutes", "max_check_failures")
#: Every setting of a study (study_create / study_update, the Crowd tab's study forms).
STUDY_SETTINGS = frozenset(
    {*TEXT_FIELDS, *INT_FIELDS, "too_fast_seconds", "platform", "practice_rule", "on_return"}
    | {"is_open", "signed_links"}
)
#: Chosen when a study is created, fixed afterwards.
STUDY_STAGES = ("stage", "practice_stage")


class Refused(ApplicationError):
    """An entry the study turns away (excluded, full, closed): a page, not a form error."""

    status = 403


def _shown(text: str, limit: int = 60) -> str:
    """``text`` quoted for a message, cut to ``limit`` characters (a cell may be 128 Ki characters)."""
    return repr(text if len(text) <= limit else text[:limit] + "…")


def study_fields_check(names: Iterable[str], *, creating: bool) -> None:
    """Refuse, naming it, a field that is not a study setting (STUDY_SETTINGS; the stages too
    when ``creating``). Views call it before passing a form's fields on as keyword arguments,
    so a posted ``project`` or ``study`` is a form error, not a clash of arguments."""
    for name in names:
        if name in STUDY_SETTINGS or (creating and name in STUDY_STAGES):
            continue
        if name in STUDY_STAGES:
            message = f"{name}: a study's stages cannot change once it exists."
        else:
            message = f"The study form has no field {_shown(name)}: remove it."
        raise ApplicationError(message, {name[:60]: "not a study setting"})


def _clean_fields(data: Mapping[str, Any], *, partial: bool) -> dict[str, Any]:
    study_fields_check(data, creating=False)
    clean: dict[str, Any] = {}
    for name, limit in TEXT_FIELDS.items():
        if name in data:
            clean[name] = clean_text(str(data[name] or ""), field=name, max_length=limit)
    for name in INT_FIELDS:
        if name in data:
            try:
                value = int(str(data[name]).strip())
            except ValueError:
                raise ApplicationError(
                    f"{name} must be a whole number.", {name: data[name]}
                ) from None
            if value < (0 if name == "max_check_failures" else 1) or value > 1_000_000:
                raise ApplicationError(f"{name} is out of range.", {name: value})
            clean[name] = value
    if "too_fast_seconds" in data:
        try:
            value = float(str(data["too_fast_seconds"]).strip())
        except ValueError:
            value = -1.0
        if not (math.isfinite(value) and 0 <= value <= 3600):
            raise ApplicationError(
                "too_fast_seconds must be between 0 and 3600.", {"too_fast_seconds": value}
            )
        clean["too_fast_seconds"] = value
    for name, choices in (
        ("platform", Study.Platform.values),
        ("practice_rule", Study.PracticeRule.values),
        ("on_return", Study.OnReturn.values),
    ):
        if name in data:
            if data[name] not in choices:
                raise ApplicationError(
                    f"{name} must be one of {', '.join(choices)}.", {name: data[name]}
                )
            clean[name] = data[name]
    for flag in ("is_open", "signed_links"):
        if flag in data:
            clean[flag] = bool(data[flag]) and data[flag] not in ("0", "false", "off")
    required = ("name", "consent_text", "completion_code")
    missing = [name for name in required if (name in clean or not partial) and not clean.get(name)]
    if missing:
        name = missing[0]
        raise ApplicationError(f"Give the study's {name.replace('_', ' ')}.", {name: "required"})
    return clean


def _check_signing(study: Study) -> None:
    """Signed links are Prolific's option, and need the key set that verifies them."""
    if not study.signed_links:
        return
    if study.platform != Study.Platform.PROLIFIC:
        raise ApplicationError(
            "Signed links are Prolific's option: turn them off for this platform.",
            {"signed_links": "prolific only"},
        )
    from crowd.signing import key_set

    key_set()  # KeySetMissing (503) names PROLIFIC_JWKS when the site cannot check signatures


def _stage_of(project: Project, stage: Stage | int | str | None, field: str) -> Stage | None:
    if stage in (None, ""):
        return None
    if isinstance(stage, Stage):
        found = stage if stage.project_id == project.pk else None
    else:
        found = Stage.objects.filter(
            project=project, pk=int(stage) if str(stage).isdigit() else -1
        ).first()
    if found is None:
        raise ApplicationError(f"There is no such stage in {project.name}.", {field: stage})
    return found


def _prepare_stages(study: Study) -> None:
    """Practice items and attention checks for everyone. (Which stages participants work on is
    the crowd annotator gate's rule, crowd/gate.py, whatever stages exist or are added.)"""
    practice_stage = study.practice_stage or study.stage
    ItemStage.objects.filter(
        stage=practice_stage, item__purpose=Item.Purpose.PRACTICE, state=ItemStage.State.OPEN
    ).update(target_count=EVERYONE)
    ItemStage.objects.filter(
        stage=study.stage, item__purpose=Item.Purpose.ATTENTION_CHECK, state=ItemStage.State.OPEN
    ).update(target_count=EVERYONE)


@transaction.atomic
def study_create(
    *,
    project: Project,
    stage: Stage | int | str,
    practice_stage: Stage | int | str | None = None,
    **data: Any,
) -> Study:
    """A new study on ``stage`` of ``project`` (fields: see crowd.models.Study)."""
    stage = _stage_of(project, stage, "stage")
    if stage is None:
        raise ApplicationError("Choose the stage participants work on.", {"stage": "required"})
    practice = _stage_of(project, practice_stage, "practice_stage")
    if practice is not None and practice.pk == stage.pk:
        practice = None
    study = Study(
        project=project,
        stage=stage,
        practice_stage=practice,
        token=secrets.token_urlsafe(12),
        **_clean_fields(data, partial=False),
    )
    _check_signing(study)
    study.save()
    _prepare_stages(study)
    return study


@transaction.atomic
def study_update(*, study: Study, **data: Any) -> Study:
    """Change a study's settings; its stages cannot change once it exists."""
    locked = Study.objects.select_for_update().get(pk=study.pk)
    clean = _clean_fields(data, partial=True)
    if clean.get("platform", locked.platform) != locked.platform and locked.participants.exists():
        raise ApplicationError(
            "People have entered this study: its platform cannot change.", {"platform": "fixed"}
        )
    for name, value in clean.items():
        setattr(locked, name, value)
    _check_signing(locked)
    locked.save()
    _prepare_stages(locked)
    return locked


def study_token_lookup(token: str) -> Study:
    study = Study.objects.select_related("project", "stage").filter(token=token).first()
    if study is None:
        raise NotFound("There is no such study: check the link you followed.")
    return study


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
    on the study's exclusion list, Conflict (409) when the study is closed or full.

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
    if not locked.is_open:
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
    hand out, were its row not locked at this moment."""
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
        items = items.exclude(item__purpose=Item.Purpose.PRACTICE)
    return items.exists()


@transaction.atomic
def participant_refresh(*, participant: Participant, now: Any = None) -> Participant:
    """Bring a participant's session up to date after an item: past the time limit → timed
    out; more failed attention checks than allowed → screened out; practice handled → real
    items; quota met → completed. Ended sessions release their leases."""
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
    if items_done(locked) >= study.quota:
        locked.status = Participant.Status.COMPLETED
        locked.finished_at = now
        locked.save(update_fields=["status", "finished_at"])
        engine.assignments_release(
            annotator_id=locked.user_id, project=study.project, reason="quota met"
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
    return participant


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


#: Prolific submission statuses that end a participant's session here.
PROLIFIC_LEAVING = {
    "RETURNED": Participant.Status.RETURNED,
    "TIMED-OUT": Participant.Status.TIMED_OUT,
    "REJECTED": Participant.Status.REJECTED,
}


def study_sync_prolific(*, study: Study, client: Any) -> dict[str, int]:
    """Read the study's submissions from Prolific (``client``: crowd.prolific.ProlificClient)
    and record each participant's status there; returned, timed-out and rejected ones leave
    (participant_leave). Returns counts per outcome. Safe to run twice."""
    if not study.platform_study_id:
        raise ApplicationError(
            "Set the study's Prolific STUDY_ID before syncing.", {"platform_study_id": "required"}
        )
    submissions = client.study_submissions(study.platform_study_id)
    counts = {"seen": 0, "left": 0, "unknown": 0}
    by_pid = {row["participant_id"]: row for row in submissions if row.get("participant_id")}
    for participant in Participant.objects.filter(study=study, platform_id__in=list(by_pid)):
        row = by_pid[participant.platform_id]
        status = str(row.get("status") or "")
        counts["seen"] += 1
        if participant.platform_status != status:
            Participant.objects.filter(pk=participant.pk).update(platform_status=status[:20])
        leaving = PROLIFIC_LEAVING.get(status)
        if leaving and participant.status != leaving:
            participant_leave(participant=participant, status=leaving, reason=f"Prolific: {status}")
            counts["left"] += 1
    counts["unknown"] = len(by_pid) - counts["seen"]
    Study.objects.filter(pk=study.pk).update(synced_at=timezone.now())
    return counts


#: Platform statuses after which a submission takes no decision any more.
DECIDED = {"APPROVED", "REJECTED", "RETURNED", "TIMED-OUT", "SCREENED OUT"}


def study_apply_suggestions(*, study: Study, client: Any, message: str) -> dict[str, int]:
    """Send the study page's suggestions to Prolific (``client``: crowd.prolific.ProlificClient):
    approve the suggested approvals and reject the suggested rejections with ``message`` (at
    least 100 characters, shown to the participant) and the suggestion's category. Submissions
    are named by the participant's SESSION_ID (Prolific's submission id); each decision is
    recorded as the participant's platform status, so a second run sends nothing again, and a
    rejected participant leaves (their work kept or withdrawn by the study's setting). A
    failing call stops the run with ProlificError; decisions sent before it stay recorded."""
    from crowd.selectors import participant_rows

    if study.platform != Study.Platform.PROLIFIC:
        raise ApplicationError("Only Prolific studies are decided through Prolific's API.")
    counts = {"approved": 0, "rejected": 0, "skipped": 0}
    for row in participant_rows(study):
        participant = row["participant"]
        if not row["suggestion"]:
            continue
        if participant.platform_status in DECIDED or not participant.session_id:
            counts["skipped"] += 1
            continue
        if row["suggestion"] == "approve":
            client.approve(participant.session_id)
            Participant.objects.filter(pk=participant.pk).update(platform_status="APPROVED")
            counts["approved"] += 1
        else:
            client.reject(participant.session_id, message=message, category=row["category"])
            Participant.objects.filter(pk=participant.pk).update(platform_status="REJECTED")
            participant_leave(participant=participant, status="rejected", reason=row["reason"])
            counts["rejected"] += 1
    return counts


# --- Bonuses ---------------------------------------------------------------------------------

#: The largest bonus one participant may get in one payment (in the study's currency): a typo
#: guard (Prolific reads "30" as 30.00), not Prolific's limit.
MAX_BONUS = Decimal("100.00")
#: Participants in one payment: Prolific recommends at most 200 per bulk payment.
MAX_BONUSES = 200


def _bonus_amount(text: str, where: str) -> Decimal:
    raw = str(text or "").strip()
    try:
        value = Decimal(raw)
    except InvalidOperation:
        value = None
    if value is None or not value.is_finite():
        raise ApplicationError(
            f"{where}: {_shown(raw)} is not an amount; write it like 1.50 (no currency sign).",
            {"amount": where},
        )
    if value <= 0 or value > MAX_BONUS:
        raise ApplicationError(
            f"{where}: a bonus must be more than 0 and at most {MAX_BONUS}.", {"amount": where}
        )
    if value != value.quantize(Decimal("0.01")):
        raise ApplicationError(
            f"{where}: {_shown(raw)} has more than two decimals.", {"amount": where}
        )
    return value.quantize(Decimal("0.01"))


def bonus_rows(
    *, study: Study, amounts: Mapping[int | str, str], csv_text: str = ""
) -> list[tuple[str, Decimal]]:
    """The bonuses a researcher asked for: ``amounts`` by participant pk (the study page's
    inputs; empty ones skipped) and ``csv_text`` (``participant id,amount`` a line, an optional
    header). Each participant of the study once, every amount valid, or ApplicationError naming
    the line or participant; nothing is written."""
    participants = {p.pk: p.platform_id for p in Participant.objects.filter(study=study)}
    known = set(participants.values())
    rows: list[tuple[str, Decimal]] = []
    seen: dict[str, str] = {}

    def add(platform_id: str, amount: str, where: str) -> None:
        if platform_id not in known:
            raise ApplicationError(
                f"{where}: {_shown(platform_id)} is not a participant of this study.",
                {"participant": where},
            )
        if platform_id in seen:
            raise ApplicationError(
                f"{where}: {platform_id} already has a bonus in this payment ({seen[platform_id]}).",
                {"participant": where},
            )
        rows.append((platform_id, _bonus_amount(amount, where)))
        seen[platform_id] = where

    lines = _bonus_csv_lines(csv_text)
    asked = sum(1 for amount in amounts.values() if str(amount or "").strip()) + sum(
        1 for _number, line in lines if any(cell.strip() for cell in line)
    )
    if asked > MAX_BONUSES + 1:  # one line may be the header
        raise ApplicationError(
            f"{asked} bonuses: at most {MAX_BONUSES} in one payment, as Prolific "
            "recommends. Pay the rest in another.",
            {"bonuses": asked},
        )
    for key, amount in amounts.items():
        if str(amount or "").strip():
            pk = int(key) if str(key).isdigit() else None
            if pk not in participants:
                raise ApplicationError(
                    "Unknown participant in the bonus form.", {"participant": key}
                )
            add(participants[pk], amount, f"participant {participants[pk]}")
    for number, line in lines:
        cells = [cell.strip() for cell in line]
        if not any(cells):
            continue
        if number == 1 and len(cells) == 2 and cells[0].lower() in HEADER_NAMES:
            continue
        if len(cells) != 2:
            raise ApplicationError(
                f"CSV line {number}: write participant id,amount (two columns).",
                {"csv": number},
            )
        add(cells[0], cells[1], f"CSV line {number}")
    if not rows:
        raise ApplicationError(
            "Choose at least one participant and an amount.", {"bonuses": "empty"}
        )
    if len(rows) > MAX_BONUSES:
        raise ApplicationError(
            f"{len(rows)} bonuses: at most {MAX_BONUSES} in one payment, as Prolific "
            "recommends. Pay the rest in another.",
            {"bonuses": len(rows)},
        )
    return rows


HEADER_NAMES = {"participant_id", "pid", "prolific_pid", "participant"}


def _bonus_csv_lines(csv_text: str) -> list[tuple[int, list[str]]]:
    """The bonus CSV's records, each with the line it starts on. A text the CSV reader cannot
    read (a cell over its field limit, 131,072 characters; a stray carriage return) is an
    ApplicationError naming the line, never csv.Error."""
    reader = csv.reader(io.StringIO(csv_text or ""))
    lines: list[tuple[int, list[str]]] = []
    while True:
        start = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return lines
        except csv.Error as problem:
            detail = (
                "a cell is longer than the CSV reader takes (131,072 characters)"
                if "field limit" in str(problem)
                else f"not readable as CSV ({problem})"
            )
            raise ApplicationError(
                f"CSV line {start}: {detail}; write participant id,amount.", {"csv": start}
            ) from None
        lines.append((start, cells))


@transaction.atomic
def bonus_payment_create(
    *, study: Study, requested_by: Any, amounts: Mapping[int | str, str], csv_text: str = ""
) -> BonusPayment:
    """A bonus payment of a Prolific study (see bonus_rows), sent by the task
    crowd.tasks.pay_bonus once the transaction commits."""

    if study.platform != Study.Platform.PROLIFIC or not study.platform_study_id:
        raise ApplicationError(
            "Bonuses are paid through Prolific: the study needs its Prolific STUDY_ID.",
            {"platform_study_id": "required"},
        )
    rows = bonus_rows(study=study, amounts=amounts, csv_text=csv_text)
    payment = BonusPayment.objects.create(
        study=study,
        requested_by=requested_by,
        bonuses=[[pid, str(amount)] for pid, amount in rows],
        total=sum((amount for _, amount in rows), Decimal("0.00")),
    )
    from crowd.tasks import pay_bonus

    engine.enqueue_on_commit(pay_bonus, payment.pk)
    return payment


def bonus_payment_send(*, bonus_id: int, client: Any) -> str:
    """Send one bonus payment to Prolific (``client``: crowd.prolific.ProlificClient): set it
    up (POST submissions/bonus-payments/), then pay it (POST bulk-bonus-payments/{id}/pay/).
    Returns the payment's status. Safe to run twice and concurrently: each step runs under the
    payment's row lock and only from its state; set-up errors raise ProlificError (the task
    retries those Prolific may answer later, crowd.prolific.retryable) after recording them.
    Paying is not idempotent on Prolific's side, so the payment is marked ``paying`` before the
    call and never sent again: a failed pay call leaves it ``failed`` with the error, for the
    researcher to check on Prolific."""
    from crowd.prolific import ProlificError, retryable

    failure: ProlificError | None = None
    pay_now = False
    with transaction.atomic():
        payment = BonusPayment.objects.select_for_update().select_related("study").get(pk=bonus_id)
        if payment.status == BonusPayment.Status.PENDING:
            payment.attempts += 1
            try:
                bulk_id = client.bonus_create(
                    payment.study.platform_study_id, [tuple(row) for row in payment.bonuses]
                )
            except ProlificError as error:
                failure = error
                payment.error = error.message[:2000]
                if not retryable(error):
                    payment.status = BonusPayment.Status.FAILED
                payment.save(update_fields=["attempts", "error", "status"])
            else:
                payment.prolific_id = bulk_id
                payment.status = BonusPayment.Status.SET_UP
                payment.error = ""
                payment.save(update_fields=["attempts", "prolific_id", "status", "error"])
        if failure is None and payment.status == BonusPayment.Status.SET_UP:
            # marked (and committed) before the call: whatever happens next, never sent twice
            payment.status = BonusPayment.Status.PAYING
            payment.save(update_fields=["status"])
            pay_now = True
    if failure is not None and retryable(failure):
        raise failure  # recorded above; the task retries it
    if not pay_now:
        return payment.status
    try:
        client.bonus_pay(payment.prolific_id)
    except ProlificError as error:
        BonusPayment.objects.filter(pk=bonus_id).update(
            status=BonusPayment.Status.FAILED,
            error=(
                f"{error.message} The payment was not sent again (Prolific's pay call is not "
                "idempotent): check the study's bonuses on Prolific."
            )[:2000],
        )
        return BonusPayment.Status.FAILED
    BonusPayment.objects.filter(pk=bonus_id).update(
        status=BonusPayment.Status.PAID, paid_at=timezone.now()
    )
    return BonusPayment.Status.PAID
