"""Pages for imports and releases, under /projects/<slug>/ (namespace "io")."""

from django.urls import path

from . import io_views

app_name = "io"

project = "projects/<slug:slug>/"

urlpatterns = [
    path(project + "imports/", io_views.import_list, name="imports"),
    path(project + "imports/<int:batch_id>/", io_views.import_detail, name="import"),
    path(project + "releases/", io_views.release_list, name="releases"),
    path(project + "releases/publish/", io_views.release_publish, name="publish"),
    path(project + "releases/v<int:version>/", io_views.release_detail, name="release"),
    path(
        project + "releases/v<int:version>/download/",
        io_views.release_download,
        name="release-download",
    ),
]
