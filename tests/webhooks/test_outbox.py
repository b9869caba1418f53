"""Recording events: in the transaction of the work (or not at all), without ever failing the
work, once per subscribed active hook; decisions, adjudication, a stage's completion; one
item's events delivered in order; a burst of 10,000 decisions becomes one wake message and
batches the receiver can take."""

from __future__ import annotations

import logging

import pytest
from django.db import transaction

from annotation import events, services
from annotation.models import ItemStage, Resolution
from tests.factories import (
    annotate_stage,
    make_items,
    make_label_stage,
    make_member,
    make_project,
    make_verify_stage,
)
from webhooks import delivery
from webhooks.models import Webhook, WebhookEvent
from webhooks.signing import secret_new

pytestmark = pytest.mark.django_db

ALL = list(events.PROJECT_EVENT_KINDS)


def hook_on(project, url: str, kinds=ALL, **extra) -> Webhook:
    return Webhook.objects.create(
        project=project, name="Lab", url=url, secret=secret_new(), events=list(kinds), **extra
    )


def kinds_of(hook: Webhook) -> list[str]:
    return list(
        WebhookEvent.objects.filter(hook=hook).order_by("pk").values_list("kind", flat=True)
    )


def keep_all(person, item) -> str:
    return "keep"


def test_a_project_event_is_recorded_for_subscribed_active_hooks_only(receiver):
    project = make_project()
    subscribed = hook_on(project, receiver.url, ["import.finished"])
    other_kind = hook_on(project, receiver.url, ["release.published"])
    off = hook_on(project, receiver.url, ["import.finished"], is_active=False)
    elsewhere = hook_on(make_project(), receiver.url, ["import.finished"])
    events.project_event("import.finished", project_id=project.pk, data={"import": {"id": 7}})
    assert kinds_of(subscribed) == ["import.finished"]
    assert kinds_of(other_kind) == kinds_of(off) == kinds_of(elsewhere) == []
    with pytest.raises(ValueError):
        events.project_event("no.such.kind", project_id=project.pk, data={})


def test_an_event_of_work_rolled_back_is_not_recorded(receiver):
    project = make_project()
    hook = hook_on(project, receiver.url)
    with pytest.raises(RuntimeError), transaction.atomic():
        events.project_event("import.finished", project_id=project.pk, data={"import": {}})
        raise RuntimeError("the import's transaction fails after announcing")
    assert kinds_of(hook) == []


