from django.urls import path

from . import api

app_name = "api"

urlpatterns = [
    path("stages/<int:stage_id>/next/", api.NextItemView.as_view(), name="next"),
    path("assignments/<int:assignment_id>/submit/", api.SubmitView.as_view(), name="submit"),
    path("assignments/<int:assignment_id>/skip/", api.SkipView.as_view(), name="skip"),
]
