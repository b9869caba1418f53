from django.urls import include, path, re_path

from api import views as api
from api.views import annotate_lean

app_name = "api"

project = "projects/<slug:slug>/"

urlpatterns = [
    # The annotator loop first: URLs are tried in order, and these are most of the API's traffic.
    # Their lean request path: api/views/annotate_lean.py (the same contract as the DRF views).
    path("stages/<int:stage_id>/next/", annotate_lean.NextItemView.as_view(), name="next"),
    path(
        "assignments/<int:assignment_id>/submit/", annotate_lean.SubmitView.as_view(), name="submit"
    ),
    path("assignments/<int:assignment_id>/skip/", api.SkipView.as_view(), name="skip"),
    path("annotations/<int:annotation_id>/revise/", api.ReviseView.as_view(), name="revise"),
    path("auth/token/", api.TokenView.as_view(), name="token"),
    path("projects/", api.ProjectListView.as_view(), name="projects"),
    path(project, api.ProjectDetailView.as_view(), name="project"),
    path(project + "stages/", api.StageListView.as_view(), name="stages"),
    path(project + "items/", api.ItemListView.as_view(), name="items"),
    path(project + "items/<int:item_id>/", api.ItemDetailView.as_view(), name="item"),
    path(project + "agreement/", api.AgreementView.as_view(), name="agreement"),
    path(project + "imports/", api.ImportListView.as_view(), name="imports"),
    path(project + "imports/<int:batch_id>/", api.ImportDetailView.as_view(), name="import"),
    path(project + "releases/", api.ReleaseListView.as_view(), name="releases"),
    path(project + "releases/<int:version>/", api.ReleaseDetailView.as_view(), name="release"),
    path(
        project + "releases/<int:version>/download/",
        api.ReleaseDownloadView.as_view(),
        name="release-download",
    ),
    path(project + "evaluations/", include("api.views.llm")),
    # Anything else under /api/ (a malformed id, a typo, a path with a line break: [\s\S], not
    # ".", which stops at one) answers in the API's error format.
    re_path(r"^[\s\S]*$", api.UnknownEndpointView.as_view(), name="unknown"),
]
