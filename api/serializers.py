"""Serializers of the REST API: what each endpoint reads and returns (its OpenAPI schema), and
the hand-built outputs of the annotator loop (``assignment_out``, ``annotation_out``).

``assignment_out`` and ``annotation_out`` spell ``AssignmentSerializer``'s and
``AnnotationSerializer``'s output directly (the hot path; tests/annotation/test_sql.py checks
that both agree).
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agreement.models import AgreementSnapshot
from annotation import selectors as engine_selectors
from annotation.access import ProjectAccess
from annotation.models import Annotation, Assignment, Item, Project, Stage
from annotation.selectors import item_payload_for_annotator
from imports import services as import_services
from imports.core.pipeline import DUPLICATE_POLICIES
from imports.core.readers import FORMATS
from imports.models import ImportBatch
from releases.models import Release

# --- The annotator loop --------------------------------------------------------------------


class ItemOutSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="item_stage.item.pk")
    external_id = serializers.CharField(source="item_stage.item.external_id")
    payload = serializers.SerializerMethodField()

    def get_payload(self, assignment) -> dict:
        # Only the fields the stage's kind allows (an allow-list) are sent to annotators.
        return item_payload_for_annotator(assignment.item_stage.item, assignment.stage)


class AssignmentSerializer(serializers.ModelSerializer):
    item = ItemOutSerializer(source="*")
    stage = serializers.IntegerField(source="stage_id")

    class Meta:
        model = Assignment
        fields = ["id", "stage", "status", "expires_at", "item"]


_datetime = serializers.DateTimeField()


def assignment_out(assignment: Assignment) -> dict:
    """AssignmentSerializer's output, built directly: next item runs on every annotation and
    instantiating the serializer's fields cost more than the rest of the response (the
    serializer stays the schema; tests check both agree)."""
    item = assignment.item_stage.item
    return {
        "id": assignment.pk,
        "stage": assignment.stage_id,
        "status": assignment.status,
        "expires_at": _datetime.to_representation(assignment.expires_at),
        "item": {
            "id": item.pk,
            "external_id": item.external_id,
            "payload": item_payload_for_annotator(item, assignment.stage),
        },
    }


def annotation_out(annotation: Annotation) -> dict:
    """AnnotationSerializer's output, built directly (see assignment_out)."""
    return {
        "id": annotation.pk,
        "assignment": annotation.assignment_id,
        "payload": annotation.payload,
        "seconds_spent": annotation.seconds_spent,
        "created_at": _datetime.to_representation(annotation.created_at),
        "version": annotation.version,
        "supersedes": annotation.supersedes_id,
    }


class SubmitInSerializer(serializers.Serializer):
    payload = serializers.JSONField()
    seconds_spent = serializers.FloatField(required=False, allow_null=True, min_value=0)
    client_info = serializers.JSONField(required=False)

    def validate_payload(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be a JSON object")
        return value


class SubmitNextInSerializer(SubmitInSerializer):
    """A submit's body: the annotation, and whether to lease the next item in the same call
    (a revision takes SubmitInSerializer: it has no next item)."""

    next = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also lease the next item of the stage and return it as `next` (null when "
        "none is left): one request per item, as the item screen does.",
    )


class AnnotationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Annotation
        fields = [
            "id",
            "assignment",
            "payload",
            "seconds_spent",
            "created_at",
            "version",
            "supersedes",
        ]


class SubmittedSerializer(AnnotationSerializer):
    """A submit's answer: the annotation, and with ``"next": true`` the next lease."""

    next = AssignmentSerializer(
        read_only=True,
        allow_null=True,
        required=False,
        help_text="Only when the submit asked for it: the next item leased to you in this "
        "stage (the one you already hold, if any), or null when none is left for you.",
    )

    class Meta(AnnotationSerializer.Meta):
        fields = [*AnnotationSerializer.Meta.fields, "next"]


class SkipInSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=300)


# --- Projects, stages, items, imports, agreement, releases -------------------------


class ProjectSerializer(serializers.ModelSerializer):
    """A project with the caller's roles in it. Serialises an ``annotation.access.ProjectAccess``
    (what ``access_project`` and ``projects_for_user`` return), not a bare Project."""

    roles = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Project
        fields = ["slug", "name", "kind", "description", "license", "is_active", "roles"]

    def to_representation(self, instance: ProjectAccess) -> dict[str, Any]:
        # The model's fields come from the project; `roles` (read-only, so skipped there: a
        # Project has no roles) from the access, sorted.
        data = super().to_representation(instance.project)
        data["roles"] = sorted(instance.roles)
        return data


