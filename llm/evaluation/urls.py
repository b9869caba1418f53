"""The evaluation page under /projects/<slug>/evaluations/ (namespace "llm-evaluation"),
included by rungwise/urls.py."""

from django.urls import path

from llm.evaluation import views

app_name = "llm-evaluation"
project = "projects/<slug:slug>/"
urlpatterns = [
    path(project + "evaluations/", views.evaluations, name="evaluations"),
    path(project + "evaluations/start/", views.evaluation_start, name="start"),
    path(
        project + "evaluations/<int:evaluation_id>/<slug:action>/",
        views.evaluation_control,
        name="control",
    ),
    path(
        project + "evaluations/<int:evaluation_id>.csv",
        views.evaluation_csv,
        name="csv",
    ),
]
