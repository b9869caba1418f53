"""Crowd studies through their services: entry, places, exclusion, resume, practice before real
items, the quota, attention checks, time-outs, leaving with annotations kept or withdrawn."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone

from annotation import services as engine
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError, Conflict
from annotation.models import Annotation, Assignment, Item, ItemStage, Membership, Role
from crowd import services
from crowd.entry import BadEntry, Entry, parse_entry
from crowd.models import Participant, Study
from tests.factories import make_crowd_study, prolific_ids

pytestmark = pytest.mark.django_db


def enter(study, number: int) -> Participant:
    participant, _ = services.participant_enter(
        study=study, entry=parse_entry(study, prolific_ids(number))
    )
    return participant


def ready(participant: Participant) -> Participant:
    services.participant_consent(participant=participant, accepted=True)
    services.participant_instructions_read(participant=participant)
    return services.participant_refresh(participant=participant)


def next_item(participant: Participant):
    stage = access_stage_for_annotator(user=participant.user, stage_id=participant.study.stage_id)
    return engine.assignment_next(annotator=participant.user, stage=stage)


def answer(participant: Participant, assignment, value: str = "causal"):
    engine.annotation_submit(
        assignment_id=assignment.pk, annotator=participant.user, payload={"value": value}
    )
    return services.participant_refresh(participant=participant)


def test_an_entry_creates_a_participant_with_a_passwordless_annotator_account():
    study = make_crowd_study()
    participant, created = services.participant_enter(
        study=study, entry=parse_entry(study, prolific_ids(1))
    )
    assert created and participant.platform_id == prolific_ids(1)["PROLIFIC_PID"]
    assert participant.session_id == prolific_ids(1)["SESSION_ID"]
    user = participant.user
    assert not user.has_usable_password()
    assert prolific_ids(1)["PROLIFIC_PID"] not in user.username  # the id is for payment only
    assert Membership.objects.filter(project=study.project, user=user, role=Role.ANNOTATOR).exists()
    # nothing is added to the stages: the crowd gate applies its rule to participants (test_gate)
    assert study.stage.__class__.objects.get(pk=study.stage_id).eligibility == []


def test_the_same_platform_id_resumes_instead_of_taking_a_second_place():
    study = make_crowd_study()
    first = ready(enter(study, 1))
    again, created = services.participant_enter(
        study=study, entry=parse_entry(study, prolific_ids(1))
    )
    assert not created and again.pk == first.pk and again.user_id == first.user_id
    assert Participant.objects.filter(study=study).count() == 1


def test_an_excluded_id_is_refused_and_nothing_is_written():
    study = make_crowd_study(excluded_ids=f"someone\n{prolific_ids(3)['PROLIFIC_PID']}\n")
    users = get_user_model().objects.count()
    with pytest.raises(services.Refused) as refused:
        enter(study, 3)
    assert refused.value.status == 403 and "earlier study" in refused.value.message
    assert not Participant.objects.exists() and get_user_model().objects.count() == users


def test_places_are_never_exceeded_and_returned_places_reopen():
    study = make_crowd_study(places=2)
    first, _second = enter(study, 1), enter(study, 2)
    with pytest.raises(Conflict, match="places"):
        enter(study, 3)
    services.participant_leave(participant=first, status="returned", reason="Prolific: RETURNED")
    assert enter(study, 3).status == Participant.Status.ACTIVE
    with pytest.raises(Conflict):
        enter(study, 4)
    # people already in still come back when the study is full
    assert enter(study, 2).pk == _second.pk


def test_a_closed_study_takes_nobody():
    study = make_crowd_study(is_open="0")
    with pytest.raises(Conflict, match="closed"):
        enter(study, 1)


@pytest.mark.parametrize(
    "query, field",
    [
        ({}, "PROLIFIC_PID"),
        ({**prolific_ids(1), "PROLIFIC_PID": "not-an-id"}, "PROLIFIC_PID"),
        ({**prolific_ids(1), "STUDY_ID": ""}, "STUDY_ID"),
        ({**prolific_ids(1), "SESSION_ID": "x" * 24}, "SESSION_ID"),
        ({**prolific_ids(1), "PROLIFIC_PID": "A" * 24}, "PROLIFIC_PID"),
    ],
)
def test_bad_prolific_parameters_are_a_400_naming_the_field(query, field):
    study = make_crowd_study()
    with pytest.raises(BadEntry) as bad:
        parse_entry(study, query)
    assert bad.value.status == 400 and field in bad.value.extra


def test_a_study_id_of_another_study_is_refused_as_forged():
    study = make_crowd_study(platform_study_id="a" * 24)
    with pytest.raises(BadEntry, match="another study"):
        parse_entry(study, prolific_ids(1))
    assert parse_entry(study, {**prolific_ids(1), "STUDY_ID": "a" * 24}).platform_id


def test_no_item_before_consent_and_instructions_and_practice_before_real_items():
    study = make_crowd_study(regular=6, practice=2, checks=0, quota=3)
    participant = enter(study, 1)
    assert next_item(participant) is None  # no consent yet
    services.participant_consent(participant=participant, accepted=True)
    assert next_item(participant) is None  # instructions not read
    participant = ready(participant)
    purposes = []
    for _ in range(2):
        assignment = next_item(participant)
        purposes.append(assignment.item_stage.item.purpose)
        participant = answer(participant, assignment)
    assert purposes == ["practice", "practice"]
    assert participant.practice_done_at is not None
    assignment = next_item(participant)
    assert assignment.item_stage.item.purpose == "regular"


def test_the_practice_rule_none_goes_straight_to_real_items():
    study = make_crowd_study(practice=2, checks=0, practice_rule="none")
    participant = ready(enter(study, 1))
    assert next_item(participant).item_stage.item.purpose == "regular"


def test_practice_items_and_checks_are_open_to_every_participant():
    study = make_crowd_study(practice=2, checks=2, overlap=1)
    targets = ItemStage.objects.filter(stage=study.stage).exclude(
        item__purpose=Item.Purpose.REGULAR
    )
    assert set(targets.values_list("target_count", flat=True)) == {services.EVERYONE}


def test_the_quota_holds_even_without_the_work_gate():
    """The eligibility rule alone stops a participant at their quota (an API client that never
    opens the item screen, say)."""
    study = make_crowd_study(regular=10, practice=0, checks=0, quota=3)
    participant = ready(enter(study, 1))
    done = 0
    while (assignment := next_item(participant)) is not None:
        engine.annotation_submit(
            assignment_id=assignment.pk, annotator=participant.user, payload={"value": "causal"}
        )
        done += 1
    assert done == 3
    participant = services.participant_refresh(participant=participant)
    assert participant.status == Participant.Status.COMPLETED and participant.finished_at


def test_quota_met_completes_the_participant_and_practice_does_not_count():
    study = make_crowd_study(regular=10, practice=2, checks=0, quota=3)
    participant = ready(enter(study, 1))
    handed = []
    while participant.status == Participant.Status.ACTIVE:
        assignment = next_item(participant)
        handed.append(assignment.item_stage.item.purpose)
        participant = answer(participant, assignment)
    assert handed == ["practice", "practice", "regular", "regular", "regular"]
    assert participant.status == Participant.Status.COMPLETED
    assert services.items_done(participant) == 3


def test_failing_more_attention_checks_than_allowed_screens_out():
    study = make_crowd_study(regular=2, practice=0, checks=3, quota=5, max_check_failures=1)
    participant = ready(enter(study, 1))
    failed = 0
    while participant.status == Participant.Status.ACTIVE:
        assignment = next_item(participant)
        is_check = assignment.item_stage.item.purpose == "attention_check"
        participant = answer(participant, assignment, "temporal")
        failed += is_check
    assert participant.status == Participant.Status.SCREENED_OUT
    assert failed == 2 and "2 attention checks" in participant.reason
    assert not Assignment.objects.filter(annotator=participant.user, status="active").exists()


def test_right_answers_to_checks_keep_the_participant_in():
    study = make_crowd_study(regular=2, practice=0, checks=3, quota=5, max_check_failures=0)
    participant = ready(enter(study, 1))
    while participant.status == Participant.Status.ACTIVE:
        participant = answer(participant, next_item(participant), "causal")
    assert participant.status == Participant.Status.COMPLETED
    assert services.check_failures(participant) == 0


def test_a_range_gold_checks_numbers():
    from annotation.kinds import get_kind

    kind = get_kind("label")
    assert services._failed(kind, {"value": 3}, {"min": 1, "max": 2}, {}) is True
    assert services._failed(kind, {"value": 2}, {"min": 1, "max": 2}, {}) is False
    assert services._failed(kind, {"value": 9}, None, {"expected_min": 8}) is False
    assert services._failed(kind, {"value": "x"}, None, {"expected_max": 8}) is True
    assert services._failed(kind, {"value": 9}, None, {}) is None


def test_sessions_past_their_time_limit_time_out_and_give_their_lease_back():
    study = make_crowd_study(practice=0, time_limit_minutes=30)
    participant = ready(enter(study, 1))
    assignment = next_item(participant)
    later = timezone.now() + timedelta(minutes=29)
    assert services.participants_time_out(now=later) == 0
    assert services.participants_time_out(now=later + timedelta(minutes=2)) == 1
    participant.refresh_from_db()
    assert participant.status == Participant.Status.TIMED_OUT
    assert Assignment.objects.get(pk=assignment.pk).status == Assignment.Status.REVOKED
    assert ItemStage.objects.get(pk=assignment.item_stage_id).leased_count == 0
    assert next_item(participant) is None
    assert services.participants_time_out(now=later + timedelta(minutes=2)) == 0


def test_declining_the_consent_ends_the_session():
    study = make_crowd_study()
    participant = services.participant_consent(participant=enter(study, 1), accepted=False)
    assert participant.status == Participant.Status.RETURNED
    assert participant.reason == "declined the consent"
    with pytest.raises(ApplicationError):
        services.participant_instructions_read(participant=participant)


@pytest.mark.parametrize("on_return", ["keep", "withdraw"])
def test_a_returned_participant_keeps_or_withdraws_their_annotations(on_return):
    study = make_crowd_study(regular=6, practice=0, checks=0, quota=4, on_return=on_return)
    participant = ready(enter(study, 1))
    for _ in range(2):
        answer(participant, next_item(participant))
    held = next_item(participant)
    done = list(
        Annotation.objects.filter(annotator=participant.user).values_list(
            "item_stage_id", flat=True
        )
    )
    participant = services.participant_leave(
        participant=participant, status="returned", reason="Prolific: RETURNED"
    )
    assert participant.status == Participant.Status.RETURNED
    assert ItemStage.objects.get(pk=held.item_stage_id).leased_count == 0
    kept = Annotation.objects.filter(annotator=participant.user).count()
    submitted = sorted(
        ItemStage.objects.filter(pk__in=done).values_list("submitted_count", flat=True)
    )
    if on_return == "keep":
        assert kept == 2 and submitted == [1, 1] and participant.withdrawn == 0
    else:
        assert kept == 0 and submitted == [0, 0] and participant.withdrawn == 2
        statuses = set(
            Assignment.objects.filter(item_stage_id__in=done).values_list("status", flat=True)
        )
        assert statuses == {Assignment.Status.REVOKED}
    assert engine.item_stage_counters_repair() == 0  # the counters match the rows


def test_withdrawal_keeps_annotations_of_item_stages_already_complete():
    study = make_crowd_study(regular=2, practice=0, checks=0, quota=2, overlap=1)
    study.on_return = Study.OnReturn.WITHDRAW
    study.save(update_fields=["on_return"])
    participant = ready(enter(study, 1))
    answer(participant, next_item(participant))  # overlap 1: the item stage is complete
    withdrawn, kept = engine.annotations_withdraw(
        annotator_id=participant.user_id, project=study.project, reason="test"
    )
    assert (withdrawn, kept) == (0, 1)


def test_bad_study_settings_are_refused_naming_the_field():
    study = make_crowd_study()
    for data, field in [
        ({"quota": "0"}, "quota"),
        ({"places": "many"}, "places"),
        ({"platform": "nope"}, "platform"),
        ({"completion_code": " "}, "completion_code"),
        ({"too_fast_seconds": "nan"}, "too_fast_seconds"),
    ]:
        with pytest.raises(ApplicationError) as error:
            services.study_update(study=study, **data)
        assert field in error.value.extra


def test_entries_of_each_platform():
    study = make_crowd_study(platform="link")
    assert parse_entry(study, {"pid": "abc-1"}) == Entry(platform_id="abc-1")
    with pytest.raises(BadEntry):
        parse_entry(study, {"pid": "a b"})
    study.platform = "mturk"
    assert parse_entry(study, {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE"}).preview
    good = {
        "workerId": "A1B2C3D4E5",
        "assignmentId": "3ABCDEF1234567",
        "hitId": "3HITID12345678",
        "turkSubmitTo": "https://workersandbox.mturk.com",
    }
    assert parse_entry(study, good).turk_submit_to == "https://workersandbox.mturk.com"
    with pytest.raises(BadEntry, match="turkSubmitTo"):
        parse_entry(study, {**good, "turkSubmitTo": "https://evil.example"})


def test_rejected_and_timed_out_places_reopen_as_on_prolific():
    study = make_crowd_study(places=2)
    first, second = enter(study, 1), enter(study, 2)
    services.participant_leave(participant=first, status="rejected", reason="Prolific: REJECTED")
    services.participant_leave(participant=second, status="timed_out", reason="time")
    assert {enter(study, 3).status, enter(study, 4).status} == {"active"}
    with pytest.raises(ApplicationError):
        services.participant_leave(participant=first, status="completed", reason="no")


def test_the_beat_task_times_sessions_out():
    from crowd import tasks

    study = make_crowd_study(time_limit_minutes=1)
    participant = enter(study, 1)
    Participant.objects.filter(pk=participant.pk).update(
        started_at=timezone.now() - timedelta(minutes=2)
    )
    assert tasks.time_out_participants.delay().get() == 1
    participant.refresh_from_db()
    assert participant.status == Participant.Status.TIMED_OUT


def test_the_platform_is_fixed_once_people_entered():
    study = make_crowd_study()
    study = services.study_update(study=study, platform="link")
    study = services.study_update(study=study, platform="prolific")
    enter(study, 1)
    with pytest.raises(ApplicationError, match="platform cannot change"):
        services.study_update(study=study, platform="link")


@pytest.mark.parametrize("on_return", ["keep", "withdraw"])
@pytest.mark.parametrize("how", ["sweep", "refresh"])
def test_a_session_timed_out_here_follows_the_studys_withdrawal_rule(on_return, how):
    study = make_crowd_study(
        regular=6, practice=0, checks=0, quota=4, overlap=5, on_return=on_return,
        time_limit_minutes=10,
    )  # fmt: skip
    participant = ready(enter(study, 1))
    for _ in range(2):
        answer(participant, next_item(participant))
    held = next_item(participant)
    later = timezone.now() + timedelta(minutes=11)
    if how == "sweep":
        assert services.participants_time_out(now=later) == 1
    else:
        services.participant_refresh(participant=participant, now=later)
    participant.refresh_from_db()
    assert participant.status == Participant.Status.TIMED_OUT
    assert ItemStage.objects.get(pk=held.item_stage_id).leased_count == 0
    kept = Annotation.objects.filter(annotator=participant.user).count()
    assert kept == (2 if on_return == "keep" else 0)
    assert participant.withdrawn == (0 if on_return == "keep" else 2)
    assert engine.item_stage_counters_repair() == 0
    # Prolific reports the same time-out later: nothing changes, nothing is withdrawn twice
    services.participant_leave(participant=participant, status="timed_out", reason="Prolific")
    participant.refresh_from_db()
    assert participant.withdrawn == (0 if on_return == "keep" else 2)


def test_the_setting_when_a_participant_leaves_decides_not_a_later_change():
    study = make_crowd_study(regular=4, practice=0, checks=0, quota=3, overlap=5)
    participant = ready(enter(study, 1))
    answer(participant, next_item(participant))
    services.participant_leave(participant=participant, status="returned", reason="Prolific")
    services.study_update(study=study, on_return="withdraw")
    services.participant_leave(participant=participant, status="returned", reason="Prolific")
    assert Annotation.objects.filter(annotator=participant.user).count() == 1


def test_withdrawn_annotations_leave_the_counts_and_the_slot_goes_to_someone_else():
    study = make_crowd_study(
        regular=1, practice=0, checks=0, quota=1, overlap=2, places=5, on_return="withdraw"
    )
    first = ready(enter(study, 1))
    answer(first, next_item(first))
    item_stage = ItemStage.objects.get(stage=study.stage)
    assert item_stage.submitted_count == 1
    services.participant_leave(participant=first, status="returned", reason="Prolific")
    item_stage.refresh_from_db()
    assert item_stage.submitted_count == 0 and item_stage.state == ItemStage.State.OPEN
    # both slots are free again: two newcomers get the item, the one who left never again
    second, third = ready(enter(study, 2)), ready(enter(study, 3))
    assert next_item(second) is not None and next_item(third) is not None
    assert Assignment.objects.filter(
        annotator=first.user, status=Assignment.Status.REVOKED
    ).exists()


def test_screened_out_and_completed_participants_keep_their_work():
    study = make_crowd_study(
        regular=1, practice=0, checks=1, quota=2, overlap=5, on_return="withdraw",
        max_check_failures=0,  # quota 2 = both items: everyone meets the check
    )  # fmt: skip
    careless = ready(enter(study, 1))
    while careless.status == "active":
        careless = answer(careless, next_item(careless), "temporal")
    careful = ready(enter(study, 2))
    while careful.status == "active":
        careful = answer(careful, next_item(careful))
    assert (careless.status, careful.status) == ("screened_out", "completed")
    assert Annotation.objects.filter(annotator=careless.user).exists()
    assert Annotation.objects.filter(annotator=careful.user).count() == 2
    assert careless.withdrawn == careful.withdrawn == 0


def test_a_signed_prolific_resume_is_proof_and_an_unsigned_one_seals_earlier_answers():
    from dataclasses import replace

    study = make_crowd_study()
    ready(enter(study, 1))
    entry = parse_entry(study, prolific_ids(1))
    services.participant_enter(study=study, entry=replace(entry, signed=True))
    assert Participant.objects.get().answers_sealed_at is None
    services.participant_enter(study=study, entry=entry)
    assert Participant.objects.get().answers_sealed_at is not None


def gold_study(*, regular: int, gold: int, quota: int, overlap: int = 3):
    """A crowd study whose stage serves silent gold (annotation/gold.py) one in every 2 items."""
    study = make_crowd_study(regular=regular, practice=0, checks=0, quota=quota, overlap=overlap)
    engine.items_create(
        project=study.project,
        rows=[
            {
                "external_id": f"g-{index:03d}",
                "payload": {"text": f"Sentence {index}.", "gold": "causal"},
                "purpose": "gold",
            }
            for index in range(gold)
        ],
    )
    study.stage.gold_every = 2
    study.stage.save(update_fields=["gold_every"])
    return study


def test_a_quota_beyond_what_can_be_handed_out_completes_the_participant_with_the_code(client):
    """Silent gold counts towards the quota but comes only between ordinary items: with 3
    ordinary items, 4 gold items and a quota of 10, at most 3 + 2 items can be handed out. The
    participant is completed once nothing but gold is left, never told to try again forever."""
    from django.urls import reverse

    from crowd.gate import SESSION_KEY

    study = gold_study(regular=3, gold=4, quota=10)
    participant = ready(enter(study, 1))
    handed = []
    while participant.status == Participant.Status.ACTIVE:
        assignment = next_item(participant)
        assert assignment is not None, f"active with no item after {handed}"
        handed.append(assignment.item_stage.item.purpose)
        participant = answer(participant, assignment)
    assert handed.count("regular") == 3 and handed.count("gold") <= 2
    assert participant.status == Participant.Status.COMPLETED and participant.finished_at
    assert services.items_done(participant) < study.quota
    assert not Assignment.objects.filter(
        annotator=participant.user, status=Assignment.Status.ACTIVE
    ).exists()
    client.force_login(participant.user)
    session = client.session
    session[SESSION_KEY] = participant.pk
    session.save()
    page = client.get(reverse("crowd:done", args=[study.token])).content.decode()
    assert "C0MPLETE" in page and "gold" not in page.lower()


def test_a_participant_with_ordinary_items_left_is_not_completed_early():
    """Below the quota, a participant stays until their last ordinary item is answered: one
    they still hold counts as left."""
    study = gold_study(regular=4, gold=4, quota=10)
    participant = ready(enter(study, 1))
    ordinary = 0
    while True:
        assignment = next_item(participant)
        assert assignment is not None
        if assignment.item_stage.item.purpose == Item.Purpose.REGULAR:
            ordinary += 1
        if ordinary == 4:
            break
        participant = answer(participant, assignment)
        assert participant.status == Participant.Status.ACTIVE
        assert services.ordinary_items_left(participant)
    # the last ordinary item, held and not yet answered
    participant = services.participant_refresh(participant=participant)
    assert participant.status == Participant.Status.ACTIVE
    participant = answer(participant, assignment)
    assert participant.status == Participant.Status.COMPLETED


def test_ordinary_items_taken_by_others_keep_the_participant_waiting_not_busy():
    """Ordinary items filled by other people are not this participant's any more but could come
    back (a return, a withdrawal): the participant waits (the held message), and the free gold
    items, which cannot come without an ordinary one, are no sign of an item coming."""
    study = gold_study(regular=2, gold=3, quota=10, overlap=1)
    participant = ready(enter(study, 1))
    other = ready(enter(study, 2))
    participant = answer(participant, next_item(participant))
    while (assignment := next_item(other)) is not None:
        answer(other, assignment)
    participant = services.participant_refresh(participant=participant)
    assert participant.status == Participant.Status.ACTIVE
    assert services.ordinary_items_left(participant)
    assert not services.free_items_exist(participant, practice=False)
    assert (
        ItemStage.objects.filter(
            stage=study.stage, item__purpose=Item.Purpose.GOLD, state=ItemStage.State.OPEN
        )
        .exclude(assignments__annotator=participant.user)
        .exists()
    )
