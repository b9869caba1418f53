"""The annotator loop over the API: lease the next item, submit (and lease the next), change an
answer, skip. The same services as the item screen (``annotation.services``); the hot path of the
API (its outputs are built by ``api.serializers.assignment_out`` and ``annotation_out``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation import services
from annotation.access import StageForAnnotator, access_stage_for_annotator
from annotation.models import Assignment
from api.serializers import (
    AnnotationSerializer,
    AssignmentSerializer,
    SkipInSerializer,
    SubmitInSerializer,
    SubmitNextInSerializer,
    SubmittedSerializer,
    annotation_out,
    assignment_out,
)
from api.throttles import ScopedThrottle


class NextItemView(APIView):
    """Lease the next item of a stage (or get the one you hold)."""

    @extend_schema(
        request=None,
        responses={200: AssignmentSerializer, 204: None},
        summary="Lease the next item of a stage",
        tags=["annotate"],
    )
    def post(self, request, stage_id: int):
        answer = next_item(request.user, stage_id)
        if answer is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(answer)


class SubmitView(APIView):
    """Submit the annotation of a leased item. Retrying returns the stored annotation (200).
    With ``"next": true`` the answer also carries the next lease of the same stage (what
    ``POST /api/stages/<id>/next/`` would return), saving the client a request per item; a
    retried submit then returns the lease it already got."""

    # Throttled per user through the cache: no SQL is added to the hot path.
    throttle_classes = [ScopedThrottle]
    throttle_scope = "submit"

    @extend_schema(
        request=SubmitNextInSerializer,
        responses={201: SubmittedSerializer, 200: SubmittedSerializer},
        summary="Submit an annotation (and lease the next item)",
        tags=["annotate"],
    )
    def post(self, request, assignment_id: int):
        body = SubmitNextInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        answer, created = submitted(request.user, assignment_id, body.validated_data)
        return Response(answer, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


def next_item(user, stage_id: int, reached: StageForAnnotator | None = None) -> dict | None:
    """What ``POST /api/stages/<id>/next/`` answers for `user`: the lease (200) or None (204).
    Shared by NextItemView and its lean path (api/views/annotate_lean.py), which passes the
    stage as it already reached it (`reached`, access_stage_for_annotator's answer)."""
    stage = reached or access_stage_for_annotator(user=user, stage_id=stage_id)
    assignment = services.assignment_next(annotator=user, stage=stage)
    return None if assignment is None else assignment_out(assignment)


def submitted(
    user, assignment_id: int, body: Mapping[str, Any], read: Any = None
) -> tuple[dict, bool]:
    """Store `user`'s answer to the assignment from a validated submit body (SubmitNextInSerializer's
    validated_data: ``payload``, ``seconds_spent``, ``client_info``, ``next``); returns the answer
    and whether it was created (201) or a retry (200). Shared by SubmitView and its lean path
    (api/views/annotate_lean.py), which passes the assignment as it already read it (`read`:
    annotation_submit's)."""
    annotation, created = services.annotation_submit(
        assignment_id=assignment_id,
        annotator=user,
        payload=body["payload"],
        seconds_spent=body.get("seconds_spent"),
        client_info=body.get("client_info") or {},
        read=read,
    )
    answer = annotation_out(annotation)
    if body["next"]:
        # A submit always stores the assignment it answers (only imported history has none).
        assignment = cast(Assignment, annotation.assignment)
        stage = access_stage_for_annotator(user=user, stage_id=assignment.stage_id)
        following = services.assignment_next(annotator=user, stage=stage)
        answer["next"] = assignment_out(following) if following is not None else None
    return answer, created


class ReviseView(APIView):
    """Change one's own answer while its item is undecided: a new version superseding the
    annotation named in the URL (services.annotation_revise). 201 with the new version; 200
    when this change was already stored (a retry) or the answer is unchanged; 409 once the
    item is decided, or when the named version was already replaced by another answer."""

    throttle_classes = [ScopedThrottle]
    throttle_scope = "submit"

    @extend_schema(
        request=SubmitInSerializer,
        responses={201: AnnotationSerializer, 200: AnnotationSerializer},
        summary="Change an annotation (a new version)",
        tags=["annotate"],
    )
    def post(self, request, annotation_id: int):
        body = SubmitInSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        annotation, created = services.annotation_revise(
            annotation_id=annotation_id,
            annotator=request.user,
            payload=body.validated_data["payload"],
            seconds_spent=body.validated_data.get("seconds_spent"),
            client_info=body.validated_data.get("client_info") or {},
        )
        return Response(
            annotation_out(annotation),
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
        tags=["annotate"],
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
