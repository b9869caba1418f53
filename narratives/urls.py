"""Mounted under projects/<slug:slug>/narratives/ (rungwise/urls.py)."""

from django.urls import path

from narratives import views

app_name = "narratives"

urlpatterns = [
    path("", views.baseline, name="baseline"),
    path("import/", views.upload, name="import"),
    path("items/<int:item_id>/", views.item_answers, name="item"),
]
