"""REST API of the engine over the same services the pages use. Thin views: parse, call one
access function and one service or selector, serialise (CONTRIBUTING.md, "Thin views").

/api/auth/token/ (token for scripts; throttled "auth"), /api/projects/… (projects, stages, items,
imports, agreement, releases), /api/stages/<id>/next/, /api/assignments/<id>/submit/ (throttled
"submit") and /skip/. Errors everywhere: {"message", "extra"} (api_errors.py); OpenAPI at
/api/schema/, docs at /api/docs/."""

from __future__ import annotations

import logging

from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import generics, parsers, serializers, status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle
from rest_framework.views import APIView

from agreement.models import AgreementSnapshot
from agreement.selectors import latest_agreement
from annotation import selectors as engine_selectors
from annotation import services
from annotation.access import (
    ANY_ROLE,
    MANAGE,
    MONITOR,
    access_project,
    access_stage_for_annotator,
)
from annotation.errors import ApplicationError, NotFound
from annotation.models import Annotation, Assignment, Item, Project, Stage
from annotation.selectors import item_payload_for_annotator, projects_for_user
from api.auth import token_for
from imports import selectors as import_selectors
from imports import services as import_services
from imports.core.pipeline import DUPLICATE_POLICIES
from imports.core.readers import FORMATS
from imports.models import ImportBatch
from releases import selectors as release_selectors
from releases import services as release_services
from releases.access import access_release
from releases.downloads import release_download_response
from releases.models import Release

logger = logging.getLogger(__name__)


class ScopedThrottle(ScopedRateThrottle):
    """ScopedRateThrottle reading its rates when asked (so settings overrides apply), where a
    rate of "off" (or empty) switches the scope off."""

    def get_rate(self):
        rate = api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)
        if not rate or str(rate).lower() in {"off", "none", "0"}:
            return None
        return rate

    def allow_request(self, request, view):
        self.scope = getattr(view, self.scope_attr, None)
        if not self.scope:
            return True
        self.rate = self.get_rate()
        if self.rate is None:
            return True
        self.num_requests, self.duration = self.parse_rate(self.rate)
        try:
            return super(ScopedRateThrottle, self).allow_request(request, view)
        except Exception as error:  # the cache (Redis) is down or its connection broke
            # Fail open: a throttle protects the service, and an outage of its counters must
            # not stop annotation or sign-in (tests/api/test_throttles.py).
            logger.warning("throttle %r: cache unavailable (%s); let through", self.scope, error)
            return True


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


class NextItemView(APIView):
    """Lease the next item of a stage (or get the one you hold)."""

    @extend_schema(
        request=None,
        responses={200: AssignmentSerializer, 204: None},
        summary="Lease the next item of a stage",
        tags=["annotate"],
    )
    def post(self, request, stage_id: int):
        stage = access_stage_for_annotator(user=request.user, stage_id=stage_id)
        assignment = services.assignment_next(annotator=request.user, stage=stage)
        if assignment is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(assignment_out(assignment))


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
        annotation, created = services.annotation_submit(
            assignment_id=assignment_id,
            annotator=request.user,
            payload=body.validated_data["payload"],
            seconds_spent=body.validated_data.get("seconds_spent"),
            client_info=body.validated_data.get("client_info") or {},
        )
        answer = annotation_out(annotation)
        if body.validated_data["next"]:
            stage = access_stage_for_annotator(
                user=request.user, stage_id=annotation.assignment.stage_id
            )
            following = services.assignment_next(annotator=request.user, stage=stage)
            answer["next"] = assignment_out(following) if following is not None else None
        return Response(answer, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


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


# =============================================================================================
# Projects, stages, items, imports, agreement, releases
# =============================================================================================
# Every view fetches its project with access_project (404 for non-members, 403 for a role that
# may not do this), then calls one service or selector.


class TokenView(ObtainAuthToken):
    """Exchange a username and password for an API token (throttled)."""

    throttle_classes = [ScopedThrottle]
    throttle_scope = "auth"
    # ObtainAuthToken names DRF's own parsers; this endpoint reads bodies like every other.
    parser_classes = api_settings.DEFAULT_PARSER_CLASSES

    @extend_schema(tags=["auth"], summary="Get an API token", auth=[])
    def post(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        token = token_for(serializer.validated_data["user"])
        return Response({"token": token.key})


# --- Serializers ---------------------------------------------------------------------------


class ProjectSerializer(serializers.ModelSerializer):
    roles = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["slug", "name", "kind", "description", "license", "is_active", "roles"]

    def get_roles(self, project) -> list[str]:
        return sorted(getattr(project, "user_roles", []) or [])


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


# --- Views ---------------------------------------------------------------------------------

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
        project = access_project(request.user, slug, ANY_ROLE)
        return Response(ProjectSerializer(project).data)


@extend_schema(tags=["projects"], summary="The stages of a project", parameters=[SLUG])
class StageListView(generics.ListAPIView):
    serializer_class = StageSerializer

    def get_queryset(self):
        project = access_project(self.request.user, self.kwargs["slug"], ANY_ROLE)
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

    def get_queryset(self):
        project = access_project(self.request.user, self.kwargs["slug"], MANAGE)
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
        project = access_project(request.user, slug, MANAGE)
        item = Item.objects.filter(project=project, pk=item_id).first()
        if item is None:
            raise NotFound(f"{project.name} has no item {item_id}.")
        return Response(ItemDetailSerializer(item).data)


@extend_schema(tags=["projects"], summary="Latest agreement figures per stage and metric",
               parameters=[SLUG])  # fmt: skip
class AgreementView(generics.ListAPIView):
    serializer_class = AgreementSerializer
    pagination_class = None

    def get_queryset(self):
        project = access_project(self.request.user, self.kwargs["slug"], MONITOR)
        return latest_agreement(project)


class ImportListView(generics.ListAPIView):
    """Imports of a project (admins), newest first; POST a file to import it."""

    serializer_class = ImportBatchSerializer
    parser_classes = [parsers.MultiPartParser, parsers.FormParser]

    def get_queryset(self):
        project = access_project(self.request.user, self.kwargs["slug"], MANAGE)
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
        project = access_project(request.user, slug, MANAGE)
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
        project = access_project(request.user, slug, MANAGE)
        batch = import_selectors.import_batch(project, batch_id)
        if batch is None:
            raise NotFound(f"{project.name} has no import {batch_id}.")
        return Response(ImportBatchSerializer(batch).data)


class ReleaseListView(generics.ListAPIView):
    """Releases of a project (researchers, admins); POST publishes the next version (admins)."""

    serializer_class = ReleaseSerializer

    def get_queryset(self):
        project = access_project(self.request.user, self.kwargs["slug"], MONITOR)
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
        project = access_project(request.user, slug, MANAGE)
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
        project = access_project(request.user, slug, MONITOR)
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
        project = access_project(request.user, slug, MONITOR)
        release = access_release(request.user, project, version)
        return release_download_response(release)


@extend_schema(exclude=True)
class UnknownEndpointView(APIView):
    """Every URL under /api/ that matches no endpoint: a 404 in the API's error format."""

    permission_classes: list = []
    authentication_classes: list = []

    def dispatch(self, request, *args, **kwargs):
        self.args, self.kwargs = args, kwargs
        self.request = self.initialize_request(request, *args, **kwargs)
        self.headers = self.default_response_headers
        response = self.handle_exception(
            NotFound(f"There is no API endpoint at {request.path}; see /api/docs/.")
        )
        self.response = self.finalize_response(self.request, response, *args, **kwargs)
        return self.response
