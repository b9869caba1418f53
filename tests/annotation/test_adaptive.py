"""Adaptive overlap on categorical stages (annotation/adaptive.py): the confidence measure, the
options a stage may set, and the engine asking one more annotator only while a decision is
below its stage's confidence target, up to the cap."""

from __future__ import annotations

import pytest

from annotation import adaptive, services
from annotation.access import access_stage_for_annotator
from annotation.errors import ApplicationError
from annotation.models import ItemStage
from annotation.resolution import majority_confidence
from tests.factories import (
    make_items,
    make_label_stage,
    make_member,
    make_project,
    make_verify_stage,
)

# --- the measure (pure) ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ({"a": 2}, 0.875),  # Beta(3, 1): 1 - 0.5**3
        ({"a": 1, "b": 1}, 0.5),
        ({"a": 2, "b": 1}, 0.6875),
        ({"a": 3}, 0.9375),
        ({"a": 3, "b": 1}, 0.8125),
        ({"a": 4, "b": 1}, 0.890625),
        ({}, 0.5),
    ],
)
def test_the_confidence_is_the_beta_tail_of_the_leading_share_above_one_half(votes, expected):
    assert majority_confidence(votes) == pytest.approx(expected)


def test_the_confidence_does_not_depend_on_which_label_leads_or_how_the_rest_split():
    assert majority_confidence({"a": 3, "b": 1}) == majority_confidence({"b": 1, "z": 3})
    assert majority_confidence({"a": 3, "b": 1, "c": 1}) == majority_confidence({"a": 3, "b": 2})


def test_a_prior_that_is_not_positive_is_refused():
    with pytest.raises(ValueError, match="prior"):
        majority_confidence({"a": 1}, prior=0)


@pytest.mark.parametrize(
    "options",
    [
        {"confidence": 0.4},
        {"confidence": 1.0},
        {"confidence": True},
        {"confidence": "high"},
        {"confidence": 0.9, "confidence_measure": "nope"},
        {"confidence_measure": "beta"},
    ],
)
def test_options_that_cannot_work_are_refused_with_a_sentence(options):
    with pytest.raises(ValueError) as error:
        adaptive.validate_options(options)
    assert "confidence" in str(error.value)


def test_a_registered_measure_is_asked_instead_of_the_built_in_one():
    asked: list[adaptive.ConfidenceQuestion] = []

    def always_sure(question: adaptive.ConfidenceQuestion) -> float:
        asked.append(question)
        return 1.0

    adaptive.register_confidence_measure("test-sure", always_sure)
    try:
        question = adaptive.ConfidenceQuestion(7, "a", {"a": 2, "b": 1}, 2)
        assert adaptive.shortfall(question, {"confidence": 0.99}) is not None
        assert (
            adaptive.shortfall(question, {"confidence": 0.99, "confidence_measure": "test-sure"})
            is None
        )
        assert asked == [question]
    finally:
        del adaptive.MEASURES["test-sure"]


# --- the engine ----------------------------------------------------------------------------------


