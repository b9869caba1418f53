"""The graphs plug-in's REST endpoint (the API's conventions: token or session auth, the one
error format of api/errors.py, documented by drf-spectacular; CONTRIBUTING.md, "Thin views"):

``POST /api/projects/<slug>/graphs/dsep/`` — d-separation questions generated from a DAG, as
the Graphs tab's form does (graphs.services.dsep_generate): admins of a CARL-GT project send an
edge list as a file (multipart ``file``: CSV ``cause,effect`` or JSON) or in a JSON body
(``edges``: ``[["A", "B"], …]``, optional ``nodes``), with ``graph_name``, ``max_given``,
``limit`` and ``seed``. 201 with the number of questions added and their external ids; 400 with
every problem of the edge list (a cycle, a self-loop, a malformed row by line or position),
nothing added. Mounted in rungwise/urls.py, before the API's own routes.
"""

from __future__ import annotations

import json

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import parsers, serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import MANAGE, access_project
from api.parsers import JSONParser
from graphs import services

SLUG = OpenApiParameter("slug", OpenApiTypes.STR, OpenApiParameter.PATH, description="Project slug")


class _GenerationOptions(serializers.Serializer):
    graph_name = serializers.RegexField(
        r"^[A-Za-z0-9_-]{1,100}$", help_text="Letters, digits, - or _; names the questions."
    )
    max_given = serializers.IntegerField(
        min_value=0, max_value=services.MAX_GIVEN, default=1, help_text="Largest conditioning set."
    )
    limit = serializers.IntegerField(
        min_value=1, max_value=services.MAX_QUESTIONS, default=20, help_text="Questions to add."
    )
    seed = serializers.IntegerField(min_value=0, max_value=2**31, default=0)


class DsepFileSerializer(_GenerationOptions):
    """multipart/form-data: the edge list as a file."""

    file = serializers.FileField(
        help_text=f"The edge list: CSV with the header cause,effect, or JSON; at most "
        f"{services.MAX_EDGE_LIST_BYTES >> 20} MiB."
    )

    def validate_file(self, upload):
        if upload.size > services.MAX_EDGE_LIST_BYTES:
            raise serializers.ValidationError(
                f"An edge list is at most {services.MAX_EDGE_LIST_BYTES >> 20} MiB."
            )
        return upload


class DsepEdgesSerializer(_GenerationOptions):
    """application/json: the edge list in the body."""

    edges = serializers.ListField(
        child=serializers.ListField(child=serializers.CharField(max_length=200)),
        max_length=20_000,
        help_text='[["cause", "effect"], …]; each pair is checked when the graph is built.',
    )
    nodes = serializers.ListField(
        child=serializers.CharField(max_length=200),
        required=False,
        max_length=20_000,
        help_text="Variables with no edge (optional).",
    )


class DsepGenerateView(APIView):
    parser_classes = [JSONParser, parsers.MultiPartParser]

    @extend_schema(
        tags=["graphs"],
        summary="Generate d-separation questions from a DAG (admins of a CARL-GT project)",
        parameters=[SLUG],
        request={
            "multipart/form-data": DsepFileSerializer,
            "application/json": DsepEdgesSerializer,
        },
        responses={
            201: inline_serializer(
                "DsepGenerated",
                {
                    "created": serializers.IntegerField(),
                    "graph_name": serializers.CharField(),
                    "external_ids": serializers.ListField(child=serializers.CharField()),
                },
            )
        },
    )
    def post(self, request, slug: str):
        project = access_project(request.user, slug, MANAGE).project
        multipart = request.content_type.startswith("multipart/")
        body = (DsepFileSerializer if multipart else DsepEdgesSerializer)(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        if multipart:
            content, filename = data["file"].read(), data["file"].name
        else:
            document = {"nodes": data.get("nodes", []), "edges": data["edges"]}
            content, filename = json.dumps(document), "edges.json"
        created = services.dsep_generate(
            project=project,
            data=content,
            filename=filename,
            graph_name=data["graph_name"],
            max_given=data["max_given"],
            limit=data["limit"],
            seed=data["seed"],
        )
        external_ids = [services.generated_id(data["graph_name"], n) for n in range(1, created + 1)]
        return Response(
            {"created": created, "graph_name": data["graph_name"], "external_ids": external_ids},
            status=status.HTTP_201_CREATED,
        )
