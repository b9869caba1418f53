"""REST API of the engine: the annotator loop (next, submit, skip) over the same services the
pages use. Thin views: parse, call one service, serialise (CONVENTIONS 1)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from . import services
from .access import access_stage_for_annotator
from .models import Annotation, Assignment
from .selectors import item_payload_for_annotator


class ItemOutSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="item_stage.item.pk")
    external_id = serializers.CharField(source="item_stage.item.external_id")
    payload = serializers.SerializerMethodField()

    def get_payload(self, assignment) -> dict:
        # Known answers (gold, expected, …) are never sent to annotators.
        return item_payload_for_annotator(assignment.item_stage.item, assignment.stage.project)


class AssignmentSerializer(serializers.ModelSerializer):
    item = ItemOutSerializer(source="*")
    stage = serializers.IntegerField(source="stage_id")

    class Meta:
        model = Assignment
        fields = ["id", "stage", "status", "expires_at", "item"]


class SubmitInSerializer(serializers.Serializer):
    payload = serializers.JSONField()
    seconds_spent = serializers.FloatField(required=False, allow_null=True, min_value=0)
    client_info = serializers.JSONField(required=False)

    def validate_payload(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be a JSON object")
        return value


class AnnotationSerializer(serializers.ModelSerializer):
    class Meta:
        model = Annotation
        fields = ["id", "assignment", "payload", "seconds_spent", "created_at"]


class SkipInSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=300)


class NextItemView(APIView):
    """Lease the next item of a stage (or get the one you hold)."""

    @extend_schema(
        request=None,
        responses={200: AssignmentSerializer, 204: None},
        summary="Lease the next item of a stage",
    )
    def post(self, request, stage_id: int):
        stage = access_stage_for_annotator(user=request.user, stage_id=stage_id)
        assignment = services.assignment_next(annotator=request.user, stage=stage)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(AssignmentSerializer(assignment).data)


class SubmitView(APIView):
    """Submit the annotation of a leased item. Retrying returns the stored annotation (200)."""

    @extend_schema(
        request=SubmitInSerializer,
        responses={201: AnnotationSerializer, 200: AnnotationSerializer},
        summary="Submit an annotation",
    )
    def post(self, request, assignment_id: int):
        body = SubmitInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        annotation, created = services.annotation_submit(
            assignment_id=assignment_id,
            annotator=request.user,
            payload=body.validated_data["payload"],
            seconds_spent=body.validated_data.get("seconds_spent"),
            client_info=body.validated_data.get("client_info") or {},
        )
        return Response(
            AnnotationSerializer(annotation).data,
            status=status.HTTP_201_CREATED if created else status.HTTP_200_OK,
        )


class SkipView(APIView):
    @extend_schema(
        request=SkipInSerializer,
        responses={
            200: inline_serializer(
                "Skipped", {"id": serializers.IntegerField(), "status": serializers.CharField()}
            )
        },
        summary="Skip a leased item (with a reason)",
    )
    def post(self, request, assignment_id: int):
        body = SkipInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        assignment = services.assignment_skip(
            assignment_id=assignment_id,
            annotator=request.user,
            reason=body.validated_data["reason"],
        )
        return Response({"id": assignment.pk, "status": assignment.status})