@pytest.fixture
def _on_commit(django_capture_on_commit_callbacks, monkeypatch):
    original = services.annotation_submit

    def submit_and_commit(**kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return original(**kwargs)

    monkeypatch.setattr(services, "annotation_submit", submit_and_commit)


def adaptive_stage(project, *, confidence=0.85, max_overlap=5, choices=("a", "b")):
    return make_label_stage(
        project,
        overlap=2,
        choices=choices,
        tie_policy="extra_annotation",
        policy_options={"confidence": confidence},
        max_overlap=max_overlap,
    )


def answer(person, stage, value):
    access = access_stage_for_annotator(user=person, stage_id=stage.pk)
    assignment = services.assignment_next(annotator=person, stage=access)
    assert assignment is not None, f"{person} got no item"
    services.annotation_submit(
        assignment_id=assignment.pk, annotator=person, payload={"value": value}
    )


@pytest.mark.django_db
@pytest.mark.usefixtures("_on_commit")
@pytest.mark.parametrize(
    ("answers", "count", "value", "state"),
    [
        ("aa", 2, "a", ItemStage.State.RESOLVED),  # 0.875 ≥ 0.85: two suffice
        ("abb", 3, None, ItemStage.State.OPEN),  # 1-1 tie, then 2-1 (0.69): a fourth wanted
        ("abbb", 4, None, ItemStage.State.OPEN),  # 3-1 (0.81): a fifth wanted
        ("abbbb", 5, "b", ItemStage.State.RESOLVED),  # 4-1 (0.89)
        ("ababa", 5, "a", ItemStage.State.RESOLVED),  # 3-2 at the cap: the majority stands
    ],
)
def test_an_adaptive_stage_asks_one_more_annotator_only_while_unsure(answers, count, value, state):
    project = make_project()
    stage = adaptive_stage(project)
    make_items(project, 1)
    people = [make_member(project) for _ in range(6)]
    for person, given in zip(people, answers, strict=False):
        answer(person, stage, given)
    item_stage = ItemStage.objects.get(stage=stage)
    assert item_stage.submitted_count == count == len(answers)
    assert item_stage.state == state
    assert item_stage.leased_count == 0
    if state == ItemStage.State.OPEN:
        assert item_stage.target_count == count + 1
        assert item_stage.resolution.status == "insufficient"
        assert "one more annotator" in item_stage.resolution.reason
    else:
        assert item_stage.target_count == count
        assert item_stage.resolution.value == value
    if answers == "ababa":
        assert "cap of 5" in item_stage.resolution.reason
        # nobody is given the item again
        access = access_stage_for_annotator(user=people[5], stage_id=stage.pk)
        assert services.assignment_next(annotator=people[5], stage=access) is None


@pytest.mark.django_db
@pytest.mark.usefixtures("_on_commit")
def test_a_stage_without_a_confidence_target_keeps_its_fixed_overlap():
    project = make_project()
    stage = make_label_stage(project, overlap=3, choices=("a", "b"))
    make_items(project, 1)
    people = [make_member(project) for _ in range(3)]
    for person, given in zip(people, "abb", strict=True):
        answer(person, stage, given)
    item_stage = ItemStage.objects.get(stage=stage)
    assert (item_stage.state, item_stage.target_count) == (ItemStage.State.RESOLVED, 3)
    assert item_stage.resolution.value == "b"


@pytest.mark.django_db
def test_the_stage_service_refuses_a_confidence_target_out_of_range_naming_it():
    project = make_project()
    with pytest.raises(ApplicationError, match="confidence must be a probability"):
        adaptive_stage(project, confidence=1.5)
    with pytest.raises(ApplicationError, match="no option confidence"):
        make_verify_stage(
            project, resolution_policy="unanimity_keep", policy_options={"confidence": 0.9}
        )


@pytest.mark.django_db
@pytest.mark.usefixtures("_on_commit")
def test_two_agreeing_answers_settle_an_item_whatever_the_number_of_labels():
    project = make_project()
    stage = adaptive_stage(project, choices=("a", "b", "c", "d", "e"))
    make_items(project, 1)
    for person in [make_member(project) for _ in range(2)]:
        answer(person, stage, "c")
    item_stage = ItemStage.objects.get(stage=stage)
    assert (item_stage.state, item_stage.resolution.value) == (ItemStage.State.RESOLVED, "c")


@pytest.mark.django_db
def test_the_demo_shows_every_state_of_adaptive_overlap():
    from annotation.demo_adaptive import ADAPTIVE_SLUG, adaptive_demo_seed

    adaptive_demo_seed(users={})
    adaptive_demo_seed(users={})  # safe to run again
    item_stages = ItemStage.objects.filter(stage__project__slug=ADAPTIVE_SLUG)
    seen = sorted((row.submitted_count, row.target_count, row.state) for row in item_stages)
    assert seen == sorted(
        [(5, 5, "resolved")] * 2
        + [(3, 4, "open")]
        + [(2, 3, "open")] * 2
        + [(2, 2, "resolved")] * 2
        + [(0, 2, "open")] * 5
    )
