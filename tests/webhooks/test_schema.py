"""The bodies receivers get match the OpenAPI schema (webhooks/schema.py): each event kind is
announced by the code that does the work — an import, decisions and a reviewer's, a completed
stage, a release, a crowd participant screened out and one completed, a model run — recorded,
delivered to the local receiver, and every body validated against ``/api/schema/``'s
``WebhookBody``."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import jsonschema
import pytest
from django.utils import timezone
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

from annotation import events
from annotation import services as engine
from annotation.models import Item, ItemStage, Role
from tests.factories import (
    annotate_stage,
    make_crowd_study,
    make_items,
    make_label_stage,
    make_member,
    make_project,
    prolific_ids,
)
from webhooks import delivery
from webhooks.models import Webhook
from webhooks.signing import secret_new

pytestmark = pytest.mark.django_db


def body_schema() -> dict:
    document = json.loads(
        OpenApiJsonRenderer().render(SchemaGenerator().get_schema(request=None, public=True))
    )
    assert "RungwiseEvents" in document["webhooks"]
    return {"$ref": "#/components/schemas/WebhookBody", "components": document["components"]}


def test_every_event_kind_arrives_in_a_body_the_schema_describes(
    receiver, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.MEDIA_ROOT = tmp_path / "media"
    project = make_project()
    stage = make_label_stage(project, overlap=2)
    make_items(project, 2)
    study = make_crowd_study(regular=2, practice=0, checks=0)
    hook, crowd_hook = (
        Webhook.objects.create(
            project=announcing,
            name="All",
            url=receiver.url,
            secret=secret_new(),
            events=list(events.PROJECT_EVENT_KINDS),
            batch_size=1000,
        )
        for announcing in (project, study.project)
    )
    admin = make_member(project, Role.ADMIN)
    from imports.services import import_batch_create, import_batch_run

    batch = import_batch_create(
        project=project,
        user=admin,
        fileobj=io.BytesIO(b'{"external_id": "new-1", "text": "One more."}\n'),
        filename="more.jsonl",
        options={},
    )
    import_batch_run(batch_id=batch.pk)
    people = [make_member(project), make_member(project)]
    votes = {people[0].pk: "causal", people[1].pk: "temporal"}
    with django_capture_on_commit_callbacks(execute=True):
        annotate_stage(stage, people, lambda person, item: votes[person.pk])
    reviewer = make_member(project, Role.REVIEWER)
    for item_stage in ItemStage.objects.filter(stage=stage, state=ItemStage.State.ADJUDICATION):
        with django_capture_on_commit_callbacks(execute=True):
            engine.item_stage_adjudicate(
                item_stage_id=item_stage.pk, reviewer=reviewer, value="causal", reason="fits"
            )
    Item.objects.filter(project=project).update(status=Item.Status.ACCEPTED)
    from releases.services import release_publish

    with django_capture_on_commit_callbacks(execute=True):
        release_publish(project=project, user=admin)
    from crowd import services as crowd

    participant, _ = crowd.participant_enter(study=study, entry=crowd_entry(study))
    crowd.participant_screen_out(
        annotator_id=participant.user_id, project=study.project, reason="failed the checks"
    )
    from tests.crowd.test_services import answer, enter, next_item, ready

    finisher = ready(enter(study, 2))
    while finisher.status == finisher.Status.ACTIVE:
        finisher = answer(finisher, next_item(finisher))
    assert finisher.status == finisher.Status.COMPLETED
    from llm.models import Run
    from llm.runs import _finish

    _finish(Run.objects.create(project=project, purpose=Run.Purpose.EVALUATE, status="running"))

    later = timezone.now() + timedelta(days=1)
    for each in (hook, crowd_hook):
        while delivery.webhook_deliver(hook_id=each.pk, now=later) == delivery.SENT:
            pass
    delivery.webhook_test_deliver(hook_id=hook.pk)
    schema = body_schema()
    seen = []
    for request in receiver.requests:
        jsonschema.validate(request.document, schema)
        seen += [event["type"] for event in request.document["events"]]
    assert set(seen) >= set(events.PROJECT_EVENT_KINDS)
    assert "ping" in seen


def crowd_entry(study):
    from crowd.entry import parse_entry

    return parse_entry(study, prolific_ids(1))
