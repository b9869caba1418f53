"""Mounted under projects/<slug:slug>/ratings/ (rungwise/urls.py)."""

from django.urls import path

from ratings import views

app_name = "ratings"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("analysis/", views.analysis_request, name="analysis_request"),
    path("tables/<slug:table>.csv", views.table_csv, name="table"),
    path("plots/<slug:name>.svg", views.plot_svg, name="plot"),
    path("models/new/", views.model_run_form, name="model_form"),
    path("models/", views.model_run_upload, name="model_upload"),
    path("models/<int:run_id>/delete/", views.model_run_delete, name="model_delete"),
    path("import/", views.import_page, name="import"),
]
