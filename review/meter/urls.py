"""Mounted under projects/<slug:slug>/meter/ (rungwise/urls.py)."""

from django.urls import path

from review.meter import views

app_name = "meter"

urlpatterns = [
    path("", views.meter, name="meter"),
    path("for-generation.<str:fmt>", views.generation_export, name="generation_export"),
    path("entries/", views.entries_upload, name="entries_upload"),
    path("samples/", views.sample_open, name="sample_open"),
    path("generate/", views.generate, name="generate"),
]
