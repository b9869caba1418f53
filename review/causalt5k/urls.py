"""Mounted under projects/<slug:slug>/causalt5k/ (rungwise/urls.py)."""

from django.urls import path

from review.causalt5k import views

app_name = "causalt5k"

urlpatterns = [
    path("", views.report, name="report"),
    path("normalisation.csv", views.report_csv, name="report_csv"),
    path("blind/", views.blind_sample_open, name="blind_sample_open"),
    path("human-floor/", views.human_floor, name="human_floor"),
    path("human-floor.csv", views.human_floor_csv, name="human_floor_csv"),
    path("expand/", views.expand, name="expand"),
]
