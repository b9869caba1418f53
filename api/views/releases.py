"""Releases of a project: list, publish the next version (admins), one release with its diff,
download."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.response import Response
from rest_framework.views import APIView

from annotation.access import MANAGE, MONITOR, access_project
from api.serializers import PublishSerializer, ReleaseSerializer
from api.views.projects import SLUG
from releases import selectors as release_selectors
from releases import services as release_services
from releases.access import access_release
from releases.downloads import release_download_response


class ReleaseListView(generics.ListAPIView):
    """Releases of a project (researchers, admins); POST publishes the next version (admins)."""

    serializer_class = ReleaseSerializer

    def get_queryset(self):
        project = access_project(self.request.user, self.kwargs["slug"], MONITOR).project
        return release_selectors.releases(project)

    @extend_schema(tags=["releases"], summary="Releases of a project", parameters=[SLUG])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["releases"],
        summary="Publish the next version (admins)",
        parameters=[SLUG],
        request=PublishSerializer,
        responses={202: OpenApiResponse(ReleaseSerializer, "Building: poll until published.")},
    )
    def post(self, request, slug: str):
        project = access_project(request.user, slug, MANAGE).project
        body = PublishSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        release = release_services.release_publish(
            project=project,
            user=request.user,
            notes=body.validated_data.get("notes", ""),
            version=body.validated_data.get("version"),
        )
        release.refresh_from_db()
        return Response(ReleaseSerializer(release).data, status=status.HTTP_202_ACCEPTED)


@extend_schema(
    tags=["releases"],
    summary="One release: manifest, stats, diff",
    description="With ?against=N, `compared_with` holds the diff against the earlier published "
    "version N (the shape of `stats.diff`).",
    parameters=[
        SLUG,
        OpenApiParameter("against", OpenApiTypes.INT, required=False),
    ],
)
class ReleaseDetailView(generics.GenericAPIView):
    serializer_class = ReleaseSerializer

    def get(self, request, slug: str, version: int):
        project = access_project(request.user, slug, MONITOR).project
        release = access_release(request.user, project, version)
        data = ReleaseSerializer(release).data
        if request.query_params.get("against"):
            data["compared_with"] = release_services.release_compare(
                release=release, against=request.query_params["against"]
            )
        return Response(data)


class ReleaseDownloadView(APIView):
    @extend_schema(
        tags=["releases"],
        summary="Download a published release (zip)",
        parameters=[SLUG],
        responses={(200, "application/zip"): OpenApiResponse(OpenApiTypes.BINARY, "The zip.")},
    )
    def get(self, request, slug: str, version: int):
        project = access_project(request.user, slug, MONITOR).project
        release = access_release(request.user, project, version)
        return release_download_response(release)
