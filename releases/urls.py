"""Release pages under /projects/<slug>/releases/ (namespace "releases")."""

from django.urls import path

from releases import views

app_name = "releases"
project = "projects/<slug:slug>/"
urlpatterns = [
    path(project + "releases/", views.release_list, name="releases"),
    path(project + "releases/publish/", views.release_publish, name="publish"),
    path(project + "releases/v<int:version>/", views.release_detail, name="release"),
    path(project + "releases/v<int:version>/retry/", views.release_retry, name="retry"),
    path(
        project + "releases/v<int:version>/download/",
        views.release_download,
        name="release-download",
    ),
    # The Hugging Face dataset folder (releases/hf_download.py, releases/hf_push.py).
    path(
        project + "releases/v<int:version>/dataset.zip",
        views.release_dataset_download,
        name="dataset-download",
    ),
    path(project + "releases/v<int:version>/push-hub/", views.release_push_hub, name="push-hub"),
]
