from django.urls import path

from annotation import views

app_name = "annotation"

urlpatterns = [
    path("", views.home, name="home"),
    path("projects/<slug:slug>/", views.project_detail, name="project"),
    path("annotate/<int:stage_id>/", views.stage_annotate, name="stage"),
    path(
        "annotate/assignments/<int:assignment_id>/submit/",
        views.assignment_submit,
        name="submit",
    ),
    path("annotate/assignments/<int:assignment_id>/skip/", views.assignment_skip, name="skip"),
]
