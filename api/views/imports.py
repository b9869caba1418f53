"""Imports of a project (admins): list, upload a file, follow one import."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, parsers, status
from rest_framework.response import Response

from annotation.access import MANAGE, access_project
from api.access import access_import_batch
from api.serializers import ImportBatchSerializer, ImportUploadSerializer
from api.views.projects import SLUG
from imports import selectors as import_selectors
from imports import services as import_services
from imports.models import ImportBatch


class ImportListView(generics.ListAPIView):
    """Imports of a project (admins), newest first; POST a file to import it."""

    serializer_class = ImportBatchSerializer
    parser_classes = [parsers.MultiPartParser, parsers.FormParser]

    def get_queryset(self):
        project = access_project(self.request.user, self.kwargs["slug"], MANAGE).project
        return import_selectors.import_batches(project)

    @extend_schema(tags=["imports"], summary="Imports of a project (admins)", parameters=[SLUG])
    def get(self, request, *args, **kwargs):
        return super().get(request, *args, **kwargs)

    @extend_schema(
        tags=["imports"],
        summary="Import a file of items (admins)",
        parameters=[SLUG],
        request={"multipart/form-data": ImportUploadSerializer},
        responses={
            201: OpenApiResponse(ImportBatchSerializer, "Run at once: see `status` "
                                 "(succeeded, or failed with `errors`)."),
            202: OpenApiResponse(ImportBatchSerializer, "Queued (a large file): poll the "
                                 "import until `status` is succeeded or failed."),
        },
    )  # fmt: skip
    def post(self, request, slug: str):
        project = access_project(request.user, slug, MANAGE).project
        body = ImportUploadSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        upload = data["file"]
        batch = import_services.import_batch_create(
            project=project,
            user=request.user,
            fileobj=upload,
            filename=upload.name,
            fmt=data.get("format"),
            options={key: data.get(key) for key in
                     ("duplicate_policy", "layout", "group_field", "purpose_field")},
        )  # fmt: skip
        batch = import_services.import_batch_start(batch=batch)
        queued = batch.status == ImportBatch.Status.PENDING
        return Response(
            ImportBatchSerializer(batch).data,
            status=status.HTTP_202_ACCEPTED if queued else status.HTTP_201_CREATED,
        )


@extend_schema(tags=["imports"], summary="One import: status, progress, errors (admins)",
               parameters=[SLUG])  # fmt: skip
class ImportDetailView(generics.GenericAPIView):
    serializer_class = ImportBatchSerializer

    def get(self, request, slug: str, batch_id: int):
        project = access_project(request.user, slug, MANAGE).project
        batch = access_import_batch(project, batch_id)
        return Response(ImportBatchSerializer(batch).data)
