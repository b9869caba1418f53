"""quality/services.py through the engine's own paths: answers submitted with
annotation.services act through the quality gate (quality/gate.py) inside the submit."""

from __future__ import annotations

import pytest

from annotation import services
from annotation.access import access_stage_for_annotator
from annotation.errors import Conflict
from annotation.gates import GateRefused
from annotation.models import Annotation, Assignment, ItemStage
from crowd import services as crowd_services
from crowd.entry import Entry
from crowd.models import Participant
from crowd.selectors import participant_rows
from quality import services as quality
from quality.gate import paused_message
from quality.models import QualityAction
from tests.factories import make_label_stage, make_member, make_project

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _on_commit(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        yield


def _gold_stage(*, gold: int = 6, plain: int = 4, overlap: int = 3):
    project = make_project()
    stage = make_label_stage(project, overlap=overlap)
    rows = [
        {"external_id": f"g-{n}", "payload": {"text": f"Gold {n}.", "gold": {"label": "causal"}}}
        for n in range(gold)
    ]
    rows += [{"external_id": f"p-{n}", "payload": {"text": f"Plain {n}."}} for n in range(plain)]
    services.items_create(project=project, rows=rows)
    return project, stage


def _answer(person, stage, value_for_gold, *, limit=100):
    """Answer until nothing is handed out (or ``limit`` answers); returns the number given."""
    given = 0
    while given < limit:
        access = access_stage_for_annotator(user=person, stage_id=stage.pk)
        assignment = services.assignment_next(annotator=person, stage=access)
        if assignment is None:
            return given
        gold = assignment.item_stage.gold
        value = value_for_gold if gold is not None else "none"
        services.annotation_submit(
            assignment_id=assignment.pk, annotator=person, payload={"value": value}
        )
        given += 1
    return given


def _gold_answers(person, stage):
    return Annotation.objects.filter(
        annotator=person, item_stage__stage=stage, item_stage__gold__isnull=False
    ).count()


def test_gold_is_read_from_the_item_stage():
    _project, stage = _gold_stage()
    assert set(ItemStage.objects.filter(stage=stage).values_list("gold", flat=True)) == {
        "causal",
        None,
    }


def test_no_action_before_the_minimum_of_gold_answers():
    project, stage = _gold_stage(gold=6)
    quality.quality_rule_set(stage=stage, acts=True, min_gold=6, min_accuracy=0.6, withdraw=False)
    person = make_member(project)
    # Stop before the sixth gold answer: every gold answer so far was wrong.
    while _gold_answers(person, stage) < 5:
        _answer(person, stage, "temporal", limit=1)
    assert not QualityAction.objects.exists()


def test_auto_pause_after_the_minimum_then_nothing_more_is_handed_out():
    project, stage = _gold_stage(gold=6, plain=6)
    quality.quality_rule_set(stage=stage, acts=True, min_gold=4, min_accuracy=0.6, withdraw=False)
    careless, careful = make_member(project), make_member(project)
    _answer(careful, stage, "causal")
    assert not QualityAction.objects.filter(annotator=careful).exists()
    _answer(careless, stage, "temporal")
    action = QualityAction.objects.get(annotator=careless)
    assert action.kind == QualityAction.Kind.PAUSE and action.by is None
    # Acted at the fourth gold answer, the first moment the rule was met (0 of 4: upper 49 %).
    assert action.figures["gold"] == 4 and action.figures["right"] == 0
    assert _gold_answers(careless, stage) == 4
    assert "gold accuracy 0 of 4" in action.reason
    # Paused: no item of the stage, no lease left, and the queue says why without gold.
    assert _answer(careless, stage, "temporal") == 0
    assert not Assignment.objects.filter(annotator=careless, status="active").exists()
    access = access_stage_for_annotator(user=careless, stage_id=stage.pk)
    assert access.governed
    request = type("Request", (), {"user": careless})()
    message = paused_message(request, stage)
    assert "paused by the researchers" in message and "gold" not in message


def test_a_paused_person_cannot_submit_a_lease_they_still_hold():
    project, stage = _gold_stage()
    person = make_member(project)
    quality.quality_rule_set(stage=stage, acts=True, min_gold=4, min_accuracy=0.6, withdraw=False)
    access = access_stage_for_annotator(user=person, stage_id=stage.pk)
    held = services.assignment_next(annotator=person, stage=access)
    researcher = make_member(project, "researcher")
    quality.quality_action_take(stage=stage, annotator_id=person.pk, by=researcher, reason="")
    held.refresh_from_db()
    assert held.status == Assignment.Status.REVOKED
    with pytest.raises(Exception) as refused:
        services.annotation_submit(
            assignment_id=held.pk, annotator=person, payload={"value": "none"}
        )
    assert isinstance(refused.value, (GateRefused, Conflict)) or refused.value.status in (403, 409)
    assert not Annotation.objects.filter(annotator=person).exists()


def test_undo_gives_the_stage_back_and_waits_for_new_evidence():
    project, stage = _gold_stage(gold=12, plain=0)
    quality.quality_rule_set(stage=stage, acts=True, min_gold=4, min_accuracy=0.6, withdraw=False)
    person, researcher = make_member(project), make_member(project, "researcher")
    _answer(person, stage, "temporal")
    action = QualityAction.objects.get(annotator=person)
    quality.quality_action_undo(stage=stage, action_id=action.pk, by=researcher)
    # Three more wrong gold answers are not yet four new ones: they go on.
    assert _answer(person, stage, "temporal", limit=3) == 3
    assert not QualityAction.objects.filter(undone_at__isnull=True).exists()
    # The fourth is: paused again.
    assert _answer(person, stage, "temporal") == 1
    again = QualityAction.objects.get(undone_at__isnull=True)
    assert again.figures["gold"] == 8 and again.pk != action.pk


@pytest.mark.parametrize("withdraw", [False, True])
def test_withdrawal_on_and_off(withdraw):
    # Overlap 3 and two people: every item stays open, so withdrawn answers can go.
    project, stage = _gold_stage(gold=4, plain=2)
    quality.quality_rule_set(
        stage=stage, acts=True, min_gold=4, min_accuracy=0.6, withdraw=withdraw
    )
    person, other = make_member(project), make_member(project)
    _answer(other, stage, "causal")
    given = _answer(person, stage, "temporal")
    action = QualityAction.objects.get(annotator=person)
    left = Annotation.objects.filter(annotator=person).count()
    if withdraw:
        assert left == 0 and action.withdrawn == given and action.withdrawn_at is not None
        assert set(
            ItemStage.objects.filter(stage=stage).values_list("submitted_count", flat=True)
        ) == {1}
    else:
        assert left == given and action.withdrawn == 0
    # The researcher withdraws by hand later (when the rule did not).
    if not withdraw:
        researcher = make_member(project, "researcher")
        assert (
            quality.quality_action_withdraw(stage=stage, action_id=action.pk, by=researcher)
            == given
        )
        assert not Annotation.objects.filter(annotator=person).exists()


def test_decided_work_is_kept_by_the_withdrawal_rule():
    project, stage = _gold_stage(gold=4, plain=0, overlap=1)
    quality.quality_rule_set(stage=stage, acts=True, min_gold=4, min_accuracy=0.6, withdraw=True)
    person = make_member(project)
    _answer(person, stage, "temporal")
    action = QualityAction.objects.get(annotator=person)
    # Overlap 1: each answer decided its item, so nothing could be withdrawn.
    assert action.withdrawn == 0
    assert Annotation.objects.filter(annotator=person).count() == 4


def _participant(study, number):
    participant, _ = crowd_services.participant_enter(
        study=study, entry=Entry(platform_id=f"{number:024x}", session_id=f"{number:024x}")
    )
    crowd_services.participant_consent(participant=participant, accepted=True)
    crowd_services.participant_instructions_read(participant=participant)
    return participant


def test_a_participant_is_screened_out_with_a_suggested_reject_and_let_back_in():
    project, stage = _gold_stage(gold=6, plain=2, overlap=5)
    study = crowd_services.study_create(
        project=project, stage=stage, name="Pilot", consent_text="Yes.", instructions="Label.",
        completion_code="C0MPLETE", screenout_code="SCREEN0UT", places=3, quota=8,
        platform="prolific",
    )  # fmt: skip
    quality.quality_rule_set(stage=stage, acts=True, min_gold=4, min_accuracy=0.6, withdraw=False)
    participant = _participant(study, 1)
    _answer(participant.user, stage, "temporal")
    participant.refresh_from_db()
    assert participant.status == Participant.Status.SCREENED_OUT
    action = QualityAction.objects.get(annotator=participant.user)
    assert action.kind == QualityAction.Kind.SCREEN_OUT
    row = next(row for row in participant_rows(study) if row["participant"].pk == participant.pk)
    assert row["suggestion"] == "reject" and "gold accuracy 0 of 4" in row["reason"]
    assert row["category"] == "FAILED_CHECK"
    researcher = make_member(project, "researcher")
    quality.quality_action_undo(stage=stage, action_id=action.pk, by=researcher)
    participant.refresh_from_db()
    assert participant.status == Participant.Status.ACTIVE and participant.reason == ""
    row = next(row for row in participant_rows(study) if row["participant"].pk == participant.pk)
    assert row["suggestion"] == ""
    # Back in: they get the stage's items again.
    assert _answer(participant.user, stage, "causal") > 0


def test_undo_leaves_a_screen_out_for_failed_attention_checks_alone():
    project, stage = _gold_stage(gold=0, plain=4, overlap=5)
    study = crowd_services.study_create(
        project=project, stage=stage, name="Pilot", consent_text="Yes.", instructions="Label.",
        completion_code="C0MPLETE", screenout_code="SCREEN0UT", places=3, quota=4,
        platform="prolific",
    )  # fmt: skip
    participant = _participant(study, 2)
    Participant.objects.filter(pk=participant.pk).update(
        status=Participant.Status.SCREENED_OUT, reason="failed 2 attention checks"
    )
    crowd_services.participant_screen_out_undo(
        annotator_id=participant.user_id, project=project, reason="gold accuracy 0 of 4"
    )
    participant.refresh_from_db()
    assert participant.status == Participant.Status.SCREENED_OUT


def test_rule_bounds_are_checked():
    _project, stage = _gold_stage()
    with pytest.raises(Exception) as refused:
        quality.quality_rule_set(
            stage=stage, acts=True, min_gold=0, min_accuracy=0.5, withdraw=False
        )
    assert refused.value.extra == {"min_gold": "at least 1"}


def test_a_manual_pause_is_refused_twice():
    project, stage = _gold_stage()
    person, researcher = make_member(project), make_member(project, "researcher")
    quality.quality_action_take(stage=stage, annotator_id=person.pk, by=researcher, reason="x")
    with pytest.raises(Conflict):
        quality.quality_action_take(stage=stage, annotator_id=person.pk, by=researcher, reason="x")