class StageSerializer(serializers.ModelSerializer):
    items_total = serializers.IntegerField(read_only=True)
    items_open = serializers.IntegerField(read_only=True)
    items_resolved = serializers.IntegerField(read_only=True)

    class Meta:
        model = Stage
        fields = [
            "id", "slug", "name", "kind", "position", "overlap", "resolution_policy",
            "is_active", "items_total", "items_open", "items_resolved",
        ]  # fmt: skip


class ItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = Item
        fields = ["id", "external_id", "status", "purpose", "group", "source", "version",
                  "payload", "created_at"]  # fmt: skip


class ItemStageResultSerializer(serializers.Serializer):
    stage = serializers.CharField()
    state = serializers.CharField()
    submitted_count = serializers.IntegerField()
    target_count = serializers.IntegerField()
    resolution = serializers.JSONField(allow_null=True)


class ItemDetailSerializer(ItemSerializer):
    stages = serializers.SerializerMethodField()

    class Meta(ItemSerializer.Meta):
        fields = [*ItemSerializer.Meta.fields, "stages"]

    @extend_schema_field(ItemStageResultSerializer(many=True))
    def get_stages(self, item):
        return engine_selectors.item_stage_results(item)


class RowErrorSerializer(serializers.Serializer):
    line = serializers.IntegerField(allow_null=True)
    index = serializers.IntegerField(allow_null=True)
    column = serializers.IntegerField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    code = serializers.CharField()
    expected = serializers.CharField(allow_null=True)
    found = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class ProgressSerializer(serializers.Serializer):
    phase = serializers.CharField()
    percent = serializers.FloatField(allow_null=True)
    rows_per_second = serializers.FloatField(allow_null=True)
    eta_seconds = serializers.FloatField(allow_null=True)
    rows = serializers.IntegerField()
    finished = serializers.BooleanField()
    elapsed_seconds = serializers.FloatField(allow_null=True)


class ImportBatchSerializer(serializers.ModelSerializer):
    errors = RowErrorSerializer(many=True, read_only=True)
    progress = serializers.SerializerMethodField()
    created_by = serializers.CharField(
        source="created_by.get_username", default=None, allow_null=True
    )

    class Meta:
        model = ImportBatch
        fields = [
            "id", "filename", "format", "sha256", "file_size", "options", "status",
            "rows_total", "rows_done", "rows_written", "items_created", "items_updated",
            "error_count", "errors", "message", "progress", "created_by", "created_at",
            "started_at", "finished_at",
        ]  # fmt: skip

    @extend_schema_field(ProgressSerializer)
    def get_progress(self, batch):
        progress = import_services.import_batch_progress(batch)
        return ProgressSerializer(progress).data


class ImportUploadSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="CSV, JSON Lines or JSON (array), UTF-8.")
    format = serializers.ChoiceField(
        choices=FORMATS, required=False, help_text="Default: from the file name."
    )
    duplicate_policy = serializers.ChoiceField(
        choices=DUPLICATE_POLICIES,
        default="reject",
        help_text="Ids already in the project: reject the file, or update those items.",
    )
    layout = serializers.ChoiceField(
        choices=import_services.LAYOUTS,
        default="rows",
        help_text='"release" re-imports the items.jsonl of a Rungwise release.',
    )
    group_field = serializers.CharField(required=False, max_length=200)
    purpose_field = serializers.CharField(required=False, max_length=200)


class AgreementSerializer(serializers.ModelSerializer):
    stage = serializers.CharField(source="stage.slug")
    stage_id = serializers.IntegerField()

    class Meta:
        model = AgreementSnapshot
        fields = ["stage", "stage_id", "metric", "value", "ci_low", "ci_high", "n_items",
                  "n_annotators", "n_annotations", "details", "computed_at"]  # fmt: skip


class ReleaseSerializer(serializers.ModelSerializer):
    download_url = serializers.SerializerMethodField()
    queued = serializers.BooleanField(
        read_only=True,
        help_text="Building, but no worker has started it yet (its message may have been lost; "
        "the sweep sends it again).",
    )
    created_by = serializers.CharField(
        source="created_by.get_username", default=None, allow_null=True
    )

    class Meta:
        model = Release
        fields = ["version", "status", "queued", "notes", "created_by", "created_at",
                  "published_at", "sha256", "manifest", "stats", "message",
                  "download_url"]  # fmt: skip

    def get_download_url(self, release) -> str | None:
        if release.status != Release.Status.PUBLISHED:
            return None
        return reverse("api:release-download", args=[release.project.slug, release.version])


class PublishSerializer(serializers.Serializer):
    notes = serializers.CharField(required=False, allow_blank=True, max_length=5000)
    version = serializers.IntegerField(
        required=False, min_value=1, max_value=100_000, help_text="Must be the next version."
    )
