"""REST API of the engine over the same services the pages use, one module per resource. Thin
views: parse, call one access function and one service or selector, serialise (CONTRIBUTING.md,
"Thin views").

/api/auth/token/ (token for scripts; throttled "auth": ``auth``), /api/projects/… (projects,
stages, items and agreement: ``projects``; imports: ``imports``; releases: ``releases``),
/api/stages/<id>/next/, /api/assignments/<id>/submit/ (throttled "submit") and /skip/,
/api/annotations/<id>/revise/ (``annotate``). Serializers are in ``api.serializers``,
throttles in ``api.throttles``, permission-checked fetches in ``api.access``. Errors everywhere:
{"message", "extra"} (``api.errors``); OpenAPI at /api/schema/, docs at /api/docs/.
"""

from api.views.annotate import NextItemView, ReviseView, SkipView, SubmitView
from api.views.auth import TokenView
from api.views.imports import ImportDetailView, ImportListView
from api.views.projects import (
    AgreementView,
    ItemDetailView,
    ItemListView,
    ProjectDetailView,
    ProjectListView,
    StageListView,
)
from api.views.releases import ReleaseDetailView, ReleaseDownloadView, ReleaseListView
from api.views.unknown import UnknownEndpointView

__all__ = [
    "AgreementView",
    "ImportDetailView",
    "ImportListView",
    "ItemDetailView",
    "ItemListView",
    "NextItemView",
    "ProjectDetailView",
    "ProjectListView",
    "ReleaseDetailView",
    "ReleaseDownloadView",
    "ReleaseListView",
    "ReviseView",
    "SkipView",
    "StageListView",
    "SubmitView",
    "TokenView",
    "UnknownEndpointView",
]
