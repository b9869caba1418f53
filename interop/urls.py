from django.urls import path

from interop import views

app_name = "interop"

urlpatterns = [
    path("projects/<slug:slug>/imports/from-other-tools/", views.interop_import, name="import"),
    path(
        "projects/<slug:slug>/exports/label-studio.json",
        views.label_studio_export,
        name="label_studio_export",
    ),
]
