"""Mounted under api/projects/<slug:slug>/graphs/ (rungwise/urls.py), before the API's routes."""

from django.urls import path

from graphs import api

app_name = "graphs_api"

urlpatterns = [path("dsep/", api.DsepGenerateView.as_view(), name="dsep")]
