"""Import pages under /projects/<slug>/imports/ (namespace "imports")."""

from django.urls import path

from imports import views

app_name = "imports"
project = "projects/<slug:slug>/"
urlpatterns = [
    path(project + "imports/", views.import_list, name="imports"),
    path(project + "imports/<int:batch_id>/", views.import_detail, name="import"),
    path(project + "imports/sample.csv", views.sample_file, name="sample"),
    # A registered schema's sample ("ratings.pairs.csv", "narratives.narrative.jsonl").
    path(
        project + "imports/samples/<str:schema>.<str:fmt>",
        views.schema_sample,
        name="schema_sample",
    ),
]
