"""Projects, their stages and items, and their latest agreement figures. Every view fetches its
project with ``access_project`` (404 for non-members, 403 for a role that may not do this),
then calls one selector."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import generics
from rest_framework.response import Response

from agreement.selectors import latest_agreement
from annotation import selectors as engine_selectors
from annotation.access import ANY_ROLE, MANAGE, MONITOR, access_project
from annotation.errors import ApplicationError
from annotation.models import Item
from annotation.selectors import projects_for_user
from api.access import access_item
from api.pagination import CountOrCursorPagination
from api.serializers import (
    AgreementSerializer,
    ItemDetailSerializer,
    ItemSerializer,
    ProjectSerializer,
    StageSerializer,
)

#: The project slug in every /api/projects/<slug>/… path (the schema's parameter).
SLUG = OpenApiParameter("slug", OpenApiTypes.STR, OpenApiParameter.PATH, description="Project slug")


@extend_schema(tags=["projects"], summary="Your projects")
class ProjectListView(generics.ListAPIView):
    serializer_class = ProjectSerializer

    def get_queryset(self):
        return projects_for_user(self.request.user)


@extend_schema(tags=["projects"], summary="One of your projects", parameters=[SLUG])
class ProjectDetailView(generics.GenericAPIView):
    serializer_class = ProjectSerializer

    def get(self, request, slug: str):
        access = access_project(request.user, slug, ANY_ROLE)
        return Response(ProjectSerializer(access).data)


@extend_schema(tags=["projects"], summary="The stages of a project", parameters=[SLUG])
class StageListView(generics.ListAPIView):
    serializer_class = StageSerializer

    def get_queryset(self):
        project = access_project(self.request.user, self.kwargs["slug"], ANY_ROLE).project
        return engine_selectors.project_stages_with_counts(project)


@extend_schema(
    tags=["projects"],
    summary="Items of a project (admins)",
    parameters=[
        SLUG,
        OpenApiParameter("status", OpenApiTypes.STR, enum=Item.Status.values, required=False),
    ],
)
class ItemListView(generics.ListAPIView):
    serializer_class = ItemSerializer
    # Numbered pages count every item; ?cursor= walks them by id without a count.
    pagination_class = CountOrCursorPagination

    def get_queryset(self):
        project = access_project(self.request.user, self.kwargs["slug"], MANAGE).project
        status_filter = self.request.query_params.get("status") or None
        if status_filter is not None and status_filter not in Item.Status.values:
            raise ApplicationError(
                f"Unknown item status {status_filter!r}.", {"status": Item.Status.values}
            )
        return engine_selectors.project_items(project, status=status_filter)


@extend_schema(tags=["projects"], summary="One item with its state in every stage (admins)",
               parameters=[SLUG])  # fmt: skip
class ItemDetailView(generics.GenericAPIView):
    serializer_class = ItemDetailSerializer

    def get(self, request, slug: str, item_id: int):
        project = access_project(request.user, slug, MANAGE).project
        item = access_item(project, item_id)
        return Response(ItemDetailSerializer(item).data)


@extend_schema(tags=["projects"], summary="Latest agreement figures per stage and metric",
               parameters=[SLUG])  # fmt: skip
class AgreementView(generics.ListAPIView):
    serializer_class = AgreementSerializer
    pagination_class = None

    def get_queryset(self):
        project = access_project(self.request.user, self.kwargs["slug"], MONITOR).project
        return latest_agreement(project)
