"""Evaluations of a project's published releases by model endpoints (llm/evaluation): list
and start (admins), one evaluation with its figures beside the human baseline, pause / resume
/ cancel (admins). Registered under /api/projects/<slug>/evaluations/ by api/urls.py."""

from __future__ import annotations

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import MANAGE, MONITOR, access_project
from annotation.errors import NotFound
from api.views.projects import SLUG
from llm.access import access_evaluation
from llm.evaluation import selectors, services
from llm.models import Evaluation
from releases.access import access_release


class StartSerializer(serializers.Serializer):
    release = serializers.IntegerField(min_value=1, help_text="The release's version.")
    endpoint = serializers.CharField(max_length=64, help_text="The endpoint's name.")
    mode = serializers.ChoiceField(choices=Evaluation.Mode.choices, default=Evaluation.Mode.CHAT)


EVALUATION_FIELDS = {
    "id": serializers.IntegerField(),
    "release": serializers.IntegerField(),
    "release_sha256": serializers.CharField(),
    "workflow": serializers.CharField(),
    "endpoint": serializers.CharField(),
    "model": serializers.CharField(),
    "mode": serializers.CharField(),
    "status": serializers.CharField(),
    "total": serializers.IntegerField(),
    "done": serializers.IntegerField(),
    "failed": serializers.IntegerField(),
    "questions": serializers.IntegerField(),
    "answered": serializers.IntegerField(),
    "table": serializers.ListField(child=serializers.DictField(), required=False),
}
EVALUATION = inline_serializer("Evaluation", EVALUATION_FIELDS)
EVALUATIONS = inline_serializer("Evaluation", EVALUATION_FIELDS, many=True)


class EvaluationListView(APIView):
    @extend_schema(
        tags=["evaluations"],
        summary="Evaluations of the project's releases",
        parameters=[SLUG],
        responses={200: EVALUATIONS},
    )
    def get(self, request, slug: str):
        project = access_project(request.user, slug, MONITOR).project
        return Response(
            [selectors.evaluation_summary(e) for e in selectors.evaluations(project)[:200]]
        )

    @extend_schema(
        tags=["evaluations"],
        summary="Evaluate a published release with an endpoint (admins)",
        parameters=[SLUG],
        request=StartSerializer,
        responses={202: EVALUATION},
    )
    def post(self, request, slug: str):
        project = access_project(request.user, slug, MANAGE).project
        body = StartSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        release = access_release(request.user, project, body.validated_data["release"])
        endpoint = selectors.endpoints().filter(name=body.validated_data["endpoint"]).first()
        if endpoint is None:
            raise NotFound(f"There is no endpoint {body.validated_data['endpoint']!r}.")
        evaluation = services.evaluation_start(
            release=release, endpoint=endpoint, user=request.user, mode=body.validated_data["mode"]
        )
        evaluation.refresh_from_db()
        evaluation.run.refresh_from_db()
        return Response(selectors.evaluation_summary(evaluation), status=status.HTTP_202_ACCEPTED)


class EvaluationDetailView(APIView):
    @extend_schema(
        tags=["evaluations"],
        summary="One evaluation with its figures beside the human baseline",
        parameters=[SLUG],
        responses={200: EVALUATION},
    )
    def get(self, request, slug: str, evaluation_id: int):
        project = access_project(request.user, slug, MONITOR).project
        evaluation = access_evaluation(request.user, project, evaluation_id)
        return Response(selectors.evaluation_summary(evaluation, table=True))


ACTIONS = ("pause", "resume", "cancel")


class EvaluationControlView(APIView):
    @extend_schema(
        tags=["evaluations"],
        operation_id="projects_evaluations_control",
        summary="Pause, resume or cancel an evaluation (admins)",
        parameters=[
            SLUG,
            OpenApiParameter("evaluation_id", OpenApiTypes.INT, OpenApiParameter.PATH),
            OpenApiParameter("action", OpenApiTypes.STR, OpenApiParameter.PATH, enum=ACTIONS),
        ],
        request=None,
        responses={200: EVALUATION},
    )
    def post(self, request, slug: str, evaluation_id: int, action: str):
        if action not in ACTIONS:
            raise NotFound(f"There is no action {action!r}: {', '.join(ACTIONS)}.")
        project = access_project(request.user, slug, MANAGE).project
        evaluation = access_evaluation(request.user, project, evaluation_id)
        evaluation = services.evaluation_control(evaluation=evaluation, action=action)
        return Response(selectors.evaluation_summary(evaluation))


#: Included under /api/projects/<slug>/evaluations/ by api/urls.py (names in its namespace).
urlpatterns = [
    path("", EvaluationListView.as_view(), name="evaluations"),
    path("<int:evaluation_id>/", EvaluationDetailView.as_view(), name="evaluation"),
    path(
        "<int:evaluation_id>/<slug:action>/",
        EvaluationControlView.as_view(),
        name="evaluation-control",
    ),
]