def test_decisions_are_recorded_and_a_failing_recorder_never_undoes_one(
    receiver, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    project = make_project()
    stage = make_verify_stage(project, overlap=1)
    make_items(project, 3)
    hook = hook_on(project, receiver.url, ["item_stage.decided"])
    person = make_member(project)
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(stage, [person], keep_all)
    decided = WebhookEvent.objects.filter(hook=hook, kind="item_stage.decided")
    assert decided.count() == 3
    sample = decided.first().data
    assert sample["stage"] == {"id": stage.pk, "slug": stage.slug}
    assert sample["decision"]["value"] == "keep" and sample["decision"]["by_hand"] is False

    def broken(*args, **kwargs):
        raise RuntimeError("the outbox table is gone")

    monkeypatch.setattr("webhooks.outbox.events_record", broken)
    make_items(project, 2, prefix="more")
    with caplog.at_level(logging.ERROR), django_capture_on_commit_callbacks(execute=True):
        annotate_stage(stage, [person], keep_all)
    assert Resolution.objects.filter(item_stage__stage=stage).count() == 5
    assert "could not record the decision" in caplog.text


def test_a_tie_announces_that_the_item_needs_adjudication(
    receiver, django_capture_on_commit_callbacks
):
    project = make_project()
    stage = make_label_stage(project, overlap=2, choices=("a", "b"))
    make_items(project, 1)
    hook = hook_on(project, receiver.url)
    alice, bob = make_member(project), make_member(project)
    votes = {alice.pk: "a", bob.pk: "b"}
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(stage, [alice, bob], lambda person, item: votes[person.pk])
    item_stage = ItemStage.objects.get(stage=stage)
    assert item_stage.state == ItemStage.State.ADJUDICATION
    assert kinds_of(hook) == ["item.needs_adjudication"]
    data = WebhookEvent.objects.get(hook=hook).data
    assert data["item_stage_id"] == item_stage.pk and data["item"]["id"] == item_stage.item_id
    reviewer = make_member(project, role="reviewer")
    with django_capture_on_commit_callbacks(execute=True):
        services.item_stage_adjudicate(
            item_stage_id=item_stage.pk, reviewer=reviewer, value="a", reason="fits"
        )
    assert kinds_of(hook) == ["item.needs_adjudication", "item_stage.decided", "stage.completed"]
    decided = WebhookEvent.objects.get(hook=hook, kind="item_stage.decided").data
    assert decided["decision"]["by_hand"] is True and decided["decision"]["status"] == "adjudicated"


def test_a_stage_is_announced_complete_once(receiver, django_capture_on_commit_callbacks):
    project = make_project()
    stage = make_verify_stage(project, overlap=1)
    make_items(project, 4)
    hook = hook_on(project, receiver.url, ["stage.completed"])
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(stage, [make_member(project)], keep_all)
    (completed,) = WebhookEvent.objects.filter(hook=hook)
    assert completed.data["stage"]["id"] == stage.pk and completed.data["items"] == 4
    # Checked again (a sweep, a late listener): still once.
    from webhooks.outbox import stages_completion_check

    stages_completion_check([stage.pk])
    assert WebhookEvent.objects.filter(hook=hook).count() == 1


def test_one_items_events_arrive_in_the_order_they_happened(
    receiver, django_capture_on_commit_callbacks
):
    project = make_project()
    verify = make_verify_stage(project, overlap=1)
    label = make_label_stage(project, overlap=1)
    make_items(project, 6)
    hook = hook_on(project, receiver.url, ["item_stage.decided"], batch_size=4)
    first, second = make_member(project), make_member(project)
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(verify, [first], keep_all)
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(label, [second], lambda person, item: "causal")
    while delivery.webhook_deliver(hook_id=hook.pk, now=_later()) == delivery.SENT:
        pass
    received = [event for request in receiver.requests for event in request.document["events"]]
    assert len(received) == 12 and len({event["id"] for event in received}) == 12
    per_item: dict[int, list[int]] = {}
    for event in received:
        per_item.setdefault(event["data"]["item"]["id"], []).append(event["data"]["stage"]["id"])
    assert all(stages == [verify.pk, label.pk] for stages in per_item.values()), per_item
    assert max(len(request.event_ids) for request in receiver.requests) <= 4


def _later():
    from datetime import timedelta

    from django.utils import timezone

    return timezone.now() + timedelta(days=1)


@pytest.mark.timeout(1800)  # 10,000 events recorded and delivered: 10 min on PostgreSQL at load 20
def test_a_burst_of_10000_decisions_is_one_message_and_batches_the_receiver_takes(
    receiver, django_capture_on_commit_callbacks, django_assert_max_num_queries, monkeypatch
):
    project = make_project()
    hook = hook_on(project, receiver.url, ["item_stage.decided"], batch_size=500)
    sent: list[tuple] = []
    monkeypatch.setattr(
        "rungwise.debounce.enqueue_on_commit", lambda name, args, **kw: sent.append((name, args))
    )
    with django_capture_on_commit_callbacks(execute=True):
        # What one decision adds to its transaction: the hooks' query and one INSERT, in a
        # savepoint (SAVEPOINT / RELEASE).
        with django_assert_max_num_queries(4):
            events.project_event(
                "item.needs_adjudication", project_id=project.pk, data={"item": {"id": 0}}
            )
        WebhookEvent.objects.all().delete()
        for index in range(10_000):  # each in a savepoint of its own (project_event's)
            events.project_event(
                "item_stage.decided", project_id=project.pk, data={"item": {"id": index}}
            )
    assert sent == [("webhooks.tasks.deliver_hook", (hook.pk,))]
    steps = 0
    while delivery.webhook_deliver(hook_id=hook.pk, now=_later()) == delivery.SENT:
        steps += 1
    assert steps == 20
    sizes = [len(request.event_ids) for request in receiver.requests]
    assert sizes == [500] * 20
    items = [
        event["data"]["item"]["id"]
        for request in receiver.requests
        for event in request.document["events"]
    ]
    assert items == list(range(10_000))
