"""Mounted under projects/<slug:slug>/graphs/ (rungwise/urls.py)."""

from django.urls import path

from graphs import views

app_name = "graphs"

urlpatterns = [
    path("", views.scores, name="scores"),
    path("generate/", views.generate, name="generate"),
    path("import/", views.import_page, name="import"),
    path("questions/", views.questions, name="questions"),
    path("questions/<int:item_id>/", views.question, name="question"),
]
