"""The models' pages (llm/views.py): endpoints, shared by every project, and a project's
Models tab. Included from rungwise/urls.py at the root."""

from django.urls import path

from llm import views

app_name = "llm"

_TAB = "projects/<slug:slug>/models/"

urlpatterns = [
    path("llm/endpoints/", views.endpoints, name="endpoints"),
    path("llm/endpoints/<int:endpoint_id>/", views.endpoint_edit, name="endpoint"),
    path("llm/endpoints/<int:endpoint_id>/test/", views.endpoint_test, name="endpoint_test"),
    path(_TAB, views.models, name="models"),
    path(_TAB + "prompts/", views.prompt_create, name="prompt_create"),
    path(_TAB + "prompts/<int:template_id>/", views.prompt, name="prompt"),
    path(_TAB + "preview/", views.preview, name="preview"),
    path(_TAB + "stages/<int:stage_id>/raters/", views.rater_add, name="rater_add"),
    path(_TAB + "raters/<int:rater_id>/remove/", views.rater_remove, name="rater_remove"),
    path(_TAB + "raters/<int:rater_id>/runs/", views.run_start, name="run_start"),
    path(_TAB + "runs/<int:model_run_id>/", views.run, name="run"),
    path(_TAB + "runs/<int:model_run_id>/control/", views.run_control, name="run_control"),
    path(_TAB + "runs/<int:model_run_id>/calls.csv", views.run_calls_csv, name="run_calls_csv"),
]
