"""URLs of the researchers' dashboards and the adjudication queue (namespace "agreement")."""

from django.urls import path

from agreement import views

app_name = "agreement"

urlpatterns = [
    path("projects/<slug:slug>/agreement/", views.dashboard, name="dashboard"),
    path(
        "projects/<slug:slug>/agreement/annotators/<int:user_id>/pause/",
        views.annotator_pause,
        name="pause",
    ),
    path("projects/<slug:slug>/agreement/<slug:stage_slug>/", views.stage_dashboard, name="stage"),
    path(
        "projects/<slug:slug>/agreement/<slug:stage_slug>/refresh/",
        views.stage_refresh,
        name="refresh",
    ),
    path(
        "projects/<slug:slug>/agreement/<slug:stage_slug>/disagreements/",
        views.disagreements,
        name="disagreements",
    ),
    path(
        "projects/<slug:slug>/agreement/<slug:stage_slug>/figures/<slug:plot>.svg",
        views.stage_plot,
        name="plot",
    ),
    path(
        "projects/<slug:slug>/agreement/<slug:stage_slug>/tables/<slug:table>.csv",
        views.stage_csv,
        name="csv",
    ),
    path("projects/<slug:slug>/adjudication/", views.adjudication_queue, name="adjudication"),
    path(
        "projects/<slug:slug>/adjudication/<int:item_stage_id>/",
        views.adjudicate,
        name="adjudicate",
    ),
    path(
        "projects/<slug:slug>/adjudication/spot-checks/<int:item_stage_id>/",
        views.spot_check,
        name="spot_check",
    ),
]
