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
    path("annotate/<int:stage_id>/answers/", views.stage_answers, name="answers"),
    path("annotate/<int:stage_id>/answers/last/", views.stage_answer_last, name="answer_last"),
    path("annotate/answers/<int:annotation_id>/", views.answer_change, name="answer"),
]
