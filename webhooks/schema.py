"""The webhook bodies in the OpenAPI schema (``/api/schema/``, under ``webhooks``): what a
receiver gets, per event type. ``settings.SPECTACULAR_SETTINGS["WEBHOOKS"]`` names
``EVENTS_WEBHOOK``; webhooks/delivery.py builds the bodies these describe, and
tests/webhooks/test_schema.py checks real bodies against them."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, OpenApiWebhook, extend_schema
from drf_spectacular.utils import PolymorphicProxySerializer as Polymorphic
from rest_framework import serializers

from annotation.events import PROJECT_EVENT_KINDS


class _Ref(serializers.Serializer):
    id = serializers.IntegerField()


class WebhookItemRef(_Ref):
    external_id = serializers.CharField()


class WebhookStageRef(_Ref):
    slug = serializers.CharField()


class WebhookImportRef(_Ref):
    filename = serializers.CharField()
    status = serializers.ChoiceField(choices=["succeeded", "failed"])
    rows = serializers.IntegerField()
    items_created = serializers.IntegerField()
    items_updated = serializers.IntegerField()
    error_count = serializers.IntegerField()
    message = serializers.CharField(allow_blank=True)


#: ``{"import": {...}}``: "import" is a keyword, so the class is built with type().
ImportFinishedData = type(
    "ImportFinishedData", (serializers.Serializer,), {"import": WebhookImportRef()}
)


class ItemStageDecidedData(serializers.Serializer):
    class WebhookDecision(serializers.Serializer):
        value = serializers.JSONField(help_text="The decided value (the stage kind's choice).")
        status = serializers.CharField(help_text="unanimous, majority, adjudicated, …")
        outcome = serializers.CharField(help_text="accept, reject or a workflow's own outcome.")
        by_hand = serializers.BooleanField(help_text="Decided by a person, not the policy.")

    item = WebhookItemRef()
    stage = WebhookStageRef()
    item_stage_id = serializers.IntegerField()
    state = serializers.CharField(help_text="The item stage's state after the decision.")
    decision = WebhookDecision()


class ItemNeedsAdjudicationData(serializers.Serializer):
    item = WebhookItemRef()
    stage = WebhookStageRef()
    item_stage_id = serializers.IntegerField()
    round = serializers.IntegerField()


class StageCompletedData(serializers.Serializer):
    stage = WebhookStageRef()
    items = serializers.IntegerField()
    discarded = serializers.IntegerField()
    completed_at = serializers.DateTimeField()


class ReleasePublishedData(serializers.Serializer):
    class WebhookReleaseRef(_Ref):
        version = serializers.IntegerField()
        sha256 = serializers.CharField()
        published_at = serializers.DateTimeField()

    release = WebhookReleaseRef()


class CrowdParticipantEndedData(serializers.Serializer):
    class WebhookParticipantRef(_Ref):
        status = serializers.ChoiceField(choices=["completed", "screened_out"])

    class WebhookStudyRef(_Ref):
        name = serializers.CharField()

    participant = WebhookParticipantRef(help_text="Rungwise's id; never the platform's.")
    study = WebhookStudyRef()
    reason = serializers.CharField(allow_blank=True)


class ModelRunFinishedData(serializers.Serializer):
    class WebhookRunRef(_Ref):
        purpose = serializers.CharField()
        status = serializers.CharField()
        done = serializers.IntegerField()
        failed = serializers.IntegerField()
        total = serializers.IntegerField()

    run = WebhookRunRef()


class PingData(serializers.Serializer):
    message = serializers.CharField(allow_blank=True)


#: The ``data`` of each event type ("ping": the test button's).
DATA: dict[str, type[serializers.Serializer]] = {
    "import.finished": ImportFinishedData,
    "item_stage.decided": ItemStageDecidedData,
    "item.needs_adjudication": ItemNeedsAdjudicationData,
    "stage.completed": StageCompletedData,
    "release.published": ReleasePublishedData,
    "crowd.participant_completed": CrowdParticipantEndedData,
    "crowd.participant_screened_out": CrowdParticipantEndedData,
    "model_run.finished": ModelRunFinishedData,
    "ping": PingData,
}
assert set(DATA) == {*PROJECT_EVENT_KINDS, "ping"}, "every project event kind has a schema"


def _event(kind: str, data: type[serializers.Serializer]) -> type[serializers.Serializer]:
    name = "WebhookEvent" + "".join(part.title() for part in kind.replace(".", "_").split("_"))
    description = PROJECT_EVENT_KINDS.get(kind, "A test event (the Send test event button).")
    return type(
        name,
        (serializers.Serializer,),
        {
            "__doc__": description,
            "id": serializers.UUIDField(help_text="Unique; drop an id you have already seen."),
            "type": serializers.ChoiceField(choices=[kind]),
            "occurred_at": serializers.DateTimeField(),
            "data": data(),
        },
    )


EVENTS = Polymorphic(
    component_name="WebhookEvent",
    serializers={kind: _event(kind, data) for kind, data in DATA.items()},
    resource_type_field_name="type",
    many=True,
)


class WebhookBody(serializers.Serializer):
    """One request: a batch of events, oldest first."""

    class WebhookHookRef(_Ref):
        name = serializers.CharField()

    class WebhookProjectRef(_Ref):
        slug = serializers.CharField()

    webhook = WebhookHookRef()
    project = WebhookProjectRef()
    attempt = serializers.IntegerField(help_text="1, or the n-th attempt at these events.")
    events = EVENTS


EVENTS_WEBHOOK = OpenApiWebhook(
    name="RungwiseEvents",
    decorator=extend_schema(
        summary="A batch of project events, sent to a project's webhook URL",
        description=(
            "POSTed as JSON with the headers `Rungwise-Webhook-Id`, `Rungwise-Webhook-Timestamp` "
            "and `Rungwise-Webhook-Signature` (`v1=` + hex HMAC-SHA256 of `<timestamp>.<body>` "
            "keyed with the hook's secret; webhooks/README.md). Answer 2xx to acknowledge; "
            "anything else, or no answer in time, is retried with exponential back-off. An "
            "event may arrive more than once: drop ids you have seen."
        ),
        request=WebhookBody,
        responses={200: OpenApiResponse(description="Received.")},
    ),
)
