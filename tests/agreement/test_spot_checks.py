"""Spot checks (agreement/spot_checks.py): a seeded, deterministic sample of the items a
stage's annotators settled, at the stage's rate, in the reviewers' queue beside ties and
escalations; a confirmation is recorded, an overturn goes through the engine's adjudication."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from agreement.models import SpotCheck
from agreement.spot_checks import spot_check_queue, spot_check_rate, spot_check_record
from annotation.errors import ApplicationError, Conflict
from annotation.models import Item, ItemStage, Resolution, Role, Stage
from tests.factories import (
    PASSWORD,
    annotate_stage,
    make_items,
    make_label_stage,
    make_member,
    make_project,
    make_verify_stage,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def set_rate(stage: Stage, rate) -> None:
    Stage.objects.filter(pk=stage.pk).update(config={**stage.config, "spot_check_rate": rate})
    stage.refresh_from_db()


@pytest.fixture
def settled(django_capture_on_commit_callbacks):
    """40 items labelled "causal" by both annotators of a one-stage project: all accepted."""
    project = make_project(slug="spot")
    stage = make_label_stage(project, overlap=2)
    make_items(project, 40)
    people = [make_member(project, username=f"ann{rank}") for rank in range(2)]
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(stage, people, lambda person, item: "causal")
    assert Item.objects.filter(project=project, status=Item.Status.ACCEPTED).count() == 40
    reviewer = make_member(project, Role.REVIEWER, username="rev")
    return project, stage, people, reviewer


def test_the_rate_is_read_from_the_stage_and_anything_else_is_no_rate(settled):
    _, stage, _, _ = settled
    for raw, rate in ((0.25, 0.25), (3, 1.0), (-1, 0.0), ("10%", 0.0), (True, 0.0), (None, 0.0)):
        set_rate(stage, raw)
        assert spot_check_rate(stage) == rate


def test_the_sample_is_seeded_deterministic_and_near_the_rate(settled):
    project, stage, _, reviewer = settled
    assert not spot_check_queue(project).exists()  # no rate: no spot checks
    set_rate(stage, 0.25)
    first = list(spot_check_queue(project).values_list("pk", flat=True))
    assert first == list(spot_check_queue(project, reviewer=reviewer).values_list("pk", flat=True))
    assert 3 <= len(first) <= 20  # 40 × 0.25 = 10, drawn by a hash
    set_rate(stage, 0.5)
    wider = set(spot_check_queue(project).values_list("pk", flat=True))
    assert set(first) <= wider  # a higher rate draws more of the same items
    set_rate(stage, 1.0)
    assert spot_check_queue(project).count() == 40


def test_annotators_never_check_their_own_items(settled):
    project, stage, people, _ = settled
    set_rate(stage, 1.0)
    assert not spot_check_queue(project, reviewer=people[0]).exists()


def test_a_confirmation_is_recorded_once_and_leaves_the_queue(settled):
    project, stage, _, reviewer = settled
    set_rate(stage, 1.0)
    item_stage = spot_check_queue(project).first()
    check = spot_check_record(
        item_stage_id=item_stage.pk, reviewer=reviewer, overturn=False, reason=""
    )
    assert check.verdict == SpotCheck.Verdict.CONFIRMED and check.checked_value == "causal"
    assert not spot_check_queue(project).filter(pk=item_stage.pk).exists()
    with pytest.raises(Conflict, match="rev already checked this item: confirmed"):
        spot_check_record(item_stage_id=item_stage.pk, reviewer=reviewer, overturn=False)


def test_an_overturn_is_a_reviewers_decision_through_adjudication(settled):
    project, stage, _, reviewer = settled
    set_rate(stage, 1.0)
    item_stage = spot_check_queue(project).first()
    with pytest.raises(ApplicationError, match="Say why"):
        spot_check_record(
            item_stage_id=item_stage.pk, reviewer=reviewer, overturn=True, value="temporal"
        )
    with pytest.raises(ApplicationError, match="already made"):
        spot_check_record(
            item_stage_id=item_stage.pk, reviewer=reviewer, overturn=True, value="causal",
            reason="same",
        )  # fmt: skip
    check = spot_check_record(
        item_stage_id=item_stage.pk,
        reviewer=reviewer,
        overturn=True,
        value="temporal",
        reason="B only follows A",
    )
    assert check.verdict == SpotCheck.Verdict.OVERTURNED and check.value == "temporal"
    item_stage.refresh_from_db()
    resolution = Resolution.objects.get(item_stage=item_stage)
    assert resolution.value == "temporal" and resolution.status == "adjudicated"
    assert resolution.decided_by == reviewer and "B only follows A" in resolution.reason
    assert item_stage.state == ItemStage.State.RESOLVED
    assert Item.objects.get(pk=item_stage.item_id).status == Item.Status.ACCEPTED
    assert not spot_check_queue(project).filter(pk=item_stage.pk).exists()


def test_an_item_gone_on_to_a_later_stage_is_not_overturned_here(
    django_capture_on_commit_callbacks,
):
    project = make_project(slug="spot-two")
    verify = make_verify_stage(project, overlap=2)
    make_label_stage(project, overlap=2)
    make_items(project, 4)
    people = [make_member(project, username=f"ann{rank}") for rank in range(2)]
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(verify, people, lambda person, item: "keep")
    set_rate(verify, 1.0)
    reviewer = make_member(project, Role.REVIEWER, username="rev")
    item_stage = spot_check_queue(project).first()
    with pytest.raises(Conflict, match="has gone on to Label"):
        spot_check_record(
            item_stage_id=item_stage.pk, reviewer=reviewer, overturn=True, value="reject",
            reason="not one event",
        )  # fmt: skip
    assert not SpotCheck.objects.exists()
    assert ItemStage.objects.get(pk=item_stage.pk).state == ItemStage.State.RESOLVED
    confirmed = spot_check_record(item_stage_id=item_stage.pk, reviewer=reviewer, overturn=False)
    assert confirmed.verdict == SpotCheck.Verdict.CONFIRMED


def test_the_queue_page_lists_spot_checks_and_a_reviewer_confirms_one(settled):
    project, stage, people, reviewer = settled
    set_rate(stage, 0.25)
    client = Client()
    assert client.login(username=reviewer.username, password=PASSWORD)
    queue = client.get(reverse("agreement:adjudication", args=[project.slug])).content.decode()
    waiting = spot_check_queue(project).count()
    assert f"Spot checks · {waiting}" in queue and "spot check</span>" in queue
    first = spot_check_queue(project).first()
    url = reverse("agreement:spot_check", args=[project.slug, first.pk])
    assert url in queue
    page = client.get(url)
    assert page.status_code == 200 and "Confirm causal" in page.content.decode()
    refused = client.post(url, {"verdict": "maybe"})
    assert refused.status_code == 400 and "Confirm the decision or overturn it" in (
        refused.content.decode()
    )
    done = client.post(url, {"verdict": "confirm"})
    assert done.status_code == 302
    assert SpotCheck.objects.get(item_stage=first).reviewer == reviewer
    assert "confirmed" in client.get(url).content.decode()  # the verdict, shown
    # An item stage not drawn answers as an unknown one; an annotator's own is refused.
    undrawn = (
        ItemStage.objects.filter(stage=stage)
        .exclude(pk__in=spot_check_queue(project).values("pk"))
        .exclude(pk=first.pk)
        .first()
    )
    assert (
        client.get(reverse("agreement:spot_check", args=[project.slug, undrawn.pk])).status_code
        == 404
    )
    annotator = Client()
    assert annotator.login(username=people[0].username, password=PASSWORD)
    assert annotator.get(url).status_code in (403, 404)
